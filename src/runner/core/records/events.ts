// A run is a stream of events: the command line prints them as live progress, the editor
// (Tasks view, agent terminal, Test Explorer, trajectory view) consumes the same stream.
import type { FailureCause, Protocol, RunResult, Verification } from './records.ts';

// The causes and protocols belong to the records (result.json), which the stream ends with.
export type { FailureCause, Protocol } from './records.ts';

export type RunEvent =
  /** `backend` is the backend's label; `isolated` says whether it keeps the agent from the host. */
  | { type: 'run-started'; runId: string; task: string; protocol: Protocol; backend: string; isolated: boolean; runDir: string }
  | { type: 'step-started'; step: number }
  | { type: 'agent-text'; step: number; text: string }
  | { type: 'command'; step: number; command: string; cwd: string }
  | { type: 'output'; step: number; chunk: string }
  | { type: 'step-ended'; step: number; exitCode: number | null; timedOut: boolean; durationMs: number }
  /** The agent's stderr, as it comes. */
  | { type: 'agent-log'; chunk: string }
  /** Something the harness wants the user to know that is not a step (retries, warnings). */
  | { type: 'notice'; message: string }
  | { type: 'verification-started' }
  | { type: 'verification-ended'; verification: Verification }
  | { type: 'run-ended'; result: RunResult };

export type RunEventListener = (event: RunEvent) => void;

/** Raised inside a protocol to end the run with a named cause. */
export class RunFailure extends Error {
  override name = 'RunFailure';
  readonly failure: FailureCause;
  /** Steps taken before the failure, when a protocol knows. */
  steps: number | undefined;
  constructor(failure: FailureCause, message: string) {
    super(message);
    this.failure = failure;
  }
}
