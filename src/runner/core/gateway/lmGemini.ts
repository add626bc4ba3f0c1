// The Gemini API (`models/M:generateContent`, and `:streamGenerateContent?alt=sse`) to and from
// the LM API: systemInstruction, `contents` and their `parts` (text, `functionCall`,
// `functionResponse`), function declarations; the answer as a GenerateContentResponse, or as SSE
// chunks each holding one. The route names the model and whether it streams. Inline data, files,
// structured output and function calling limited to some functions are refused in Gemini's error
// shape; built-in tools (search, code execution) are left out, named in the run's line.
import { geminiError } from './gemini.ts';
import { isRecord } from './shape.ts';
import { cannot, joinText, type LmMessage, type LmOutPart, type LmRequest, type LmStreamWriter, lmTool, type LmTool, type LmTranslator, type LmUsage, modelOptions, present, pushPart, readToolList } from './lmModel.ts';

const DROPPED_CONFIG = ['topP', 'topK', 'stopSequences', 'thinkingConfig', 'seed', 'presencePenalty', 'frequencyPenalty', 'responseLogprobs', 'logprobs'] as const;

function readTools(value: unknown, dropped: string[]): LmTool[] | { refused: string } {
  return readToolList(value, (tool) => {
    const other = Object.keys(tool).filter((key) => key !== 'functionDeclarations');
    for (const name of other) dropped.push(`the built-in tool '${name}'`);
    const tools: LmTool[] = [];
    for (const fn of Array.isArray(tool.functionDeclarations) ? tool.functionDeclarations : []) {
      if (!isRecord(fn) || typeof fn.name !== 'string') return { refused: 'Belay gateway: each function declaration needs a name' };
      const raw = isRecord(fn.parametersJsonSchema) ? fn.parametersJsonSchema : fn.parameters;
      const read = lmTool(fn.name, fn.description, raw);
      if ('refused' in read) return read;
      tools.push(read.inputSchema && raw === fn.parameters ? { ...read, inputSchema: lowerTypes(read.inputSchema) } : read);
    }
    return tools;
  });
}

/** Gemini's OpenAPI-style schema (`type: "OBJECT"`) in JSON Schema's words (`type: "object"`); its depth is checked first (lmTool). */
function lowerTypes(schema: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'type' && typeof value === 'string') out[key] = value.toLowerCase();
    else if (isRecord(value)) out[key] = lowerTypes(value);
    else if (Array.isArray(value)) out[key] = value.map((item) => (isRecord(item) ? lowerTypes(item) : item));
    else out[key] = value;
  }
  return out;
}

/** A functionResponse's `response` as text: its `output` (or `content`) when that is a string, else its JSON. */
function responseText(response: unknown): string {
  if (isRecord(response)) {
    for (const key of ['output', 'content', 'result']) if (typeof response[key] === 'string' && Object.keys(response).length === 1) return response[key] as string;
  }
  return typeof response === 'string' ? response : JSON.stringify(response ?? {});
}

