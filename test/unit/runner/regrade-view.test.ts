// The Results view's regrade, its pure part: a job's latest regrade read from its run folders and
// its report, per trial the change (up, down, the same, not regraded and why), Harbor's summary
// line, the cells that show it, and broken or hostile regrade files each giving one line.
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { changeOf, regradeStamp, stampTime, tally, tallyLine, type JobRegrade, type RegradeRecord } from '../../../src/runner/core/regrade/regradeRecord.ts';
import { MAX_REGRADE_FILE_BYTES, readLatestRegrade, withRegrade, type RegradeFileCache } from '../../../src/runner/core/results/latestRegrade.ts';
import { buildMatrix } from '../../../src/runner/core/results/matrix.ts';
import type { JobView, TrialView } from '../../../src/runner/core/results/model.ts';
import { tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-regrade-view-');
after(() => tmp.remove());
let jobs = 0;

const OLD = '20260105T100000.000Z';
const NEW = '20260106T113000.250Z';

/** A Belay job's view of `tasks` (task → each attempt's reward), its run folders made. */
function job(tasks: Record<string, number[]>): JobView {
  const dir = path.join(tmp.dir, `job-${++jobs}`);
  const trials: TrialView[] = [];
  for (const [task, rewards] of Object.entries(tasks)) {
    rewards.forEach((reward, i) => {
      const runDir = path.join(dir, `run-${task}-${i + 1}`);
      mkdirSync(runDir, { recursive: true });
      trials.push({
        trialId: `${task}.${i + 1}`,
        taskKey: `/tasks/${task}`,
        taskName: task,
        attempt: i + 1,
        agent: 'demo',
        state: 'finished',
        passed: reward === 1,
        reward,
        metrics: null,
        steps: 2,
        durationSec: 1,
        costUsd: null,
        tokens: null,
        failureCause: reward === 1 ? null : 'tests_failed',
        host: null,
        runDir,
        trajectoryFile: null,
        signals: [],
      });
    });
  }
  const attempts = Math.max(...Object.values(tasks).map((r) => r.length));
  return { id: path.basename(dir), dir, source: 'belay', label: path.basename(dir), status: 'finished', createdAt: '', attempts, scores: [], trials };
}

function trialOf(view: JobView, id: string): TrialView & { runDir: string } {
  return view.trials.find((t) => t.trialId === id)! as TrialView & { runDir: string };
}

/** Writes a trial's regrade record of `stamp`: its recorded reward, then `after`. */
function regraded(view: JobView, id: string, stamp: string, after: number | null, passed = after === 1, more: Partial<RegradeRecord> = {}): string {
  const trial = trialOf(view, id);
  const dir = path.join(trial.runDir, 'regrade', stamp);
  mkdirSync(dir, { recursive: true });
  const record: RegradeRecord = {
    kind: 'belay.regrade',
    regraded_at: stampTime(stamp)!,
    run_id: path.basename(trial.runDir),
    task_name: trial.taskName,
    task_dir: `/tasks/${trial.taskName}`,
    backend: 'local',
    before: { reward: trial.reward, passed: trial.passed === true },
    after: { reward: after, passed },
    verification: { success: passed, reward: after, output: '', error: null, timed_out: false, exit_code: passed ? 0 : 1, test_results: [] },
    ...more,
  };
  const file = path.join(dir, 'verification.json');
  writeFileSync(file, JSON.stringify(record));
  return file;
}

function report(view: JobView, stamp: string, trials: JobRegrade['trials'], at = stampTime(stamp)!): void {
  const value: JobRegrade = { kind: 'belay.job-regrade', stamp, regraded_at: at, trials };
  writeFileSync(path.join(view.dir, 'regrade.json'), JSON.stringify(value));
}

describe('a regrade’s counts', () => {
  it('counts up and down by score (the reward, or the pass where there is none) and says Harbor’s line', () => {
    assert.equal(changeOf({ reward: 1, passed: true }, { reward: 0, passed: false }), 'down');
    assert.equal(changeOf({ reward: null, passed: false }, { reward: null, passed: true }), 'up');
    assert.equal(changeOf({ reward: 0.5, passed: false }, { reward: 0.5, passed: false }), 'same');
    const counts = tally([
      { before: { reward: 1, passed: true }, after: { reward: 0, passed: false } },
      { before: { reward: 1, passed: true }, after: { reward: 0, passed: false } },
      { before: { reward: 0, passed: false } },
    ]);
    assert.deepEqual(counts, { changed: 2, up: 0, down: 2, mean_before: 1, mean_after: 0, skipped: 1 });
    assert.equal(tallyLine(counts), '2 changed (0 up, 2 down), mean 1.000 → 0.000; 1 not regraded');
    assert.equal(tallyLine(tally([])), '0 changed (0 up, 0 down), mean - → -');
  });

  it('names a regrade by its time, and reads a name back as a time only when it is one', () => {
    const at = new Date('2026-01-06T11:30:00.250Z');
    assert.equal(regradeStamp(at), NEW);
    assert.equal(stampTime(NEW), at.toISOString());
    for (const bad of ['..', 'latest', '20260106T113000.250Z/../x', '20261399T999999Z']) assert.equal(stampTime(bad), null, bad);
  });
});

describe('the latest regrade of a job', () => {
  it('is null for a job never regraded', async () => {
    assert.equal(await readLatestRegrade(job({ a: [1] })), null);
  });

  it('takes the newest regrade of any trial: per trial the recorded grade and the new one, and the summary over them', async () => {
    const view = job({ 'build-index': [1, 1], 'parse-logs': [0] });
    // An older regrade said otherwise: only the newest counts.
    regraded(view, 'build-index.1', OLD, 1);
    regraded(view, 'build-index.1', NEW, 0);
    regraded(view, 'build-index.2', NEW, 0);
    regraded(view, 'parse-logs.1', OLD, 1);
    const latest = (await readLatestRegrade(view))!;
    assert.equal(latest.stamp, NEW);
    assert.equal(latest.regradedAt, '2026-01-06T11:30:00.250Z');
    assert.deepEqual(latest.problems, []);
    assert.equal(latest.summary, '2 changed (0 up, 2 down), mean 1.000 → 0.000');
    assert.deepEqual(latest.trials.get('build-index.1'), { change: 'down', before: { reward: 1, passed: true }, after: { reward: 0, passed: false }, reason: null });
    // parse-logs was not in the newest regrade: no mark.
    assert.equal(latest.trials.has('parse-logs.1'), false);
    // The cells of one trial show it; the recorded reward stays the cell's own.
    const matrix = buildMatrix([withRegrade(view, latest)]);
    const build = matrix.rows.find((r) => r.task === 'build-index')!;
    assert.deepEqual(build.cells.map((c) => [c?.reward, c?.regrade?.change, c?.regrade?.after?.reward]), [
      [1, 'down', 0],
      [1, 'down', 0],
    ]);
    assert.equal(matrix.rows.find((r) => r.task === 'parse-logs')!.cells[0]!.regrade, null);
    // Without it, the recorded results alone.
    assert.equal(buildMatrix([view]).rows[0]!.cells[0]!.regrade, null);
  });

  it('marks an up and an unchanged trial, and a trial the job’s report says it could not regrade, with its reason', async () => {
    const view = job({ up: [0], same: [1], old: [1] });
    regraded(view, 'up.1', NEW, 1);
    regraded(view, 'same.1', NEW, 1);
    const old = trialOf(view, 'old.1');
    report(view, NEW, [
      { task_name: 'up', attempt: 1, run_id: path.basename(trialOf(view, 'up.1').runDir), before: { reward: 0, passed: false }, after: { reward: 1, passed: true } },
      { task_name: 'old', attempt: 1, run_id: path.basename(old.runDir), before: { reward: 1, passed: true }, skipped: 'recorded before Belay kept final states\nsecond line' },
    ], '2026-01-06T11:31:02.000Z');
    const latest = (await readLatestRegrade(view))!;
    assert.equal(latest.trials.get('up.1')!.change, 'up');
    assert.equal(latest.trials.get('same.1')!.change, 'same');
    assert.deepEqual(latest.trials.get('old.1'), { change: 'skipped', before: { reward: 1, passed: true }, after: null, reason: 'recorded before Belay kept final states' });
    assert.equal(latest.summary, '1 changed (1 up, 0 down), mean 0.500 → 1.000; 1 not regraded');
    // The report's own time is the regrade's.
    assert.equal(latest.regradedAt, '2026-01-06T11:31:02.000Z');
  });

  it('a regrade that could regrade nothing is still the latest, said by the job’s report alone', async () => {
    const view = job({ old: [1, 0] });
    regraded(view, 'old.1', OLD, 0);
    report(view, NEW, view.trials.map((t) => ({ task_name: t.taskName, attempt: t.attempt, run_id: path.basename(t.runDir!), before: { reward: t.reward, passed: t.passed === true }, skipped: 'no final state' })));
    const latest = (await readLatestRegrade(view))!;
    assert.equal(latest.stamp, NEW);
    assert.equal(latest.summary, '0 changed (0 up, 0 down), mean - → -; 2 not regraded');
    assert.deepEqual([...latest.trials.values()].map((m) => m.change), ['skipped', 'skipped']);
  });

  it('gives one line for each broken or hostile file, and never a grade from it', async () => {
    const view = job({ link: [1], json: [1], shape: [1], other: [1], folder: [1], good: [1] });
    // A link to a file elsewhere, never followed.
    const link = trialOf(view, 'link.1');
    mkdirSync(path.join(link.runDir, 'regrade', NEW), { recursive: true });
    symlinkSync('/etc/passwd', path.join(link.runDir, 'regrade', NEW, 'verification.json'));
    writeFileSync(regraded(view, 'json.1', NEW, 0), '{"kind": "belay.regrade", ');
    writeFileSync(regraded(view, 'shape.1', NEW, 0), JSON.stringify({ kind: 'belay.regrade', run_id: 'x', before: '<img src=x onerror=alert(1)>' }));
    regraded(view, 'other.1', NEW, 0, false, { run_id: 'run-good-1' });
    // The regrade folder itself a link: nothing under it is read.
    const folder = trialOf(view, 'folder.1');
    mkdirSync(path.join(tmp.dir, 'elsewhere', NEW), { recursive: true });
    symlinkSync(path.join(tmp.dir, 'elsewhere'), path.join(folder.runDir, 'regrade'));
    // A folder whose name is not a time is not a regrade.
    mkdirSync(path.join(trialOf(view, 'good.1').runDir, 'regrade', '99999999T999999Z-not'), { recursive: true });
    regraded(view, 'good.1', NEW, 0);
    const latest = (await readLatestRegrade(view))!;
    assert.equal(latest.stamp, NEW);
    assert.deepEqual([...latest.trials.keys()], ['good.1']);
    assert.equal(latest.summary, '1 changed (0 up, 1 down), mean 1.000 → 0.000');
    assert.equal(latest.problems.length, 5);
    const all = latest.problems.join('\n');
    assert.ok(!all.includes('root:'), 'the linked file is never read');
    for (const line of latest.problems) assert.ok(!line.includes('\n'), line);
    assert.match(all, /^link \(attempt 1\): regrade\/20260106T113000\.250Z\/verification\.json is not a plain file \(a link\): not read$/m);
    assert.match(all, /^json \(attempt 1\): regrade\/20260106T113000\.250Z\/verification\.json is not JSON: not read$/m);
    assert.match(all, /^shape \(attempt 1\): regrade\/20260106T113000\.250Z\/verification\.json is not a regrade record at /m);
    assert.match(all, /^other \(attempt 1\): regrade\/20260106T113000\.250Z\/verification\.json is the record of another run: not read$/m);
    assert.match(all, /^folder \(attempt 1\): its regrade folder is not a folder \(a link\): not read$/m);
  });

  it('does not read a huge record, and lists five problems then counts the rest', async () => {
    const view = job({ t: [1, 1, 1, 1, 1, 1, 1] });
    for (const trial of view.trials) truncateSync(regraded(view, trial.trialId, NEW, 0), MAX_REGRADE_FILE_BYTES + 1);
    const latest = (await readLatestRegrade(view))!;
    assert.equal(latest.trials.size, 0);
    assert.equal(latest.summary, '0 changed (0 up, 0 down), mean - → -');
    assert.deepEqual(latest.problems, [
      ...[1, 2, 3, 4, 5].map((n) => `t (attempt ${n}): regrade/${NEW}/verification.json is larger than 32 MB: not read`),
      'and 2 more',
    ]);
  });

  it('says in one line that the job’s report cannot be read, and still shows the runs’ records', async () => {
    const view = job({ a: [1] });
    regraded(view, 'a.1', NEW, 0);
    writeFileSync(path.join(view.dir, 'regrade.json'), JSON.stringify({ kind: 'belay.job-regrade', stamp: '../../etc', regraded_at: 'x', trials: [] }));
    const latest = (await readLatestRegrade(view))!;
    assert.equal(latest.trials.get('a.1')!.change, 'down');
    assert.equal(latest.problems.length, 1);
    assert.match(latest.problems[0]!, /^the job's regrade\.json is not a regrade record at stamp: /);
    // Only problems, no regrade: still said.
    const broken = job({ b: [1] });
    writeFileSync(path.join(broken.dir, 'regrade.json'), 'not json');
    const only = (await readLatestRegrade(broken))!;
    assert.equal(only.stamp, null);
    assert.deepEqual(only.problems, ["the job's regrade.json is not JSON: not read"]);
  });

  it('reads a record again only when it changed', async () => {
    const view = job({ a: [1] });
    const file = regraded(view, 'a.1', NEW, 0);
    const cache: RegradeFileCache = new Map();
    assert.equal((await readLatestRegrade(view, cache))!.trials.get('a.1')!.change, 'down');
    assert.equal(cache.size, 1);
    regraded(view, 'a.1', NEW, 1, true, { regraded_at: '2026-01-06T11:30:00.250Z ' });
    assert.ok(cache.has(file));
    assert.equal((await readLatestRegrade(view, cache))!.trials.get('a.1')!.change, 'same');
  });
});
