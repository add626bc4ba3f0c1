// How run.ts runs a multi-step task: one part per step (its instruction, timeouts, records folder
// task-steps/<name>/), each an agent phase and a verify phase in a fresh session over the same run
// workspace; a step whose metrics miss its min_reward ends the run; the task's reward comes from
// the steps by the task's strategy (mean or final). A single-step task is one part, as before.
import { createHash } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';
import { runBounded } from '../../../shared/process.ts';
import { shellPath, type BackendSession } from '../backends/backend.ts';
import { RunFailure } from '../records/events.ts';
import type { AgentOutcome, RunLimits } from '../protocols/agentProtocol.ts';
import type { CapturedFiles, RunResult, TaskStepResult, TrajectoryEntry, Verification } from '../records/records.ts';
import { errorMessage } from '../../../shared/errors.ts';
import { copyTreeBounded, FINAL_WORKDIR } from './finalState.ts';
import type { Task } from '../tasks/task.ts';
import { combineMetrics, minRewardMiss, type TaskStep } from '../tasks/taskSteps.ts';
import { rewardWords } from '../records/format.ts';

/** Where a multi-step run keeps each step's agent logs, step outputs, test output and verifier files. */
export const TASK_STEPS_DIR = 'task-steps';

export interface RunPart {
  /** The task as this part's agent sees it (a step's instruction and timeouts). */
  task: Task;
  step: TaskStep | undefined;
  first: boolean;
  /** The folder the protocol writes its logs and step outputs into. */
  recordsDir: string;
  trajectory: TrajectoryEntry[];
  testOutputFile: string | undefined;
  agentTimeoutMs: number;
  testTimeoutMs: number;
}

export function runParts(task: Task, runDir: string, options: { limits: RunLimits; testTimeoutMs: number; agentTimeoutOverride: number | undefined }): RunPart[] {
  if (!task.steps) {
    return [{ task, step: undefined, first: true, recordsDir: runDir, trajectory: [], testOutputFile: undefined, agentTimeoutMs: options.limits.agentTimeoutMs, testTimeoutMs: options.testTimeoutMs }];
  }
  return task.steps.steps.map((step, i) => {
    const recordsDir = path.join(runDir, TASK_STEPS_DIR, step.name);
    return {
      task: { ...task, instruction: step.instruction, agentTimeoutSec: step.agentTimeoutSec, testTimeoutSec: step.testTimeoutSec, testScript: step.testScript },
      step,
      first: i === 0,
      recordsDir,
      trajectory: [],
      testOutputFile: path.join(recordsDir, 'verifier', 'test-output.log'),
      agentTimeoutMs: options.agentTimeoutOverride ?? step.agentTimeoutSec * 1000,
      testTimeoutMs: step.testTimeoutSec * 1000,
    };
  });
}

/** Copies a step's workdir/ into the run workspace (Harbor uploads it over the working directory). */
export async function mergeStepWorkdir(step: TaskStep, workspace: string): Promise<void> {
  if (!step.workdirDir) return;
  await fs.cp(step.workdirDir, workspace, { recursive: true, force: true, verbatimSymlinks: true });
}

/** Where a multi-step run keeps each step's final state: final/steps/<name>/workdir. */
export function stepFinalDir(step: Pick<TaskStep, 'name'>): string {
  return path.posix.join('final', 'steps', step.name, 'workdir');
}

/**
 * Keeps the final state just captured (final/workdir) as the step's own, which its verifier
 * grades when it runs in an environment of its own; what cannot be kept is a note.
 */
export async function keepStepState(runDir: string, step: TaskStep, final: CapturedFiles, note: (message: string) => void): Promise<CapturedFiles | undefined> {
  const dir = stepFinalDir(step);
  try {
    // Already bounded when it was captured: this copy only must not follow what it holds.
    await copyTreeBounded(path.join(runDir, ...FINAL_WORKDIR.split('/')), path.join(runDir, ...dir.split('/')), { maxBytes: Number.MAX_SAFE_INTEGER, maxEntries: Number.MAX_SAFE_INTEGER });
    return { ...final, dir };
  } catch (error) {
    note(`step '${step.name}': its final state could not be kept: ${errorMessage(error)}`);
    return undefined;
  }
}

