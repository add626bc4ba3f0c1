// `belay mcp`: the Human Agent Protocol as a stdio MCP server, built on the official MCP SDK. Its
// tools and arguments are those of the public cuemcp (join, recall, cue, pause), its answers the
// texts `cueme` prints, over the same mailbox: any HAP console answers it, and Belay's panel and
// `belay cues answer` answer any of them. It waits on mailbox change notifications, never a poll.
import { readFile, stat } from 'node:fs/promises';
import type { Readable, Writable } from 'node:stream';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import { errorMessage } from '../shared/errors.ts';
import { MailboxError } from '../cues/core/errors.ts';
import { cueAndWait, join, normalizeRuntime, pauseRequest, recall, type CueOptions } from '../cues/core/hap.ts';
import { viewPayload } from '../cues/core/payload.ts';
import { silenceSqliteExperimentalWarning } from '../cues/core/sqlite.ts';
import type { AttachedFile, Mailbox } from '../cues/core/store.ts';
import { cueTimeoutForCommandLine } from './cueTimeout.ts';
import { clientGone, orphaned, stopRequested, type CliIO } from './io.ts';
import { MailboxLink } from './mcpMailbox.ts';

declare const BELAY_VERSION: string;

export const SERVER_NAME = 'belay';

/** What the server tells a client about itself (MCP `instructions`). */
const INSTRUCTIONS =
  'Human Agent Protocol: a human answers you from their editor (Belay) or any HAP console. ' +
  'Call join() once per conversation and keep the agent_id it returns. Before any phase summary and before you end a reply, ' +
  'call cue(prompt, agent_id, payload) and continue with what the human answers. When a result tells you to pause, call pause(agent_id).';

const PAYLOAD_HELP =
  'Optional structured question, as a JSON string (or null): ' +
  '{"type":"choice","options":["A","B"],"allow_multiple":false} | ' +
  '{"type":"confirm","text":"Deploy now?","confirm_label":"Deploy","cancel_label":"Not yet"} | ' +
  '{"type":"form","fields":[{"label":"Env","options":["prod","staging"]},{"label":"Reason","kind":"text"}]}';

/** Images an MCP client can show a model; other attachments reach the agent as paths in the text. */
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
/** Larger images stay paths only: a tool result is held whole in memory by every client. */
export const MAX_IMAGE_BYTES = 8 * 1024 * 1024;

/** A client's name (MCP `clientInfo.name`) as the `agent_runtime` tag the HAP tools use. */
export function runtimeFromClient(name: string | undefined): string {
  const runtime = normalizeRuntime(name ?? '');
  if (runtime === 'unknown') return 'mcp';
  if (runtime === 'visual_studio_code' || runtime.startsWith('vscode')) return 'vscode';
  for (const known of ['cursor', 'windsurf', 'codex', 'claude_code', 'kiro', 'opencode']) if (runtime.includes(known)) return known;
  return runtime;
}

export type PayloadArgument = { payloadJson: string | null; warning?: string } | { error: string };

/**
 * The `payload` argument: a JSON string holding an object or null, as the public cuemcp takes it
 * (an object given directly is taken too; models send either). A payload that is not JSON, or
 * JSON but no object, is refused with a message the model can act on; an object that does not
 * follow the protocol goes to the human as a plain prompt with a warning, as with `cueme`.
 */
export function parsePayloadArgument(raw: unknown): PayloadArgument {
  if (raw === undefined || raw === null) return { payloadJson: null };
  let value: unknown = raw;
  if (typeof raw === 'string') {
    if (raw.trim() === '') return { payloadJson: null };
    try {
      value = JSON.parse(raw);
    } catch (error) {
      return { error: `payload is not valid JSON (${errorMessage(error)}); pass a JSON object as a string, or null` };
    }
  }
  if (value === null) return { payloadJson: null };
  if (typeof value !== 'object' || Array.isArray(value)) {
    return { error: `payload must be a JSON object or null, not ${Array.isArray(value) ? 'an array' : typeof value}` };
  }
  const view = viewPayload(value);
  return { payloadJson: JSON.stringify(value), ...(view.kind === 'invalid' ? { warning: view.warning } : {}) };
}

function textResult(text: string, isError = false): CallToolResult {
  return isError ? { content: [{ type: 'text', text }], isError } : { content: [{ type: 'text', text }] };
}

/** The attached images as MCP image content; unreadable or oversized ones are left to the paths in the text. */
export async function imageContents(files: readonly AttachedFile[]): Promise<CallToolResult['content']> {
  const images: CallToolResult['content'] = [];
  for (const file of files) {
    if (!IMAGE_TYPES.has(file.mimeType)) continue;
    try {
      if ((await stat(file.absolutePath)).size > MAX_IMAGE_BYTES) continue;
      images.push({ type: 'image', data: (await readFile(file.absolutePath)).toString('base64'), mimeType: file.mimeType });
    } catch {
      // Gone or unreadable: its path is in the text.
    }
  }
  return images;
}

const CueArgs = {
  prompt: z.string().describe('What to tell or ask the human (Markdown): progress, a summary, a question, options, risks.'),
  agent_id: z.string().describe('Your agent_id, from join() or recall().'),
  payload: z.union([z.string(), z.null(), z.record(z.string(), z.unknown())]).optional().describe(PAYLOAD_HELP),
};
const PauseArgs = {
  agent_id: z.string().describe('Your agent_id, from join() or recall().'),
  prompt: z.string().nullish().describe('Optional message shown on the pause card.'),
};
const RecallArgs = {
  hints: z.string().describe('Words from an earlier prompt of this conversation, e.g. "refactored the login module".'),
};

