// Rewards that tell the truth, end to end through `belay run` (real CLI processes): a reward file
// decides, never the test script's exit status; several metrics and none named are shown metric by
// metric (terminal, result.json, job.json, ATIF) and no single reward is made up.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { nodeAgent, repoRoot, tempDir } from '../../support/runner/helpers.ts';
import { runCli } from '../../support/cli-process.ts';
import { ensureBuilt } from '../../support/build.ts';

const tmp = tempDir('belay-rewards-');
after(() => tmp.remove());
const cli = path.join(repoRoot, 'dist', 'cli.js');

before(() => {
  ensureBuilt();
});

/** A Harbor-style task whose test script writes `metrics` to reward.json and exits 0. */
function metricsTask(name: string, metrics: string, verifierToml = ''): string {
  return tmp.writeTask(name, {
    'task.toml': `[verifier]\ntimeout_sec = 30\n${verifierToml}`,
    'instruction.md': 'Do nothing.',
    'tests/test.sh': `#!/bin/sh\nmkdir -p "$LOGS_DIR/verifier"\necho '${metrics}' > "$LOGS_DIR/verifier/reward.json"\nexit 0\n`,
  });
}

const belay = (args: string[]) => runCli(cli, ['run', ...args, '--agent', nodeAgent('commands.mjs'), '--protocol', 'sdk1', '--backend', 'local'], { cwd: tmp.dir });

describe('belay run with several metrics', () => {
  it('fails all-zero metrics from a script that exits 0, shows each metric, and writes no reward', async () => {
    const task = metricsTask('multi-zero', '{"correctness": 0, "performance": 0}');
    const out = path.join(tmp.dir, 'runs-zero');
    const { code, stdout, stderr } = await belay([task, '--out', out]);
    assert.equal(code, 1, stderr);
    assert.match(stderr, /\[multi-zero\] tests: correctness 0, performance 0 \(not every metric is at its maximum \(1\): correctness 0, performance 0\)/);
    assert.match(stdout, /^multi-zero\s+failed\s+correctness 0, performance 0\s+\d+\s+/m);
    const [runId] = readdirSync(out);
    const result = JSON.parse(readFileSync(path.join(out, runId!, 'result.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(result.passed, false);
    assert.equal(result.reward, null);
    assert.deepEqual(result.metrics, { correctness: 0, performance: 0 });
    assert.equal(result.failure_cause, 'tests_failed');
    const atif = JSON.parse(readFileSync(path.join(out, runId!, 'agent', 'trajectory.json'), 'utf8')) as { extra: Record<string, unknown> };
    assert.equal(atif.extra.reward, null);
    assert.deepEqual(atif.extra.metrics, { correctness: 0, performance: 0 });
  });

  it('passes when every metric is at its maximum, still without a single reward', async () => {
    const out = path.join(tmp.dir, 'runs-full');
    const { code, stdout, stderr } = await belay([metricsTask('multi-full', '{"correctness": 1, "performance": 1}'), '--out', out, '--json']);
    assert.equal(code, 0, stderr);
    const { results } = JSON.parse(stdout) as { results: { passed: boolean; reward: number | null; metrics: Record<string, number> }[] };
    assert.deepEqual(results.map((r) => [r.passed, r.reward, r.metrics]), [[true, null, { correctness: 1, performance: 1 }]]);
  });

  it('follows the metric task.toml names as reward_metric', async () => {
    const out = path.join(tmp.dir, 'runs-named');
    const { code, stdout, stderr } = await belay([metricsTask('multi-named', '{"correctness": 1, "performance": 0}', 'reward_metric = "correctness"\n'), '--out', out]);
    assert.equal(code, 0, stderr);
    assert.match(stdout, /^multi-named\s+passed\s+1\s+/m);
  });

  it('keeps the metrics of every trial in job.json, their means in the summary, and no mean reward made up', async () => {
    const out = path.join(tmp.dir, 'jobs');
    const { code, stdout, stderr } = await belay([metricsTask('multi-job', '{"correctness": 1, "performance": 0.5}'), '--out', out, '--attempts', '2', '--concurrency', '2']);
    assert.equal(code, 1, stderr);
    assert.match(stderr, /\[multi-job #\d\] FAILED: tests_failed: .*\(correctness 1, performance 0\.5, /);
    assert.match(stdout, /^multi-job\s+0\/2\s+0\.00\s+0\.00\s+correctness 1, performance 0\.5\s+/m);
    const [jobId] = readdirSync(out).filter((name) => !name.startsWith('.'));
    const job = JSON.parse(readFileSync(path.join(out, jobId!, 'job.json'), 'utf8')) as {
      trials: { reward: number | null; metrics: Record<string, number> | null; passed: boolean }[];
      tasks: { mean_reward: number | null; mean_metrics?: Record<string, number> }[];
      totals: { mean_reward: number | null; mean_metrics?: Record<string, number> };
    };
    assert.deepEqual(job.trials.map((t) => [t.passed, t.reward, t.metrics]), [
      [false, null, { correctness: 1, performance: 0.5 }],
      [false, null, { correctness: 1, performance: 0.5 }],
    ]);
    assert.equal(job.tasks[0]!.mean_reward, null);
    assert.deepEqual(job.tasks[0]!.mean_metrics, { correctness: 1, performance: 0.5 });
    assert.equal(job.totals.mean_reward, null);
    assert.deepEqual(job.totals.mean_metrics, { correctness: 1, performance: 0.5 });
  });

  it('shows metric names written with escape sequences as text, not as terminal controls', async () => {
    const out = path.join(tmp.dir, 'runs-escape');
    const { stdout, stderr } = await belay([metricsTask('multi-escape', '{"\\u001b[2Jclear": 0, "b": 0}'), '--out', out]);
    assert.doesNotMatch(stdout + stderr, /\x1b\[2J/);
    assert.match(stdout, /clear 0, b 0/);
  });
});
