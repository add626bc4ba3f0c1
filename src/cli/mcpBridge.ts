// `belay mcp --wrap -- COMMAND…`: runs another MCP server behind Belay on stdio, and answers its
// elicitations itself, through cues the human answers in the panel or any HAP console; so a
// server that asks the user reaches them even when the real client declines elicitation. Both
// eras: a 2025-11-25 server sends `elicitation/create` requests (Belay answers them), a 2026-07-28
// server answers a call with an `InputRequiredResult` (Belay answers its input requests and
// retries the call with `inputResponses` and the server's `requestState`; the client sees only
// the final result). Forms become form cues; a URL elicitation becomes a confirm cue naming the
// page's host, opened in the browser only after the person agrees; a form asking for a secret is
// refused (URL mode is for that). Belay tells the server its client supports both modes. Every
// other line passes through unchanged, byte for byte, in both directions (newline-delimited
// JSON-RPC, MCP's stdio framing); requests Belay cannot answer (sampling, roots, schemas it
// cannot show) go on to the client as they came. A 2025-11-25 client (it starts with `initialize`)
// in front of a 2026-07-28 server (which refuses it) is bridged: Belay asks the server
// `server/discover` (bounded in time), answers `initialize` from it, adds the `_meta` envelope to
// each request and gives results back without `resultType`; the input requests such a client
// cannot see (sampling, roots, a form Belay cannot show) go to it as the 2025-11-25 requests they
// were, when it declared the capability, and the call is retried with its answers (the
// translations are in mcpModern.ts).
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import * as z from 'zod';
import { UsageError } from '../shared/args.ts';
import { errorMessage } from '../shared/errors.ts';
import { startChild } from '../shared/process.ts';
import { cueAndWait, join } from '../cues/core/hap.ts';
import { silenceSqliteExperimentalWarning } from '../cues/core/sqlite.ts';
import { cueTimeoutForCommandLine } from './cueTimeout.ts';
import { clientGone, orphaned, stopRequested, type CliIO } from './io.ts';
import { elicitationForm, readFormAnswer, type ElicitationForm, type FieldValue } from './mcpForm.ts';
import { LineReader, MAX_LINE_CHARS, parseLine, RequestId, type Message } from './mcpLines.ts';
import { MailboxLink } from './mcpMailbox.ts';
import {
  CLIENT_CAPABILITIES_KEY,
  clientDeclares,
  DROPPED_CLIENT_NOTIFICATIONS,
  envelopeMeta,
  ErrorCode,
  errorSummary,
  initializeFromDiscover,
  INPUT_CAPABILITY,
  INPUT_REQUIRED_METHODS,
  InputRequiredResult,
  isModernRequest,
  legacyResult,
  legacyServerRequest,
  notSupportedError,
  quoted,
  readDiscover,
  readInputRequests,
  readInputResponse,
  refusesInitialize,
  retryParams,
  SERVER_INFO_KEY,
  withElicitation,
  withEnvelope,
  withoutRetryChannel,
  type InputRead,
} from './mcpModern.ts';
import { openUrl, secretField, secretRefusal, urlCue, urlElicitation } from './mcpUrl.ts';

export { MAX_LINE_CHARS };
/** Answers that do not fit the form are asked again this many times in all, then the elicitation is cancelled. */
export const MAX_ATTEMPTS = 3;
/**
 * A 2026-07-28 call retried this many times with answers and still asking goes on to the client as
 * it is (a 2026-07-28 client), or ends with one error (a bridged 2025-11-25 client).
 */
export const MAX_ROUNDS = 8;
/** How long a bridge waits for the server's answer to `initialize` (and `server/discover`) unless BELAY_MCP_START_TIMEOUT_SECONDS says otherwise. */
export const START_TIMEOUT_MS = 60_000;

/** The wait for a wrapped server's first answers: BELAY_MCP_START_TIMEOUT_SECONDS (decimals allowed) or 60 s. */
export function startTimeoutMs(env: NodeJS.ProcessEnv): number {
  const raw = env.BELAY_MCP_START_TIMEOUT_SECONDS?.trim();
  if (!raw) return START_TIMEOUT_MS;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new UsageError(`BELAY_MCP_START_TIMEOUT_SECONDS must be a positive number of seconds, got ${JSON.stringify(raw.slice(0, 40))}`);
  return Math.round(value * 1000);
}

