import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import {
  buildCommand,
  buildEnvelope,
  detectMedia,
  EnvelopeSchema,
  parseFrame,
  runNanobot,
  TerminalConfigSchema,
  type NanobotEvent,
} from '../../../src/runner/core/protocols/nanobot.ts';
import { shellQuote } from '../../../src/shared/shell.ts';
import { agentFile, processesWith, tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-nanobot-');
after(() => tmp.remove());
const rich = (extra: object = {}) => TerminalConfigSchema.parse({ command: `'${process.execPath}' '${agentFile('nanobot-rich.mjs')}'`, protocol: 'rich', timeout: 20, ...extra });

describe('nanobot envelope and command', () => {
  it('shell-quotes {message} so that any text is one word and runs nothing', () => {
    const nasty = ` it's $(touch ${tmp.dir}/pwned) \`id\` "quoted" ; rm -rf x \n`;
    const command = buildCommand('printf "%s|" {message} {message}', nasty);
    const out = execFileSync('/bin/sh', ['-c', command], { encoding: 'utf8' });
    assert.equal(out, `${nasty.trim()}|${nasty.trim()}|`);
    assert.equal(existsSync(path.join(tmp.dir, 'pwned')), false);
    assert.equal(shellQuote(''), "''");
  });

  it('builds the envelope: snake_case providers with keys only, media when passed, user_data_dir created', async () => {
    const config = TerminalConfigSchema.parse({
      command: 'x',
      providers: {
        anthropic: { apiKeys: ['k1', 'k2'], models: ['m1'] },
        replicate: { apiKeys: ['r8'], baseUrl: 'https://api.example/v1' },
        empty: { apiKeys: [] },
      },
    });
    const envelope = await buildEnvelope(config, { text: 'hi', media: ['rel.png'], workspace: tmp.dir, chatId: '42', channel: 'telegram' });
    assert.deepEqual(EnvelopeSchema.strict().parse(envelope), {
      version: 1,
      text: 'hi',
      media: [path.resolve('rel.png')],
      channel: 'telegram',
      chat_id: '42',
      session_key: 'telegram:42',
      workspace: tmp.dir,
      user_data_dir: path.join(tmp.dir, 'users', '42'),
      providers: {
        anthropic: { api_keys: ['k1', 'k2'], models: ['m1'] },
        replicate: { api_keys: ['r8'], base_url: 'https://api.example/v1' },
      },
    });
    assert.ok(existsSync(path.join(tmp.dir, 'users', '42')));
    const bare = await buildEnvelope(TerminalConfigSchema.parse({ command: 'x', passMedia: false }), { text: '', media: ['a.png'], workspace: tmp.dir });
    assert.equal('media' in bare, false);
    assert.equal('providers' in bare, false);
  });

  it('parses frames: known types validated, unknown types skipped, anything else is text', () => {
    assert.deepEqual(parseFrame('{"type":"log","text":"x"}'), { type: 'log', text: 'x', level: 'debug' });
    assert.deepEqual(parseFrame(' {"type":"message","text":"m","media":["/a.png"]} '), { type: 'message', text: 'm', media: ['/a.png'] });
    assert.equal(parseFrame('{"type":"future","text":"x"}'), null);
    assert.equal(parseFrame('{"type":"message"}'), undefined);
    assert.equal(parseFrame('{"no":"type"}'), undefined);
    assert.equal(parseFrame('[1,2]'), undefined);
    assert.equal(parseFrame('plain text'), undefined);
  });

  it('finds media paths on stdout only when the file exists and has a media extension', () => {
    const image = path.join(tmp.dir, 'found.png');
    const doc = path.join(tmp.dir, 'notes.txt');
    writeFileSync(image, 'x');
    writeFileSync(doc, 'x');
    assert.deepEqual(detectMedia(`see ${image}, ${doc} and /nope/missing.jpg; ${image}`), [image]);
  });
});

describe('nanobot runs', () => {
  it('rich: progress, several messages with media, logs, plain lines ignored once a message came', async () => {
    const events: NanobotEvent[] = [];
    const config = rich({ providers: { anthropic: { apiKeys: ['k'] } } });
    const result = await runNanobot({ launcher: 'local', config, input: { text: 'draw a cat', workspace: tmp.dir }, onEvent: (e) => events.push(e) });
    assert.equal(result.ok, true, JSON.stringify(result));
    assert.deepEqual(result.progress, ['Thinking...']);
    const userDir = path.join(tmp.dir, 'users', 'local');
    assert.deepEqual(result.messages, [
      { text: 'You said: draw a cat (message #1)', media: [] },
      { text: 'Generated image:', media: [path.join(userDir, 'generated.png')] },
    ]);
    assert.deepEqual(result.logs[0], { text: 'envelope keys: channel,chat_id,providers,session_key,text,user_data_dir,version,workspace', level: 'info' });
    assert.deepEqual(result.logs[1], { text: 'providers: {"anthropic":{"api_keys":["k"]}}', level: 'debug' });
    assert.deepEqual(events.map((e) => e.type), ['progress', 'log', 'log', 'message', 'message']);
    assert.equal(JSON.parse(readFileSync(path.join(userDir, 'state.json'), 'utf8')).count, 1);
  });

  it('rich: an error frame with a non-zero exit ends with the error and the exit code', async () => {
    const result = await runNanobot({ launcher: 'local', config: rich(), input: { text: 'please fail', workspace: tmp.dir } });
    assert.equal(result.ok, false);
    assert.deepEqual(result.error, { text: 'Failed to render image (exit code 3)', code: 'RENDER_FAIL' });
    assert.equal(result.messages.length, 2);
  });

  it('rich: a timeout kills the whole process group and keeps what was delivered', async () => {
    const token = `belay-nanobot-hang-${process.pid}`;
    const config = rich({ timeout: 3, command: `sh -c "sleep 60; : ${token}" & '${process.execPath}' '${agentFile('nanobot-rich.mjs')}'` });
    const result = await runNanobot({ launcher: 'local', config, input: { text: 'hang', workspace: tmp.dir } });
    assert.equal(result.timedOut, true);
    assert.deepEqual(result.error, { text: 'Timed out after 3 s', code: 'TIMEOUT' });
    assert.deepEqual(result.progress, ['Thinking...', 'about to hang']);
    assert.equal(result.messages.length, 1);
    assert.deepEqual(processesWith(token), []);
  });

  it('rich: only plain lines become one message at exit', async () => {
    const config = rich({ command: `'${process.execPath}' '${agentFile('plain-text.mjs')}'` });
    const result = await runNanobot({ launcher: 'local', config, input: { text: 'x', workspace: tmp.dir } });
    assert.deepEqual(result.messages, [{ text: 'first plain line\n{"not a frame": true}\nlast plain line', media: [] }]);
    assert.equal(result.ok, true);
  });

  it('plain: the text as an argument, stdout with detected media, stderr and exit code appended', async () => {
    const config = TerminalConfigSchema.parse({ command: `sh '${agentFile('nanobot-plain.sh')}' {message}; exit 2`, env: { NANOBOT_OUT: tmp.dir } });
    const result = await runNanobot({ launcher: 'local', config, input: { text: "it's $(echo injected)", workspace: tmp.dir } });
    const media = path.join(tmp.dir, 'plain-out.png');
    assert.deepEqual(result.messages, [
      {
        text: `You said: it's $(echo injected)\nSaved to ${media} and /nonexistent/missing.png\nSTDERR:\na warning\nExit code: 2`,
        media: [media],
      },
    ]);
    assert.equal(result.ok, false);
    const silent = await runNanobot({ launcher: 'local', config: TerminalConfigSchema.parse({ command: 'true' }), input: { text: '', workspace: tmp.dir } });
    assert.deepEqual(silent.messages, [{ text: '(no output)', media: [] }]);
  });
});
