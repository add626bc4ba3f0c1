// The OpenAI Responses API (`/v1/responses`) to and from the LM API: instructions, input messages,
// `function_call` and `function_call_output` items, function tools; the answer as a response or as
// the streamed `response.*` events. Images, files, previous_response_id (the gateway keeps no
// responses), structured output and a tool_choice naming one function are refused in OpenAI's
// error shape; built-in (web search…), namespace and custom (grammar) tools are left out of the
// tools offered (Codex offers some), named in the run's line.
import { randomBytes } from 'node:crypto';
import { isRecord, openAiError } from './shape.ts';
import { cannot, joinText, type LmMessage, type LmOutPart, type LmReply, type LmRequest, type LmStreamWriter, lmTool, type LmTool, type LmTranslator, type LmUsage, modelOptions, parseArguments, plainText, present, pushPart, readToolList } from './lmModel.ts';

const DROPPED_FIELDS = ['top_p', 'reasoning', 'top_logprobs', 'max_tool_calls'] as const;
const TEXT_PARTS = ['input_text', 'output_text', 'text', 'refusal'];

/** The function tools; the others (built-in, namespace, custom grammar tools) are left out, each named in `dropped`. */
function readTools(value: unknown, dropped: string[]): LmTool[] | { refused: string } {
  return readToolList(value, (tool) => {
    if (tool.type !== 'function') {
      dropped.push(`the ${String(tool.type)} tool${typeof tool.name === 'string' ? ` '${tool.name}'` : ''}`);
      return [];
    }
    if (typeof tool.name !== 'string') return { refused: 'Belay gateway: each function tool needs a name' };
    const read = lmTool(tool.name, tool.description, tool.parameters);
    return 'refused' in read ? read : [read];
  });
}

const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;

function outputItem(part: LmOutPart, id: string): Record<string, unknown> {
  if (part.type === 'text') return { type: 'message', id, status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: part.text, annotations: [] }] };
  return { type: 'function_call', id, call_id: part.callId, name: part.name, arguments: JSON.stringify(part.input), status: 'completed' };
}

function usageOf(usage: LmUsage): Record<string, unknown> {
  return { input_tokens: usage.input, input_tokens_details: { cached_tokens: 0 }, output_tokens: usage.output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: usage.input + usage.output };
}

function response(id: string, model: string, status: string, output: unknown[], usage: LmUsage | null, created: number): Record<string, unknown> {
  return { id, object: 'response', created_at: created, status, model, output, usage: usage ? usageOf(usage) : null, error: null, incomplete_details: null };
}

