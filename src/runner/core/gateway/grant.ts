// One run's door through the gateway: its token, where its requests go, what they cost so far,
// and its budget. The gateway owns grants; a closed grant's token opens nothing.
import { randomBytes } from 'node:crypto';
import { errorMessage } from '../../../shared/errors.ts';
import { KeyGate } from './backoff.ts';
import { costOf, findPrice, priceTable, type ModelPrice, type PriceTable } from './prices.ts';
import type { LocalModel } from './lmModel.ts';
import type { ApiName, ReportedUsage, UpstreamApi } from './shape.ts';

/** Where a run's requests go: an HTTP API with the real key, or a model in the editor. */
export type Upstream = HttpUpstream | LocalUpstream;

/** A model the editor offers (VS Code's language-model API): no key, no URL. */
export interface LocalUpstream {
  local: LocalModel;
}

export interface HttpUpstream {
  /**
   * The API's base URL as its own SDK takes it: for OpenAI-compatible upstreams with the version
   * (`https://api.openai.com/v1`, `https://openrouter.ai/api/v1`), for Anthropic without
   * (`https://api.anthropic.com`; a trailing `/v1` is accepted too), for Gemini without
   * (`https://generativelanguage.googleapis.com`; a trailing `/v1beta` is dropped). A full endpoint URL
   * (`…/v1/chat/completions`, `…/v1/messages`) is taken back to its base.
   */
  baseUrl: string;
  key: string;
  /** The API the upstream speaks (default: 'anthropic' for anthropic.com, 'gemini' for generativelanguage.googleapis.com, else 'openai'). */
  api?: UpstreamApi;
  /** The model used when a request names none. */
  model?: string;
}

export interface Budget {
  usd?: number;
  /** Input and output tokens together. */
  tokens?: number;
}

export interface LlmUsage {
  /** Requests sent to the upstream (those the budget refused are in the records only). */
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
}

export interface LlmRequestRecord {
  at: string;
  api: ApiName;
  model: string | null;
  stream: boolean;
  status: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  latency_ms: number;
  error?: string;
  /** The upstream reported no usage: tokens are estimated from characters (4 per token). */
  estimated?: true;
  /** The model is in no price table: its cost counts as 0. */
  unpriced?: true;
  /** Times the request was sent again after a 429 or 503. */
  retries?: number;
  /** What the upstream could not take from this request (a model in the editor), in one line. */
  note?: string;
}

export interface RunGrant {
  readonly token: string;
  usage(): LlmUsage;
  /** The run's requests in order (the last MAX_RECORDS of them). */
  records(): readonly LlmRequestRecord[];
  readonly budgetExceeded: boolean;
  /** Called once, when the budget is first reached (at once if it already is). */
  onBudgetExceeded(listener: () => void): void;
  /** Called once, when the run's upstream can serve it no more (a model in the editor refused or gone). */
  onFailure(listener: (message: string) => void): void;
  close(): void;
}

export interface OpenRunOptions {
  runId: string;
  upstream: Upstream;
  budget?: Budget;
  prices?: PriceTable;
  onRequest?: (record: LlmRequestRecord) => void;
}

/** What one finished request adds to a run. */
export interface Outcome {
  api: ApiName;
  model: string | null;
  stream: boolean;
  status: number;
  startedAt: number;
  /** Usage as reported, or undefined when the upstream sent none. */
  reported?: ReportedUsage;
  /** Characters of the request and of the generated text, for the estimate. */
  inputChars: number;
  outputChars: number;
  /** Whether any tokens were spent (false when the request never reached the model). */
  reachedModel: boolean;
  retries: number;
  error?: string;
  /** Refused by the gateway itself (the budget): recorded, but not counted as a request. */
  refused?: true;
  note?: string;
}

const CHARS_PER_TOKEN = 4;
/** Records kept in memory per run (the oldest go first); totals and onRequest see every request. */
export const MAX_RECORDS = 10_000;

export class Grant implements RunGrant {
  readonly token = `belay-run-${randomBytes(24).toString('base64url')}`;
  readonly runId: string;
  readonly upstream: Required<Pick<HttpUpstream, 'baseUrl' | 'key' | 'api'>> & Pick<HttpUpstream, 'model'>;
  /** The model in the editor that serves this run, when its upstream is one. */
  readonly local: LocalModel | undefined;
  readonly keyId: string;
  /** Aborts every request of this run still in flight. */
  readonly inflight = new Set<AbortController>();
  private readonly budget: Budget | undefined;
  private readonly prices: ReadonlyMap<string, ModelPrice>;
  private readonly onRequest: ((record: LlmRequestRecord) => void) | undefined;
  private readonly listeners: (() => void)[] = [];
  private readonly failureListeners: ((message: string) => void)[] = [];
  private failure: string | undefined;
  private readonly log: LlmRequestRecord[] = [];
  private readonly totals: LlmUsage = { requests: 0, input_tokens: 0, output_tokens: 0, cost_usd: 0 };
  private exceeded = false;
  private closed = false;
  private readonly forget: (grant: Grant) => void;

