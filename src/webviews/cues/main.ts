// The Cues panel app (runs in the webview, never imports host code). Everything from outside is
// set with textContent or built from the Markdown tree (markdown.ts): nothing is parsed as HTML.
import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-checkbox/index.js';
import '@vscode-elements/elements/dist/vscode-collapsible/index.js';
import '@vscode-elements/elements/dist/vscode-radio/index.js';
import '@vscode-elements/elements/dist/vscode-radio-group/index.js';
import '@vscode-elements/elements/dist/vscode-textarea/index.js';
import '@vscode-elements/elements/dist/vscode-textfield/index.js';
import type { VscodeButton } from '@vscode-elements/elements/dist/vscode-button/vscode-button.js';
import type { VscodeCheckbox } from '@vscode-elements/elements/dist/vscode-checkbox/vscode-checkbox.js';
import type { VscodeCollapsible } from '@vscode-elements/elements/dist/vscode-collapsible/vscode-collapsible.js';
import type { VscodeRadio } from '@vscode-elements/elements/dist/vscode-radio/vscode-radio.js';
import type { VscodeTextarea } from '@vscode-elements/elements/dist/vscode-textarea/vscode-textarea.js';
import type { VscodeTextfield } from '@vscode-elements/elements/dist/vscode-textfield/vscode-textfield.js';
import { connect } from '../shared/connect.ts';
import { el } from '../shared/dom.ts';
import { parseMarkdown, type Block, type Inline } from './markdown.ts';
import { toWebviewSchema, type ToHost, type ToWebview, type UiAgent, type UiCue, type UiSelection } from './protocol.ts';
import { agoLabel, choiceClicked, confirmClicked, isEmptySelection, optionIndexForKey, sendSelection, waitingLabel } from './selection.ts';
import './style.css';

interface Saved {
  /** Reply drafts per request id. */
  drafts?: Record<string, string>;
}
const host = connect<ToHost, ToWebview, Saved>('cues', toWebviewSchema, receive);
type State = Extract<ToWebview, { type: 'state' }>;

function icon(name: string): HTMLSpanElement {
  const span = el('span', `codicon codicon-${name}`);
  span.setAttribute('aria-hidden', 'true');
  return span;
}

function button(label: string, options: { secondary?: boolean; iconName?: string; title?: string; className?: string } = {}): VscodeButton {
  const b = document.createElement('vscode-button');
  if (options.secondary) b.secondary = true;
  if (options.className) b.className = options.className;
  if (options.iconName) {
    const i = icon(options.iconName);
    if (label) i.classList.add('before-label');
    b.append(i);
  }
  b.append(label);
  if (options.title) b.title = options.title;
  return b;
}

// ---- Markdown tree -> DOM (text nodes only) ----

function inlineNodes(nodes: readonly Inline[]): Node[] {
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
        s.append(...inlineNodes(n.children));
        return s;
      }
      case 'em': {
        const e = el('em');
        e.append(...inlineNodes(n.children));
        return e;
      }
      case 'link': {
        const a = el('a');
        a.href = n.href; // already checked: http(s) only
        a.title = n.href;
        a.append(...inlineNodes(n.children));
        a.addEventListener('click', (event) => {
          event.preventDefault();
          host.post({ type: 'openLink', url: n.href });
        });
        return a;
      }
    }
  });
}

function markdown(src: string, className: string): HTMLElement {
  const root = el('div', `md ${className}`);
  for (const block of parseMarkdown(src) as Block[]) {
    switch (block.t) {
      case 'p': {
        const p = el('p');
        p.append(...inlineNodes(block.children));
        root.append(p);
        break;
      }
      case 'h': {
        const h = el(`h${block.level + 2}` as 'h3' | 'h4' | 'h5');
        h.append(...inlineNodes(block.children));
        root.append(h);
        break;
      }
      case 'pre': {
        const pre = el('pre');
        pre.append(el('code', '', block.text));
        root.append(pre);
        break;
      }
      case 'list': {
        const list = el(block.ordered ? 'ol' : 'ul');
        for (const item of block.items) {
          const li = el('li');
          li.append(...inlineNodes(item));
          list.append(li);
        }
        root.append(list);
        break;
      }
      case 'quote': {
        const q = el('blockquote');
        q.append(...inlineNodes(block.children));
        root.append(q);
        break;
      }
    }
  }
  return root;
}

