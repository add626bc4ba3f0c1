// The Anthropic Messages shape (`/v1/messages`), forwarded to an Anthropic upstream.
import * as z from 'zod';
import { eventJson } from './sse.ts';
import { isRecord, textChars, type ApiShape, type ReportedUsage } from './shape.ts';

const UsageSchema = z.looseObject({
  input_tokens: z.number().nonnegative().optional(),
  output_tokens: z.number().nonnegative().optional(),
  cache_creation_input_tokens: z.number().nonnegative().nullish(),
  cache_read_input_tokens: z.number().nonnegative().nullish(),
});

/** Input counts what was read from and written to the prompt cache too (priced as input). */
export function anthropicUsage(value: unknown): { input?: number; output?: number } | undefined {
  const usage = UsageSchema.safeParse(value);
  if (!usage.success) return undefined;
  const { input_tokens, output_tokens, cache_creation_input_tokens, cache_read_input_tokens } = usage.data;
  const input = input_tokens === undefined ? undefined : input_tokens + (cache_creation_input_tokens ?? 0) + (cache_read_input_tokens ?? 0);
  return { input, output: output_tokens };
}

export function anthropicError(status: number, code: string, message: string): unknown {
  const type = status === 401 ? 'authentication_error' : status === 402 ? 'billing_error' : status === 404 ? 'not_found_error' : status === 413 ? 'request_too_large' : status === 429 ? 'rate_limit_error' : status >= 500 ? 'api_error' : 'invalid_request_error';
  return { type: 'error', error: { type, message, code } };
}

export const messages: ApiShape = {
  api: 'messages',
  plan(request, upstream) {
    if (upstream.api === 'gemini') return { refused: "this run's model upstream speaks the Gemini API; send /v1/messages requests to /v1beta/models/{model}:generateContent instead" };
    if (upstream.api !== 'anthropic') return { refused: "this run's model upstream speaks the OpenAI API; send /v1/messages requests to /v1/chat/completions instead" };
    const body: Record<string, unknown> = { ...request };
    if (body.model === undefined && upstream.model) body.model = upstream.model;
    return { path: '/v1/messages', body, model: typeof body.model === 'string' ? body.model : null, stream: body.stream === true };
  },
  answer(json) {
    if (!isRecord(json)) return { outputChars: 0 };
    const usage = anthropicUsage(json.usage);
    const reported: ReportedUsage | undefined = usage?.input !== undefined && usage.output !== undefined ? { input: usage.input, output: usage.output } : undefined;
    return { usage: reported, outputChars: textChars(json.content) };
  },
  watch() {
    let input: number | undefined;
    let output: number | undefined;
    let outputChars = 0;
    return {
      reshapes: false,
      get outputChars() {
        return outputChars;
      },
      usage: () => (input === undefined && output === undefined ? undefined : { input: input ?? 0, output: output ?? 0 }),
      forward(event) {
        const json = eventJson(event);
        if (!isRecord(json)) return event.raw;
        if (json.type === 'content_block_delta') outputChars += textChars(json.delta);
        const usage = anthropicUsage(json.type === 'message_start' && isRecord(json.message) ? json.message.usage : json.usage);
        if (usage?.input !== undefined) input = usage.input;
        if (usage?.output !== undefined) output = usage.output;
        return event.raw;
      },
    };
  },
  error: anthropicError,
};
