// A model in the editor for the gateway's tests: a LocalModel (the test double of the model only)
// that answers each request with the next scripted turn at a model's pace (its first part after a
// while, the rest trickled), records what it was sent and each count it made, and counts tokens
// its own way (words, not characters), so a test can tell its counter was the one used.
import type { LmEvent, LmFailure, LmMessage, LmSendOptions, LmSendResult, LmTool, LocalModel } from '../../../src/runner/core/gateway/lmModel.ts';

/** A turn's parts; with `release`, the parts after the first wait for it too (the test holds the model mid-answer). */
export type Turn = { parts: LmEvent[]; release?: Promise<void> } | { refuse: LmFailure };

export interface Pace {
  /** Before the first part. */
  firstMs: number;
  /** Between parts. */
  everyMs: number;
}

export interface Sent {
  messages: LmMessage[];
  tools: LmTool[];
  options: LmSendOptions;
  /** Resolves when the request's signal aborts (the agent went away, the run closed). */
  aborted: Promise<void>;
}

/** Words and punctuation runs: a counter no character estimate matches. */
export function wordCount(text: string): number {
  return (text.match(/\w+|[^\w\s]+/g) ?? []).length;
}

export class ScriptedModel implements LocalModel {
  readonly id: string;
  readonly name = 'Scripted Test Model';
  maxInputTokens = 100_000;
  readonly sent: Sent[] = [];
  /** Every count the gateway asked for, in order. */
  readonly counts: number[] = [];
  /** When the queue is empty. */
  fallback: (messages: LmMessage[], tools: LmTool[]) => Turn = () => ({ parts: [{ type: 'text', text: 'Nothing more to do.' }] });
  pace: Pace;
  readonly #queue: Turn[] = [];
  readonly #waiters: { count: number; resolve: () => void }[] = [];

  constructor(id = 'test-vendor/scripted', pace: Pace = { firstMs: 2_000, everyMs: 150 }) {
    this.id = id;
    this.pace = pace;
  }

  reply(...turns: Turn[]): void {
    this.#queue.push(...turns);
  }

  /** Resolves once the model has been sent `count` requests. */
  whenSent(count: number): Promise<void> {
    if (this.sent.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ count, resolve }));
  }

  async countTokens(text: string): Promise<number> {
    const tokens = wordCount(text);
    this.counts.push(tokens);
    return tokens;
  }

  async send(messages: LmMessage[], tools: LmTool[], options: LmSendOptions, signal: AbortSignal): Promise<LmSendResult> {
    const aborted = new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
    this.sent.push({ messages: structuredClone(messages), tools, options, aborted });
    for (const waiter of this.#waiters.filter((w) => this.sent.length >= w.count)) {
      this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
    const turn = this.#queue.shift() ?? this.fallback(messages, tools);
    if ('refuse' in turn) return { ok: false, error: turn.refuse };
    const pace = this.pace;
    const scripted = turn.parts;
    const release = turn.release;
    async function* parts(): AsyncGenerator<LmEvent> {
      for (const [index, part] of scripted.entries()) {
        if (index === 1 && release) await Promise.race([release, new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))]);
        await wait(index === 0 ? pace.firstMs : pace.everyMs, signal);
        if (signal.aborted) return;
        yield part;
      }
    }
    return { ok: true, parts: parts() };
  }
}

/** A model's pause, cut short when the request is aborted. */
function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
