// The OpenAI shapes: chat completions (`/v1/chat/completions`) and the Responses API
// (`/v1/responses`), forwarded to an OpenAI-compatible upstream (OpenAI, OpenRouter, vLLM, …).
//
// Streamed chat completions report usage only when asked (`stream_options.include_usage`). The
// gateway always asks. When the agent did not, the one extra chunk that carries the usage (its
// `choices` is empty) is held back, so the agent sees the stream it asked for; the other chunks
// then carry `"usage": null`, which OpenAI's own clients accept.
import * as z from 'zod';
import { eventJson, type SseEvent } from './sse.ts';
import { isRecord, openAiError, OpenAiUsageSchema, textChars, type ApiShape, type ForwardPlan, type ReportedUsage, type StreamWatcher } from './shape.ts';

function refusedElsewhere(path: string, api: 'anthropic' | 'gemini'): { refused: string } {
  return api === 'anthropic'
    ? { refused: `this run's model upstream speaks the Anthropic Messages API; send ${path} requests to /v1/messages instead` }
    : { refused: `this run's model upstream speaks the Gemini API; send ${path} requests to /v1beta/models/{model}:generateContent instead` };
}

export function chatUsage(value: unknown): ReportedUsage | undefined {
  const usage = OpenAiUsageSchema.safeParse(value);
  if (!usage.success) return undefined;
  const { prompt_tokens: input, completion_tokens: output, cost } = usage.data;
  return cost === undefined ? { input, output } : { input, output, costUsd: cost };
}

/** Watches a chat completions stream; holds back the usage chunk when `hideUsage`. */
export function chatWatcher(hideUsage: boolean): StreamWatcher {
  let usage: ReportedUsage | undefined;
  let outputChars = 0;
  return {
    reshapes: hideUsage,
    get outputChars() {
      return outputChars;
    },
    usage: () => usage,
    forward(event: SseEvent) {
      const json = eventJson(event);
      if (!isRecord(json)) return event.raw;
      outputChars += textChars(json.choices);
      const reported = json.usage ? chatUsage(json.usage) : undefined;
      if (reported) usage = reported;
      if (hideUsage && reported && Array.isArray(json.choices) && json.choices.length === 0) return '';
      return event.raw;
    },
  };
}

export const chat: ApiShape = {
  api: 'chat',
  plan(request, upstream, { forceStream }): ForwardPlan | { refused: string } {
    if (upstream.api !== 'openai') return refusedElsewhere('/v1/chat/completions', upstream.api);
    const body: Record<string, unknown> = { ...request };
    if (body.model === undefined && upstream.model) body.model = upstream.model;
    const stream = forceStream || body.stream === true;
    const options = isRecord(body.stream_options) ? body.stream_options : {};
    const agentAsked = options.include_usage === true;
    if (stream) {
      body.stream = true;
      body.stream_options = { ...options, include_usage: true };
    }
    return { path: '/chat/completions', body, model: typeof body.model === 'string' ? body.model : null, stream, hideUsageChunk: stream && !agentAsked };
  },
  answer(json) {
    return { usage: isRecord(json) ? chatUsage(json.usage) : undefined, outputChars: isRecord(json) ? textChars(json.choices) : 0 };
  },
  watch: (plan) => chatWatcher(plan.hideUsageChunk === true),
  error: openAiError,
};

const ResponsesUsageSchema = z.looseObject({ input_tokens: z.number().nonnegative(), output_tokens: z.number().nonnegative() });

function responsesUsage(value: unknown): ReportedUsage | undefined {
  const usage = ResponsesUsageSchema.safeParse(value);
  return usage.success ? { input: usage.data.input_tokens, output: usage.data.output_tokens } : undefined;
}

export const responses: ApiShape = {
  api: 'responses',
  plan(request, upstream) {
    if (upstream.api !== 'openai') return refusedElsewhere('/v1/responses', upstream.api);
    const body: Record<string, unknown> = { ...request };
    if (body.model === undefined && upstream.model) body.model = upstream.model;
    return { path: '/responses', body, model: typeof body.model === 'string' ? body.model : null, stream: body.stream === true };
  },
  answer(json) {
    return { usage: isRecord(json) ? responsesUsage(json.usage) : undefined, outputChars: isRecord(json) ? textChars(json.output) : 0 };
  },
  watch() {
    let usage: ReportedUsage | undefined;
    let outputChars = 0;
    return {
      reshapes: false,
      get outputChars() {
        return outputChars;
      },
      usage: () => usage,
      forward(event) {
        const json = eventJson(event);
        if (!isRecord(json)) return event.raw;
        const type = typeof json.type === 'string' ? json.type : '';
        if (type.endsWith('.delta') && typeof json.delta === 'string') outputChars += json.delta.length;
        if (isRecord(json.response) && json.response.usage) usage = responsesUsage(json.response.usage) ?? usage;
        return event.raw;
      },
    };
  },
  error: openAiError,
};
