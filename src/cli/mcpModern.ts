// MCP revision 2026-07-28 on the wire, in one module: the per-request `_meta` envelope (no
// `initialize`), `server/discover`, `resultType` on every result, multi round-trip requests
// (`InputRequiredResult`: `inputRequests` answered by a retry carrying `inputResponses` and the
// echoed `requestState`), and the tasks extension (`io.modelcontextprotocol/tasks`). The SDK
// installed here (1.x) speaks 2025-11-25 and earlier only; both `belay mcp` and `--wrap` read and
// write the newer revision through this module, and its tests hold it to the spec's own examples.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import * as z from 'zod';

export const MODERN_VERSION = '2026-07-28';
/** The revisions spoken after an `initialize` handshake (the SDK's list), newest first. */
export const LEGACY_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'] as const;
export const SUPPORTED_VERSIONS = [MODERN_VERSION, ...LEGACY_VERSIONS];

export const PROTOCOL_VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
export const CLIENT_CAPABILITIES_KEY = 'io.modelcontextprotocol/clientCapabilities';
export const CLIENT_INFO_KEY = 'io.modelcontextprotocol/clientInfo';
export const SERVER_INFO_KEY = 'io.modelcontextprotocol/serverInfo';
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

export const ErrorCode = {
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  missingClientCapability: -32021,
  unsupportedProtocolVersion: -32022,
} as const;

/** A `_meta` larger than this (as JSON) is refused: it is metadata, not a payload. */
export const MAX_META_CHARS = 64 * 1024;
/** The requests whose results may be an `InputRequiredResult` (the spec's list). */
export const INPUT_REQUIRED_METHODS: ReadonlySet<string> = new Set(['tools/call', 'prompts/get', 'resources/read']);

export type RequestId = string | number;
export interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}

const Implementation = z.looseObject({ name: z.string(), version: z.string().optional(), title: z.string().optional() });
export const ClientCapabilities = z.looseObject({
  elicitation: z.looseObject({ form: z.looseObject({}).optional(), url: z.looseObject({}).optional() }).optional(),
  sampling: z.looseObject({}).optional(),
  roots: z.looseObject({}).optional(),
  extensions: z.record(z.string(), z.unknown()).optional(),
});
export type ClientCapabilities = z.infer<typeof ClientCapabilities>;

export interface Envelope {
  version: string;
  capabilities: ClientCapabilities;
  clientInfo?: { name: string; version?: string | undefined } | undefined;
}

const ParamsWithMeta = z.looseObject({ _meta: z.unknown().optional() });

/** Whether a message is a request of the stateless era: its `_meta` names a protocol version. */
export function isModernRequest(message: { method?: string | undefined; id?: unknown; params?: unknown }): boolean {
  if (message.method === undefined || message.id === undefined || message.method === 'initialize') return false;
  const params = ParamsWithMeta.safeParse(message.params);
  const meta = params.success ? params.data._meta : undefined;
  return typeof meta === 'object' && meta !== null && !Array.isArray(meta) && Object.hasOwn(meta, PROTOCOL_VERSION_KEY);
}

function unsupportedVersion(requested: string): RpcError {
  const legacy = (LEGACY_VERSIONS as readonly string[]).includes(requested);
  const why = legacy ? `${requested} is spoken after an initialize handshake, not with per-request _meta` : `unknown protocol version "${requested.slice(0, 40)}"`;
  return {
    code: ErrorCode.unsupportedProtocolVersion,
    message: `Unsupported protocol version: ${why}; this server speaks ${MODERN_VERSION} (per-request _meta) and ${LEGACY_VERSIONS.join(', ')} (after initialize)`,
    data: { supported: SUPPORTED_VERSIONS, requested },
  };
}