/** Runs the step's setup.sh (merged into the workspace from its workdir/) before the agent; its failure is the step's. */
export async function stepSetup(step: TaskStep, session: BackendSession, timeoutMs: number, signal: AbortSignal): Promise<RunFailure | undefined> {
  if (!step.workdirDir || !existsSync(path.join(step.workdirDir, 'setup.sh'))) return undefined;
  const argv: [string, ...string[]] = [shellPath(), path.posix.join(session.workdir, 'setup.sh')];
  const result = await runBounded({ start: (output) => session.spawn({ argv, ...output }), timeoutMs, maxOutputChars: 2000, keepTailChars: 2000, signal });
  if (result.exitCode === 0 && !result.timedOut) return undefined;
  const why = result.spawnError ? `could not start (${result.spawnError.message})` : result.timedOut ? `did not finish within ${Math.round(timeoutMs / 1000)} s` : `exited with ${result.exitCode ?? result.signal}`;
  const tail = result.stderr.text('[… cut …]').trim().split('\n').slice(-1)[0] ?? '';
  return new RunFailure('setup_error', `step '${step.name}': workdir/setup.sh ${why}${tail ? `: ${tail.slice(0, 200)}` : ''}`);
}

interface StepEnd {
  outcome: AgentOutcome;
  failure: RunFailure | undefined;
  verification: Verification | null;
  /** The run's logs folder: the step's verifier files move from there into its records. */
  logsDir: string;
  /** The run's staged tests: emptied, so that no later agent phase finds this step's tests. */
  testsDir: string;
  /** The run was stopped from outside (the user, a bound). */
  stopped: boolean;
  /** The step's final state (final/steps/<name>/workdir), when it was kept. */
  final?: CapturedFiles;
}

interface Done {
  step: TaskStep;
  end: StepEnd;
  result: TaskStepResult;
}

/** The records of a multi-step run's steps as they end, and what they make of the run. */
export class StepRecords {
  readonly #task: Task;
  readonly #runDir: string;
  readonly #done: Done[] = [];
  #pending: { step: TaskStep; started: number } | undefined;
  #stopReason: string | undefined;

  constructor(task: Task, runDir: string) {
    this.#task = task;
    this.#runDir = runDir;
  }

  begin(step: TaskStep): void {
    this.#pending = { step, started: Date.now() };
  }

  /** The step's agent steps for the run's trajectory: marked with the task step, outputs relative to the run folder. */
  trajectory(step: TaskStep, entries: readonly TrajectoryEntry[]): TrajectoryEntry[] {
    const dir = path.posix.join(TASK_STEPS_DIR, step.name);
    return entries.map((entry) => ({ ...entry, output_file: entry.output_file === null ? null : path.posix.join(dir, entry.output_file), task_step: step.index }));
  }