// ---- Drafts (UI state only, kept by the webview across hide/show) ----

const drafts: Record<string, string> = { ...(host.saved()?.drafts ?? {}) };
function saveDraft(requestId: string, text: string): void {
  if (text) drafts[requestId] = text;
  else delete drafts[requestId];
  host.save({ drafts });
}

// ---- Cue cards ----

interface Card {
  cue: UiCue;
  root: HTMLElement;
  waiting: HTMLElement;
  reply: VscodeTextarea;
  status: HTMLElement;
  attachments: Array<{ id: string; name: string }>;
  attachList: HTMLElement;
  /** Option buttons / checkboxes / confirm buttons, in key order (1, 2, …). */
  keyed: HTMLElement[];
  send(): void;
  busy(on: boolean): void;
}

let latest: State | undefined;
let clockOffset = 0;
const cards = new Map<string, Card>();
const agentViews = new Map<string, AgentView>();
const now = () => Date.now() + clockOffset;

/**
 * Why nobody would read an answer to this cue any more: expired (the host says when; the page
 * watches the clock) or abandoned (the host saw its waiting process go); undefined while it waits.
 */
function deadReason(cue: UiCue): 'expired' | 'abandoned' | undefined {
  if (cue.state === 'abandoned') return 'abandoned';
  return cue.state === 'expired' || (cue.expiresAtMs !== undefined && now() > cue.expiresAtMs) ? 'expired' : undefined;
}
const isExpiredNow = (cue: UiCue): boolean => deadReason(cue) !== undefined;

/** What a card that can no longer be answered says instead of its answer controls. */
function deadText(cue: UiCue): string {
  if (deadReason(cue) === 'abandoned') {
    const who = cue.waiter ? `The cueme that asked this (pid ${cue.waiter.pid}) ended` : 'The process that asked this ended';
    return `Abandoned: ${who} without an answer (killed, or its terminal closed). An answer would reach nobody. Dismiss marks it ended.`;
  }
  return 'Expired: its cueme stopped waiting, so an answer would reach nobody. Dismiss marks it ended.';
}

function agentLine(agentId: string): string {
  const agent = latest?.agents.find((a) => a.agentId === agentId);
  const folder = agent?.projectDir ? agent.projectDir.split(/[\\/]/).filter(Boolean).pop() : undefined;
  return [agent?.runtime, folder].filter(Boolean).join(' · ');
}

