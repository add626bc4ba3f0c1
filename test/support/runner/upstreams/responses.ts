// A scripted OpenAI Responses API upstream for the installed-agent tests: a real HTTP server on
// 127.0.0.1 that answers `POST /v1/responses` the way the real service does (streamed as typed
// SSE events with sequence numbers, or one whole JSON response), with function calls, usage and
// OpenAI's error shape, at a model's speed: each answer's first byte after a wait, then its text
// trickled in pieces. Each request takes the next turn of the script; it records what it received
// (path, headers, body, the function call outputs sent back) so tests can assert on it.
import { once } from 'node:events';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';

/**
 * One model turn: a function call (JSON arguments) or a custom tool call (free text input, as
 * Codex's `apply_patch`), each with optional text before it; final text; an error answer (HTTP
 * status and OpenAI's error body); or a stream that starts and then fails (`response.failed`).
 */
export type ResponsesTurn =
  | { call: { name: string; arguments: Record<string, unknown> }; text?: string; usage?: TurnUsage }
  | { custom: { name: string; input: string }; text?: string; usage?: TurnUsage }
  | { text: string; usage?: TurnUsage }
  | { error: { status: number; message: string; type?: string; code?: string } }
  | { failed: { code: string; message: string } };

export interface TurnUsage {
  input: number;
  output: number;
}

export interface ResponsesUpstreamOptions {
  turns: ResponsesTurn[];
  /** The key the upstream accepts (`Authorization: Bearer`); any other gets OpenAI's 401. */
  key: string;
  /** Seconds before an answer's first byte (the model thinking; default 0). */
  firstByteSeconds?: number;
  /** Characters per streamed piece (default 8) and seconds between pieces (default 0). */
  pieceChars?: number;
  pieceSeconds?: number;
}

export interface ResponsesReceived {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
  /** The `function_call_output` and `custom_tool_call_output` items of the request's input, by call id. */
  outputs: Map<string, string>;
  /** When the request had fully arrived (Date.now()). */
  at: number;
  /** The usage this request's answer reported (none for errors and refusals). */
  usage?: TurnUsage;
}

export interface ResponsesUpstream {
  /** The base URL as OpenAI's SDKs take it (`http://127.0.0.1:PORT/v1`). */
  url: string;
  received: ResponsesReceived[];
  /** Requests for anything but `POST /v1/responses` (a model list is answered, the rest get OpenAI's 404). */
  strays: { method: string; url: string }[];
  /** The total usage the upstream reported. */
  reported(): TurnUsage;
  close(): Promise<void>;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function openAiError(status: number, message: string, type = status === 401 ? 'invalid_request_error' : status >= 500 ? 'server_error' : 'invalid_request_error', code: string | null = null) {
  return { error: { message, type, param: null, code } };
}

function functionOutputs(body: Record<string, unknown>): Map<string, string> {
  const outputs = new Map<string, string>();
  if (!Array.isArray(body.input)) return outputs;
  for (const item of body.input) {
    if (isRecord(item) && (item.type === 'function_call_output' || item.type === 'custom_tool_call_output') && typeof item.call_id === 'string') {
      outputs.set(item.call_id, typeof item.output === 'string' ? item.output : JSON.stringify(item.output));
    }
  }
  return outputs;
}

function pieces(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out.length ? out : [''];
}

export async function startResponsesUpstream(options: ResponsesUpstreamOptions): Promise<ResponsesUpstream> {
  const received: ResponsesReceived[] = [];
  const strays: { method: string; url: string }[] = [];
  let turnIndex = 0;
  const firstByteMs = (options.firstByteSeconds ?? 0) * 1000;
  const pieceMs = (options.pieceSeconds ?? 0) * 1000;
  const pieceChars = options.pieceChars ?? 8;

  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const url = req.url ?? '';
    const path = url.split('?', 1)[0];
    const sendJson = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': `req_${received.length}` });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'GET' && path === '/v1/models') {
      strays.push({ method: 'GET', url });
      return sendJson(200, { object: 'list', data: [{ id: 'gpt-5.5', object: 'model', created: 0, owned_by: 'scripted' }] });
    }
    if (req.method !== 'POST' || path !== '/v1/responses') {
      strays.push({ method: req.method ?? '', url });
      return sendJson(404, openAiError(404, `Invalid URL (${req.method} ${path})`));
    }
    let body: Record<string, unknown> = {};
    try {
      const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      if (isRecord(parsed)) body = parsed;
    } catch {
      return sendJson(400, openAiError(400, 'We could not parse the JSON body of your request.'));
    }
    const entry: ResponsesReceived = { method: req.method, url, headers: req.headers, body, outputs: functionOutputs(body), at: Date.now() };
    received.push(entry);
    const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    if (!auth || auth[1] !== options.key) return sendJson(401, openAiError(401, 'Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key'));
    const turn = options.turns[turnIndex++];
    if (!turn) return sendJson(400, openAiError(400, `the scripted upstream has no turn ${turnIndex} (it has ${options.turns.length})`));
    if ('error' in turn) return sendJson(turn.error.status, openAiError(turn.error.status, turn.error.message, turn.error.type, turn.error.code ?? null));

