// The messages between Belay's language client (extension host) and its server, beyond LSP.
import * as z from 'zod';

/** client -> server: what decides each answer's target folder. */
export const SETTINGS_NOTIFICATION = 'belay/settings';
export const settingsSchema = z.object({
  workspaceFolders: z.array(z.string()),
  sessionRoot: z.string(),
});
export type ServerSettings = z.infer<typeof settingsSchema>;

/** client -> server: block states changed, ask the editor for fresh CodeLenses. */
export const REFRESH_NOTIFICATION = 'belay/refreshLenses';

/**
 * client -> server: the blocks of a document the editor has handled (applied, failed, rejected):
 * they are not planned again, so a deleted file is not reported missing by its own DELETE_FILE.
 */
export const HANDLED_NOTIFICATION = 'belay/handledBlocks';
export const handledSchema = z.object({ uri: z.string(), keys: z.array(z.string()) });

/** The arguments every block CodeLens command carries: [documentUri, openTagLine, blockKey]. */
export const lensArgumentsSchema = z.tuple([z.string(), z.number().int().min(0), z.string()]);
export type LensArguments = z.infer<typeof lensArgumentsSchema>;

/** Commands the server's CodeLenses invoke (registered by the extension). */
export const LENS_COMMANDS = {
  apply: 'belay.blocks.apply',
  preview: 'belay.blocks.preview',
  run: 'belay.blocks.run',
  open: 'belay.blocks.openTarget',
  show: 'belay.blocks.showMessage',
  applyAll: 'belay.blocks.applyAll',
  previewAll: 'belay.blocks.previewAll',
} as const;
