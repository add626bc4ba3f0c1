// Gemini CLI's stream-json events, as the real CLI 0.61.0 printed them (test/fixtures/runner/
// installed/gemini-cli/, captured through Belay's gateway against the scripted Gemini API), read
// into Belay's events; and lines a hostile or broken CLI could print. Also the descriptor's start:
// its arguments, environment and settings file.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { apiErrorLine, describeToolCall, geminiCli } from '../../../../src/runner/core/protocols/installed/geminiCli.ts';
import type { HeadlessInput, InstalledEvent } from '../../../../src/runner/core/protocols/installed/installedAgent.ts';
import { fixtures } from '../../../support/runner/helpers.ts';

const read = (lines: string[], end = true): InstalledEvent[] => {
  const reader = geminiCli.events();
  const events = lines.flatMap((line) => reader.line(line));
  return end ? [...events, ...(reader.end?.() ?? [])] : events;
};
const capture = (name: string) => readFileSync(path.join(fixtures, 'installed', 'gemini-cli', `${name}.jsonl`), 'utf8').split('\n').filter(Boolean);

const input: HeadlessInput = { instruction: '-h; rm -rf / $(id)', model: 'gemini-2.5-flash', baseUrl: 'http://127.0.0.1:4000', token: 'belay-run-abc', stateDir: '/belay-state', workdir: '/app' };