/** The envelope of a modern request, or the one error that says what is wrong with it. */
export function readEnvelope(params: unknown): { envelope: Envelope } | { error: RpcError } {
  const invalid = (message: string): { error: RpcError } => ({ error: { code: ErrorCode.invalidParams, message } });
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return invalid('params must be an object holding _meta');
  const meta = (params as { _meta?: unknown })._meta;
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) return invalid('params._meta must be an object');
  let size: number;
  try {
    size = JSON.stringify(meta).length;
  } catch {
    return invalid('params._meta cannot be read as JSON');
  }
  if (size > MAX_META_CHARS) return invalid(`params._meta is ${size} characters of JSON; at most ${MAX_META_CHARS} are read`);
  const record = meta as Record<string, unknown>;
  const version = record[PROTOCOL_VERSION_KEY];
  if (typeof version !== 'string') return invalid(`params._meta["${PROTOCOL_VERSION_KEY}"] must be a string`);
  if (version !== MODERN_VERSION) return { error: unsupportedVersion(version) };
  if (!Object.hasOwn(record, CLIENT_CAPABILITIES_KEY)) return invalid(`params._meta lacks "${CLIENT_CAPABILITIES_KEY}" (required by ${MODERN_VERSION})`);
  const capabilities = ClientCapabilities.safeParse(record[CLIENT_CAPABILITIES_KEY]);
  if (!capabilities.success) {
    const issue = capabilities.error.issues[0];
    return invalid(`params._meta["${CLIENT_CAPABILITIES_KEY}"]${issue?.path.length ? `.${issue.path.join('.')}` : ''} is malformed: ${issue?.message ?? 'not an object'}`);
  }
  const info = Implementation.safeParse(record[CLIENT_INFO_KEY]);
  return { envelope: { version, capabilities: capabilities.data, clientInfo: info.success ? info.data : undefined } };
}

/** Form elicitation: an empty `elicitation` object is the older spelling of "form supported". */
export function supportsFormElicitation(capabilities: ClientCapabilities): boolean {
  const elicitation = capabilities.elicitation;
  return elicitation !== undefined && (Object.keys(elicitation).length === 0 || elicitation.form !== undefined);
}

export function supportsUrlElicitation(capabilities: ClientCapabilities): boolean {
  return capabilities.elicitation?.url !== undefined;
}

export function supportsTasks(capabilities: ClientCapabilities): boolean {
  const declared = capabilities.extensions?.[TASKS_EXTENSION];
  return typeof declared === 'object' && declared !== null;
}

/** Capabilities with form and URL elicitation added (what `--wrap` tells a wrapped server). */
export function withElicitation(capabilities: Record<string, unknown>): Record<string, unknown> {
  const elicitation = (capabilities.elicitation ?? {}) as Record<string, unknown>;
  const form = Object.keys(elicitation).length === 0 || 'form' in elicitation ? (elicitation.form ?? {}) : {};
  return { ...capabilities, elicitation: { ...elicitation, form, url: elicitation.url ?? {} } };
}

// ---- Results and errors ----

export function response(id: RequestId, result: object): string {
  return JSON.stringify({ jsonrpc: '2.0', id, result });
}

export function errorResponse(id: RequestId | null, error: RpcError): string {
  return JSON.stringify({ jsonrpc: '2.0', id, error });
}

/** A finished result: `resultType: "complete"`. */
export function complete<T extends object>(result: T): T & { resultType: 'complete' } {
  return { ...result, resultType: 'complete' };
}

export function discoverResult(server: { name: string; title?: string; version: string; instructions: string; tasks: boolean }): object {
  return complete({
    supportedVersions: SUPPORTED_VERSIONS,
    capabilities: { tools: {}, ...(server.tasks ? { extensions: { [TASKS_EXTENSION]: {} } } : {}) },
    instructions: server.instructions,
    ttlMs: 0,
    cacheScope: 'public',
    _meta: { [SERVER_INFO_KEY]: { name: server.name, ...(server.title ? { title: server.title } : {}), version: server.version } },
  });
}

export function missingCapability(what: object, message: string): RpcError {
  return { code: ErrorCode.missingClientCapability, message, data: { requiredCapabilities: what } };
}

// ---- Elicitation and multi round-trip requests ----

