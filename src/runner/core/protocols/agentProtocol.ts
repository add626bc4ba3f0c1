// What a protocol gets from the run and gives back: the protocols never see the backend's
// kind, the run's files beyond their own logs, or the verification.
import type { BackendSession } from '../backends/backend.ts';
import type { RunEvent } from '../records/events.ts';
import type { Protocol, TrajectoryEntry } from '../records/records.ts';
import type { Task } from '../tasks/task.ts';

export interface RunLimits {
  maxSteps: number;
  /** The agent's whole time (the task's agent timeout unless overridden). */
  agentTimeoutMs: number;
  /** SDK 1.x: longest wait for one response line. */
  silenceTimeoutMs: number;
  /** SDK 1.x: one command's time limit. */
  commandTimeoutMs: number;
  /** Characters kept from each end of a command's output for the agent. */
  excerptChars: number;
  /** SDK 1.x: silence at step 1 after which the agent is checked for a TCP listener. */
  mismatchProbeMs: number;
  /** SDK 2.0 timings (the spec's values by default). */
  healthTimeoutMs: number;
  healthIntervalMs: number;
  startTimeoutMs: number;
  pollIntervalMs: number;
  statusTimeoutMs: number;
  maxConsecutiveErrors: number;
  /** SDK 2.0: the largest answer read from the agent; a longer one is the agent's fault. */
  maxResponseBytes: number;
  /** SDK 3.0: how long an agent that printed [DONE] may take to exit before it is ended. */
  doneGraceMs: number;
  /** Each log on disk (agent output, a step's output, the tests' output) keeps its head and tail within this. */
  maxLogBytes: number;
  /** The whole run folder (workspace, logs, scratch) may not grow past this. */
  diskBudgetBytes: number;
}

export const DEFAULT_LIMITS: Omit<RunLimits, 'agentTimeoutMs'> = {
  maxSteps: 200,
  silenceTimeoutMs: 300_000,
  commandTimeoutMs: 120_000,
  excerptChars: 16_000,
  mismatchProbeMs: 3_000,
  healthTimeoutMs: 15_000,
  healthIntervalMs: 100,
  startTimeoutMs: 10_000,
  pollIntervalMs: 500,
  statusTimeoutMs: 5_000,
  maxConsecutiveErrors: 5,
  maxResponseBytes: 1024 * 1024,
  doneGraceMs: 10_000,
  maxLogBytes: 16 * 1024 * 1024,
  diskBudgetBytes: 4 * 1024 * 1024 * 1024,
};

export interface AgentContext {
  task: Task;
  session: BackendSession;
  runDir: string;
  /** The agent's shell command. */
  agentCommand: string;
  /** The agent's working directory as seen inside the backend. */
  agentCwd: string;
  /** The run's model through Belay's gateway, when it has one: the URL the agent reaches it at, the run's token, the model asked for. */
  llm?: { baseUrl: string; token: string; model: string | undefined };
  /** The host folder the backend shows at `session.stateDir` (protocols that keep state only). */
  stateFolder?: string;
  /** Variables given to the agent and its commands. */
  env: Record<string, string>;
  limits: RunLimits;
  /** Milliseconds left of the agent's time. */
  remainingMs(): number;
  emit(event: RunEvent): void;
  trajectory: TrajectoryEntry[];
  signal: AbortSignal;
}

export interface AgentOutcome {
  steps: number;
  agentCompleted: boolean;
}

/** How Belay talks to an agent: one implementation per protocol (protocols/). */
export interface AgentProtocol {
  readonly name: Protocol;
  /** True when the agent keeps state of its own (an installed CLI): the run gives it a folder, kept with the run. */
  readonly keepsState?: boolean;
  /** Runs the agent until it completes or fails (a RunFailure); the agent is dead when it settles. */
  run(ctx: AgentContext): Promise<AgentOutcome>;
}
