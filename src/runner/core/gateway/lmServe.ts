// A request served by a model in the editor instead of an HTTP upstream: read from its API shape
// into the LM API's terms (or refused in that shape's words, naming what the LM API cannot take),
// counted with the model's own counter, sent, written back in the same shape (whole or streamed as
// the parts arrive), and accounted like a forwarded request. A shape that is not an API of its own
// (Term Challenge's proxy) is served as the chat completions it would send an OpenAI upstream.
import type * as http from 'node:http';
import { errorMessage } from '../../../shared/errors.ts';
import type { Grant } from './grant.ts';
import { lmChat } from './lmChat.ts';
import { lmGemini } from './lmGemini.ts';
import { lmMessages } from './lmMessages.ts';
import { countedText, generatedText, type LmErrorCode, type LmOutPart, type LmRoute, type LmTranslator, type LocalModel } from './lmModel.ts';
import { lmResponses } from './lmResponses.ts';
import type { ApiShape, ReportedUsage, StreamWatcher } from './shape.ts';
import { SseReader } from './sse.ts';

const TRANSLATORS: Record<string, LmTranslator> = { messages: lmMessages, chat: lmChat, responses: lmResponses, gemini: lmGemini };

/** The status each LM API failure answers with; the first two end the run (the model will not serve it). */
const FAILURE_STATUS: Record<LmErrorCode, number> = { no_permissions: 403, not_found: 404, blocked: 429, cancelled: 499, failed: 502 };

export interface LocalExchange {
  grant: Grant;
  model: LocalModel;
  shape: ApiShape;
  /** The request's JSON body (already checked to be an object). */
  body: Record<string, unknown>;
  /** What the route says: always streamed (the proxy's stream route, Gemini's streamGenerateContent), the model in the path. */
  route: LmRoute;
  res: http.ServerResponse;
  signal: AbortSignal;
  startedAt: number;
  inputChars: number;
  /** A model silent this long (before its answer, or between two parts) is given up on, as a silent upstream is. */
  idleTimeoutMs?: number;
}

/** Serves an exchange from the run's model in the editor; never throws (failures reach the agent in its API's shape). */
export async function serveLocal(exchange: LocalExchange): Promise<void> {
  const { model } = exchange;
  // The model's own signal: the exchange's, or the model's silence.
  const idle = new AbortController();
  const signal = AbortSignal.any([exchange.signal, idle.signal]);
  let timer: NodeJS.Timeout | undefined;
  const awake = () => {
    clearTimeout(timer);
    const ms = exchange.idleTimeoutMs;
    if (ms) timer = setTimeout(() => idle.abort(new SilentModel(`the VS Code model ${model.id} sent nothing for ${Math.round(ms / 1000)} s`)), ms);
  };
  try {
    await serveWatched(exchange, signal, awake, () => exchange.signal.aborted);
  } finally {
    clearTimeout(timer);
  }
}

class SilentModel extends Error {}

