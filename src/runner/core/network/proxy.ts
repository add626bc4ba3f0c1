// The only way out of an `allowlist` (or, when the person allows it, `public`) phase: an HTTP(S)
// proxy Belay runs on the host, shown inside through the executor's relay like the LLM gateway.
// CONNECT for https, absolute-form for plain http; any other request is refused. A host is let
// through only when the phase's policy names it, and a name is never followed to an internal
// address (loopback, link-local, private) unless the allowlist names that address itself. Inside
// a tunnel the first bytes are read: a TLS server name or an HTTP Host that differs from the
// CONNECT's host ends it. Every attempt is a line of `<runDir>/network.jsonl`.
import { appendFile } from 'node:fs/promises';
import * as dns from 'node:dns/promises';
import * as http from 'node:http';
import * as net from 'node:net';
import type { Duplex } from 'node:stream';
import { errorMessage } from '../../../shared/errors.ts';
import { isInternalAddress, matchRule, normalHost, parseHostRule, type HostRule, type PhasePolicy } from './policy.ts';

/** The name the log gives a phase (the shared format of network.jsonl). */
export type LogPhase = 'agent' | 'verifier';

/** One line of network.jsonl. */
export interface NetworkLogEntry {
  time: string;
  phase: LogPhase;
  host: string;
  port: number;
  allowed: boolean;
  reason?: string;
}

/** Where a name leads: `address` is what the policy judges; `connect`, when given, is where the proxy really connects (tests). */
export interface Resolved {
  address: string;
  connect?: { host: string; port: number };
}

/** Finds the addresses of a name; DNS unless a test gives its own map of names to loopback ports. */
export type Resolver = (host: string, port: number) => Promise<Resolved[]>;

export interface EgressProxyOptions {
  phase: LogPhase;
  /** `allowlist` or `public` (no-network needs no proxy). */
  policy: PhasePolicy;
  /** `<runDir>/network.jsonl`. */
  logFile: string;
  /** Not a setting: tests map names to servers on 127.0.0.1. */
  resolve?: Resolver;
  /** The lines already written to `logFile`, shared by the proxies of one run's phases (the cap is the file's). */
  logLines?: { count: number };
  /** Connections open at once (tunnels included); more are closed as they come. */
  maxConnections?: number;
  /** How long a client may take to send a request's head. */
  headerTimeoutMs?: number;
  /** A tunnel or a forwarded request idle this long is closed. */
  idleTimeoutMs?: number;
}

/** Lines of network.jsonl at most; past them attempts are counted, not written. */
export const MAX_LOG_LINES = 10_000;
const PEEK_LIMIT = 16 * 1024;
const HOP_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

const dnsResolver: Resolver = async (host) => (await dns.lookup(host, { all: true, verbatim: true })).map((entry) => ({ address: entry.address }));

type Decision = { allowed: true; target: { host: string; port: number } } | { allowed: false; reason: string };

export class EgressProxy {
  readonly #options: EgressProxyOptions;
  readonly #rules: HostRule[];
  readonly #server: http.Server;
  readonly #sockets = new Set<Duplex>();
  #log: Promise<void> = Promise.resolve();
  readonly #lines: { count: number };
  #unlogged = 0;
  #closed = false;

  constructor(options: EgressProxyOptions) {
    if (options.policy.mode === 'no-network') throw new Error('a no-network phase has no proxy');
    this.#options = options;
    this.#lines = options.logLines ?? { count: 0 };
    this.#rules = options.policy.mode === 'allowlist' ? options.policy.allowedHosts.map(parseHostRule) : [];
    const headerTimeout = options.headerTimeoutMs ?? 15_000;
    this.#server = http.createServer({ headersTimeout: headerTimeout, requestTimeout: 0, connectionsCheckingInterval: Math.max(50, Math.min(1000, headerTimeout / 4)) });
    this.#server.maxConnections = options.maxConnections ?? 64;
    this.#server.keepAliveTimeout = 5_000;
    this.#server.on('connection', (socket) => this.#track(socket));
    this.#server.on('request', (req, res) => void this.#forward(req, res));
    this.#server.on('connect', (req, socket, head) => void this.#tunnel(req, socket, head));
    this.#server.on('clientError', (_error, socket) => socket.destroy());
    this.#server.on('error', () => undefined);
  }

  /** Attempts refused by the line cap of network.jsonl. */
  get unlogged(): number {
    return this.#unlogged;
  }