describe('Gemini CLI events', () => {
  it("reads a real run: the turn's words whole, the shell call with its command, its result, the end", () => {
    assert.deepEqual(read(capture('hello')), [
      { kind: 'text', text: 'I will write the file with a shell command.' },
      {
        kind: 'tool-call',
        id: 'run_shell_command__run_shell_command_1795819826292_0',
        name: 'run_shell_command',
        command: "printf 'Hello, world!' > hello.txt",
        input: JSON.stringify({ command: "printf 'Hello, world!' > hello.txt", description: 'Write hello.txt' }),
      },
      { kind: 'tool-result', id: 'run_shell_command__run_shell_command_1795819826292_0', output: '', exitCode: null, isError: false },
      { kind: 'text', text: 'hello.txt now holds Hello, world!' },
      { kind: 'done', ok: true, summary: 'hello.txt now holds Hello, world!' },
    ]);
  });

  it('reads a real run with several tools: output, a refused call as an error result, calls named in words', () => {
    const events = read(capture('tools'));
    assert.deepEqual(
      events.map((e) => (e.kind === 'tool-call' ? `call ${e.name}: ${e.command}` : e.kind === 'tool-result' ? `result ${e.isError ? 'error' : 'ok'}: ${e.output.slice(0, 30)}` : e.kind === 'text' ? `text: ${e.text}` : e.kind)),
      [
        'text: First I check the shell: ',
        'call run_shell_command: echo out; echo err >&2; exit 3',
        'result ok: out\nerr',
        'call write_file: Write notes.txt',
        'call read_file: Read /nonexistent/x',
        'call list_directory: List .',
        'result ok: ',
        'result error: Path not in workspace: Attempt',
        'result ok: ',
        'text: All done: notes.txt is written, and /nonexistent/x is outside the workspace.',
        'done',
      ],
    );
    // The model's thoughts are not in the CLI's stream; its exit code is not either.
    assert.ok(events.every((e) => e.kind !== 'tool-result' || e.exitCode === null));
  });

  it("reads a real API failure as one line and a failed end", () => {
    assert.deepEqual(read(capture('api-error')), [
      { kind: 'error', message: 'API error 400: Request contains an invalid argument.' },
      { kind: 'done', ok: false, summary: 'API error 400: Request contains an invalid argument.' },
    ]);
    assert.equal(apiErrorLine('[API Error: exception TypeError: fetch failed sending request]'), 'API error: exception TypeError: fetch failed sending request');
    assert.equal(apiErrorLine('Reached max session turns'), 'Reached max session turns');
  });

  it("gives the CLI's errors and warnings as errors, and a turn cut short by the end of the stream", () => {
    const events = read([
      JSON.stringify({ type: 'message', role: 'assistant', content: 'half a ', delta: true }),
      JSON.stringify({ type: 'error', severity: 'warning', message: 'Loop detected,\nstopping' }),
      JSON.stringify({ type: 'message', role: 'assistant', content: 'thought', delta: true }),
    ]);
    assert.deepEqual(events, [
      { kind: 'text', text: 'half a ' },
      { kind: 'error', message: 'warning: Loop detected, stopping' },
      { kind: 'text', text: 'thought' },
    ]);
  });

  it('names what a non-shell tool does in one line', () => {
    assert.equal(describeToolCall('replace', { file_path: '/app/a.py', old_string: 'x', new_string: 'y' }), 'Edit /app/a.py');
    assert.equal(describeToolCall('grep_search', { pattern: 'TODO', dir_path: 'src' }), 'Search TODO in src');
    assert.equal(describeToolCall('google_web_search', { query: 'a\nb' }), 'Search the web for a b');
    assert.equal(describeToolCall('run_shell_command', { command: 42 }), 'run_shell_command');
    assert.equal(describeToolCall('mcp_tool', { description: 'does a thing' }), 'mcp_tool: does a thing');
    assert.ok(describeToolCall('mcp_tool', { blob: 'z'.repeat(10_000) }).length <= 301);
  });

  it('gives nothing for lines it does not understand, never throws, and keeps fields bounded', () => {
    const huge = 'x'.repeat(5_000_000);
    const events = read([
      '',
      'not json',
      '{"type":',
      '[1,2,3]',
      'null',
      '{}',
      '{"type":"message"}',
      '{"type":"message","role":"user","content":"the prompt"}',
      '{"type":"message","role":"assistant","content":42,"delta":true}',
      '{"type":"tool_use"}',
      '{"type":"tool_use","tool_name":7,"tool_id":null,"parameters":"not an object"}',
      '{"type":"tool_result","status":"error","error":"not an object"}',
      '{"type":"result","status":"error"}',
      JSON.stringify({ type: 'tool_use', tool_name: 'run_shell_command', tool_id: 'h', parameters: { command: huge } }),
      JSON.stringify({ type: 'tool_result', tool_id: 'h', status: 'success', output: huge }),
      JSON.stringify({ type: 'error', severity: 'error', message: huge }),
      '{"type":"__proto__","__proto__":{"polluted":true}}',
    ]);
    assert.deepEqual(
      events.map((e) => e.kind),
      ['tool-call', 'tool-call', 'tool-result', 'error', 'done', 'tool-call', 'tool-result', 'error'],
    );
    assert.deepEqual(events[0], { kind: 'tool-call', id: '', name: 'tool', command: 'tool {}', input: '{}' });
    assert.deepEqual(events[2], { kind: 'tool-result', id: '', output: '', exitCode: null, isError: true });
    assert.deepEqual(events[4], { kind: 'done', ok: false, summary: '' });
    for (const event of events) assert.ok(JSON.stringify(event).length < 600_000, `${event.kind} is bounded`);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it('holds a flood of text pieces only up to its bound, and lets it out whole in order', () => {
    const reader = geminiCli.events();
    const piece = JSON.stringify({ type: 'message', role: 'assistant', content: 'y'.repeat(1000), delta: true });
    let text = '';
    for (let i = 0; i < 2000; i++) {
      for (const event of reader.line(piece)) if (event.kind === 'text') text += event.text;
      const held = (i + 1) * 1000 - text.length;
      assert.ok(held >= 0 && held < 64 * 1024, `at most 64 KiB held (${held} after ${i + 1} pieces)`);
    }
    for (const event of reader.end?.() ?? []) if (event.kind === 'text') text += event.text;
    assert.equal(text.length, 2_000_000);
  });

  it('keeps escape sequences in commands and text as text (the terminal layer neutralises them)', () => {
    const command = 'printf "\\033]0;pwned\\007\\033[2J" && echo \u001b[31mred';
    const events = read([
      JSON.stringify({ type: 'tool_use', tool_name: 'run_shell_command', tool_id: 'e', parameters: { command } }),
      JSON.stringify({ type: 'message', role: 'assistant', content: '\u001b]52;c;Y2xpcA==\u0007done', delta: true }),
      JSON.stringify({ type: 'result', status: 'success' }),
    ]);
    assert.deepEqual(events[0], { kind: 'tool-call', id: 'e', name: 'run_shell_command', command, input: JSON.stringify({ command }) });
    assert.deepEqual(events[1], { kind: 'text', text: '\u001b]52;c;Y2xpcA==\u0007done' });
    assert.deepEqual(events[2], { kind: 'done', ok: true, summary: '\u001b]52;c;Y2xpcA==\u0007done' });
  });
});

describe('Gemini CLI start', () => {
  it('runs headless with the instruction as one argument, the model, yolo approvals and JSON events', () => {
    assert.deepEqual(geminiCli.argv(input), ['--prompt=-h; rm -rf / $(id)', '--model=gemini-2.5-flash', '--output-format', 'stream-json', '--approval-mode', 'yolo', '--skip-trust']);
  });

  it('gets the gateway and its token, its state folder as its home, and nothing that needs a network', () => {
    const env = geminiCli.environment(input);
    assert.equal(env.GOOGLE_GEMINI_BASE_URL, 'http://127.0.0.1:4000');
    assert.equal(env.GEMINI_API_KEY, 'belay-run-abc');
    assert.equal(env.GEMINI_CLI_HOME, '/belay-state');
    assert.equal(env.TMPDIR, '/belay-state');
    assert.equal(env.GEMINI_CLI_NO_RELAUNCH, 'true');
    for (const [name, value] of Object.entries(env)) assert.ok(!value.includes('http') || value === input.baseUrl, `${name} points nowhere but the gateway`);
    const files = geminiCli.stateFiles(input);
    assert.deepEqual(Object.keys(files), ['.gemini/settings.json']);
    const settings = JSON.parse(files['.gemini/settings.json']!) as Record<string, Record<string, unknown>>;
    assert.deepEqual(settings.security, { auth: { selectedType: 'gemini-api-key' }, folderTrust: { enabled: false } });
    assert.equal(settings.general!.enableAutoUpdate, false);
    assert.equal(settings.general!.enableAutoUpdateNotification, false);
    assert.deepEqual(settings.privacy, { usageStatisticsEnabled: false });
    assert.equal((settings.telemetry as { enabled: boolean }).enabled, false);
    assert.deepEqual(settings.ide, { enabled: false });
    assert.ok(!files['.gemini/settings.json']!.includes(input.token), 'the token is only in the environment');
  });
});
