// Which model API a run may call through Belay's gateway, from the editor's settings
// (`belay.runner.llm`, an agent's own `llm`, `belay.runner.llmPrices`). The real key is named
// here (a SecretStorage name), never held: it is read when the run starts.
import * as z from 'zod';
import { isSecretName, SECRET_NAME_RULE } from './secrets.ts';

export const LLM_APIS = ['openai', 'anthropic', 'gemini'] as const;

/** The `upstream` that serves runs from a model VS Code offers (its language-model API) instead of a URL. */
export const VSCODE_LM_UPSTREAM = 'vscode-lm';
export type LlmApi = (typeof LLM_APIS)[number];

export const LlmSettingSchema = z
  .object({
    upstream: z
      .string()
      .trim()
      .refine((v) => v === '' || v === VSCODE_LM_UPSTREAM || isHttpUrl(v), `must be an http:// or https:// URL, or "${VSCODE_LM_UPSTREAM}"`)
      .optional(),
    vscodeModel: z
      .string()
      .trim()
      .refine((v) => v === '' || /^[^/\s]+\/\S+$/.test(v), 'must be "vendor/id", as Belay: Choose a VS Code Model for Runs… writes it')
      .optional(),
    api: z.enum(LLM_APIS).optional(),
    keySecret: z
      .string()
      .trim()
      .refine((v) => v === '' || isSecretName(v), `a secret name (${SECRET_NAME_RULE})`)
      .optional(),
    /** The model asked for when a request names none, and the one an installed CLI starts with. */
    model: z.string().trim().optional(),
    budgetUsd: z.number().positive().finite().optional(),
    budgetTokens: z.number().int().positive().optional(),
  })
  .strict();
export type LlmSetting = z.infer<typeof LlmSettingSchema>;

export const LlmPricesSchema = z.record(z.string().min(1), z.object({ input: z.number().min(0).finite(), output: z.number().min(0).finite() }).strict());
export type LlmPrices = z.infer<typeof LlmPricesSchema>;

/** A run's model access, decided: where to, which secret holds the key, the budget. */
export type LlmChoice = HttpLlmChoice | VscodeLlmChoice;

/** A model VS Code offers (`vscode.lm`), by `vendor/id`: no URL, no key. */
export interface VscodeLlmChoice {
  vscodeModel: string;
  budget: { usd?: number; tokens?: number };
}

export interface HttpLlmChoice {
  baseUrl: string;
  api: LlmApi;
  /** The SecretStorage name of the real key; none for an upstream that needs no key (a local server). */
  keySecret: string | undefined;
  /** The model for requests that name none (and an installed CLI's). */
  model?: string;
  budget: { usd?: number; tokens?: number };
}

export function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}

/**
 * The agent's own `llm` over the default setting, field by field; undefined when neither names an
 * upstream (the run then reaches no model). Bad settings are one line naming the field.
 */
export function chooseLlm(agentSetting: unknown, defaultSetting: unknown, owner: string): LlmChoice | undefined {
  const own = parseSetting(agentSetting, `${owner}: llm`);
  const fallback = parseSetting(defaultSetting, 'belay.runner.llm');
  const merged: LlmSetting = { ...fallback, ...stripEmpty(own) };
  const baseUrl = merged.upstream?.trim();
  if (!baseUrl) return undefined;
  const budget = {
    ...(merged.budgetUsd !== undefined ? { usd: merged.budgetUsd } : {}),
    ...(merged.budgetTokens !== undefined ? { tokens: merged.budgetTokens } : {}),
  };
  if (baseUrl === VSCODE_LM_UPSTREAM) {
    const vscodeModel = merged.vscodeModel?.trim();
    if (!vscodeModel) throw new Error(`${own.upstream?.trim() ? `${owner}: llm` : 'belay.runner.llm'}: upstream "${VSCODE_LM_UPSTREAM}" needs a vscodeModel (run Belay: Choose a VS Code Model for Runs…)`);
    return { vscodeModel, budget };
  }
  return {
    baseUrl,
    api: merged.api ?? 'openai',
    keySecret: merged.keySecret?.trim() || undefined,
    ...(merged.model?.trim() ? { model: merged.model.trim() } : {}),
    budget,
  };
}

/** `belay.runner.llmPrices`, checked; a bad entry is one line naming it. */
export function parsePrices(value: unknown): LlmPrices {
  if (value === undefined || value === null) return {};
  const parsed = LlmPricesSchema.safeParse(value);
  if (!parsed.success) throw new Error(`belay.runner.llmPrices: ${issues(parsed.error)}`);
  return parsed.data;
}

function parseSetting(value: unknown, where: string): LlmSetting {
  if (value === undefined || value === null) return {};
  const parsed = LlmSettingSchema.safeParse(value);
  if (!parsed.success) throw new Error(`${where}: ${issues(parsed.error)}`);
  return parsed.data;
}

function stripEmpty(setting: LlmSetting): LlmSetting {
  return Object.fromEntries(Object.entries(setting).filter(([, v]) => v !== undefined && v !== '')) as LlmSetting;
}

function issues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || 'value'}: ${i.message}`).join('; ');
}