export const ElicitFormRequestParams = z.looseObject({
  mode: z.literal('form').optional(),
  message: z.string(),
  requestedSchema: z.looseObject({ type: z.literal('object').optional(), properties: z.record(z.string(), z.unknown()).optional(), required: z.array(z.string()).optional() }),
});
export const ElicitUrlRequestParams = z.looseObject({ mode: z.literal('url'), message: z.string(), url: z.string(), elicitationId: z.string().optional() });
export const InputRequest = z.looseObject({ method: z.string(), params: z.unknown().optional() });
export const InputRequiredResult = z.looseObject({
  resultType: z.literal('input_required'),
  inputRequests: z.record(z.string(), InputRequest).optional(),
  requestState: z.string().optional(),
});
export type InputRequiredResult = z.infer<typeof InputRequiredResult>;
export const ElicitResult = z.looseObject({
  action: z.enum(['accept', 'decline', 'cancel']),
  content: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.array(z.string())])).optional(),
});
export type ElicitResult = z.infer<typeof ElicitResult>;
/** The retry channel of a request: what the client answered, and the state it echoes. */
export const RetryParams = z.looseObject({
  inputResponses: z.record(z.string(), z.unknown()).optional(),
  requestState: z.string().optional(),
});

export function inputRequired(inputRequests: Record<string, { method: string; params: object }>, requestState?: string): object {
  return { resultType: 'input_required', inputRequests, ...(requestState !== undefined ? { requestState } : {}) };
}

/**
 * Seals what a server must get back on a retry (`requestState`), so that a client can neither
 * forge nor alter it: the JSON is signed with HMAC-SHA256 under a key this process made, and
 * carries its expiry. `open` gives back what was sealed, or why it cannot be taken.
 */
export class StateSeal {
  readonly #key: Buffer;

  constructor(key: Buffer = randomBytes(32)) {
    this.#key = key;
  }

  #mac(body: string): Buffer {
    return createHmac('sha256', this.#key).update(body).digest();
  }

  seal(value: object, ttlMs: number, now = Date.now()): string {
    const body = Buffer.from(JSON.stringify({ ...value, exp: now + ttlMs })).toString('base64url');
    return `${body}.${this.#mac(body).toString('base64url')}`;
  }

  open(token: string, now = Date.now()): { value: Record<string, unknown> } | { problem: string } {
    const [body, mac, ...rest] = token.split('.');
    if (!body || !mac || rest.length > 0 || token.length > MAX_META_CHARS) return { problem: 'requestState is not one this server issued' };
    const given = Buffer.from(mac, 'base64url');
    const expected = this.#mac(body);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { problem: 'requestState was not issued by this server, or was altered' };
    const value = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Record<string, unknown>;
    if (typeof value.exp !== 'number' || value.exp < now) return { problem: 'requestState has expired' };
    return { value };
  }
}

// ---- The tasks extension ----

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';
export const TERMINAL: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled']);

export interface TaskView {
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number | null;
  pollIntervalMs?: number;
  inputRequests?: Record<string, { method: string; params: object }>;
  result?: object;
  error?: RpcError;
}

/** The result of a request the server turned into a task (`resultType: "task"`): no payload yet. */
export function createTaskResult(task: TaskView): object {
  const { inputRequests: _requests, result: _result, error: _error, ...seed } = task;
  return { ...seed, resultType: 'task' };
}

/** `tasks/get`'s result: the task with what its status carries. */
export function getTaskResult(task: TaskView): object {
  return complete(task);
}

export const TaskIdParams = z.looseObject({ taskId: z.string() });
export const TaskUpdateParams = z.looseObject({ taskId: z.string(), inputResponses: z.record(z.string(), z.unknown()) });

// ---- A 2025-11-25 client in front of a 2026-07-28 server (`--wrap`'s era bridge) ----

/** The version a bridged client is told when it asked for one Belay does not speak. */
export const BRIDGED_DEFAULT_VERSION = '2025-11-25';
/** A `server/discover` answer longer than this (as JSON) is not read: it describes a server, it is no payload. */
export const MAX_DISCOVER_CHARS = 1024 * 1024;
/**
 * Notifications of a 2025-11-25 client that the stateless revision dropped, so the bridge does
 * not forward them: `initialized` (there is no handshake) and `roots/list_changed` (there is no
 * session to hold roots: a server asks for them in an InputRequiredResult). Cancellation and
 * progress go on.
 */
