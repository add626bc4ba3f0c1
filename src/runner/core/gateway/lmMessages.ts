// Anthropic Messages (`/v1/messages`) to and from the LM API: system prompts, text, `tool_use` and
// `tool_result` blocks, custom tools; the answer as a message or as the streamed
// `message_start` / `content_block_*` / `message_delta` / `message_stop` events. Images,
// documents and a tool_choice naming one tool are refused in Anthropic's error shape; server tools
// (web search, code execution…) are left out of the tools offered, named in the run's line.
import { randomBytes } from 'node:crypto';
import { anthropicError } from './anthropic.ts';
import { isRecord } from './shape.ts';
import { cannot, joinText, lmTool, modelOptions, parseArguments, present, pushPart, type LmMessage, type LmRequest, type LmStreamWriter, type LmTool, type LmTranslator } from './lmModel.ts';

/** Fields that change what the model does and that the LM API has no words for. */
const DROPPED_FIELDS = ['top_p', 'top_k', 'stop_sequences', 'thinking', 'context_management', 'mcp_servers', 'container'] as const;

function sse(type: string, data: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}

/** The text of a tool_result's content (a string or text blocks); undefined when it holds anything else. */
function resultText(content: unknown): string | { other: string } {
  if (typeof content === 'string') return content;
  if (content === undefined || content === null) return '';
  if (!Array.isArray(content)) return { other: typeof content };
  const texts: string[] = [];
  for (const block of content) {
    if (isRecord(block) && block.type === 'text' && typeof block.text === 'string') texts.push(block.text);
    else return { other: isRecord(block) ? String(block.type) : typeof block };
  }
  return texts.join('');
}

/** The tools the LM API can take; the others (server tools) are left out, each named in `dropped`. */
function readTools(value: unknown, dropped: string[]): LmTool[] | { refused: string } {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) return { refused: 'Belay gateway: tools must be a list' };
  const tools: LmTool[] = [];
  for (const tool of value) {
    if (!isRecord(tool) || typeof tool.name !== 'string') return { refused: 'Belay gateway: each tool needs a name' };
    if (tool.type !== undefined && tool.type !== 'custom') {
      dropped.push(`the server tool '${tool.name}' (${String(tool.type)})`);
      continue;
    }
    const read = lmTool(tool.name, tool.description, tool.input_schema);
    if ('refused' in read) return read;
    tools.push(read);
  }
  return tools;
}

