// One agent request on its way to the upstream and back: the real key put in the header the API
// expects (the agent's own credentials never leave), 429s retried behind the key's shared gate,
// streams passed through as they arrive while usage is read on the side, and the key scrubbed
// from anything that comes back.
import * as http from 'node:http';
import * as https from 'node:https';
import { errorMessage } from '../../../shared/errors.ts';
import { retryDelay, type KeyGate, type RetryPolicy } from './backoff.ts';
import type { Grant } from './grant.ts';
import type { ApiShape, ForwardPlan, ReportedUsage, StreamWatcher } from './shape.ts';
import { SseReader, type SseEvent } from './sse.ts';

export interface Transport {
  agents: { http: http.Agent; https: https.Agent };
  gate: KeyGate;
  retry: RetryPolicy;
  /** A silent upstream (no byte for this long) is given up on. */
  idleTimeoutMs: number;
  /** Largest whole (non-streaming) answer read from the upstream. */
  maxAnswerBytes: number;
  onBackoff?: (info: { runId: string; status: number; waitMs: number }) => void;
}

export interface Exchange {
  grant: Grant;
  shape: ApiShape;
  plan: ForwardPlan;
  /** Characters of the agent's request (for the estimate when no usage comes). */
  inputChars: number;
  /** Headers of the agent's request the upstream may see (API version and beta flags). */
  agentHeaders: http.IncomingHttpHeaders;
  res: http.ServerResponse;
  /** Aborts when the agent goes, the run closes or the gateway closes. */
  signal: AbortSignal;
  startedAt: number;
}

/** Response headers an agent gets from the upstream (the rest, cookies included, stay behind). */
const PASSED_HEADERS = /^(content-type|content-encoding|retry-after|retry-after-ms|x-request-id|request-id|openai-processing-ms|x-ratelimit-[\w-]+|anthropic-ratelimit-[\w-]+)$/;
const HEADER_TOKEN = /^[\w.,=-]{1,1000}$/;
const ANTHROPIC_VERSION = '2023-06-01';

export class UpstreamError extends Error {
  override name = 'UpstreamError';
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** The upstream URL for a plan's path (a base ending in /v1 and a path starting with it meet once). */
export function upstreamUrl(baseUrl: string, path: string): URL {
  const joined = baseUrl.endsWith('/v1') && path.startsWith('/v1/') ? baseUrl + path.slice(3) : baseUrl + path;
  return new URL(joined);
}

export function upstreamHeaders(grant: Grant, agentHeaders: http.IncomingHttpHeaders, stream: boolean): Record<string, string> {
  const headers: Record<string, string> = {
    accept: stream ? 'text/event-stream' : 'application/json',
    'accept-encoding': 'identity',
    'user-agent': 'belay-llm-gateway',
  };
  if (grant.upstream.api === 'anthropic') {
    if (grant.upstream.key) headers['x-api-key'] = grant.upstream.key;
    const version = agentHeaders['anthropic-version'];
    headers['anthropic-version'] = typeof version === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(version) ? version : ANTHROPIC_VERSION;
    const beta = agentHeaders['anthropic-beta'];
    if (typeof beta === 'string' && HEADER_TOKEN.test(beta)) headers['anthropic-beta'] = beta;
  } else if (grant.upstream.api === 'gemini') {
    // The Gemini API takes its key in this header (never in the query, where logs keep it).
    if (grant.upstream.key) headers['x-goog-api-key'] = grant.upstream.key;
  } else {
    if (grant.upstream.key) headers.authorization = `Bearer ${grant.upstream.key}`;
    const beta = agentHeaders['openai-beta'];
    if (typeof beta === 'string' && HEADER_TOKEN.test(beta)) headers['openai-beta'] = beta;
  }
  return headers;
}

/** One request to the upstream; resolves with its response head, the body still to read. */
export function sendOnce(transport: Transport, url: URL, method: string, headers: Record<string, string>, body: Buffer | undefined, signal: AbortSignal): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const secure = url.protocol === 'https:';
    const request = (secure ? https : http).request(url, {
      method,
      headers: body ? { ...headers, 'content-type': 'application/json', 'content-length': String(body.length) } : headers,
      agent: secure ? transport.agents.https : transport.agents.http,
      signal,
    });
    request.setTimeout(transport.idleTimeoutMs, () => request.destroy(new UpstreamError(504, `the model upstream sent nothing for ${Math.round(transport.idleTimeoutMs / 1000)} s`)));
    request.once('response', resolve);
    request.once('error', (error) => reject(signal.aborted ? signal.reason : error));
    request.end(body);
  });
}

/** Sends until the answer is not one to retry; every attempt waits behind the key's gate. */
async function sendWithRetries(transport: Transport, exchange: Exchange, url: URL, body: Buffer): Promise<{ response: http.IncomingMessage; retries: number }> {
  const { grant, plan, signal, agentHeaders } = exchange;
  const headers = upstreamHeaders(grant, agentHeaders, plan.stream);
  for (let attempt = 0; ; attempt++) {
    await transport.gate.wait(grant.keyId, signal);
    const response = await sendOnce(transport, url, 'POST', headers, body, signal);
    const wait = retryDelay(response.statusCode ?? 0, response.headers, attempt, transport.retry);
    if (wait === undefined) return { response, retries: attempt };
    transport.gate.hold(grant.keyId, wait);
    response.resume();
    transport.onBackoff?.({ runId: grant.runId, status: response.statusCode ?? 0, waitMs: wait });
  }
}

