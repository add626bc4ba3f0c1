// The Cues webview's message protocol, shared by the extension host and the webview app.
// Every message is parsed with these schemas where it arrives.
import { z } from 'zod';

/** Webview -> host. */
export const toHostSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready') }),
  z.object({ type: z.literal('command'), command: z.enum(['belay.showLog', 'belay.openSettings']) }),
]);
export type ToHost = z.infer<typeof toHostSchema>;

/** Host -> webview. */
export const toWebviewSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('state'),
    /** Where the mailbox is, for the empty state's explanation. */
    mailbox: z.string(),
    trusted: z.boolean(),
  }),
]);
export type ToWebview = z.infer<typeof toWebviewSchema>;
