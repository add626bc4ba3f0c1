// A run's model access through Belay's gateway (gateway/): the run's grant (its token, its usage,
// its budget), the service the backend shows the agent phase, the agent's variables, and which
// step each model call belongs to. The real key stays in the gateway; the run sees a token.
import { mkdtemp, rm } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { llmEnvironment, startGateway, type Budget, type Gateway, type GatewayOptions, type LlmRequestRecord, type LlmUsage, type PriceTable, type RunGrant, type Upstream } from '../gateway/index.ts';
import { addLlmUsage, NO_LLM_USAGE, type TrajectoryEntry } from '../records/records.ts';

/** What a run needs to let its agent call a model: the editor's or the command line's gateway and choice. */
export interface RunLlmOptions {
  gateway: Gateway;
  /** The host Unix socket the gateway listens on (in a private folder). */
  socketPath: string;
  upstream: Upstream;
  budget?: Budget;
  prices?: PriceTable;
}

/** The run folder's list of model calls (beside result.json's totals). */
export const LLM_REQUESTS_FILE = 'llm-requests.json';

/** Distinct notes about requests a run shows (each is one line; an agent repeating new ones is not news). */
const MAX_NOTES = 20;

/** The service name the gateway has inside a run. */
export const LLM_SERVICE = 'llm';

export class RunLlm {
  readonly #grant: RunGrant;
  readonly #options: RunLlmOptions;
  /** Usage when the last step ended: what came after belongs to the next step. */
  #mark: LlmUsage = NO_LLM_USAGE;
  #perStep = new Map<number, LlmUsage>();

  /**
   * `onBudget` is told once, in words, when the agent has spent its budget; `onFailure` once when
   * the upstream can serve the run no more (a model in the editor refused or gone); `onNote` once
   * per distinct line about what the upstream could not take from a request.
   */
  constructor(options: RunLlmOptions, runId: string, onBudget: (message: string) => void, hooks: { onFailure?: (message: string) => void; onNote?: (message: string) => void } = {}) {
    this.#options = options;
    const noted = new Set<string>();
    const onRequest = (record: LlmRequestRecord) => {
      if (!record.note || noted.has(record.note) || noted.size >= MAX_NOTES) return;
      noted.add(record.note);
      hooks.onNote?.(record.note);
    };
    this.#grant = options.gateway.openRun({ runId, upstream: options.upstream, onRequest, ...(options.budget ? { budget: options.budget } : {}), ...(options.prices ? { prices: options.prices } : {}) });
    this.#grant.onBudgetExceeded(() => onBudget(`the agent reached its LLM budget of ${budgetWords(options.budget ?? {})} (${this.#spentWords()}); further model calls were refused`));
    if (hooks.onFailure) this.#grant.onFailure(hooks.onFailure);
  }

  get service(): { name: string; socketPath: string } {
    return { name: LLM_SERVICE, socketPath: this.#options.socketPath };
  }

  /** The run's token (what the agent sends as its key). */
  get token(): string {
    return this.#grant.token;
  }

  /** The model asked for when a request names none (and the one an installed CLI asks for). */
  get model(): string | undefined {
    const upstream = this.#options.upstream;
    // A model in the editor serves whatever a request names; its `vendor/id` goes as one plain
    // word, since a CLI may put the name in a URL path (Gemini's /models/{model}:generateContent).
    return 'local' in upstream ? upstream.local.id.replace(/[^\w.-]+/g, '-') : upstream.model;
  }

  /** The agent's variables for a gateway it reaches at `baseUrl`: the URLs and the run's token in every key variable. */
  environment(baseUrl: string): Record<string, string> {
    return llmEnvironment(baseUrl, this.#grant.token);
  }

  usage(): LlmUsage {
    return this.#grant.usage();
  }

  /** A step ended: the calls since the previous one are its own. */
  stepEnded(step: number): void {
    this.#chargeSinceMark(step);
  }

  /**
   * After an agent phase: each entry gets its step's calls; calls after the last step (the agent's
   * final answer) go to the last entry. Starts afresh for the next phase (a task's next step).
   */
  assign(entries: TrajectoryEntry[]): void {
    const last = entries.at(-1);
    if (last) this.#chargeSinceMark(last.step);
    else this.#mark = this.#grant.usage();
    for (const entry of entries) {
      const spent = this.#perStep.get(entry.step);
      if (spent) entry.llm = spent;
    }
    this.#perStep = new Map();
  }

  /** Adds the calls made since the mark to `step`, and moves the mark. */
  #chargeSinceMark(step: number): void {
    const now = this.#grant.usage();
    const spent = minus(now, this.#mark);
    this.#mark = now;
    if (spent.requests > 0 || spent.input_tokens > 0) this.#perStep.set(step, addLlmUsage(this.#perStep.get(step) ?? NO_LLM_USAGE, spent));
  }

  /** Each model call (model, status, tokens, cost, latency), for the run folder's llm-requests.json. */
  records(): readonly LlmRequestRecord[] {
    return this.#grant.records();
  }

  close(): void {
    this.#grant.close();
  }

  #spentWords(): string {
    const u = this.#grant.usage();
    return `spent $${u.cost_usd.toFixed(4)} and ${u.input_tokens + u.output_tokens} tokens in ${u.requests} request${u.requests === 1 ? '' : 's'}`;
  }
}

export function budgetWords(budget: Budget): string {
  const parts = [budget.usd !== undefined ? `$${budget.usd}` : '', budget.tokens !== undefined ? `${budget.tokens} tokens` : ''].filter(Boolean);
  return parts.length > 0 ? parts.join(' or ') : 'nothing';
}

function minus(a: LlmUsage, b: LlmUsage): LlmUsage {
  return { requests: a.requests - b.requests, input_tokens: a.input_tokens - b.input_tokens, output_tokens: a.output_tokens - b.output_tokens, cost_usd: a.cost_usd - b.cost_usd };
}

/** A gateway for the runs of one process (`belay run`, the editor), on a socket in a folder only this user can enter. */
export interface HostedGateway {
  gateway: Gateway;
  socketPath: string;
  close(): Promise<void>;
}

/** Starts a gateway listening on a fresh private folder's socket (short, so within a socket path's 107 bytes). */
export async function hostGateway(options?: GatewayOptions): Promise<HostedGateway> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'belay-llm-'));
  const socketPath = path.join(dir, 'gw.sock');
  const gateway = startGateway(options);
  try {
    await gateway.listenSocket(socketPath);
  } catch (error) {
    await gateway.close();
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    gateway,
    socketPath,
    close: async () => {
      await gateway.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