export const lmMessages: LmTranslator = {
  read(body) {
    const messages: LmMessage[] = [];
    const dropped: string[] = [];
    if (typeof body.system === 'string' && body.system) pushPart(messages, 'user', { type: 'text', text: body.system });
    else if (Array.isArray(body.system)) {
      const system = resultText(body.system);
      if (typeof system !== 'string') return cannot(`a system prompt block of type '${system.other}'`);
      if (system) pushPart(messages, 'user', { type: 'text', text: system });
    }
    if (!Array.isArray(body.messages)) return { refused: 'Belay gateway: messages must be a list' };
    for (const message of body.messages) {
      if (!isRecord(message) || (message.role !== 'user' && message.role !== 'assistant' && message.role !== 'system')) return { refused: "Belay gateway: each message needs the role 'user', 'assistant' or 'system'" };
      // A system message amid the conversation (Claude Code sends them) goes as user text, as the system prompt does.
      const role = message.role === 'assistant' ? 'assistant' : 'user';
      const blocks = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
      if (!Array.isArray(blocks)) return { refused: 'Belay gateway: a message content must be a string or a list of blocks' };
      for (const block of blocks) {
        if (!isRecord(block)) return { refused: 'Belay gateway: a content block must be an object' };
        if (block.type === 'text' && typeof block.text === 'string') {
          if (block.text) pushPart(messages, role, { type: 'text', text: block.text });
        } else if (block.type === 'tool_use' && message.role === 'assistant') {
          const input = parseArguments(block.input);
          if (!input || typeof block.id !== 'string' || typeof block.name !== 'string') return { refused: 'Belay gateway: a tool_use block needs an id, a name and an object input' };
          pushPart(messages, role, { type: 'toolCall', callId: block.id, name: block.name, input });
        } else if (block.type === 'tool_result' && message.role === 'user') {
          const text = resultText(block.content);
          if (typeof text !== 'string') return cannot(`a tool_result holding a '${text.other}' block (text only)`);
          if (typeof block.tool_use_id !== 'string') return { refused: 'Belay gateway: a tool_result block needs its tool_use_id' };
          pushPart(messages, role, { type: 'toolResult', callId: block.tool_use_id, text: block.is_error === true ? `Error: ${text}` : text });
        } else if (block.type === 'thinking' || block.type === 'redacted_thinking') {
          if (!dropped.includes('earlier thinking blocks')) dropped.push('earlier thinking blocks');
        } else return cannot(`a '${String(block.type)}' content block${block.type === 'image' || block.type === 'document' ? ' (images and documents)' : ''}`);
      }
    }
    const tools = readTools(body.tools, dropped);
    if ('refused' in tools) return tools;
    let toolMode: 'auto' | 'required' = 'auto';
    let offered = tools;
    const choice = body.tool_choice;
    if (isRecord(choice)) {
      if (choice.type === 'tool') return cannot(`tool_choice naming one tool ('${String(choice.name)}'): it can only require some tool`);
      if (choice.type === 'any') toolMode = 'required';
      else if (choice.type === 'none') offered = [];
      if (choice.disable_parallel_tool_use === true) dropped.push('disable_parallel_tool_use');
    }
    if (toolMode === 'required' && offered.length === 0) return { refused: 'Belay gateway: tool_choice requires a tool but the request offers none the LM API can take' };
    dropped.push(...present(body, DROPPED_FIELDS));
    return {
      model: typeof body.model === 'string' ? body.model : null,
      stream: body.stream === true,
      messages,
      tools: offered,
      options: { toolMode, modelOptions: modelOptions(body.temperature, body.max_tokens) },
      dropped,
    };
  },

  whole(reply) {
    return {
      id: `msg_${randomBytes(12).toString('hex')}`,
      type: 'message',
      role: 'assistant',
      model: reply.model,
      content: joinText(reply.parts).map((part) => (part.type === 'text' ? { type: 'text', text: part.text } : { type: 'tool_use', id: part.callId, name: part.name, input: part.input })),
      stop_reason: reply.stop === 'tool_use' ? 'tool_use' : 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: reply.usage.input, output_tokens: reply.usage.output },
    };
  },

  streamWriter(model, _request: LmRequest, input): LmStreamWriter {
    let index = -1;
    let open: 'text' | undefined;
    const close = () => {
      if (open === undefined) return '';
      open = undefined;
      return sse('content_block_stop', { index });
    };
    return {
      start: () =>
        sse('message_start', { message: { id: `msg_${randomBytes(12).toString('hex')}`, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: input, output_tokens: 0 } } }),
      part(part) {
        if (part.type === 'text') {
          let out = '';
          if (open !== 'text') {
            out += close();
            index++;
            open = 'text';
            out += sse('content_block_start', { index, content_block: { type: 'text', text: '' } });
          }
          return out + sse('content_block_delta', { index, delta: { type: 'text_delta', text: part.text } });
        }
        let out = close();
        index++;
        out += sse('content_block_start', { index, content_block: { type: 'tool_use', id: part.callId, name: part.name, input: {} } });
        out += sse('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(part.input) } });
        return out + sse('content_block_stop', { index });
      },
      end(usage, stop) {
        return close() + sse('message_delta', { delta: { stop_reason: stop === 'tool_use' ? 'tool_use' : 'end_turn', stop_sequence: null }, usage: { output_tokens: usage.output } }) + sse('message_stop', {});
      },
      fail(message) {
        return `event: error\ndata: ${JSON.stringify(anthropicError(500, 'model_failed', message))}\n\n`;
      },
    };
  },

  error: anthropicError,
};

