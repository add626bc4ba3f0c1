import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RunResult } from '../../../src/runner/core/records/records.ts';
import { EventFormatter, failureMessage, formatEvent, formatTokens, formatUsd, llmLine, resultLine, sanitizeTerminalText } from '../../../src/runner/core/records/format.ts';
import { toTerminalNewlines } from '../../../src/shared/terminalOutput.ts';

const plain = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '');

function result(over: Partial<RunResult>): RunResult {
  return {
    run_id: 'r', task_name: 't', task_dir: '/t', protocol: 'sdk1', backend: 'local', started_at: '2026-01-01T00:00:00Z', ended_at: '2026-01-01T00:00:02Z',
    duration_sec: 2.1, steps: 3, agent_completed: true, verification: null, passed: true, reward: 1, failure_cause: null, error: null, run_dir: '/r', ...over,
  };
}

describe('the agent terminal text', () => {
  it('keeps colours in output but neutralises every other escape an agent could use to fake the screen', () => {
    assert.equal(sanitizeTerminalText('\x1b[31mred\x1b[0m'), '\x1b[31mred\x1b[0m');
    assert.equal(sanitizeTerminalText('a\x1b[2Jb\x1b]0;title\x07c'), 'a␛[2Jb␛]0;title␇c');
    assert.equal(sanitizeTerminalText('progress\rdone\r\nnext'), 'progress\ndone\nnext');
  });

  it('names the backend on its own line, in yellow when it does not isolate the agent', () => {
    const started = (isolated: boolean, backend: string) => formatEvent({ type: 'run-started', runId: 'r', task: 'hello', protocol: 'sdk1', backend, isolated, runDir: '/runs/r' });
    assert.equal(plain(started(true, 'sandbox (bubblewrap)')), 'Belay: hello (sdk1)\nbackend sandbox (bubblewrap)\nrun folder /runs/r\n');
    assert.match(started(false, 'local (no isolation)'), /\x1b\[33mbackend local \(no isolation\)/);
    assert.doesNotMatch(started(true, 'sandbox (bubblewrap)'), /\x1b\[33m/);
  });

  it('shows a bounded part of a flooding step, says where the rest is, and starts afresh at the next step', () => {
    const f = new EventFormatter(10);
    const shown = [f.format({ type: 'step-started', step: 7 }), f.format({ type: 'output', step: 7, chunk: 'abcdef' }), f.format({ type: 'output', step: 7, chunk: 'ghijklmnop' }), f.format({ type: 'output', step: 7, chunk: 'more' })].map(plain);
    assert.equal(shown[1], 'abcdef');
    assert.equal(shown[2], 'ghij\n! more output than a terminal should hold: the rest of step 7 is in its log (steps/0007.log)\n');
    assert.equal(shown[3], '');
    f.format({ type: 'step-started', step: 8 });
    assert.equal(plain(f.format({ type: 'output', step: 8, chunk: 'again' })), 'again');
  });

  it('converts newlines for the pseudoterminal', () => {
    assert.equal(toTerminalNewlines('a\nb\r\nc'), 'a\r\nb\r\nc');
  });

  it('shows step headers, agent text, the command, output, exit codes and the result', () => {
    const f = new EventFormatter();
    const text = plain(
      [
        f.format({ type: 'step-started', step: 1 }),
        f.format({ type: 'agent-text', step: 1, text: 'Writing\nthe file' }),
        f.format({ type: 'command', step: 1, command: 'echo hi', cwd: '/app' }),
        f.format({ type: 'output', step: 1, chunk: 'hi' }),
        f.format({ type: 'step-ended', step: 1, exitCode: 2, timedOut: false, durationMs: 12 }),
        f.format({ type: 'run-ended', result: result({}) }),
      ].join(''),
    );
    assert.equal(text, '\n── step 1 ──\n» Writing\n» the file\n$ echo hi\nhi\n[exit 2 · 12 ms]\n\nPASSED  reward 1 · 3 steps · 2.1 s\n');
    assert.match(formatEvent({ type: 'step-ended', step: 1, exitCode: 2, timedOut: false, durationMs: 1 }), /\x1b\[31m/, 'a failing exit code is red');
  });

  it('says why a run failed, in words and with the tests’ output, for Test Explorer', () => {
    const failed = result({
      passed: false, reward: 0, failure_cause: 'tests_failed', error: 'the tests gave reward 0',
      verification: { success: false, reward: 0, output: 'expected hello\n', error: null, timed_out: false, exit_code: 1, test_results: [{ name: 'greeting', status: 'failed', message: 'no file' }] },
    });
    const message = failureMessage(failed);
    assert.match(message, /^tests_failed: the tests failed\nthe tests gave reward 0\n\nTest output:\nexpected hello\n\nFailed tests:\n- greeting: no file$/);
    assert.equal(resultLine(failed), 'FAILED  reward 0 · 3 steps · 2.1 s · tests_failed: the tests gave reward 0');
  });
});

describe('model calls in the run summary', () => {
  const llm = { requests: 3, input_tokens: 10_100, output_tokens: 2_300, cost_usd: 0.04213 };

  it('adds tokens and cost to the result line and a model-calls line under it, only when the run called a model', () => {
    assert.equal(resultLine(result({ llm })), 'PASSED  reward 1 · 3 steps · 2.1 s · 12.4k tokens · $0.0421');
    assert.equal(resultLine(result({})), 'PASSED  reward 1 · 3 steps · 2.1 s');
    const ended = plain(formatEvent({ type: 'run-ended', result: result({ llm }) }));
    assert.match(ended, /model calls: 3 requests · 12\.4k tokens \(10\.1k in, 2\.30k out\) · \$0\.0421\n$/);
    assert.doesNotMatch(plain(formatEvent({ type: 'run-ended', result: result({ llm: { requests: 0, input_tokens: 0, output_tokens: 0, cost_usd: 0 } }) })), /model calls/);
  });

  it("says each reward-hacking signal under the result line, the agent's escape sequences neutralised", () => {
    const ended = formatEvent({ type: 'run-ended', result: result({ signals: [{ kind: 'read_tests', detail: 'cat /tests/x \u001b]0;owned\u0007' }] }) });
    assert.doesNotMatch(ended, /\u001b\]0;owned/);
    assert.match(plain(ended), /reward-hacking signal: read the tests: cat \/tests\/x .*\n$/);
    assert.doesNotMatch(plain(formatEvent({ type: 'run-ended', result: result({ signals: [] }) })), /reward-hacking/);
  });

  it('writes token counts and dollars readably at every size', () => {
    assert.equal(formatTokens(950), '950');
    assert.equal(formatTokens(1234), '1.23k');
    assert.equal(formatTokens(98_765), '98.8k');
    assert.equal(formatTokens(3_100_000), '3.10M');
    assert.equal(formatUsd(0.00042), '$0.0004');
    assert.equal(formatUsd(12.345), '$12.35');
    assert.equal(llmLine({ requests: 1, input_tokens: 5, output_tokens: 7, cost_usd: 0 }), '1 request · 12 tokens (5 in, 7 out) · $0.0000');
  });

  it('names a spent budget in words', () => {
    const message = failureMessage(result({ passed: false, failure_cause: 'budget_exceeded', error: 'the run spent $0.50 of its $0.50 budget' }));
    assert.match(message, /^budget_exceeded: the agent spent its LLM budget\nthe run spent \$0\.50/);
  });
});
