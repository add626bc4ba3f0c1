// A scripted OpenAI-compatible chat completions service on 127.0.0.1, for the coding CLIs that
// speak it (OpenCode): `POST /v1/chat/completions` (and `/chat/completions` for clients whose base
// URL has no version), streamed (SSE `chat.completion.chunk`s, `tool_calls` built up by index,
// `usage` in a last chunk with no choices when `stream_options.include_usage`, then `[DONE]`) and
// not (one `chat.completion`); `GET /v1/models`; OpenAI's error shape (`{ error: { message, type,
// param, code } }`, 401 `invalid_api_key` for a wrong key). It is scripted by turns: a request's
// turn is the number of assistant messages its conversation already holds, so a retried request
// gets the same answer and several conversations never share one; a request without tools (a
// title or a summary a CLI asks for on the side) gets a short text answer. Model timings: the
// answer's first byte comes `firstByteMs` after the request arrived, then the stream trickles out
// a piece every `chunkMs`. Everything received is recorded for the tests' assertions.
import * as http from 'node:http';
import { listenOnLoopback, readJsonBody, waits } from './loopback.ts';

export interface ChatToolCall {
  name: string;
  /** The arguments (an object is sent as its JSON text, as the service does). */
  arguments: Record<string, unknown> | string;
  /** The call's id (default `call_<turn>_<index>`). */
  id?: string;
}

export type ChatTurn =
  /**
   * The model's answer: text, tool calls, or both (text first, as models write them); `reasoning`
   * before them as the OpenAI-compatible services that show it send it (`reasoning_content`).
   */
  | { reasoning?: string; text?: string; toolCalls?: ChatToolCall[]; usage?: { prompt_tokens: number; completion_tokens: number } }
  /** The service fails this request with OpenAI's error shape. */
  | { error: { status: number; message: string; type?: string; code?: string | null } };

export interface ChatReceived {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
  /** The conversation's turn it asked for (0-based; null for requests that are not completions with tools). */
  turn: number | null;
  at: number;
}

export interface ChatUpstreamOptions {
  turns: ChatTurn[];
  /** The key the service accepts (`Authorization: Bearer KEY`). */
  key: string;
  /** Milliseconds from a request's arrival to its answer's first byte (default 0). */
  firstByteMs?: number;
  /** Milliseconds between the stream's pieces (default 0: as fast as the socket takes them). */
  chunkMs?: number;
  /** Characters of text per streamed piece (default 4, about a token). */
  pieceChars?: number;
  /** The model the answers name (default: the request's). */
  model?: string;
}

export interface ChatUpstream {
  /** The base URL as OpenAI's SDK takes it: `http://127.0.0.1:PORT/v1`. */
  url: string;
  received: ChatReceived[];
  /** The completion requests only, in order. */
  completions(): ChatReceived[];
  /** The usage every answer reported, summed. */
  reportedUsage(): { prompt_tokens: number; completion_tokens: number };
  close(): Promise<void>;
}

const DEFAULT_USAGE = { prompt_tokens: 120, completion_tokens: 30 };

