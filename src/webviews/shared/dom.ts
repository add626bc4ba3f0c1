// What every Belay webview app needs from the page: elements built with text only (agent text
// never becomes HTML). The bridge to the host is connect.ts.

/** An element with an optional class and text; the text is set as text, never parsed. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, className = '', text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** A codicon: a picture only, hidden from screen readers (the words beside it, or its element's label, say it). */
export function codicon(classes: string): HTMLSpanElement {
  const span = el('span', `codicon ${classes}`);
  span.setAttribute('aria-hidden', 'true');
  return span;
}
