// Shared by the `belay mcp` tests: an MCP client speaking raw newline-delimited JSON-RPC to a real
// child process (as a client that does not use the SDK would), and the SDK's own client over stdio.
import { spawn, type ChildProcess } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';

export interface RpcMessage {
  jsonrpc: '2.0';
  id?: number | string;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

/** A JSON-RPC peer over a child's stdin/stdout, one JSON object per line. */
export class RawClient {
  readonly child: ChildProcess;
  readonly lines: string[] = [];
  readonly messages: RpcMessage[] = [];
  stderr = '';
  readonly exited: Promise<number | null>;
  #nextId = 1;
  #buffer = '';
  #waiters: Array<{ match: (m: RpcMessage) => boolean; resolve: (m: RpcMessage) => void }> = [];
  #answerers = new Map<string, (request: RpcMessage) => object | undefined>();

  constructor(command: string, args: readonly string[], options: { env: NodeJS.ProcessEnv; cwd?: string }) {
    this.child = spawn(command, args, { env: options.env, cwd: options.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stderr!.setEncoding('utf8').on('data', (c: string) => (this.stderr += c));
    this.child.stdin!.on('error', () => undefined);
    this.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      this.#buffer += chunk;
      let at: number;
      while ((at = this.#buffer.indexOf('\n')) >= 0) {
        const line = this.#buffer.slice(0, at);
        this.#buffer = this.#buffer.slice(at + 1);
        this.lines.push(line);
        const message = JSON.parse(line) as RpcMessage;
        this.messages.push(message);
        const answerer = message.method !== undefined && message.id !== undefined ? this.#answerers.get(message.method) : undefined;
        const reply = answerer?.(message);
        if (reply) this.send({ jsonrpc: '2.0', id: message.id, ...reply });
        for (const waiter of [...this.#waiters]) {
          if (waiter.match(message)) {
            this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
            waiter.resolve(message);
          }
        }
      }
    });
    this.exited = new Promise((resolve) => this.child.on('close', (code) => resolve(code)));
  }

  /** Writes one message as one line. */
  send(message: object): void {
    this.child.stdin!.write(`${JSON.stringify(message)}\n`);
  }

  /** The first message (already received or still to come) that `match` accepts. */
  next(match: (m: RpcMessage) => boolean, what: string, timeoutMs = 20_000): Promise<RpcMessage> {
    const seen = this.messages.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${what} after ${timeoutMs} ms; stderr: ${this.stderr}`)), timeoutMs);
      this.#waiters.push({ match, resolve: (m) => (clearTimeout(timer), resolve(m)) });
    });
  }

  /** Sends a request and resolves with its response. */
  request(method: string, params?: object, id: number | string = this.#nextId++): Promise<RpcMessage> {
    this.send({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) });
    return this.next((m) => m.id === id && m.method === undefined, `response to ${method} (${id})`);
  }

  /**
   * Answers each request `method` the other side sends from now on with what `answer` gives
   * (`{ result }` or `{ error }`); undefined leaves that one unanswered.
   */
  answer(method: string, answer: (request: RpcMessage) => object | undefined): void {
    this.#answerers.set(method, answer);
  }

  notify(method: string, params?: object): void {
    this.send({ jsonrpc: '2.0', method, ...(params ? { params } : {}) });
  }

  /** initialize + notifications/initialized, as every client starts. */
  async initialize(capabilities: object = {}, clientName = 'raw-test-client'): Promise<RpcMessage> {
    const response = await this.request('initialize', { protocolVersion: '2025-06-18', capabilities, clientInfo: { name: clientName, version: '1.0.0' } });
    this.notify('notifications/initialized');
    return response;
  }

  /** Closes stdin (how an MCP client ends a stdio server) and resolves with the exit code. */
  close(): Promise<number | null> {
    this.child.stdin!.end();
    return this.exited;
  }
}

/** The official SDK client connected over stdio to `command args`. */
export async function sdkClient(command: string, args: string[], options: { env: NodeJS.ProcessEnv; cwd?: string; name?: string; capabilities?: ClientCapabilities }): Promise<{ client: Client; transport: StdioClientTransport; stderr: () => string }> {
  const transport = new StdioClientTransport({ command, args, env: options.env as Record<string, string>, ...(options.cwd ? { cwd: options.cwd } : {}), stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: options.name ?? 'sdk-test-client', version: '1.0.0' }, { capabilities: options.capabilities ?? {} });
  await client.connect(transport);
  return { client, transport, stderr: () => stderr };
}

/** The text parts of a tool result, joined. */
export function textOf(result: object): string {
  const parts = ((result as { content?: unknown }).content ?? []) as Array<{ type: string; text?: string }>;
  return parts.filter((p) => p.type === 'text').map((p) => p.text ?? '').join('');
}

/** Resolves once the client's stderr (Belay's and the wrapped server's) matches `pattern`. */
export function stderrShows(peer: RawClient, pattern: RegExp, what: string, timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (!pattern.test(peer.stderr)) return false;
      peer.child.stderr!.off('data', onData);
      clearTimeout(timer);
      resolve(peer.stderr);
      return true;
    };
    const onData = () => void queueMicrotask(check);
    const timer = setTimeout(() => (peer.child.stderr!.off('data', onData), reject(new Error(`no ${what} after ${timeoutMs} ms; stderr: ${peer.stderr}`))), timeoutMs);
    peer.child.stderr!.on('data', onData);
    check();
  });
}

/** The pid the test MCP server (test/fixtures/mcp/modern-server.ts) prints in its ready line. */
export async function serverPid(peer: RawClient): Promise<number> {
  return Number(/modern-deploy ready pid=(\d+)/.exec(await stderrShows(peer, /modern-deploy ready pid=\d+/, "the server's ready line"))![1]);
}
