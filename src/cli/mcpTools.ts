// The HAP tools of `belay mcp` (join, recall, cue, pause), described and run once for both eras
// of MCP: the SDK's server (2025-11-25, mcpServer.ts) and the 2026-07-28 one (mcpModernServer.ts).
import { readFile, stat } from 'node:fs/promises';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import { errorMessage } from '../shared/errors.ts';
import { MailboxError } from '../cues/core/errors.ts';
import { cueAndWait, join, normalizeRuntime, pauseRequest, recall, renderResponse } from '../cues/core/hap.ts';
import { viewPayload } from '../cues/core/payload.ts';
import type { AttachedFile, CueResponse, Mailbox } from '../cues/core/store.ts';
import type { MailboxLink } from './mcpMailbox.ts';

declare const BELAY_VERSION: string;

export const SERVER_NAME = 'belay';
export const SERVER_TITLE = 'Belay Cues (Human Agent Protocol)';

export function serverVersion(): string {
  return typeof BELAY_VERSION === 'string' ? BELAY_VERSION : 'dev';
}

/** What the server tells a client about itself (MCP `instructions`). */
export const INSTRUCTIONS =
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

export function textResult(text: string, isError = false): CallToolResult {
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

export const CueArgs = {
  prompt: z.string().describe('What to tell or ask the human (Markdown): progress, a summary, a question, options, risks.'),
  agent_id: z.string().describe('Your agent_id, from join() or recall().'),
  payload: z.union([z.string(), z.null(), z.record(z.string(), z.unknown())]).optional().describe(PAYLOAD_HELP),
};
export const PauseArgs = {
  agent_id: z.string().describe('Your agent_id, from join() or recall().'),
  prompt: z.string().nullish().describe('Optional message shown on the pause card.'),
};
export const RecallArgs = {
  hints: z.string().describe('Words from an earlier prompt of this conversation, e.g. "refactored the login module".'),
};

/** The four tools, described once for both eras (the SDK's registration and the 2026-07-28 `tools/list`). */
export const TOOLS = {
  join: {
    title: 'Join the human\'s mailbox',
    description:
      'Human Agent Protocol: call once at the start of a conversation. Returns your agent_id (e.g. "josthendren"); remember it and pass it to every cue() and pause() call.',
    args: {},
  },
  recall: {
    title: 'Find a forgotten agent_id',
    description: 'If you lost your agent_id, describe something from an earlier prompt of this conversation; returns that conversation\'s agent_id, or a new one.',
    args: RecallArgs,
  },
  cue: {
    title: 'Ask the human and wait',
    description:
      'Human Agent Protocol: shows your prompt to the human and waits for their answer, which is the result (text, and images they attached). ' +
      'Call it before any phase summary, after finishing a task or answering a question, and before you end your reply: ' +
      'without it the human cannot continue the conversation. Call join() first if you have no agent_id. ' +
      'If the result says the user did not continue, call pause(agent_id).',
    args: CueArgs,
  },
  pause: {
    title: 'Pause until the human continues',
    description: 'Human Agent Protocol: waits, without a time limit, until the human clicks Continue. Call it when a cue result tells you to pause.',
    args: PauseArgs,
  },
} as const;
export type ToolName = keyof typeof TOOLS;

/** The tools as `tools/list` lists them (JSON Schema 2020-12 input schemas). */
export function toolList(): Array<{ name: string; title: string; description: string; inputSchema: object }> {
  return Object.entries(TOOLS).map(([name, tool]) => {
    const { $schema: _dialect, ...inputSchema } = z.toJSONSchema(z.object(tool.args)) as Record<string, unknown>;
    return { name, title: tool.title, description: tool.description, inputSchema };
  });
}

/** What a cue or pause asks the mailbox for. */
export interface HumanRequest {
  mode: 'cue' | 'pause';
  agentId: string;
  prompt: string;
  payloadJson: string | null;
  timeoutMs?: number;
  /** Said before the answer (a payload that was shown as a plain prompt). */
  note: string;
}

/** A `cue` or `pause` call's arguments as the request it makes, or the error result the model reads. */
export function humanRequest(tool: 'cue' | 'pause', raw: unknown, timeoutMs: number): { request: HumanRequest } | { error: CallToolResult } {
  if (tool === 'pause') {
    const args = z.object(PauseArgs).safeParse(raw ?? {});
    if (!args.success) return { error: textResult(`pause takes agent_id and an optional prompt: ${args.error.issues[0]?.message ?? 'bad arguments'}. Nothing was sent.`, true) };
    if (args.data.agent_id.trim() === '') return { error: textResult('pause needs your agent_id: call join() to get one. Nothing was sent.', true) };
    return { request: { mode: 'pause', agentId: args.data.agent_id.trim(), ...pauseRequest(args.data.prompt ?? undefined), note: '' } };
  }
  const args = z.object(CueArgs).safeParse(raw ?? {});
  if (!args.success) return { error: textResult(`cue takes prompt, agent_id and an optional payload: ${args.error.issues[0]?.message ?? 'bad arguments'}. Nothing was sent.`, true) };
  const { prompt, agent_id: agentId, payload } = args.data;
  if (prompt.trim() === '') return { error: textResult('cue needs a prompt: say what you want to tell or ask the human. Nothing was sent.', true) };
  if (agentId.trim() === '') return { error: textResult('cue needs your agent_id: call join() to get one. Nothing was sent.', true) };
  const parsed = parsePayloadArgument(payload);
  if ('error' in parsed) return { error: textResult(`${parsed.error}. Nothing was sent to the human.`, true) };
  const note = parsed.warning ? `Note: ${parsed.warning}; the human saw a plain prompt.\n\n` : '';
  return { request: { mode: 'cue', agentId: agentId.trim(), prompt: prompt.trim(), payloadJson: parsed.payloadJson, timeoutMs, note } };
}

/** The tool result for the human's response (the text cueme prints, and attached images). */
export async function responseResult(mode: 'cue' | 'pause', response: CueResponse, note = ''): Promise<CallToolResult> {
  const rendered = renderResponse(mode, response);
  const images = rendered.kind === 'answered' ? await imageContents(response.files) : [];
  return { content: [{ type: 'text', text: note + rendered.text }, ...images] };
}

/** Runs `fn` on the mailbox; a mailbox that cannot be used is an error result the model reads. */
export async function withMailbox(link: MailboxLink, fn: (mailbox: Mailbox) => Promise<CallToolResult> | CallToolResult): Promise<CallToolResult> {
  try {
    return await link.use(fn);
  } catch (error) {
    if (error instanceof MailboxError) return textResult(`The cue mailbox cannot be used: ${error.message}`, true);
    throw error;
  }
}

/** Asks and waits for the answer (the blocking way, as the public cuemcp does). */
export function waitForHuman(link: MailboxLink, request: HumanRequest, signal: AbortSignal, onRequest?: (requestId: string) => void): Promise<CallToolResult> {
  return withMailbox(link, async (mailbox) => {
    const { note, ...cue } = request;
    const outcome = await link.track(signal, (interrupt) => cueAndWait(mailbox, { ...cue, interrupt, subscribe: link.subscribe, ...(onRequest ? { onRequest } : {}) }));
    if (outcome.kind === 'interrupted') return textResult(`${note}The ${request.mode} was cancelled before the human answered.`);
    if (outcome.kind === 'answered' && outcome.response) return responseResult(request.mode, outcome.response, note);
    return textResult(note + outcome.text);
  });
}

export function joinResult(link: MailboxLink, clientName: string | undefined, options: { env: NodeJS.ProcessEnv; cwd: string }): Promise<CallToolResult> {
  return withMailbox(link, (mailbox) => textResult(join(mailbox, runtimeFromClient(clientName), options).text));
}

export function recallResult(link: MailboxLink, hints: string): Promise<CallToolResult> {
  return withMailbox(link, (mailbox) => textResult(recall(mailbox, hints).text));
}

