// A scripted Anthropic Messages service on 127.0.0.1, for the real Claude Code CLI: it answers
// `/v1/messages` (with or without `?beta=true`), streamed and not, as the service does: a
// `message_start` with the input's usage, content blocks (`text`, `tool_use` with its JSON input
// sent in `input_json_delta` pieces), a `message_delta` with the stop reason and output usage,
// `message_stop`; `/v1/messages/count_tokens`; `/v1/models`; errors in the API's own shape.
// It is scripted by turns: a conversation's turn is the number of assistant messages it already
// holds, so a retried request gets the same answer and several conversations never share one.
// Requests without tools (titles, summaries a CLI asks for on the side) get a short text answer.
// Model timings: the first byte after `firstByteMs`, then the stream trickles, `chunkMs` apart.
import { once } from 'node:events';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Turn = { text: string } | { tool: string; input: Record<string, unknown>; text?: string };

export interface MessagesRequest {
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
  /** The conversation's turn this request asked for (tool-bearing requests only). */
  turn: number | undefined;
  at: number;
}

export interface MessagesUpstreamOptions {
  /** What the main conversation's model says, turn by turn; after the last, "Done." */
  turns: Turn[];
  /** The key the service takes (x-api-key or Bearer); anything else is a 401. None: any key, or none (a local server). */
  key?: string;
  firstByteMs?: number;
  chunkMs?: number;
  /** Tokens reported per request. */
  usage?: { input: number; output: number; cacheRead?: number };
}

export interface MessagesUpstream {
  url: string;
  received: MessagesRequest[];
  close(): Promise<void>;
}

const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startMessagesUpstream(options: MessagesUpstreamOptions): Promise<MessagesUpstream> {
  const received: MessagesRequest[] = [];
  const usage = options.usage ?? { input: 1200, output: 40 };
  let ids = 0;
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
    } catch {
      return json(res, 400, apiError('invalid_request_error', 'the body is not JSON'));
    }
    const url = req.url ?? '';
    const route = url.split('?', 1)[0];
    const key = req.headers['x-api-key'] ?? /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const messages = Array.isArray(body.messages) ? (body.messages as { role?: string }[]) : [];
    const hasTools = Array.isArray(body.tools) && body.tools.length > 0;
    const turn = route === '/v1/messages' && hasTools ? messages.filter((m) => m.role === 'assistant').length : undefined;
    received.push({ url, headers: req.headers, body, turn, at: Date.now() });
    if (options.key !== undefined && key !== options.key) return json(res, 401, apiError('authentication_error', 'invalid x-api-key'));
    if (route === '/v1/models') return json(res, 200, { data: [{ type: 'model', id: 'claude-sonnet-4-5', display_name: 'Claude Sonnet 4.5', created_at: '2025-09-29T00:00:00Z' }], has_more: false, first_id: 'claude-sonnet-4-5', last_id: 'claude-sonnet-4-5' });
    if (route === '/v1/messages/count_tokens') return json(res, 200, { input_tokens: Math.ceil(JSON.stringify(body).length / 4) });
    if (route !== '/v1/messages' || req.method !== 'POST') return json(res, 404, apiError('not_found_error', `no such endpoint: ${route}`));
    const script: Turn = turn === undefined ? { text: 'Task on a file' } : (options.turns[turn] ?? { text: 'Done.' });
    const model = typeof body.model === 'string' ? body.model : 'claude-sonnet-4-5';
    const id = `msg_${String(++ids).padStart(6, '0')}`;
    const blocks: Record<string, unknown>[] = [];
    if ('text' in script && script.text) blocks.push({ type: 'text', text: script.text });
    if ('tool' in script) blocks.push({ type: 'tool_use', id: `toolu_${String(ids).padStart(6, '0')}`, name: script.tool, input: script.input });
    const stopReason = 'tool' in script ? 'tool_use' : 'end_turn';
    const usageStart = { input_tokens: usage.input, cache_creation_input_tokens: 0, cache_read_input_tokens: usage.cacheRead ?? 0, output_tokens: 1 };
    await sleep(options.firstByteMs ?? 0);
    if (res.destroyed) return;
    if (body.stream !== true) {
      return json(res, 200, { id, type: 'message', role: 'assistant', model, content: blocks, stop_reason: stopReason, stop_sequence: null, usage: { ...usageStart, output_tokens: usage.output } });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': `req_${id}` });
    const pieces: string[] = [sse('message_start', { type: 'message_start', message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: usageStart } })];
    blocks.forEach((block, index) => {
      if (block.type === 'text') {
        pieces.push(sse('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }));
        for (const part of split(String(block.text), 12)) pieces.push(sse('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: part } }));
      } else {
        pieces.push(sse('content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } }));
        for (const part of split(JSON.stringify(block.input), 16)) pieces.push(sse('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: part } }));
      }
      pieces.push(sse('content_block_stop', { type: 'content_block_stop', index }));
    });
    pieces.push(sse('message_delta', { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage.output } }));
    pieces.push(sse('message_stop', { type: 'message_stop' }));
    for (const piece of pieces) {
      if (res.destroyed) return;
      res.write(piece);
      if (options.chunkMs) await sleep(options.chunkMs);
    }
    res.end();
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function split(text: string, size: number): string[] {
  const parts: string[] = [];
  for (let i = 0; i < text.length; i += size) parts.push(text.slice(i, i + size));
  return parts.length > 0 ? parts : [''];
}

function apiError(type: string, message: string) {
  return { type: 'error', error: { type, message } };
}

function json(res: http.ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) });
  res.end(text);
}
