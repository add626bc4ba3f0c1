// What a model costs: USD per million input and output tokens, with defaults for common models.
// A model is found by its name as the agent sent it, without a provider prefix ("openai/gpt-4o"),
// with dots between digits read as dashes ("claude-3.5-sonnet" = "claude-3-5-sonnet"), and by the
// longest entry it starts with ("gpt-4o-2024-08-06" costs what "gpt-4o" costs).

export interface ModelPrice {
  /** USD per million input (prompt) tokens. */
  input: number;
  /** USD per million output (completion) tokens. */
  output: number;
}

/** Model name → price; entries given for a run are laid over the defaults. */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

/** List prices as published by the providers (USD per million tokens). */
export const DEFAULT_PRICES: PriceTable = {
  'gpt-3.5-turbo': { input: 0.5, output: 1.5 },
  'gpt-4': { input: 30, output: 60 },
  'gpt-4-turbo': { input: 10, output: 30 },
  'gpt-4o': { input: 2.5, output: 10 },
  'gpt-4o-mini': { input: 0.15, output: 0.6 },
  'gpt-4.1': { input: 2, output: 8 },
  'gpt-4.1-mini': { input: 0.4, output: 1.6 },
  'gpt-4.1-nano': { input: 0.1, output: 0.4 },
  'gpt-5': { input: 1.25, output: 10 },
  'gpt-5-mini': { input: 0.25, output: 2 },
  'gpt-5-nano': { input: 0.05, output: 0.4 },
  o1: { input: 15, output: 60 },
  'o1-mini': { input: 1.1, output: 4.4 },
  'o1-pro': { input: 150, output: 600 },
  o3: { input: 2, output: 8 },
  'o3-mini': { input: 1.1, output: 4.4 },
  'o3-pro': { input: 20, output: 80 },
  'o4-mini': { input: 1.1, output: 4.4 },
  'claude-3-haiku': { input: 0.25, output: 1.25 },
  'claude-3-5-haiku': { input: 0.8, output: 4 },
  'claude-haiku-4-5': { input: 1, output: 5 },
  'claude-3-sonnet': { input: 3, output: 15 },
  'claude-3-5-sonnet': { input: 3, output: 15 },
  'claude-3-7-sonnet': { input: 3, output: 15 },
  'claude-sonnet-4': { input: 3, output: 15 },
  'claude-sonnet-4-5': { input: 3, output: 15 },
  'claude-3-opus': { input: 15, output: 75 },
  'claude-opus-4': { input: 15, output: 75 },
  'claude-opus-4-1': { input: 15, output: 75 },
  'claude-opus-4-5': { input: 5, output: 25 },
  // Gemini: the standard tier's prompts up to 200k tokens (longer prompts cost more; thoughts are output).
  'gemini-2.0-flash': { input: 0.1, output: 0.4 },
  'gemini-2.5-flash-lite': { input: 0.1, output: 0.4 },
  'gemini-2.5-flash': { input: 0.3, output: 2.5 },
  'gemini-2.5-pro': { input: 1.25, output: 10 },
  'gemini-3-pro-preview': { input: 2, output: 12 },
};

/** The form names are compared in. */
export function normaliseModel(model: string): string {
  const bare = model.slice(model.lastIndexOf('/') + 1).trim().toLowerCase();
  return bare.replace(/(\d)\.(?=\d)/g, '$1-');
}

/** A run's table: the defaults with its own entries laid over them, keyed by normalised name. */
export function priceTable(overrides?: PriceTable): ReadonlyMap<string, ModelPrice> {
  const table = new Map<string, ModelPrice>();
  for (const [name, price] of Object.entries(DEFAULT_PRICES)) table.set(normaliseModel(name), price);
  for (const [name, price] of Object.entries(overrides ?? {})) table.set(normaliseModel(name), price);
  return table;
}

/** The price of `model`: an exact entry, else the longest entry it starts with (at a dash). */
export function findPrice(table: ReadonlyMap<string, ModelPrice>, model: string | null): ModelPrice | undefined {
  if (!model) return undefined;
  const name = normaliseModel(model);
  const exact = table.get(name);
  if (exact) return exact;
  let best: string | undefined;
  for (const key of table.keys()) {
    if (name.startsWith(`${key}-`) && (!best || key.length > best.length)) best = key;
  }
  return best === undefined ? undefined : table.get(best);
}

/** USD for these tokens at this price. */
export function costOf(price: ModelPrice, inputTokens: number, outputTokens: number): number {
  return (inputTokens * price.input + outputTokens * price.output) / 1_000_000;
}