function buildCard(cue: UiCue): Card {
  const expired = isExpiredNow(cue);
  const root = el('article', `cue kind-${cue.payload.kind}${expired ? ` expired ${deadReason(cue)}` : ''}`);
  root.tabIndex = 0;
  root.dataset.requestId = cue.requestId;
  const dead = deadReason(cue);
  if (dead) root.dataset.dead = dead;
  root.dataset.renderedAt = String(performance.timeOrigin + performance.now());
  root.setAttribute('aria-label', `Cue from ${cue.agentId}`);

  const head = el('header', 'cue-head');
  head.append(icon(cue.payload.kind === 'pause' ? 'debug-pause' : 'hubot'), el('span', 'agent', cue.agentId));
  const meta = agentLine(cue.agentId);
  if (meta) head.append(el('span', 'meta', meta));
  const waiting = el('span', 'waiting');
  waiting.setAttribute('role', 'timer');
  head.append(waiting);
  root.append(head);
  root.append(markdown(cue.prompt, 'prompt'));

  const status = el('div', 'status');
  status.setAttribute('role', 'status');
  status.setAttribute('aria-live', 'polite');
  const reply = document.createElement('vscode-textarea');
  reply.className = 'reply-box';
  reply.rows = 2;
  reply.resize = 'vertical';
  reply.label = `Reply to ${cue.agentId}`;
  reply.setAttribute('aria-label', `Reply to ${cue.agentId}`);
  reply.placeholder = 'Reply… (Enter sends, Shift+Enter for a new line, paste an image)';
  reply.value = drafts[cue.requestId] ?? '';
  const attachList = el('ul', 'attachments');
  attachList.setAttribute('aria-label', 'Attachments');

  const card: Card = {
    cue,
    root,
    waiting,
    reply,
    status,
    attachments: [],
    attachList,
    keyed: [],
    send: () => undefined,
    busy: () => undefined,
  };

  const controls: Array<{ disabled: boolean }> = [];
  const sendSelectionNow = (selection: UiSelection) => {
    if (isExpiredNow(card.cue)) return say(card, deadText(card.cue), true);
    if (isEmptySelection(selection, card.attachments.length)) {
      return say(card, 'Nothing to send: pick an option or type a reply. End stops the agent instead.', true);
    }
    card.busy(true);
    say(card, 'Sending…');
    host.post({ type: 'answer', requestId: cue.requestId, selection, attachments: card.attachments.map((a) => a.id) });
  };
  const end = () => {
    card.busy(true);
    say(card, 'Ending…');
    host.post({ type: 'cancel', requestId: cue.requestId });
  };

  const payloadBox = el('div', 'payload');
  const p = cue.payload;
  let collect: () => UiSelection = () => sendSelection(p, { replyText: reply.value });
  if (!expired) {
    switch (p.kind) {
      case 'choice': {
        const group = el('div', p.multiple ? 'options multiple' : 'options');
        group.setAttribute('role', 'group');
        group.setAttribute('aria-label', p.multiple ? 'Options (pick any)' : 'Options');
        if (p.multiple) {
          const boxes: VscodeCheckbox[] = [];
          p.options.forEach((label, i) => {
            const box = document.createElement('vscode-checkbox');
            if (i < 9) box.append(el('span', 'key', String(i + 1)));
            box.append(label);
            box.dataset.key = String(i + 1);
            box.setAttribute('aria-keyshortcuts', String(i + 1));
            boxes.push(box);
            card.keyed.push(box);
            controls.push(box);
            group.append(box);
          });
          collect = () => sendSelection(p, { replyText: reply.value, checked: boxes.filter((b) => b.checked).map((b, _i) => p.options[boxes.indexOf(b)]!) });
        } else {
          p.options.forEach((label, i) => {
            const b = button(label, { secondary: true, className: 'option' });
            if (i < 9) {
              b.prepend(el('span', 'key', String(i + 1)));
              b.setAttribute('aria-keyshortcuts', String(i + 1));
            }
            b.setAttribute('aria-label', label);
            b.addEventListener('click', () => sendSelectionNow(choiceClicked(label, reply.value)));
            card.keyed.push(b);
            controls.push(b);
            group.append(b);
          });
        }
        payloadBox.append(group);
        break;
      }
      case 'confirm':
      case 'pause': {
        if (p.text.trim() && p.text.trim() !== cue.prompt.trim()) payloadBox.append(markdown(p.text, 'confirm-text'));
        const row = el('div', 'confirm-row');
        const yes = button(p.confirmLabel, { iconName: p.kind === 'pause' ? 'debug-continue' : 'check', className: 'confirm' });
        yes.setAttribute('aria-label', p.confirmLabel);
        yes.setAttribute('aria-keyshortcuts', '1');
        yes.addEventListener('click', () => sendSelectionNow(confirmClicked(reply.value)));
        row.append(yes);
        card.keyed.push(yes);
        controls.push(yes);
        if (p.kind === 'confirm') {
          const no = button(p.cancelLabel, { secondary: true, className: 'decline' });
          no.setAttribute('aria-label', p.cancelLabel);
          no.setAttribute('aria-keyshortcuts', '2');
          no.title = 'Ends the cue: the agent is told you did not continue';
          no.addEventListener('click', end);
          row.append(no);
          card.keyed.push(no);
          controls.push(no);
        }
        payloadBox.append(row);
        break;
      }
      case 'form': {
        const form = el('div', 'form');
        const readers: Array<() => [string, string[]]> = [];
        p.fields.forEach((field, i) => {
          const row = el('div', 'field');
          const id = `f-${cue.requestId}-${i}`;
          const label = el('label', 'field-label', field.label);
          label.htmlFor = id;
          label.id = `${id}-label`;
          row.append(label);
          if (field.options.length === 0) {
            const input = document.createElement('vscode-textfield');
            input.id = id;
            input.label = field.label;
            input.setAttribute('aria-label', field.label);
            controls.push(input);
            readers.push(() => [field.label, [input.value]]);
            row.append(input);
          } else if (field.multiple) {
            const group = el('div', 'field-options');
            group.setAttribute('role', 'group');
            group.setAttribute('aria-labelledby', label.id);
            const boxes = field.options.map((option) => {
              const box = document.createElement('vscode-checkbox');
              box.append(option);
              box.value = option;
              controls.push(box);
              group.append(box);
              return box;
            });
            readers.push(() => [field.label, boxes.filter((b) => b.checked).map((b) => b.value)]);
            row.append(group);
          } else {
            const group = document.createElement('vscode-radio-group');
            group.setAttribute('aria-labelledby', label.id);
            const radios = field.options.map((option) => {
              const radio = document.createElement('vscode-radio');
              radio.name = id;
              radio.value = option;
              radio.append(option);
              controls.push(radio);
              group.append(radio);
              return radio as VscodeRadio;
            });
            readers.push(() => [field.label, radios.filter((r) => r.checked).map((r) => r.value)]);
            row.append(group);
          }
          form.append(row);
        });
        collect = () => sendSelection(p, { replyText: reply.value, fields: new Map(readers.map((r) => r())) });
        payloadBox.append(form);
        break;
      }
      case 'invalid':
        payloadBox.append(el('p', 'warning', `The agent's payload could not be used (${p.warning}); answer in words.`));
        break;
      case 'none':
        break;
    }
  } else {
    payloadBox.append(el('p', 'warning', deadText(cue)));
  }
  root.append(payloadBox);

  if (!expired) {
    root.append(reply, attachList);
    reply.addEventListener('input', () => saveDraft(cue.requestId, reply.value));
    reply.addEventListener('keydown', (event: KeyboardEvent) => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        event.stopPropagation();
        card.send();
      }
    });
    reply.addEventListener('paste', (event: ClipboardEvent) => {
      const items = [...(event.clipboardData?.items ?? [])].filter((item) => item.kind === 'file' && item.type.startsWith('image/'));
      if (items.length === 0) return;
      event.preventDefault();
      for (const item of items) {
        const file = item.getAsFile();
        if (!file) continue;
        const reader = new FileReader();
        reader.onload = () => {
          const url = String(reader.result);
          host.post({ type: 'pasteImage', requestId: cue.requestId, mime: file.type, dataBase64: url.slice(url.indexOf(',') + 1) });
        };
        reader.readAsDataURL(file);
      }
    });
    controls.push(reply);
  }

  const actions = el('div', 'actions');
  if (!expired) {
    const attach = button('', { secondary: true, iconName: 'attach', title: 'Attach files', className: 'attach' });
    attach.setAttribute('aria-label', 'Attach files');
    attach.addEventListener('click', () => host.post({ type: 'pickFiles', requestId: cue.requestId }));
    controls.push(attach);
    actions.append(attach);
    const showSend = !(p.kind === 'choice' && !p.multiple) && p.kind !== 'pause' && p.kind !== 'confirm';
    const send = button(showSend ? 'Send' : 'Send reply', { iconName: 'send', secondary: !showSend, className: 'send' });
    send.setAttribute('aria-label', showSend ? 'Send' : 'Send reply');
    send.addEventListener('click', () => card.send());
    controls.push(send);
    actions.append(send);
  }
  const endButton = button(expired ? 'Dismiss' : 'End', { secondary: true, iconName: 'debug-stop', className: 'end', title: 'End this cue without an answer: the agent is told to pause' });
  endButton.setAttribute('aria-label', expired ? 'Dismiss' : 'End');
  endButton.addEventListener('click', end);
  controls.push(endButton);
  actions.append(endButton);
  root.append(actions, status);

  card.send = () => sendSelectionNow(collect());
  card.busy = (on) => {
    for (const c of controls) c.disabled = on;
    root.classList.toggle('busy', on);
  };

  root.addEventListener('keydown', (event: KeyboardEvent) => {
    const target = event.target as HTMLElement;
    const typing = target.closest('vscode-textarea, vscode-textfield') !== null;
    if (event.key === 'Escape') {
      if (!expired) {
        event.preventDefault();
        reply.focus();
      }
      return;
    }
    if (typing || event.altKey || event.ctrlKey || event.metaKey) return;
    const index = optionIndexForKey(event.key);
    const keyed = index === undefined ? undefined : card.keyed[index];
    if (keyed) {
      event.preventDefault();
      if (keyed.tagName === 'VSCODE-CHECKBOX') (keyed as VscodeCheckbox).checked = !(keyed as VscodeCheckbox).checked;
      else keyed.click();
      return;
    }
    if (event.key === 'Enter' && (target === root || p.kind !== 'choice' || p.multiple)) {
      // Enter on the card (or a checkbox/radio) sends; on a focused button the button itself acts.
      if (target.tagName === 'VSCODE-BUTTON') return;
      event.preventDefault();
      if (p.kind === 'pause') card.keyed[0]?.click();
      else card.send();
    }
  });
  updateWaiting(card);
  return card;
}

