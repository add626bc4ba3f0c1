// The Gemini API shape (`/v1beta/models/{model}:generateContent`, `:streamGenerateContent`, with
// `?alt=sse` for server-sent events), as Google's GenAI SDKs and Gemini CLI call it, forwarded
// only to a Gemini upstream. Unlike the other shapes, the path carries the model and the method,
// so the route is read from the path here: the model must be a plain name (letters, digits, `.`,
// `_`, `-`, no `..`), nothing percent-encoded, and the upstream's path and query are built from
// those parts alone (the agent's query, which may carry its token as `key`, never goes on).
import * as z from 'zod';
import { eventJson } from './sse.ts';
import { isRecord, type ApiShape, type ForwardPlan, type PathRoute, type ReportedUsage } from './shape.ts';

/** The API versions the SDKs speak (v1beta is their default). */
const VERSIONS = ['v1beta', 'v1', 'v1alpha'] as const;
const METHODS = ['generateContent', 'streamGenerateContent', 'countTokens'] as const;
type GeminiMethod = (typeof METHODS)[number];

/** A model name as the API takes it in a path: no slash, no dot-dot, nothing encoded. */
const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const PATH = /^\/(v1beta|v1|v1alpha)\/models\/([^/:]*):([A-Za-z]+)$/;
const MODELS_LIST = /^\/(v1beta|v1|v1alpha)\/models$/;
const MODEL_GET = /^\/(v1beta|v1|v1alpha)\/models\/([^/:]+)$/;

/** What a Gemini path asks for; `invalid` when it is Gemini's form but breaks a rule. */
export type GeminiRoute =
  | { kind: 'call'; route: PathRoute }
  | { kind: 'countTokens'; upstreamPath: string }
  | { kind: 'models'; upstreamPath: string }
  | { kind: 'invalid'; message: string };

function checkModel(model: string): string | undefined {
  if (!MODEL_NAME.test(model) || model.includes('..')) return `the model in the path must be a plain model name (letters, digits, '.', '_', '-'), not '${model.slice(0, 80)}'`;
  return undefined;
}

/**
 * The Gemini route for a request's path (the part before `?`) and query, or undefined when the
 * path is not in Gemini's form at all (the gateway then answers as for any unknown path).
 */
export function geminiRoute(pathname: string, query: string): GeminiRoute | undefined {
  // /v1beta and /v1alpha are Gemini's alone; under /v1 (shared with the OpenAI and Anthropic
  // routes) only a model method call is.
  const ours = /^\/(v1beta|v1alpha)(\/|$)/.test(pathname) || /^\/v1\/models\/[^/]*:/.test(pathname);
  if (!ours) return undefined;
  const version = VERSIONS.find((v) => pathname.startsWith(`/${v}/models`));
  if (!version) return { kind: 'invalid', message: 'no such Gemini endpoint; this gateway serves /v1beta/models/{model}:generateContent, :streamGenerateContent and :countTokens, and /v1beta/models' };
  if (/[%\\]/.test(pathname)) return { kind: 'invalid', message: 'the path must not be percent-encoded or hold backslashes' };
  const list = MODELS_LIST.exec(pathname);
  if (list) return { kind: 'models', upstreamPath: `/${version}/models` };
  const get = MODEL_GET.exec(pathname);
  if (get) {
    const bad = checkModel(get[2]!);
    return bad ? { kind: 'invalid', message: bad } : { kind: 'models', upstreamPath: `/${version}/models/${get[2]}` };
  }
  const call = PATH.exec(pathname);
  if (!call) return { kind: 'invalid', message: `no such Gemini endpoint; this gateway serves /${version}/models/{model}:generateContent, :streamGenerateContent and :countTokens` };
  const model = call[2]!;
  const method = call[3]! as GeminiMethod;
  if (!(METHODS as readonly string[]).includes(method)) return { kind: 'invalid', message: `no Gemini method '${method.slice(0, 40)}'; this gateway serves generateContent, streamGenerateContent and countTokens` };
  const bad = checkModel(model);
  if (bad) return { kind: 'invalid', message: bad };
  if (method === 'countTokens') return { kind: 'countTokens', upstreamPath: `/${version}/models/${model}:countTokens` };
  const sse = method === 'streamGenerateContent' && new URLSearchParams(query).getAll('alt').at(-1) === 'sse';
  return { kind: 'call', route: { version, model, method, sse } };
}

/** The run token a Gemini client sent as `?key=` (exactly one, else none). */
export function queryKey(query: string): string | undefined {
  const keys = new URLSearchParams(query).getAll('key');
  return keys.length === 1 && keys[0]!.trim() ? keys[0]!.trim() : undefined;
}

