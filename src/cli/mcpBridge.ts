// `belay mcp --wrap -- COMMAND…`: runs another MCP server behind Belay on stdio. Belay tells the
// server that its client supports (form) elicitation and answers each form elicitation itself,
// through a cue the human answers in the panel or any HAP console; so a server that asks the
// user reaches them even when the real client declines elicitation. Every other line passes
// through unchanged, byte for byte, in both directions (newline-delimited JSON-RPC, MCP's stdio
// framing). URL-mode elicitations, and forms Belay cannot show, go on to the client as they came.
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

export { MAX_LINE_CHARS };
/** Answers that do not fit the form are asked again this many times in all, then the elicitation is cancelled. */
export const MAX_ATTEMPTS = 3;

const InitializeParams = z.looseObject({ capabilities: z.looseObject({ elicitation: z.record(z.string(), z.unknown()).optional() }).optional() });
const InitializeResult = z.looseObject({ serverInfo: z.looseObject({ name: z.string().optional(), title: z.string().optional() }).optional() });
const CancelledParams = z.looseObject({ requestId: RequestId });

export interface ElicitResult {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, FieldValue>;
}

/**
 * The client's `initialize` request with form elicitation added to its capabilities (kept as it
 * was when the client already has it; URL mode stays the client's own). Undefined: no change.
 */
export function withFormElicitation(message: Message): Message | undefined {
  const params = InitializeParams.safeParse(message.params ?? {});
  if (!params.success) return undefined;
  const capabilities = params.data.capabilities ?? {};
  const elicitation = capabilities.elicitation;
  // An empty object is the older spelling of "form supported".
  if (elicitation && (Object.keys(elicitation).length === 0 || 'form' in elicitation)) return undefined;
  return { ...message, params: { ...params.data, capabilities: { ...capabilities, elicitation: { ...(elicitation ?? {}), form: {} } } } };
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
  let serverInfo: { name?: string; title?: string } = {};
  let agentId: string | undefined;
  /** Elicitations being asked, by JSON of their id: aborted when the server cancels one. */
  const asking = new Map<string, AbortController>();

  /** The client's requests the server has not answered yet, by JSON of their id. */
  const open = new Set<string>();
  let clientLeft = false;
  const endInputWhenDone = () => {
    if (clientLeft && asking.size === 0 && open.size === 0) child.endInput();
  };

  const serverLabel = () => serverInfo.title || serverInfo.name || path.basename(command[0]);

  const elicit = async (id: string | number, params: unknown, line: string) => {
    const form = elicitationForm(params, serverLabel());
    if (!form) return toClient(line);
    const key = JSON.stringify(id);
    const cancelled = new AbortController();
    asking.set(key, cancelled);
    try {
      const mailbox = link.mailbox();
      agentId ??= join(mailbox, serverInfo.name || path.basename(command[0]).replace(/\.[cm]?[jt]s$|\.exe$/i, '') || 'mcp', { env: io.env, cwd: io.cwd }).agentId;
      const result = await askHuman(link, form, { agentId, timeoutMs, signal: cancelled.signal });
      if (result) child.write(`${JSON.stringify({ jsonrpc: '2.0', id, result })}\n`);
    } catch (error) {
      io.stderr.write(`belay mcp: cannot ask through the cue mailbox (${errorMessage(error)}); the elicitation goes to the client\n`);
      toClient(line);
    } finally {
      asking.delete(key);
      endInputWhenDone();
    }
  };

  const fromServer = new LineReader(
    (line) => {
      const message = parseLine(line);
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
        if (open.delete(id)) queueMicrotask(endInputWhenDone);
      }
      toClient(line);
    },
    () => fail(`the MCP server wrote a line longer than ${MAX_LINE_CHARS} characters; stopping`),
  );
  const fromClient = new LineReader(
    (line) => {
      const message = parseLine(line);
      if (message?.method !== undefined && message.id !== undefined) open.add(JSON.stringify(message.id));
      if (message?.method === 'initialize' && message.id !== undefined) {
        initializeId = JSON.stringify(message.id);
        const changed = withFormElicitation(message);
        if (changed) return child.write(`${JSON.stringify(changed)}\n`);
      }
      child.write(`${line}\n`);
    },
    () => fail(`the MCP client wrote a line longer than ${MAX_LINE_CHARS} characters; stopping`),
  );

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