function say(card: Card, message: string, isError = false): void {
  card.status.textContent = message;
  card.status.classList.toggle('error', isError);
}

function renderAttachments(card: Card): void {
  card.attachList.replaceChildren(
    ...card.attachments.map((file) => {
      const li = el('li', 'attachment');
      li.append(icon('file'), el('span', 'name', file.name));
      const remove = el('button', 'remove');
      remove.type = 'button';
      remove.title = `Remove ${file.name}`;
      remove.setAttribute('aria-label', `Remove ${file.name}`);
      remove.append(icon('close'));
      remove.addEventListener('click', () => {
        card.attachments = card.attachments.filter((a) => a.id !== file.id);
        renderAttachments(card);
      });
      li.append(remove);
      return li;
    }),
  );
}

function updateWaiting(card: Card): void {
  if (isExpiredNow(card.cue)) {
    card.waiting.textContent = deadReason(card.cue) ?? 'expired';
    card.waiting.classList.add('expired');
  } else {
    card.waiting.textContent = waitingLabel(card.cue.createdAtMs, now());
  }
}

// ---- Agents and their history ----

interface AgentView {
  root: VscodeCollapsible;
  meta: HTMLElement;
  queueBox: HTMLElement;
  history: HTMLElement;
  queuedShown: string | undefined;
}

