// Term Challenge's LLM proxy (`$LLM_PROXY_URL/llm/proxy`, and `/llm/proxy/stream`), as the term_sdk
// LLM client calls it in evaluation mode: the body names messages, model, max_tokens,
// temperature, task and agent, with `extra_params` merged into the provider's request; the answer
// is `{success, content, model, usage, cost_usd, error, tool_calls}`; the stream is OpenAI chat
// chunks ending in `[DONE]`; errors are `{success: false, error}`, and a spent budget says
// `cost_limit_exceeded`, which the client turns into its fatal CostLimitExceeded.
// On an Anthropic upstream the request, the answer and the stream are translated to and from the
// Messages API (text and tool calls; images and other content parts are not).
import * as z from 'zod';
import { anthropicUsage } from './anthropic.ts';
import { chatUsage, chatWatcher } from './openai.ts';
import { eventJson } from './sse.ts';
import { isRecord, textChars, type ApiShape, type ForwardPlan, type StreamWatcher } from './shape.ts';

export const ProxyRequestSchema = z.looseObject({
  agent_hash: z.string().nullish(),
  messages: z.array(z.unknown()).default([]),
  model: z.string().nullish(),
  max_tokens: z.number().int().positive().nullish(),
  temperature: z.number().nullish(),
  task_id: z.string().nullish(),
  extra_params: z.record(z.string(), z.unknown()).nullish(),
  raw_request: z.boolean().nullish(),
});

/** The provider body the real proxy builds: model, messages, temperature, max_tokens, then extra_params over them. */
function openAiBody(request: z.infer<typeof ProxyRequestSchema>, model: string | undefined): Record<string, unknown> {
  const body: Record<string, unknown> = { messages: request.messages };
  if (model) body.model = model;
  if (request.temperature !== null && request.temperature !== undefined) body.temperature = request.temperature;
  const extra = request.extra_params ?? {};
  if (request.max_tokens && !('max_completion_tokens' in extra)) body.max_tokens = request.max_tokens;
  return { ...body, ...extra };
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : '')).join('');
  return '';
}

/** OpenAI chat messages and tools in the Messages API's words. */
function anthropicBody(openAi: Record<string, unknown>): Record<string, unknown> {
  const system: string[] = [];
  const turns: { role: 'user' | 'assistant'; content: unknown[] }[] = [];
  const push = (role: 'user' | 'assistant', block: unknown) => {
    const last = turns.at(-1);
    if (last?.role === role) last.content.push(block);
    else turns.push({ role, content: [block] });
  };
  for (const message of Array.isArray(openAi.messages) ? openAi.messages : []) {
    if (!isRecord(message)) continue;
    const text = textOf(message.content);
    if (message.role === 'system' || message.role === 'developer') system.push(text);
    else if (message.role === 'tool') push('user', { type: 'tool_result', tool_use_id: String(message.tool_call_id ?? ''), content: text });
    else if (message.role === 'assistant') {
      if (text) push('assistant', { type: 'text', text });
      for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
        if (!isRecord(call) || !isRecord(call.function)) continue;
        let input: unknown = {};
        try {
          input = JSON.parse(String(call.function.arguments ?? '{}'));
        } catch {
          input = {};
        }
        push('assistant', { type: 'tool_use', id: String(call.id ?? ''), name: String(call.function.name ?? ''), input });
      }
    } else push('user', { type: 'text', text });
  }
  const body: Record<string, unknown> = { model: openAi.model, messages: turns, max_tokens: openAi.max_tokens ?? openAi.max_completion_tokens ?? 4096 };
  if (system.length) body.system = system.join('\n\n');
  if (openAi.temperature !== undefined) body.temperature = openAi.temperature;
  if (Array.isArray(openAi.tools)) {
    body.tools = openAi.tools.flatMap((tool) =>
      isRecord(tool) && isRecord(tool.function) ? [{ name: tool.function.name, description: tool.function.description, input_schema: tool.function.parameters ?? { type: 'object' } }] : [],
    );
  }
  if (openAi.stream === true) body.stream = true;
  return body;
}

