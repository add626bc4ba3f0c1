import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { runFiles } from '../../../src/runner/core/records/records.ts';
import { freePort, httpRequest, StatusSchema } from '../../../src/runner/core/protocols/sdk2.ts';
import { containerOrReason } from '../../support/runner/container-helpers.ts';
import { backends, nodeAgent, runFixture, tempDir } from '../../support/runner/helpers.ts';

// Resolved before any test is registered: node:test runs root hooks early after a top-level await.
const available = await Promise.all(backends.map(async (b) => ({ ...b, backend: await b.get() })));
const container = await containerOrReason();
const tmp = tempDir();
after(() => tmp.remove());

/** An SDK 2.0 agent whose status says failed and done at once. */
const FAILED_BUT_DONE = "require('http').createServer((q,r)=>{r.setHeader('content-type','application/json');r.end(JSON.stringify(q.url==='/status'?{status:'failed',error:'gave up',done:true,steps:0}:{status:'ok'}))}).listen(Number(process.env.AGENT_PORT),'127.0.0.1')";

describe('SDK 2.0 status schema', () => {
  it('accepts the spec example and rejects an unknown status', () => {
    const example = { status: 'running', steps: 5, elapsed_secs: 12, error: null, done: false, history: [{ step: 1, command: 'ls -la', output: 'total 8', exit_code: 0 }] };
    assert.equal(StatusSchema.parse(example).history?.[0]?.command, 'ls -la');
    assert.equal(StatusSchema.safeParse({ status: 'sleeping' }).success, false);
  });

  it('finds a free port and reports a refused connection', async () => {
    const port = await freePort();
    await assert.rejects(httpRequest({ host: '127.0.0.1', port }, 'GET', '/health', 1000), /ECONNREFUSED/);
  });
});