const STATE_LABEL: Record<string, string> = {
  answered: 'Answered',
  cancelled: 'Ended',
  timeout: 'Timed out: nobody answered before its cueme stopped waiting',
  closed: 'Closed elsewhere',
  expired: 'Expired',
  abandoned: 'Abandoned: its cueme ended without an answer',
  pending: 'Waiting',
};

function renderQueueBox(view: AgentView, agent: UiAgent): void {
  if (view.queuedShown === (agent.queued ?? '') && view.queueBox.childElementCount > 0) return;
  view.queuedShown = agent.queued ?? '';
  if (agent.queued) {
    const queued = el('div', 'queued');
    queued.append(icon('clock'), el('span', 'label', 'Queued for its next cue: '), el('span', 'text', agent.queued));
    const remove = button('Remove', { secondary: true, className: 'unqueue' });
    remove.addEventListener('click', () => host.post({ type: 'queue', agentId: agent.agentId, text: '' }));
    queued.append(remove);
    view.queueBox.replaceChildren(queued);
    return;
  }
  const input = document.createElement('vscode-textfield') as VscodeTextfield;
  input.className = 'queue-input';
  input.placeholder = 'Queue a reply for its next cue…';
  input.setAttribute('aria-label', `Queue a reply for ${agent.agentId}'s next cue`);
  const queue = button('Queue', { secondary: true, iconName: 'clock', className: 'queue' });
  const submit = () => {
    if (input.value.trim()) host.post({ type: 'queue', agentId: agent.agentId, text: input.value });
  };
  queue.addEventListener('click', submit);
  input.addEventListener('keydown', (event: KeyboardEvent) => {
    if (event.key === 'Enter') {
      event.preventDefault();
      submit();
    }
  });
  const row = el('div', 'queue-row');
  row.append(input, queue);
  view.queueBox.replaceChildren(row);
}

