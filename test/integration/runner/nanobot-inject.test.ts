import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { logLevel, parseFrame, startNanobot, TerminalConfigSchema, type NanobotEvent, type NanobotSession } from '../../../src/runner/core/protocols/nanobot.ts';
import { agentFile, tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-nanobot-inject-');
after(() => tmp.remove());
const injectAgent = `'${process.execPath}' '${agentFile('nanobot-inject.mjs')}'`;

/** Starts a bot and gives the messages as they come: `next()` waits for the next one. */
async function started(config: object): Promise<{ session: NanobotSession; next: () => Promise<string>; events: NanobotEvent[] }> {
  const events: NanobotEvent[] = [];
  const waiting: ((text: string) => void)[] = [];
  const queued: string[] = [];
  const session = await startNanobot({
    launcher: 'local',
    config: TerminalConfigSchema.parse({ command: injectAgent, protocol: 'rich', timeout: 20, ...config }),
    input: { text: 'first', workspace: tmp.dir },
    onEvent: (event) => {
      events.push(event);
      if (event.type !== 'message') return;
      const take = waiting.shift();
      if (take) take(event.text);
      else queued.push(event.text);
    },
  });
  const next = () => (queued.length > 0 ? Promise.resolve(queued.shift()!) : new Promise<string>((resolve) => waiting.push(resolve)));
  return { session, next, events };
}

describe('nanobot inject frames', () => {
  it('with allowInjection, follow-up lines reach the running bot as inject frames, media resolved', async () => {
    const { session, next } = await started({ allowInjection: true });
    assert.equal(await next(), 'started: first');
    assert.equal(session.accepting, true);
    assert.equal(session.inject('second', ['pic.png']), undefined);
    assert.equal(await next(), 'got: second');
    assert.equal(session.inject('{"type":"inject"} "quotes" \\ and a\nnewline'), undefined);
    assert.equal(await next(), 'got: {"type":"inject"} "quotes" \\ and a\nnewline');
    assert.equal(session.inject('bye'), undefined);
    const result = await session.result;
    assert.equal(result.ok, true, JSON.stringify(result));
    assert.deepEqual(result.messages.map((m) => m.text), ['started: first', 'got: second', 'got: {"type":"inject"} "quotes" \\ and a\nnewline', 'bye']);
    assert.equal(session.accepting, false);
    assert.deepEqual(session.inject('too late'), { reason: 'ended', message: 'the micro-agent has already ended' });
  });

  it('each inject restarts the timeout: a bot kept busy past its timeout is not killed', async () => {
    // Timeout 3 s; two waits of 2 s each, each asked for by an inject: 4 s and more in all.
    const { session, next } = await started({ allowInjection: true, timeout: 3 });
    assert.equal(await next(), 'started: first');
    session.inject('wait 2000');
    assert.equal(await next(), 'waited 2000');
    session.inject('wait 2000');
    assert.equal(await next(), 'waited 2000');
    session.inject('bye');
    const result = await session.result;
    assert.equal(result.timedOut, false);
    assert.equal(result.ok, true);
  });

  it('ending the input closes the bot’s stdin; later lines are refused, not lost silently', async () => {
    const { session, next } = await started({ allowInjection: true });
    assert.equal(await next(), 'started: first');
    session.endInput();
    assert.equal(session.accepting, false);
    assert.equal(session.inject('after the end')?.reason, 'ended');
    assert.equal(await next(), 'input closed');
    assert.equal((await session.result).ok, true);
  });

  it('without allowInjection, stdin is closed after the envelope and follow-ups are refused with the reason', async () => {
    const { session, next } = await started({});
    assert.equal(await next(), 'started: first');
    assert.deepEqual(session.inject('x'), { reason: 'disabled', message: 'this micro-agent does not take follow-up lines while it runs (allowInjection is off)' });
    assert.equal(await next(), 'input closed');
    await session.result;
    const plain = await startNanobot({ launcher: 'local', config: TerminalConfigSchema.parse({ command: 'cat > /dev/null; echo done', allowInjection: true }), input: { text: 'x', workspace: tmp.dir } });
    assert.equal(plain.inject('x')?.reason, 'plain');
    assert.deepEqual((await plain.result).messages, [{ text: 'done', media: [] }]);
  });
});

describe('nanobot log frames and the plain fallback', () => {
  it('log frames of any level or shape go to the log, never to the user; plain lines keep their media', async () => {
    const image = path.join(tmp.dir, 'drawn.png');
    const events: NanobotEvent[] = [];
    const session = await startNanobot({
      launcher: 'local',
      config: TerminalConfigSchema.parse({ command: `'${process.execPath}' '${agentFile('nanobot-logs.mjs')}' '${image}'`, protocol: 'rich', timeout: 20 }),
      input: { text: 'x', workspace: tmp.dir },
      onEvent: (e) => events.push(e),
    });
    const result = await session.result;
    assert.equal(result.ok, true, JSON.stringify(result));
    assert.deepEqual(result.messages, [{ text: `Here it is: ${image}`, media: [image] }]);
    assert.doesNotMatch(JSON.stringify(result.messages), /secret/);
    assert.deepEqual(result.logs, [
      { text: 'secret trace', level: 'trace' },
      { text: 'secret info', level: 'info' },
      { text: 'secret warn', level: 'warning' },
      { text: '(level loud) secret loud', level: 'debug' },
      { text: 'secret forty', level: 'error' },
      { text: '{"message":"secret without text"}', level: 'debug' },
    ]);
    assert.deepEqual(events.map((e) => e.type), ['log', 'log', 'log', 'log', 'log', 'log', 'message']);
  });

  it('reads levels as the world writes them', () => {
    assert.equal(logLevel(undefined), 'debug');
    assert.equal(logLevel('TRACE'), 'trace');
    assert.equal(logLevel(' Warning '), 'warning');
    assert.equal(logLevel('fatal'), 'error');
    assert.equal(logLevel(20), 'info');
    assert.equal(logLevel(5), 'trace');
    assert.equal(logLevel('chatty'), undefined);
    assert.equal(logLevel({}), undefined);
    assert.deepEqual(parseFrame('{"type":"log","text":"t","level":"DEBUG"}'), { type: 'log', text: 't', level: 'debug' });
    assert.deepEqual(parseFrame('{"type":"log","text":7,"level":["x"]}'), { type: 'log', text: '(level ["x"]) {"text":7}', level: 'debug' });
  });
});

describe('belay nanobot --allow-injection', () => {
  it('sends each line of its stdin to the running bot and ends the bot’s input with its own', async () => {
    const { PassThrough } = await import('node:stream');
    const { run } = await import('../../../src/cli/nanobot.ts');
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let out = '';
    let err = '';
    stdout.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      // Follow-ups go once the bot has answered the first message.
      if (out === 'started: hello\n') stdin.end('one\n\ntwo\n');
    });
    stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
    const code = await run(['--command', injectAgent, '--protocol', 'rich', '--allow-injection', '--text', 'hello', '--workspace', tmp.dir, '--backend', 'local'], { stdin, stdout, stderr, env: {}, cwd: tmp.dir });
    assert.equal(code, 0, err);
    assert.equal(out, 'started: hello\ngot: one\ngot: two\ninput closed\n');
  });
});

