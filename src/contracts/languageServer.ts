// The messages between Belay's language client (extension host, src/blocks/languageClient.ts) and
// its language server (src/server/), beyond LSP: one notification per message, named here with the
// type of its parameters, and the zod schema they are checked against where they arrive (the
// server; none goes the other way). Also the Replay a block leaves, which the notification carries
// and the ledger stores (src/blocks/core/ledger.ts).
import * as z from 'zod';

// The client sends these messages and parses none: marked pure, the schemas (and zod with them) stay
// out of its bundle, which takes only the method names.

/**
 * A client -> server notification: its JSON-RPC method; `P`, the type of its parameters, is only
 * for the compiler (the client's `sendNotification` and the server's handler agree on it).
 */
export interface ClientNotification<P> {
  readonly method: string;
  /** Never set: carries `P`. */
  readonly params?: P;
}

/** An EDIT_FILE already applied in this answer, in the file's line numbers from before the answer. */
const appliedEditSchema = /* @__PURE__ */ z.object({
  start: /* @__PURE__ */ z.number().int(),
  end: /* @__PURE__ */ z.number().int(),
  /** Lines added (positive) or removed (negative). */
  delta: /* @__PURE__ */ z.number().int(),
});
export type AppliedEdit = z.infer<typeof appliedEditSchema>;

/**
 * What a block applied earlier leaves for the blocks after it to know (line shifts, queued reads,
 * DONE), without planning it again: how the editor resumes an answer whose blocks it applied in
 * earlier actions, derived from what it recorded then (src/blocks/core/plan.ts's `replayOf`).
 */
export const replaySchema = /* @__PURE__ */ z.discriminatedUnion('kind', [
  /** CREATE_FILE: the file now has these lines; later edits count from them. */
  /* @__PURE__ */ z.object({ kind: /* @__PURE__ */ z.literal('write'), real: /* @__PURE__ */ z.string(), lineCount: /* @__PURE__ */ z.number().int().min(0) }),
  /* @__PURE__ */ z.object({
    kind: /* @__PURE__ */ z.literal('edit'),
    real: /* @__PURE__ */ z.string(),
    originalLineCount: /* @__PURE__ */ z.number().int().min(0),
    applied: appliedEditSchema,
    /** The file had changed since the LLM read it, and the edit was carried over that change. */
    relocated: /* @__PURE__ */ z.boolean().optional(),
  }),
  /* @__PURE__ */ z.object({ kind: /* @__PURE__ */ z.literal('delete'), real: /* @__PURE__ */ z.string() }),
  /* @__PURE__ */ z.object({ kind: /* @__PURE__ */ z.literal('read'), relative: /* @__PURE__ */ z.string() }),
  /* @__PURE__ */ z.object({ kind: /* @__PURE__ */ z.literal('run') }),
  /* @__PURE__ */ z.object({ kind: /* @__PURE__ */ z.literal('done') }),
]);
export type Replay = z.infer<typeof replaySchema>;

/** What decides each answer's target folder: also the server's initializationOptions. */
export const serverSettingsSchema = /* @__PURE__ */ z.object({
  workspaceFolders: /* @__PURE__ */ z.array(/* @__PURE__ */ z.string()),
  sessionRoot: /* @__PURE__ */ z.string(),
});
export type ServerSettings = z.infer<typeof serverSettingsSchema>;

/** client -> server: the settings changed. */
export const SettingsNotification: ClientNotification<ServerSettings> = { method: 'belay/settings' };

/** client -> server: block states or trust changed, ask the editor for fresh CodeLenses. */
export const RefreshLensesNotification: ClientNotification<void> = { method: 'belay/refreshLenses' };

/**
 * client -> server: the blocks of a document that are applied already (derived from the files):
 * they are not planned again, so a deleted file is not reported missing by its own DELETE_FILE;
 * `replays` (beside `keys`) say what each left for the blocks after it (line shifts, reads).
 */
export const handledBlocksSchema = /* @__PURE__ */ z.object({
  uri: /* @__PURE__ */ z.string(),
  keys: /* @__PURE__ */ z.array(/* @__PURE__ */ z.string()),
  replays: /* @__PURE__ */ z.array(/* @__PURE__ */ replaySchema.nullable()).optional(),
});
export type HandledBlocks = z.infer<typeof handledBlocksSchema>;
export const HandledBlocksNotification: ClientNotification<HandledBlocks> = { method: 'belay/handledBlocks' };
