// A model in the editor as the gateway's upstream: the neutral interface the editor layer fills
// from VS Code's language-model API (`vscode.lm`), the messages and tools it takes, and what each
// API shape's translator (lmMessages, lmChat, lmResponses, lmGemini) reads a request into and
// writes a reply from. Nothing here knows `vscode`: the same translators serve any such model.

export interface LmText {
  type: 'text';
  text: string;
}

export interface LmToolCall {
  type: 'toolCall';
  callId: string;
  name: string;
  input: Record<string, unknown>;
}

export interface LmToolResult {
  type: 'toolResult';
  callId: string;
  text: string;
}

export type LmPart = LmText | LmToolCall | LmToolResult;

/** The LM API has two roles: system prompts travel as the first user message. */
export interface LmMessage {
  role: 'user' | 'assistant';
  parts: LmPart[];
}

export interface LmTool {
  name: string;
  description: string;
  inputSchema?: Record<string, unknown>;
}

export interface LmSendOptions {
  /** 'required': the model must call one of the tools (the LM API cannot name which). */
  toolMode: 'auto' | 'required';
  /** Options the model may honour (`temperature`, `max_tokens`). */
  modelOptions: Record<string, unknown>;
}

/** What a model generates: text pieces and whole tool calls. */
export type LmOutPart = LmText | LmToolCall;

export type LmErrorCode = 'no_permissions' | 'blocked' | 'not_found' | 'cancelled' | 'failed';

export interface LmFailure {
  code: LmErrorCode;
  message: string;
}

/** A stream's parts, ending early with an error part when the model fails half-way. */
export type LmEvent = LmOutPart | { type: 'error'; error: LmFailure };

export type LmSendResult = { ok: true; parts: AsyncIterable<LmEvent> } | { ok: false; error: LmFailure };

/** A model the gateway can serve a run from, with no key: errors come back as values. */
export interface LocalModel {
  /** `vendor/id`, as settings name it. */
  readonly id: string;
  readonly name: string;
  readonly maxInputTokens: number;
  /** Tokens of `text` by the model's own counter. */
  countTokens(text: string, signal: AbortSignal): Promise<number>;
  send(messages: LmMessage[], tools: LmTool[], options: LmSendOptions, signal: AbortSignal): Promise<LmSendResult>;
}

/** A request in one API's shape, read into the LM API's terms. */
export interface LmRequest {
  /** The model the agent named (kept in the answer; the run's model serves it anyway). */
  model: string | null;
  stream: boolean;
  messages: LmMessage[];
  tools: LmTool[];
  options: LmSendOptions;
  /** What the LM API cannot express and the translation left out, one line each (the run shows them). */
  dropped: string[];
  /** Chat completions: the agent asked for the usage chunk. */
  includeUsage?: boolean;
}

export type LmStop = 'end' | 'tool_use';

export interface LmUsage {
  input: number;
  output: number;
}

/** A whole answer, for the non-streamed form. */
export interface LmReply {
  model: string;
  parts: LmOutPart[];
  usage: LmUsage;
  stop: LmStop;
}

/** Writes a streamed answer in one API's SSE events, as the model's parts arrive. */
export interface LmStreamWriter {
  /** Events before the first part ('' when the API has none). */
  start(): string;
  part(part: LmOutPart): string;
  end(usage: LmUsage, stop: LmStop): string;
  /** The model failed half-way: the API's own error event. */
  fail(message: string): string;
}

/** What the route says beside the body (Gemini names the model and the streaming in the path). */
export interface LmRoute {
  stream: boolean;
  model?: string;
  /** The whole answer goes as a one-element JSON list (Gemini's streamGenerateContent without alt=sse). */
  list?: boolean;
}

export interface LmTranslator {
  read(body: Record<string, unknown>, route: LmRoute): LmRequest | { refused: string };
  whole(reply: LmReply): unknown;
  streamWriter(model: string, request: LmRequest, input: number): LmStreamWriter;
  error(status: number, code: string, message: string): unknown;
}

/** The sentence a request gets when it holds something the LM API cannot take. */
export function cannot(what: string): { refused: string } {
  return { refused: `the VS Code language-model API cannot express ${what}` };
}

/** The text every token of a request is counted from: messages, tool calls and results, tools. */
export function countedText(messages: readonly LmMessage[], tools: readonly LmTool[]): string {
  const pieces: string[] = [];
  for (const message of messages) {
    for (const part of message.parts) {
      if (part.type === 'text') pieces.push(part.text);
      else if (part.type === 'toolCall') pieces.push(part.name, JSON.stringify(part.input));
      else pieces.push(part.text);
    }
  }
  for (const tool of tools) pieces.push(tool.name, tool.description, JSON.stringify(tool.inputSchema ?? {}));
  return pieces.join('\n');
}