export const DROPPED_CLIENT_NOTIFICATIONS: ReadonlySet<string> = new Set(['notifications/initialized', 'notifications/roots/list_changed']);

const RpcErrorShape = z.looseObject({ code: z.number(), message: z.string().optional() });

/**
 * Whether an error answering `initialize` says the server does not know the method or the
 * version (method not found, or the spec's unsupported-version error): a stateless server.
 */
export function refusesInitialize(error: unknown): boolean {
  const read = RpcErrorShape.safeParse(error);
  return read.success && (read.data.code === ErrorCode.methodNotFound || read.data.code === ErrorCode.unsupportedProtocolVersion);
}

/** An error's message, short and on one line, for the bridge's error lines. */
export function errorSummary(error: unknown): string {
  const read = RpcErrorShape.safeParse(error);
  if (!read.success) return 'an error of no known shape';
  const message = (read.data.message ?? '').replace(/\s+/g, ' ').trim().slice(0, 200);
  return `${read.data.code}${message ? ` ${message}` : ''}`;
}

/** The `_meta` a bridged client's requests carry: the revision, its capabilities, its info. */
export function envelopeMeta(capabilities: Record<string, unknown>, clientInfo: unknown): Record<string, unknown> {
  const info = Implementation.safeParse(clientInfo);
  return {
    [PROTOCOL_VERSION_KEY]: MODERN_VERSION,
    [CLIENT_CAPABILITIES_KEY]: capabilities,
    ...(info.success ? { [CLIENT_INFO_KEY]: info.data } : {}),
  };
}

/**
 * A request with `meta` added to its params' `_meta` (what it already held there, a progress
 * token say, is kept; the envelope's keys win). Params that are not an object (the spec allows
 * none other) leave the request as it was: the server answers it as it sees fit.
 */
export function withEnvelope<T extends { params?: unknown }>(message: T, meta: Record<string, unknown>): T {
  const params = message.params ?? {};
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return message;
  const own = (params as { _meta?: unknown })._meta;
  const kept = typeof own === 'object' && own !== null && !Array.isArray(own) ? own : {};
  return { ...message, params: { ...params, _meta: { ...kept, ...meta } } };
}

const DiscoverResult = z.looseObject({
  supportedVersions: z.array(z.string()).max(100),
  capabilities: z.looseObject({}),
  instructions: z.string().optional(),
  _meta: z.looseObject({ [SERVER_INFO_KEY]: Implementation.optional() }).optional(),
});

export interface Discovered {
  capabilities: Record<string, unknown>;
  serverInfo?: { name: string; version?: string | undefined; title?: string | undefined } | undefined;
  instructions?: string | undefined;
}

/** A `server/discover` result as the bridge needs it, or the one line saying what is wrong with it. */
export function readDiscover(result: unknown): { discovered: Discovered } | { problem: string } {
  if (typeof result !== 'object' || result === null || Array.isArray(result)) return { problem: `its result is ${result === null ? 'null' : Array.isArray(result) ? 'an array' : `a ${typeof result}`}, not an object` };
  const size = JSON.stringify(result).length;
  if (size > MAX_DISCOVER_CHARS) return { problem: `its result is ${size} characters of JSON; at most ${MAX_DISCOVER_CHARS} are read` };
  const read = DiscoverResult.safeParse(result);
  if (!read.success) {
    const issue = read.error.issues[0];
    return { problem: `its result's ${issue?.path.length ? issue.path.join('.') : 'shape'} is malformed: ${issue?.message ?? 'unreadable'}` };
  }
  if (!read.data.supportedVersions.includes(MODERN_VERSION)) {
    const named = read.data.supportedVersions.slice(0, 5).map((v) => `"${v.slice(0, 40)}"`).join(', ') || 'none';
    return { problem: `it supports ${named}, not ${MODERN_VERSION}` };
  }
  return { discovered: { capabilities: read.data.capabilities, serverInfo: read.data._meta?.[SERVER_INFO_KEY], instructions: read.data.instructions } };
}

/**
 * The `initialize` result Belay gives a 2025-11-25 client for a stateless server: the server's
 * capabilities, info and instructions, and the client's own version when it is one spoken after
 * `initialize` (else 2025-11-25). `fallbackName` names a server whose discover names none.
 */
