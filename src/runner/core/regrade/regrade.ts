// Regrade (Harbor's `job regrade`): each finished trial of a job is graded again by its task's
// *current* verifier, on the final state its run kept (final/workdir), in a fresh environment.
// No agent starts, no key is read, no gateway opens. The new verification is written beside the
// old one (<run>/regrade/<stamp>/verification.json, with the tests' logs and output); result.json
// is never touched. A run recorded before final states were kept cannot be regraded, and says why.
// The job's report goes to <job>/regrade.json (regradeRecord.ts), replacing the previous one.
import { existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';
import { writeFileAtomic } from '../../../shared/atomic.ts';
import { errorMessage } from '../../../shared/errors.ts';
import type { Backend, BackendSession } from '../backends/backend.ts';
import { readJob } from '../jobs/schema.ts';
import { readResult, runFiles, type RunResult, type Verification } from '../records/records.ts';
import { FINAL_WORKDIR } from '../run/finalState.ts';
import { isRepoTask, repoFiles, RepoRun, type RepoTask } from '../run/repoGrade.ts';
import { DEFAULT_LIMITS } from '../protocols/agentProtocol.ts';
import { openVerifierEnvironment, removeVerifierEnvironment } from '../run/verifierEnvironment.ts';
import { removeVerifierLeftovers, verify } from '../run/verify.ts';
import { loadTask, stageTests } from '../tasks/task.ts';
import type { Resolver } from '../network/proxy.ts';
import { inVerifyPhase, NetworkRefused, openRunNetwork, withTaskEnv, type RunNetwork } from '../run/taskEnvironment.ts';
import { changeOf, JOB_REGRADE_FILE, REGRADE_DIR, REGRADE_FILE, regradeStamp, tally, tallyLine, type JobRegrade, type RegradeRecord } from './regradeRecord.ts';

export { REGRADE_DIR, REGRADE_FILE, RegradeRecordSchema, type RegradeRecord } from './regradeRecord.ts';

/** One trial's regrade: its grades before and after, or why it could not be regraded. */
export interface TrialRegrade {
  task_name: string;
  attempt: number;
  run_id: string;
  before: { reward: number | null; passed: boolean };
  after?: { reward: number | null; passed: boolean };
  /** Where the new verification is, relative to the job folder. */
  file?: string;
  /** Why it was not regraded (one line). */
  skipped?: string;
}

export interface RegradeReport {
  job_id: string;
  job_dir: string;
  regraded_at: string;
  trials: TrialRegrade[];
  changed: number;
  up: number;
  down: number;
  /** Means over the trials regraded (a trial with no single reward counts its pass as 1 or 0). */
  mean_before: number | null;
  mean_after: number | null;
}

export interface RegradeOptions {
  jobDir: string;
  backend: Backend;
  /** Host paths never shown to the verifier's environment beyond the task folders (the job's folder is always hidden). */
  hidden?: readonly string[];
  /** Told as each trial is regraded (one line each). */
  onTrial?: (trial: TrialRegrade) => void;
  onNotice?: (message: string) => void;
  signal?: AbortSignal;
  /** The person allows a task's `public` verifier network (belay.runner.allowPublicNetwork, --allow-public-network). */
  allowPublicNetwork?: boolean;
  /** Tests only: how the egress proxy finds the hosts a task names (local servers instead of DNS). */
  resolveNetwork?: Resolver;
}

export async function regradeJob(options: RegradeOptions): Promise<RegradeReport> {
  const jobDir = path.resolve(options.jobDir);
  const job = await readJob(jobDir);
  const now = new Date();
  const stamp = regradeStamp(now);
  const trials: TrialRegrade[] = [];
  for (const trial of job.trials) {
    if (options.signal?.aborted) break;
    if (trial.status !== 'finished' || trial.run_id === null) continue;
    const runDir = path.join(jobDir, trial.run_id);
    const before = { reward: trial.reward, passed: trial.passed === true };
    const base = { task_name: trial.task_name, attempt: trial.attempt, run_id: trial.run_id, before };
    let outcome: TrialRegrade;
    try {
      outcome = { ...base, ...(await regradeRun(runDir, stamp, jobDir, options)) };
    } catch (error) {
      outcome = { ...base, skipped: `regrade failed: ${errorMessage(error)}` };
    }
    trials.push(outcome);
    options.onTrial?.(outcome);
  }
  const { changed, up, down, mean_before, mean_after } = tally(trials);
  const report: RegradeReport = { job_id: job.job_id, job_dir: jobDir, regraded_at: now.toISOString(), trials, changed, up, down, mean_before, mean_after };
  // The job's latest regrade, beside job.json: the trials not regraded and why, and a change the Results view sees.
  const record: JobRegrade & Omit<RegradeReport, 'trials'> = { kind: 'belay.job-regrade', stamp, ...report };
  await writeFileAtomic(path.join(jobDir, JOB_REGRADE_FILE), JSON.stringify(record, null, 2) + '\n');
  return report;
}

/** Regrades one run folder; returns the new grade and its file, or why it cannot be regraded. */
async function regradeRun(runDir: string, stamp: string, jobDir: string, options: RegradeOptions): Promise<Pick<TrialRegrade, 'after' | 'file' | 'skipped'>> {
  let result: RunResult;
  try {
    result = await readResult(runDir);
  } catch (error) {
    return { skipped: `its result.json cannot be read (${errorMessage(error).split('\n')[0]})` };
  }
  let task;
  try {
    task = await loadTask(result.task_dir);
  } catch (error) {
    return { skipped: `its task cannot be loaded: ${errorMessage(error)}` };
  }
  const finalDir = path.join(runDir, ...FINAL_WORKDIR.split('/'));
  // A repository task grades the patch its run kept (final/patch.diff), any other the final working folder.
  if (isRepoTask(task) && !existsSync(repoFiles(runDir).patch)) return { skipped: 'its run kept no patch (final/patch.diff): nothing to grade without running the agent again' };
  if (!isRepoTask(task) && (!result.final || !existsSync(finalDir))) return { skipped: `recorded before Belay kept final states (no ${FINAL_WORKDIR} in its run folder): nothing to grade without running the agent again` };
  if (task.steps) return { skipped: 'a multi-step task: regrade grades single-step tasks only' };
  const regradeDir = path.join(runDir, REGRADE_DIR, stamp);
  // The verifier's network is the task's current [verifier] policy, as a run's verify phase has it;
  // its attempts go to the regrade's own network.jsonl, never the run's. `public` needs the person's say.
  const note = (message: string) => options.onNotice?.(message);
  let network: RunNetwork;
  try {
    network = await openRunNetwork({ task, runDir: regradeDir, allowPublic: options.allowPublicNetwork === true, isolated: options.backend.isolated, note, verifierOnly: { refused: 'this trial is not regraded' }, ...(options.resolveNetwork ? { resolve: options.resolveNetwork } : {}) });
  } catch (error) {
    if (error instanceof NetworkRefused) return { skipped: error.message };
    throw error;
  }
  await fs.mkdir(regradeDir, { recursive: true });
  if (isRepoTask(task)) return recordRegrade(result, regradeDir, jobDir, options, await regradePatch(task, result, regradeDir, jobDir, network, options));
  const files = runFiles(regradeDir);
  const envDir = path.join(regradeDir, 'env');
  let session: BackendSession | undefined;
  let verification: Verification;
  try {
    await stageTests(task, files.tests);
    await removeVerifierLeftovers(files.logs);
    session = await openVerifierEnvironment({
      backend: options.backend,
      task,
      runId: `${result.run_id}-regrade`,
      finalDir,
      envDir,
      tests: files.tests,
      logs: files.logs,
      hidden: [task.dir, jobDir, ...(options.hidden ?? [])],
      ...(options.onNotice ? { onNotice: options.onNotice } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    // The task's [environment.env] reaches the regrade's verifier too, under Belay's own variables.
    const open = withTaskEnv(session, task.env);
    verification = await inVerifyPhase(open, network, note, (env) => verify({ task, session: open, runDir: regradeDir, timeoutMs: task.testTimeoutSec * 1000, maxLogBytes: 16 * 1024 * 1024, env, ...(options.signal ? { signal: options.signal } : {}) }));
  } finally {
    await network.close().catch((error: unknown) => note(`the network proxy could not be closed: ${errorMessage(error)}`));
    await session?.close().catch((error: unknown) => options.onNotice?.(`the environment could not be closed: ${errorMessage(error)}`));
    await removeVerifierEnvironment(envDir);
    // The staged tests are the task's, not a record of the regrade.
    await fs.rm(files.tests, { recursive: true, force: true });
  }
  return recordRegrade(result, regradeDir, jobDir, options, verification);
}

/**
 * A repository task's recorded patch graded again as its run graded it (a clean checkout at the
 * base commit, the task's current tests laid over it, in a fresh environment, under the task's
 * verifier network), everything written in the regrade's folder; the checkout is not kept.
 */
async function regradePatch(task: RepoTask, result: RunResult, regradeDir: string, jobDir: string, network: RunNetwork, options: RegradeOptions): Promise<Verification> {
  const note = (message: string) => options.onNotice?.(message);
  try {
    const repo = await RepoRun.recorded(task, result.run_dir, regradeDir);
    return await repo.gradePatch({
      backend: options.backend,
      runId: `${result.run_id}-regrade`,
      hidden: [task.dir, jobDir, ...(options.hidden ?? [])],
      network,
      testTimeoutMs: task.testTimeoutSec * 1000,
      maxLogBytes: 16 * 1024 * 1024,
      diskBudgetBytes: DEFAULT_LIMITS.diskBudgetBytes,
      signal: options.signal ?? new AbortController().signal,
      note,
    });
  } finally {
    await network.close().catch((error: unknown) => note(`the network proxy could not be closed: ${errorMessage(error)}`));
    // The checkout and the staged tests are not records of the regrade; its logs and test output stay.
    const grade = repoFiles(regradeDir).grade;
    for (const folder of ['app', 'tests', 'scratch', 'control']) await fs.rm(path.join(grade, folder), { recursive: true, force: true });
  }
}

/** Writes the regrade's record beside the run's (<run>/regrade/<stamp>/verification.json). */
async function recordRegrade(result: RunResult, regradeDir: string, jobDir: string, options: RegradeOptions, verification: Verification): Promise<Pick<TrialRegrade, 'after' | 'file'>> {
  const after = { reward: verification.reward, passed: verification.success };
  const record: RegradeRecord = {
    kind: 'belay.regrade',
    regraded_at: new Date().toISOString(),
    run_id: result.run_id,
    task_name: result.task_name,
    task_dir: result.task_dir,
    backend: options.backend.name,
    before: { reward: result.reward, passed: result.passed },
    after,
    verification,
  };
  const file = path.join(regradeDir, REGRADE_FILE);
  await writeFileAtomic(file, JSON.stringify(record, null, 2) + '\n');
  return { after, file: path.relative(jobDir, file) };
}

/** A grade in words: "1.000", or "passed"/"failed" when there is no single reward. */
function gradeWords(grade: { reward: number | null; passed: boolean }): string {
  return grade.reward === null ? (grade.passed ? 'passed' : 'failed') : grade.reward.toFixed(3);
}

const CHANGE_WORDS = { up: ' (up)', down: ' (down)', same: ' (unchanged)' } as const;

/** One line per trial: what went up or down, or why it was not regraded. */
export function regradeLine(trial: TrialRegrade): string {
  const who = `${trial.task_name} (attempt ${trial.attempt})`;
  if (!trial.after) return `${who}: cannot be regraded: ${trial.skipped ?? 'unknown reason'}`;
  return `${who}: ${gradeWords(trial.before)} → ${gradeWords(trial.after)}${CHANGE_WORDS[changeOf(trial.before, trial.after)]}`;
}

/** Harbor's summary line: "1 changed (0 up, 1 down), mean 1.000 → 0.500". */
export function regradeSummary(report: RegradeReport): string {
  return tallyLine(tally(report.trials));
}