for (const { name, backend } of available) {
  describe(`SDK 2.0 runs (${name} backend)`, { skip: backend instanceof Error ? backend.message : false }, () => {
    const be = backend as Exclude<typeof backend, Error>;
    const runs = path.join(tmp.dir, name);
    const sdk2 = { protocol: 'sdk2' as const, limits: { pollIntervalMs: 100 } };

    it('starts a real HTTP agent with AGENT_PORT, polls /status and records the history', async () => {
      const { result, events } = await runFixture(be, runs, nodeAgent('sdk2-server.mjs'), sdk2);
      assert.equal(result.passed, true, result.error ?? '');
      assert.equal(result.protocol, 'sdk2');
      assert.equal(result.steps, 3);
      const trajectory = JSON.parse(readFileSync(runFiles(result.run_dir).trajectory, 'utf8')) as { step: number; command: string; screen: string; exit_code: number }[];
      assert.deepEqual(trajectory.map((t) => [t.step, t.command, t.exit_code]), [
        [1, "echo 'Hello, world!' > hello.txt", 0],
        [2, 'cat hello.txt', 0],
        [3, 'ls', 0],
      ]);
      assert.equal(trajectory[1]!.screen, 'Hello, world!\n');
      assert.deepEqual(events.filter((e) => e.type === 'command').map((e) => (e as { step: number }).step), [1, 2, 3]);
      const log = readFileSync(runFiles(result.run_dir).agentStderr, 'utf8');
      assert.match(log, /\[sdk2\] listening on \d+/);
      assert.match(log, /started: max_steps=200 timeout_secs=\d+/);
    });

    it('reports the agent\'s own failure and a max-steps failure by name', async () => {
      const failed = await runFixture(be, runs, nodeAgent('sdk2-server.mjs'), { ...sdk2, env: { SDK2_MODE: 'fail' } });
      assert.equal(failed.result.failure_cause, 'agent_error');
      assert.match(failed.result.error ?? '', /the agent failed: ValueError: scripted failure/);
      assert.equal(failed.result.steps, 3);
      const maxSteps = await runFixture(be, runs, nodeAgent('sdk2-server.mjs'), { ...sdk2, env: { SDK2_MODE: 'max-steps' } });
      assert.equal(maxSteps.result.failure_cause, 'max_steps');
    });

    it('aborts after 5 consecutive /status errors', async () => {
      const { result, events } = await runFixture(be, runs, nodeAgent('sdk2-server.mjs'), { ...sdk2, env: { SDK2_MODE: 'broken-status' } });
      assert.equal(result.failure_cause, 'agent_error');
      assert.match(result.error ?? '', /GET \/status failed 5 times in a row \(last: HTTP 500\)/);
      assert.equal(events.filter((e) => e.type === 'notice').length, 5);
    });

    it('names an SDK 1.x agent run as SDK 2.0 instead of timing out', async () => {
      const { result } = await runFixture(be, runs, nodeAgent('multi-step.mjs'), sdk2);
      assert.equal(result.failure_cause, 'agent_error');
      assert.match(result.error ?? '', /before its HTTP server answered \/health .*use --protocol sdk1/);
    });

    it('says so when the agent prints SDK 1.x JSON on stdout instead of serving HTTP: a notice at once, the end at the health timeout', async () => {
      const agent = `'${process.execPath}' -e "console.log(JSON.stringify({command:'ls',task_complete:false})); setInterval(()=>{},1000)"`;
      const { result, events } = await runFixture(be, runs, agent, { ...sdk2, limits: { healthTimeoutMs: 3000 } });
      assert.equal(result.failure_cause, 'agent_error');
      assert.match(result.error ?? '', /protocol mismatch: the agent wrote SDK 1\.x JSON on stdout .*--protocol sdk1/);
      assert.ok(events.some((e) => e.type === 'notice' && /wrote SDK 1\.x JSON on stdout .*--protocol sdk1/.test(e.message)));
    });

    it('serves an SDK 2.0 agent that prints SDK 1.x-like JSON while its server starts slowly', async () => {
      // The JSON first, the server 2 s later: a slow start is not a mismatch.
      const agent = `'${process.execPath}' -e "console.log(JSON.stringify({command:'loading',task_complete:false}))" && sleep 2 && ${nodeAgent('sdk2-server.mjs')}`;
      const { result, events } = await runFixture(be, runs, agent, { ...sdk2, limits: { healthTimeoutMs: 30_000, pollIntervalMs: 100 } });
      assert.equal(result.passed, true, `${result.failure_cause}: ${result.error}`);
      assert.ok(events.some((e) => e.type === 'notice' && /wrote SDK 1\.x JSON/.test(e.message)));
    });

    it('ends the agent phase on done: true while the status still says running, as the validator does', async () => {
      const { result } = await runFixture(be, runs, nodeAgent('sdk2-server.mjs'), { ...sdk2, env: { SDK2_MODE: 'done-flag' } });
      assert.equal(result.passed, true, result.error ?? '');
      assert.equal(result.agent_completed, true);
      assert.equal(result.steps, 3);
    });

    it('a failed status wins over done: true', async () => {
      const agent = `'${process.execPath}' -e "${FAILED_BUT_DONE}"`;
      const { result } = await runFixture(be, runs, agent, sdk2);
      assert.equal(result.failure_cause, 'agent_error');
      assert.match(result.error ?? '', /the agent failed: gave up/);
      assert.equal(result.agent_completed, false);
    });

    it('runs in a runs folder deeper than a socket address can hold (over 200 bytes)', async () => {
      const deepRuns = path.join(runs, ...Array.from({ length: 6 }, (_, i) => `a-realistically-deep-project-folder-${i}`));
      assert.ok(Buffer.byteLength(deepRuns) > 200);
      const { result } = await runFixture(be, deepRuns, nodeAgent('sdk2-server.mjs'), sdk2);
      assert.equal(result.passed, true, result.error ?? '');
      assert.ok(Buffer.byteLength(runFiles(result.run_dir).control) > 107);
    });

    it('gives up on an agent that never serves /health within the startup timeout', async () => {
      const agent = `'${process.execPath}' -e "setInterval(()=>{},1000)"`;
      const { result } = await runFixture(be, runs, agent, { ...sdk2, limits: { healthTimeoutMs: 1000 } });
      assert.equal(result.failure_cause, 'agent_error');
      assert.match(result.error ?? '', /did not answer GET \/health on AGENT_PORT=\d+ within 1 s/);
    });
  });
}

describe('SDK 2.0 runs (container backend)', { skip: container instanceof Error ? container.message : false }, () => {
  it('reaches the agent through a socket outside a runs folder deeper than a socket address can hold, and ends on done: true', async () => {
    const deepRuns = path.join(tmp.dir, 'container', ...Array.from({ length: 6 }, (_, i) => `a-realistically-deep-project-folder-${i}`));
    const { result } = await runFixture(container as Exclude<typeof container, Error>, deepRuns, nodeAgent('sdk2-server.mjs'), { protocol: 'sdk2', limits: { pollIntervalMs: 100 }, env: { SDK2_MODE: 'done-flag' } });
    assert.equal(result.passed, true, result.error ?? '');
    assert.equal(result.agent_completed, true);
  });
});