  /**
   * Records the step; returns why the run stops here (true: stopped from outside, or the step's
   * setup failed; a string: its min_reward was missed), or false to go on.
   */
  async end(step: TaskStep, end: StepEnd): Promise<string | boolean> {
    const recordsDir = path.join(this.#runDir, TASK_STEPS_DIR, step.name);
    await archiveVerifierFiles(end.logsDir, path.join(recordsDir, 'logs'));
    await fs.rm(end.testsDir, { recursive: true, force: true });
    await fs.mkdir(end.testsDir, { recursive: true });
    const verification = end.verification;
    const metrics = verification?.metrics ?? {};
    const miss = verification ? minRewardMiss(step.minReward, { ...(verification.reward !== null ? { reward: verification.reward } : {}), ...metrics }) : undefined;
    const stop = miss ? `step '${step.name}': ${miss}: the remaining steps do not run` : undefined;
    let cause: TaskStepResult['failure_cause'] = end.failure?.failure ?? null;
    let error: string | null = end.failure?.message ?? null;
    if (!cause && verification && !verification.success) {
      cause = verification.timed_out ? 'test_timeout' : 'tests_failed';
      error = verification.error ?? `the tests gave ${rewardWords(verification.reward, verification.metrics)}`;
    }
    const started = this.#pending?.step === step ? this.#pending.started : Date.now();
    this.#pending = undefined;
    this.#done.push({
      step,
      end,
      result: {
        step: step.index,
        name: step.name,
        instruction_sha256: createHash('sha256').update(step.instruction).digest('hex'),
        reward: verification ? verification.reward : 0,
        metrics,
        passed: cause === null && verification !== null && verification.success,
        stopped: stop ?? null,
        agent_steps: end.outcome.steps,
        duration_sec: (Date.now() - started) / 1000,
        failure_cause: cause,
        error,
        dir: path.posix.join(TASK_STEPS_DIR, step.name),
        ...(end.final ? { final: end.final } : {}),
      },
    });
    if (stop) {
      this.#stopReason = stop;
      return stop;
    }
    // Without tests run there is nothing to go on from (Harbor stops on a step that failed unverified).
    return end.stopped || verification === null;
  }

  /** The step under way when the run ended by an error (a session that could not open, Belay's own failure). */
  abandon(failure: RunFailure): void {
    const pending = this.#pending;
    if (!pending) return;
    this.#pending = undefined;
    this.#done.push({
      step: pending.step,
      end: { outcome: { steps: 0, agentCompleted: false }, failure, verification: null, logsDir: '', testsDir: '', stopped: true },
      result: {
        step: pending.step.index,
        name: pending.step.name,
        instruction_sha256: createHash('sha256').update(pending.step.instruction).digest('hex'),
        reward: 0,
        metrics: {},
        passed: false,
        stopped: null,
        agent_steps: 0,
        duration_sec: (Date.now() - pending.started) / 1000,
        failure_cause: failure.failure,
        error: failure.message,
        dir: path.posix.join(TASK_STEPS_DIR, pending.step.name),
      },
    });
  }

  /** The run's outcome, failure and verification made from its steps. */
  combined(): { outcome: AgentOutcome; failure: RunFailure | undefined; verification: Verification | null } {
    const done = this.#done;
    const outcome: AgentOutcome = {
      steps: done.reduce((sum, d) => sum + d.end.outcome.steps, 0),
      agentCompleted: done.length > 0 && done.every((d) => d.end.outcome.agentCompleted),
    };
    const failure = done.find((d) => d.end.failure)?.end.failure;
    const verified = done.filter((d): d is Done & { end: { verification: Verification } } => d.end.verification !== null);
    if (verified.length === 0) return { outcome, failure, verification: null };
    const strategy = this.#task.steps?.strategy ?? 'mean';
    const rewards = verified.map((d) => d.end.verification.reward);
    // A step that gave no single reward (several metrics, none named) leaves none for the mean either.
    const reward = strategy === 'final' ? rewards[rewards.length - 1]! : rewards.some((r) => r === null) ? null : (rewards as number[]).reduce((a, b) => a + b, 0) / rewards.length;
    const allRan = done.length === (this.#task.steps?.steps.length ?? 0);
    const counted = strategy === 'final' ? verified.slice(-1) : verified;
    const shortfall = (v: Verification) => v.error ?? (v.success ? null : `the tests gave ${rewardWords(v.reward, v.metrics)}`);
    const errors = counted.flatMap((d) => {
      const why = shortfall(d.end.verification);
      return why ? [`step '${d.step.name}': ${why}`] : [];
    });
    if (this.#stopReason) errors.unshift(this.#stopReason);
    else if (!allRan) errors.unshift(`only ${done.length} of ${this.#task.steps?.steps.length} steps ran`);
    const last = verified[verified.length - 1]!.end.verification;
    return {
      outcome,
      failure,
      verification: {
        success: allRan && (reward === null || reward >= 1) && counted.every((d) => d.end.verification.success),
        reward,
        output: last.output,
        error: errors.length > 0 ? errors.join('; ') : null,
        timed_out: verified.some((d) => d.end.verification.timed_out),
        exit_code: last.exit_code,
        test_results: verified.flatMap((d) => d.end.verification.test_results.map((t) => ({ ...t, name: `${d.step.name}: ${t.name}` }))),
        metrics: combineMetrics(strategy, verified.map((d) => d.end.verification.metrics ?? {})),
      },
    };
  }

  /** The fields result.json gets for a multi-step task (none for a single-step one). */
  summary(): Pick<RunResult, 'task_steps' | 'task_steps_total' | 'reward_strategy'> {
    if (!this.#task.steps) return {};
    return { task_steps: this.#done.map((d) => d.result), task_steps_total: this.#task.steps.steps.length, reward_strategy: this.#task.steps.strategy };
  }
}

/** Moves what the step's tests wrote under logs/ into the step's records, so the next step starts from an empty logs folder. */
async function archiveVerifierFiles(logsDir: string, into: string): Promise<void> {
  let entries: string[];
  try {
    entries = await fs.readdir(logsDir);
  } catch {
    return;
  }
  await fs.mkdir(into, { recursive: true });
  for (const entry of entries) {
    // Should the move fail, the logs folder is emptied anyway: the next step's tests start from nothing.
    await fs.rename(path.join(logsDir, entry), path.join(into, entry)).catch(() => fs.rm(path.join(logsDir, entry), { recursive: true, force: true }));
  }
}
