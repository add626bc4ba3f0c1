// The gateway's HTTP side: the one door of a run to a model. A request names its run by the token
// it carries (Authorization: Bearer, x-api-key, api-key, x-goog-api-key, a Gemini path's `?key=`,
// or the Term Challenge proxy body's agent_hash), is routed by its exact path (or a Gemini path
// read by gemini.ts) to one API shape, and goes only to that run's upstream:
// nothing in the request (path, absolute URL, Host, headers, model) can point it elsewhere.
import { chmod, lstat, mkdir, rm, stat } from 'node:fs/promises';
import * as http from 'node:http';
import * as https from 'node:https';
import * as path from 'node:path';
import { errorMessage } from '../../../shared/errors.ts';
import { anthropicError, messages } from './anthropic.ts';
import { DEFAULT_RETRY, KeyGate, type RetryPolicy } from './backoff.ts';
import { forward, scrub, sendJson, sendOnce, upstreamHeaders, upstreamUrl, type Transport } from './forward.ts';
import { gemini, geminiError, geminiRoute, queryKey } from './gemini.ts';
import { Grant, type OpenRunOptions, type RunGrant } from './grant.ts';
import { serveLocal, serveLocalPassthrough } from './lmServe.ts';
import { chat, responses } from './openai.ts';
import { proxy } from './proxy.ts';
import { isRecord, openAiError, RequestSchema, type ApiShape, type PathRoute, type UpstreamApi } from './shape.ts';

export interface GatewayOptions {
  /** Largest request body an agent may send (default 8 MiB). */
  maxBodyBytes?: number;
  /** Time an agent has to send its request headers (default 10 s). */
  headersTimeoutMs?: number;
  /** Time an agent has to send its whole request (default 60 s). */
  requestTimeoutMs?: number;
  /** A silent upstream (no byte for this long) is given up on (default 300 s). */
  upstreamIdleTimeoutMs?: number;
  /** Largest non-streaming answer read from the upstream (default 64 MiB). */
  maxAnswerBytes?: number;
  retry?: Partial<RetryPolicy>;
  /** Called when a key is held back after a 429/503 (never with the key). */
  onBackoff?: (info: { runId: string; status: number; waitMs: number }) => void;
}

export interface Gateway {
  /** Listens on a host Unix socket (mode 0600, in a folder only its owner may enter). */
  listenSocket(socketPath: string): Promise<void>;
  /** Listens on 127.0.0.1 on a free port; returns `http://127.0.0.1:<port>`. */
  listenTcp(): Promise<string>;
  openRun(options: OpenRunOptions): RunGrant;
  close(): Promise<void>;
}

/** A request passed to the upstream as it is and not counted (model lists, token counting). */
interface Passthrough {
  method: 'GET' | 'POST';
  /** The upstream path for each upstream API (none: that API has no such endpoint). */
  paths: Partial<Record<UpstreamApi, string>>;
}

/** A request in one API's shape, counted and forwarded (`stream`: the route always streams). */
interface ApiRoute {
  shape: ApiShape;
  stream: boolean;
  /** What the path itself says (Gemini's model and method). */
  path?: PathRoute;
}

type Route = ApiRoute | Passthrough;

const MODELS: Passthrough = { method: 'GET', paths: { openai: '/models', anthropic: '/v1/models' } };
const COUNT_TOKENS: Passthrough = { method: 'POST', paths: { anthropic: '/v1/messages/count_tokens' } };

const ROUTES = new Map<string, Route>([
  ['/v1/chat/completions', { shape: chat, stream: false }],
  ['/chat/completions', { shape: chat, stream: false }],
  ['/v1/responses', { shape: responses, stream: false }],
  ['/responses', { shape: responses, stream: false }],
  ['/v1/messages', { shape: messages, stream: false }],
  ['/messages', { shape: messages, stream: false }],
  ['/llm/proxy', { shape: proxy, stream: false }],
  ['/llm/proxy/stream', { shape: proxy, stream: true }],
  ['/v1/messages/count_tokens', COUNT_TOKENS],
  ['/v1/models', MODELS],
  ['/models', MODELS],
]);

/** A Gemini path's route: a call in the Gemini shape, or a passthrough to the same path upstream. */
function geminiRouteOf(read: Exclude<ReturnType<typeof geminiRoute>, undefined>): Route | undefined {
  if (read.kind === 'call') return { shape: gemini, stream: read.route.sse, path: read.route };
  if (read.kind === 'countTokens') return { method: 'POST', paths: { gemini: read.upstreamPath } };
  if (read.kind === 'models') return { method: 'GET', paths: { gemini: read.upstreamPath } };
  return undefined;
}