/** A duration in an error line: "2 s", "0.5 s". */
const seconds = (ms: number) => `${Number((ms / 1000).toFixed(3))} s`;

/** The wrapped server's command line as an error line names it: the program's base name and its arguments, at most 200 characters. */
export function commandLabel(command: readonly string[]): string {
  const words = [path.basename(command[0] ?? ''), ...command.slice(1)].map((word) => word.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?'));
  const text = words.map((word) => (word === '' || /[\s'"`]/.test(word) ? JSON.stringify(word) : word)).join(' ');
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

const InitializeParams = z.looseObject({
  protocolVersion: z.unknown().optional(),
  clientInfo: z.unknown().optional(),
  capabilities: z.looseObject({ elicitation: z.record(z.string(), z.unknown()).optional() }).optional(),
});
const ServerInfo = z.looseObject({ name: z.string().optional(), title: z.string().optional() });
const InitializeResult = z.looseObject({ serverInfo: ServerInfo.optional() });
const ResultMeta = z.looseObject({ _meta: z.looseObject({ [SERVER_INFO_KEY]: ServerInfo.optional() }).optional() });
const CancelledParams = z.looseObject({ requestId: RequestId });

/** A 2026-07-28 call that may come back asking for input (see `calls` in runBridge). */
interface Call {
  id: RequestId;
  method: string;
  params: Record<string, unknown>;
  rounds: number;
  expecting: string;
}

/** Whether a result says it is an `InputRequiredResult`, whatever else it holds. */
const isInputRequired = (result: unknown): boolean => typeof result === 'object' && result !== null && (result as { resultType?: unknown }).resultType === 'input_required';

export interface ElicitResult {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, FieldValue>;
}

/**
 * The client's `initialize` request with form and URL elicitation added to its capabilities
 * (Belay answers both). Undefined: no change (the client already declares both).
 */
export function withElicitationModes(message: Message): Message | undefined {
  const params = InitializeParams.safeParse(message.params ?? {});
  if (!params.success) return undefined;
  const capabilities = params.data.capabilities ?? {};
  const elicitation = capabilities.elicitation;
  // An empty object is the older spelling of "form supported".
  if (elicitation && (Object.keys(elicitation).length === 0 || 'form' in elicitation) && 'url' in elicitation) return undefined;
  return { ...message, params: { ...params.data, capabilities: withElicitation(capabilities) } };
}

/** A 2026-07-28 request with form and URL elicitation added to the capabilities in its `_meta`. */
export function withModernElicitation(message: Message): Message {
  const params = message.params as { _meta: Record<string, unknown> };
  const declared = params._meta[CLIENT_CAPABILITIES_KEY];
  const capabilities = typeof declared === 'object' && declared !== null && !Array.isArray(declared) ? (declared as Record<string, unknown>) : {};
  return { ...message, params: { ...params, _meta: { ...params._meta, [CLIENT_CAPABILITIES_KEY]: withElicitation(capabilities) } } };
}

/**
 * Asks `form` as cues of `agentId` until the answer fits (at most MAX_ATTEMPTS cues) and returns
 * the elicitation result: accept with the typed content; decline when the human ended the cue;
 * cancel for an empty answer, the timeout, or Belay stopping. Undefined when `signal` (the
 * server's cancellation) aborted it: no answer is owed then.
 */
async function askHuman(link: MailboxLink, form: ElicitationForm, options: { agentId: string; timeoutMs: number; signal: AbortSignal }): Promise<ElicitResult | undefined> {
  const mailbox = link.mailbox();
  let prompt = form.prompt;
  for (let attempt = 1; ; attempt++) {
    const outcome = await link.track(options.signal, (interrupt) =>
      cueAndWait(mailbox, { mode: 'cue', agentId: options.agentId, prompt, payloadJson: form.payloadJson, timeoutMs: options.timeoutMs, interrupt, subscribe: link.subscribe }),
    );
    switch (outcome.kind) {
      case 'interrupted':
        return options.signal.aborted ? undefined : { action: 'cancel' };
      case 'cancelled':
        return { action: 'decline' };
      case 'empty':
      case 'timeout':
        return { action: 'cancel' };
      case 'answered': {
        if (form.fields.length === 0) return { action: 'accept', content: {} };
        const read = readFormAnswer(form, outcome.response?.text ?? '');
        if ('content' in read) return { action: 'accept', content: read.content };
        if (attempt >= MAX_ATTEMPTS) return { action: 'cancel' };
        prompt = `Your answer did not fit the form: ${read.problems.join('; ')}. Please answer again.\n\n${form.prompt}`;
      }
    }
  }
}

/** Runs `command` as the wrapped MCP server until either side ends; resolves to the exit code. */
export async function runBridge(command: [string, ...string[]], io: CliIO): Promise<number> {
  silenceSqliteExperimentalWarning();
  const timeoutMs = cueTimeoutForCommandLine(io.env);
  const startTimeout = startTimeoutMs(io.env);
  const link = new MailboxLink(io.env);
  /**
   * What starts the ids of Belay's own requests (its discover and retries to the server, its
   * input requests to the client): no id a client or server picks collides with them by chance,
   * and neither side can guess one.
   */
  const belayId = `belay-${randomBytes(6).toString('hex')}`;
  const discoverId = `${belayId}-discover`;
  /** Set when Belay stopped the server itself (it did not answer in time): the exit code is 1, the line said. */
  let stopped = false;
  let failure: string | undefined;
  const fail = (message: string) => {
    failure ??= message;
    child.kill();
  };
  const toClient = (line: string) => void io.stdout.write(`${line}\n`);

  let initializeId: string | undefined;
  let serverInfo: { name?: string | undefined; title?: string | undefined } = {};
  let agentId: string | undefined;
  /** Elicitations being asked, by JSON of their id (or of the call they belong to): aborted on cancellation. */
  const asking = new Map<string, AbortController>();

  /** The client's requests the server has not answered yet, by JSON of their id. */
  const open = new Set<string>();
  /**
   * 2026-07-28 calls that may come back asking for input: the client's id and what it sent, and
   * the JSON of the id whose answer is awaited (the client's own, then Belay's latest retry).
   */
  const calls = new Map<string, Call>();
  /** Belay's retries of those calls, by JSON of the retry's id: the call each belongs to. */
  const retries = new Map<string, string>();
  let retryCount = 0;
  let clientLeft = false;
  /**
   * The server's era, found out when the client starts with `initialize`: until the server has
   * answered it (or, having refused it, `server/discover`), Belay holds the client's other lines.
   */
  let probing:
    | { id: RequestId; version: unknown; capabilities: Record<string, unknown>; declared: Record<string, unknown>; clientInfo: unknown; held: string[]; refusal?: unknown; timer: NodeJS.Timeout }
    | undefined;
  /**
   * Set when a 2025-11-25 client is bridged to a 2026-07-28 server: the `_meta` each of its
   * requests gets, and the capabilities it declared itself (before Belay added elicitation).
   */
  let bridged: { meta: Record<string, unknown>; declared: Record<string, unknown> } | undefined;
  /** Belay's own requests to a bridged client (input requests it passes on), by JSON of their id. */
  const waiting = new Map<string, { answered: (message: Message) => void; gone: () => void }>();
  let inputCount = 0;
  let staleSaid = false;
  let firstMessage = true;
  const endInputWhenDone = () => {
    if (clientLeft && asking.size === 0 && open.size === 0) child.endInput();
  };
  const finish = (clientKey: string) => {
    calls.delete(clientKey);
    if (open.delete(clientKey)) queueMicrotask(endInputWhenDone);
  };

  const serverLabel = () => serverInfo.title || serverInfo.name || path.basename(command[0]);
  const say = (line: string) => void io.stderr.write(`belay mcp: ${line}\n`);
  const agent = () => {
    agentId ??= join(link.mailbox(), serverInfo.name || path.basename(command[0]).replace(/\.[cm]?[jt]s$|\.exe$/i, '') || 'mcp', { env: io.env, cwd: io.cwd }).agentId;
    return agentId;
  };

  /**
   * How Belay answers one elicitation: through a cue (the result, or undefined when `signal`
   * aborted it), refused (one line saying why), or not at all (it goes on to the client).
   */
  type Plan = { ask: (signal: AbortSignal) => Promise<ElicitResult | undefined> } | { refuse: string } | { passOn: true };
  const plan = (params: unknown): Plan => {
    const url = urlElicitation(params);
    if (url && 'problem' in url) return { refuse: `the MCP server ${serverLabel()} sent a URL elicitation Belay will not open: ${url.problem}` };
    if (url) {
      const cue = urlCue(url, serverLabel());
      return {
        ask: async (signal) => {
          const outcome = await link.track(signal, (interrupt) =>
            cueAndWait(link.mailbox(), { mode: 'cue', agentId: agent(), prompt: cue.prompt, payloadJson: cue.payloadJson, timeoutMs, interrupt, subscribe: link.subscribe }),
          );
          if (outcome.kind === 'interrupted') return signal.aborted ? undefined : { action: 'cancel' };
          if (outcome.kind === 'cancelled') return { action: 'decline' };
          if (outcome.kind !== 'answered') return { action: 'cancel' };
          openUrl(url.url, io.env, say);
          return { action: 'accept' };
        },
      };
    }
    const secret = secretField(params);
    if (secret !== undefined) return { refuse: secretRefusal(serverLabel(), secret) };
    const form = elicitationForm(params, serverLabel());
    if (!form) return { passOn: true };
    return { ask: (signal) => askHuman(link, form, { agentId: agent(), timeoutMs, signal }) };
  };

  /** A 2025-11-25 server's `elicitation/create` request. */
  const elicit = async (id: string | number, params: unknown, line: string) => {
    const how = plan(params);
    if ('passOn' in how) return toClient(line);
    if ('refuse' in how) {
      say(how.refuse);
      return child.write(`${JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32602, message: how.refuse } })}\n`);
    }
    const key = JSON.stringify(id);
    const cancelled = new AbortController();
    asking.set(key, cancelled);
    try {
      const result = await how.ask(cancelled.signal);
      if (result) child.write(`${JSON.stringify({ jsonrpc: '2.0', id, result })}\n`);
    } catch (error) {
      say(`cannot ask through the cue mailbox (${errorMessage(error)}); the elicitation goes to the client`);
      toClient(line);
    } finally {
      asking.delete(key);
      endInputWhenDone();
    }
  };

  /** Sends a call's retry to the server: its params with `responses` and the `requestState` echoed. */
  const retry = (clientKey: string, call: Call, responses: ReadonlyArray<readonly [string, unknown]>, requestState: string | undefined) => {
    const retryId = `${belayId}-retry-${++retryCount}`;
    const retryKey = JSON.stringify(retryId);
    retries.set(retryKey, clientKey);
    call.rounds++;
    call.expecting = retryKey;
    child.write(`${JSON.stringify({ jsonrpc: '2.0', id: retryId, method: call.method, params: retryParams(call.params, responses, requestState) })}\n`);
  };

  /**
   * A 2026-07-28 server's `InputRequiredResult` for a 2026-07-28 client's call `clientKey`: Belay
   * answers its elicitations and retries the call; true when it took the result on (false: the
   * client gets it, and answers what Belay cannot: sampling, roots, a form Belay cannot show).
   */
  const answerInputs = (clientKey: string, result: InputRequiredResult): boolean => {
    const call = calls.get(clientKey);
    const requests = Object.entries(result.inputRequests ?? {});
    if (!call || requests.length === 0 || call.rounds >= MAX_ROUNDS) return false;
    const plans = requests.map(([key, request]) => [key, request.method === 'elicitation/create' ? plan(request.params) : ({ passOn: true } as const)] as const);
    // Sampling, roots, or a form Belay cannot show: the client answers the whole result.
    if (plans.some(([, how]) => 'passOn' in how)) return false;
    const refused = plans.find(([, how]) => 'refuse' in how);
    if (refused && 'refuse' in refused[1]) {
      say(refused[1].refuse);
      toClient(JSON.stringify({ jsonrpc: '2.0', id: call.id, error: { code: -32603, message: `belay mcp: ${refused[1].refuse}` } }));
      finish(clientKey);
      return true;
    }
    call.expecting = '';
    const cancelled = new AbortController();
    asking.set(clientKey, cancelled);
    void (async () => {
      const inputResponses: Array<[string, ElicitResult]> = [];
      try {
        for (const [key, how] of plans) {
          if (!('ask' in how)) continue;
          const answer = await how.ask(cancelled.signal);
          if (!answer) return finish(clientKey);
          inputResponses.push([key, answer]);
        }
        retry(clientKey, call, inputResponses, result.requestState);
      } catch (error) {
        say(`cannot ask through the cue mailbox (${errorMessage(error)})`);
        toClient(JSON.stringify({ jsonrpc: '2.0', id: call.id, error: { code: -32603, message: `belay mcp: the server asked for input and the cue mailbox cannot be used: ${errorMessage(error)}` } }));
        finish(clientKey);
      } finally {
        asking.delete(clientKey);
        endInputWhenDone();
      }
    })();
    return true;
  };

  type ClientOutcome = { message: Message } | { timedOut: true } | { gone: true } | { aborted: true };
  /**
   * Asks a bridged client one input request as the 2025-11-25 server-to-client request it was,
   * under an id of Belay's: its answer; or it did not come within the cue timeout, or the client
   * closed its input, or `signal` ended the call first (the request is cancelled at the client).
   */
  const askClient = (input: InputRead, signal: AbortSignal): Promise<ClientOutcome> =>
    new Promise((resolve) => {
      if (signal.aborted) return resolve({ aborted: true });
      if (clientLeft) return resolve({ gone: true });
      const id = `${belayId}-input-${++inputCount}`;
      const key = JSON.stringify(id);
      const cancel = (reason: string) => toClient(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason } }));
      const end = (outcome: ClientOutcome) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        waiting.delete(key);
        resolve(outcome);
      };
      const onAbort = () => (cancel('the call it was asked for ended'), end({ aborted: true }));
      const timer = setTimeout(() => (cancel(`no answer within ${seconds(timeoutMs)}`), end({ timedOut: true })), timeoutMs);
      signal.addEventListener('abort', onAbort, { once: true });
      waiting.set(key, { answered: (message) => end({ message }), gone: () => end({ gone: true }) });
      toClient(JSON.stringify(legacyServerRequest(id, input)));
    });

  /**
   * A 2026-07-28 server's `InputRequiredResult` for a bridged 2025-11-25 client's call: each input
   * request goes to the person (an elicitation Belay can show: a cue, as for any client) or to the
   * client as the 2025-11-25 request it was (sampling, roots, a form Belay cannot show), when the
   * client declared the capability; all are answered, then the call is retried, round after round
   * while the server asks, up to MAX_ROUNDS. Anything else ends the call with one error: an input
   * request the client has no capability for (the 2025-11-25 spec's error, as the client would
   * have given it), a flood or an oversized request, the client's error or silence.
   */
  const answerBridged = (clientKey: string, call: Call, result: unknown, declared: Record<string, unknown>): void => {
    const label = `the MCP server ${serverLabel()}`;
    // Until Belay retries, no answer is awaited for this call: another under its id is a forgery.
    call.expecting = '';
    const failCall = (why: string, error: { code: number; data?: unknown } = { code: ErrorCode.internal }) => {
      say(why);
      toClient(JSON.stringify({ jsonrpc: '2.0', id: call.id, error: { ...error, message: `belay mcp: ${why}` } }));
      finish(clientKey);
    };
    if (call.rounds >= MAX_ROUNDS) return failCall(`${label} still asked for input after ${MAX_ROUNDS} retries of ${call.method} with answers; Belay stopped the call`);
    const read = readInputRequests(result);
    if ('problem' in read) return failCall(`${label} answered ${call.method} with an InputRequiredResult Belay cannot answer: ${read.problem}`);
    const human: Array<{ input: InputRead; ask: (signal: AbortSignal) => Promise<ElicitResult | undefined> }> = [];
    const client: InputRead[] = [];
    for (const input of read.inputs) {
      if (input.method === 'elicitation/create') {
        const how = plan(input.params);
        if ('refuse' in how) return failCall(how.refuse);
        if ('ask' in how) {
          human.push({ input, ask: how.ask });
          continue;
        }
      }
      if (!clientDeclares(declared, input.method)) {
        const error = notSupportedError(input.method);
        const what = input.method === 'elicitation/create' ? 'a form Belay cannot show as a cue' : input.method;
        return failCall(`${label} asked for ${what} (input request ${quoted(input.key)}), and the client did not declare the ${INPUT_CAPABILITY[input.method]} capability: ${error.message}`, { code: error.code, data: error.data });
      }
      client.push(input);
    }
    if (human.length + client.length === 0) return retry(clientKey, call, [], read.requestState);

    const ended = new AbortController();
    asking.set(clientKey, ended);
    let failure: { why: string; error?: { code: number } } | undefined;
    const stop = (why: string, error?: { code: number }) => {
      failure ??= { why, ...(error ? { error } : {}) };
      ended.abort();
    };
    const responses = new Map<InputRead, unknown>();
    const askPerson = async () => {
      for (const { input, ask } of human) {
        let answer: ElicitResult | undefined;
        try {
          answer = await ask(ended.signal);
        } catch (error) {
          return stop(`${label} asked for input and the cue mailbox cannot be used: ${errorMessage(error)}`);
        }
        if (!answer) return;
        responses.set(input, answer);
      }
    };
    const askTheClient = async (input: InputRead) => {
      const outcome = await askClient(input, ended.signal);
      const request = `${label}'s ${input.method} request ${quoted(input.key)}`;
      if ('aborted' in outcome) return;
      if ('timedOut' in outcome) return stop(`the client did not answer ${request} within ${seconds(timeoutMs)}; Belay cancelled it and the call`);
      if ('gone' in outcome) return stop(`the client closed its input before answering ${request}`);
      const { message } = outcome;
      if (message.error !== undefined) {
        const code = (message.error as { code?: unknown }).code;
        return stop(`the client answered ${request} with the error ${errorSummary(message.error)}; the call was not retried`, { code: typeof code === 'number' ? code : ErrorCode.internal });
      }
      const response = readInputResponse(input.method, message.result);
      if ('problem' in response) return stop(`the client's answer to ${request} cannot be passed on: ${response.problem}`);
      responses.set(input, response.response);
    };
    void (async () => {
      try {
        await Promise.all([askPerson(), ...client.map(askTheClient)]);
        if (failure) return failCall(failure.why, failure.error);
        // The client cancelled its call: no answer is owed.
        if (ended.signal.aborted) return finish(clientKey);
        retry(clientKey, call, read.inputs.map((input) => [input.key, responses.get(input)] as const), read.requestState);
      } finally {
        asking.delete(clientKey);
        endInputWhenDone();
      }
    })();
  };

  /** A server's answer to a bridged client's request, as a 2025-11-25 client reads it; undefined: unchanged. */
  const forLegacyClient = (message: Message): string | undefined => {
    const legacy = legacyResult(message.result);
    if (legacy) return JSON.stringify({ ...message, result: legacy });
    if (!isInputRequired(message.result) || message.id === undefined) return undefined;
    const why = `the MCP server ${serverLabel()} answered a request that cannot ask for input (only ${[...INPUT_REQUIRED_METHODS].join(', ')} can) with an InputRequiredResult`;
    say(why);
    return JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32603, message: `belay mcp: ${why}` } });
  };

  /** The end of finding out the server's era: the held lines go on, as the client sent them. */
  const endProbe = () => {
    const held = probing?.held ?? [];
    clearTimeout(probing?.timer);
    probing = undefined;
    for (const line of held) onClientLine(line);
  };

  /**
   * The server's answer to `initialize` or to Belay's `server/discover` while the era is being
   * found out: true when Belay took it on (the client gets nothing of it as it came).
   */
  const probeAnswer = (message: Message): boolean => {
    if (!probing || message.id === undefined || message.method !== undefined) return false;
    const id = JSON.stringify(message.id);
    if (id === initializeId && probing.refusal === undefined) {
      if (message.error === undefined || !refusesInitialize(message.error)) {
        // A server of the 2025-11-25 era (or one whose refusal says something else): as today.
        queueMicrotask(endProbe);
        return false;
      }
      probing.refusal = message.error;
      child.write(`${JSON.stringify({ jsonrpc: '2.0', id: discoverId, method: 'server/discover', params: { _meta: envelopeMeta(probing.capabilities, probing.clientInfo) } })}\n`);
      return true;
    }
    if (id !== JSON.stringify(discoverId) || probing.refusal === undefined) return false;
    const read =
      message.error !== undefined
        ? { problem: `it answered with the error ${errorSummary(message.error)}` }
        : message.result === undefined
          ? { problem: 'it answered with neither a result nor an error' }
          : readDiscover(message.result);
    if ('problem' in read) {
      const why = `the MCP server ${serverLabel()} refused initialize (${errorSummary(probing.refusal)}) and its answer to server/discover cannot be used: ${read.problem}`;
      say(why);
      toClient(JSON.stringify({ jsonrpc: '2.0', id: probing.id, error: { code: -32603, message: `belay mcp: ${why}` } }));
    } else {
      if (read.discovered.serverInfo) serverInfo = read.discovered.serverInfo;
      bridged = { meta: envelopeMeta(probing.capabilities, probing.clientInfo), declared: probing.declared };
      toClient(JSON.stringify({ jsonrpc: '2.0', id: probing.id, result: initializeFromDiscover(read.discovered, probing.version, path.basename(command[0])) }));
    }
    finish(initializeId!);
    endProbe();
    return true;
  };

  /**
   * The server has not answered `initialize` (or, having refused it, `server/discover`) within
   * the start timeout: the client's `initialize` gets one error naming the command and what was
   * awaited, and the server is stopped; the client's held lines are dropped.
   */
  const probeTimedOut = () => {
    if (!probing) return;
    const what = probing.refusal === undefined ? 'initialize' : 'server/discover';
    const why = `the MCP server \`${commandLabel(command)}\` did not answer ${what} within ${seconds(startTimeout)}; Belay stopped it`;
    say(why);
    toClient(JSON.stringify({ jsonrpc: '2.0', id: probing.id, error: { code: ErrorCode.internal, message: `belay mcp: ${why}` } }));
    probing = undefined;
    stopped = true;
    child.endInput();
    child.kill();
  };

  const fromServer = new LineReader(
    (line) => {
      const message = parseLine(line);
      if (message && probeAnswer(message)) return;
      if (message?.method === 'elicitation/create' && message.id !== undefined) return void elicit(message.id, message.params, line);
      if (message?.method === 'notifications/cancelled') {
        const params = CancelledParams.safeParse(message.params);
        const key = params.success ? JSON.stringify(params.data.requestId) : undefined;
        // Only the server's own requests are its to cancel: a client's call it names is not.
        const ours = key !== undefined && !calls.has(key) ? asking.get(key) : undefined;
        // The client never saw the request: the cancellation is Belay's to act on, not to pass on.
        if (ours) return ours.abort();
      }
      if (message && message.id !== undefined && message.method === undefined) {
        const id = JSON.stringify(message.id);
        // A retry's answer is the answer to the client's own call, under the client's id.
        const clientKey = retries.get(id) ?? id;
        retries.delete(id);
        const call = calls.get(clientKey);
        // A second answer to a call already answered (under the client's id or an earlier retry's),
        // or one to an id of Belay's it no longer awaits: nobody asked for it.
        if ((call && call.expecting !== id) || (!call && typeof message.id === 'string' && message.id.startsWith(belayId))) {
          if (!staleSaid) say(`the MCP server ${serverLabel()} answered a request it had already answered (id ${quoted(String(message.id))}); such answers are dropped`);
          staleSaid = true;
          return;
        }
        if (id === initializeId) {
          const result = InitializeResult.safeParse(message.result);
          if (result.success && result.data.serverInfo) serverInfo = result.data.serverInfo;
        }
        const meta = ResultMeta.safeParse(message.result);
        const info = meta.success ? meta.data._meta?.[SERVER_INFO_KEY] : undefined;
        if (info) serverInfo = info;
        if (call && bridged && isInputRequired(message.result)) return answerBridged(clientKey, call, message.result, bridged.declared);
        const asked = InputRequiredResult.safeParse(message.result);
        if (!bridged && asked.success && answerInputs(clientKey, asked.data)) return;
        finish(clientKey);
        const answer = call && clientKey !== id ? { ...message, id: call.id } : undefined;
        const legacy = bridged ? forLegacyClient(answer ?? message) : undefined;
        if (legacy) return toClient(legacy);
        if (answer) return toClient(JSON.stringify(answer));
      }
      toClient(line);
    },
    () => fail(`the MCP server wrote a line longer than ${MAX_LINE_CHARS} characters; stopping`),
  );

  function onClientLine(line: string): void {
    if (probing) return void probing.held.push(line);
    let message = parseLine(line);
    const first = firstMessage && message !== undefined;
    if (message) firstMessage = false;
    if (message && message.method === undefined && message.id !== undefined) {
      // The client's answer to an input request Belay passed on: Belay's, not the server's.
      const ours = waiting.get(JSON.stringify(message.id));
      if (ours) return ours.answered(message);
      // A second answer to a request of Belay's, or one it withdrew: the server never asked it.
      if (typeof message.id === 'string' && message.id.startsWith(belayId)) return;
    }
    if (bridged && message?.method !== undefined) {
      // The stateless revision has no session: what only a session meant is not forwarded.
      if (message.id === undefined && DROPPED_CLIENT_NOTIFICATIONS.has(message.method)) return;
      if (message.id !== undefined) {
        message = withEnvelope(withoutRetryChannel(message), bridged.meta);
        line = JSON.stringify(message);
      }
    }
    if (message?.method !== undefined && message.id !== undefined) open.add(JSON.stringify(message.id));
    if (message?.method === 'initialize' && message.id !== undefined) {
      initializeId = JSON.stringify(message.id);
      const changed = withElicitationModes(message);
      if (first) {
        const params = InitializeParams.safeParse((changed ?? message).params ?? {});
        const read = params.success ? params.data : {};
        const declared = InitializeParams.safeParse(message.params ?? {});
        probing = {
          id: message.id,
          version: read.protocolVersion,
          capabilities: read.capabilities ?? {},
          declared: (declared.success ? declared.data.capabilities : undefined) ?? {},
          clientInfo: read.clientInfo,
          held: [],
          timer: setTimeout(probeTimedOut, startTimeout),
        };
      }
      if (changed) return child.write(`${JSON.stringify(changed)}\n`);
    }
    if (message?.method !== undefined && message.id !== undefined && isModernRequest(message)) {
      const changed = withModernElicitation(message);
      if (INPUT_REQUIRED_METHODS.has(message.method)) {
        const key = JSON.stringify(message.id);
        calls.set(key, { id: message.id, method: message.method, params: changed.params as Record<string, unknown>, rounds: 0, expecting: key });
      }
      return child.write(`${JSON.stringify(changed)}\n`);
    }
    if (message?.method === 'notifications/cancelled') {
      const params = CancelledParams.safeParse(message.params);
      const key = params.success ? JSON.stringify(params.data.requestId) : undefined;
      if (key !== undefined && calls.has(key)) {
        asking.get(key)?.abort();
        // A retry under way is Belay's request now: the cancellation names it.
        for (const [retryKey, clientKey] of retries) {
          if (clientKey === key) child.write(`${JSON.stringify({ ...message, params: { ...(message.params as object), requestId: JSON.parse(retryKey) as RequestId } })}\n`);
        }
      }
    }
    child.write(`${line}\n`);
  }
  const fromClient = new LineReader(onClientLine, () => fail(`the MCP client wrote a line longer than ${MAX_LINE_CHARS} characters; stopping`));

  const child = startChild({ argv: command, cwd: io.cwd, env: io.env, onStdout: (chunk) => fromServer.push(chunk), onStderr: (chunk) => io.stderr.write(chunk) });

  const decoder = new StringDecoder('utf8');
  const onData = (chunk: Buffer | string) => fromClient.push(typeof chunk === 'string' ? chunk : decoder.write(chunk));
  io.stdin.on('data', onData);
  // The client closing its input passes on to the server, once Belay has given it the answers
  // to what it still asks; the server then ends in its own time. A broken pipe or a signal (what a
  // client sends a server that does not exit) ends the server's whole tree at once.
  // The client's death (it was not there to send a signal) counts as one.
  const stop = stopRequested();
  let parentGone: ReturnType<typeof orphaned> | undefined;
  void Promise.race([clientGone(io.stdin, io.stdout), stop.promise.then(() => 'stopped' as const)]).then((how) => {
    clientLeft = true;
    // What Belay asked the client can no longer be answered.
    for (const pending of [...waiting.values()]) pending.gone();
    if (how === 'ended') {
      parentGone = orphaned();
      void parentGone.promise.then(() => child.kill());
      return endInputWhenDone();
    }
    child.endInput();
    child.kill();
  });

  const end = await child.ended;
  clearTimeout(probing?.timer);
  // The server is gone: what Belay still asks for it (of the client, or as cues) is withdrawn.
  for (const ended of [...asking.values()]) ended.abort();
  stop.dispose();
  parentGone?.dispose();
  io.stdin.off('data', onData);
  (io.stdin as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
  await link.close();
  if (end.spawnError) {
    io.stderr.write(`belay mcp: cannot start the MCP server: ${end.spawnError.message}\n`);
    return 1;
  }
  if (failure) {
    io.stderr.write(`belay mcp: ${failure}\n`);
    return 1;
  }
  if (stopped) return 1;
  if (clientLeft) return 0;
  return end.exitCode ?? 1;
}