  /** Listens on a Unix socket (a run's service) or, with no path, a loopback port; resolves the port or the path. */
  listen(socketPath?: string): Promise<string | number> {
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      const done = () => {
        this.#server.off('error', reject);
        const address = this.#server.address();
        resolve(typeof address === 'object' && address ? address.port : socketPath!);
      };
      if (socketPath !== undefined) this.#server.listen(socketPath, done);
      else this.#server.listen(0, '127.0.0.1', done);
    });
  }

  /** Stops listening, cuts every connection and tunnel, and waits for the log. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const socket of this.#sockets) socket.destroy();
    this.#server.closeAllConnections();
    await closed;
    await this.#log;
  }

  #track(socket: Duplex): void {
    this.#sockets.add(socket);
    socket.once('close', () => this.#sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    if (socket instanceof net.Socket) {
      socket.setTimeout(this.#options.idleTimeoutMs ?? 300_000, () => socket.destroy());
    }
  }

  #record(host: string, port: number, allowed: boolean, reason?: string): void {
    if (this.#lines.count >= MAX_LOG_LINES) {
      this.#unlogged++;
      return;
    }
    this.#lines.count++;
    const entry: NetworkLogEntry = { time: new Date().toISOString(), phase: this.#options.phase, host, port, allowed, ...(reason !== undefined ? { reason } : {}) };
    const line = JSON.stringify(entry) + '\n';
    this.#log = this.#log.then(() => appendFile(this.#options.logFile, line, { mode: 0o600 })).catch(() => undefined);
  }

  /** Whether `host:port` may be reached, and where the connection goes. */
  async #decide(rawHost: string, port: number): Promise<Decision> {
    const host = normalHost(rawHost);
    if (!Number.isInteger(port) || port < 1 || port > 65535) return { allowed: false, reason: `port ${port} is not a port` };
    if (host === '' || host.length > 253) return { allowed: false, reason: 'no host' };
    const rule = this.#options.policy.mode === 'allowlist' ? matchRule(this.#rules, host, port) : undefined;
    if (this.#options.policy.mode === 'allowlist' && !rule) return { allowed: false, reason: `${host}:${port} is not on the allowlist` };
    if (net.isIP(host) !== 0) {
      // An address is let through when the allowlist names it, or (public) when it is not internal.
      if (!rule && isInternalAddress(host)) return { allowed: false, reason: `${host} is an internal address` };
      return { allowed: true, target: { host, port } };
    }
    let found: Resolved[];
    try {
      found = await (this.#options.resolve ?? dnsResolver)(host, port);
    } catch (error) {
      return { allowed: false, reason: `${host} does not resolve: ${errorMessage(error)}` };
    }
    if (found.length === 0) return { allowed: false, reason: `${host} does not resolve` };
    // Every address is judged: a name with one internal address among public ones is refused whole.
    const named = (address: string) => matchRule(this.#rules, normalHost(address), port) !== undefined;
    const internal = found.find((entry) => isInternalAddress(entry.address) && !named(entry.address));
    if (internal) return { allowed: false, reason: `${host} resolves to the internal address ${internal.address}` };
    const first = found[0]!;
    return { allowed: true, target: first.connect ?? { host: first.address, port } };
  }

  async #tunnel(req: http.IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
    const authority = parseAuthority(req.url ?? '');
    if (!authority) {
      this.#record(req.url ?? '', 0, false, 'CONNECT needs host:port');
      refuse(client, 400, 'CONNECT needs host:port');
      return;
    }
    const decision = await this.#decide(authority.host, authority.port);
    const host = normalHost(authority.host);
    if (!decision.allowed) {
      this.#record(host, authority.port, false, decision.reason);
      refuse(client, 403, `Belay's network policy refused ${host}:${authority.port}: ${decision.reason}`);
      return;
    }
    if (this.#closed || client.destroyed) return;
    this.#record(host, authority.port, true);
    // The client's first bytes are read before anything reaches the host: a TLS server name or an
    // HTTP Host naming another host than the CONNECT's ends the tunnel.
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    let peeked = head;
    const check = (): 'wait' | 'ok' | string => {
      const named = namedHost(peeked);
      // What cannot be read within the limit is not let through unread.
      if (named === 'wait') return peeked.length >= PEEK_LIMIT ? '(unreadable)' : 'wait';
      if (named === undefined || normalHost(named) === host) return 'ok';
      return normalHost(named);
    };
    const verdict = await new Promise<'ok' | string | undefined>((resolve) => {
      const settle = (value: 'ok' | string | undefined) => {
        client.off('data', onData);
        client.off('close', onClose);
        resolve(value);
      };
      const onData = (chunk: Buffer) => {
        peeked = Buffer.concat([peeked, chunk]);
        const result = check();
        if (result !== 'wait') settle(result);
      };
      const onClose = () => settle(undefined);
      const first = check();
      if (first !== 'wait') return resolve(first);
      client.on('data', onData);
      client.once('close', onClose);
    });
    if (verdict === undefined) return;
    if (verdict !== 'ok') {
      const reason = verdict === '(unreadable)' ? `the tunnel to ${host} began with more than ${PEEK_LIMIT} bytes naming no host` : `the tunnel to ${host} named ${verdict} inside`;
      this.#record(verdict === '(unreadable)' ? host : verdict, authority.port, false, reason);
      client.destroy();
      return;
    }
    client.pause();
    const upstream = net.connect(decision.target.port, decision.target.host);
    this.#track(upstream);
    upstream.once('connect', () => {
      upstream.write(peeked);
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    upstream.once('error', end);
    upstream.once('close', () => client.end());
    client.once('close', () => upstream.destroy());
  }

  async #forward(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      this.#record('', 0, false, 'not a proxy request');
      return answer(res, 400, 'This is a proxy: send absolute-form requests (http://host/path) or CONNECT host:port.');
    }
    const host = normalHost(url.hostname);
    if (url.protocol !== 'http:') {
      this.#record(host, Number(url.port) || 0, false, `${url.protocol} is not proxied here`);
      return answer(res, 400, `Only http: URLs go through as requests; use CONNECT for https.`);
    }
    const port = url.port === '' ? 80 : Number(url.port);
    const hostHeader = req.headers.host;
    if (hostHeader !== undefined && normalHost(parseAuthority(hostHeader, port)?.host ?? hostHeader) !== host) {
      const other = normalHost(parseAuthority(hostHeader, port)?.host ?? hostHeader);
      this.#record(other, port, false, `the request for ${host} carried Host: ${other}`);
      return answer(res, 403, `Belay's network policy refused the request: its Host header names ${other}, its URL ${host}`);
    }
    const decision = await this.#decide(host, port);
    if (!decision.allowed) {
      this.#record(host, port, false, decision.reason);
      return answer(res, 403, `Belay's network policy refused ${host}:${port}: ${decision.reason}`);
    }
    this.#record(host, port, true);
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers)) if (!HOP_HEADERS.has(name) && value !== undefined) headers[name] = value;
    headers.host = url.host;
    const upstream = http.request({ host: decision.target.host, port: decision.target.port, method: req.method, path: `${url.pathname}${url.search}`, headers, setHost: false, agent: false });
    upstream.on('response', (response) => {
      const out: http.OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(response.headers)) if (!HOP_HEADERS.has(name) && value !== undefined) out[name] = value;
      res.writeHead(response.statusCode ?? 502, out);
      response.pipe(res);
      response.on('error', () => res.destroy());
    });
    upstream.on('error', (error) => {
      if (!res.headersSent) answer(res, 502, `${host}:${port} could not be reached: ${errorMessage(error)}`);
      else res.destroy();
    });
    req.pipe(upstream);
    res.once('close', () => upstream.destroy());
  }
}

