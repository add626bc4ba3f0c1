// A job: every task run `attempts` times, `concurrency` trials at a time, each trial a run folder
// of its own inside the job folder (its own workspace, its own agent process and port; the
// container backend builds a task's image once for all its attempts). job.json is rewritten
// atomically whenever a trial starts or ends, and a lock file keeps a second process off a job
// being run. A job that was killed or stopped is resumed from its job.json: finished trials are
// kept, a trial that was running is run again (its partial folder moved to `.interrupted/`),
// unless its run had finished and only job.json missed it.
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { errorMessage } from '../../../shared/errors.ts';
import { processAlive, tryLock } from '../../../shared/pidLock.ts';
import type { RunEvent } from '../records/events.ts';
import { readResult, type RunResult } from '../records/records.ts';
import { newRunId } from '../run/run.ts';
import type { Task } from '../tasks/task.ts';
import { estimateEta, type JobProgress } from './progress.ts';
import {
  INTERRUPTED_DIR,
  JOB_LOCK_FILE,
  JOB_SCHEMA_VERSION,
  jobText,
  LlmUsageSchema,
  readJob,
  writeJob,
  type JobRecord,
  type JobSettings,
  type Trial,
} from './schema.ts';
import { summarizeJob } from './summary.ts';

/** How many times a trial runs again after its engine host stopped answering, before its failure stands. */
const HOST_LOST_RERUNS = 2;

export type JobEvent =
  | { type: 'job-started'; jobId: string; jobDir: string; total: number; alreadyDone: number; concurrency: number; resumed: boolean; rerun: readonly string[] }
  | { type: 'trial-started'; trial: Trial }
  /** One event of a trial's run, as runTask reports it. */
  | { type: 'trial-event'; trialId: string; event: RunEvent }
  | { type: 'trial-ended'; trial: Trial; result: RunResult }
  | { type: 'progress'; progress: JobProgress }
  | { type: 'job-ended'; job: JobRecord };
export type JobEventListener = (event: JobEvent) => void;

/** Runs one trial: a run of `task` into `runsDir/runId` (runTask with the job's agent, protocol and backend). */
export type TrialRunner = (trial: { task: Task; attempt: number; runId: string; runsDir: string; signal: AbortSignal; onEvent: (event: RunEvent) => void }) => Promise<RunResult>;

/** Another process runs this job. */
export class JobLockedError extends Error {
  override name = 'JobLockedError';
}

export function newJobId(now = new Date()): string {
  return `${now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}-job-${randomBytes(3).toString('hex')}`;
}

/** The default concurrency: the machine's cores. */
export function defaultConcurrency(): number {
  return Math.max(1, os.availableParallelism());
}

/** Makes the job folder and its job.json, every trial pending, attempt-major (every task's first attempt first). */
export async function createJob(options: { jobsDir: string; jobId?: string; settings: Omit<JobSettings, 'tasks'>; tasks: readonly Task[] }): Promise<string> {
  const jobId = options.jobId ?? newJobId();
  const jobDir = path.resolve(options.jobsDir, jobId);
  const keys = options.tasks.map((t) => path.resolve(t.dir));
  if (new Set(keys).size !== keys.length) throw new Error('a task folder is named twice');
  const settings: JobSettings = { ...options.settings, tasks: options.tasks.map((t, i) => ({ key: keys[i]!, name: t.name })) };
  const trials: Trial[] = [];
  for (let attempt = 1; attempt <= settings.attempts; attempt++) {
    settings.tasks.forEach((ref, index) => {
      trials.push({
        trial_id: `t${index + 1}.a${attempt}`,
        task_key: ref.key,
        task_name: ref.name,
        attempt,
        status: 'pending',
        run_id: null,
        started_at: null,
        ended_at: null,
        passed: null,
        reward: null,
        duration_sec: null,
        steps: null,
        failure_cause: null,
        llm: null,
        interrupted_runs: [],
      });
    });
  }
  await fs.mkdir(options.jobsDir, { recursive: true });
  await fs.mkdir(jobDir); // fails if the job exists: a job is never overwritten
  const now = new Date().toISOString();
  await writeJob(jobDir, { kind: 'belay.job', version: JOB_SCHEMA_VERSION, job_id: jobId, created_at: now, updated_at: now, ended_at: null, status: 'running', settings, ...summarizeJob(settings, trials), trials });
  return jobDir;
}

export interface RunJobOptions {
  jobDir: string;
  /** The job's tasks, loaded by the caller (matched to job.json's by folder). */
  tasks: readonly Task[];
  concurrency: number;
  runTrial: TrialRunner;
  onEvent?: JobEventListener;
  /** Stops the job: running trials are stopped and left to be run again on resume. */
  signal?: AbortSignal;
}