export const lmResponses: LmTranslator = {
  read(body) {
    if (body.previous_response_id !== undefined && body.previous_response_id !== null) return cannot('previous_response_id (the gateway keeps no responses: send the whole input)');
    if (isRecord(body.text) && isRecord(body.text.format) && body.text.format.type !== 'text') return cannot(`text.format '${String(body.text.format.type)}' (structured output)`);
    const messages: LmMessage[] = [];
    const dropped: string[] = [];
    if (typeof body.instructions === 'string' && body.instructions) pushPart(messages, 'user', { type: 'text', text: body.instructions });
    const items = typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input }] : body.input;
    if (!Array.isArray(items)) return { refused: 'Belay gateway: input must be a string or a list of items' };
    for (const item of items) {
      if (!isRecord(item)) return { refused: 'Belay gateway: each input item must be an object' };
      const type = item.type ?? 'message';
      if (type === 'message') {
        const content = plainText(item.content, TEXT_PARTS);
        if ('other' in content) return cannot(`an '${content.other}' content part${/image|file|audio/.test(content.other) ? ' (images, files and audio)' : ''}`);
        if (!content.text) continue;
        if (item.role === 'assistant') pushPart(messages, 'assistant', { type: 'text', text: content.text });
        else if (item.role === 'user' || item.role === 'system' || item.role === 'developer') pushPart(messages, 'user', { type: 'text', text: content.text });
        else return cannot(`a message with the role '${String(item.role)}'`);
      } else if (type === 'function_call') {
        const input = parseArguments(item.arguments);
        if (!input || typeof item.call_id !== 'string' || typeof item.name !== 'string') return { refused: 'Belay gateway: a function_call item needs a call_id, a name and arguments that are a JSON object' };
        pushPart(messages, 'assistant', { type: 'toolCall', callId: item.call_id, name: item.name, input });
      } else if (type === 'function_call_output') {
        const output = plainText(item.output, TEXT_PARTS);
        if ('other' in output) return cannot(`a function_call_output holding an '${output.other}' part (text only)`);
        if (typeof item.call_id !== 'string') return { refused: 'Belay gateway: a function_call_output item needs its call_id' };
        pushPart(messages, 'user', { type: 'toolResult', callId: item.call_id, text: output.text });
      } else if (type === 'reasoning') {
        if (!dropped.includes('earlier reasoning items')) dropped.push('earlier reasoning items');
      } else return cannot(`an input item of type '${String(type)}'`);
    }
    const tools = readTools(body.tools, dropped);
    if ('refused' in tools) return tools;
    let toolMode: 'auto' | 'required' = 'auto';
    let offered = tools;
    const choice = body.tool_choice;
    if (isRecord(choice)) return cannot(`tool_choice naming ${typeof choice.name === 'string' ? `one function ('${choice.name}')` : `'${String(choice.type)}'`}: it can only require some tool`);
    if (choice === 'required') toolMode = 'required';
    else if (choice === 'none') offered = [];
    if (toolMode === 'required' && offered.length === 0) return { refused: 'Belay gateway: tool_choice requires a tool but the request offers none the LM API can take' };
    dropped.push(...present(body, DROPPED_FIELDS));
    if (body.parallel_tool_calls === false) dropped.push('parallel_tool_calls: false');
    return {
      model: typeof body.model === 'string' ? body.model : null,
      stream: body.stream === true,
      messages,
      tools: offered,
      options: { toolMode, modelOptions: modelOptions(body.temperature, body.max_output_tokens) },
      dropped,
    };
  },

  whole(reply: LmReply) {
    const output = joinText(reply.parts).map((part) => outputItem(part, newId(part.type === 'text' ? 'msg' : 'fc')));
    const text = reply.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
    return { ...response(newId('resp'), reply.model, 'completed', output, reply.usage, Math.floor(Date.now() / 1000)), output_text: text };
  },

  streamWriter(model, _request: LmRequest): LmStreamWriter {
    const id = newId('resp');
    const created = Math.floor(Date.now() / 1000);
    let sequence = 0;
    const output: Record<string, unknown>[] = [];
    /** The message item text is going into, while text keeps coming. */
    let open: { id: string; index: number; text: string } | undefined;
    const event = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...data })}\n\n`;
    const close = () => {
      if (!open) return '';
      const { id: itemId, index, text } = open;
      open = undefined;
      const item = outputItem({ type: 'text', text }, itemId);
      output.push(item);
      const part = { type: 'output_text', text, annotations: [] };
      return (
        event('response.output_text.done', { item_id: itemId, output_index: index, content_index: 0, text }) +
        event('response.content_part.done', { item_id: itemId, output_index: index, content_index: 0, part }) +
        event('response.output_item.done', { output_index: index, item })
      );
    };
    return {
      start: () => event('response.created', { response: response(id, model, 'in_progress', [], null, created) }) + event('response.in_progress', { response: response(id, model, 'in_progress', [], null, created) }),
      part(part) {
        if (part.type === 'text') {
          let out = '';
          if (!open) {
            open = { id: newId('msg'), index: output.length, text: '' };
            out += event('response.output_item.added', { output_index: open.index, item: { type: 'message', id: open.id, status: 'in_progress', role: 'assistant', content: [] } });
            out += event('response.content_part.added', { item_id: open.id, output_index: open.index, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
          }
          open.text += part.text;
          return out + event('response.output_text.delta', { item_id: open.id, output_index: open.index, content_index: 0, delta: part.text });
        }
        let out = close();
        const itemId = newId('fc');
        const index = output.length;
        const args = JSON.stringify(part.input);
        const item = outputItem(part, itemId);
        output.push(item);
        out += event('response.output_item.added', { output_index: index, item: { ...item, arguments: '', status: 'in_progress' } });
        out += event('response.function_call_arguments.delta', { item_id: itemId, output_index: index, delta: args });
        out += event('response.function_call_arguments.done', { item_id: itemId, output_index: index, arguments: args });
        return out + event('response.output_item.done', { output_index: index, item });
      },
      end(usage) {
        return close() + event('response.completed', { response: response(id, model, 'completed', output, usage, created) });
      },
      fail(message) {
        return event('response.failed', { response: { ...response(id, model, 'failed', output, null, created), error: { code: 'server_error', message } } });
      },
    };
  },

  error: openAiError,
};
