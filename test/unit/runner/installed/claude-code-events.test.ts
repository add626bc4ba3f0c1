// Claude Code's stream-json events, as the real CLI printed them (test/fixtures/runner/installed/
// claude-code/, captured against a scripted Messages service), read into Belay's events; and lines
// a hostile or broken CLI could print.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { claudeCode, toolCommand } from '../../../../src/runner/core/protocols/installed/claudeCode.ts';
import type { InstalledEvent } from '../../../../src/runner/core/protocols/installed/installedAgent.ts';
import { fixtures } from '../../../support/runner/helpers.ts';

const read = (lines: string[]): InstalledEvent[] => {
  const reader = claudeCode.events();
  return lines.flatMap((line) => reader.line(line));
};

describe('Claude Code events', () => {
  it('reads a real run: words, the Bash call with its command, its result, the end', () => {
    const lines = readFileSync(path.join(fixtures, 'installed', 'claude-code', 'bash-then-text.jsonl'), 'utf8').split('\n').filter(Boolean);
    assert.deepEqual(read(lines), [
      { kind: 'text', text: 'I will create it.' },
      { kind: 'tool-call', id: 'toolu_000001', name: 'Bash', command: "printf 'Hello, world!' > hello.txt", input: JSON.stringify({ command: "printf 'Hello, world!' > hello.txt", description: 'Create hello.txt' }) },
      { kind: 'tool-result', id: 'toolu_000001', output: '(Bash completed with no output)', exitCode: 0, isError: false },
      { kind: 'text', text: 'Created hello.txt.' },
      { kind: 'done', ok: true, summary: 'Created hello.txt.' },
    ]);
  });

  it("reads a failed command's exit code and an API failure at the end", () => {
    const events = read([
      JSON.stringify({ type: 'user', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'Exit code 2\nls: cannot access x', is_error: true }] } }),
      JSON.stringify({ type: 'user', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't2', content: [{ type: 'text', text: 'part one' }, { type: 'image' }], is_error: true }] } }),
      JSON.stringify({ type: 'result', subtype: 'success', is_error: true, api_error_status: 401, result: 'Invalid API key' }),
    ]);
    assert.deepEqual(events, [
      { kind: 'tool-result', id: 't1', output: 'Exit code 2\nls: cannot access x', exitCode: 2, isError: true },
      { kind: 'tool-result', id: 't2', output: 'part one\n[an image]', exitCode: null, isError: true },
      { kind: 'error', message: 'the model API answered 401: Invalid API key' },
      { kind: 'done', ok: false, summary: 'Invalid API key' },
    ]);
  });

  it('names what a non-shell tool does', () => {
    assert.equal(toolCommand('Write', { file_path: '/app/a.txt', content: 'x' }), 'Write /app/a.txt');
    assert.equal(toolCommand('Grep', { pattern: 'TODO' }), 'Grep TODO');
    assert.equal(toolCommand('TodoWrite', { todos: [] }), 'TodoWrite');
    assert.equal(toolCommand('Bash', { command: 42 }), 'Bash');
  });

  it('gives nothing for lines it does not understand, never throws, and keeps fields bounded', () => {
    const huge = 'x'.repeat(5_000_000);
    const events = read([
      '',
      'not json',
      '[1,2,3]',
      'null',
      '{"type":"assistant"}',
      '{"type":"assistant","message":{"content":"text, not blocks"}}',
      '{"type":"assistant","message":{"content":[null,1,{"type":"tool_use"},{"type":"tool_use","id":5,"name":"Bash"}]}}',
      '{"type":"user","message":{"content":[{"type":"tool_result"}]}}',
      '{"type":"system","subtype":"init"}',
      JSON.stringify({ type: 'assistant', message: { content: [{ type: 'text', text: huge }] } }),
    ]);
    assert.equal(events.length, 1);
    assert.equal(events[0]!.kind, 'text');
    assert.ok((events[0] as { text: string }).text.length <= 64_001);
  });

  it('keeps escape sequences in a command as text (the terminal layer neutralises them)', () => {
    const command = 'echo \u001b]0;owned\u0007 \u001b[2J';
    const [event] = read([JSON.stringify({ type: 'assistant', message: { content: [{ type: 'tool_use', id: 'e', name: 'Bash', input: { command } }] } })]);
    assert.equal(event?.kind === 'tool-call' ? event.command : undefined, command);
  });

  it('starts headless with the instruction as one argument and only the gateway as its way out', () => {
    const input = { instruction: 'do it; rm -rf / "$(x)"', model: 'm', baseUrl: 'http://127.0.0.1:4141', token: 'tok', stateDir: '/belay-state', workdir: '/app' };
    const argv = claudeCode.argv(input);
    assert.equal(argv[argv.indexOf('-p') + 1], input.instruction);
    assert.ok(argv.includes('--dangerously-skip-permissions'));
    const env = claudeCode.environment(input);
    assert.equal(env.ANTHROPIC_BASE_URL, input.baseUrl);
    assert.equal(env.ANTHROPIC_API_KEY, 'tok');
    assert.equal(env.CLAUDE_CONFIG_DIR, '/belay-state');
    assert.equal(env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC, '1');
  });
});