/** The live process that runs the job now, if any: a job.json saying `running` without one was killed (resume it). */
export async function jobHolder(jobDir: string): Promise<number | undefined> {
  const pid = Number((await fs.readFile(path.join(jobDir, JOB_LOCK_FILE), 'utf8').catch(() => '')).trim());
  return processAlive(pid) ? pid : undefined;
}

/** Runs (or resumes) the job in `jobDir` until every trial finished or it is stopped; returns the final record. */
export async function runJob(options: RunJobOptions): Promise<JobRecord> {
  const jobDir = path.resolve(options.jobDir);
  const lock = await tryLock(path.join(jobDir, JOB_LOCK_FILE));
  if (!('release' in lock)) throw new JobLockedError(`the job ${path.basename(jobDir)} is being run by process ${lock.heldBy}`);
  try {
    return await new JobRun(jobDir, await readJob(jobDir), options).run();
  } finally {
    await lock.release();
  }
}

class JobRun {
  private readonly tasks = new Map<string, Task>();
  private writing: Promise<void> | undefined;
  private dirty = false;
  private running = 0;
  private readonly started = Date.now();
  private finishedHere = 0;
  /** Aborted when the caller stops the job, or when job.json can no longer be written. */
  private readonly stop = new AbortController();

  private readonly jobDir: string;
  private readonly job: JobRecord;
  private readonly options: RunJobOptions;

  constructor(jobDir: string, job: JobRecord, options: RunJobOptions) {
    this.jobDir = jobDir;
    this.job = job;
    this.options = options;
    for (const task of options.tasks) this.tasks.set(path.resolve(task.dir), task);
    const missing = job.settings.tasks.filter((ref) => !this.tasks.has(ref.key) && job.trials.some((t) => t.task_key === ref.key && t.status !== 'finished'));
    if (missing.length > 0) throw new Error(`the job's task ${missing[0]!.key} was not given (or could not be loaded)`);
  }

  private emit(event: JobEvent): void {
    try {
      this.options.onEvent?.(event);
    } catch {
      // A listener's mistake must not end the job.
    }
  }

  /**
   * Writes job.json (the summary recomputed) and resolves once a write begun after this call is
   * done. Calls that come while a write is under way share the next one: a job of a thousand
   * trials is not serialized two thousand times.
   */
  private save(): Promise<void> {
    this.job.updated_at = new Date().toISOString();
    this.dirty = true;
    this.writing ??= (async () => {
      try {
        while (this.dirty) {
          this.dirty = false;
          Object.assign(this.job, summarizeJob(this.job.settings, this.job.trials));
          await writeJob(this.jobDir, jobText(this.job));
        }
      } finally {
        this.writing = undefined;
      }
    })();
    return this.writing;
  }

  progress(): JobProgress {
    const finished = this.job.trials.filter((t) => t.status === 'finished');
    const pending = this.job.trials.filter((t) => t.status === 'pending').length;
    const passed = finished.filter((t) => t.passed).length;
    return {
      total: this.job.trials.length,
      done: finished.length,
      running: this.running,
      passed,
      failed: finished.length - passed,
      pending,
      etaMs: estimateEta({ elapsedMs: Date.now() - this.started, finishedHere: this.finishedHere, remaining: pending + this.running }),
    };
  }

  async run(): Promise<JobRecord> {
    const resumed = this.job.trials.some((t) => t.status !== 'pending');
    const rerun = await this.recoverInterrupted();
    this.job.status = 'running';
    this.job.ended_at = null;
    await this.save();
    const queue = this.job.trials.filter((t) => t.status === 'pending');
    const concurrency = Math.max(1, Math.min(this.options.concurrency, queue.length || 1));
    const alreadyDone = this.job.trials.length - queue.length;
    this.emit({ type: 'job-started', jobId: this.job.job_id, jobDir: this.jobDir, total: this.job.trials.length, alreadyDone, concurrency, resumed, rerun });
    this.emit({ type: 'progress', progress: this.progress() });
    const signal = this.stop.signal;
    let next = 0;
    let fatal: unknown;
    const worker = async () => {
      try {
        while (next < queue.length && !signal.aborted) {
          const trial = queue[next++]!;
          // A trial whose engine host stopped answering runs again (elsewhere, while another answers).
          if (await this.runTrial(trial)) queue.push(trial);
        }
      } catch (error) {
        // job.json cannot be written: nothing more can be recorded, so the other trials stop too.
        fatal ??= error;
        this.stop.abort();
      }
    };
    const forward = () => this.stop.abort();
    this.options.signal?.addEventListener('abort', forward, { once: true });
    if (this.options.signal?.aborted) this.stop.abort();
    try {
      await Promise.all(Array.from({ length: concurrency }, worker));
    } finally {
      this.options.signal?.removeEventListener('abort', forward);
    }
    if (fatal !== undefined) throw fatal;
    const complete = this.job.trials.every((t) => t.status === 'finished');
    this.job.status = complete ? 'finished' : 'stopped';
    this.job.ended_at = new Date().toISOString();
    await this.save();
    this.emit({ type: 'job-ended', job: this.job });
    return this.job;
  }