function passedHeaders(response: http.IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (typeof value === 'string' && PASSED_HEADERS.test(name)) headers[name] = value;
  }
  return headers;
}

/** Replaces every occurrence of the key (keys shorter than 8 characters are too common to look for). */
export function scrub(data: Buffer, key: string): Buffer {
  if (key.length < 8 || data.indexOf(key) < 0) return data;
  return Buffer.from(data.toString('utf8').split(key).join('[redacted]'));
}

async function readAll(response: http.IncomingMessage, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      response.destroy();
      throw new UpstreamError(502, `the model upstream's answer is larger than ${limit} bytes`);
    }
    chunks.push(chunk);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  const data = Buffer.from(`${JSON.stringify(body)}\n`);
  const { 'content-encoding': _encoding, ...kept } = headers;
  res.writeHead(status, { ...kept, 'content-type': 'application/json', 'content-length': String(data.length) });
  res.end(data);
}

/** Forwards an exchange and accounts for it; never throws (failures reach the agent in its API's shape). */
export async function forward(transport: Transport, exchange: Exchange): Promise<void> {
  const { grant, shape, plan, res, signal } = exchange;
  const key = grant.upstream.key;
  let retries = 0;
  let status = 0;
  let reported: ReportedUsage | undefined;
  let outputChars = 0;
  let reachedModel = false;
  const account = (error?: string) =>
    grant.account({ api: shape.api, model: plan.model, stream: plan.stream, status, startedAt: exchange.startedAt, reported, inputChars: exchange.inputChars, outputChars, reachedModel, retries, ...(error ? { error } : {}) });
  try {
    const sent = await sendWithRetries(transport, exchange, upstreamUrl(grant.upstream.baseUrl, plan.path), Buffer.from(JSON.stringify(plan.body)));
    const response = sent.response;
    retries = sent.retries;
    status = response.statusCode ?? 502;
    const ok = status >= 200 && status < 300;
    const headers = passedHeaders(response);
    if (ok && /text\/event-stream/i.test(response.headers['content-type'] ?? '')) {
      reachedModel = true;
      const watcher = shape.watch(plan);
      try {
        await pipeStream(response, res, watcher, key, headers, status);
      } finally {
        reported = watcher.usage();
        outputChars = watcher.outputChars;
      }
      account();
      return;
    }
    const answer = await readAll(response, transport.maxAnswerBytes);
    if (!ok) {
      if (shape.upstreamError) sendJson(res, status, shape.upstreamError(status, scrub(answer, key).toString('utf8')), headers);
      else writeBody(res, status, scrub(answer, key), headers);
      account(`the model upstream answered ${status}`);
      return;
    }
    reachedModel = true;
    let json: unknown;
    try {
      json = JSON.parse(answer.toString('utf8'));
    } catch {
      json = undefined;
    }
    const read = shape.answer(json);
    reported = read.usage;
    outputChars = json === undefined ? answer.length : read.outputChars;
    if (!shape.reply) {
      writeBody(res, status, scrub(answer, key), headers);
      account();
      return;
    }
    // This shape's answer carries the cost, so the request is counted before the answer goes out.
    const record = account();
    sendJson(res, status, JSON.parse(scrub(Buffer.from(JSON.stringify(shape.reply(json, record.cost_usd))), key).toString('utf8')), headers);
  } catch (error) {
    const gone = signal.aborted;
    const failure = gone ? errorMessage(signal.reason) : errorMessage(error);
    const failStatus = gone ? 499 : error instanceof UpstreamError ? error.status : 502;
    if (!gone) sendJson(res, failStatus, shape.error(failStatus, failStatus === 504 ? 'upstream_timeout' : 'upstream_unreachable', `Belay gateway: ${failure}`));
    else if (!res.writableEnded) res.destroy();
    if (gone || !status) status = failStatus;
    account(failure);
  }
}

/** An answer as the upstream sent it (its content type and encoding kept). */
function writeBody(res: http.ServerResponse, status: number, body: Buffer, headers: Record<string, string>): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers, 'content-length': String(body.length) });
  res.end(body);
}

/** Passes an SSE answer to the agent as it arrives (event by event when the watcher reshapes it). */
function pipeStream(response: http.IncomingMessage, res: http.ServerResponse, watcher: StreamWatcher, key: string, headers: Record<string, string>, status: number): Promise<void> {
  res.writeHead(status, { ...headers, 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
  res.flushHeaders();
  const reader = new SseReader();
  let paused = false;
  const write = (data: Buffer) => {
    if (res.write(scrub(data, key)) || paused) return;
    paused = true;
    response.pause();
    res.once('drain', () => {
      paused = false;
      response.resume();
    });
  };
  const forwardEvents = (events: SseEvent[]) => {
    for (const event of events) {
      const out = watcher.forward(event);
      if (watcher.reshapes && out) write(Buffer.from(out));
    }
  };
  return new Promise((resolve, reject) => {
    response.on('data', (chunk: Buffer) => {
      if (!watcher.reshapes) write(chunk);
      forwardEvents(reader.push(chunk));
    });
    response.once('end', () => {
      forwardEvents(reader.end());
      res.end();
      resolve();
    });
    response.once('error', reject);
    response.once('aborted', () => reject(new UpstreamError(502, 'the model upstream broke off the stream')));
  });
}
