// Jobs through `belay run --attempts` (real CLI processes, scripted SDK 1.x agents): pass@k as the
// estimator predicts, a killed job resumed to every trial run exactly once, the concurrency bound,
// attempts kept apart, tasks with one name kept apart, one-line usage errors.
import assert from 'node:assert/strict';
import { type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { localBackend } from '../../../src/runner/core/backends/local.ts';
import { createJob, runJob, type JobEvent } from '../../../src/runner/core/jobs/job.ts';
import { readJob, type JobRecord } from '../../../src/runner/core/jobs/schema.ts';
import { protocolNamed } from '../../../src/runner/core/protocols/index.ts';
import { runTask } from '../../../src/runner/core/run/run.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';
import { exactPassAtK } from '../../support/runner/jobs-helpers.ts';
import { progressWriter } from '../../../src/cli/runJob.ts';
import { agentFile, fastLimits, nodeDir, processesWith, repoRoot, tempDir } from '../../support/runner/helpers.ts';
import { runCli, type CliRun } from '../../support/cli-process.ts';
import { ensureBuilt } from '../../support/build.ts';

const tmp = tempDir('belay-jobs-');
const cli = path.join(repoRoot, 'dist', 'cli.js');
// A word of this test process in every agent's command line: the clean-up below ends this file's
// orphans only, never the agents of another Belay test running on the machine at the same time.
const agentToken = `jobs-test-${process.pid}`;
const agent = `'${process.execPath}' '${agentFile('flaky.mjs')}' ${agentToken}`;

before(() => {
  ensureBuilt();
});
after(() => {
  // Agents and commands orphaned by the killed CLI end on their own; none may outlive the tests.
  for (const line of processesWith(agentToken)) process.kill(Number(line.split(':')[0]), 'SIGKILL');
  tmp.remove();
});

/** A task whose flaky agent passes `passes` of its attempts (counted per `key`). */
function flakyTask(folder: string, key: string, passes: number, sleepMs = 0): string {
  return tmp.writeTask(folder, {
    'task.toml': 'version = "1.0"\n[verifier]\ntimeout_sec = 30.0\n[agent]\ntimeout_sec = 60.0\n',
    'instruction.md': `KEY=${key} PASSES=${passes} SLEEP=${sleepMs}\n`,
    'tests/test.sh': '#!/bin/sh\ngrep -q pass result.txt\n',
  });
}

interface Scratch {
  counters: string;
  log: string;
  env: string[];
}

function scratch(name: string): Scratch {
  const dir = path.join(tmp.dir, 'scratch', name);
  mkdirSync(path.join(dir, 'counters'), { recursive: true });
  const log = path.join(dir, 'agents.log');
  writeFileSync(log, '');
  return { counters: path.join(dir, 'counters'), log, env: ['--env', `BELAY_FLAKY_DIR=${path.join(dir, 'counters')}`, '--env', `BELAY_FLAKY_LOG=${log}`] };
}

interface AgentLine {
  kind: 'start' | 'end';
  key: string;
  ordinal: number;
  workdir: string;
  at: number;
}

function agentLines(log: string): AgentLine[] {
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [kind, key, ordinal, workdir, at] = line.split(' ');
      return { kind: kind as 'start' | 'end', key: key!, ordinal: Number(ordinal), workdir: workdir!, at: Number(at) };
    });
}

function belay(args: string[], onStderr?: (text: string, child: ChildProcess) => void): Promise<CliRun> {
  return runCli(cli, args, { cwd: repoRoot, ...(onStderr ? { onStderr } : {}) });
}

function onlyJob(out: string): string {
  const jobs = readdirSync(out);
  assert.equal(jobs.length, 1, `one job folder in ${out}: ${jobs.join(', ')}`);
  return path.join(out, jobs[0]!);
}