export function initializeFromDiscover(discovered: Discovered, requestedVersion: unknown, fallbackName: string): Record<string, unknown> {
  const version = typeof requestedVersion === 'string' && (LEGACY_VERSIONS as readonly string[]).includes(requestedVersion) ? requestedVersion : BRIDGED_DEFAULT_VERSION;
  const info = discovered.serverInfo;
  return {
    protocolVersion: version,
    capabilities: discovered.capabilities,
    serverInfo: { ...info, name: info?.name ?? fallbackName, version: info?.version ?? 'unknown' },
    ...(discovered.instructions !== undefined ? { instructions: discovered.instructions } : {}),
  };
}

/**
 * A stateless server's result in the form a 2025-11-25 client expects: a `resultType` of
 * `complete` dropped. Undefined: the result needs no change (a result of another type is the
 * caller's to deal with).
 */
export function legacyResult(result: unknown): Record<string, unknown> | undefined {
  if (typeof result !== 'object' || result === null || Array.isArray(result) || !Object.hasOwn(result, 'resultType')) return undefined;
  const { resultType, ...rest } = result as Record<string, unknown>;
  return resultType === 'complete' ? rest : undefined;
}

// ---- Input requests answered for a bridged 2025-11-25 client ----

/** An InputRequiredResult asking more than this many things at once is refused: no server needs a flood of questions. */
export const MAX_INPUT_REQUESTS = 16;
/** An input request larger than this (as JSON) is not passed on: a sampling prompt, images and all, fits well within it. */
export const MAX_INPUT_REQUEST_CHARS = 4 * 1024 * 1024;
/** An input request's key longer than this is refused (keys are identifiers the server picks). */
export const MAX_INPUT_KEY_CHARS = 256;

/** The input requests the spec allows, and the client capability each needs. */
export const INPUT_CAPABILITY: Readonly<Record<string, 'elicitation' | 'sampling' | 'roots'>> = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots',
};

export interface InputRead {
  key: string;
  method: string;
  params?: unknown;
}

/** A key or method as it may appear in an error line: at most 80 characters, no control characters. */
export function quoted(text: string): string {
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  return JSON.stringify(clean.length > 80 ? `${clean.slice(0, 80)}…` : clean);
}

/**
 * An InputRequiredResult as the bridge answers it: its input requests in order (keys as the server
 * wrote them, `__proto__` included) and its `requestState`; or the one line saying why it cannot
 * be answered (a flood, an oversized or unknown request, a result asking nothing).
 */
export function readInputRequests(result: unknown): { inputs: InputRead[]; requestState?: string } | { problem: string } {
  if (typeof result !== 'object' || result === null || Array.isArray(result)) return { problem: 'its result is not an object' };
  const { inputRequests, requestState } = result as { inputRequests?: unknown; requestState?: unknown };
  if (requestState !== undefined && typeof requestState !== 'string') return { problem: 'its requestState is not a string' };
  if (inputRequests !== undefined && (typeof inputRequests !== 'object' || inputRequests === null || Array.isArray(inputRequests))) return { problem: 'its inputRequests is not an object' };
  const entries = Object.entries((inputRequests ?? {}) as Record<string, unknown>);
  if (entries.length === 0 && requestState === undefined) return { problem: 'it asked for input and named nothing (neither inputRequests nor requestState)' };
  if (entries.length > MAX_INPUT_REQUESTS) return { problem: `it asked ${entries.length} things at once; at most ${MAX_INPUT_REQUESTS} are answered` };
  const inputs: InputRead[] = [];
  for (const [key, request] of entries) {
    if (key.length === 0 || key.length > MAX_INPUT_KEY_CHARS) return { problem: `an input request's key is ${key.length} characters; 1 to ${MAX_INPUT_KEY_CHARS} are read` };
    const read = InputRequest.safeParse(request);
    if (!read.success) return { problem: `its input request ${quoted(key)} is no request (an object naming its method)` };
    if (!Object.hasOwn(INPUT_CAPABILITY, read.data.method)) return { problem: `its input request ${quoted(key)} is ${quoted(read.data.method)}, none of ${Object.keys(INPUT_CAPABILITY).join(', ')}` };
    const size = JSON.stringify(request).length;
    if (size > MAX_INPUT_REQUEST_CHARS) return { problem: `its ${read.data.method} input request ${quoted(key)} is ${size} characters of JSON; at most ${MAX_INPUT_REQUEST_CHARS} are passed on` };
    inputs.push({ key, method: read.data.method, ...(read.data.params !== undefined ? { params: read.data.params } : {}) });
  }
  return { inputs, ...(requestState !== undefined ? { requestState } : {}) };
}