export async function startChatUpstream(options: ChatUpstreamOptions): Promise<ChatUpstream> {
  const received: ChatReceived[] = [];
  const reported = { prompt_tokens: 0, completion_tokens: 0 };
  const { wait, clear } = waits();

  const server = http.createServer(async (req, res) => {
    const { body } = await readJsonBody(req);
    const url = new URL(req.url ?? '/', 'http://upstream');
    const isCompletion = req.method === 'POST' && (url.pathname === '/v1/chat/completions' || url.pathname === '/chat/completions');
    const entry: ChatReceived = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, turn: null, at: Date.now() };
    received.push(entry);
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    const error = (status: number, message: string, type: string, code: string | null) => json(status, { error: { message, type, param: null, code } });

    if (req.headers.authorization !== `Bearer ${options.key}`) {
      error(401, 'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.', 'invalid_request_error', 'invalid_api_key');
      return;
    }
    if (req.method === 'GET' && (url.pathname === '/v1/models' || url.pathname === '/models')) {
      json(200, { object: 'list', data: [{ id: options.model ?? 'gpt-4.1', object: 'model', created: 1_700_000_000, owned_by: 'scripted' }] });
      return;
    }
    if (!isCompletion) {
      error(404, `Invalid URL (${req.method} ${url.pathname})`, 'invalid_request_error', null);
      return;
    }
    if (!Array.isArray(body.messages)) {
      error(400, "Missing required parameter: 'messages'.", 'invalid_request_error', 'missing_required_parameter');
      return;
    }
    const hasTools = Array.isArray(body.tools) && body.tools.length > 0;
    const index = hasTools ? body.messages.filter((m: unknown) => typeof m === 'object' && m !== null && (m as { role?: unknown }).role === 'assistant').length : null;
    entry.turn = index;
    const turn: ChatTurn = index === null ? { text: 'A task on a file', usage: { prompt_tokens: 40, completion_tokens: 5 } } : (options.turns[index] ?? { text: 'Done.' });
    await wait(options.firstByteMs ?? 0);
    if (res.destroyed) return;
    if ('error' in turn) {
      error(turn.error.status, turn.error.message, turn.error.type ?? 'invalid_request_error', turn.error.code ?? null);
      return;
    }
    const model = options.model ?? (typeof body.model === 'string' ? body.model : 'gpt-4.1');
    const usage = turn.usage ?? DEFAULT_USAGE;
    reported.prompt_tokens += usage.prompt_tokens;
    reported.completion_tokens += usage.completion_tokens;
    const usageJson = { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
    const calls = (turn.toolCalls ?? []).map((call, i) => ({
      id: call.id ?? `call_${(index ?? -1) + 1}_${i}`,
      type: 'function' as const,
      function: { name: call.name, arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments) },
    }));
    const finish = calls.length > 0 ? 'tool_calls' : 'stop';
    const id = `chatcmpl-scripted${received.length}`;
    const created = Math.floor(Date.now() / 1000);

    if (body.stream !== true) {
      json(200, {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [{ index: 0, message: { role: 'assistant', content: turn.text ?? null, ...(turn.reasoning ? { reasoning_content: turn.reasoning } : {}), ...(calls.length ? { tool_calls: calls } : {}), refusal: null }, logprobs: null, finish_reason: finish }],
        usage: usageJson,
      });
      return;
    }

    const piece = options.pieceChars ?? 4;
    const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] })}\n\n`;
    const pieces: string[] = [chunk({ role: 'assistant', content: '', refusal: null })];
    const reasoning = turn.reasoning ?? '';
    for (let at = 0; at < reasoning.length; at += piece) pieces.push(chunk({ reasoning_content: reasoning.slice(at, at + piece) }));
    const text = turn.text ?? '';
    for (let at = 0; at < text.length; at += piece) pieces.push(chunk({ content: text.slice(at, at + piece) }));
    calls.forEach((call, i) => {
      pieces.push(chunk({ tool_calls: [{ index: i, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] }));
      const args = call.function.arguments;
      for (let at = 0; at < args.length; at += piece * 4) pieces.push(chunk({ tool_calls: [{ index: i, function: { arguments: args.slice(at, at + piece * 4) } }] }));
    });
    pieces.push(chunk({}, finish));
    const options_ = body.stream_options as { include_usage?: unknown } | undefined;
    if (options_?.include_usage === true) pieces.push(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: usageJson })}\n\n`);
    pieces.push('data: [DONE]\n\n');
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
    for (const [i, text_] of pieces.entries()) {
      if (i > 0) await wait(options.chunkMs ?? 0);
      if (res.destroyed) return;
      res.write(text_);
    }
    res.end();
  });
  const { port, close } = await listenOnLoopback(server, clear);
  return {
    url: `http://127.0.0.1:${port}/v1`,
    received,
    completions: () => received.filter((entry) => entry.method === 'POST' && /\/chat\/completions$/.test(new URL(entry.url, 'http://upstream').pathname)),
    reportedUsage: () => ({ ...reported }),
    close,
  };
}