describe('belay run --attempts (a job)', () => {
  it('gives each task the pass@k the unbiased estimator predicts from its known pass count, tasks with one name apart', async () => {
    const attempts = 5;
    const s = scratch('passk');
    const tasks = { never: 0, twice: 2, always: 5 };
    const dirs = Object.entries(tasks).map(([key, passes]) => flakyTask(path.join('passk', key), key, passes));
    // Two tasks named `same`, in different folders, with different pass counts.
    dirs.push(flakyTask(path.join('passk-a', 'same'), 'same-a', 1), flakyTask(path.join('passk-b', 'same'), 'same-b', 4));
    const out = path.join(tmp.dir, 'out-passk');
    const { code, stdout, stderr } = await belay(['run', ...dirs, '--agent', agent, '--protocol', 'sdk1', '--backend', 'local', '--attempts', String(attempts), '--concurrency', '3', '--out', out, ...s.env]);
    assert.equal(code, 1, stderr); // some attempts fail
    const job = await readJob(onlyJob(out));
    assert.equal(job.status, 'finished');
    assert.equal(job.trials.length, dirs.length * attempts);
    assert.ok(job.trials.every((t) => t.status === 'finished'));
    const expected = new Map<string, number>([...Object.entries(tasks).map(([key, c]) => [path.join(tmp.dir, 'passk', key), c] as const), [dirs[3]!, 1], [dirs[4]!, 4]]);
    assert.equal(job.tasks.length, dirs.length);
    for (const summary of job.tasks) {
      const c = expected.get(summary.key)!;
      assert.equal(summary.attempts, attempts, summary.key);
      assert.equal(summary.passed, c, summary.key);
      for (let k = 1; k <= attempts; k++) assert.ok(Math.abs(summary.pass_at[String(k)]! - exactPassAtK(attempts, c, k)) < 1e-12, `${summary.key} pass@${k}`);
      assert.equal(summary.pass_at_1, summary.pass_at['1']);
      assert.equal(summary.pass_at_k, summary.pass_at[String(attempts)]);
    }
    // The job's pass@k is the mean over its tasks.
    for (let k = 1; k <= attempts; k++) {
      const mean = [...expected.values()].reduce((a, c) => a + exactPassAtK(attempts, c, k), 0) / expected.size;
      assert.ok(Math.abs(job.totals.pass_at[String(k)]! - mean) < 1e-12, `job pass@${k}`);
    }
    assert.equal(job.totals.passed, 0 + 2 + 5 + 1 + 4);
    // The table names the two `same` tasks by folder.
    assert.match(stdout, /^passk-a\/same\s+1\/5\s+0\.20\s/m);
    assert.match(stdout, /^passk-b\/same\s+4\/5\s+0\.80\s/m);
    // Every attempt had a workspace of its own.
    const starts = agentLines(s.log).filter((l) => l.kind === 'start');
    assert.equal(starts.length, dirs.length * attempts);
    assert.equal(new Set(starts.map((l) => l.workdir)).size, starts.length);
    for (const trial of job.trials) assert.ok(starts.some((l) => l.workdir === path.join(onlyJob(out), trial.run_id!, 'app')), trial.trial_id);
    // Never more than 3 agents at once.
    assert.ok(maxOverlap(agentLines(s.log)) <= 3);
    // Not a terminal: plain lines, one per finished trial, each followed by the counts.
    assert.doesNotMatch(stderr, /\r|\x1b/);
    const trialLines = stderr.split('\n').filter((l) => /^\[[\w/-]+ #\d\] (PASSED|FAILED)/.test(l));
    assert.equal(trialLines.length, dirs.length * attempts);
    assert.match(stderr, /^belay run: 25\/25 done \(12 passed, 13 failed\), 0 running$/m);
  });

  it('resumes a job killed mid-way (SIGKILL): every trial ends up run exactly once; a second process cannot run it meanwhile', async () => {
    const s = scratch('resume');
    // Each agent takes 3 s: the second process below has the resumed trials' time to start and
    // find the job taken, even on a machine loaded enough that a Node process takes seconds to start.
    const dirs = [flakyTask(path.join('resume', 'one'), 'one', 3, 3000), flakyTask(path.join('resume', 'two'), 'two', 1, 3000)];
    const out = path.join(tmp.dir, 'out-resume');
    const common = ['--concurrency', '2', ...s.env];
    const killed = await belay(['run', ...dirs, '--agent', agent, '--protocol', 'sdk1', '--backend', 'local', '--attempts', '3', '--out', out, ...common], (text, child) => {
      if (/\] (PASSED|FAILED)/.test(text) && child.exitCode === null && !child.killed) child.kill('SIGKILL');
    });
    assert.equal(killed.signal, 'SIGKILL');
    const jobDir = onlyJob(out);
    const before = await readJob(jobDir);
    assert.equal(before.status, 'running');
    assert.ok(before.trials.some((t) => t.status === 'finished'));
    assert.ok(before.trials.some((t) => t.status !== 'finished'));

    let second: Promise<Awaited<ReturnType<typeof belay>>> | undefined;
    const resumed = await belay(['run', '--resume', jobDir, ...common], (text) => {
      if (second === undefined && /resuming job/.test(text)) second = belay(['run', '--resume', jobDir]);
    });
    assert.equal(resumed.code, 1, resumed.stderr);
    const job = await readJob(jobDir);
    assert.equal(job.status, 'finished');
    assert.equal(job.trials.length, 6);
    assert.ok(job.trials.every((t) => t.status === 'finished' && t.run_id !== null && existsSync(path.join(jobDir, t.run_id, 'result.json'))));
    // Finished trials were kept as they were.
    for (const t of before.trials.filter((t) => t.status === 'finished')) assert.equal(job.trials.find((u) => u.trial_id === t.trial_id)!.run_id, t.run_id);

    const lines = agentLines(s.log);
    for (const trial of job.trials) {
      const workdir = path.join(jobDir, trial.run_id!, 'app');
      assert.equal(lines.filter((l) => l.kind === 'start' && l.workdir === workdir).length, 1, `${trial.trial_id} started once`);
      assert.equal(lines.filter((l) => l.kind === 'end' && l.workdir === workdir).length, 1, `${trial.trial_id} ended once`);
    }
    // Every other agent started belongs to a run cut short by the kill (moved to .interrupted/),
    // once at most: a run the kill caught before its agent started has no start line.
    const interrupted = job.trials.flatMap((t) => t.interrupted_runs);
    const finals = new Set(job.trials.map((t) => path.join(jobDir, t.run_id!, 'app')));
    const others = lines.filter((l) => l.kind === 'start' && !finals.has(l.workdir)).map((l) => l.workdir);
    assert.deepEqual(others.filter((w) => !interrupted.some((runId) => w === path.join(jobDir, runId, 'app'))), [], 'an agent started outside any trial');
    assert.equal(new Set(others).size, others.length, 'an interrupted run started its agent twice');
    for (const runId of interrupted) assert.ok(existsSync(path.join(jobDir, '.interrupted', runId)), runId);
    assert.deepEqual(readdirSync(jobDir).filter((f) => !f.startsWith('.') && f !== 'job.json').sort(), job.trials.map((t) => t.run_id!).sort());

    const other = await second!;
    assert.equal(other.code, 1);
    assert.match(other.stderr, /is being run by process \d+/);
    // Each trial's result is its own agent's (an interrupted attempt used up an ordinal of the counter).
    const passes: Record<string, number> = { one: 3, two: 1 };
    for (const trial of job.trials) {
      const start = lines.find((l) => l.kind === 'start' && l.workdir === path.join(jobDir, trial.run_id!, 'app'))!;
      assert.equal(trial.passed, start.ordinal <= passes[start.key]!, trial.trial_id);
    }
  });

  it('refuses bad flags in one line with exit code 2', async () => {
    const task = flakyTask(path.join('flags', 'x'), 'x', 1);
    const cases: [string[], RegExp][] = [
      [['run', task, '--agent', agent, '--protocol', 'sdk1', '--attempts', '0'], /--attempts needs a positive whole number, got '0'/],
      [['run', task, '--agent', agent, '--protocol', 'sdk1', '--attempts', '2.5'], /--attempts needs a positive whole number/],
      [['run', task, '--agent', agent, '--protocol', 'sdk1', '--attempts', '2', '--concurrency', 'many'], /--concurrency needs a positive whole number/],
      [['run', '--resume', path.join(tmp.dir, 'nowhere')], /--resume .*nowhere: no such folder/],
      [['run', '--resume', tmp.dir], /--resume: .* is not a job folder \(no job\.json\)/],
      [['run', '--resume', path.join(tmp.dir, 'nowhere'), task], /no TASK_DIR with --resume/],
      [['run', '--resume', path.join(tmp.dir, 'nowhere'), '--agent', 'x'], /--agent cannot be given with --resume/],
      [['run', '--resume', path.join(tmp.dir, 'nowhere'), '--attempts', '3'], /--attempts cannot be given with --resume/],
      [['run', '--resume'], /option '--resume' needs a value/],
    ];
    for (const [args, message] of cases) {
      const { code, stdout, stderr } = await belay(args);
      assert.equal(code, 2, args.join(' '));
      assert.equal(stdout, '');
      assert.equal(stderr.trimEnd().split('\n').length, 1, stderr);
      assert.match(stderr, message);
    }
  });
});

describe('the progress line', () => {
  it('is redrawn in place on a terminal, the finished trials printed above it', () => {
    let written = '';
    const stream = { isTTY: true, write: (chunk: string) => ((written += chunk), true) } as unknown as NodeJS.WritableStream;
    const progress = progressWriter(stream);
    const labels = new Map([['/t/a', 'a']]);
    const counts = { total: 2, done: 0, running: 1, passed: 0, failed: 0, pending: 1, etaMs: null };
    progress.event({ type: 'progress', progress: counts }, labels);
    progress.event({ type: 'progress', progress: { ...counts, done: 1, passed: 1, etaMs: 5000 } }, labels);
    const trial = { trial_id: 't1.a1', task_key: '/t/a', task_name: 'a', attempt: 1, status: 'finished', run_id: 'r', started_at: null, ended_at: null, passed: true, reward: 1, duration_sec: 1.25, steps: 3, failure_cause: null, llm: null, interrupted_runs: [] } as const;
    progress.event({ type: 'trial-ended', trial: { ...trial, interrupted_runs: [] }, result: { run_dir: '/runs/r', error: null } as never }, labels);
    progress.done();
    assert.equal(
      written,
      '\r\x1b[Kbelay run: 0/2 done (0 passed, 0 failed), 1 running, ETA …' +
        '\r\x1b[Kbelay run: 1/2 done (1 passed, 0 failed), 1 running, ETA 5s' +
        '\r\x1b[K[a #1] PASSED (reward 1, 3 steps, 1.3s) /runs/r\n' +
        '\r\x1b[Kbelay run: 1/2 done (1 passed, 0 failed), 1 running, ETA 5s' +
        '\r\x1b[K',
    );
  });
});

describe('runJob (the core the editor uses)', () => {
  it('runs N trials at a time and reports progress, trial by trial, as events', async () => {
    const s = scratch('events');
    const tasks = await Promise.all([flakyTask(path.join('events', 'p'), 'p', 2, 150), flakyTask(path.join('events', 'q'), 'q', 0, 150)].map((d) => loadTask(d)));
    const jobDir = await createJob({ jobsDir: path.join(tmp.dir, 'out-events'), tasks, settings: { agent: agent, protocol: 'sdk1', backend: 'local', attempts: 3, options: {} } });
    const events: JobEvent[] = [];
    const snapshots: JobRecord[] = [];
    const job = await runJob({
      jobDir,
      tasks,
      concurrency: 2,
      onEvent: (event) => {
        events.push(event);
        if (event.type === 'trial-ended') snapshots.push(JSON.parse(readFileSync(path.join(jobDir, 'job.json'), 'utf8')) as JobRecord);
      },
      runTrial: ({ task, runId, runsDir, signal, onEvent }) =>
        runTask({
          task,
          agentCommand: agent,
          agentCwd: repoRoot,
          agentFolders: [nodeDir],
          protocol: protocolNamed('sdk1'),
          backend: localBackend(),
          runsDir,
          runId,
          limits: fastLimits,
          env: { BELAY_FLAKY_DIR: s.counters, BELAY_FLAKY_LOG: s.log },
          onEvent,
          signal,
        }),
    });
    assert.equal(job.status, 'finished');
    const running = events.flatMap((e) => (e.type === 'progress' ? [e.progress.running] : []));
    assert.equal(Math.max(...running), 2);
    assert.ok(maxOverlap(agentLines(s.log)) <= 2);
    assert.equal(events.filter((e) => e.type === 'trial-started').length, 6);
    assert.equal(events.filter((e) => e.type === 'trial-ended').length, 6);
    assert.ok(events.some((e) => e.type === 'trial-event' && e.event.type === 'command'));
    assert.equal(events.at(-1)!.type, 'job-ended');
    const last = events.filter((e) => e.type === 'progress').at(-1)!;
    assert.deepEqual(last.type === 'progress' && { ...last.progress, etaMs: 0 }, { total: 6, done: 6, running: 0, passed: 2, failed: 4, pending: 0, etaMs: 0 });
    // job.json on disk when each trial is reported ended already holds it (writes that meet are
    // shared, so two trials ending together may show up in one write): never behind, never back.
    const counts = snapshots.map((j) => j.totals.attempts);
    counts.forEach((count, index) => assert.ok(count >= index + 1 && count <= 6, `snapshot ${index + 1} holds ${count} trials: ${counts.join(', ')}`));
    assert.deepEqual([...counts].sort((a, b) => a - b), counts, 'the finished count never goes back');
    assert.equal(counts.at(-1), 6);
    // Attempts of one task never share a run folder or a workspace.
    assert.equal(new Set(job.trials.map((t) => t.run_id)).size, 6);
  });
});

/** The most agents that were running at one time, from their start and end lines. */
function maxOverlap(lines: readonly AgentLine[]): number {
  const points = lines.map((l) => ({ at: l.at, delta: l.kind === 'start' ? 1 : -1 })).sort((a, b) => a.at - b.at || a.delta - b.delta);
  let now = 0;
  let most = 0;
  for (const p of points) most = Math.max(most, (now += p.delta));
  return most;
}
