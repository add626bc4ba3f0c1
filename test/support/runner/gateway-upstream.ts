// A model upstream for the gateway tests: a real HTTP server on 127.0.0.1 that records what it
// receives (and whether the client went away) and answers each request with the next scripted
// reply: whole JSON in an API's shape, an SSE stream sent piece by piece (each piece may wait for
// the test to release it), an error, or silence.
import { once } from 'node:events';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  raw: string;
  body: Record<string, unknown>;
  /** When the request had fully arrived (Date.now()). */
  at: number;
  /** Resolves when the client closed the connection before the answer ended. */
  aborted: Promise<void>;
}

export type Reply =
  | { status?: number; headers?: Record<string, string>; json: unknown }
  | { status?: number; headers?: Record<string, string>; text: string }
  | { stream: (string | Promise<void>)[] }
  | { hang: true };

export interface FakeUpstream {
  url: string;
  received: Received[];
  /** Queues the replies for the next requests, in order (when the queue is empty: `fallback`). */
  reply(...replies: Reply[]): void;
  fallback: (req: Received) => Reply;
  /** Resolves when the n-th request (1-based) has arrived. */
  arrival(n: number): Promise<Received>;
  /** Drops every open connection at once (an upstream that breaks off). */
  destroyConnections(): void;
  close(): Promise<void>;
}

export async function startUpstream(prefix = ''): Promise<FakeUpstream> {
  const queue: Reply[] = [];
  const received: Received[] = [];
  const waiters: { n: number; resolve: (r: Received) => void }[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: Record<string, unknown> = {};
    try {
      body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
    } catch {
      body = {};
    }
    const aborted = new Promise<void>((resolve) => res.once('close', () => (res.writableFinished ? undefined : resolve())));
    const entry: Received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, raw, body, at: Date.now(), aborted };
    received.push(entry);
    for (const waiter of waiters.filter((w) => w.n <= received.length)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(received[waiter.n - 1]!);
    }
    const reply = queue.shift() ?? upstream.fallback(entry);
    if ('hang' in reply) return;
    if ('stream' in reply) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      for (const piece of reply.stream) {
        if (typeof piece === 'string') res.write(piece);
        else await piece;
        if (res.destroyed) return;
      }
      res.end();
      return;
    }
    const text = 'json' in reply ? JSON.stringify(reply.json) : reply.text;
    res.writeHead(reply.status ?? 200, { 'content-type': 'json' in reply ? 'application/json' : 'text/plain', ...reply.headers });
    res.end(text);
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const upstream: FakeUpstream = {
    url: `http://127.0.0.1:${port}${prefix}`,
    received,
    reply: (...replies) => queue.push(...replies),
    fallback: () => ({ status: 500, json: { error: { message: 'no reply scripted' } } }),
    arrival: (n) => (received.length >= n ? Promise.resolve(received[n - 1]!) : new Promise((resolve) => waiters.push({ n, resolve }))),
    destroyConnections: () => server.closeAllConnections(),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return upstream;
}

/** A promise the test resolves itself (to let a stream go on, for example). */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

export const sse = (data: unknown, event?: string) => `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

export const chatAnswer = (text: string, usage: { prompt_tokens: number; completion_tokens: number } | null = { prompt_tokens: 10, completion_tokens: 5 }, model = 'gpt-4o') => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  model,
  choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
  ...(usage ? { usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } } : {}),
});

export const chatChunk = (text: string) => ({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: text } }] });

export const messagesAnswer = (text: string) => ({
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-20250514',
  content: [{ type: 'text', text }],
  stop_reason: 'end_turn',
  usage: { input_tokens: 20, output_tokens: 8 },
});

/** Reads a response body as it arrives; `next()` gives the text received since the last call. */
export function bodyReader(response: Response): { next(): Promise<string | undefined>; rest(): Promise<string>; cancel(): Promise<void> } {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  return {
    cancel: () => reader.cancel(),
    async next() {
      const { value, done } = await reader.read();
      return done ? undefined : decoder.decode(value, { stream: true });
    },
    async rest() {
      let text = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return text + decoder.decode();
        text += decoder.decode(value, { stream: true });
      }
    },
  };
}
