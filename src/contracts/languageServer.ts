// The messages between Belay's language client (extension host) and its language server, beyond
// LSP: one typed notification per message, and the zod schema its parameters are checked against
// where they arrive (the server; none goes the other way). Imported by the server and by the client
// bundle only: the editor registers the CodeLens commands from lenses.ts, which needs neither zod
// nor the JSON-RPC library at activation.
import { NotificationType, NotificationType0 } from 'vscode-jsonrpc';
import * as z from 'zod';
import { replaySchema } from './replay.ts';

// The client sends these messages and parses none: marked pure, the schemas (and zod with them) stay
// out of its bundle.

/** What decides each answer's target folder: also the server's initializationOptions. */
export const serverSettingsSchema = /* @__PURE__ */ z.object({
  workspaceFolders: /* @__PURE__ */ z.array(/* @__PURE__ */ z.string()),
  sessionRoot: /* @__PURE__ */ z.string(),
});
export type ServerSettings = z.infer<typeof serverSettingsSchema>;

/** client -> server: the settings changed. */
export const SettingsNotification = new NotificationType<ServerSettings>('belay/settings');

/** client -> server: block states or trust changed, ask the editor for fresh CodeLenses. */
export const RefreshLensesNotification = new NotificationType0('belay/refreshLenses');

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
export const HandledBlocksNotification = new NotificationType<HandledBlocks>('belay/handledBlocks');