function answer(res: http.ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text + '\n'), connection: 'close' });
  res.end(text + '\n');
}

function refuse(socket: Duplex, status: 400 | 403, text: string): void {
  const body = text + '\n';
  const reason = status === 403 ? 'Forbidden' : 'Bad Request';
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

/** `host:port`, `[v6]:port` (a missing port is `defaultPort`'s, when given). */
export function parseAuthority(text: string, defaultPort?: number): { host: string; port: number } | undefined {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+))(?::(\d{1,5}))?$/.exec(text.trim());
  if (!match) return undefined;
  const port = match[3] !== undefined ? Number(match[3]) : defaultPort;
  if (port === undefined) return undefined;
  return { host: match[1] ?? match[2]!, port };
}

/**
 * The host a tunnel's first bytes name: a TLS ClientHello's server name, or an HTTP request's Host.
 * 'wait' while the bytes are not yet enough to tell; undefined when they name none.
 */
export function namedHost(bytes: Buffer): string | undefined | 'wait' {
  if (bytes.length === 0) return 'wait';
  if (bytes[0] === 0x16) return clientHelloServerName(bytes);
  const text = bytes.subarray(0, PEEK_LIMIT).toString('latin1');
  if (!/^[A-Z]{3,10} /.test(text)) return /^[A-Z]{0,9}$/.test(text) ? 'wait' : undefined;
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return 'wait';
  const line = text.slice(0, end).split('\r\n').find((header) => /^host\s*:/i.test(header));
  if (!line) return undefined;
  const value = line.slice(line.indexOf(':') + 1).trim();
  return parseAuthority(value, 0)?.host ?? value;
}

function clientHelloServerName(bytes: Buffer): string | undefined | 'wait' {
  if (bytes.length < 5) return 'wait';
  const recordLength = bytes.readUInt16BE(3);
  if (bytes.length < 5 + recordLength) return 'wait';
  const hello = bytes.subarray(5, 5 + recordLength);
  try {
    if (hello[0] !== 0x01) return undefined;
    let at = 4 + 2 + 32; // type + length, version, random
    at += 1 + hello[at]!; // session id
    at += 2 + hello.readUInt16BE(at); // cipher suites
    at += 1 + hello[at]!; // compression methods
    if (at + 2 > hello.length) return undefined;
    const extensionsEnd = at + 2 + hello.readUInt16BE(at);
    at += 2;
    while (at + 4 <= extensionsEnd && at + 4 <= hello.length) {
      const type = hello.readUInt16BE(at);
      const length = hello.readUInt16BE(at + 2);
      at += 4;
      if (type === 0x0000) {
        // server_name: list length, then entries of type (0 = host name), length, name.
        let entry = at + 2;
        while (entry + 3 <= at + length) {
          const nameType = hello[entry]!;
          const nameLength = hello.readUInt16BE(entry + 1);
          if (nameType === 0) return hello.subarray(entry + 3, entry + 3 + nameLength).toString('latin1');
          entry += 3 + nameLength;
        }
        return undefined;
      }
      at += length;
    }
  } catch {
    return undefined;
  }
  return undefined;
}