const NO_TOKEN = 'Belay gateway: this request carries no run token (send the key Belay gave the run, e.g. as Authorization: Bearer)';
const UNKNOWN_TOKEN = 'Belay gateway: unknown or closed run token';

/** Longest Unix socket path the kernel takes (sun_path is 108 bytes with its NUL). */
const MAX_SOCKET_PATH_BYTES = 107;

function headerToken(headers: http.IncomingHttpHeaders): string | undefined {
  const bearer = /^\s*Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '');
  if (bearer) return bearer[1];
  for (const name of ['x-api-key', 'api-key', 'x-goog-api-key'] as const) {
    const value = headers[name];
    if (typeof value === 'string' && value.trim()) return value.trim();
  }
  return undefined;
}

class BodyTooLarge extends Error {}

function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      reject(new BodyTooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.pause();
        reject(new BodyTooLarge());
      } else chunks.push(chunk);
    });
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

export function startGateway(options: GatewayOptions = {}): Gateway {
  const maxBodyBytes = options.maxBodyBytes ?? 8 * 1024 * 1024;
  const grants = new Map<string, Grant>();
  const servers: http.Server[] = [];
  const sockets: string[] = [];
  const gate = new KeyGate();
  const transport: Transport = {
    agents: {
      http: new http.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 256, scheduling: 'lifo' }),
      https: new https.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 256, scheduling: 'lifo' }),
    },
    gate,
    retry: { ...DEFAULT_RETRY, ...options.retry },
    idleTimeoutMs: options.upstreamIdleTimeoutMs ?? 300_000,
    maxAnswerBytes: options.maxAnswerBytes ?? 64 * 1024 * 1024,
    onBackoff: options.onBackoff,
  };
  let closed = false;

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const startedAt = Date.now();
    const url = req.url ?? '';
    const cut = url.indexOf('?');
    const pathname = cut < 0 ? url : url.slice(0, cut);
    const query = cut < 0 ? '' : url.slice(cut + 1);
    const geminiPath = url.startsWith('/') && !ROUTES.has(pathname) ? geminiRoute(pathname, query) : undefined;
    const route = url.startsWith('/') ? (ROUTES.get(pathname) ?? (geminiPath ? geminiRouteOf(geminiPath) : undefined)) : undefined;
    const passthrough = route && 'paths' in route ? route : undefined;
    const shape = route && 'shape' in route ? route.shape : geminiPath ? gemini : undefined;
    const fail = (status: number, code: string, message: string) => {
      sendJson(res, status, shape ? shape.error(status, code, message) : openAiError(status, code, message));
      if (!req.complete) req.resume();
    };
    if (closed) return fail(503, 'gateway_closed', 'Belay gateway: the gateway is closing');
    if (geminiPath?.kind === 'invalid') return fail(400, 'invalid_path', `Belay gateway: ${geminiPath.message}`);
    if (!route) return fail(404, 'not_found', `Belay gateway: no such endpoint; this gateway serves /v1/chat/completions, /v1/responses, /v1/messages, /v1/messages/count_tokens, /v1beta/models/{model}:generateContent and :streamGenerateContent, /llm/proxy, /llm/proxy/stream and /v1/models`);
    const method = passthrough?.method ?? 'POST';
    if (req.method !== method) {
      res.setHeader('allow', method);
      return fail(405, 'method_not_allowed', `Belay gateway: use ${method} here`);
    }
    const token = headerToken(req.headers) ?? (geminiPath ? queryKey(query) : undefined);
    const grant = token === undefined ? undefined : grants.get(token);
    if (!grant && !(token === undefined && shape === proxy)) return fail(401, 'invalid_run_token', token === undefined ? NO_TOKEN : UNKNOWN_TOKEN);
    if (passthrough) return grant!.local ? passLocal(passthrough, grant!, req, res) : pass(passthrough, grant!, req, res);
    return callApi(route as ApiRoute, token, grant, req, res, fail, startedAt);
  }

  /** Reads, checks and forwards a request in one API's shape. */
  async function callApi(route: ApiRoute, token: string | undefined, grant: Grant | undefined, req: http.IncomingMessage, res: http.ServerResponse, fail: (status: number, code: string, message: string) => void, startedAt: number): Promise<void> {
    const { shape } = route;
    let raw: Buffer;
    try {
      raw = await readBody(req, maxBodyBytes);
    } catch (error) {
      if (error instanceof BodyTooLarge) {
        fail(413, 'request_too_large', `Belay gateway: the request body is larger than ${maxBodyBytes} bytes`);
        res.once('finish', () => req.destroy());
        return;
      }
      return fail(400, 'bad_request', `Belay gateway: ${errorMessage(error)}`);
    }
    let json: unknown;
    try {
      json = JSON.parse(raw.toString('utf8'));
    } catch {
      json = undefined;
    }
    const request = RequestSchema.safeParse(json);
    if (!request.success) return fail(400, 'invalid_json', 'Belay gateway: the request body must be a JSON object');
    // term_sdk's stream route sends no Authorization header: the proxy body's agent_hash carries the token.
    if (token === undefined && shape === proxy && isRecord(json) && typeof json.agent_hash === 'string') grant = grants.get(json.agent_hash);
    if (!grant) return fail(401, 'invalid_run_token', token === undefined ? NO_TOKEN : UNKNOWN_TOKEN);
    if (grant.budgetExceeded) {
      grant.account({ api: shape.api, model: route.path?.model ?? request.data.model ?? null, stream: request.data.stream === true || route.stream, status: 402, startedAt, inputChars: raw.length, outputChars: 0, reachedModel: false, retries: 0, error: 'budget_exceeded', refused: true });
      return fail(402, shape === proxy ? 'cost_limit_exceeded' : 'budget_exceeded', grant.budgetMessage());
    }
    // A run served by a model in the editor has no HTTP upstream: lmServe.ts translates for it.
    const plan = grant.local ? undefined : shape.plan(request.data, grant.upstream, { forceStream: route.stream, ...(route.path ? { route: route.path } : {}) });
    if (plan && 'refused' in plan) return fail(400, 'unsupported_by_upstream', `Belay gateway: ${plan.refused}`);
    // The Anthropic SDK's beta client (Claude Code's) asks for `?beta=true`: that one parameter goes on, nothing else of the query.
    if (plan && shape === messages && new URLSearchParams(req.url?.split('?')[1] ?? '').get('beta') === 'true') plan.path += '?beta=true';
    // Closing the run (or the gateway, which closes every run) aborts what is in flight.
    const controller = new AbortController();
    grant.inflight.add(controller);
    const agentGone = () => controller.abort(new Error('the agent disconnected'));
    res.once('close', () => {
      if (!res.writableFinished) agentGone();
    });
    if (res.destroyed || req.socket.destroyed) agentGone();
    try {
      if (grant.local) await serveLocal({ grant, model: grant.local, shape, body: request.data, route: { stream: route.stream, ...(route.path ? { model: route.path.model, list: route.path.method === 'streamGenerateContent' && !route.path.sse } : {}) }, res, signal: controller.signal, startedAt, inputChars: raw.length, idleTimeoutMs: transport.idleTimeoutMs });
      else await forward(transport, { grant, shape, plan: plan!, inputChars: raw.length, agentHeaders: req.headers, res, signal: controller.signal, startedAt });
    } finally {
      grant.inflight.delete(controller);
    }
  }

  /** A passthrough request on a run served by a model in the editor: its model list, its token counter. */
  async function passLocal(route: Passthrough, grant: Grant, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const onGemini = route.paths.gemini !== undefined;
    const errorShape = onGemini ? geminiError : anthropicError;
    let body: unknown;
    try {
      body = route.method === 'POST' ? JSON.parse((await readBody(req, maxBodyBytes)).toString('utf8')) : undefined;
      if (route.method === 'POST' && !isRecord(body)) throw new Error('not an object');
    } catch (error) {
      if (error instanceof BodyTooLarge) {
        res.once('finish', () => req.destroy());
        return sendJson(res, 413, errorShape(413, 'request_too_large', `Belay gateway: the request body is larger than ${maxBodyBytes} bytes`));
      }
      return sendJson(res, 400, errorShape(400, 'invalid_json', 'Belay gateway: the request body must be a JSON object'));
    }
    const controller = new AbortController();
    grant.inflight.add(controller);
    res.once('close', () => controller.abort(new Error('the agent disconnected')));
    try {
      await serveLocalPassthrough(grant.local!, req.url?.split('?', 1)[0] ?? '', body, res, controller.signal, onGemini);
    } finally {
      grant.inflight.delete(controller);
    }
  }

  /** A passthrough request goes to the upstream as it is (nothing is counted). */
  async function pass(route: Passthrough, grant: Grant, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const errorShape = route.paths.gemini ? geminiError : grant.upstream.api === 'anthropic' ? anthropicError : openAiError;
    const path = route.paths[grant.upstream.api];
    if (!path) {
      req.resume();
      return sendJson(res, 400, errorShape(400, 'unsupported_by_upstream', `Belay gateway: this run's model upstream has no ${req.url?.split('?', 1)[0]} endpoint`));
    }
    let body: Buffer | undefined;
    if (route.method === 'POST') {
      try {
        body = await readBody(req, maxBodyBytes);
        if (!isRecord(JSON.parse(body.toString('utf8')))) throw new Error('not an object');
      } catch (error) {
        if (error instanceof BodyTooLarge) res.once('finish', () => req.destroy());
        const status = error instanceof BodyTooLarge ? 413 : 400;
        return sendJson(res, status, errorShape(status, status === 413 ? 'request_too_large' : 'invalid_json', status === 413 ? `Belay gateway: the request body is larger than ${maxBodyBytes} bytes` : 'Belay gateway: the request body must be a JSON object'));
      }
    }
    const controller = new AbortController();
    grant.inflight.add(controller);
    res.once('close', () => controller.abort(new Error('the agent disconnected')));
    try {
      const response = await sendOnce(transport, upstreamUrl(grant.upstream.baseUrl, path), route.method, upstreamHeaders(grant, req.headers, false), body, controller.signal);
      const chunks: Buffer[] = [];
      for await (const chunk of response as AsyncIterable<Buffer>) chunks.push(chunk);
      const answer = scrub(Buffer.concat(chunks), grant.upstream.key);
      res.writeHead(response.statusCode ?? 502, { 'content-type': response.headers['content-type'] ?? 'application/json', 'content-length': String(answer.length) });
      res.end(answer);
    } catch (error) {
      sendJson(res, 502, errorShape(502, 'upstream_unreachable', `Belay gateway: ${errorMessage(error)}`));
    } finally {
      grant.inflight.delete(controller);
    }
  }

  function newServer(): http.Server {
    const server = http.createServer({ headersTimeout: options.headersTimeoutMs ?? 10_000, requestTimeout: options.requestTimeoutMs ?? 60_000, keepAliveTimeout: 65_000, connectionsCheckingInterval: 1000, noDelay: true }, (req, res) => {
      handle(req, res).catch((error: unknown) => sendJson(res, 500, openAiError(500, 'gateway_error', `Belay gateway: ${errorMessage(error)}`)));
    });
    // An absolute-form request line (GET http://evil/ HTTP/1.1) is answered like any unknown path;
    // CONNECT tunnels are refused outright.
    server.on('connect', (_req, socket) => socket.end('HTTP/1.1 405 Method Not Allowed\r\nconnection: close\r\ncontent-length: 0\r\n\r\n'));
    server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
      const status = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? '408 Request Timeout' : error.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : '400 Bad Request';
      if (socket.writable) socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
      else socket.destroy();
    });
    servers.push(server);
    return server;
  }

  function listen(server: http.Server, target: string | { port: number; host: string }): Promise<void> {
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      const done = () => {
        server.off('error', reject);
        resolve();
      };
      if (typeof target === 'string') server.listen(target, done);
      else server.listen(target.port, target.host, done);
    });
  }

  return {
    async listenSocket(socketPath) {
      if (closed) throw new Error('the gateway is closed');
      const absolute = path.resolve(socketPath);
      if (Buffer.byteLength(absolute) > MAX_SOCKET_PATH_BYTES) throw new Error(`the gateway's socket path is longer than ${MAX_SOCKET_PATH_BYTES} bytes: ${absolute}`);
      const folder = path.dirname(absolute);
      await mkdir(folder, { recursive: true, mode: 0o700 });
      const info = await stat(folder);
      if (process.getuid && info.uid !== process.getuid()) throw new Error(`the gateway's socket folder belongs to someone else: ${folder}`);
      if ((info.mode & 0o077) !== 0) throw new Error(`the gateway's socket folder must be private (mode 700), it is ${(info.mode & 0o777).toString(8)}: ${folder}`);
      const existing = await lstat(absolute).catch(() => undefined);
      if (existing?.isSocket()) await rm(absolute, { force: true });
      else if (existing) throw new Error(`something other than a socket is in the way: ${absolute}`);
      const server = newServer();
      await listen(server, absolute);
      await chmod(absolute, 0o600);
      sockets.push(absolute);
    },
    async listenTcp() {
      if (closed) throw new Error('the gateway is closed');
      const server = newServer();
      await listen(server, { port: 0, host: '127.0.0.1' });
      const address = server.address();
      if (!address || typeof address === 'string') throw new Error('the gateway has no TCP address');
      return `http://127.0.0.1:${address.port}`;
    },
    openRun(runOptions) {
      if (closed) throw new Error('the gateway is closed');
      const grant = new Grant(runOptions, (g) => {
        if (grants.get(g.token) === g) grants.delete(g.token);
      });
      grants.set(grant.token, grant);
      return grant;
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const grant of [...grants.values()]) grant.close();
      await Promise.all(
        servers.map(
          (server) =>
            new Promise<void>((resolve) => {
              server.close(() => resolve());
              server.closeAllConnections();
            }),
        ),
      );
      transport.agents.http.destroy();
      transport.agents.https.destroy();
      await Promise.all(sockets.map((socket) => rm(socket, { force: true })));
    },
  };
}