    const n = turnIndex;
    if ('failed' in turn) {
      await delay(firstByteMs);
      if (body.stream !== true) return sendJson(500, openAiError(500, turn.failed.message, 'server_error', turn.failed.code));
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'x-request-id': `req_${n}` });
      const base = { id: `resp_${n}`, object: 'response', created_at: Math.floor(Date.now() / 1000), model: body.model, output: [], usage: null };
      res.write(`event: response.created\ndata: ${JSON.stringify({ type: 'response.created', sequence_number: 0, response: { ...base, status: 'in_progress', error: null } })}\n\n`);
      await delay(pieceMs);
      res.end(`event: response.failed\ndata: ${JSON.stringify({ type: 'response.failed', sequence_number: 1, response: { ...base, status: 'failed', error: { code: turn.failed.code, message: turn.failed.message } } })}\n\n`);
      return;
    }
    const model = typeof body.model === 'string' ? body.model : 'gpt-5.5';
    const argumentsText = 'call' in turn ? JSON.stringify(turn.call.arguments) : 'custom' in turn ? turn.custom.input : '';
    const text = turn.text ?? '';
    const usage = turn.usage ?? { input: Math.ceil(JSON.stringify(body).length / 4), output: Math.ceil((text.length + argumentsText.length) / 4) + 1 };
    entry.usage = usage;
    const messageItem = text ? { id: `msg_${n}`, type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [], logprobs: [] }] } : undefined;
    const callItem = 'call' in turn ? { id: `fc_${n}`, type: 'function_call', status: 'completed', arguments: argumentsText, call_id: `call_${n}`, name: turn.call.name } : undefined;
    const customItem = 'custom' in turn ? { id: `ctc_${n}`, type: 'custom_tool_call', status: 'completed', input: argumentsText, call_id: `call_${n}`, name: turn.custom.name } : undefined;
    const output = [messageItem, callItem, customItem].filter((item) => item !== undefined);
    const usageJson = { input_tokens: usage.input, input_tokens_details: { cached_tokens: 0 }, output_tokens: usage.output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: usage.input + usage.output };
    const response = (status: string, withOutput: boolean) => ({
      id: `resp_${n}`,
      object: 'response',
      created_at: Math.floor(Date.now() / 1000),
      status,
      error: null,
      incomplete_details: null,
      model,
      output: withOutput ? output : [],
      parallel_tool_calls: true,
      tool_choice: 'auto',
      tools: [],
      usage: withOutput ? usageJson : null,
    });

    await delay(firstByteMs);
    if (res.destroyed) return;
    if (body.stream !== true) return sendJson(200, response('completed', true));

    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'x-request-id': `req_${n}` });
    let sequence = 0;
    const send = async (type: string, fields: Record<string, unknown>, wait = false) => {
      if (wait) await delay(pieceMs);
      if (!res.destroyed) res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...fields })}\n\n`);
    };
    await send('response.created', { response: response('in_progress', false) });
    await send('response.in_progress', { response: response('in_progress', false) });
    let index = 0;
    if (messageItem) {
      const item_id = messageItem.id;
      await send('response.output_item.added', { output_index: index, item: { ...messageItem, status: 'in_progress', content: [] } });
      await send('response.content_part.added', { item_id, output_index: index, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } });
      for (const piece of pieces(text, pieceChars)) await send('response.output_text.delta', { item_id, output_index: index, content_index: 0, delta: piece, logprobs: [] }, true);
      await send('response.output_text.done', { item_id, output_index: index, content_index: 0, text, logprobs: [] });
      await send('response.content_part.done', { item_id, output_index: index, content_index: 0, part: messageItem.content[0] });
      await send('response.output_item.done', { output_index: index, item: messageItem });
      index++;
    }
    if (callItem) {
      const item_id = callItem.id;
      await send('response.output_item.added', { output_index: index, item: { ...callItem, status: 'in_progress', arguments: '' } });
      for (const piece of pieces(argumentsText, pieceChars)) await send('response.function_call_arguments.delta', { item_id, output_index: index, delta: piece }, true);
      await send('response.function_call_arguments.done', { item_id, output_index: index, arguments: argumentsText });
      await send('response.output_item.done', { output_index: index, item: callItem });
    }
    if (customItem) {
      const item_id = customItem.id;
      await send('response.output_item.added', { output_index: index, item: { ...customItem, status: 'in_progress', input: '' } });
      for (const piece of pieces(argumentsText, pieceChars)) await send('response.custom_tool_call_input.delta', { item_id, output_index: index, delta: piece }, true);
      await send('response.custom_tool_call_input.done', { item_id, output_index: index, input: argumentsText });
      await send('response.output_item.done', { output_index: index, item: customItem });
    }
    await send('response.completed', { response: response('completed', true) });
    res.end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    received,
    strays,
    reported: () => received.reduce((sum, r) => ({ input: sum.input + (r.usage?.input ?? 0), output: sum.output + (r.usage?.output ?? 0) }), { input: 0, output: 0 }),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
