// Where every scripted model service listens: a free port on 127.0.0.1, kept-alive connections as
// a service keeps them, and a close that does not wait for the clients that still hold one.
import { once } from 'node:events';
import type * as http from 'node:http';
import type { AddressInfo } from 'node:net';

export async function listenOnLoopback(server: http.Server, onClose: () => void = () => undefined): Promise<{ port: number; close: () => Promise<void> }> {
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    port,
    close: () =>
      new Promise((resolve) => {
        onClose();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Waits a service's answers make (a model thinking), all cleared at once when it closes. */
export function waits(): { wait: (ms: number) => Promise<void>; clear: () => void } {
  const timers = new Set<NodeJS.Timeout>();
  return {
    wait: (ms) =>
      ms <= 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            const timer = setTimeout(() => {
              timers.delete(timer);
              resolve();
            }, ms);
            timers.add(timer);
          }),
    clear: () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}

/** A request's body as text, and as a JSON object ({} for anything else). */
export async function readJsonBody(req: http.IncomingMessage): Promise<{ raw: string; body: Record<string, unknown> }> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  const raw = Buffer.concat(chunks).toString('utf8');
  try {
    const parsed: unknown = raw ? JSON.parse(raw) : {};
    return { raw, body: parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {} };
  } catch {
    return { raw, body: {} };
  }
}
