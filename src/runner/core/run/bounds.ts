// What stops a run from outside its protocol: the user, the run's total time, its disk budget.
// All go through one signal whose reason (a RunFailure) says why, so the run ends with that
// cause whatever the protocol made of being stopped.
import { RunFailure } from '../records/events.ts';
import { formatBytes, watchDiskBudget } from '../records/logs.ts';

/** Time beyond the agent's and the tests' own for ending the phases and writing records. */
const TOTAL_MARGIN_MS = 60_000;

export class RunBounds {
  readonly #stop = new AbortController();
  readonly #external: AbortSignal | undefined;
  readonly #onExternalAbort = () => this.#stopWith(new RunFailure('aborted', 'the run was stopped'));
  readonly #disk: { stop(): void };
  readonly #totalMs: number;
  #total: NodeJS.Timeout | undefined;
  #phase: 'setup' | 'agent' | 'verify' = 'setup';

  constructor(runDir: string, limits: { agentTimeoutMs: number; testTimeoutMs: number; diskBudgetBytes: number }, external?: AbortSignal) {
    this.#external = external;
    if (external?.aborted) this.#onExternalAbort();
    external?.addEventListener('abort', this.#onExternalAbort);
    this.#totalMs = limits.agentTimeoutMs + limits.testTimeoutMs + TOTAL_MARGIN_MS;
    const budget = limits.diskBudgetBytes;
    this.#disk = watchDiskBudget(runDir, budget, (used) =>
      this.#stopWith(new RunFailure('disk_budget', `the run wrote ${formatBytes(used)}, more than its disk budget of ${formatBytes(budget)}`)),
    );
  }

  /** Aborts when the run must stop; `reason` is then a RunFailure. */
  get signal(): AbortSignal {
    return this.#stop.signal;
  }

  /** Why the run was stopped, once it was. */
  get failure(): RunFailure | undefined {
    return this.#stop.signal.aborted && this.#stop.signal.reason instanceof RunFailure ? this.#stop.signal.reason : undefined;
  }

  /** The total time counts from the agent phase on: preparing the environment has its own limits. */
  enter(phase: 'agent' | 'verify'): void {
    this.#phase = phase;
    this.#total ??= setTimeout(() => {
      const cause = this.#phase === 'verify' ? 'test_timeout' : 'agent_timeout';
      this.#stopWith(new RunFailure(cause, `the run did not end within its total time of ${Math.round(this.#totalMs / 1000)} s`));
    }, this.#totalMs);
  }

  /** Stops the run from outside the protocol for `failure` (a spent LLM budget, say); the first reason stands. */
  stop(failure: RunFailure): void {
    this.#stopWith(failure);
  }

  dispose(): void {
    clearTimeout(this.#total);
    this.#disk.stop();
    this.#external?.removeEventListener('abort', this.#onExternalAbort);
  }

  #stopWith(failure: RunFailure): void {
    if (!this.#stop.signal.aborted) this.#stop.abort(failure);
  }
}
