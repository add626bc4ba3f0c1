// The app side of the webview host (src/ui/webviewHost.ts): the bridge VS Code gives the page,
// every host message parsed with the app's schema where it arrives, and the ready handshake.
import type * as z from 'zod';

type Ready = { type: 'ready' };

export interface HostConnection<ToHost, Saved> {
  post(message: ToHost): void;
  /** UI state VS Code keeps for the page while it is hidden and reloaded (drafts, the step shown). */
  saved(): Saved | undefined;
  save(state: Saved): void;
}

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

/**
 * Connects the app to its host: each host message that fits `schema` goes to `handle` (others are
 * logged and dropped), then the app says `ready`, and the host answers with the whole state and
 * whatever it held until then. Call it once (VS Code hands out its bridge once per page), at the
 * top of the app: messages arrive only after the app's script has run, so `handle` may use
 * anything the app defines further down.
 */
export function connect<ToHost extends { type: string }, ToWebview, Saved = unknown>(
  app: string,
  schema: z.ZodType<ToWebview>,
  handle: (message: ToWebview) => void,
): HostConnection<Exclude<ToHost, Ready>, Saved> {
  const api = acquireVsCodeApi();
  window.addEventListener('message', (event: MessageEvent<unknown>) => {
    const parsed = schema.safeParse(event.data);
    if (!parsed.success) {
      console.warn(`Belay ${app}: ignored a malformed message`, parsed.error.issues);
      return;
    }
    handle(parsed.data);
  });
  api.postMessage({ type: 'ready' } satisfies Ready);
  return {
    post: (message) => api.postMessage(message),
    saved: () => api.getState() as Saved | undefined,
    save: (state) => api.setState(state),
  };
}