/** Builds the server with its four tools over `link` (the mailbox, opened on first use). */
export function createHapServer(link: MailboxLink, options: { env: NodeJS.ProcessEnv; cwd: string; timeoutMs: number }): McpServer {
  const server = new McpServer(
    { name: SERVER_NAME, title: 'Belay Cues (Human Agent Protocol)', version: typeof BELAY_VERSION === 'string' ? BELAY_VERSION : 'dev' },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
  );
  const withMailbox = async (fn: (mailbox: Mailbox) => Promise<CallToolResult> | CallToolResult): Promise<CallToolResult> => {
    try {
      return await link.use(fn);
    } catch (error) {
      if (error instanceof MailboxError) return textResult(`The cue mailbox cannot be used: ${error.message}`, true);
      throw error;
    }
  };
  const wait = async (mailbox: Mailbox, signal: AbortSignal, request: Omit<CueOptions, 'interrupt' | 'subscribe'>, note = ''): Promise<CallToolResult> => {
    const outcome = await link.track(signal, (interrupt) => cueAndWait(mailbox, { ...request, interrupt, subscribe: link.subscribe }));
    if (outcome.kind === 'interrupted') return textResult(`${note}The ${request.mode} was cancelled before the human answered.`);
    const images = outcome.kind === 'answered' ? await imageContents(outcome.response?.files ?? []) : [];
    return { content: [{ type: 'text', text: note + outcome.text }, ...images] };
  };

  server.registerTool(
    'join',
    {
      title: 'Join the human\'s mailbox',
      description:
        'Human Agent Protocol: call once at the start of a conversation. Returns your agent_id (e.g. "josthendren"); remember it and pass it to every cue() and pause() call.',
    },
    () =>
      withMailbox((mailbox) => {
        const runtime = runtimeFromClient(server.server.getClientVersion()?.name);
        return textResult(join(mailbox, runtime, { env: options.env, cwd: options.cwd }).text);
      }),
  );
  server.registerTool(
    'recall',
    {
      title: 'Find a forgotten agent_id',
      description: 'If you lost your agent_id, describe something from an earlier prompt of this conversation; returns that conversation\'s agent_id, or a new one.',
      inputSchema: RecallArgs,
    },
    ({ hints }) => withMailbox((mailbox) => textResult(recall(mailbox, hints).text)),
  );
  server.registerTool(
    'cue',
    {
      title: 'Ask the human and wait',
      description:
        'Human Agent Protocol: shows your prompt to the human and waits for their answer, which is the result (text, and images they attached). ' +
        'Call it before any phase summary, after finishing a task or answering a question, and before you end your reply: ' +
        'without it the human cannot continue the conversation. Call join() first if you have no agent_id. ' +
        'If the result says the user did not continue, call pause(agent_id).',
      inputSchema: CueArgs,
    },
    ({ prompt, agent_id: agentId, payload }, extra) => {
      if (prompt.trim() === '') return textResult('cue needs a prompt: say what you want to tell or ask the human. Nothing was sent.', true);
      if (agentId.trim() === '') return textResult('cue needs your agent_id: call join() to get one. Nothing was sent.', true);
      const parsed = parsePayloadArgument(payload);
      if ('error' in parsed) return textResult(`${parsed.error}. Nothing was sent to the human.`, true);
      const note = parsed.warning ? `Note: ${parsed.warning}; the human saw a plain prompt.\n\n` : '';
      return withMailbox((mailbox) =>
        wait(mailbox, extra.signal, { mode: 'cue', agentId: agentId.trim(), prompt: prompt.trim(), payloadJson: parsed.payloadJson, timeoutMs: options.timeoutMs }, note),
      );
    },
  );
  server.registerTool(
    'pause',
    {
      title: 'Pause until the human continues',
      description: 'Human Agent Protocol: waits, without a time limit, until the human clicks Continue. Call it when a cue result tells you to pause.',
      inputSchema: PauseArgs,
    },
    ({ agent_id: agentId, prompt }, extra) => {
      if (agentId.trim() === '') return textResult('pause needs your agent_id: call join() to get one. Nothing was sent.', true);
      return withMailbox((mailbox) => wait(mailbox, extra.signal, { mode: 'pause', agentId: agentId.trim(), ...pauseRequest(prompt ?? undefined) }));
    },
  );
  return server;
}

/**
 * Serves the HAP tools on stdin/stdout. When the client closes stdin (how an MCP client ends a
 * stdio server), calls under way still get their result, then the server exits; a signal (what
 * a client sends a server that does not exit), a broken pipe or the client's death cancels the
 * cues still waiting, so no console offers a question nobody will read the answer to.
 */
export async function runServer(io: CliIO): Promise<number> {
  silenceSqliteExperimentalWarning();
  const timeoutMs = cueTimeoutForCommandLine(io.env);
  const link = new MailboxLink(io.env);
  const server = createHapServer(link, { env: io.env, cwd: io.cwd, timeoutMs });
  const transport = new StdioServerTransport(io.stdin as Readable, io.stdout as Writable);
  transport.onerror = (error) => io.stderr.write(`belay mcp: ${errorMessage(error)}\n`);
  const stop = stopRequested();
  const gone = clientGone(io.stdin, io.stdout);
  await server.connect(transport);
  const how = await Promise.race([gone, stop.promise.then(() => 'stopped' as const)]);
  if (how === 'ended') {
    // Unless the client itself is gone (it died without a signal): then nobody reads the results.
    const parentGone = orphaned();
    await Promise.race([link.idle(), stop.promise, parentGone.promise]);
    parentGone.dispose();
    // The results of the last calls are written a few turns after their handlers return.
    await new Promise((resolve) => setImmediate(resolve));
  }
  stop.dispose();
  await link.close();
  await server.close();
  return 0;
}
