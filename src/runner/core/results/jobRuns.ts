// Runs of jobs beside single runs: every trial of a Belay job is a run folder inside the job's
// folder (`<jobs>/<job-id>/<run-id>/`), with the same result.json as a single run. Listed here with
// the job and attempt they belong to, so the Tasks view, the pickers and Compare Runs see them; and
// a task's latest outcome, whether it came from a single run or from a job (passed of attempts).
import * as path from 'node:path';
import { listRuns, type PastRun } from '../records/history.ts';
import { listJobFolders } from './discover.ts';
import { readJob } from '../jobs/schema.ts';

/** Which job (and which attempt of it) a run was a trial of. */
export interface JobOfRun {
  /** job.json's `job_id` (also the folder's name). */
  id: string;
  dir: string;
  /** 1-based attempt of the task in the job. */
  attempt: number;
  /** The attempts per task the job was made with. */
  attempts: number;
}

/** A finished run, and the job it was a trial of (none for a single run). */
export interface RunOrTrial extends PastRun {
  job?: JobOfRun;
}

/**
 * The finished trials of every Belay job under `jobsDirs` (Harbor's job folders are not Belay
 * runs and are left to the Results view), newest first. A run folder the job.json does not list
 * as a trial (one cut short and set aside on resume) is not a trial; unreadable jobs are skipped.
 */
export async function listJobRuns(jobsDirs: readonly string[]): Promise<RunOrTrial[]> {
  const folders = (await listJobFolders(jobsDirs)).filter((f) => f.source === 'belay');
  const runs: RunOrTrial[] = [];
  await Promise.all(
    folders.map(async (folder) => {
      const job = await readJob(folder.dir).catch(() => undefined);
      if (!job) return;
      const attemptOf = new Map(job.trials.filter((t) => t.run_id !== null).map((t) => [t.run_id!, t.attempt]));
      for (const run of await listRuns(folder.dir)) {
        const attempt = attemptOf.get(path.basename(run.result.run_dir));
        if (attempt === undefined) continue;
        runs.push({ ...run, job: { id: job.job_id, dir: folder.dir, attempt, attempts: job.settings.attempts } });
      }
    }),
  );
  return newestFirst(runs);
}

/** Runs newest first (by start, then by id), as listRuns orders them. */
export function newestFirst<R extends PastRun>(runs: R[]): R[] {
  return runs.sort((a, b) => b.result.started_at.localeCompare(a.result.started_at) || b.result.run_id.localeCompare(a.result.run_id));
}

/** How a task last went: its newest single run, or the job its newest run was a trial of. */
export type TaskOutcome =
  | { kind: 'none' }
  | { kind: 'run'; run: RunOrTrial }
  | {
      kind: 'job';
      job: JobOfRun;
      /** The task's finished trials in that job, and how many of them passed. */
      passed: number;
      finished: number;
      /** `passed` when every finished trial passed, `failed` when none did, else `mixed`. */
      verdict: 'passed' | 'failed' | 'mixed';
    };

/** The latest outcome among `runs` (one task's runs and trials). */
export function latestOutcome(runs: readonly RunOrTrial[]): TaskOutcome {
  const newest = newestFirst([...runs])[0];
  if (!newest) return { kind: 'none' };
  if (!newest.job) return { kind: 'run', run: newest };
  const job = newest.job;
  const trials = runs.filter((r) => r.job?.dir === job.dir);
  const passed = trials.filter((r) => r.result.passed).length;
  return { kind: 'job', job, passed, finished: trials.length, verdict: passed === trials.length ? 'passed' : passed === 0 ? 'failed' : 'mixed' };
}

/** "5/6 passed" for a job (passed of its finished attempts), "passed"/"failed: cause"/"stopped" for a run. */
export function outcomeWords(outcome: TaskOutcome): string {
  switch (outcome.kind) {
    case 'none':
      return '';
    case 'job':
      return `${outcome.passed}/${outcome.finished} passed`;
    case 'run': {
      const r = outcome.run.result;
      return r.passed ? 'passed' : r.failure_cause === 'aborted' ? 'stopped' : `failed: ${r.failure_cause ?? 'unknown'}`;
    }
  }
}

/** "attempt 2 of 6 in job 20261127T…": which trial a run was, for labels. */
export function trialWords(job: JobOfRun): string {
  return `attempt ${job.attempt} of ${job.attempts} in job ${job.id}`;
}
