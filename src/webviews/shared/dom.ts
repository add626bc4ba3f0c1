// What every Belay webview app needs from the page: the host bridge, elements built with text only
// (agent text never becomes HTML), and host messages parsed with the app's schema on arrival.
import type * as z from 'zod';

export interface VsCodeApi<ToHost, Persisted> {
  postMessage(message: ToHost): void;
  getState(): Persisted | undefined;
  setState(state: Persisted): void;
}
declare function acquireVsCodeApi(): unknown;

/** The webview's bridge to its host (VS Code allows acquiring it once per page). */
export function hostApi<ToHost, Persisted = unknown>(): VsCodeApi<ToHost, Persisted> {
  return acquireVsCodeApi() as VsCodeApi<ToHost, Persisted>;
}

/** An element with an optional class and text; the text is set as text, never parsed. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, className = '', text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Calls `handle` with each host message that fits `schema`; others are logged and dropped. */
export function onHostMessage<T>(app: string, schema: z.ZodType<T>, handle: (message: T) => void): void {
  window.addEventListener('message', (event: MessageEvent<unknown>) => {
    const parsed = schema.safeParse(event.data);
    if (!parsed.success) {
      console.warn(`Belay ${app}: ignored a malformed message`, parsed.error.issues);
      return;
    }
    handle(parsed.data);
  });
}