/** Whether a 2025-11-25 client's `initialize` capabilities declare what `method` needs. */
export function clientDeclares(capabilities: Record<string, unknown>, method: string): boolean {
  const needed = INPUT_CAPABILITY[method];
  if (!needed) return false;
  const read = ClientCapabilities.safeParse(capabilities);
  if (!read.success) return false;
  if (needed === 'elicitation') return supportsFormElicitation(read.data);
  return read.data[needed] !== undefined;
}

/**
 * The 2025-11-25 spec's answer of a client to a server request it declared no capability for
 * (client/roots: "Client does not support roots: -32601"), which the bridge gives on the client's
 * behalf instead of asking it.
 */
export function notSupportedError(method: string): RpcError {
  const needed = INPUT_CAPABILITY[method] ?? method;
  const name = `${needed.charAt(0).toUpperCase()}${needed.slice(1)}`;
  return { code: ErrorCode.methodNotFound, message: `${name} not supported`, data: { reason: `Client does not have ${needed} capability` } };
}

/** An input request as the 2025-11-25 server-to-client request it was, under `id` (Belay's own). */
export function legacyServerRequest(id: RequestId, input: InputRead): { jsonrpc: '2.0'; id: RequestId; method: string; params?: unknown } {
  return { jsonrpc: '2.0', id, method: input.method, ...(input.params !== undefined ? { params: input.params } : {}) };
}

const Content = z.looseObject({ type: z.string() });
const CreateMessageResult = z.looseObject({ role: z.enum(['user', 'assistant']), content: z.union([Content, z.array(Content)]), model: z.string() });
const ListRootsResult = z.looseObject({ roots: z.array(z.looseObject({ uri: z.string().startsWith('file://') })) });

/** The client's result for an input request, checked against the result type the spec names for it. */
export function readInputResponse(method: string, result: unknown): { response: Record<string, unknown> } | { problem: string } {
  const schema = method === 'sampling/createMessage' ? CreateMessageResult : method === 'roots/list' ? ListRootsResult : ElicitResult;
  const read = schema.safeParse(result);
  if (read.success) return { response: read.data as Record<string, unknown> };
  const issue = read.error.issues[0];
  return { problem: `its result's ${issue?.path.length ? issue.path.join('.') : 'shape'} is malformed: ${issue?.message ?? 'unreadable'}` };
}

/**
 * A call's params for its retry: the call as the client sent it, with `inputResponses` (in the
 * order asked; keys kept as the server wrote them) and the `requestState` echoed exactly, or none
 * when the server gave none (the spec's client requirements).
 */
export function retryParams(params: Record<string, unknown>, responses: ReadonlyArray<readonly [string, unknown]>, requestState: string | undefined): Record<string, unknown> {
  const { inputResponses: _responses, requestState: _state, ...rest } = params;
  return { ...rest, inputResponses: Object.fromEntries(responses), ...(requestState !== undefined ? { requestState } : {}) };
}

/**
 * A bridged 2025-11-25 client's request without `inputResponses` and `requestState` in its params:
 * that revision has no such fields, and the retry channel is Belay's (the client must not answer
 * for the person, nor hand the server a state it never issued).
 */
export function withoutRetryChannel<T extends { params?: unknown }>(message: T): T {
  const params = message.params;
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return message;
  if (!Object.hasOwn(params, 'inputResponses') && !Object.hasOwn(params, 'requestState')) return message;
  const { inputResponses: _responses, requestState: _state, ...rest } = params as Record<string, unknown>;
  return { ...message, params: rest };
}