  /**
   * Trials left `running` by a killed job: adopted when their run wrote a whole result (only
   * job.json missed it), otherwise their folder is moved aside and they run again.
   */
  private async recoverInterrupted(): Promise<string[]> {
    const rerun: string[] = [];
    for (const trial of this.job.trials) {
      if (trial.status !== 'running' || trial.run_id === null) {
        if (trial.status === 'running') trial.status = 'pending';
        continue;
      }
      const result = await readResult(path.join(this.jobDir, trial.run_id)).catch(() => undefined);
      if (result && result.failure_cause !== 'aborted') {
        this.finish(trial, result);
        continue;
      }
      await this.setAside(trial);
      rerun.push(trial.trial_id);
    }
    return rerun;
  }

  /** Moves a cut-short run folder to `.interrupted/` and makes the trial pending again. */
  private async setAside(trial: Trial): Promise<void> {
    if (trial.run_id !== null) {
      const from = path.join(this.jobDir, trial.run_id);
      const to = path.join(this.jobDir, INTERRUPTED_DIR, trial.run_id);
      await fs.mkdir(path.dirname(to), { recursive: true });
      // A trial the kill caught before its run folder was made has nothing to set aside.
      const moved = await fs.rename(from, to).then(
        () => true,
        (error: NodeJS.ErrnoException) => {
          if (error.code !== 'ENOENT') throw error;
          return false;
        },
      );
      if (moved) trial.interrupted_runs.push(trial.run_id);
    }
    Object.assign(trial, { status: 'pending', run_id: null, started_at: null, ended_at: null });
  }

  private finish(trial: Trial, result: RunResult): void {
    const llm = LlmUsageSchema.safeParse((result as { llm?: unknown }).llm);
    Object.assign(trial, {
      status: 'finished',
      ended_at: result.ended_at,
      passed: result.passed,
      reward: result.reward,
      metrics: result.metrics ?? null,
      duration_sec: result.duration_sec,
      steps: result.steps,
      failure_cause: result.failure_cause,
      llm: llm.success ? llm.data : null,
      ...(result.host !== undefined ? { host: result.host } : {}),
      ...(result.signals !== undefined ? { signals: result.signals } : {}),
    } satisfies Partial<Trial>);
  }

  /** Runs one trial; true when it is to run again (its host was lost and it has reruns left). */
  private async runTrial(trial: Trial): Promise<boolean> {
    const task = this.tasks.get(trial.task_key)!;
    const signal = this.stop.signal;
    const runId = newRunId(`${task.name}.a${trial.attempt}`);
    Object.assign(trial, { status: 'running', run_id: runId, started_at: new Date().toISOString() });
    this.running++;
    // Recorded before the run starts: a kill from here on leaves a folder that resume knows about.
    await this.save();
    this.emit({ type: 'trial-started', trial: structuredClone(trial) });
    this.emit({ type: 'progress', progress: this.progress() });
    let result: RunResult | undefined;
    try {
      result = await this.options.runTrial({
        task,
        attempt: trial.attempt,
        runId,
        runsDir: this.jobDir,
        signal,
        onEvent: (event) => this.emit({ type: 'trial-event', trialId: trial.trial_id, event }),
      });
    } catch (error) {
      // runTask records its own failures; a throw is the runner's fault and the trial is run again on resume.
      this.emit({ type: 'trial-event', trialId: trial.trial_id, event: { type: 'notice', message: `the trial could not run: ${errorMessage(error)}` } });
    }
    this.running--;
    if (result && result.failure_cause === 'host_lost' && !signal.aborted && trial.interrupted_runs.length < HOST_LOST_RERUNS) {
      this.emit({ type: 'trial-event', trialId: trial.trial_id, event: { type: 'notice', message: `${result.error ?? 'the engine host stopped answering'}: the trial runs again (its run is kept in ${INTERRUPTED_DIR}/)` } });
      await this.setAside(trial);
      await this.save();
      this.emit({ type: 'progress', progress: this.progress() });
      return true;
    }
    if (result && !(signal.aborted && result.failure_cause === 'aborted')) {
      this.finish(trial, result);
      this.finishedHere++;
    } else {
      await this.setAside(trial);
    }
    await this.save();
    // The counts first, so that whoever prints the trial's line can print them after it.
    this.emit({ type: 'progress', progress: this.progress() });
    if (result && trial.status === 'finished') this.emit({ type: 'trial-ended', trial: structuredClone(trial), result });
    return false;
  }
}
