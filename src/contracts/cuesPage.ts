// The Cues webview's message protocol, shared by the extension host and the webview app.
// Every message is parsed with these schemas where it arrives (host: toHostSchema; app:
// toWebviewSchema). The app says `ready` first; the host holds what it sends until then. The
// host's cue model (src/cues/core/model.ts) is made of these types.
import * as z from 'zod';

/** Largest pasted image the host accepts, in base64 characters (about 15 MB of image). */
const MAX_PASTE_BASE64 = 20_000_000;

/** The link target if it is an absolute http(s) URL, else undefined (javascript:, data:, relative… stay text). */
export function safeHref(raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    return undefined;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !url.hostname) return undefined;
  return url.href;
}

/** What a payload asks for, in the shape the UI draws (labels already resolved by the host). */
export const uiPayloadSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('none') }),
  z.object({ kind: z.literal('invalid'), warning: z.string() }),
  z.object({ kind: z.literal('choice'), options: z.array(z.string()), multiple: z.boolean() }),
  z.object({ kind: z.literal('confirm'), text: z.string(), confirmLabel: z.string(), cancelLabel: z.string() }),
  z.object({ kind: z.literal('pause'), text: z.string(), confirmLabel: z.string() }),
  z.object({
    kind: z.literal('form'),
    fields: z.array(z.object({ label: z.string(), options: z.array(z.string()), multiple: z.boolean() })),
  }),
]);
export type UiPayload = z.infer<typeof uiPayloadSchema>;

/**
 * pending: waiting for the human; expired: pending but older than its cueme waits; abandoned:
 * pending but the process that waited is gone: in both, nobody reads an answer any more.
 * answered / cancelled / timeout: has a response; closed: ended elsewhere.
 */
export const cueStateSchema = z.enum(['pending', 'expired', 'abandoned', 'answered', 'cancelled', 'timeout', 'closed']);
export type CueState = z.infer<typeof cueStateSchema>;

export const uiCueSchema = z.object({
  requestId: z.string(),
  agentId: z.string(),
  prompt: z.string(),
  payload: uiPayloadSchema,
  createdAtMs: z.number().optional(),
  /** When a pending cue expires (its cueme stops waiting); absent when it never does. */
  expiresAtMs: z.number().optional(),
  state: cueStateSchema,
  /** The process recorded as waiting (Belay's cueme records it; the public tools do not). */
  waiter: z.object({ pid: z.number(), host: z.string() }).optional(),
  response: z
    .object({
      text: z.string(),
      files: z.array(z.string()),
      atMs: z.number().optional(),
    })
    .optional(),
});
export type UiCue = z.infer<typeof uiCueSchema>;

export const uiAgentSchema = z.object({
  agentId: z.string(),
  runtime: z.string().optional(),
  projectDir: z.string().optional(),
  terminal: z.string().optional(),
  lastActivityMs: z.number().optional(),
  /** Its cues waiting for the human (expired and abandoned ones not counted). */
  pendingCount: z.number(),
  /** A reply waiting for this agent's next cue. */
  queued: z.string().optional(),
  /** Archived by the human and not heard from since. */
  archived: z.boolean().optional(),
});
export type UiAgent = z.infer<typeof uiAgentSchema>;

/** The human's answer as the UI gathered it; the host turns it into the core's answer text. */
export const selectionSchema = z.object({
  /** Free text: the whole answer of a plain prompt, or an extra line after a structured answer. */
  text: z.string().optional(),
  /** choice: the labels picked. */
  choices: z.array(z.string()).optional(),
  /** confirm / pause: the confirm button. */
  confirm: z.boolean().optional(),
  /** form: values per field label ([label, value]); several values for a multi-select field. */
  fields: z.array(z.tuple([z.string(), z.string()])).optional(),
});
export type UiSelection = z.infer<typeof selectionSchema>;

/** Webview -> host. */
export const toHostSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready') }),
  z.object({ type: z.literal('command'), command: z.enum(['belay.showLog', 'belay.openSettings', 'belay.cues.copyInstructions', 'belay.walkthrough.open']) }),
  /** Attachment ids come from `attachments` messages: the webview never names a path. */
  z.object({ type: z.literal('answer'), requestId: z.string(), selection: selectionSchema, attachments: z.array(z.string()) }),
  z.object({ type: z.literal('cancel'), requestId: z.string() }),
  z.object({ type: z.literal('pickFiles'), requestId: z.string() }),
  z.object({ type: z.literal('pasteImage'), requestId: z.string(), mime: z.string(), dataBase64: z.string().max(MAX_PASTE_BASE64) }),
  /** An empty text removes the queued reply. */
  z.object({ type: z.literal('queue'), agentId: z.string(), text: z.string() }),
  /** The agent's conversation in an editor tab, focused on one cue when `requestId` names it. */
  z.object({ type: z.literal('openInEditor'), agentId: z.string(), requestId: z.string().optional() }),
  /** Hide agents from the list until they cue again / show them again. */
  z.object({ type: z.literal('archive'), agentIds: z.array(z.string()).max(10_000) }),
  z.object({ type: z.literal('unarchive'), agentIds: z.array(z.string()).max(10_000) }),
  /** Only http(s) links are opened from agents' prompts. */
  z.object({ type: z.literal('openLink'), url: z.string().refine((url) => safeHref(url) !== undefined, 'only absolute http(s) links are opened') }),
]);
export type ToHost = z.infer<typeof toHostSchema>;

/** Host -> webview. */
export const toWebviewSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('state'),
    /** Where the mailbox is. */
    mailbox: z.string(),
    /** In an untrusted workspace: what Belay withholds there, in the trust module's words. */
    untrusted: z.string().optional(),
    /** Why the mailbox cannot be read, with what to do. */
    error: z.string().optional(),
    /** The host's clock when the state was read, to run "waiting" timers without skew. */
    nowMs: z.number(),
    pending: z.array(uiCueSchema),
    agents: z.array(uiAgentSchema),
    /** Answered and ended cues, oldest first. */
    history: z.array(uiCueSchema),
    /** In an editor panel: the one agent whose conversation it shows. */
    scope: z.object({ agentId: z.string() }).optional(),
  }),
  z.object({ type: z.literal('attachments'), requestId: z.string(), files: z.array(z.object({ id: z.string(), name: z.string() })) }),
  z.object({ type: z.literal('result'), requestId: z.string(), ok: z.boolean(), message: z.string().optional() }),
  z.object({ type: z.literal('focus'), requestId: z.string() }),
]);
export type ToWebview = z.infer<typeof toWebviewSchema>;
