// The agents in the sidebar (each a disclosure with its facts, its queued reply and its
// conversation), the archived ones apart, and the conversation as the editor panel shows it.
import '@vscode-elements/elements/dist/vscode-textfield/index.js';
import type { VscodeTextfield } from '@vscode-elements/elements/dist/vscode-textfield/vscode-textfield.js';
import { el } from '../shared/dom.ts';
import type { ToHost, UiAgent, UiCue } from '../../contracts/cuesPage.ts';
import { button, icon, markdown, timeLabel } from './render.ts';

type Post = (message: Exclude<ToHost, { type: 'ready' }>) => void;

export interface AgentsContext {
  post: Post;
  now(): number;
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

/** The conversation with one agent, oldest first: each question and how it was answered. */
export function conversation(agentId: string, history: readonly UiCue[], ctx: AgentsContext): HTMLOListElement {
  const list = el('ol', 'history');
  list.setAttribute('aria-label', `Conversation with ${agentId || 'the agent'}`);
  const turns = history.filter((c) => c.agentId === agentId);
  if (turns.length === 0) {
    list.append(el('li', 'none', 'No answered cues yet.'));
    return list;
  }
  for (const cue of turns) {
    const li = el('li', `turn state-${cue.state}`);
    li.dataset.requestId = cue.requestId;
    li.append(markdown(cue.prompt, 'asked', (url) => ctx.post({ type: 'openLink', url })));
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
    if (when !== undefined) answer.append(timeLabel(when, 'ago', ctx.now(), 'when'));
    li.append(answer);
    list.append(li);
  }
  return list;
}

/** The reply box that queues a text for the agent's next cue, or the reply already queued. */
export function queueBox(agent: UiAgent, ctx: AgentsContext): HTMLElement {
  const box = el('div', 'queue-box');
  if (agent.queued) {
    const queued = el('div', 'queued');
    queued.append(icon('clock'), el('span', 'label', 'Queued for its next cue: '), el('span', 'text', agent.queued));
    const remove = button('Remove', { secondary: true, className: 'unqueue' });
    remove.addEventListener('click', () => ctx.post({ type: 'queue', agentId: agent.agentId, text: '' }));
    queued.append(remove);
    box.append(queued);
    return box;
  }
  const input = document.createElement('vscode-textfield') as VscodeTextfield;
  input.className = 'queue-input';
  input.placeholder = 'Queue a reply for its next cue…';
  input.setAttribute('aria-label', `Queue a reply for ${agent.agentId}'s next cue`);
  const queue = button('Queue', { secondary: true, iconName: 'clock', className: 'queue', key: 'Enter' });
  const submit = () => {
    if (input.value.trim()) ctx.post({ type: 'queue', agentId: agent.agentId, text: input.value });
  };
  queue.addEventListener('click', submit);
  input.addEventListener('keydown', (event: KeyboardEvent) => {
    if (event.key === 'Enter' && !event.isComposing) {
      event.preventDefault();
      submit();
    }
  });
  const row = el('div', 'queue-row');
  row.append(input, queue);
  box.append(row);
  return box;
}

function facts(agent: UiAgent, ctx: AgentsContext): HTMLElement {
  const dl = el('dl', 'facts');
  const add = (name: string, value: string | Node | undefined) => {
    if (!value) return;
    const dd = el('dd');
    dd.append(value);
    dl.append(el('dt', '', name), dd);
  };
  add('Runtime', agent.runtime);
  add('Project', agent.projectDir);
  add('Terminal', agent.terminal);
  add('Last activity', agent.lastActivityMs === undefined ? undefined : timeLabel(agent.lastActivityMs, 'ago', ctx.now()));
  return dl;
}

/** What the summary line says after the name. */
function describe(agent: UiAgent): string {
  return [agent.runtime, agent.pendingCount > 0 ? `${agent.pendingCount} waiting` : '', agent.queued ? 'reply queued' : ''].filter(Boolean).join(' · ');
}

/**
 * One agent's parts, kept across renders: an agent opened by the human stays open, a reply half
 * typed in its queue box stays. The sidebar puts them in a disclosure; the editor panel lays them out.
 */
export interface AgentItem {
  root: HTMLDetailsElement;
  summary: HTMLElement;
  facts: HTMLElement;
  actions: HTMLElement;
  queue: HTMLElement;
  history: HTMLElement;
  /** The queued reply the queue box shows ('' for the input). */
  queuedShown: string | undefined;
  /** What the conversation shows, to redraw it only when that changes. */
  historyShown: string;
}

export function newAgentItem(): AgentItem {
  const item: AgentItem = {
    root: el('details', 'agent'),
    summary: el('summary'),
    facts: el('div', 'facts-box'),
    actions: el('div', 'agent-actions'),
    queue: el('div', 'queue-slot'),
    history: el('div', 'history-box'),
    queuedShown: undefined,
    historyShown: '',
  };
  const body = el('div', 'agent-body');
  body.append(item.facts, item.actions, item.queue, item.history);
  item.root.append(item.summary, body);
  return item;
}

/** Brings an agent's parts up to date; the name is shown as the agent wrote it. */
export function updateAgentItem(item: AgentItem, agent: UiAgent, history: readonly UiCue[], ctx: AgentsContext): void {
  item.root.dataset.agentId = agent.agentId;
  const parts: Node[] = [icon(agent.pendingCount > 0 ? 'bell-dot' : 'hubot'), el('span', 'name', agent.agentId || '(no agent id)')];
  const description = describe(agent);
  if (description) parts.push(el('span', 'description', description));
  if (agent.lastActivityMs !== undefined) parts.push(timeLabel(agent.lastActivityMs, 'ago', ctx.now(), 'last'));
  item.summary.replaceChildren(...parts);
  item.facts.replaceChildren(facts(agent, ctx));
  const open = button('Open in Editor', { secondary: true, iconName: 'link-external', className: 'open-editor', title: 'Read the whole conversation in an editor tab' });
  open.addEventListener('click', () => ctx.post({ type: 'openInEditor', agentId: agent.agentId }));
  const buttons: Node[] = [open];
  if (agent.pendingCount === 0) {
    const archive = button('Archive', { secondary: true, iconName: 'archive', className: 'archive', title: 'Hide this agent until it asks again' });
    archive.addEventListener('click', () => ctx.post({ type: 'archive', agentIds: [agent.agentId] }));
    buttons.push(archive);
  }
  item.actions.replaceChildren(...buttons);
  if ((agent.queued ?? '') !== item.queuedShown) {
    item.queue.replaceChildren(queueBox(agent, ctx));
    item.queuedShown = agent.queued ?? '';
  }
  const turns = history.filter((c) => c.agentId === agent.agentId);
  const shown = JSON.stringify(turns.map((c) => [c.requestId, c.state, c.response?.text, c.response?.files]));
  if (shown !== item.historyShown) {
    item.history.replaceChildren(conversation(agent.agentId, turns, ctx));
    item.historyShown = shown;
  }
}

/** The archived agents, folded, each with Restore. */
export function renderArchived(agents: readonly UiAgent[], existing: HTMLDetailsElement | undefined, ctx: AgentsContext): HTMLDetailsElement {
  const root = existing ?? el('details', 'archived');
  const summary = el('summary');
  summary.append(icon('archive'), el('span', 'name', `Archived agents (${agents.length})`));
  const list = el('ul', 'archived-list');
  for (const agent of agents) {
    const li = el('li');
    li.dataset.agentId = agent.agentId;
    li.append(el('span', 'name', agent.agentId || '(no agent id)'));
    if (agent.lastActivityMs !== undefined) li.append(timeLabel(agent.lastActivityMs, 'ago', ctx.now(), 'last'));
    const restore = button('Restore', { secondary: true, className: 'restore' });
    restore.addEventListener('click', () => ctx.post({ type: 'unarchive', agentIds: [agent.agentId] }));
    li.append(restore);
    list.append(li);
  }
  root.replaceChildren(summary, list);
  return root;
}

/** The editor panel's title for one agent: its name as written. */
export function agentTitle(agentId: string): HTMLElement {
  const title = el('h1', 'editor-title');
  title.append(icon('hubot'), el('span', 'name', agentId || '(no agent id)'));
  return title;
}
