// The pure parts of jobs: the pass@k estimator against exact arithmetic, job.json's summary
// (tokens and cost when runs report them), the job lock, and a task image built once when
// several attempts ask for it at the same time.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import type { BoundedRunResult } from '../../../src/shared/process.ts';
import { tryLock, waitForLock } from '../../../src/shared/pidLock.ts';
import { Engine, type EngineRunOptions } from '../../../src/runner/core/backends/engine.ts';
import { imageSource, taskImage } from '../../../src/runner/core/backends/image-task.ts';
import { createJob, jobHolder, JobLockedError, runJob } from '../../../src/runner/core/jobs/job.ts';
import { passAtK, passAtKs } from '../../../src/runner/core/jobs/passAtK.ts';
import { writeRecords, type RunResult } from '../../../src/runner/core/records/records.ts';
import { estimateEta, progressText } from '../../../src/runner/core/jobs/progress.ts';
import { JobRecordSchema, readJob, type Trial } from '../../../src/runner/core/jobs/schema.ts';
import { summarizeJob } from '../../../src/runner/core/jobs/summary.ts';
import { jobTable } from '../../../src/cli/runJob.ts';
import type { JobRecord } from '../../../src/runner/core/jobs/schema.ts';
import { exactPassAtK } from '../../support/runner/jobs-helpers.ts';
import { tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-jobs-core-');
after(() => tmp.remove());

describe('pass@k', () => {
  it('equals 1 - C(n-c,k)/C(n,k) computed exactly, for every n ≤ 30, c ≤ n, k ≤ n', () => {
    for (let n = 1; n <= 30; n++)
      for (let c = 0; c <= n; c++)
        for (let k = 1; k <= n; k++) {
          const got = passAtK(n, c, k)!;
          assert.ok(Math.abs(got - exactPassAtK(n, c, k)) < 1e-12, `n=${n} c=${c} k=${k}: ${got}`);
        }
  });

  it('stays finite and right where binomials overflow a double (n = 2000)', () => {
    for (const [c, k] of [[1, 1], [3, 100], [1000, 500], [1, 1999], [0, 7]] as const) {
      const got = passAtK(2000, c, k)!;
      assert.ok(Number.isFinite(got) && got >= 0 && got <= 1);
      assert.ok(Math.abs(got - exactPassAtK(2000, c, k)) < 1e-9, `c=${c} k=${k}: ${got} vs ${exactPassAtK(2000, c, k)}`);
    }
    assert.equal(passAtK(10, 3, 1), 0.3);
  });

  it('is undefined outside 1 ≤ k ≤ n, 0 ≤ c ≤ n; the map goes up to min(n, K)', () => {
    assert.equal(passAtK(3, 1, 4), undefined);
    assert.equal(passAtK(3, 1, 0), undefined);
    assert.equal(passAtK(0, 0, 1), undefined);
    assert.equal(passAtK(3, 4, 1), undefined);
    assert.deepEqual(Object.keys(passAtKs(2, 1, 5)), ['1', '2']);
    assert.deepEqual(passAtKs(4, 0, 2), { '1': 0, '2': 0 });
  });
});

function trial(key: string, attempt: number, fields: Partial<Trial>): Trial {
  return {
    trial_id: `${key}.a${attempt}`, task_key: key, task_name: path.basename(key), attempt, status: 'finished', run_id: `r-${key}-${attempt}`,
    started_at: null, ended_at: null, passed: false, reward: 0, duration_sec: 1, steps: 1, failure_cause: null, llm: null, interrupted_runs: [], ...fields,
  };
}

describe('job.json summary', () => {
  const settings = { agent: 'a', protocol: 'sdk1', backend: 'local', attempts: 2, options: {}, tasks: [{ key: '/x/t', name: 't' }, { key: '/y/t', name: 't' }] };

  it('keeps tasks apart by folder, sums tokens and cost of the runs that reported them, leaves pass@k null until k attempts finished', () => {
    const trials = [
      trial('/x/t', 1, { passed: true, reward: 1, duration_sec: 2, llm: { requests: 2, input_tokens: 100, output_tokens: 10, cost_usd: 0.5 } }),
      trial('/x/t', 2, { passed: false, reward: 0.25, duration_sec: 4, llm: { requests: 1, input_tokens: 50, output_tokens: 5, cost_usd: 0.25 } }),
      trial('/y/t', 1, { passed: true, reward: 1, duration_sec: 3 }),
      trial('/y/t', 2, { status: 'running', passed: null, reward: null, duration_sec: null }),
    ];
    const { tasks, totals } = summarizeJob(settings, trials);
    const [x, y] = tasks;
    assert.deepEqual([x!.key, x!.attempts, x!.passed, x!.pass_at_1, x!.pass_at_k, x!.mean_reward, x!.mean_duration_sec, x!.total_duration_sec], ['/x/t', 2, 1, 0.5, 1, 0.625, 3, 6]);
    assert.deepEqual(x!.llm, { requests: 3, input_tokens: 150, output_tokens: 15, cost_usd: 0.75 });
    assert.equal(x!.mean_cost_usd, 0.375);
    assert.deepEqual([y!.attempts, y!.planned, y!.pass_at_1, y!.pass_at_k, y!.llm, y!.mean_cost_usd], [1, 2, 1, null, null, null]);
    assert.deepEqual(y!.pass_at, { '1': 1 });
    // The job: pass@1 over both tasks, pass@2 over the task that has its two attempts.
    assert.deepEqual([totals.tasks, totals.trials, totals.attempts, totals.passed, totals.failed, totals.pass_at_1, totals.pass_at_k], [2, 4, 3, 2, 1, 0.75, 1]);
    assert.deepEqual(totals.llm, { requests: 3, input_tokens: 150, output_tokens: 15, cost_usd: 0.75 });
  });

  it('prints pass@1 and pass@k as two columns, and one column when the job made one attempt a task', () => {
    const table = (attempts: number, trials: Trial[]) => {
      const job = { settings: { ...settings, attempts }, ...summarizeJob({ ...settings, attempts }, trials) } as unknown as JobRecord;
      return jobTable(job, '/').split('\n')[0]!.trim().split(/\s+/);
    };
    const two = [trial('/x/t', 1, { passed: true, reward: 1 }), trial('/x/t', 2, {}), trial('/y/t', 1, {}), trial('/y/t', 2, { passed: true, reward: 1 })];
    assert.deepEqual(table(2, two), ['task', 'passed', 'pass@1', 'pass@2', 'reward', 'time', 'cost']);
    assert.deepEqual(table(1, [trial('/x/t', 1, { passed: true, reward: 1 }), trial('/y/t', 1, {})]), ['task', 'passed', 'pass@1', 'reward', 'time', 'cost']);
  });

  it('refuses a job.json of another version or shape, naming the file and field', async () => {
    const dir = tmp.writeTask('job-v2', { 'job.json': JSON.stringify({ kind: 'belay.job', version: 2 }) });
    await assert.rejects(readJob(dir), /job\.json: version 2 of job\.json; this Belay reads version 1/);
    writeFileSync(path.join(dir, 'job.json'), JSON.stringify({ kind: 'belay.job', version: 1, job_id: 3 }));
    await assert.rejects(readJob(dir), /job\.json: field 'job_id'/);
    writeFileSync(path.join(dir, 'job.json'), '{');
    await assert.rejects(readJob(dir), /not readable JSON/);
    assert.equal(JobRecordSchema.safeParse({}).success, false);
  });
});

describe('progress', () => {
  it('estimates the time left from this session’s pace; none before a trial finished', () => {
    assert.equal(estimateEta({ elapsedMs: 10_000, finishedHere: 0, remaining: 5 }), null);
    assert.equal(estimateEta({ elapsedMs: 10_000, finishedHere: 4, remaining: 6 }), 15_000);
    assert.equal(progressText({ total: 10, done: 4, running: 2, passed: 3, failed: 1, pending: 4, etaMs: 65_000 }), '4/10 done (3 passed, 1 failed), 2 running, ETA 1m05s');
    assert.equal(progressText({ total: 2, done: 2, running: 0, passed: 2, failed: 0, pending: 0, etaMs: 0 }), '2/2 done (2 passed, 0 failed), 0 running');
  });
});

describe('locks', () => {
  it('a job lock is refused while its holder lives and taken over when its holder is dead', async () => {
    const file = path.join(tmp.dir, 'job.lock');
    const lock = await tryLock(file);
    assert.ok('release' in lock);
    assert.deepEqual(await tryLock(file), { heldBy: process.pid });
    await lock.release();
    writeFileSync(file, '999999999\n'); // a pid that cannot exist: a killed holder
    const taken = await tryLock(file);
    assert.ok('release' in taken);
    assert.equal(readFileSync(file, 'utf8').trim(), String(process.pid));
    await taken.release();
  });

  it('attempts of one task asking for its image at once: one build, the others find it', async () => {
    const task = tmp.writeTask('imaged', { 'task.toml': '', 'environment/Dockerfile': `FROM scratch\n# ${Date.now()}\n` });
    const built = new Set<string>();
    let builds = 0;
    let concurrentBuilds = 0;
    let mostAtOnce = 0;
    class FakeEngine extends Engine {
      override async imageExists(image: string): Promise<boolean> {
        return built.has(image);
      }
      override async run(args: readonly string[], _options: EngineRunOptions): Promise<BoundedRunResult> {
        builds++;
        mostAtOnce = Math.max(mostAtOnce, ++concurrentBuilds);
        await new Promise((resolve) => setTimeout(resolve, 100));
        built.add(args[args.indexOf('--tag') + 1]!);
        concurrentBuilds--;
        return { exitCode: 0, timedOut: false, aborted: false } as BoundedRunResult;
      }
    }
    const engine = new FakeEngine('podman', '/bin/false', { version: '5', runtime: 'crun', rootless: true, cgroupVersion: 2 }, {});
    const source = await imageSource(task, 'current');
    if (source.kind !== 'dockerfile') throw new Error(`expected a Dockerfile source, got ${source.kind}`);
    const results = await Promise.all(
      [1, 2, 3, 4].map((i) => taskImage({ engine, taskName: 'imaged', source, logFile: path.join(tmp.dir, `build-${i}.log`), timeoutMs: 10_000, taskDir: task })),
    );
    assert.equal(builds, 1);
    assert.equal(mostAtOnce, 1);
    assert.equal(new Set(results.map((r) => r.image)).size, 1);
    assert.deepEqual(results.map((r) => r.cached).sort(), [false, true, true, true]);
  });

  it('waiting for a lock ends when the wait is stopped', async () => {
    const file = path.join(tmp.dir, 'held.lock');
    const lock = await tryLock(file);
    const controller = new AbortController();
    const waiting = waitForLock(file, controller.signal, 20);
    controller.abort();
    await assert.rejects(waiting, { name: 'AbortError' });
    if ('release' in lock) await lock.release();
  });
});

describe('runJob without processes (a scripted trial runner)', () => {
  const fakeTask = (name: string) => ({ name, dir: path.join(tmp.dir, 'tasks', name), layout: 'current', instruction: 'do it', agentTimeoutSec: 10, testTimeoutSec: 10 }) as unknown as import('../../../src/runner/core/tasks/task.ts').Task;
  const resultOf = (runDir: string, runId: string, task: string, passed: boolean, cause: RunResult['failure_cause'] = passed ? null : 'tests_failed'): RunResult => ({
    run_id: runId, task_name: task, task_dir: '/t', protocol: 'sdk1', backend: 'local', started_at: new Date().toISOString(), ended_at: new Date().toISOString(),
    duration_sec: 0.1, steps: 1, agent_completed: true, verification: null, passed, reward: passed ? 1 : 0, failure_cause: cause, error: null, run_dir: runDir,
  });

  it('a stopped job leaves its running trials pending (folders set aside) and a resume finishes it; a run that ended unseen by job.json is adopted', async () => {
    const tasks = [fakeTask('a'), fakeTask('b')];
    const jobDir = await createJob({ jobsDir: path.join(tmp.dir, 'scripted'), tasks, settings: { agent: 'x', protocol: 'sdk1', backend: 'local', attempts: 2, options: {} } });
    const controller = new AbortController();
    let calls = 0;
    const stopped = await runJob({
      jobDir, tasks, concurrency: 2, signal: controller.signal,
      runTrial: async ({ task, runId, runsDir, signal }) => {
        const runDir = path.join(runsDir, runId);
        mkdirSync(runDir, { recursive: true });
        if (++calls === 1) return resultOf(runDir, runId, task.name, true);
        controller.abort(); // the second trial is running when the job is stopped
        assert.ok(signal.aborted);
        return resultOf(runDir, runId, task.name, false, 'aborted');
      },
    });
    assert.equal(stopped.status, 'stopped');
    assert.deepEqual(stopped.trials.map((t) => t.status), ['finished', 'pending', 'pending', 'pending']);
    const cut = stopped.trials[1]!.interrupted_runs[0]!;
    assert.ok(existsSync(path.join(jobDir, '.interrupted', cut)));
    assert.equal(stopped.totals.pass_at_k, null);

    // A trial recorded as running whose run wrote its result (the job was killed right after).
    const onDisk = await readJob(jobDir);
    const adopted = onDisk.trials[2]!;
    Object.assign(adopted, { status: 'running', run_id: 'finished-unseen' });
    mkdirSync(path.join(jobDir, 'finished-unseen'), { recursive: true });
    await writeRecords(path.join(jobDir, 'finished-unseen'), resultOf(path.join(jobDir, 'finished-unseen'), 'finished-unseen', adopted.task_name, true), []);
    writeFileSync(path.join(jobDir, 'job.json'), JSON.stringify(onDisk));

    const ran: string[] = [];
    const done = await runJob({
      jobDir, tasks, concurrency: 4,
      runTrial: async ({ task, attempt, runId, runsDir }) => {
        ran.push(`${task.name}#${attempt}`);
        return resultOf(path.join(runsDir, runId), runId, task.name, task.name === 'a');
      },
    });
    assert.equal(done.status, 'finished');
    assert.deepEqual(ran.sort(), ['b#1', 'b#2']); // a#2 was adopted
    assert.equal(done.trials[2]!.run_id, 'finished-unseen');
    assert.deepEqual(done.tasks.map((t) => [t.name, t.passed, t.attempts]), [['a', 2, 2], ['b', 0, 2]]);
  });

  it('refuses to run a job another live process holds', async () => {
    const tasks = [fakeTask('c')];
    const jobDir = await createJob({ jobsDir: path.join(tmp.dir, 'locked'), tasks, settings: { agent: 'x', protocol: 'sdk1', backend: 'local', attempts: 1, options: {} } });
    assert.equal(await jobHolder(jobDir), undefined);
    const lock = await tryLock(path.join(jobDir, 'job.lock'));
    assert.equal(await jobHolder(jobDir), process.pid);
    await assert.rejects(runJob({ jobDir, tasks, concurrency: 1, runTrial: async () => assert.fail('must not run') }), (error: Error) => error instanceof JobLockedError && /is being run by process \d+/.test(error.message));
    if ('release' in lock) await lock.release();
  });
});
