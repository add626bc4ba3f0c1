import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { agentTextOf, listRuns, readBounded, readTrajectory, runsByTask } from '../../../src/runner/core/records/history.ts';
import { localBackend } from '../../../src/runner/core/backends/local.ts';
import { sdk1 } from '../../../src/runner/core/protocols/sdk1.ts';
import { runTask } from '../../../src/runner/core/run/run.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';
import { nodeAgent, taskDir, tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir();
after(() => tmp.remove());

describe('run history', () => {
  it('lists real runs newest first with their agent, and reads their steps for the views', async () => {
    const runsDir = path.join(tmp.dir, 'runs');
    const task = await loadTask(taskDir('hello'));
    const first = await runTask({ task, agentCommand: nodeAgent('multi-step.mjs'), agentCwd: tmp.dir, protocol: sdk1, agentName: 'scripted', backend: localBackend(), runsDir, runId: '20260101T000000Z-a' });
    const second = await runTask({ task, agentCommand: nodeAgent('multi-step.mjs'), agentCwd: tmp.dir, protocol: sdk1, backend: localBackend(), runsDir, runId: '20260101T000001Z-b' });
    mkdirSync(path.join(runsDir, 'not-a-run'));
    const runs = await listRuns(runsDir);
    assert.deepEqual(runs.map((r) => r.result.run_id).sort(), [first.run_id, second.run_id].sort());
    assert.ok(runs[0]!.result.started_at >= runs[1]!.result.started_at, 'newest first');
    assert.equal(runs.find((r) => r.result.run_id === first.run_id)!.result.agent, 'scripted');
    assert.equal(runs.find((r) => r.result.run_id === second.run_id)!.result.agent, undefined, 'a run started without a name (belay run) names no agent');
    assert.equal(runsByTask(runs, [task]).get(task.dir)!.length, 2);

    const { steps, skipped } = await readTrajectory(first.run_dir);
    assert.equal(skipped, 0);
    assert.deepEqual(steps.map((s) => [s.step, s.command, s.exitCode]), [[1, "echo 'Hello, world!' > hello.txt", 0], [2, 'cat hello.txt', 0], [3, null, null]]);
    assert.equal(steps[0]!.agentText, 'Writing the file');
    assert.equal((await readBounded(steps[1]!.outputFile, 1000)).trim(), 'Hello, world!');
  });

  it('skips malformed trajectory entries and says how many', async () => {
    const dir = path.join(tmp.dir, 'odd');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'trajectory.json'), JSON.stringify([{ step: 1 }, { step: 2, screen: null, response: { analysis: 'hm' }, command: 'ls', cwd: null, exit_code: 0, timed_out: false, duration_ms: 1, output_file: 'steps/missing.log' }]));
    const { steps, skipped } = await readTrajectory(dir);
    assert.equal(skipped, 1);
    assert.equal(steps[0]!.agentText, 'hm');
    assert.equal(steps[0]!.outputFile, null, 'a missing output file is not offered');
    await assert.rejects(readTrajectory(path.join(tmp.dir, 'nowhere')), /trajectory\.json/);
  });

  it('takes the agent’s words from text, then analysis', () => {
    assert.equal(agentTextOf({ text: 'a', analysis: 'b' }), 'a');
    assert.equal(agentTextOf({ analysis: 'b' }), 'b');
    assert.equal(agentTextOf('<b>x</b>'), null);
  });

  it('cuts long outputs and says so', async () => {
    const file = path.join(tmp.dir, 'long.log');
    writeFileSync(file, 'x'.repeat(5000));
    const text = await readBounded(file, 100);
    assert.ok(text.startsWith('x'.repeat(100)));
    assert.match(text, /cut/);
  });
});

describe('watching a runs folder', () => {
  it('reports a run whose result.json appears (written atomically, as the core does), and nothing before', async () => {
    const { RunsFolderWatcher } = await import('../../../src/runner/core/records/runsWatcher.ts');
    const { writeFileAtomic } = await import('../../../src/shared/atomic.ts');
    const runsDir = path.join(tmp.dir, 'watched-runs');
    let reported = 0;
    let notify: () => void = () => {};
    const watcher = new RunsFolderWatcher(runsDir, () => {
      reported++;
      notify();
    });
    try {
      assert.equal(watcher.start(), false, 'no folder yet');
      mkdirSync(runsDir);
      assert.equal(watcher.start(), true);
      const runDir = path.join(runsDir, 'run-1');
      const seen = new Promise<void>((resolve, reject) => {
        notify = resolve;
        setTimeout(() => reject(new Error('result.json was not reported within 10 s')), 10_000).unref();
      });
      mkdirSync(path.join(runDir, 'steps'), { recursive: true });
      writeFileSync(path.join(runDir, 'steps', '0001.log'), 'output');
      assert.equal(reported, 0);
      // Whether the new folder is seen before or after result.json lands, it is reported once.
      await writeFileAtomic(path.join(runDir, 'result.json'), '{}');
      await seen;
      assert.equal(reported, 1);
    } finally {
      watcher.dispose();
    }
  });
});