describe('nanobot inject frames in a container', async () => {
  const { engineWithBase } = await import('../../support/runner/container-helpers.ts');
  const { containerLauncher } = await import('../../../src/runner/core/backends/container-nanobot.ts');
  const { realpathSync } = await import('node:fs');
  const found = await engineWithBase();
  it('reach a bot running in a container (stdin passed through the engine)', { skip: found instanceof Error ? found.message : false }, async () => {
    const engine = found as Exclude<typeof found, Error>;
    const node = realpathSync(process.execPath);
    const launcher = containerLauncher({ engine, agentFolders: [path.dirname(agentFile('nanobot-inject.mjs')), path.dirname(node)] });
    const messages: string[] = [];
    let heard: (() => void) | undefined;
    const session = await startNanobot({
      config: TerminalConfigSchema.parse({ command: `'${node}' '${agentFile('nanobot-inject.mjs')}'`, protocol: 'rich', allowInjection: true, timeout: 60 }),
      input: { text: 'in a box', workspace: path.join(tmp.dir, 'boxed') },
      launcher,
      onEvent: (e) => {
        if (e.type === 'message') messages.push(e.text);
        heard?.();
      },
    });
    await new Promise<void>((resolve) => {
      heard = () => messages.length > 0 && resolve();
      heard();
    });
    session.inject('from outside');
    session.endInput();
    const result = await session.result;
    await launcher.dispose();
    assert.equal(result.ok, true, `${result.error?.text} ${result.stderr}`);
    assert.deepEqual(messages, ['started: in a box', 'got: from outside', 'input closed']);
  });
});
