// The Results view's pure parts: a job.json and a Harbor job folder as the view's model, the
// matrix by attempt and by agent, flaky detection, filters and sorts, and the comparison of two jobs.
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { mkdirSync, writeFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { createJob } from '../../../src/runner/core/jobs/job.ts';
import type { Task } from '../../../src/runner/core/tasks/task.ts';
import { tempDir } from '../../support/runner/helpers.ts';
import { JOB_SCHEMA_VERSION, type JobRecord, type Trial } from '../../../src/runner/core/jobs/schema.ts';
import { summarizeJob } from '../../../src/runner/core/jobs/summary.ts';
import { compareJobs } from '../../../src/runner/core/results/compareJobs.ts';
import { jobFolderKind, jobStartedMs, listJobFolders, readJobView } from '../../../src/runner/core/results/discover.ts';
import { atifSignals, atifSteps, harborReward, readHarborJob } from '../../../src/runner/core/results/harbor.ts';
import { buildMatrix, cellOf, orderRows, type MatrixRow } from '../../../src/runner/core/results/matrix.ts';
import { agentLabel, jobViewFromRecord, type JobView, type TrialView } from '../../../src/runner/core/results/model.ts';

const HARBOR_JOBS = path.resolve(import.meta.dirname, '../../fixtures/runner/harbor-job');
const HARBOR_JOB = path.join(HARBOR_JOBS, '2026-01-05__10-00-00');

/** A job.json of `tasks` × `outcomes.length` attempts; `outcomes[task][attempt]`: true passed, false failed, null pending. */
function record(outcomes: Record<string, (boolean | null)[]>, extra: Partial<Trial> = {}): JobRecord {
  const names = Object.keys(outcomes);
  const attempts = Math.max(...names.map((n) => outcomes[n]!.length));
  const settings = { agent: 'node agent.mjs', agent_name: 'demo', protocol: 'sdk1', backend: 'local', attempts, tasks: names.map((name) => ({ key: `/tasks/${name}`, name })), options: {} };
  const trials: Trial[] = [];
  for (let a = 1; a <= attempts; a++) {
    names.forEach((name, i) => {
      const passed = outcomes[name]![a - 1] ?? null;
      trials.push({
        trial_id: `t${i + 1}.a${a}`,
        task_key: `/tasks/${name}`,
        task_name: name,
        attempt: a,
        status: passed === null ? 'pending' : 'finished',
        run_id: passed === null ? null : `run-${name}-${a}`,
        started_at: null,
        ended_at: null,
        passed,
        reward: passed === null ? null : passed ? 1 : 0,
        duration_sec: passed === null ? null : 10 * (i + 1) + a,
        steps: passed === null ? null : 3,
        failure_cause: passed === false ? 'tests_failed' : null,
        llm: passed === null ? null : { requests: 1, input_tokens: 100, output_tokens: 10, cost_usd: 0.01 * (i + 1) },
        interrupted_runs: [],
        ...extra,
      });
    });
  }
  const now = '2026-01-01T00:00:00.000Z';
  return { kind: 'belay.job', version: JOB_SCHEMA_VERSION, job_id: 'job-1', created_at: now, updated_at: now, ended_at: null, status: 'running', settings, ...summarizeJob(settings, trials), trials };
}

function trial(task: string, attempt: number, passed: boolean | null, more: Partial<TrialView> = {}): TrialView {
  return {
    trialId: `${task}.${attempt}`,
    taskKey: task,
    taskName: task,
    attempt,
    agent: 'a',
    state: passed === null ? 'running' : 'finished',
    passed,
    reward: passed === null ? null : passed ? 1 : 0,
    metrics: null,
    steps: 2,
    durationSec: 5,
    costUsd: null,
    tokens: null,
    failureCause: passed === false ? 'tests_failed' : null,
    host: null,
    runDir: `/runs/${task}-${attempt}-${String(passed)}`,
    trajectoryFile: null,
    signals: [],
    ...more,
  };
}

function job(id: string, trials: TrialView[], attempts = 1): JobView {
  return { id, dir: `/jobs/${id}`, source: 'belay', label: id, status: 'finished', createdAt: '', attempts, scores: [], trials };
}

describe('the view model of a job.json', () => {
  it('keeps every trial with its run folder inside the job, its cost and tokens, and the job’s pass@1 / pass@k', () => {
    const view = jobViewFromRecord(record({ hello: [true, false, true], words: [false, false, null] }), '/jobs/j1');
    assert.equal(view.trials.length, 6);
    const first = view.trials.find((t) => t.taskName === 'hello' && t.attempt === 1)!;
    assert.equal(first.runDir, path.join('/jobs/j1', 'run-hello-1'));
    assert.equal(first.costUsd, 0.01);
    assert.equal(first.tokens, 110);
    assert.equal(first.agent, 'demo');
    assert.equal(view.trials.find((t) => t.taskName === 'words' && t.attempt === 3)!.state, 'pending');
    assert.deepEqual(view.scores, [{ agent: 'demo', k: 3, passAt1: (2 / 3 + 0 / 2) / 2, passAtK: 1 }]);
  });

  it("names the other machine whose engine ran a trial, and each cell the machines of its trials", () => {
    const job = record({ hello: [true, false, true] });
    job.trials[0]!.host = 'ci@build-1';
    job.trials[1]!.host = 'ci@build-2';
    job.trials[2]!.host = 'ci@build-1';
    const view = jobViewFromRecord(job, '/jobs/j1');
    assert.deepEqual(view.trials.map((t) => t.host), ['ci@build-1', 'ci@build-2', 'ci@build-1']);
    assert.deepEqual(cellOf(view.trials).hosts, ['ci@build-1', 'ci@build-2']);
    assert.deepEqual(cellOf(jobViewFromRecord(record({ hello: [true] }), '/j').trials).hosts, [], 'ran here: no host named');
  });

  it('opens no run folder outside the job, whatever job.json says', () => {
    const job = record({ hello: [true, true, true, true] });
    job.trials[0]!.run_id = '../../etc';
    job.trials[1]!.run_id = '..';
    job.trials[2]!.run_id = '/tmp/x';
    const view = jobViewFromRecord(job, '/jobs/j1');
    assert.deepEqual(view.trials.map((t) => t.runDir), [null, null, null, path.join('/jobs/j1', 'run-hello-4')]);
  });

  it('names an agent by its name, else by its command line cut to a column’s width', () => {
    assert.equal(agentLabel('demo', 'x'), 'demo');
    assert.equal(agentLabel(undefined, 'python3   agent.py'), 'python3 agent.py');
    assert.equal(agentLabel(undefined, 'x'.repeat(80)).length, 40);
    assert.equal(agentLabel(undefined, "'/usr/lib/node' '/home/me/agents/flaky.mjs' --fast"), 'node flaky.mjs --fast');
    assert.equal(agentLabel(undefined, 'python3 "/a b/agent.py"'), 'python3 agent.py');
  });
});

describe('the matrix', () => {
  it('shows one agent’s job by attempt, a cell per trial, and finds the flaky task', () => {
    const m = buildMatrix([jobViewFromRecord(record({ hello: [true, false, true], words: [false, false, false], ok: [true, true, true] }), '/j')]);
    assert.equal(m.mode, 'attempts');
    assert.deepEqual(m.columns.map((c) => c.label), ['Attempt 1', 'Attempt 2', 'Attempt 3']);
    const hello = m.rows.find((r) => r.task === 'hello')!;
    assert.deepEqual(hello.cells.map((c) => c?.result), ['passed', 'failed', 'passed']);
    assert.equal(hello.flaky, true);
    assert.equal(m.rows.find((r) => r.task === 'words')!.flaky, false);
    assert.equal(m.rows.find((r) => r.task === 'ok')!.flaky, false);
    assert.equal(hello.cells[1]!.failureCause, 'tests_failed');
  });

  it('shows several jobs by agent, a cell summing a task’s attempts, opening its first failed run', () => {
    const a = job('ja', [trial('t1', 1, true), trial('t1', 2, false), trial('t2', 1, true)], 2);
    const b = job('jb', [trial('t1', 1, true, { agent: 'b' }), trial('t3', 1, false, { agent: 'b' })]);
    const m = buildMatrix([a, b]);
    assert.equal(m.mode, 'agents');
    assert.deepEqual(m.columns.map((c) => `${c.label}@${c.detail}`), ['a@ja', 'b@jb']);
    assert.deepEqual(m.rows.map((r) => r.task), ['t1', 't2', 't3']);
    const t1 = m.rows[0]!;
    assert.equal(t1.cells[0]!.result, 'mixed');
    assert.equal(t1.cells[0]!.passed, 1);
    assert.equal(t1.cells[0]!.finished, 2);
    assert.equal(t1.cells[0]!.reward, 0.5);
    assert.equal(t1.cells[0]!.open!.runDir, '/runs/t1-2-false');
    assert.equal(m.rows[1]!.cells[1], null);
    assert.equal(t1.flaky, true, 'flaky within one agent’s attempts');
    const across = buildMatrix([job('x', [trial('t', 1, true)]), job('y', [trial('t', 1, false, { agent: 'b' })])]);
    assert.equal(across.rows[0]!.flaky, false, 'one agent passes, another fails: not flaky');
    assert.equal(m.rows[2]!.cells[0], null);
  });

  it('says running for a cell whose trial runs, pending for one not started', () => {
    const m = buildMatrix([job('j', [trial('t', 1, null), trial('u', 1, null, { state: 'pending' })])]);
    assert.equal(m.rows[0]!.cells[0]!.result, 'running');
    assert.equal(m.rows[1]!.cells[0]!.result, 'pending');
    assert.equal(m.rows[0]!.running, 1);
  });

  it('filters failed, flaky, passed and unfinished tasks and sorts by failures, time, cost and reward', () => {
    const row = (task: string, over: Partial<MatrixRow>): MatrixRow => ({
      key: task, task, cells: [], trials: 2, finished: 2, passed: 2, failed: 0, running: 0, flaky: false, flagged: false, meanReward: 1, maxDurationSec: 1, costUsd: null, ...over,
    });
    const rows = [
      row('b-ok', { maxDurationSec: 3, costUsd: 0.5 }),
      row('a-flaky', { passed: 1, failed: 1, flaky: true, meanReward: 0.5, maxDurationSec: 9 }),
      row('c-failed', { passed: 0, failed: 2, meanReward: 0, costUsd: 2, maxDurationSec: null }),
      row('d-waiting', { finished: 0, passed: 0, meanReward: null, maxDurationSec: null }),
    ];
    const names = (order: number[]) => order.map((i) => rows[i]!.task);
    assert.deepEqual(names(orderRows(rows, { filter: 'all', sort: 'task' })), ['a-flaky', 'b-ok', 'c-failed', 'd-waiting']);
    assert.deepEqual(names(orderRows(rows, { filter: 'failed', sort: 'task' })), ['a-flaky', 'c-failed']);
    assert.deepEqual(names(orderRows(rows, { filter: 'flaky', sort: 'task' })), ['a-flaky']);
    assert.deepEqual(names(orderRows(rows, { filter: 'passed', sort: 'task' })), ['b-ok']);
    assert.deepEqual(names(orderRows(rows, { filter: 'unfinished', sort: 'task' })), ['d-waiting']);
    assert.deepEqual(names(orderRows(rows, { filter: 'all', sort: 'failed' })), ['c-failed', 'a-flaky', 'b-ok', 'd-waiting']);
    assert.deepEqual(names(orderRows(rows, { filter: 'all', sort: 'slowest' })), ['a-flaky', 'b-ok', 'c-failed', 'd-waiting']);
    assert.deepEqual(names(orderRows(rows, { filter: 'all', sort: 'cost' })), ['c-failed', 'b-ok', 'a-flaky', 'd-waiting']);
    assert.deepEqual(names(orderRows(rows, { filter: 'all', sort: 'reward' })), ['c-failed', 'a-flaky', 'b-ok', 'd-waiting']);
    assert.deepEqual(names(orderRows(rows, { filter: 'all', sort: 'task', text: 'FLA' })), ['a-flaky']);
    assert.deepEqual(names(orderRows(rows, { filter: 'flagged', sort: 'task' })), []);
    const withFlag = [...rows, row('e-hacked', { flagged: true })];
    assert.deepEqual(orderRows(withFlag, { filter: 'flagged', sort: 'task' }).map((i) => withFlag[i]!.task), ['e-hacked']);
  });

  it('marks trials with reward-hacking signals: the cell lists them in words, the row is flagged, the flag filter keeps it; a job.json trial carries them', () => {
    const hacked = trial('t', 1, true, { signals: [{ kind: 'read_tests', detail: 'cat /tests/test.sh' }, { kind: 'network_denied', detail: 'github.com:443 refused in the agent phase' }] });
    const m = buildMatrix([job('j', [hacked, trial('u', 1, true)])]);
    assert.deepEqual(m.rows[0]!.cells[0]!.signals, ['read the tests: cat /tests/test.sh', 'reached for a host outside the allowlist: github.com:443 refused in the agent phase']);
    assert.equal(m.rows[0]!.flagged, true);
    assert.deepEqual(m.rows[1]!.cells[0]!.signals, []);
    assert.equal(m.rows[1]!.flagged, false);
    assert.deepEqual(orderRows(m.rows, { filter: 'flagged', sort: 'task' }), [0]);
    const view = jobViewFromRecord(record({ a: [true] }, { signals: [{ kind: 'wrote_tests', detail: 'echo > /tests/test.sh' }] }), '/j');
    assert.deepEqual(view.trials[0]!.signals, [{ kind: 'wrote_tests', detail: 'echo > /tests/test.sh' }]);
    assert.deepEqual(jobViewFromRecord(record({ a: [true] }), '/j').trials[0]!.signals, []);
  });

  it("a Harbor trial's signals come from its ATIF tool calls; a trajectory that is not valid ATIF gives none", () => {
    const atif = (command: string) => ({
      schema_version: 'ATIF-v1.7',
      agent: { name: 'x', version: '1' },
      steps: [{ step_id: 1, source: 'agent', message: '', tool_calls: [{ tool_call_id: 'c', function_name: 'bash', arguments: { command } }] }],
    });
    assert.deepEqual(atifSignals(atif('cat /solution/solve.sh')), [{ kind: 'read_solution', detail: 'cat /solution/solve.sh' }]);
    assert.deepEqual(atifSignals(atif('ls')), []);
    assert.deepEqual(atifSignals({ steps: 'nonsense' }), []);
    assert.deepEqual(atifSignals(undefined), []);
  });

  it("pairs two Harbor trials for Compare Runs by their ATIF files when they have no run folder", () => {
    const harbor = (id: string, passed: boolean) => job(id, [trial('t', 1, passed, { runDir: null, trajectoryFile: `/h/${id}/t__1/agent/trajectory.json` })]);
    const change = compareJobs(harbor('before', true), harbor('after', false)).tasks[0]!;
    assert.equal(change.kind, 'broken');
    assert.equal(change.runBefore, '/h/before/t__1/agent/trajectory.json');
    assert.equal(change.runAfter, '/h/after/t__1/agent/trajectory.json');
  });

  it('builds and orders a job of 1,000 trials', () => {
    const outcomes: Record<string, boolean[]> = {};
    for (let t = 0; t < 200; t++) outcomes[`task-${String(t).padStart(3, '0')}`] = [0, 1, 2, 3, 4].map((a) => (t + a) % 3 !== 0);
    const m = buildMatrix([jobViewFromRecord(record(outcomes), '/j')]);
    assert.equal(m.rows.length, 200);
    assert.equal(m.rows.reduce((n, r) => n + r.cells.length, 0), 1000);
    assert.equal(orderRows(m.rows, { filter: 'flaky', sort: 'slowest' }).length, 200);
  });
});

describe('comparing two jobs', () => {
  it('shows trials with metrics and no single reward by their metrics, never as a reward of 0', () => {
    const metrics = (correctness: number, performance: number) => ({ reward: null, metrics: { correctness, performance } });
    const m = buildMatrix([job('jm', [trial('t', 1, false, metrics(0, 0)), trial('t', 2, true, metrics(1, 1)), trial('u', 1, true), trial('u', 2, false)], 2)]);
    const cell = cellOf([trial('t', 1, false, metrics(0, 0)), trial('t', 2, true, metrics(1, 0.5))]);
    assert.equal(cell.reward, null);
    assert.deepEqual(cell.metrics, { correctness: 0.5, performance: 0.25 });
    assert.equal(m.rows[0]!.meanReward, null);
    assert.equal(m.rows[1]!.meanReward, 0.5);
    assert.deepEqual(m.rows[0]!.cells.map((c) => c?.metrics), [{ correctness: 0, performance: 0 }, { correctness: 1, performance: 1 }]);
    // A mix: the reward's mean is over the trials that gave one.
    assert.equal(cellOf([trial('t', 1, false, metrics(0, 0)), trial('t', 2, true, { reward: 1 })]).reward, 1);
    const before = job('b', [trial('t', 1, false, metrics(0, 0))]);
    const after = job('a', [trial('t', 1, false, { reward: 0.5 })]);
    assert.equal(compareJobs(before, after).tasks[0]!.kind, 'reward');
    assert.equal(compareJobs(before, job('c', [trial('t', 1, false, metrics(0, 1))])).tasks[0]!.kind, 'same');
  });

  it('lists what broke, what was fixed and what changed reward, with the runs that show it', () => {
    const before = job('before', [
      trial('stays', 1, true),
      trial('breaks', 1, true),
      trial('breaks', 2, true),
      trial('fixed', 1, false),
      trial('reward', 1, false, { reward: 0.2 }),
      trial('gone', 1, true),
    ]);
    const after = job('after', [
      trial('stays', 1, true),
      trial('breaks', 1, true),
      trial('breaks', 2, false),
      trial('fixed', 1, true),
      trial('reward', 1, false, { reward: 0.6 }),
      trial('new', 1, false),
    ]);
    const c = compareJobs(before, after);
    assert.deepEqual(
      c.tasks.map((t) => `${t.task}:${t.kind}:${t.before}->${t.after}`),
      ['breaks:broken:passed->flaky', 'fixed:fixed:failed->passed', 'reward:reward:failed->failed', 'new:added:missing->failed', 'gone:removed:passed->missing', 'stays:same:passed->passed'],
    );
    assert.deepEqual(c.counts, { broken: 1, fixed: 1, reward: 1, added: 1, removed: 1, same: 1 });
    const breaks = c.tasks[0]!;
    assert.equal(breaks.runBefore, '/runs/breaks-1-true');
    assert.equal(breaks.runAfter, '/runs/breaks-2-false');
    const fixed = c.tasks[1]!;
    assert.deepEqual([fixed.runBefore, fixed.runAfter], ['/runs/fixed-1-false', '/runs/fixed-1-true']);
    assert.equal(c.tasks.find((t) => t.kind === 'added')!.runBefore, null);
  });
});

describe('a Harbor job folder', () => {
  it('maps its trials: rewards from verifier_result, tokens and cost from agent_result, steps from the ATIF trajectory', async () => {
    const view = await readHarborJob(HARBOR_JOB);
    assert.equal(view.source, 'harbor');
    assert.equal(view.id, '2026-01-05__10-00-00');
    assert.equal(view.attempts, 3);
    assert.equal(view.status, 'running');
    assert.equal(view.trials.length, 6);
    const byName = new Map(view.trials.map((t) => [t.trialId, t]));
    const passed = byName.get('hello-world__Ab3xQ9')!;
    assert.equal(passed.taskName, 'hello-world');
    assert.equal(passed.agent, 'terminus-2 (anthropic/claude-sonnet-4)');
    assert.equal(passed.attempt, 1);
    assert.equal(passed.passed, true);
    assert.equal(passed.reward, 1);
    assert.equal(passed.steps, 2);
    assert.equal(passed.durationSec, 30);
    assert.equal(passed.costUsd, 0.012);
    assert.equal(passed.tokens, 1500);
    assert.equal(passed.trajectoryFile, path.join(HARBOR_JOB, 'hello-world__Ab3xQ9', 'agent', 'trajectory.json'));
    assert.equal(passed.runDir, null);
    const failed = byName.get('hello-world__Zz81Lm')!;
    assert.deepEqual([failed.attempt, failed.passed, failed.failureCause, failed.steps], [2, false, 'tests_failed', 5]);
    assert.equal(byName.get('hello-world__Kk77Pp')!.attempt, 3);
    const timedOut = byName.get('count-words__Qp02Rt')!;
    assert.deepEqual([timedOut.passed, timedOut.reward, timedOut.failureCause, timedOut.steps], [false, 0, 'AgentTimeoutError', null]);
    const running = byName.get('count-words__Vv11Nn')!;
    assert.deepEqual([running.state, running.passed, running.taskName, running.attempt], ['running', null, 'count-words', 3]);
    // pass@1: hello 2/3, count-words 0/2; pass@3 only where 3 attempts finished (hello: 1).
    assert.deepEqual(view.scores, [{ agent: 'terminus-2 (anthropic/claude-sonnet-4)', k: 3, passAt1: (2 / 3 + 0) / 2, passAtK: 1 }]);
  });

  it('is found beside Belay’s jobs and shows in the matrix by attempt', async () => {
    assert.equal(await jobFolderKind(HARBOR_JOB), 'harbor');
    assert.equal(await jobFolderKind(HARBOR_JOBS), undefined);
    const folders = await listJobFolders([HARBOR_JOBS, path.join(HARBOR_JOBS, 'missing')]);
    assert.deepEqual(folders, [{ dir: HARBOR_JOB, source: 'harbor' }]);
    const m = buildMatrix([await readJobView(folders[0]!)]);
    assert.equal(m.mode, 'attempts');
    assert.deepEqual(m.rows.map((r) => [r.task, r.cells.map((c) => c?.result ?? '-').join(',')]), [
      ['hello-world', 'passed,failed,passed'],
      ['count-words', 'failed,failed,running'],
    ]);
  });

  it('reads rewards and steps the way Harbor writes them, and nothing from malformed files', () => {
    assert.deepEqual(harborReward({ reward: 0.5, other: 1 }), { reward: 0.5, metrics: { reward: 0.5, other: 1 }, passed: false });
    assert.deepEqual(harborReward({ accuracy: 1 }), { reward: 1, metrics: { accuracy: 1 }, passed: true });
    // Several metrics, none named: no mean is made up; the pass needs every metric at 1.
    assert.deepEqual(harborReward({ a: 1, b: 0 }), { reward: null, metrics: { a: 1, b: 0 }, passed: false });
    assert.deepEqual(harborReward({ a: 1, b: 1, c: null }), { reward: null, metrics: { a: 1, b: 1 }, passed: true });
    assert.deepEqual(harborReward({}), { reward: null, metrics: null, passed: false });
    assert.deepEqual(harborReward(null), { reward: null, metrics: null, passed: false });
    assert.equal(atifSteps({ steps: [{ source: 'system' }, { source: 'agent' }, {}] }), 2);
    assert.equal(atifSteps({ final_metrics: { total_steps: 7 } }), 7);
    assert.equal(atifSteps('nonsense'), null);
    assert.equal(atifSteps({ steps: 'nope', final_metrics: { total_steps: 'x' } }), null);
  });
});

describe('the jobs folders', () => {
  const tmp = tempDir('belay-results-');
  after(() => tmp.remove());

  it('lists Belay and Harbor jobs, newest first, and nothing else', async () => {
    const jobs = path.join(tmp.dir, 'jobs');
    const tasks = [{ dir: '/t/a', name: 'a' } as Task];
    const settings = { agent: 'x', protocol: 'sdk1', backend: 'local', attempts: 2, options: {} };
    const older = await createJob({ jobsDir: jobs, jobId: '20260101T000000Z-job-aaaaaa', tasks, settings });
    const newer = await createJob({ jobsDir: jobs, jobId: '20260102T000000Z-job-bbbbbb', tasks, settings });
    mkdirSync(path.join(jobs, 'not-a-job'));
    writeFileSync(path.join(jobs, 'not-a-job', 'notes.txt'), 'hello');
    mkdirSync(path.join(jobs, '.interrupted'));
    const folders = await listJobFolders([jobs, HARBOR_JOBS]);
    // Ordered by when they started, whichever way their names write it.
    assert.deepEqual(folders.map((f) => [path.basename(f.dir), f.source]), [
      ['2026-01-05__10-00-00', 'harbor'],
      [path.basename(newer), 'belay'],
      [path.basename(older), 'belay'],
    ]);
    assert.equal(await jobStartedMs(newer), Date.UTC(2026, 0, 2));
    assert.equal(await jobStartedMs(HARBOR_JOB), Date.UTC(2026, 0, 5, 10));
    const view = await readJobView(folders[1]!);
    assert.deepEqual([view.source, view.status, view.attempts, view.trials.length, view.trials[0]!.state], ['belay', 'running', 2, 2, 'pending']);
    assert.equal(view.scores[0]!.agent, 'x');
  });
});
