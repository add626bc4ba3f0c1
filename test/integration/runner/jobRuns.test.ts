// Trials of jobs beside single runs (core/results/jobRuns.ts), from real `belay run` processes with a
// scripted SDK 1.x agent whose pass count is known: which trials are found, with their job and
// attempt, and what a task's latest outcome is after single runs and jobs in either order.
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { listRuns } from '../../../src/runner/core/records/history.ts';
import { latestOutcome, listJobRuns, newestFirst, outcomeWords, trialWords, type RunOrTrial } from '../../../src/runner/core/results/jobRuns.ts';
import { readJob } from '../../../src/runner/core/jobs/schema.ts';
import { runCli } from '../../support/cli-process.ts';
import { ensureBuilt } from '../../support/build.ts';
import { agentFile, processesWith, repoRoot, tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-jobruns-');
const cli = path.join(repoRoot, 'dist', 'cli.js');
const agent = `'${process.execPath}' '${agentFile('flaky.mjs')}'`;
const counters = path.join(tmp.dir, 'counters');
const runsDir = path.join(tmp.dir, 'runs');
const jobsDir = path.join(tmp.dir, 'jobs');

before(() => {
  ensureBuilt();
  mkdirSync(counters, { recursive: true });
});
after(() => {
  for (const line of processesWith(agentFile('flaky.mjs'))) process.kill(Number(line.split(':')[0]), 'SIGKILL');
  tmp.remove();
});

/** The flaky agent passes the first `passes` attempts at the task, counted over every run of it. */
const task = tmp.writeTask('greet', {
  'task.toml': 'version = "1.0"\n[verifier]\ntimeout_sec = 30.0\n[agent]\ntimeout_sec = 60.0\n',
  'instruction.md': 'KEY=greet PASSES=3\n',
  'tests/test.sh': '#!/bin/sh\ngrep -q pass result.txt\n',
});

async function belayRun(extra: string[]): Promise<void> {
  const args = ['run', task, '--agent', agent, '--protocol', 'sdk1', '--backend', 'local', '--env', `BELAY_FLAKY_DIR=${counters}`, '--env', `BELAY_FLAKY_LOG=${path.join(tmp.dir, 'agents.log')}`, ...extra];
  const { code, stderr } = await runCli(cli, args, { cwd: tmp.dir });
  assert.ok(code === 0 || code === 1, `belay run ended with ${code}: ${stderr}`);
}

async function everyRun(): Promise<RunOrTrial[]> {
  return newestFirst<RunOrTrial>([...(await listRuns(runsDir)), ...(await listJobRuns([jobsDir, path.join(tmp.dir, 'no-such-jobs')]))]);
}

describe('trials of jobs as runs', () => {
  it('finds every finished trial with its job and attempt, and gives the task the job’s passed of attempts once the job is the latest', async () => {
    // Attempt 1 at the task passes (1 <= 3): a single run.
    await belayRun(['--out', runsDir]);
    assert.deepEqual(latestOutcome(await everyRun()).kind, 'run');
    assert.equal(outcomeWords(latestOutcome(await everyRun())), 'passed');

    // Then a job of 3: attempts 2 and 3 pass, 4 fails.
    await belayRun(['--attempts', '3', '--concurrency', '1', '--out', jobsDir]);
    const [jobName] = readdirSync(jobsDir);
    const jobDir = path.join(jobsDir, jobName!);
    const job = await readJob(jobDir);
    const trials = await listJobRuns([jobsDir]);
    assert.equal(trials.length, 3);
    assert.deepEqual(trials.map((t) => t.job!.attempt).sort(), [1, 2, 3]);
    for (const trial of trials) {
      assert.equal(trial.job!.id, job.job_id);
      assert.equal(trial.job!.dir, jobDir);
      assert.equal(trial.job!.attempts, 3);
      assert.equal(path.dirname(trial.result.run_dir), jobDir, 'the trial is the run folder inside the job');
      assert.equal(trial.result.task_dir, task);
    }
    assert.equal(trials.filter((t) => t.result.passed).length, 2);
    assert.match(trialWords(trials[0]!.job!), new RegExp(`^attempt [123] of 3 in job ${job.job_id}$`));

    const outcome = latestOutcome(await everyRun());
    assert.equal(outcome.kind, 'job');
    assert.ok(outcome.kind === 'job');
    assert.deepEqual([outcome.passed, outcome.finished, outcome.verdict, outcome.job.dir], [2, 3, 'mixed', jobDir]);
    assert.equal(outcomeWords(outcome), '2/3 passed');

    // A single run after the job is the latest again (attempt 5: it fails).
    await belayRun(['--out', runsDir]);
    const last = latestOutcome(await everyRun());
    assert.equal(last.kind, 'run');
    assert.equal(outcomeWords(last), 'failed: tests_failed');
  });

  it('a run folder the job does not list as a trial, an unreadable job.json and a Harbor job are not trials', async () => {
    const [jobName] = readdirSync(jobsDir);
    const jobDir = path.join(jobsDir, jobName!);
    const [aTrial] = readdirSync(jobDir).filter((n) => n !== 'job.json' && !n.startsWith('.') && !n.endsWith('.lock'));
    // A copy of a trial under a name job.json does not know (as a partial run set aside on resume).
    cpSync(path.join(jobDir, aTrial!), path.join(jobDir, 'stray-run'), { recursive: true });
    // A job whose job.json is broken, holding a finished run.
    const broken = path.join(jobsDir, '20991231T000000Z-job-broken');
    mkdirSync(broken);
    writeFileSync(path.join(broken, 'job.json'), '{ not json');
    cpSync(path.join(jobDir, aTrial!), path.join(broken, aTrial!), { recursive: true });
    // A Harbor job folder (config.json and result.json at its top).
    const harbor = path.join(jobsDir, '2099-12-31__00-00-00');
    mkdirSync(harbor);
    writeFileSync(path.join(harbor, 'config.json'), JSON.stringify({ job_name: 'h', n_attempts: 1 }));
    writeFileSync(path.join(harbor, 'result.json'), JSON.stringify({ id: 'h', started_at: null, finished_at: null }));

    const trials = await listJobRuns([jobsDir]);
    assert.equal(trials.length, 3);
    assert.ok(trials.every((t) => t.job!.dir === jobDir && path.basename(t.result.run_dir) !== 'stray-run'));
  });

  it('a task with no run has no outcome; a job whose every trial passed or failed says so', () => {
    assert.deepEqual(latestOutcome([]), { kind: 'none' });
    const run = (passed: boolean, started: string, attempt?: number): RunOrTrial => ({
      result: { run_id: started, passed, started_at: started, run_dir: `/j/${started}` } as RunOrTrial['result'],
      ...(attempt !== undefined ? { job: { id: 'j', dir: '/j', attempt, attempts: 2 } } : {}),
    });
    const all = latestOutcome([run(true, '2026-01-02', 1), run(true, '2026-01-03', 2), run(false, '2026-01-01')]);
    assert.ok(all.kind === 'job' && all.verdict === 'passed');
    const none = latestOutcome([run(false, '2026-01-02', 1), run(false, '2026-01-03', 2), run(true, '2026-01-01')]);
    assert.ok(none.kind === 'job' && none.verdict === 'failed');
    assert.equal(outcomeWords(none), '0/2 passed');
  });
});