/** The text an answer's tokens are counted from. */
export function generatedText(parts: readonly LmOutPart[]): string {
  return parts.map((part) => (part.type === 'text' ? part.text : `${part.name}\n${JSON.stringify(part.input)}`)).join('\n');
}

/** A tool call's arguments as the LM API takes them (an object; anything else is refused by the caller). */
export function parseArguments(text: unknown): Record<string, unknown> | undefined {
  if (text === undefined || text === null || text === '') return {};
  if (typeof text === 'object' && !Array.isArray(text)) return text as Record<string, unknown>;
  if (typeof text !== 'string') return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Appends a part to the conversation, joining it to the last message when that has the same role. */
export function pushPart(messages: LmMessage[], role: LmMessage['role'], part: LmPart): void {
  const last = messages.at(-1);
  if (last?.role === role) last.parts.push(part);
  else messages.push({ role, parts: [part] });
}

/** Options every API names its own way, passed to the model when set. */
export function modelOptions(temperature: unknown, maxTokens: unknown): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  if (typeof temperature === 'number') options.temperature = temperature;
  if (typeof maxTokens === 'number') options.max_tokens = maxTokens;
  return options;
}

/** Names of fields present in `body` (set to something other than null/undefined). */
export function present(body: Record<string, unknown>, names: readonly string[]): string[] {
  return names.filter((name) => body[name] !== undefined && body[name] !== null);
}

/** The text of a content that may be a string or a list of text parts; undefined when a part is not text. */
export function plainText(content: unknown, textTypes: readonly string[]): { text: string } | { other: string } {
  if (typeof content === 'string') return { text: content };
  if (content === undefined || content === null) return { text: '' };
  if (!Array.isArray(content)) return { other: typeof content };
  const texts: string[] = [];
  for (const part of content) {
    if (typeof part === 'string') texts.push(part);
    else if (part && typeof part === 'object' && textTypes.includes(String((part as Record<string, unknown>).type)) && typeof (part as Record<string, unknown>).text === 'string') texts.push((part as Record<string, unknown>).text as string);
    else return { other: part && typeof part === 'object' ? String((part as Record<string, unknown>).type ?? 'an untyped part') : typeof part };
  }
  return { text: texts.join('') };
}

/** Adjacent text pieces as one part (a streamed model sends many). */
export function joinText(parts: readonly LmOutPart[]): LmOutPart[] {
  const joined: LmOutPart[] = [];
  for (const part of parts) {
    const last = joined.at(-1);
    if (part.type === 'text' && last?.type === 'text') joined[joined.length - 1] = { type: 'text', text: last.text + part.text };
    else joined.push(part);
  }
  return joined;
}

/** Deepest tool schema taken: the model's API and the counters serialise it recursively. */
export const MAX_SCHEMA_DEPTH = 64;

/**
 * A request's `tools`, each read by `readOne` (which gives its LmTools, none for a tool left out):
 * nothing when absent; refused, in one line, when it is not a list of objects or `readOne` refuses.
 */
export function readToolList(value: unknown, readOne: (tool: Record<string, unknown>) => LmTool[] | { refused: string }): LmTool[] | { refused: string } {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) return { refused: 'Belay gateway: tools must be a list' };
  const tools: LmTool[] = [];
  for (const tool of value) {
    if (typeof tool !== 'object' || tool === null || Array.isArray(tool)) return { refused: 'Belay gateway: each tool must be an object' };
    const read = readOne(tool as Record<string, unknown>);
    if ('refused' in read) return read;
    tools.push(...read);
  }
  return tools;
}

/** A tool the LM API takes, or the line refusing one whose schema is nested too deep (walked without recursion). */
export function lmTool(name: string, description: unknown, schema: unknown): LmTool | { refused: string } {
  const stack: [unknown, number][] = [[schema, 1]];
  while (stack.length) {
    const [value, depth] = stack.pop()!;
    if (!value || typeof value !== 'object') continue;
    if (depth > MAX_SCHEMA_DEPTH) return { refused: `Belay gateway: the schema of tool '${name}' is nested deeper than ${MAX_SCHEMA_DEPTH} levels` };
    for (const item of Object.values(value)) stack.push([item, depth + 1]);
  }
  const isObject = schema !== null && typeof schema === 'object' && !Array.isArray(schema);
  return { name, description: typeof description === 'string' ? description : '', ...(isObject ? { inputSchema: schema as Record<string, unknown> } : {}) };
}
