// An OpenAI-compatible chat endpoint (`POST {baseUrl}/chat/completions`), as many servers offer
// it (OpenAI, Ollama, llama.cpp, vLLM, LM Studio, OpenRouter…): the outbox goes as one user
// message, the answer comes back streamed (server-sent events) or whole. What arrives is checked
// where it enters and bounded in size; the key is sent only as a bearer token.
import * as z from 'zod';

export interface ChatEndpoint {
  /** e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`. */
  baseUrl: string;
  model: string;
  apiKey?: string;
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ChatOptions {
  signal?: AbortSignal;
  /** Each piece of the answer as it arrives. */
  onText?: (text: string) => void;
  /** The answer's size at most (characters); beyond it the request fails. Default 20 million. */
  maxChars?: number;
}

export class ChatError extends Error {
  override name = 'ChatError';
}

const completionSchema = z.object({
  choices: z.array(z.object({ message: z.object({ content: z.string().nullable().optional() }) })).min(1),
});
const chunkSchema = z.object({
  choices: z.array(z.object({ delta: z.object({ content: z.string().nullable().optional() }).optional() })),
});
const errorSchema = z.object({ error: z.union([z.string(), z.object({ message: z.string() })]) });

/** The URL of the endpoint's chat completions, from its base URL. */
export function completionsUrl(baseUrl: string): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new ChatError(`'${baseUrl}' is not a URL (expected e.g. https://api.openai.com/v1)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ChatError(`'${baseUrl}' is not an http(s) URL`);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/chat/completions`;
  return url.toString();
}

/** Sends the messages and resolves with the whole answer. */
export async function chat(endpoint: ChatEndpoint, messages: readonly ChatMessage[], options: ChatOptions = {}): Promise<string> {
  const maxChars = options.maxChars ?? 20_000_000;
  const response = await fetch(completionsUrl(endpoint.baseUrl), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'text/event-stream, application/json',
      ...(endpoint.apiKey ? { authorization: `Bearer ${endpoint.apiKey}` } : {}),
    },
    body: JSON.stringify({ model: endpoint.model, messages, stream: true }),
    ...(options.signal ? { signal: options.signal } : {}),
  }).catch((error: unknown) => {
    if (options.signal?.aborted) throw error;
    throw new ChatError(`could not reach ${endpoint.baseUrl}: ${error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error)}`);
  });
  if (!response.ok) {
    const body = await readBounded(response, 4000).catch(() => '');
    let detail = body.trim().slice(0, 300);
    try {
      const parsed = errorSchema.safeParse(JSON.parse(body));
      if (parsed.success) detail = typeof parsed.data.error === 'string' ? parsed.data.error : parsed.data.error.message;
    } catch {
      // Not JSON: the text as it is.
    }
    throw new ChatError(`${endpoint.baseUrl} answered ${response.status} ${response.statusText}${detail ? `: ${detail}` : ''}`);
  }
  const type = response.headers.get('content-type') ?? '';
  if (!type.includes('text/event-stream')) {
    const body = await readBounded(response, maxChars * 2);
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch {
      throw new ChatError(`${endpoint.baseUrl} did not answer with JSON (${type || 'no content type'})`);
    }
    const parsed = completionSchema.safeParse(json);
    if (!parsed.success) throw new ChatError(`${endpoint.baseUrl} answered without a message (choices[0].message.content)`);
    const text = parsed.data.choices[0]!.message.content ?? '';
    if (text.length > maxChars) throw new ChatError(`the answer is longer than ${maxChars} characters`);
    options.onText?.(text);
    return text;
  }
  let answer = '';
  for await (const data of serverSentEvents(response)) {
    if (data === '[DONE]') break;
    let json: unknown;
    try {
      json = JSON.parse(data);
    } catch {
      throw new ChatError(`${endpoint.baseUrl} sent an event that is not JSON`);
    }
    const error = errorSchema.safeParse(json);
    if (error.success) throw new ChatError(`${endpoint.baseUrl}: ${typeof error.data.error === 'string' ? error.data.error : error.data.error.message}`);
    const chunk = chunkSchema.safeParse(json);
    if (!chunk.success) continue;
    const piece = chunk.data.choices[0]?.delta?.content ?? '';
    if (piece === '') continue;
    answer += piece;
    if (answer.length > maxChars) throw new ChatError(`the answer is longer than ${maxChars} characters`);
    options.onText?.(piece);
  }
  return answer;
}

/** The data of each server-sent event, as it arrives. */
async function* serverSentEvents(response: Response): AsyncGenerator<string> {
  if (!response.body) return;
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  for await (const bytes of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(bytes, { stream: true });
    if (buffer.length > 10_000_000) throw new ChatError('an event of the answer is too long');
    let newline: number;
    while ((newline = buffer.search(/\r\n|\r|\n/)) !== -1) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
      if (line === '') {
        if (data.length > 0) yield data.join('\n');
        data = [];
      } else if (line.startsWith('data:')) {
        data.push(line.slice(5).replace(/^ /, ''));
      }
    }
  }
  if (data.length > 0) yield data.join('\n');
}

async function readBounded(response: Response, maxChars: number): Promise<string> {
  if (!response.body) return '';
  const decoder = new TextDecoder();
  let text = '';
  for await (const bytes of response.body as unknown as AsyncIterable<Uint8Array>) {
    text += decoder.decode(bytes, { stream: true });
    if (text.length > maxChars) throw new ChatError(`the answer is longer than ${Math.floor(maxChars)} characters`);
  }
  return text + decoder.decode();
}
