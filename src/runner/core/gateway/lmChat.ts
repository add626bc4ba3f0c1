// OpenAI chat completions (`/v1/chat/completions`) to and from the LM API: system and developer
// messages, text, `tool_calls` and `tool` messages, function tools; the answer as a completion or
// as streamed chunks (with the usage chunk when the agent asks for it). Images, audio, files,
// structured output, n > 1 and a tool_choice naming one function are refused in OpenAI's error
// shape; custom (grammar) tools are left out of the tools offered, named in the run's line.
import { randomBytes } from 'node:crypto';
import { isRecord, openAiError } from './shape.ts';
import { cannot, joinText, type LmMessage, type LmOutPart, type LmRequest, type LmStreamWriter, lmTool, type LmTool, type LmTranslator, modelOptions, parseArguments, plainText, present, pushPart, readToolList } from './lmModel.ts';

const DROPPED_FIELDS = ['top_p', 'frequency_penalty', 'presence_penalty', 'seed', 'stop', 'logit_bias', 'logprobs', 'top_logprobs', 'reasoning_effort', 'verbosity', 'prediction', 'web_search_options'] as const;
const TEXT_PARTS = ['text', 'input_text', 'output_text'];

/** The function tools; the others (custom grammar tools) are left out, each named in `dropped`. */
function readTools(value: unknown, dropped: string[]): LmTool[] | { refused: string } {
  return readToolList(value, (tool) => {
    if (tool.type !== 'function') {
      dropped.push(`the ${String(tool.type)} tool${isRecord(tool.custom) ? ` '${String(tool.custom.name)}'` : ''}`);
      return [];
    }
    if (!isRecord(tool.function) || typeof tool.function.name !== 'string') return { refused: 'Belay gateway: each function tool needs a function with a name' };
    const fn = tool.function;
    const read = lmTool(fn.name as string, fn.description, fn.parameters);
    return 'refused' in read ? read : [read];
  });
}

export function chatId(): string {
  return `chatcmpl-${randomBytes(12).toString('hex')}`;
}

export const lmChat: LmTranslator = {
  read(body, route) {
    if (!Array.isArray(body.messages)) return { refused: 'Belay gateway: messages must be a list' };
    if (body.functions !== undefined || body.function_call !== undefined) return cannot('the legacy functions/function_call fields: send tools instead');
    if (typeof body.n === 'number' && body.n > 1) return cannot('n > 1 (one answer per request)');
    if (isRecord(body.response_format) && body.response_format.type !== 'text') return cannot(`response_format '${String(body.response_format.type)}' (structured output)`);
    if (Array.isArray(body.modalities) && body.modalities.some((m) => m !== 'text')) return cannot('audio output');
    const messages: LmMessage[] = [];
    for (const message of body.messages) {
      if (!isRecord(message)) return { refused: 'Belay gateway: each message must be an object' };
      const content = plainText(message.content, TEXT_PARTS.concat('refusal'));
      if ('other' in content) return cannot(`a '${content.other}' content part${/image|audio|file/.test(content.other) ? ' (images, audio and files)' : ''}`);
      const { role } = message;
      if (role === 'system' || role === 'developer' || role === 'user') {
        if (content.text) pushPart(messages, 'user', { type: 'text', text: content.text });
      } else if (role === 'assistant') {
        if (content.text) pushPart(messages, 'assistant', { type: 'text', text: content.text });
        for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
          if (!isRecord(call) || call.type !== 'function' || !isRecord(call.function) || typeof call.id !== 'string' || typeof call.function.name !== 'string') {
            return cannot(`an assistant tool call of type '${isRecord(call) ? String(call.type) : typeof call}': only function calls`);
          }
          const input = parseArguments(call.function.arguments);
          if (!input) return { refused: `Belay gateway: the arguments of tool call ${call.id} are not a JSON object` };
          pushPart(messages, 'assistant', { type: 'toolCall', callId: call.id, name: call.function.name, input });
        }
      } else if (role === 'tool') {
        if (typeof message.tool_call_id !== 'string') return { refused: 'Belay gateway: a tool message needs its tool_call_id' };
        pushPart(messages, 'user', { type: 'toolResult', callId: message.tool_call_id, text: content.text });
      } else return cannot(`a message with the role '${String(role)}'`);
    }
    const dropped: string[] = [];
    const tools = readTools(body.tools, dropped);
    if ('refused' in tools) return tools;
    let toolMode: 'auto' | 'required' = 'auto';
    let offered = tools;
    const choice = body.tool_choice;
    if (isRecord(choice)) return cannot(`tool_choice naming ${isRecord(choice.function) ? `one function ('${String(choice.function.name)}')` : `'${String(choice.type)}'`}: it can only require some tool`);
    if (choice === 'required') toolMode = 'required';
    else if (choice === 'none') offered = [];
    if (toolMode === 'required' && offered.length === 0) return { refused: 'Belay gateway: tool_choice requires a tool but the request offers none the LM API can take' };
    dropped.push(...present(body, DROPPED_FIELDS));
    if (body.parallel_tool_calls === false) dropped.push('parallel_tool_calls: false');
    const streamOptions = isRecord(body.stream_options) ? body.stream_options : {};
    return {
      model: typeof body.model === 'string' ? body.model : null,
      stream: route.stream || body.stream === true,
      messages,
      tools: offered,
      options: { toolMode, modelOptions: modelOptions(body.temperature, body.max_completion_tokens ?? body.max_tokens) },
      dropped,
      includeUsage: streamOptions.include_usage === true,
    };
  },

  whole(reply) {
    const parts = joinText(reply.parts);
    const text = parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
    const calls = parts.flatMap((p) => (p.type === 'toolCall' ? [toolCall(p)] : []));
    return {
      id: chatId(),
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: reply.model,
      choices: [{ index: 0, message: { role: 'assistant', content: text || null, ...(calls.length ? { tool_calls: calls } : {}), refusal: null }, finish_reason: reply.stop === 'tool_use' ? 'tool_calls' : 'stop', logprobs: null }],
      usage: { prompt_tokens: reply.usage.input, completion_tokens: reply.usage.output, total_tokens: reply.usage.input + reply.usage.output },
    };
  },

  streamWriter(model, request: LmRequest): LmStreamWriter {
    const id = chatId();
    const created = Math.floor(Date.now() / 1000);
    let calls = 0;
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices, ...extra })}\n\n`;
    const delta = (d: Record<string, unknown>, finish: string | null = null) => chunk([{ index: 0, delta: d, finish_reason: finish, logprobs: null }]);
    return {
      start: () => delta({ role: 'assistant', content: '' }),
      part(part: LmOutPart) {
        if (part.type === 'text') return delta({ content: part.text });
        return delta({ tool_calls: [{ index: calls++, ...toolCall(part) }] });
      },
      end(usage, stop) {
        let out = delta({}, stop === 'tool_use' ? 'tool_calls' : 'stop');
        if (request.includeUsage) out += chunk([], { usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output } });
        return `${out}data: [DONE]\n\n`;
      },
      fail: (message) => `data: ${JSON.stringify(openAiError(500, 'model_failed', message))}\n\n`,
    };
  },

  error: openAiError,
};

function toolCall(part: Extract<LmOutPart, { type: 'toolCall' }>): Record<string, unknown> {
  return { id: part.callId, type: 'function', function: { name: part.name, arguments: JSON.stringify(part.input) } };
}
