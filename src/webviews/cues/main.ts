// The Cues app (runs in the webview, never imports host code): in the sidebar, every waiting cue
// and the agents; in an editor panel (`scope`), one agent's conversation, wide, with its waiting
// cues. Everything from outside is set with textContent or built from the Markdown tree: nothing is
// parsed as HTML. Updates never rebuild what the human is using: cards, agents and their queue
// boxes are kept by id and only moved when their order changes.
import { connect } from '../shared/connect.ts';
import { el } from '../shared/dom.ts';
import { agentTitle, newAgentItem, renderArchived, updateAgentItem, type AgentItem, type AgentsContext } from './agents.ts';
import { buildCard, deadReason, type Card, type CardContext } from './card.ts';
import { keyNames } from './keys.ts';
import { toWebviewSchema, type ToHost, type ToWebview, type UiCue } from '../../contracts/cuesPage.ts';
import { button, icon, updateTimes } from './render.ts';
import { idleAgents } from './selection.ts';
import './style.css';

interface Saved {
  /** Reply drafts per request id. */
  drafts?: Record<string, string>;
}
const host = connect<ToHost, ToWebview, Saved>('cues', toWebviewSchema, receive);
type State = Extract<ToWebview, { type: 'state' }>;

const keys = keyNames(/Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent));
let latest: State | undefined;
let clockOffset = 0;
const now = () => Date.now() + clockOffset;
const cards = new Map<string, Card>();
const agentItems = new Map<string, AgentItem>();
let archivedBox: HTMLDetailsElement | undefined;
/** The card the human last sent or ended from: once it is gone, the keyboard moves to the next one. */
let acted: string | undefined;
/** A cue to focus as soon as it is drawn ("Open" from a notification can come before the card). */
let focusWanted: string | undefined;

// ---- drafts (UI state only, kept by the webview across hide/show) ----

const drafts: Record<string, string> = { ...(host.saved()?.drafts ?? {}) };
function saveDraft(requestId: string, text: string): void {
  if (text) drafts[requestId] = text;
  else delete drafts[requestId];
  host.save({ drafts });
}

function agentLine(agentId: string): string {
  const agent = latest?.agents.find((a) => a.agentId === agentId);
  const folder = agent?.projectDir ? agent.projectDir.split(/[\\/]/).filter(Boolean).pop() : undefined;
  return [agent?.runtime, folder].filter(Boolean).join(' · ');
}

const cardContext: CardContext = {
  post: (message) => host.post(message),
  now,
  keys,
  get inEditor() {
    return latest?.scope !== undefined;
  },
  agentLine,
  draft: (requestId) => drafts[requestId] ?? '',
  saveDraft,
  acted: (card) => {
    acted = card.cue.requestId;
  },
};
const agentsContext: AgentsContext = { post: (message) => host.post(message), now };

/**
 * The keyboard follows the human's answers: set when an answer (or the lack of a next card) put
 * focus on the empty state, so the next cue to arrive takes the keyboard at once (agents ask one
 * question after another). A click in the page, or focus leaving it, ends that.
 */
let following = false;

/** Puts `nodes` into `parent` in this order, moving only what is out of place (a moved node loses focus). */
function place(parent: HTMLElement, nodes: readonly Node[]): void {
  nodes.forEach((node, i) => {
    if (parent.childNodes[i] !== node) parent.insertBefore(node, parent.childNodes[i] ?? null);
  });
  while (parent.childNodes.length > nodes.length) parent.lastChild!.remove();
}

// ---- the page ----

const root = document.getElementById('root')!;
const banner = el('div', 'banner');
const editorHead = el('header', 'editor-head');
const conversationSection = el('section', 'conversation');
const pendingSection = el('section', 'pending');
pendingSection.setAttribute('aria-label', 'Waiting for you');
const emptySection = el('section', 'empty');
emptySection.setAttribute('aria-live', 'polite');
emptySection.tabIndex = -1;
const agentsSection = el('section', 'agents');
agentsSection.setAttribute('aria-label', 'Agents');

