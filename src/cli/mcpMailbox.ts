// The mailbox as a long-running MCP process holds it: one connection opened on first use, one
// change watch shared by every waiting call, and the calls still waiting, so that the process
// cancels them in the mailbox when its client goes away instead of leaving cues nobody reads.
import { Mailbox } from '../cues/core/store.ts';

interface Waiting {
  controller: AbortController;
  done: Promise<unknown>;
}

export class MailboxLink {
  readonly #env: NodeJS.ProcessEnv;
  readonly #onError: (error: unknown) => void;
  #mailbox: Mailbox | undefined;
  #stopWatch: (() => void) | undefined;
  readonly #listeners = new Set<() => void>();
  readonly #waiting = new Set<Waiting>();
  #busy = 0;
  readonly #idle: Array<() => void> = [];
  #closed = false;

  constructor(env: NodeJS.ProcessEnv, onError: (error: unknown) => void = () => undefined) {
    this.#env = env;
    this.#onError = onError;
  }

  /** The mailbox, opened on first use (a MailboxError says why it cannot be; the next call tries again). */
  mailbox(): Mailbox {
    if (this.#closed) throw new Error('the mailbox link is closed');
    this.#mailbox ??= Mailbox.open({ env: this.#env });
    return this.#mailbox;
  }

  /** Runs one call on the mailbox, counted until it settles (see `idle`). */
  async use<T>(call: (mailbox: Mailbox) => T | Promise<T>): Promise<T> {
    this.#busy++;
    try {
      return await call(this.mailbox());
    } finally {
      if (--this.#busy === 0) for (const resolve of this.#idle.splice(0)) resolve();
    }
  }

  /** Resolves once no call is under way. */
  idle(): Promise<void> {
    return this.#busy === 0 ? Promise.resolve() : new Promise((resolve) => this.#idle.push(resolve));
  }

  /** For `cueAndWait`'s `subscribe`: one watch of the mailbox, started with the first listener, stopped after the last. */
  readonly subscribe = (onChange: () => void): (() => void) => {
    this.#listeners.add(onChange);
    this.#stopWatch ??= this.mailbox().watch(
      () => {
        for (const listener of [...this.#listeners]) listener();
      },
      { onError: this.#onError },
    );
    return () => {
      this.#listeners.delete(onChange);
      if (this.#listeners.size === 0) {
        this.#stopWatch?.();
        this.#stopWatch = undefined;
      }
    };
  };

  /** Runs a wait that `signal` (the client's cancellation) or `close` interrupts. */
  async track<T>(signal: AbortSignal, wait: (interrupt: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    if (this.#closed) controller.abort();
    const done = wait(AbortSignal.any([signal, controller.signal]));
    const entry: Waiting = { controller, done };
    this.#waiting.add(entry);
    try {
      return await done;
    } finally {
      this.#waiting.delete(entry);
    }
  }

  /** Interrupts every wait (each cancels its cue in the mailbox), waits for them, then closes. */
  async close(): Promise<void> {
    this.#closed = true;
    const waiting = [...this.#waiting];
    for (const entry of waiting) entry.controller.abort();
    await Promise.allSettled(waiting.map((entry) => entry.done));
    this.#stopWatch?.();
    this.#stopWatch = undefined;
    this.#mailbox?.close();
    this.#mailbox = undefined;
  }
}