export const lmGemini: LmTranslator = {
  read(body, route) {
    const messages: LmMessage[] = [];
    const dropped: string[] = [];
    if (body.cachedContent !== undefined) return cannot('cachedContent (send the whole conversation)');
    const system = body.systemInstruction ?? body.system_instruction;
    if (isRecord(system) && Array.isArray(system.parts)) {
      const text = system.parts.map((p) => (isRecord(p) && typeof p.text === 'string' ? p.text : '')).join('');
      if (text) pushPart(messages, 'user', { type: 'text', text });
    }
    if (!Array.isArray(body.contents)) return { refused: 'Belay gateway: contents must be a list' };
    /** Calls of the last model turn still waiting for their response, by name (Gemini may omit ids). */
    let pending = new Map<string, string[]>();
    let turn = 0;
    for (const content of body.contents) {
      if (!isRecord(content) || !Array.isArray(content.parts)) return { refused: 'Belay gateway: each content needs a list of parts' };
      const role = content.role === 'model' ? 'assistant' : content.role === 'user' || content.role === undefined || content.role === 'function' ? 'user' : undefined;
      if (!role) return cannot(`a content with the role '${String(content.role)}'`);
      turn++;
      if (role === 'assistant') pending = new Map();
      for (const [index, part] of content.parts.entries()) {
        if (!isRecord(part)) return { refused: 'Belay gateway: each part must be an object' };
        if (part.thought === true) {
          if (!dropped.includes('earlier thought parts')) dropped.push('earlier thought parts');
        } else if (typeof part.text === 'string') {
          if (part.text) pushPart(messages, role, { type: 'text', text: part.text });
        } else if (isRecord(part.functionCall) && role === 'assistant') {
          const call = part.functionCall;
          if (typeof call.name !== 'string' || (call.args !== undefined && !isRecord(call.args))) return { refused: 'Belay gateway: a functionCall needs a name and object args' };
          const callId = typeof call.id === 'string' && call.id ? call.id : `call_${turn}_${index}`;
          pending.set(call.name, [...(pending.get(call.name) ?? []), callId]);
          pushPart(messages, role, { type: 'toolCall', callId, name: call.name, input: (call.args as Record<string, unknown> | undefined) ?? {} });
        } else if (isRecord(part.functionResponse) && role === 'user') {
          const answer = part.functionResponse;
          if (typeof answer.name !== 'string') return { refused: 'Belay gateway: a functionResponse needs the name of its function' };
          const waiting = pending.get(answer.name) ?? [];
          const callId = typeof answer.id === 'string' && answer.id ? answer.id : (waiting.shift() ?? `call_${turn}_${index}`);
          if (typeof answer.id === 'string') pending.set(answer.name, waiting.filter((id) => id !== answer.id));
          pushPart(messages, 'user', { type: 'toolResult', callId, text: responseText(answer.response) });
        } else {
          const kind = Object.keys(part).find((key) => key !== 'thoughtSignature') ?? 'empty';
          return cannot(`a '${kind}' part${kind === 'inlineData' || kind === 'fileData' ? ' (images and files)' : ''}`);
        }
      }
    }
    const tools = readTools(body.tools, dropped);
    if ('refused' in tools) return tools;
    let toolMode: 'auto' | 'required' = 'auto';
    let offered = tools;
    const config = isRecord(body.toolConfig) && isRecord(body.toolConfig.functionCallingConfig) ? body.toolConfig.functionCallingConfig : undefined;
    if (config) {
      const allowed = Array.isArray(config.allowedFunctionNames) ? config.allowedFunctionNames.map(String) : [];
      if (allowed.length && tools.some((tool) => !allowed.includes(tool.name))) return cannot(`allowedFunctionNames (${allowed.join(', ')}): it can only require some tool`);
      if (config.mode === 'ANY') toolMode = 'required';
      else if (config.mode === 'NONE') offered = [];
      else if (config.mode === 'VALIDATED') dropped.push("function calling mode 'VALIDATED'");
    }
    if (toolMode === 'required' && offered.length === 0) return { refused: "Belay gateway: function calling mode 'ANY' requires a function but the request declares none" };
    const generation = isRecord(body.generationConfig) ? body.generationConfig : {};
    if (typeof generation.candidateCount === 'number' && generation.candidateCount > 1) return cannot('candidateCount > 1 (one answer per request)');
    if (generation.responseSchema !== undefined || generation.responseJsonSchema !== undefined || (typeof generation.responseMimeType === 'string' && generation.responseMimeType !== 'text/plain')) return cannot('responseMimeType/responseSchema (structured output)');
    dropped.push(...present(generation, DROPPED_CONFIG).map((name) => `generationConfig.${name}`));
    return {
      model: route.model ?? null,
      stream: route.stream,
      messages,
      tools: offered,
      options: { toolMode, modelOptions: modelOptions(generation.temperature, generation.maxOutputTokens) },
      dropped,
    };
  },

  whole(reply) {
    return answer(reply.model, joinText(reply.parts), reply.usage, 'STOP');
  },

  streamWriter(model, _request: LmRequest, input): LmStreamWriter {
    return {
      start: () => '',
      part: (part) => `data: ${JSON.stringify(answer(model, [part], { input, output: 0 }, undefined))}\n\n`,
      end: (usage) => `data: ${JSON.stringify(answer(model, [], usage, 'STOP'))}\n\n`,
      fail: (message) => `data: ${JSON.stringify(geminiError(500, 'model_failed', message))}\n\n`,
    };
  },

  error: geminiError,
};

function answer(model: string, parts: LmOutPart[], usage: LmUsage, finishReason: string | undefined): Record<string, unknown> {
  const out = parts.map((part) => (part.type === 'text' ? { text: part.text } : { functionCall: { id: part.callId, name: part.name, args: part.input } }));
  return {
    candidates: [{ content: { role: 'model', parts: out }, index: 0, ...(finishReason ? { finishReason } : {}) }],
    usageMetadata: { promptTokenCount: usage.input, candidatesTokenCount: usage.output, totalTokenCount: usage.input + usage.output },
    modelVersion: model,
  };
}