const UsageSchema = z.looseObject({
  promptTokenCount: z.number().nonnegative().optional(),
  candidatesTokenCount: z.number().nonnegative().optional(),
  thoughtsTokenCount: z.number().nonnegative().optional(),
  toolUsePromptTokenCount: z.number().nonnegative().optional(),
  cachedContentTokenCount: z.number().nonnegative().optional(),
});

/**
 * Tokens from `usageMetadata`: input is the prompt (cached content is part of it, counted at the
 * input price) and tool-use prompt; output is the candidates and the model's thoughts, which are
 * billed as output.
 */
export function geminiUsage(value: unknown): ReportedUsage | undefined {
  const usage = UsageSchema.safeParse(value);
  if (!usage.success) return undefined;
  const { promptTokenCount, candidatesTokenCount, thoughtsTokenCount, toolUsePromptTokenCount } = usage.data;
  if (promptTokenCount === undefined && candidatesTokenCount === undefined) return undefined;
  return { input: (promptTokenCount ?? 0) + (toolUsePromptTokenCount ?? 0), output: (candidatesTokenCount ?? 0) + (thoughtsTokenCount ?? 0) };
}

/** Characters of generated text in one response (text parts, function calls as JSON). */
function generatedChars(response: unknown): number {
  if (!isRecord(response) || !Array.isArray(response.candidates)) return 0;
  let sum = 0;
  for (const candidate of response.candidates.slice(0, 16)) {
    const parts = isRecord(candidate) && isRecord(candidate.content) && Array.isArray(candidate.content.parts) ? candidate.content.parts : [];
    for (const part of parts.slice(0, 256)) {
      if (!isRecord(part)) continue;
      if (typeof part.text === 'string') sum += part.text.length;
      if (isRecord(part.functionCall)) sum += JSON.stringify(part.functionCall).length;
    }
  }
  return sum;
}

/** Google's error status word for an HTTP status. */
function statusWord(status: number): string {
  if (status === 401) return 'UNAUTHENTICATED';
  if (status === 402 || status === 429) return 'RESOURCE_EXHAUSTED';
  if (status === 403) return 'PERMISSION_DENIED';
  if (status === 404) return 'NOT_FOUND';
  if (status === 499) return 'CANCELLED';
  if (status === 504) return 'DEADLINE_EXCEEDED';
  if (status === 502 || status === 503) return 'UNAVAILABLE';
  if (status >= 500) return 'INTERNAL';
  return 'INVALID_ARGUMENT';
}

/** The Gemini API's error shape (google.rpc.Status), with Belay's code as the ErrorInfo reason. */
export function geminiError(status: number, code: string, message: string): unknown {
  return { error: { code: status, message, status: statusWord(status), details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: code, domain: 'belay.gateway' }] } };
}

export const gemini: ApiShape = {
  api: 'gemini',
  plan(request, upstream, options): ForwardPlan | { refused: string } {
    const route = options.route;
    if (!route) return { refused: 'a Gemini request needs its model and method in the path (/v1beta/models/{model}:generateContent)' };
    if (upstream.api !== 'gemini') return { refused: `this run's model upstream speaks the ${upstream.api === 'anthropic' ? 'Anthropic Messages' : 'OpenAI'} API, not the Gemini API; send ${upstream.api === 'anthropic' ? '/v1/messages' : '/v1/chat/completions'} requests instead` };
    const path = `/${route.version}/models/${route.model}:${route.method}${route.sse ? '?alt=sse' : ''}`;
    return { path, body: { ...request }, model: route.model, stream: route.sse };
  },
  answer(json) {
    // streamGenerateContent without alt=sse answers with a JSON array of responses.
    const responses = Array.isArray(json) ? json.slice(0, 100_000) : [json];
    let usage: ReportedUsage | undefined;
    let outputChars = 0;
    for (const response of responses) {
      outputChars += generatedChars(response);
      if (isRecord(response)) usage = geminiUsage(response.usageMetadata) ?? usage;
    }
    return { usage, outputChars };
  },
  watch() {
    let usage: ReportedUsage | undefined;
    let outputChars = 0;
    return {
      reshapes: false,
      get outputChars() {
        return outputChars;
      },
      usage: () => usage,
      forward(event) {
        const json = eventJson(event);
        if (!isRecord(json)) return event.raw;
        outputChars += generatedChars(json);
        // Each chunk carries the usage so far; the last one is the whole.
        usage = geminiUsage(json.usageMetadata) ?? usage;
        return event.raw;
      },
    };
  },
  error: geminiError,
};
