// What the Cues panel shows and what it may do, computed from mailbox entries. Pure (no vscode
// import) so the rules are unit-tested in plain Node: test/unit/cues/panel*.test.ts.
import * as path from 'node:path';
import { CUE_TIMEOUT_MS } from './core/hap.ts';
import { cancelLabel, confirmLabel, type PayloadView } from './core/payload.ts';
import type { AgentSummary, CueEntry } from './core/store.ts';
import type { CueState, UiAgent, UiCue, UiPayload } from '../webviews/cues/protocol.ts';

/** A pending cue older than this is no longer read by anyone: the CLI gave up (pauses never expire). */
export const EXPIRE_AFTER_MS = CUE_TIMEOUT_MS;
/** A cancelled response written this long after its request is the CLI's own timeout, not the human's End. */
const TIMEOUT_SLACK_MS = 2_000;
/** How many answered and ended cues the panel shows, newest kept. */
export const HISTORY_LIMIT = 200;

export function toUiPayload(view: PayloadView): UiPayload {
  switch (view.kind) {
    case 'none':
      return { kind: 'none' };
    case 'invalid':
      return { kind: 'invalid', warning: view.warning };
    case 'choice':
      return { kind: 'choice', options: [...view.payload.options], multiple: view.payload.allow_multiple === true };
    case 'confirm':
      return { kind: 'confirm', text: view.payload.text ?? '', confirmLabel: confirmLabel(view.payload), cancelLabel: cancelLabel(view.payload) };
    case 'pause':
      return { kind: 'pause', text: view.payload.text ?? '', confirmLabel: confirmLabel(view.payload) };
    case 'form':
      return {
        kind: 'form',
        fields: view.payload.fields.map((f) => ({ label: f.label, options: [...(f.options ?? [])], multiple: f.allow_multiple === true })),
      };
  }
}

/** True for a pending cue that its `cueme cue` no longer waits for. */
export function isExpired(entry: Pick<CueEntry, 'state' | 'payload' | 'createdAtMs'>, nowMs: number): boolean {
  if (entry.state !== 'pending' || entry.payload.kind === 'pause' || entry.createdAtMs === undefined) return false;
  return nowMs - entry.createdAtMs > EXPIRE_AFTER_MS;
}

export function uiState(entry: CueEntry, nowMs: number): CueState {
  if (entry.state === 'pending') return isExpired(entry, nowMs) ? 'expired' : 'pending';
  if (entry.state === 'cancelled') {
    const answeredAt = entry.response?.createdAtMs;
    const timedOut =
      entry.payload.kind !== 'pause' && answeredAt !== undefined && entry.createdAtMs !== undefined && answeredAt - entry.createdAtMs >= EXPIRE_AFTER_MS - TIMEOUT_SLACK_MS;
    return timedOut ? 'timeout' : 'cancelled';
  }
  return entry.state;
}

export function toUiCue(entry: CueEntry, nowMs: number): UiCue {
  const cue: UiCue = {
    requestId: entry.requestId,
    agentId: entry.agentId,
    prompt: entry.prompt,
    payload: toUiPayload(entry.payload),
    state: uiState(entry, nowMs),
  };
  if (entry.createdAtMs !== undefined) cue.createdAtMs = entry.createdAtMs;
  if (entry.response) {
    cue.response = { text: entry.response.text, files: entry.response.files.map((f) => path.basename(f.file)) };
    if (entry.response.createdAtMs !== undefined) cue.response.atMs = entry.response.createdAtMs;
  }
  return cue;
}

/** Why a request cannot be answered from the panel now, or undefined when it can. */
export function whyNotAnswerable(entry: CueEntry | undefined, nowMs: number): string | undefined {
  if (!entry) return 'this cue is no longer in the mailbox';
  if (entry.state === 'answered') return 'this cue was already answered';
  if (entry.state === 'cancelled') return 'this cue was already ended';
  if (entry.state === 'closed') return `this cue was closed elsewhere (status ${entry.status})`;
  if (isExpired(entry, nowMs)) return 'this cue expired: its cueme stopped waiting after 600 s, so nobody would read the answer';
  return undefined;
}

/** A reply waiting for an agent's next cue: delivered to the first cue written after it was queued. */
export interface QueuedReply {
  text: string;
  /** The mailbox's highest request row id when the reply was queued; only later cues get it. */
  afterId: number;
}

/** Which pending cues receive a queued reply now: for each agent, its oldest cue newer than the queueing. */
export function queuedDeliveries(pending: readonly CueEntry[], queue: ReadonlyMap<string, QueuedReply>, nowMs: number): Array<{ requestId: string; agentId: string; text: string }> {
  const deliveries: Array<{ requestId: string; agentId: string; text: string }> = [];
  for (const [agentId, reply] of queue) {
    const next = pending
      .filter((e) => e.agentId === agentId && e.id > reply.afterId && e.state === 'pending' && !isExpired(e, nowMs))
      .sort((a, b) => a.id - b.id)[0];
    if (next) deliveries.push({ requestId: next.requestId, agentId, text: reply.text });
  }
  return deliveries;
}

export interface PanelSnapshot {
  nowMs: number;
  pending: UiCue[];
  agents: UiAgent[];
  history: UiCue[];
  /** Pending cues that can still be answered (expired ones excluded): the badge's number. */
  waitingCount: number;
}

/** Everything the panel shows, from one read of the mailbox. */
export function buildSnapshot(
  source: { agents: readonly AgentSummary[]; pending: readonly CueEntry[]; recent: readonly CueEntry[] },
  queue: ReadonlyMap<string, QueuedReply>,
  nowMs: number,
): PanelSnapshot {
  const pending = source.pending.map((e) => toUiCue(e, nowMs));
  const history = source.recent.filter((e) => e.state !== 'pending').map((e) => toUiCue(e, nowMs));
  const agents: UiAgent[] = source.agents.map((a) => {
    // Expired cues are not waiting for anyone: counted out, as on the badge.
    const agent: UiAgent = { agentId: a.agentId, pendingCount: pending.filter((c) => c.agentId === a.agentId && c.state === 'pending').length };
    if (a.runtime) agent.runtime = a.runtime;
    if (a.projectDir) agent.projectDir = a.projectDir;
    if (a.terminal) agent.terminal = a.terminal;
    if (a.lastActivityMs !== undefined) agent.lastActivityMs = a.lastActivityMs;
    const queued = queue.get(a.agentId);
    if (queued) agent.queued = queued.text;
    return agent;
  });
  // A reply can be queued for an agent the mailbox does not list yet (e.g. the list was just emptied).
  for (const [agentId, reply] of queue) {
    if (!agents.some((a) => a.agentId === agentId)) agents.push({ agentId, pendingCount: 0, queued: reply.text });
  }
  return { nowMs, pending, agents, history, waitingCount: pending.filter((c) => c.state === 'pending').length };
}

/** The first line of a prompt, shortened, for notifications and quick picks. */
export function promptSummary(prompt: string, max = 140): string {
  const line = prompt.split(/\r?\n/).map((l) => l.trim()).find((l) => l.length > 0) ?? '';
  const plain = line.replace(/^#+\s*/, '').replace(/[*_`]/g, '');
  return plain.length > max ? `${plain.slice(0, max - 1)}…` : plain;
}

/** Expands a leading `~` of the `belay.cues.home` setting; empty stays empty (CUE_HOME or ~/.cue, see core/home.ts). */
export function expandHomeSetting(setting: string, userHome: string): string | undefined {
  const value = setting.trim();
  if (!value) return undefined;
  return value.replace(/^~(?=$|[/\\])/, userHome);
}