function renderEmpty(state: State): void {
  if (state.scope) {
    emptySection.replaceChildren(el('p', 'lead', `Nothing from ${state.scope.agentId || 'this agent'} is waiting for you.`));
    return;
  }
  const mailbox = el('p', 'detail mailbox');
  mailbox.append('Watching the mailbox in ', el('code', '', state.mailbox), ' (the folder a cueme writes to: its CUE_HOME, else ~/.cue).');
  const parts: Node[] = [
    icon('comment-discussion'),
    el('h2', 'title', 'No agent is waiting for you'),
    el('p', 'lead', 'Agents ask you questions by running "cueme cue". When one does, its question appears here with buttons to answer it.'),
    mailbox,
  ];
  (parts[0] as HTMLElement).classList.add('icon');
  if (state.untrusted) parts.push(el('p', 'warning', `This workspace is not trusted: cues are shown and answered as usual. ${state.untrusted}`));
  const links = el('div', 'links');
  // A way in for someone new: the walkthrough starts the demo's scripted agent, which asks here.
  const start = el('button', 'link', 'New here? Get Started: a demo agent asks you six questions');
  start.type = 'button';
  start.addEventListener('click', () => host.post({ type: 'command', command: 'belay.walkthrough.open' }));
  links.append(start);
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

/**
 * The cards in order, each kept by request id so a draft or a half-filled form survives updates.
 * Returns the card the keyboard moves on to when the focused (or just answered) card went away,
 * 'empty' when no card is left for it, undefined when the keyboard stays where it is.
 */
function renderCards(pending: readonly UiCue[]): Card | 'empty' | undefined {
  const before = [...pendingSection.children].map((node) => (node as HTMLElement).dataset.requestId ?? '');
  const ids = new Set(pending.map((c) => c.requestId));
  const active = document.activeElement;
  /** Where the keyboard was when its card went away: the position it moves on from. */
  let lostAt: number | undefined;
  for (const [id, card] of cards) {
    if (ids.has(id)) continue;
    const hadFocus = active !== null && card.root.contains(active);
    const lostFocus = active === null || active === document.body || hadFocus;
    if (hadFocus || (acted === id && lostFocus)) lostAt = before.indexOf(id);
    if (acted === id) acted = undefined;
    card.dispose();
    card.root.remove();
    cards.delete(id);
    delete drafts[id];
  }
  host.save({ drafts: Object.fromEntries(Object.entries(drafts).filter(([id]) => ids.has(id))) });
  const ordered = pending.map((cue) => {
    let card = cards.get(cue.requestId);
    if (card && (deadReason(cue, now()) ?? '') !== (card.dead ?? '')) {
      card.dispose();
      card.root.remove();
      card = undefined;
    }
    if (!card) {
      card = buildCard(cue, cardContext);
      cards.set(cue.requestId, card);
    }
    card.cue = cue;
    return card;
  });
  place(
    pendingSection,
    ordered.map((c) => c.root),
  );
  const waiting = ordered.filter((c) => !c.dead).length;
  pendingSection.setAttribute('aria-label', `${waiting} waiting for you`);
  if (lostAt === undefined) return undefined;
  // The next card after the one answered (or before it, at the end), an answerable one first.
  const after = before.slice(lostAt + 1).concat(before.slice(0, lostAt).reverse());
  const next = after.map((id) => cards.get(id)).find((c) => c && !c.dead) ?? after.map((id) => cards.get(id)).find(Boolean);
  // A card drawn just now (the agent's next question) comes after every card that was already there.
  return next ?? firstLiveCard() ?? 'empty';
}

/** The first card that can still be answered (else the first card). */
function firstLiveCard(): Card | undefined {
  const shown = [...pendingSection.children].map((node) => cards.get((node as HTMLElement).dataset.requestId ?? ''));
  return shown.find((c) => c && !c.dead) ?? shown.find(Boolean);
}

/** True when nothing in the page has the keyboard (it sits on the page itself). */
function keyboardOnPage(): boolean {
  const active = document.activeElement;
  return active === null || active === document.body || active === emptySection;
}

function renderAgents(state: State): void {
  const shown = state.agents.filter((a) => !a.archived);
  const archived = state.agents.filter((a) => a.archived);
  const ids = new Set(state.agents.map((a) => a.agentId));
  for (const [id, item] of agentItems) {
    if (!ids.has(id)) {
      item.root.remove();
      agentItems.delete(id);
    }
  }
  const nodes: Node[] = [];
  if (shown.length > 0 || archived.length > 0) {
    const titleRow = el('div', 'section-row');
    titleRow.append(el('h2', 'section-title', 'Agents'));
    const idle = idleAgents(shown, now());
    if (idle.length > 0) {
      const archiveIdle = button(`Archive idle (${idle.length})`, { secondary: true, iconName: 'archive', className: 'archive-idle', title: 'Hide the agents with nothing waiting, not heard from for an hour, until they ask again' });
      archiveIdle.addEventListener('click', () => host.post({ type: 'archive', agentIds: idle.map((a) => a.agentId) }));
      titleRow.append(archiveIdle);
    }
    nodes.push(titleRow);
  }
  for (const agent of shown) {
    let item = agentItems.get(agent.agentId);
    if (!item) {
      item = newAgentItem();
      agentItems.set(agent.agentId, item);
    }
    updateAgentItem(item, agent, state.history, agentsContext);
    nodes.push(item.root);
  }
  if (archived.length > 0) {
    archivedBox = renderArchived(archived, archivedBox, agentsContext);
    nodes.push(archivedBox);
  }
  place(agentsSection, nodes);
}

/** The editor panel: one agent's name, facts and queue box, its conversation, then what it waits on. */
function renderEditor(state: State, agentId: string): void {
  const agent = state.agents.find((a) => a.agentId === agentId) ?? { agentId, pendingCount: 0 };
  let item = agentItems.get(agentId);
  if (!item) {
    item = newAgentItem();
    agentItems.set(agentId, item);
  }
  updateAgentItem(item, agent, state.history, agentsContext);
  document.title = `Cues: ${agentId}`;
  if (editorHead.childElementCount === 0) editorHead.append(agentTitle(agentId));
  place(editorHead, [editorHead.firstChild!, item.facts, item.queue]);
  place(conversationSection, [item.history]);
}

function render(state: State): void {
  latest = state;
  clockOffset = state.nowMs - Date.now();
  document.body.classList.toggle('in-editor', state.scope !== undefined);
  banner.replaceChildren();
  banner.hidden = !state.error;
  if (state.error) banner.append(icon('error'), el('span', '', `The cue mailbox cannot be read: ${state.error}`));

  const scope = state.scope;
  const pending = scope ? state.pending.filter((c) => c.agentId === scope.agentId) : state.pending;
  const moveTo = renderCards(pending);
  emptySection.hidden = pending.length > 0;
  if (pending.length === 0) renderEmpty(state);
  if (scope) {
    renderEditor(state, scope.agentId);
    place(root, [banner, editorHead, conversationSection, pendingSection, emptySection]);
  } else {
    renderAgents(state);
    place(root, [banner, pendingSection, emptySection, agentsSection]);
  }
  // Focus moves once the page is laid out: a hidden empty state cannot take it.
  if (moveTo === 'empty') {
    emptySection.focus();
    following = true;
  } else if (moveTo) {
    moveTo.focus();
  } else if (pending.length > 0 && (following || document.hasFocus()) && keyboardOnPage()) {
    // The agent asked its next question after the last answer (or the panel has the keyboard and
    // nothing in it does): the keyboard goes straight to the question.
    following = false;
    firstLiveCard()?.focus();
  }
  applyFocusWanted();
}

/** Focuses the wanted cue: its card while it waits; in the editor, its turn once answered. */
function applyFocusWanted(): void {
  if (!focusWanted) return;
  const card = cards.get(focusWanted);
  if (card) {
    card.focus();
    focusWanted = undefined;
    return;
  }
  const turn = conversationSection.querySelector<HTMLElement>(`li.turn[data-request-id="${CSS.escape(focusWanted)}"]`);
  if (turn) {
    turn.tabIndex = -1;
    turn.scrollIntoView({ block: 'center' });
    turn.focus();
    focusWanted = undefined;
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
      card.renderAttachments();
      return;
    }
    case 'result': {
      const card = cards.get(message.requestId);
      if (!card) return;
      if (message.ok) {
        card.say('Sent.');
        saveDraft(message.requestId, '');
      } else {
        if (acted === message.requestId) acted = undefined;
        card.busy(false);
        card.say(message.message ?? 'Not sent.', true);
      }
      return;
    }
    case 'focus':
      focusWanted = message.requestId;
      applyFocusWanted();
      return;
  }
}

// Focus that comes to the page itself (the view shown with "Focus on Cues View", a notification's
// Open) goes on to the first card, where its keys work. Checked after the event, so a click that
// focuses something of its own keeps it.
window.addEventListener('focus', () => {
  setTimeout(() => {
    if (document.hasFocus() && keyboardOnPage() && document.activeElement !== emptySection) firstLiveCard()?.focus();
  }, 0);
});
const stopFollowing = () => {
  following = false;
};
document.addEventListener('pointerdown', stopFollowing);
window.addEventListener('blur', stopFollowing);

// One clock for every relative time on the page; a card whose time ran out is redrawn as expired.
setInterval(() => {
  updateTimes(root, now());
  if (latest && [...cards.values()].some((card) => (deadReason(card.cue, now()) ?? '') !== (card.dead ?? ''))) render(latest);
}, 1000);