async function serveWatched(exchange: LocalExchange, signal: AbortSignal, awake: () => void, agentGone: () => boolean): Promise<void> {
  const { grant, model, shape, body, res } = exchange;
  const direct = TRANSLATORS[shape.api];
  // A shape of its own (the proxy) goes as the chat completions it would send an OpenAI upstream.
  let translator = direct;
  let requestBody = body;
  let reshape: { reply: ApiShape['reply']; watcher: StreamWatcher } | undefined;
  if (!direct) {
    const plan = shape.plan(body, { api: 'openai', model: model.id }, { forceStream: exchange.route.stream });
    if ('refused' in plan || plan.path !== '/chat/completions') return refuse(exchange, shape.error.bind(shape), 'refused' in plan ? plan.refused : `the ${shape.api} shape cannot be served by a model in the editor`);
    translator = lmChat;
    requestBody = plan.body;
    reshape = { reply: shape.reply?.bind(shape), watcher: shape.watch(plan) };
  }
  const t = translator!;
  const read = t.read(requestBody, exchange.route);
  if ('refused' in read) return refuse(exchange, reshape ? shape.error.bind(shape) : t.error, read.refused);
  const request = read;
  const dropped = request.dropped.length ? `the VS Code model ${model.id} left out what its API cannot express: ${request.dropped.join(', ')}` : undefined;
  let status = 0;
  let usage: ReportedUsage | undefined;
  let outputChars = 0;
  let reachedModel = false;
  const account = (error?: string) =>
    grant.account({ api: shape.api, model: model.id, stream: request.stream, status, startedAt: exchange.startedAt, reported: usage, inputChars: exchange.inputChars, outputChars, reachedModel, retries: 0, ...(error ? { error } : {}), ...(dropped ? { note: dropped } : {}) });
  const errorBody = (code: number, kind: string, message: string) => (reshape ? shape.error(code, kind, message) : t.error(code, kind, message));
  let writer: ReturnType<LmTranslator['streamWriter']> | undefined;
  try {
    const input = await count(model, countedText(request.messages, request.tools), signal);
    if (input !== undefined && model.maxInputTokens > 0 && input > model.maxInputTokens) {
      status = 400;
      const message = `Belay gateway: the request is ${input} tokens; the VS Code model ${model.id} takes at most ${model.maxInputTokens}`;
      sendJson(res, 400, errorBody(400, 'context_length_exceeded', message));
      account(message);
      return;
    }
    awake();
    const sent = await model.send(request.messages, request.tools, request.options, signal);
    if (!sent.ok) {
      status = FAILURE_STATUS[sent.error.code];
      const message = `Belay gateway: the VS Code model ${model.id} could not answer: ${sent.error.message}`;
      if (!signal.aborted) sendJson(res, status, errorBody(status, sent.error.code, message));
      account(message);
      if (sent.error.code === 'no_permissions' || sent.error.code === 'not_found') grant.fail(message.replace(/^Belay gateway: /, ''));
      return;
    }
    reachedModel = true;
    status = 200;
    const parts: LmOutPart[] = [];
    writer = request.stream ? t.streamWriter(request.model ?? model.id, request, input ?? 0) : undefined;
    const stream = writer;
    const reader = reshape ? new SseReader() : undefined;
    const write = async (text: string) => {
      if (!text || res.destroyed) return;
      let out = text;
      if (reshape && reader) out = reader.push(Buffer.from(text)).map((event) => (reshape.watcher.reshapes ? reshape.watcher.forward(event) : (reshape.watcher.forward(event), event.raw))).join('');
      if (out && !res.write(out)) await drained(res, signal);
    };
    if (stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
      res.flushHeaders();
      await write(stream.start());
    }
    let failure: string | undefined;
    for await (const event of sent.parts) {
      if (signal.aborted) break;
      awake();
      if (event.type === 'error') {
        failure = `the VS Code model ${model.id} failed while answering: ${event.error.message}`;
        break;
      }
      parts.push(event);
      if (stream) await write(stream.part(event));
    }
    if (signal.aborted) throw signal.reason;
    const generated = generatedText(parts);
    outputChars = generated.length;
    const output = await count(model, generated, signal);
    usage = input !== undefined && output !== undefined ? { input, output } : undefined;
    const tokens = { input: usage?.input ?? Math.ceil(exchange.inputChars / 4), output: usage?.output ?? Math.ceil(outputChars / 4) };
    const stop = parts.some((p) => p.type === 'toolCall') ? 'tool_use' : 'end';
    if (stream) {
      await write(failure ? stream.fail(`Belay gateway: ${failure}`) : stream.end(tokens, stop));
      res.end();
      account(failure);
      return;
    }
    if (failure) {
      status = 502;
      sendJson(res, 502, errorBody(502, 'model_failed', `Belay gateway: ${failure}`));
      account(failure);
      return;
    }
    const whole = t.whole({ model: request.model ?? model.id, parts, usage: tokens, stop });
    const record = account();
    const answer = reshape?.reply ? reshape.reply(whole, record.cost_usd) : whole;
    sendJson(res, 200, exchange.route.list ? [answer] : answer);
  } catch (error) {
    const silent = signal.aborted && !agentGone() && signal.reason instanceof SilentModel;
    const gone = signal.aborted && !silent;
    const failure = signal.aborted ? errorMessage(signal.reason) : errorMessage(error);
    if (gone) {
      status = 499;
      if (!res.writableEnded) res.destroy();
    } else if (silent && res.headersSent) {
      // A stream already under way ends with the API's own error event.
      status = 504;
      if (writer && !res.destroyed) res.end(writer.fail(`Belay gateway: ${failure}`));
    } else {
      status = silent ? 504 : status || 502;
      sendJson(res, status, errorBody(status, silent ? 'upstream_timeout' : 'model_failed', silent ? `Belay gateway: ${failure}` : `Belay gateway: the VS Code model ${model.id} failed: ${failure}`));
    }
    account(failure);
  }
}