function renderAgent(agent: UiAgent, history: readonly UiCue[]): AgentView {
  let view = agentViews.get(agent.agentId);
  if (!view) {
    const root = document.createElement('vscode-collapsible') as VscodeCollapsible;
    root.className = 'agent';
    root.dataset.agentId = agent.agentId;
    const meta = el('div', 'agent-meta');
    const queueBox = el('div', 'queue-box');
    const list = el('ol', 'history');
    list.setAttribute('aria-label', `Conversation with ${agent.agentId}`);
    root.append(meta, queueBox, list);
    view = { root, meta, queueBox, history: list, queuedShown: undefined };
    agentViews.set(agent.agentId, view);
  }
  view.root.heading = agent.agentId;
  view.root.description = [agent.runtime, agent.pendingCount > 0 ? `${agent.pendingCount} waiting` : '', agent.queued ? 'reply queued' : ''].filter(Boolean).join(' · ');
  const facts: Array<[string, string | undefined]> = [
    ['Runtime', agent.runtime],
    ['Project', agent.projectDir],
    ['Terminal', agent.terminal],
    ['Last activity', agoLabel(agent.lastActivityMs, now()) || undefined],
  ];
  const dl = el('dl', 'facts');
  for (const [name, value] of facts) {
    if (!value) continue;
    dl.append(el('dt', '', name), el('dd', '', value));
  }
  view.meta.replaceChildren(dl);
  renderQueueBox(view, agent);
  const turns = history.filter((c) => c.agentId === agent.agentId);
  view.history.replaceChildren(
    ...(turns.length === 0
      ? [el('li', 'none', 'No answered cues yet.')]
      : turns.map((cue) => {
          const li = el('li', `turn state-${cue.state}`);
          li.append(markdown(cue.prompt, 'asked'));
          const answer = el('div', 'answer');
          if (cue.state === 'answered' && cue.response) {
            answer.append(icon('reply'));
            const text = cue.response.text.trim() || (cue.payload.kind === 'pause' ? 'Continued' : '(empty answer)');
            answer.append(el('span', 'text', text));
            for (const f of cue.response.files) answer.append(el('span', 'file', f));
          } else {
            answer.append(icon(cue.state === 'timeout' ? 'watch' : 'debug-stop'), el('span', 'text', STATE_LABEL[cue.state] ?? cue.state));
          }
          const when = cue.response?.atMs ?? cue.createdAtMs;
          if (when !== undefined) answer.append(el('time', 'when', agoLabel(when, now())));
          li.append(answer);
          return li;
        })),
  );
  return view;
}

// ---- The page ----

const root = document.getElementById('root')!;
const banner = el('div', 'banner');
const pendingSection = el('section', 'pending');
pendingSection.setAttribute('aria-label', 'Waiting for you');
const emptySection = el('section', 'empty');
emptySection.setAttribute('aria-live', 'polite');
const agentsSection = el('section', 'agents');
agentsSection.setAttribute('aria-label', 'Agents');
root.replaceChildren(banner, pendingSection, emptySection, agentsSection);

