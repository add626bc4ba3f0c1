// The small pieces every part of the Cues app draws with: icons, buttons with their key hints,
// relative times kept current by one clock, and the Markdown tree (markdown.ts) built node by node.
// Text from agents only ever becomes text nodes: nothing here parses HTML.
import '@vscode-elements/elements/dist/vscode-button/index.js';
import type { VscodeButton } from '@vscode-elements/elements/dist/vscode-button/vscode-button.js';
import { el } from '../shared/dom.ts';
import { parseMarkdown, type Block, type Inline } from './markdown.ts';
import { agoLabel, waitingLabel } from './selection.ts';

export function icon(name: string): HTMLSpanElement {
  const span = el('span', `codicon codicon-${name}`);
  span.setAttribute('aria-hidden', 'true');
  return span;
}

/** A key hint as shown on a button (the button's aria-keyshortcuts says it to screen readers). */
export function kbd(text: string): HTMLElement {
  const k = el('kbd', 'key', text);
  k.setAttribute('aria-hidden', 'true');
  return k;
}

export interface ButtonOptions {
  secondary?: boolean;
  iconName?: string;
  title?: string;
  className?: string;
  /** The key hint shown after the label. */
  key?: string;
  /** aria-keyshortcuts, when the hint is not already in that form. */
  ariaKeys?: string;
}

/** A button whose accessible name is its label alone (the key hint is announced as its shortcut). */
export function button(label: string, options: ButtonOptions = {}): VscodeButton {
  const b = document.createElement('vscode-button');
  if (options.secondary) b.secondary = true;
  if (options.className) b.className = options.className;
  if (options.iconName) {
    const i = icon(options.iconName);
    if (label) i.classList.add('before-label');
    b.append(i);
  }
  b.append(label);
  if (label) b.setAttribute('aria-label', label);
  if (options.title) b.title = options.title;
  if (options.key) {
    b.append(kbd(options.key));
    b.setAttribute('aria-keyshortcuts', options.ariaKeys ?? options.key);
  }
  return b;
}

// ---- relative times: one clock for the whole page, so no two labels disagree ----

/** "waiting 9s" or "9s ago", kept current by `updateTimes` (every label from the same clock). */
export function timeLabel(since: number, form: 'waiting' | 'ago', now: number, className = ''): HTMLTimeElement {
  const t = el('time', className);
  t.dateTime = new Date(since).toISOString();
  t.title = new Date(since).toLocaleString();
  t.dataset.since = String(since);
  t.dataset.form = form;
  t.textContent = form === 'waiting' ? waitingLabel(since, now) : agoLabel(since, now);
  return t;
}

export function updateTimes(root: ParentNode, now: number): void {
  for (const t of root.querySelectorAll<HTMLTimeElement>('time[data-since]')) {
    const since = Number(t.dataset.since);
    const text = t.dataset.form === 'waiting' ? waitingLabel(since, now) : agoLabel(since, now);
    if (t.textContent !== text) t.textContent = text;
  }
}

// ---- Markdown tree -> DOM (text nodes only) ----

function inlineNodes(nodes: readonly Inline[], openLink: (href: string) => void): Node[] {
  return nodes.map((n): Node => {
    switch (n.t) {
      case 'text':
        return document.createTextNode(n.text);
      case 'br':
        return el('br');
      case 'code':
        return el('code', '', n.text);
      case 'strong': {
        const s = el('strong');
        s.append(...inlineNodes(n.children, openLink));
        return s;
      }
      case 'em': {
        const e = el('em');
        e.append(...inlineNodes(n.children, openLink));
        return e;
      }
      case 'link': {
        const a = el('a');
        a.href = n.href; // already checked: http(s) only
        a.title = n.href;
        a.append(...inlineNodes(n.children, openLink));
        a.addEventListener('click', (event) => {
          event.preventDefault();
          openLink(n.href);
        });
        return a;
      }
    }
  });
}

function table(block: Extract<Block, { t: 'table' }>, openLink: (href: string) => void): HTMLElement {
  const cell = (tag: 'th' | 'td', content: readonly Inline[], column: number) => {
    const c = el(tag);
    const align = block.align[column];
    if (align) c.style.textAlign = align;
    c.append(...inlineNodes(content, openLink));
    return c;
  };
  const head = el('thead');
  const headRow = el('tr');
  block.header.forEach((content, i) => {
    const th = cell('th', content, i);
    th.scope = 'col';
    headRow.append(th);
  });
  head.append(headRow);
  const body = el('tbody');
  for (const row of block.rows) {
    const tr = el('tr');
    row.forEach((content, i) => tr.append(cell('td', content, i)));
    body.append(tr);
  }
  const t = el('table');
  t.append(head, body);
  // Wide tables scroll sideways in their own box instead of widening the card.
  const wrap = el('div', 'table-wrap');
  wrap.tabIndex = 0;
  wrap.setAttribute('role', 'region');
  wrap.setAttribute('aria-label', 'Table');
  wrap.append(t);
  return wrap;
}

/** An agent's Markdown as elements; links open through the host (`openLink`), http(s) only. */
export function markdown(src: string, className: string, openLink: (href: string) => void): HTMLElement {
  const root = el('div', `md ${className}`);
  for (const block of parseMarkdown(src)) {
    switch (block.t) {
      case 'p': {
        const p = el('p');
        p.append(...inlineNodes(block.children, openLink));
        root.append(p);
        break;
      }
      case 'h': {
        const h = el(`h${block.level + 2}` as 'h3' | 'h4' | 'h5');
        h.append(...inlineNodes(block.children, openLink));
        root.append(h);
        break;
      }
      case 'pre': {
        const pre = el('pre');
        pre.tabIndex = 0;
        pre.append(el('code', '', block.text));
        root.append(pre);
        break;
      }
      case 'list': {
        const list = el(block.ordered ? 'ol' : 'ul');
        for (const item of block.items) {
          const li = el('li');
          li.append(...inlineNodes(item, openLink));
          list.append(li);
        }
        root.append(list);
        break;
      }
      case 'quote': {
        const q = el('blockquote');
        q.append(...inlineNodes(block.children, openLink));
        root.append(q);
        break;
      }
      case 'table':
        root.append(table(block, openLink));
        break;
    }
  }
  return root;
}