  constructor(options: OpenRunOptions, forget: (grant: Grant) => void) {
    this.runId = options.runId;
    this.budget = options.budget;
    this.prices = priceTable(options.prices);
    this.onRequest = options.onRequest;
    this.forget = forget;
    if ('local' in options.upstream) {
      this.local = options.upstream.local;
      this.upstream = { baseUrl: '', key: '', api: 'openai', model: this.local.id };
      this.keyId = KeyGate.id(`local:${this.local.id}`);
      return;
    }
    this.local = undefined;
    const baseUrl = new URL(options.upstream.baseUrl);
    if (baseUrl.protocol !== 'http:' && baseUrl.protocol !== 'https:') throw new Error(`the LLM upstream must be an http(s) URL, not ${baseUrl.protocol}`);
    if (baseUrl.username || baseUrl.password || baseUrl.search || baseUrl.hash) throw new Error('the LLM upstream URL must hold no credentials, query or fragment');
    const api = options.upstream.api ?? (/(^|\.)anthropic\.com$/.test(baseUrl.hostname) ? 'anthropic' : baseUrl.hostname === 'generativelanguage.googleapis.com' ? 'gemini' : 'openai');
    // An endpoint URL given where the base was meant (LLM_API_URL style) is taken back to its base;
    // a Gemini base loses its API version (each request's path names its own).
    const base = baseUrl.href.replace(/\/+$/, '').replace(api === 'anthropic' ? /\/v1\/messages$/ : api === 'gemini' ? /\/(v1beta|v1|v1alpha)$/ : /\/chat\/completions$/, '');
    this.upstream = { baseUrl: base, key: options.upstream.key, api, model: options.upstream.model };
    // A keyless upstream (a model server on this machine) shares its backoff by its address.
    this.keyId = KeyGate.id(options.upstream.key || base);
  }

  get budgetExceeded(): boolean {
    return this.exceeded;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  usage(): LlmUsage {
    return { ...this.totals };
  }

  records(): readonly LlmRequestRecord[] {
    return this.log;
  }

  onBudgetExceeded(listener: () => void): void {
    if (this.exceeded) queueMicrotask(listener);
    else this.listeners.push(listener);
  }

  /**
   * Called once, when the upstream can serve this run no more (a model in the editor the person
   * did not consent to, or that went away); at once if that already happened.
   */
  onFailure(listener: (message: string) => void): void {
    if (this.failure !== undefined) {
      const message = this.failure;
      queueMicrotask(() => listener(message));
    } else this.failureListeners.push(listener);
  }

  /** The upstream can serve this run no more: tells the run once, in one line. */
  fail(message: string): void {
    if (this.failure !== undefined) return;
    this.failure = message;
    for (const listener of this.failureListeners.splice(0)) {
      try {
        listener(message);
      } catch {
        // a listener's failure is its own
      }
    }
  }

  /** The sentence a refused request gets once the budget is spent. */
  budgetMessage(): string {
    const parts: string[] = [];
    if (this.budget?.usd !== undefined) parts.push(`$${this.totals.cost_usd.toFixed(4)} used of $${this.budget.usd.toFixed(4)} limit`);
    if (this.budget?.tokens !== undefined) parts.push(`${this.totals.input_tokens + this.totals.output_tokens} tokens used of ${this.budget.tokens} limit`);
    return `Belay: this run's LLM budget is spent (${parts.join(', ')}); no further model requests are allowed in this run`;
  }

  /** Counts a finished request, records it, and checks the budget. */
  account(outcome: Outcome): LlmRequestRecord {
    const estimated = outcome.reachedModel && !outcome.reported;
    const input = outcome.reported?.input ?? (estimated ? Math.ceil(outcome.inputChars / CHARS_PER_TOKEN) : 0);
    const output = outcome.reported?.output ?? (estimated ? Math.ceil(outcome.outputChars / CHARS_PER_TOKEN) : 0);
    const price = findPrice(this.prices, outcome.model);
    const cost = outcome.reported?.costUsd ?? (price ? costOf(price, input, output) : 0);
    const record: LlmRequestRecord = {
      at: new Date(outcome.startedAt).toISOString(),
      api: outcome.api,
      model: outcome.model,
      stream: outcome.stream,
      status: outcome.status,
      input_tokens: input,
      output_tokens: output,
      cost_usd: cost,
      latency_ms: Math.max(0, Date.now() - outcome.startedAt),
    };
    if (outcome.error) record.error = outcome.error;
    if (estimated && (input > 0 || output > 0)) record.estimated = true;
    if (!price && outcome.reported?.costUsd === undefined && (input > 0 || output > 0)) record.unpriced = true;
    if (outcome.retries > 0) record.retries = outcome.retries;
    if (outcome.note) record.note = outcome.note;
    if (!outcome.refused) this.totals.requests++;
    this.totals.input_tokens += input;
    this.totals.output_tokens += output;
    this.totals.cost_usd += cost;
    this.log.push(record);
    if (this.log.length > MAX_RECORDS) this.log.splice(0, this.log.length - MAX_RECORDS);
    try {
      this.onRequest?.(record);
    } catch (error) {
      record.error = record.error ?? `onRequest failed: ${errorMessage(error)}`;
    }
    this.checkBudget();
    return record;
  }

  private checkBudget(): void {
    if (this.exceeded || !this.budget) return;
    const overUsd = this.budget.usd !== undefined && this.totals.cost_usd >= this.budget.usd;
    const overTokens = this.budget.tokens !== undefined && this.totals.input_tokens + this.totals.output_tokens >= this.budget.tokens;
    if (!overUsd && !overTokens) return;
    this.exceeded = true;
    for (const listener of this.listeners.splice(0)) {
      try {
        listener();
      } catch {
        // a listener's failure is its own
      }
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.forget(this);
    for (const controller of this.inflight) controller.abort(new Error('the run is over'));
    this.inflight.clear();
  }
}