function renderEmpty(state: State): void {
  const mailbox = el('p', 'detail');
  mailbox.append('Mailbox: ', el('code', '', state.mailbox));
  const parts: Node[] = [
    icon('comment-discussion'),
    el('h2', 'title', 'No agent is waiting for you'),
    el('p', 'lead', 'Agents ask you questions by running "cueme cue". When one does, its question appears here with buttons to answer it.'),
    mailbox,
  ];
  (parts[0] as HTMLElement).classList.add('icon');
  if (state.untrusted) parts.push(el('p', 'warning', `This workspace is not trusted: cues are shown and answered as usual. ${state.untrusted}`));
  const links = el('div', 'links');
  const copy = el('button', 'link', 'Copy HAP instructions for your agent');
  copy.type = 'button';
  copy.addEventListener('click', () => host.post({ type: 'command', command: 'belay.cues.copyInstructions' }));
  const log = el('button', 'link', 'Open Belay Log');
  log.type = 'button';
  log.addEventListener('click', () => host.post({ type: 'command', command: 'belay.showLog' }));
  links.append(copy, log);
  parts.push(links);
  emptySection.replaceChildren(...parts);
}

function render(state: State): void {
  latest = state;
  clockOffset = state.nowMs - Date.now();
  banner.replaceChildren();
  banner.hidden = !state.error;
  if (state.error) banner.append(icon('error'), el('span', '', `The cue mailbox cannot be read: ${state.error}`));

  // Pending cards are kept by request id, so a draft or a half-filled form survives updates.
  const ids = new Set(state.pending.map((c) => c.requestId));
  for (const [id, card] of cards) {
    if (!ids.has(id)) {
      card.root.remove();
      cards.delete(id);
      delete drafts[id];
    }
  }
  host.save({ drafts: Object.fromEntries(Object.entries(drafts).filter(([id]) => ids.has(id))) });
  let previous: HTMLElement | undefined;
  for (const cue of state.pending) {
    let card = cards.get(cue.requestId);
    if (card && (deadReason(cue) ?? '') !== (card.root.dataset.dead ?? '')) {
      card.root.remove();
      cards.delete(cue.requestId);
      card = undefined;
    }
    if (!card) {
      card = buildCard(cue);
      cards.set(cue.requestId, card);
    }
    card.cue = cue;
    updateWaiting(card);
    if (previous) previous.after(card.root);
    else pendingSection.prepend(card.root);
    previous = card.root;
  }
  const waiting = state.pending.filter((c) => !isExpiredNow(c)).length;
  pendingSection.setAttribute('aria-label', `${waiting} waiting for you`);
  emptySection.hidden = state.pending.length > 0;
  if (state.pending.length === 0) renderEmpty(state);

  const agentIds = new Set(state.agents.map((a) => a.agentId));
  for (const [id, view] of agentViews) {
    if (!agentIds.has(id)) {
      view.root.remove();
      agentViews.delete(id);
    }
  }
  if (state.agents.length === 0) {
    agentsSection.replaceChildren();
  } else {
    const title = el('h2', 'section-title', 'Agents');
    agentsSection.replaceChildren(title, ...state.agents.map((a) => renderAgent(a, state.history).root));
  }
}

function receive(message: ToWebview): void {
  switch (message.type) {
    case 'state':
      render(message);
      return;
    case 'attachments': {
      const card = cards.get(message.requestId);
      if (!card) return;
      card.attachments.push(...message.files);
      renderAttachments(card);
      return;
    }
    case 'result': {
      const card = cards.get(message.requestId);
      if (!card) return;
      if (message.ok) {
        say(card, 'Sent.');
        saveDraft(message.requestId, '');
      } else {
        card.busy(false);
        say(card, message.message ?? 'Not sent.', true);
      }
      return;
    }
    case 'focus': {
      const card = cards.get(message.requestId);
      card?.root.scrollIntoView({ block: 'nearest' });
      card?.root.focus();
      return;
    }
  }
}

setInterval(() => {
  for (const card of cards.values()) {
    const wasExpired = card.root.classList.contains('expired');
    updateWaiting(card);
    if (!wasExpired && isExpiredNow(card.cue) && latest) render(latest);
  }
}, 1000);
