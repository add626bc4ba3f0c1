// One run of one agent on one task: a fresh run folder seeded from the task's environment,
// the agent through its protocol, the tests, and the records; reported as an event stream.
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { errorMessage } from '../../shared/errors.ts';
import type { Backend, BackendSession } from './backend.ts';
import { RunFailure, type RunEvent, type RunEventListener } from './events.ts';
import { DEFAULT_LIMITS, type AgentContext, type AgentOutcome, type RunLimits } from './protocol.ts';
import { runFiles, writeRecords, type FailureCause, type Protocol, type RunResult, type TrajectoryEntry, type Verification } from './records.ts';
import { runSdk1 } from './sdk1.ts';
import { runSdk2 } from './sdk2.ts';
import { seedWorkspace, type Task } from './task.ts';
import { verify } from './verify.ts';

export interface RunTaskOptions {
  task: Task;
  agentCommand: string;
  /** The agent's working directory on the host (seen at the same path in the sandbox). */
  agentCwd: string;
  protocol: Protocol;
  /** The agent's name, recorded in result.json so the run can be repeated with the same agent. */
  agentName?: string;
  backend: Backend;
  /** The folder that receives `<run-id>/` (`.belay/runs` by default in the command line). */
  runsDir: string;
  runId?: string;
  limits?: Partial<RunLimits>;
  /** Extra variables for the agent (e.g. LLM_PROXY_URL). */
  env?: Record<string, string>;
  onEvent?: RunEventListener;
  /** Stops the run: everything it started is killed, the result says `aborted`. */
  signal?: AbortSignal;
}

export function newRunId(taskName: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  return `${stamp}-${taskName.replace(/[^A-Za-z0-9._-]/g, '_')}-${randomBytes(3).toString('hex')}`;
}

export async function runTask(options: RunTaskOptions): Promise<RunResult> {
  const { task } = options;
  const runId = options.runId ?? newRunId(task.name);
  const runDir = path.resolve(options.runsDir, runId);
  const files = runFiles(runDir);
  const started = new Date();
  const limits: RunLimits = {
    ...DEFAULT_LIMITS,
    agentTimeoutMs: task.agentTimeoutSec * 1000,
    ...options.limits,
  };
  const emit = (event: RunEvent) => {
    try {
      options.onEvent?.(event);
    } catch {
      // A listener's mistake must not end the run.
    }
  };
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  if (options.signal?.aborted) stop.abort();
  options.signal?.addEventListener('abort', onAbort);

  const trajectory: TrajectoryEntry[] = [];
  let outcome: AgentOutcome = { steps: 0, agentCompleted: false };
  let failure: RunFailure | undefined;
  let verification: Verification | null = null;
  let session: BackendSession | undefined;
  try {
    await fs.mkdir(files.steps, { recursive: true });
    emit({ type: 'run-started', runId, task: task.name, protocol: options.protocol, backend: options.backend.label, runDir });
    try {
      await seedWorkspace(task, files.workspace);
      await fs.writeFile(files.agentStdout, '');
      await fs.writeFile(files.agentStderr, '');
      session = await options.backend.open({ workspace: files.workspace, tests: files.tests, logs: files.logs, control: files.control });
    } catch (error) {
      throw new RunFailure('setup_error', errorMessage(error));
    }
    const deadline = Date.now() + limits.agentTimeoutMs;
    const ctx: AgentContext = {
      task,
      session,
      runDir,
      agentCommand: options.agentCommand,
      agentCwd: options.agentCwd,
      env: { TERM_TASK_ID: task.name, BELAY_WORKDIR: session.workdir, ...options.env },
      limits,
      remainingMs: () => deadline - Date.now(),
      emit,
      trajectory,
      signal: stop.signal,
    };
    try {
      outcome = await (options.protocol === 'sdk1' ? runSdk1(ctx) : runSdk2(ctx));
    } catch (error) {
      if (!(error instanceof RunFailure)) throw error;
      failure = error;
      outcome = { steps: error.steps ?? trajectory.length, agentCompleted: false };
    }
    // Like the real harness, the tests run even when the agent failed: partial work can pass.
    if (!stop.signal.aborted) {
      emit({ type: 'verification-started' });
      verification = await verify({ task, session, runDir, timeoutMs: task.testTimeoutSec * 1000, signal: stop.signal });
      emit({ type: 'verification-ended', verification });
    }
  } catch (error) {
    failure = error instanceof RunFailure ? error : new RunFailure('setup_error', errorMessage(error));
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    await session?.close();
  }
  if (options.signal?.aborted) failure = new RunFailure('aborted', 'the run was stopped');
  const passed = failure === undefined && verification !== null && verification.success;
  let cause: FailureCause | null = failure?.failure ?? null;
  let error: string | null = failure?.message ?? null;
  if (!cause && verification && !verification.success) {
    cause = verification.timed_out ? 'test_timeout' : 'tests_failed';
    error = verification.error ?? `the tests gave reward ${verification.reward}`;
  }
  const ended = new Date();
  const result: RunResult = {
    run_id: runId,
    task_name: task.name,
    task_dir: task.dir,
    ...(options.agentName !== undefined ? { agent: options.agentName } : {}),
    protocol: options.protocol,
    backend: options.backend.name,
    started_at: started.toISOString(),
    ended_at: ended.toISOString(),
    duration_sec: (ended.getTime() - started.getTime()) / 1000,
    steps: outcome.steps,
    agent_completed: outcome.agentCompleted,
    verification,
    passed,
    reward: verification?.reward ?? 0,
    failure_cause: cause,
    error,
    run_dir: runDir,
  };
  await writeRecords(runDir, result, trajectory);
  emit({ type: 'run-ended', result });
  return result;
}
