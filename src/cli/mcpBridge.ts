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
// `server/discover`, answers `initialize` from it, adds the `_meta` envelope to each request and
// gives results back without `resultType` (the translations are in mcpModern.ts).
import * as path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import * as z from 'zod';
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
  DROPPED_CLIENT_NOTIFICATIONS,
  envelopeMeta,
  errorSummary,
  initializeFromDiscover,
  INPUT_REQUIRED_METHODS,
  InputRequiredResult,
  isModernRequest,
  legacyResult,
  readDiscover,
  refusesInitialize,
  SERVER_INFO_KEY,
  withElicitation,
  withEnvelope,
} from './mcpModern.ts';
import { openUrl, secretField, secretRefusal, urlCue, urlElicitation } from './mcpUrl.ts';

export { MAX_LINE_CHARS };
/** Answers that do not fit the form are asked again this many times in all, then the elicitation is cancelled. */
export const MAX_ATTEMPTS = 3;
/** A 2026-07-28 call retried this many times with answers and still asking goes on to the client as it is. */
export const MAX_ROUNDS = 8;

const InitializeParams = z.looseObject({
  protocolVersion: z.unknown().optional(),
  clientInfo: z.unknown().optional(),
  capabilities: z.looseObject({ elicitation: z.record(z.string(), z.unknown()).optional() }).optional(),
});
/** The id of the one `server/discover` Belay asks a server that refused `initialize`. */
const DISCOVER_ID = 'belay-discover-1';
const ServerInfo = z.looseObject({ name: z.string().optional(), title: z.string().optional() });
const InitializeResult = z.looseObject({ serverInfo: ServerInfo.optional() });
const ResultMeta = z.looseObject({ _meta: z.looseObject({ [SERVER_INFO_KEY]: ServerInfo.optional() }).optional() });
const CancelledParams = z.looseObject({ requestId: RequestId });

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
  const link = new MailboxLink(io.env);
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
  /** 2026-07-28 calls that may come back asking for input: the client's id and what it sent. */
  const calls = new Map<string, { id: RequestId; method: string; params: Record<string, unknown>; rounds: number }>();
  /** Belay's retries of those calls, by JSON of the retry's id: the call each belongs to. */
  const retries = new Map<string, string>();
  let retryCount = 0;
  let clientLeft = false;
  /**
   * The server's era, found out when the client starts with `initialize`: until the server has
   * answered it (or, having refused it, `server/discover`), Belay holds the client's other lines.
   */
  let probing: { id: RequestId; version: unknown; capabilities: Record<string, unknown>; clientInfo: unknown; held: string[]; refusal?: unknown } | undefined;
  /** Set when a 2025-11-25 client is bridged to a 2026-07-28 server: the `_meta` each of its requests gets. */
  let bridged: { meta: Record<string, unknown> } | undefined;
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

  /**
   * A 2026-07-28 server's `InputRequiredResult` for the client's call `clientKey`: Belay answers
   * its elicitations and retries the call; true when it took the result on (false: the client gets it).
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
    const cancelled = new AbortController();
    asking.set(clientKey, cancelled);
    void (async () => {
      const inputResponses: Record<string, ElicitResult> = {};
      try {
        for (const [key, how] of plans) {
          if (!('ask' in how)) continue;
          const answer = await how.ask(cancelled.signal);
          if (!answer) return finish(clientKey);
          inputResponses[key] = answer;
        }
        const retryId = `belay-retry-${++retryCount}`;
        retries.set(JSON.stringify(retryId), clientKey);
        call.rounds++;
        const params = { ...call.params, inputResponses, ...(result.requestState !== undefined ? { requestState: result.requestState } : {}) };
        if (result.requestState === undefined) delete params.requestState;
        child.write(`${JSON.stringify({ jsonrpc: '2.0', id: retryId, method: call.method, params })}\n`);
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

  /** A server's answer to a bridged client's request, as a 2025-11-25 client reads it; undefined: unchanged. */
  const forLegacyClient = (message: Message): string | undefined => {
    const legacy = legacyResult(message.result);
    if (legacy) return JSON.stringify({ ...message, result: legacy });
    const asked = InputRequiredResult.safeParse(message.result);
    if (!asked.success || message.id === undefined) return undefined;
    const methods = [...new Set(Object.values(asked.data.inputRequests ?? {}).map((request) => request.method))].join(', ') || 'nothing named';
    const why = `the MCP server ${serverLabel()} asked for input Belay does not answer (${methods.slice(0, 200)}), and a 2025-11-25 client cannot be asked it through the bridge`;
    say(why);
    return JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32603, message: `belay mcp: ${why}` } });
  };

  /** The end of finding out the server's era: the held lines go on, as the client sent them. */
  const endProbe = () => {
    const held = probing?.held ?? [];
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
      child.write(`${JSON.stringify({ jsonrpc: '2.0', id: DISCOVER_ID, method: 'server/discover', params: { _meta: envelopeMeta(probing.capabilities, probing.clientInfo) } })}\n`);
      return true;
    }
    if (id !== JSON.stringify(DISCOVER_ID) || probing.refusal === undefined) return false;
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
      bridged = { meta: envelopeMeta(probing.capabilities, probing.clientInfo) };
      toClient(JSON.stringify({ jsonrpc: '2.0', id: probing.id, result: initializeFromDiscover(read.discovered, probing.version, path.basename(command[0])) }));
    }
    finish(initializeId!);
    endProbe();
    return true;
  };

  const fromServer = new LineReader(
    (line) => {
      const message = parseLine(line);
      if (message && probeAnswer(message)) return;
      if (message?.method === 'elicitation/create' && message.id !== undefined) return void elicit(message.id, message.params, line);
      if (message?.method === 'notifications/cancelled') {
        const params = CancelledParams.safeParse(message.params);
        const ours = params.success ? asking.get(JSON.stringify(params.data.requestId)) : undefined;
        // The client never saw the request: the cancellation is Belay's to act on, not to pass on.
        if (ours) return ours.abort();
      }
      if (message && message.id !== undefined && message.method === undefined) {
        const id = JSON.stringify(message.id);
        if (id === initializeId) {
          const result = InitializeResult.safeParse(message.result);
          if (result.success && result.data.serverInfo) serverInfo = result.data.serverInfo;
        }
        const meta = ResultMeta.safeParse(message.result);
        const info = meta.success ? meta.data._meta?.[SERVER_INFO_KEY] : undefined;
        if (info) serverInfo = info;
        // A retry's answer is the answer to the client's own call, under the client's id.
        const clientKey = retries.get(id) ?? id;
        retries.delete(id);
        const asked = InputRequiredResult.safeParse(message.result);
        if (asked.success && answerInputs(clientKey, asked.data)) return;
        const call = calls.get(clientKey);
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
    if (bridged && message?.method !== undefined) {
      // The stateless revision has no session: what only a session meant is not forwarded.
      if (message.id === undefined && DROPPED_CLIENT_NOTIFICATIONS.has(message.method)) return;
      if (message.id !== undefined) {
        message = withEnvelope(message, bridged.meta);
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
        probing = { id: message.id, version: read.protocolVersion, capabilities: read.capabilities ?? {}, clientInfo: read.clientInfo, held: [] };
      }
      if (changed) return child.write(`${JSON.stringify(changed)}\n`);
    }
    if (message?.method !== undefined && message.id !== undefined && isModernRequest(message)) {
      const changed = withModernElicitation(message);
      if (INPUT_REQUIRED_METHODS.has(message.method)) {
        calls.set(JSON.stringify(message.id), { id: message.id, method: message.method, params: changed.params as Record<string, unknown>, rounds: 0 });
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
    if (how === 'ended') {
      parentGone = orphaned();
      void parentGone.promise.then(() => child.kill());
      return endInputWhenDone();
    }
    child.endInput();
    child.kill();
  });

  const end = await child.ended;
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
  if (clientLeft) return 0;
  return end.exitCode ?? 1;
}