/** The agent's request holds what the LM API cannot take: one line in its API's shape, and in the run. */
function refuse(exchange: LocalExchange, error: (status: number, code: string, message: string) => unknown, reason: string): void {
  const message = reason.startsWith('Belay gateway:') ? reason : `Belay gateway: ${reason}`;
  sendJson(exchange.res, 400, error(400, 'unsupported_by_upstream', message));
  exchange.grant.account({
    api: exchange.shape.api,
    model: exchange.model.id,
    stream: exchange.route.stream || exchange.body.stream === true,
    status: 400,
    startedAt: exchange.startedAt,
    inputChars: exchange.inputChars,
    outputChars: 0,
    reachedModel: false,
    retries: 0,
    error: message,
    note: `a model request was refused: ${message.replace(/^Belay gateway: /, '')}`,
    refused: true,
  });
}

/** Tokens by the model's own counter; undefined when it fails (the request is then estimated from characters). */
async function count(model: LocalModel, text: string, signal: AbortSignal): Promise<number | undefined> {
  try {
    const tokens = await model.countTokens(text, signal);
    return Number.isFinite(tokens) && tokens >= 0 ? Math.round(tokens) : undefined;
  } catch {
    if (signal.aborted) throw signal.reason;
    return undefined;
  }
}

function drained(res: http.ServerResponse, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
    signal.addEventListener('abort', done, { once: true });
  });
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  const data = Buffer.from(`${JSON.stringify(body)}\n`);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(data.length) });
  res.end(data);
}

/**
 * The passthrough routes for a model in the editor: its one model, and token counting by the
 * model's counter (Anthropic's `/v1/messages/count_tokens`, Gemini's `models/M:countTokens`).
 */
export async function serveLocalPassthrough(model: LocalModel, path: string, body: unknown, res: http.ServerResponse, signal: AbortSignal, gemini = false): Promise<void> {
  const counting = path.endsWith('/count_tokens') ? lmMessages : path.endsWith(':countTokens') ? lmGemini : undefined;
  if (counting) {
    const request = body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
    // Gemini's countTokens may wrap a whole generateContent request.
    const read = counting.read(counting === lmGemini && request.generateContentRequest && typeof request.generateContentRequest === 'object' ? (request.generateContentRequest as Record<string, unknown>) : request, { stream: false });
    if ('refused' in read) return sendJson(res, 400, counting.error(400, 'unsupported_by_upstream', `Belay gateway: ${read.refused}`));
    const tokens = await count(model, countedText(read.messages, read.tools), signal).catch(() => undefined);
    if (tokens === undefined) return sendJson(res, 502, counting.error(502, 'model_failed', `Belay gateway: the VS Code model ${model.id} could not count tokens`));
    return sendJson(res, 200, counting === lmGemini ? { totalTokens: tokens } : { input_tokens: tokens });
  }
  if (gemini) {
    const entry = { name: `models/${model.id}`, displayName: model.name, inputTokenLimit: model.maxInputTokens, supportedGenerationMethods: ['generateContent', 'streamGenerateContent', 'countTokens'] };
    return sendJson(res, 200, path.includes('/models/') ? entry : { models: [entry] });
  }
  const entry = { id: model.id, object: 'model', created: 0, owned_by: 'vscode', type: 'model', display_name: model.name };
  sendJson(res, 200, { object: 'list', data: [entry], has_more: false, first_id: model.id, last_id: model.id });
}
