// A scripted Gemini API on 127.0.0.1, speaking it as Google's service does: `generateContent`,
// `streamGenerateContent` (server-sent events with `?alt=sse`, a JSON array without), `countTokens`
// and the model list, under /v1beta (and /v1); the key in `x-goog-api-key` or `?key=` (a wrong one
// is a 400 API_KEY_INVALID, none a 403); errors as google.rpc.Status; usage in `usageMetadata`.
// Each model request takes the next scripted turn (text, thoughts, function calls, or an error),
// answered at model speed: the first byte after `firstByteSeconds`, then the text trickled in
// pieces. It records every request so tests can assert on what reached it.
import * as http from 'node:http';
import { listenOnLoopback, readJsonBody, waits } from './loopback.ts';

export type GeminiPart = { text: string; thought?: true } | { functionCall: { name: string; args: Record<string, unknown> } };

export interface GeminiTurn {
  /** The model's answer, in order (function calls are sent whole, text in trickled pieces). */
  parts?: GeminiPart[];
  /** Tokens reported for this turn (defaults: prompt 1000, candidates 50). */
  usage?: { prompt?: number; candidates?: number; thoughts?: number; cached?: number };
  /** An error instead of an answer: the HTTP status and Google's message. */
  error?: { status: number; message: string };
}

export interface GeminiUpstreamOptions {
  /** The key the service accepts. */
  key: string;
  turns: GeminiTurn[];
  /** Seconds before the first byte of each model answer (0: at once). */
  firstByteSeconds?: number;
  /** Milliseconds between the pieces of a streamed answer (default 0). */
  trickleMs?: number;
  /** Characters of text per streamed piece (default 12). */
  pieceChars?: number;
  model?: string;
}

export interface GeminiReceived {
  method: string;
  url: string;
  /** The path's method (`generateContent`, `streamGenerateContent`, `countTokens`, `models`), or '' for another path. */
  call: string;
  model: string;
  headers: http.IncomingHttpHeaders;
  /** The key as it came (header or query), or undefined. */
  key: string | undefined;
  body: Record<string, unknown>;
  raw: string;
  at: number;
}

export interface GeminiUpstream {
  /** The base URL, as Belay's upstream setting takes it (no version). */
  url: string;
  received: GeminiReceived[];
  /** The model requests only (generateContent and streamGenerateContent), in order. */
  modelCalls(): GeminiReceived[];
  close(): Promise<void>;
}

const PATH = /^\/(v1beta|v1)\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens)$/;

export function googleError(status: number, message: string, reason?: string): unknown {
  const word = status === 400 ? 'INVALID_ARGUMENT' : status === 403 ? 'PERMISSION_DENIED' : status === 404 ? 'NOT_FOUND' : status === 429 ? 'RESOURCE_EXHAUSTED' : status === 503 ? 'UNAVAILABLE' : 'INTERNAL';
  return { error: { code: status, message, status: word, ...(reason ? { details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'googleapis.com' }] } : {}) } };
}

function usageOf(turn: GeminiTurn, last: boolean): Record<string, number> {
  const prompt = turn.usage?.prompt ?? 1000;
  if (!last) return { promptTokenCount: prompt, totalTokenCount: prompt };
  const candidates = turn.usage?.candidates ?? 50;
  const thoughts = turn.usage?.thoughts ?? 0;
  return {
    promptTokenCount: prompt,
    candidatesTokenCount: candidates,
    ...(thoughts ? { thoughtsTokenCount: thoughts } : {}),
    ...(turn.usage?.cached ? { cachedContentTokenCount: turn.usage.cached } : {}),
    totalTokenCount: prompt + candidates + thoughts,
  };
}

/** The turn's answer as the service streams it: text in pieces, each function call whole. */
function pieces(turn: GeminiTurn, pieceChars: number): GeminiPart[][] {
  const out: GeminiPart[][] = [];
  for (const part of turn.parts ?? []) {
    if ('functionCall' in part) out.push([part]);
    else for (let i = 0; i < Math.max(1, part.text.length); i += pieceChars) out.push([{ ...part, text: part.text.slice(i, i + pieceChars) }]);
  }
  return out.length ? out : [[{ text: '' }]];
}

export async function startGeminiUpstream(options: GeminiUpstreamOptions): Promise<GeminiUpstream> {
  const received: GeminiReceived[] = [];
  const model = options.model ?? 'gemini-2.5-flash';
  let turnIndex = 0;
  const { wait, clear } = waits();

  const server = http.createServer(async (req, res) => {
    const { raw, body } = await readJsonBody(req);
    const url = new URL(req.url ?? '/', 'http://upstream');
    const match = PATH.exec(url.pathname);
    const listing = /^\/(v1beta|v1)\/models$/.test(url.pathname);
    const headerKey = req.headers['x-goog-api-key'];
    const key = typeof headerKey === 'string' ? headerKey : (url.searchParams.get('key') ?? undefined);
    received.push({ method: req.method ?? '', url: req.url ?? '', call: match ? match[3]! : listing ? 'models' : '', model: match ? decodeURIComponent(match[2]!) : '', headers: req.headers, key, body, raw, at: Date.now() });
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
      res.end(JSON.stringify(value, null, 2));
    };
    if (key === undefined) return json(403, googleError(403, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."));
    if (key !== options.key) return json(400, googleError(400, 'API key not valid. Please pass a valid API key.', 'API_KEY_INVALID'));
    if (listing && req.method === 'GET') return json(200, { models: [{ name: `models/${model}`, displayName: model, inputTokenLimit: 1_048_576, outputTokenLimit: 65_536, supportedGenerationMethods: ['generateContent', 'countTokens'] }] });
    if (!match || req.method !== 'POST') return json(404, googleError(404, `Requested entity was not found.`));
    if (match[3] === 'countTokens') return json(200, { totalTokens: Math.ceil(raw.length / 4) });
    const turn = options.turns[turnIndex++];
    await wait((options.firstByteSeconds ?? 0) * 1000);
    if (!turn) return json(500, googleError(500, `the scripted upstream has no turn ${turnIndex} (it has ${options.turns.length})`));
    if (turn.error) return json(turn.error.status, googleError(turn.error.status, turn.error.message));
    const responseId = `resp-${turnIndex}`;
    const chunk = (parts: GeminiPart[], last: boolean) => ({
      candidates: [{ content: { parts, role: 'model' }, index: 0, ...(last ? { finishReason: 'STOP' } : {}) }],
      usageMetadata: usageOf(turn, last),
      modelVersion: model,
      responseId,
    });
    const all = pieces(turn, options.pieceChars ?? 12);
    if (match[3] === 'generateContent') return json(200, chunk(turn.parts ?? [{ text: '' }], true));
    const sse = url.searchParams.get('alt') === 'sse';
    res.writeHead(200, { 'content-type': sse ? 'text/event-stream' : 'application/json; charset=UTF-8' });
    if (!sse) res.write('[');
    for (const [i, parts] of all.entries()) {
      if (i > 0) await wait(options.trickleMs ?? 0);
      if (res.destroyed) return;
      const data = JSON.stringify(chunk(parts, i === all.length - 1));
      res.write(sse ? `data: ${data}\r\n\r\n` : `${i > 0 ? ',\r\n' : ''}${data}`);
    }
    res.end(sse ? undefined : ']');
  });
  const { port, close } = await listenOnLoopback(server, clear);
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    modelCalls: () => received.filter((r) => r.call === 'generateContent' || r.call === 'streamGenerateContent'),
    close,
  };
}
