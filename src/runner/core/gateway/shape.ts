// What each API shape the gateway speaks tells the forwarding code: where a request goes on the
// upstream, what it sends there, how usage is read from an answer or a stream, and how an error
// looks in that API's own words. One module per shape implements it (openai, anthropic, gemini,
// proxy).
import * as z from 'zod';
import type { SseEvent } from './sse.ts';

export type ApiName = 'chat' | 'responses' | 'messages' | 'gemini' | 'proxy';
export type UpstreamApi = 'openai' | 'anthropic' | 'gemini';

/** What a request's path says when the API puts the model and the method there (Gemini). */
export interface PathRoute {
  version: 'v1beta' | 'v1' | 'v1alpha';
  model: string;
  method: 'generateContent' | 'streamGenerateContent';
  /** Streamed as server-sent events (`?alt=sse`). */
  sse: boolean;
}

/** Tokens as the upstream reported them (and its own cost, when it reports one, as OpenRouter does). */
export interface ReportedUsage {
  input: number;
  output: number;
  costUsd?: number;
}

export interface ForwardPlan {
  /** Appended to the upstream's base URL. */
  path: string;
  /** The JSON body sent upstream. */
  body: Record<string, unknown>;
  model: string | null;
  stream: boolean;
  /** A streamed chat completion whose usage chunk the gateway asked for and the agent did not. */
  hideUsageChunk?: boolean;
}

/** Reads a stream on the side; may reshape or hold back an event (see each shape). */
export interface StreamWatcher {
  /** The text the agent gets for this event ('' holds it back). */
  forward(event: SseEvent): string;
  /** True when events are forwarded as `forward` returns them, false when raw bytes pass as they come. */
  readonly reshapes: boolean;
  /** Characters of generated text seen so far (the estimate when no usage comes). */
  readonly outputChars: number;
  usage(): ReportedUsage | undefined;
}

export interface ApiShape {
  readonly api: ApiName;
  /** What goes upstream for this request, or the reason this upstream cannot serve it. */
  plan(request: Record<string, unknown>, upstream: { api: UpstreamApi; model?: string }, options: { forceStream: boolean; route?: PathRoute }): ForwardPlan | { refused: string };
  /** Usage and generated characters of a whole (non-streaming) answer. */
  answer(json: unknown): { usage?: ReportedUsage; outputChars: number };
  watch(plan: ForwardPlan): StreamWatcher;
  /** A body in this API's error shape. */
  error(status: number, code: string, message: string): unknown;
  /** The agent's body for a successful answer, when this shape's answer is not the upstream's own. */
  reply?(json: unknown, costUsd: number): unknown;
  /** The agent's body for an upstream error, when this shape words errors its own way. */
  upstreamError?(status: number, text: string): unknown;
}

/** The request fields every shape looks at; everything else passes through untouched. */
export const RequestSchema = z.looseObject({
  model: z.string().optional(),
  stream: z.boolean().optional(),
});

export const OpenAiUsageSchema = z.looseObject({
  prompt_tokens: z.number().nonnegative(),
  completion_tokens: z.number().nonnegative(),
  cost: z.number().nonnegative().optional(),
});

/** Keys under which generated text travels in every shape's answers. */
const TEXT_KEYS = new Set(['content', 'text', 'arguments', 'partial_json', 'thinking', 'refusal', 'reasoning', 'reasoning_content', 'input', 'delta']);

/** Characters of generated text in a JSON value (strings under TEXT_KEYS, objects as JSON). */
export function textChars(value: unknown, underTextKey = false, depth = 0): number {
  if (depth > 64) return 0;
  if (typeof value === 'string') return underTextKey ? value.length : 0;
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + textChars(item, underTextKey, depth + 1), 0);
  if (value && typeof value === 'object') {
    let sum = 0;
    for (const [key, item] of Object.entries(value)) {
      if (key === 'input' && item && typeof item === 'object') sum += JSON.stringify(item).length;
      else sum += textChars(item, TEXT_KEYS.has(key), depth + 1);
    }
    return sum;
  }
  return 0;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The OpenAI error shape (chat completions, responses, models). */
export function openAiError(status: number, code: string, message: string): unknown {
  const type = status === 401 ? 'authentication_error' : status === 402 ? 'insufficient_quota' : status === 429 ? 'rate_limit_error' : status >= 500 ? 'api_error' : 'invalid_request_error';
  return { error: { message, type, param: null, code } };
}
