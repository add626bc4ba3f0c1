import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import type { RunEvent } from '../../../src/runner/core/records/events.ts';
import { firstJsonObject, suggestedProtocol } from '../../../src/runner/core/protocols/mismatch.ts';
import { freePort } from '../../../src/runner/core/protocols/sdk2.ts';
import { readResult, runFiles } from '../../../src/runner/core/records/records.ts';
import { parseSdk1Response, Sdk1RequestSchema } from '../../../src/runner/core/protocols/sdk1.ts';
import { backends, nodeAgent, processesWith, runFixture, tempDir } from '../../support/runner/helpers.ts';

// Resolved before any test is registered: node:test runs root hooks early after a top-level await.
const available = await Promise.all(backends.map(async (b) => ({ ...b, backend: await b.get() })));
const tmp = tempDir();
after(() => tmp.remove());

describe('SDK 1.x responses', () => {
  it('takes the first balanced JSON object in a line, aware of strings and escapes', () => {
    assert.deepEqual(firstJsonObject('noise {"a": "}{\\"", "b": {"c": 1}} tail {"d": 2}'), { a: '}{"', b: { c: 1 } });
    assert.deepEqual(firstJsonObject('{broken {"ok": true}'), { ok: true });
    assert.equal(firstJsonObject('no object here'), undefined);
    assert.equal(firstJsonObject('{"unterminated": '), undefined);
  });

  it('reads the current form, the done alias, text from analysis and the legacy form', () => {
    const current = parseSdk1Response('{"command": "ls -la", "task_complete": false, "extra": 1}');
    assert.ok('response' in current);
    assert.deepEqual(current.response, { command: 'ls -la', taskComplete: false, text: null });
    const done = parseSdk1Response('{"done": true, "analysis": "all good"}');
    assert.ok('response' in done);
    assert.deepEqual(done.response, { command: null, taskComplete: true, text: 'all good' });
    const legacy = parseSdk1Response(JSON.stringify({ analysis: 'a', commands: [{ keystrokes: 'echo 1\n' }, { keystrokes: 'echo 2\n', duration: 1 }] }));
    assert.ok('response' in legacy);
    assert.deepEqual(legacy.response, { command: 'echo 1\necho 2', taskComplete: false, text: 'a' });
    const both = parseSdk1Response(JSON.stringify({ command: 'wins', commands: [{ keystrokes: 'loses\n' }] }));
    assert.ok('response' in both);
    assert.equal(both.response.command, 'wins');
    const wrongType = parseSdk1Response('{"command": 42}');
    assert.ok('error' in wrongType);
    assert.match(wrongType.error, /field 'command'/);
  });
});


