// OpenCode's `run --format json` events, as the real CLI printed them (test/fixtures/runner/
// installed/opencode/, captured against a scripted chat completions service through the gateway),
// read into Belay's events; lines a hostile or broken CLI could print; and how it is started.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { instructionArgument, openCodeConfig, opencode, toolCommand } from '../../../../src/runner/core/protocols/installed/opencode.ts';
import type { InstalledEvent } from '../../../../src/runner/core/protocols/installed/installedAgent.ts';
import { fixtures } from '../../../support/runner/helpers.ts';

const capture = (name: string) => readFileSync(path.join(fixtures, 'installed', 'opencode', `${name}.jsonl`), 'utf8').split('\n').filter(Boolean);

const read = (lines: string[]): InstalledEvent[] => {
  const reader = opencode.events();
  return lines.flatMap((line) => reader.line(line));
};

const input = { instruction: 'Create hello.txt', model: 'gpt-4.1', baseUrl: 'http://127.0.0.1:4141', token: 'belay-run-tok', stateDir: '/belay-state', workdir: '/app' };

describe('OpenCode events', () => {
  it('reads a real run: words, the bash call with its command and result, the end', () => {
    assert.deepEqual(read(capture('hello')), [
      { kind: 'text', text: 'I will create the file with printf.' },
      { kind: 'tool-call', id: 'call_1_0', name: 'bash', command: "printf 'Hello, world!' > hello.txt", input: JSON.stringify({ command: "printf 'Hello, world!' > hello.txt", description: 'Create hello.txt' }) },
      { kind: 'tool-result', id: 'call_1_0', output: '(no output)', exitCode: 0, isError: false },
      { kind: 'text', text: 'Created hello.txt containing Hello, world!' },
      { kind: 'done', ok: true, summary: 'Created hello.txt containing Hello, world!' },
    ]);
  });

  it("reads a real run with file tools and a failing command: each call named, the command's exit code and its stderr", () => {
    const events = read(capture('tools'));
    const calls = events.filter((event) => event.kind === 'tool-call');
    assert.deepEqual(
      calls.map((call) => [call.name, call.command.replace(/\/tmp\/\S+\/work/, 'WORK')]),
      [
        ['write', 'write WORK/notes.md'],
        ['bash', 'ls missing-file; echo "stderr line" >&2; exit 2'],
        ['grep', 'grep first in WORK'],
        ['read', 'read WORK/notes.md'],
      ],
    );
    const results = new Map(events.flatMap((event) => (event.kind === 'tool-result' ? [[event.id, event] as const] : [])));
    assert.equal(results.size, 4);
    const failing = results.get('call_1_1');
    assert.equal(failing?.exitCode, 2);
    assert.equal(failing?.isError, true);
    assert.match(failing?.output ?? '', /No such file or directory\nstderr line/);
    assert.deepEqual([results.get('call_1_0')?.exitCode, results.get('call_1_0')?.isError], [0, false]);
    assert.match(results.get('call_2_0')?.output ?? '', /1: # Notes\n2: first line/);
    // Every call has its result, right after it.
    events.forEach((event, i) => {
      if (event.kind === 'tool-call') assert.deepEqual([events[i + 1]?.kind, (events[i + 1] as { id?: string }).id], ['tool-result', event.id]);
    });
    assert.deepEqual(events.at(-1), { kind: 'done', ok: true, summary: 'notes.md is written; missing-file does not exist.' });
  });

  it("reads a real run's reasoning (printed with --thinking) as text, and ends with the answer's words, not the reasoning", () => {
    const events = read(capture('thinking'));
    assert.deepEqual(
      events.filter((event) => event.kind === 'text').map((event) => event.text),
      ['The file does not exist yet; printf writes it without a newline.', 'Creating it.', 'Done; nothing else to check.', 'Created hello.txt.'],
    );
    assert.deepEqual(events.at(-1), { kind: 'done', ok: true, summary: 'Created hello.txt.' });
  });

  it("reads a real run's missing tool and failed tool as failed results", () => {
    const events = read(capture('badtool'));
    const [missing, missingResult, readCall, readResult] = events;
    assert.equal(missing?.kind === 'tool-call' ? missing.command : undefined, 'no_such_tool (no such tool)');
    assert.match(missingResult?.kind === 'tool-result' ? missingResult.output : '', /unavailable tool 'no_such_tool'/);
    assert.equal(readCall?.kind === 'tool-call' ? readCall.name : undefined, 'read');
    assert.deepEqual(readResult?.kind === 'tool-result' ? [readResult.exitCode, readResult.isError, /File not found/.test(readResult.output)] : undefined, [null, true, true]);
    assert.deepEqual(events.at(-1), { kind: 'done', ok: true, summary: 'Giving up.' });
  });

  it("reads a real run's API error as an error and a failed end", () => {
    const message = "APIError: Invalid value for 'temperature': must be between 0 and 2.";
    assert.deepEqual(read(capture('error')), [
      { kind: 'error', message },
      { kind: 'done', ok: false, summary: message },
    ]);
  });

  it('a context overflow is an error but not the end (OpenCode compacts and goes on); an end is given once', () => {
    const line = (value: unknown) => JSON.stringify(value);
    const events = read([
      line({ type: 'error', error: { name: 'ContextOverflowError', data: { message: 'maximum context length is 128000 tokens' } } }),
      line({ type: 'text', part: { text: 'Summarised; going on.' } }),
      line({ type: 'step_finish', part: { reason: 'length' } }),
      line({ type: 'step_finish', part: { reason: 'stop' } }),
      line({ type: 'error', error: { name: 'APIError', data: { message: 'late' } } }),
    ]);
    assert.deepEqual(events, [
      { kind: 'error', message: 'ContextOverflowError: maximum context length is 128000 tokens' },
      { kind: 'text', text: 'Summarised; going on.' },
      { kind: 'done', ok: false, summary: 'the model stopped at its output limit: Summarised; going on.' },
      { kind: 'error', message: 'APIError: late' },
    ]);
  });

  it('names what a non-shell tool does', () => {
    assert.equal(toolCommand('write', { filePath: '/app/a.txt', content: 'x' }), 'write /app/a.txt');
    assert.equal(toolCommand('glob', { pattern: '**/*.ts' }), 'glob **/*.ts');
    assert.equal(toolCommand('webfetch', { url: 'https://example.com', format: 'text' }), 'webfetch https://example.com');
    assert.equal(toolCommand('task', { description: 'explore', prompt: 'look around' }), 'task explore');
    assert.equal(toolCommand('todowrite', { todos: [] }, '2 todos'), 'todowrite 2 todos');
    assert.equal(toolCommand('todowrite', { todos: [] }), 'todowrite');
    assert.equal(toolCommand('bash', { command: 42 }), 'bash');
  });

  it('gives nothing for lines it does not understand, never throws, and keeps fields bounded', () => {
    const huge = 'x'.repeat(5_000_000);
    const events = read([
      '',
      'not json',
      '{"type":',
      '[1,2,3]',
      'null',
      '"a string"',
      '{}',
      '{"type":"text"}',
      '{"type":"text","part":{"text":42}}',
      '{"type":"tool_use","part":{"tool":"bash"}}',
      '{"type":"tool_use","part":{"tool":7,"state":{"status":"completed"}}}',
      '{"type":"step_finish"}',
      '{"type":"step_finish","part":{"reason":"tool-calls"}}',
      '{"type":"step_start","part":{}}',
      '{"type":"text","part":{"text":"   \\n  "}}',
      '{"type":"__proto__","part":{"text":"x"}}',
      JSON.stringify({ type: 'text', part: { text: huge } }),
      JSON.stringify({ type: 'tool_use', part: { tool: 'bash', callID: huge, state: { status: 'completed', input: { command: huge }, output: huge, metadata: { exit: 'zero' } } } }),
      JSON.stringify({ type: 'error', error: { name: 'APIError', data: { message: huge } } }),
    ]);
    assert.deepEqual(
      events.map((event) => event.kind),
      ['text', 'tool-call', 'tool-result', 'error', 'done'],
    );
    for (const event of events) for (const value of Object.values(event)) if (typeof value === 'string') assert.ok(value.length <= 64_001, `${event.kind} kept ${value.length} characters`);
    const result = events[2];
    assert.equal(result?.kind === 'tool-result' ? result.exitCode : 'none', null);
  });

  it('reads a flood of lines without keeping them', () => {
    const reader = opencode.events();
    const line = JSON.stringify({ type: 'tool_use', part: { tool: 'bash', callID: 'c', state: { status: 'completed', input: { command: 'true' }, output: '', metadata: { exit: 0 } } } });
    let count = 0;
    for (let i = 0; i < 100_000; i++) count += reader.line(line).length;
    assert.equal(count, 200_000);
    assert.deepEqual(reader.line(JSON.stringify({ type: 'step_finish', part: { reason: 'stop' } })), [{ kind: 'done', ok: true, summary: '' }]);
  });

  it('keeps escape sequences in a command, its output and the words as text (the terminal layer neutralises them)', () => {
    const command = 'echo \u001b]0;owned\u0007 \u001b[2J';
    const output = '\u001b[31mred\u001b[0m\r\u0008';
    const events = read([
      JSON.stringify({ type: 'tool_use', part: { tool: 'bash', callID: 'e', state: { status: 'completed', input: { command }, output, metadata: { exit: 0 } } } }),
      JSON.stringify({ type: 'text', part: { text: '\u001b]52;c;b3duZWQ=\u0007done' } }),
    ]);
    assert.equal(events[0]?.kind === 'tool-call' ? events[0].command : undefined, command);
    assert.equal(events[1]?.kind === 'tool-result' ? events[1].output : undefined, output);
    assert.equal(events[2]?.kind === 'text' ? events[2].text : undefined, '\u001b]52;c;b3duZWQ=\u0007done');
  });
});

describe('OpenCode started headless', () => {
  it('runs `opencode run` with JSON events, the gateway model, everything allowed, and the instruction as one argument after --', () => {
    const instruction = '--help; rm -rf / "$(x)"\nsecond line';
    const argv = opencode.argv({ ...input, instruction });
    assert.equal(argv[0], 'run');
    assert.equal(argv[argv.indexOf('--format') + 1], 'json');
    assert.equal(argv[argv.indexOf('--model') + 1], 'belay/gpt-4.1');
    assert.ok(argv.includes('--auto'));
    // A title of its own: OpenCode then asks the model for none (a second call on every run).
    assert.ok(argv[argv.indexOf('--title') + 1]);
    assert.deepEqual(argv.slice(-2), ['--', instruction]);
    assert.ok(!argv.some((arg) => arg.includes(input.token)), 'the token is not on the command line');
  });

  it("keeps an instruction that looks like a number from OpenCode's number parsing", () => {
    for (const number of ['42', '-1.5', '1e3', '0x10', ' 7 ']) assert.equal(instructionArgument(number), `${number}\n`);
    for (const words of ['42 apples', 'x42', '', 'NaN']) assert.equal(instructionArgument(words), words);
  });

  it('points its config, data, cache and state at the state folder, and turns off what would reach a network', () => {
    const env = opencode.environment(input);
    assert.equal(env.OPENCODE_CONFIG, '/belay-state/opencode.json');
    for (const name of ['XDG_CONFIG_HOME', 'XDG_DATA_HOME', 'XDG_CACHE_HOME', 'XDG_STATE_HOME']) assert.ok(env[name]?.startsWith('/belay-state/'), name);
    for (const name of ['OPENCODE_DISABLE_AUTOUPDATE', 'OPENCODE_DISABLE_MODELS_FETCH', 'OPENCODE_DISABLE_SHARE', 'OPENCODE_DISABLE_LSP_DOWNLOAD', 'OPENCODE_DISABLE_DEFAULT_PLUGINS']) assert.equal(env[name], '1', name);
    assert.equal(env.BELAY_GATEWAY_TOKEN, input.token);
    const keys = Object.entries(env).filter(([, value]) => value === input.token);
    assert.deepEqual(keys.map(([name]) => name), ['BELAY_GATEWAY_TOKEN'], 'the token is in one variable only');
  });

  it("writes a config with the gateway as its only provider, the token read from the environment, and every permission but questions allowed", () => {
    const files = opencode.stateFiles(input);
    const config = JSON.parse(files['opencode.json']!) as ReturnType<typeof openCodeConfig> & { provider: Record<string, { options: { baseURL: string; apiKey: string }; models: Record<string, unknown> }>; permission: Record<string, string> };
    assert.deepEqual(Object.keys(config.provider), ['belay']);
    assert.equal(config.provider.belay!.options.baseURL, 'http://127.0.0.1:4141/v1');
    assert.equal(config.provider.belay!.options.apiKey, '{env:BELAY_GATEWAY_TOKEN}');
    assert.ok(config.provider.belay!.models['gpt-4.1']);
    assert.deepEqual(config.enabled_providers, ['belay']);
    assert.equal(config.autoupdate, false);
    assert.equal(config.share, 'disabled');
    assert.equal(config.permission['*'], 'allow');
    assert.equal(config.permission.question, 'deny');
    for (const text of Object.values(files)) assert.ok(!text.includes(input.token), 'no state file holds the token');
    for (const name of Object.keys(files)) assert.ok(!path.isAbsolute(name) && !name.split('/').includes('..'), name);
    // What keeps OpenCode from installing @opencode-ai/plugin from npm at its start.
    assert.ok(files['config/opencode/node_modules/.package-lock.json']);
    assert.match(files['config/opencode/package-lock.json']!, /@opencode-ai\/plugin/);
  });
});
