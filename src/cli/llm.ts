// `belay run`'s model flags: which upstream the agent may call through Belay's gateway, the
// environment variable of this shell that holds the real key (read here, never passed on), the
// run's budget and prices. The agent gets a per-run token instead of the key.
import { isHttpUrl, LLM_APIS, type LlmApi } from '../runner/core/agents/llmSettings.ts';
import type { ModelPrice } from '../runner/core/gateway/index.ts';
import { hostGateway, type HostedGateway, type RunLlmOptions } from '../runner/core/run/runLlm.ts';
import { UsageError } from './io.ts';

export const LLM_FLAGS = {
  'llm-upstream': { type: 'string' as const },
  'llm-key-env': { type: 'string' as const },
  'llm-api': { type: 'string' as const },
  'llm-model': { type: 'string' as const },
  'llm-budget-usd': { type: 'string' as const },
  'llm-budget-tokens': { type: 'string' as const },
  'llm-price': { type: 'string' as const, multiple: true as const, default: [] as string[] },
};

export const LLM_USAGE = `  --llm-upstream URL       the model API the agent may call, through Belay's gateway (its one
                           way out of the run): e.g. https://openrouter.ai/api/v1; the agent gets
                           LLM_PROXY_URL, LLM_API_URL, OPENAI_BASE_URL, ANTHROPIC_BASE_URL and a
                           per-run token in LLM_API_KEY, OPENAI_API_KEY, ANTHROPIC_API_KEY, …
  --llm-key-env VAR        the variable of this shell holding the real API key (never passed on)
  --llm-api openai|anthropic|gemini
                           the upstream's API (default: anthropic for api.anthropic.com, gemini
                           for generativelanguage.googleapis.com, else openai)
  --llm-model MODEL        the model for requests that name none
  --llm-budget-usd X       end a run with budget_exceeded once it has spent X dollars
  --llm-budget-tokens N    end a run with budget_exceeded once it has used N tokens
  --llm-price MODEL=IN,OUT USD per million input and output tokens (repeatable; beside the defaults)
`;

/** The flags as they are stored with a job (no key: only the variable's name). */
export interface LlmFlags {
  upstream: string;
  keyEnv?: string;
  api?: LlmApi;
  model?: string;
  budgetUsd?: number;
  budgetTokens?: number;
  prices?: Record<string, ModelPrice>;
}

type Values = { [K in keyof typeof LLM_FLAGS]?: (typeof LLM_FLAGS)[K] extends { multiple: true } ? string[] : string };

/** The model flags, checked; undefined when no --llm-upstream was given (then no other --llm flag may be). */
export function parseLlmFlags(values: Values): LlmFlags | undefined {
  const upstream = values['llm-upstream'];
  if (upstream === undefined) {
    const stray = (Object.keys(LLM_FLAGS) as (keyof Values)[]).find((flag) => flag !== 'llm-price' && values[flag] !== undefined) ?? ((values['llm-price']?.length ?? 0) > 0 ? 'llm-price' : undefined);
    if (stray) throw new UsageError(`--${stray} needs --llm-upstream URL: without it the agent reaches no model`);
    return undefined;
  }
  if (!isHttpUrl(upstream)) throw new UsageError(`--llm-upstream must be an http:// or https:// URL without a user or password (got '${upstream}')`);
  const flags: LlmFlags = { upstream };
  const keyEnv = values['llm-key-env'];
  if (keyEnv !== undefined) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(keyEnv)) throw new UsageError(`--llm-key-env takes the name of a variable (got '${keyEnv}'), not the key itself`);
    flags.keyEnv = keyEnv;
  }
  const api = values['llm-api'];
  if (api !== undefined) {
    if (!(LLM_APIS as readonly string[]).includes(api)) throw new UsageError(`--llm-api must be ${LLM_APIS.slice(0, -1).join(', ')} or ${LLM_APIS.at(-1)} (got '${api}')`);
    flags.api = api as LlmApi;
  }
  if (values['llm-model'] !== undefined) flags.model = values['llm-model'];
  const usd = values['llm-budget-usd'];
  if (usd !== undefined) {
    const n = Number(usd);
    if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--llm-budget-usd needs a positive number of dollars, got '${usd}'`);
    flags.budgetUsd = n;
  }
  const tokens = values['llm-budget-tokens'];
  if (tokens !== undefined) {
    const n = Number(tokens);
    if (!Number.isInteger(n) || n <= 0) throw new UsageError(`--llm-budget-tokens needs a positive whole number, got '${tokens}'`);
    flags.budgetTokens = n;
  }
  for (const price of values['llm-price'] ?? []) {
    const match = /^([^=]+)=([0-9.]+),([0-9.]+)$/.exec(price);
    const input = Number(match?.[2]);
    const output = Number(match?.[3]);
    if (!match || !Number.isFinite(input) || !Number.isFinite(output)) throw new UsageError(`--llm-price takes MODEL=INPUT,OUTPUT in USD per million tokens (got '${price}')`);
    flags.prices = { ...flags.prices, [match[1]!.trim()]: { input, output } };
  }
  return flags;
}

/** The real key from the variable the flags name ('' when none is named); unset or empty is a usage error. */
export function checkLlmKey(flags: LlmFlags, environment: NodeJS.ProcessEnv): string {
  if (flags.keyEnv === undefined) return '';
  const key = environment[flags.keyEnv] ?? '';
  if (key === '') throw new UsageError(`--llm-key-env ${flags.keyEnv}: that variable is not set in this shell`);
  return key;
}

/**
 * Starts the process's gateway for these flags; the key is read from the named variable now. A
 * variable that is unset or empty is a usage error naming it (a run without its key would only
 * fail at its first model call).
 */
export async function startLlm(flags: LlmFlags, environment: NodeJS.ProcessEnv): Promise<{ options: RunLlmOptions; host: HostedGateway }> {
  const key = checkLlmKey(flags, environment);
  const host = await hostGateway();
  return {
    host,
    options: {
      gateway: host.gateway,
      socketPath: host.socketPath,
      upstream: { baseUrl: flags.upstream, key, ...(flags.api ? { api: flags.api } : {}), ...(flags.model ? { model: flags.model } : {}) },
      budget: { ...(flags.budgetUsd !== undefined ? { usd: flags.budgetUsd } : {}), ...(flags.budgetTokens !== undefined ? { tokens: flags.budgetTokens } : {}) },
      ...(flags.prices ? { prices: flags.prices } : {}),
    },
  };
}

/** The model flags a job stored in its job.json (checked again: the file may have been edited). */
export function storedLlmFlags(value: unknown): LlmFlags | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) throw new Error('expected an object');
  const v = value as Record<string, unknown>;
  const text = (key: string) => (v[key] === undefined ? undefined : String(v[key]));
  const prices = v.prices && typeof v.prices === 'object' ? Object.entries(v.prices as Record<string, { input?: unknown; output?: unknown }>).map(([model, p]) => `${model}=${String(p?.input)},${String(p?.output)}`) : [];
  const flags = parseLlmFlags({
    'llm-upstream': text('upstream'),
    'llm-key-env': text('keyEnv'),
    'llm-api': text('api'),
    'llm-model': text('model'),
    'llm-budget-usd': text('budgetUsd'),
    'llm-budget-tokens': text('budgetTokens'),
    'llm-price': prices,
  });
  if (!flags) throw new Error('no upstream');
  return flags;
}