for (const { name, backend } of available) {
  const skip = backend instanceof Error ? `${backend.message}` : false;
  describe(`SDK 1.x runs (${name} backend)`, { skip }, () => {
    const be = backend as Exclude<typeof backend, Error>;
    const runs = path.join(tmp.dir, name);

    it('runs a multi-step agent, sends exact requests, verifies and writes the records', async () => {
      const { result, events } = await runFixture(be, runs, nodeAgent('multi-step.mjs'));
      assert.equal(result.passed, true, result.error ?? '');
      assert.equal(result.steps, 3);
      assert.equal(result.agent_completed, true);
      assert.equal(result.verification?.reward, 1);
      assert.deepEqual(result.verification?.test_results.map((t) => [t.name, t.status]), [['hello.txt holds the greeting', 'passed']]);
      const files = runFiles(result.run_dir);
      assert.deepEqual(await readResult(result.run_dir), result);
      const trajectory = JSON.parse(readFileSync(files.trajectory, 'utf8')) as { screen: string | null; response: { text: string } }[];
      assert.equal(trajectory.length, 3);
      assert.equal(trajectory[2]!.screen, 'Hello, world!');
      assert.equal(trajectory[2]!.response.text, 'File created successfully');
      assert.match(readFileSync(files.agentStderr, 'utf8'), /\[agent\] step 3 cwd=/);
      assert.equal(readFileSync(path.join(result.run_dir, 'steps', '0002.log'), 'utf8'), 'Hello, world!\n');
      // What the agent was sent, exactly: the request schema, step 1 with nulls.
      const stdin = events.filter((e) => e.type === 'step-started').map((e) => (e as { step: number }).step);
      assert.deepEqual(stdin, [1, 2, 3]);
      const order = events.map((e) => e.type).filter((t) => t !== 'agent-log' && t !== 'output');
      assert.deepEqual(order.slice(0, 5), ['run-started', 'step-started', 'agent-text', 'command', 'step-ended']);
      assert.deepEqual(order.slice(-3), ['verification-started', 'verification-ended', 'run-ended']);
      assert.ok(events.some((e) => e.type === 'output' && e.chunk.includes('Hello, world!')));
    });

    it('accepts legacy Terminal-Bench responses wrapped in other text', async () => {
      const { result } = await runFixture(be, runs, nodeAgent('legacy.mjs'));
      assert.equal(result.passed, true, result.error ?? '');
      assert.equal(result.steps, 2);
    });

    it('tracks the working directory whatever the command did', async () => {
      const { result } = await runFixture(be, runs, nodeAgent('cd-compound.mjs'));
      const trajectory = JSON.parse(readFileSync(runFiles(result.run_dir).trajectory, 'utf8')) as { cwd: string; screen: string | null }[];
      const workdir = be.name === 'sandbox' ? '/app' : runFiles(result.run_dir).workspace;
      assert.deepEqual(trajectory.map((t) => t.cwd), [workdir, `${workdir}/sub`, `${workdir}/sub`, `${workdir}/sub`]);
      assert.equal(trajectory[2]!.screen, `${workdir}/sub`);
      assert.equal(trajectory[3]!.screen, '[exit code: 1]');
      assert.ok(existsSync(path.join(runFiles(result.run_dir).workspace, 'sub', 'marker-from-step3')));
      assert.equal(result.failure_cause, 'tests_failed');
    });

    it('stops an agent that never finishes at the step limit', async () => {
      const { result } = await runFixture(be, runs, nodeAgent('infinite.mjs'), { limits: { maxSteps: 5 } });
      assert.equal(result.failure_cause, 'max_steps');
      assert.equal(result.steps, 5);
      assert.equal(result.passed, false);
    });

    it('kills a silent agent after the silence timeout', async () => {
      const { result } = await runFixture(be, runs, nodeAgent('silent.mjs'), { limits: { silenceTimeoutMs: 1500 } });
      assert.equal(result.failure_cause, 'agent_timeout');
      assert.match(result.error ?? '', /sent nothing for 2 s at step 1/);
    });

    it('retries invalid JSON and fails after 3 in a row; recovers before that', async () => {
      const { result, events } = await runFixture(be, runs, nodeAgent('garbage.mjs'));
      assert.equal(result.failure_cause, 'parse_error');
      assert.equal(events.filter((e) => e.type === 'notice').length, 3);
      assert.match(result.error ?? '', /3 invalid responses in a row at step 1/);
      const recovered = await runFixture(be, runs, nodeAgent('garbage.mjs'), { env: { GARBAGE_LIMIT: '2' } });
      assert.equal(recovered.result.agent_completed, true);
      const last = JSON.parse(readFileSync(runFiles(recovered.result.run_dir).trajectory, 'utf8')) as { response: { text: string } }[];
      assert.match(last[0]!.response.text, /recovered after 2 bad answers and 3 requests/);
    });

    it('keeps the agent\'s exit and stderr when it dies before answering', async () => {
      const { result } = await runFixture(be, runs, `'${process.execPath}' -e "console.error('boom: no key'); process.exit(4)"`);
      assert.equal(result.failure_cause, 'agent_error');
      assert.match(result.error ?? '', /exited with code 4 before answering step 1; its stderr ends with: boom: no key/);
    });

    it('names an HTTP agent run as SDK 1.x: ended at once where its server answers as SDK 2.0, else a notice and the hint at its timeout', async () => {
      // A free port, not a fixed one: other Belay tests on this machine listen too.
      const port = await freePort();
      const { result, events } = await runFixture(be, runs, nodeAgent('sdk2-server.mjs'), { env: { AGENT_PORT: String(port) }, limits: { silenceTimeoutMs: 4000 } });
      if (be.name === 'local') {
        // Reachable from Belay: /health and /status answer as SDK 2.0's do, which is proof.
        assert.equal(result.failure_cause, 'agent_error');
        assert.match(result.error ?? '', new RegExp(`protocol mismatch: the agent serves SDK 2\\.0 on TCP port ${port} .* --protocol sdk2`));
      } else {
        // Inside the sandbox's own network only the listener is seen: no proof, so no early end.
        assert.equal(result.failure_cause, 'agent_timeout');
        assert.match(result.error ?? '', new RegExp(`sent nothing for 4 s at step 1; it listens on TCP port ${port} .*run it with --protocol sdk2`));
        assert.ok(events.some((e) => e.type === 'notice' && e.message.includes(`listens on TCP port ${port}`)), 'the hint was a notice first');
      }
      assert.equal(suggestedProtocol(result.error), 'sdk2');
    });

    it('waits for a thinking agent that listens on a port of its own (not SDK 2.0) far past the probe', async () => {
      // The agent starts a server (a tool, say) and takes 4 probe intervals to answer its first step.
      const port = await freePort();
      const { result, events } = await runFixture(be, runs, nodeAgent('thinking.mjs'), { env: { AGENT_LISTEN: String(port), THINK_MS: '4000,0' }, limits: { mismatchProbeMs: 1000 } });
      assert.equal(result.passed, true, `${result.failure_cause}: ${result.error}`);
      const noted = events.some((e) => e.type === 'notice' && e.message.includes(`listens on TCP port ${port}`));
      // Where Belay can ask the port, it answers as no SDK 2.0 agent does: no hint at all; inside the
      // sandbox's own network it cannot be asked: a notice, never the end.
      assert.equal(noted, be.name === 'sandbox');
    });

    it('keeps memory and disk bounded when a command prints 200 MB and the agent floods its stdout', async () => {
      // Reading 200 MB and a flooding agent take well past the tests' 10 s of silence on a loaded
      // machine (it ended "the agent sent nothing for 10 s" once beside other heavy tests).
      const before = process.memoryUsage().rss;
      const logLimit = 1024 * 1024;
      const { result } = await runFixture(be, runs, nodeAgent('flood.mjs'), { env: { FLOOD_SELF: '1' }, limits: { excerptChars: 4000, maxLogBytes: logLimit, silenceTimeoutMs: 120_000 } });
      const grown = process.memoryUsage().rss - before;
      assert.equal(result.agent_completed, true, result.error ?? '');
      // Each log keeps its head and its tail, with a marker saying how much is left out between.
      const stepLog = readFileSync(path.join(result.run_dir, 'steps', '0001.log'), 'latin1');
      assert.ok(stepLog.length <= logLimit + 200, `the step log holds ${stepLog.length} bytes`);
      assert.match(stepLog, /^x{1000}/);
      assert.match(stepLog, /\n\[\.\.\. \d+ bytes omitted by Belay: each log keeps its first and last 512 KB \.\.\.\]\n/);
      assert.ok(stepLog.endsWith('x\nflood-end\n'));
      const trajectory = JSON.parse(readFileSync(runFiles(result.run_dir).trajectory, 'utf8')) as { screen: string | null; response: { text: string } }[];
      const shown = trajectory[1]!.screen!;
      assert.ok(shown.length < 9000, `the agent was shown ${shown.length} characters`);
      assert.match(shown, /\[\.\.\. \d+ characters omitted; the full output is in .*0001\.log \.\.\.\]/);
      assert.ok(shown.endsWith('flood-end'));
      const agentLog = statSync(runFiles(result.run_dir).agentStdout).size;
      assert.ok(agentLog <= logLimit + 200, `the agent's stdout log holds ${agentLog} bytes after a 200 MB flood`);
      assert.ok(grown < 150 * 1024 * 1024, `the harness grew by ${Math.round(grown / 1048576)} MB`);
    });

    it('leaves no process behind: background children of commands and of the agent are killed', async () => {
      const token = `belay-orphan-${name}-${process.pid}`;
      const { result } = await runFixture(be, runs, nodeAgent('background.mjs'), { env: { ORPHAN_TOKEN: token } });
      assert.equal(result.agent_completed, true, result.error ?? '');
      assert.deepEqual(processesWith(token), []);
    });

    it('stops a run on abort: the agent is killed and the result says aborted', async () => {
      const controller = new AbortController();
      const token = `belay-abort-${name}-${process.pid}`;
      const seen: RunEvent[] = [];
      const { result } = await runFixture(be, runs, `${nodeAgent('silent.mjs')} ${token}`, {
        signal: controller.signal,
        onEvent: (event) => {
          seen.push(event);
          if (event.type === 'step-started') controller.abort();
        },
      });
      assert.equal(result.failure_cause, 'aborted');
      assert.equal(result.verification, null);
      assert.deepEqual(processesWith(token), []);
      assert.equal(seen.at(-1)?.type, 'run-ended');
    });

    it('sends requests that match the spec schema exactly', async () => {
      // The agent's stdin is copied into its working directory on the way in.
      const agent = `tee -a "$BELAY_WORKDIR/requests.jsonl" | ${nodeAgent('multi-step.mjs')}`;
      const { result } = await runFixture(be, runs, agent);
      assert.equal(result.passed, true, result.error ?? '');
      const dump = path.join(runFiles(result.run_dir).workspace, 'requests.jsonl');
      const lines = readFileSync(dump, 'utf8').trim().split('\n').map((l) => Sdk1RequestSchema.strict().parse(JSON.parse(l)));
      const cwd = be.name === 'sandbox' ? '/app' : runFiles(result.run_dir).workspace;
      const instruction = 'Create a file named hello.txt in the working directory containing exactly "Hello, world!".';
      assert.deepEqual(lines, [
        { instruction, step: 1, last_command: null, output: null, exit_code: null, cwd },
        { instruction, step: 2, last_command: "echo 'Hello, world!' > hello.txt", output: '', exit_code: 0, cwd },
        { instruction, step: 3, last_command: 'cat hello.txt', output: 'Hello, world!', exit_code: 0, cwd },
      ]);
    });
  });
}