/** Anthropic stream events as the OpenAI chat chunks the term_sdk client reads (text and tool calls). */
function anthropicAsChatWatcher(): StreamWatcher {
  let input: number | undefined;
  let output: number | undefined;
  let outputChars = 0;
  let toolCalls = 0;
  /** Anthropic content block index → OpenAI tool call index. */
  const toolIndex = new Map<number, number>();
  const chunk = (choice: Record<string, unknown>) => `data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, ...choice }] })}\n\n`;
  return {
    reshapes: true,
    get outputChars() {
      return outputChars;
    },
    usage: () => (input === undefined && output === undefined ? undefined : { input: input ?? 0, output: output ?? 0 }),
    forward(event) {
      const json = eventJson(event);
      if (!isRecord(json)) return '';
      const usage = anthropicUsage(json.type === 'message_start' && isRecord(json.message) ? json.message.usage : json.usage);
      if (usage?.input !== undefined) input = usage.input;
      if (usage?.output !== undefined) output = usage.output;
      if (json.type === 'content_block_start' && isRecord(json.content_block) && json.content_block.type === 'tool_use') {
        const call = { index: toolCalls++, id: json.content_block.id, type: 'function', function: { name: json.content_block.name, arguments: '' } };
        toolIndex.set(Number(json.index), call.index);
        return chunk({ delta: { tool_calls: [call] } });
      }
      if (json.type === 'content_block_delta' && isRecord(json.delta)) {
        outputChars += textChars(json.delta);
        if (typeof json.delta.text === 'string') return chunk({ delta: { content: json.delta.text } });
        const index = toolIndex.get(Number(json.index));
        if (typeof json.delta.partial_json === 'string' && index !== undefined) return chunk({ delta: { tool_calls: [{ index, function: { arguments: json.delta.partial_json } }] } });
      }
      if (json.type === 'message_delta' && isRecord(json.delta) && json.delta.stop_reason) return chunk({ delta: {}, finish_reason: json.delta.stop_reason === 'tool_use' ? 'tool_calls' : 'stop' });
      if (json.type === 'message_stop') return 'data: [DONE]\n\n';
      if (json.type === 'error') return `data: ${JSON.stringify({ error: json.error })}\n\n`;
      return '';
    },
  };
}

function errorText(text: string): string {
  try {
    const json: unknown = JSON.parse(text);
    if (isRecord(json)) {
      if (isRecord(json.error) && typeof json.error.message === 'string') return json.error.message;
      if (typeof json.error === 'string') return json.error;
      if (typeof json.message === 'string') return json.message;
    }
  } catch {
    // not JSON: the text itself
  }
  return text.slice(0, 500);
}

export const proxy: ApiShape = {
  api: 'proxy',
  plan(raw, upstream, { forceStream }): ForwardPlan | { refused: string } {
    if (upstream.api === 'gemini') return { refused: "this run's model upstream speaks the Gemini API, which the Term Challenge proxy route does not translate to; give the run an OpenAI-compatible or Anthropic upstream" };
    const parsed = ProxyRequestSchema.safeParse(raw);
    if (!parsed.success) return { refused: `the /llm/proxy request is malformed: ${parsed.error.issues[0]?.message ?? 'invalid'}` };
    const model = parsed.data.model ?? upstream.model;
    const body = openAiBody(parsed.data, model ?? undefined);
    if (forceStream) body.stream = true;
    const stream = body.stream === true;
    if (upstream.api === 'anthropic') return { path: '/v1/messages', body: anthropicBody(body), model: model ?? null, stream };
    if (stream) body.stream_options = { ...(isRecord(body.stream_options) ? body.stream_options : {}), include_usage: true };
    return { path: '/chat/completions', body, model: model ?? null, stream, hideUsageChunk: stream };
  },
  answer(json) {
    if (!isRecord(json)) return { outputChars: 0 };
    if (json.type === 'message') {
      const usage = anthropicUsage(json.usage);
      return { usage: usage?.input !== undefined && usage.output !== undefined ? { input: usage.input, output: usage.output } : undefined, outputChars: textChars(json.content) };
    }
    return { usage: chatUsage(json.usage), outputChars: textChars(json.choices) };
  },
  watch(plan) {
    return plan.path === '/v1/messages' ? anthropicAsChatWatcher() : chatWatcher(true);
  },
  reply(json, costUsd) {
    if (!isRecord(json)) return { success: false, error: 'the model upstream answered with no JSON object' };
    if (json.type === 'message' && Array.isArray(json.content)) {
      const blocks = json.content.filter(isRecord);
      const usage = anthropicUsage(json.usage);
      const toolCalls = blocks
        .filter((block) => block.type === 'tool_use')
        .map((block) => ({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } }));
      const prompt = usage?.input ?? 0;
      const completion = usage?.output ?? 0;
      return {
        success: true,
        content: blocks.map((block) => (block.type === 'text' && typeof block.text === 'string' ? block.text : '')).join(''),
        model: json.model ?? null,
        usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
        cost_usd: costUsd,
        error: null,
        ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
      };
    }
    const first = Array.isArray(json.choices) && isRecord(json.choices[0]) ? json.choices[0] : {};
    const message = isRecord(first.message) ? first.message : {};
    const usage = chatUsage(json.usage);
    const details = isRecord(json.usage) && json.usage.prompt_tokens_details ? { prompt_tokens_details: json.usage.prompt_tokens_details } : {};
    return {
      success: true,
      content: textOf(message.content),
      model: json.model ?? null,
      usage: { prompt_tokens: usage?.input ?? 0, completion_tokens: usage?.output ?? 0, total_tokens: (usage?.input ?? 0) + (usage?.output ?? 0), ...details },
      cost_usd: costUsd,
      error: null,
      ...(Array.isArray(message.tool_calls) && message.tool_calls.length ? { tool_calls: message.tool_calls } : {}),
    };
  },
  upstreamError(status, text) {
    return { success: false, error: errorText(text), status_code: status };
  },
  error(status, code, message) {
    return { success: false, error: `${code}: ${message}`, status_code: status };
  },
};
