// What the editor shows of the mailbox (the Cues panel, its badge, the status bar, notifications,
// quick picks) and what may be done, computed from mailbox entries. This is the host's own model;
// src/cues/view.ts maps it onto the webview's protocol. Unit-tested: test/unit/cues/panel*.test.ts.
import * as path from 'node:path';
import { describeTimeout, expiresAtMs, isExpired } from './expiry.ts';
import { cancelLabel, confirmLabel } from './labels.ts';
import type { PayloadView } from './payload.ts';
import type { AgentSummary, CueEntry } from './store.ts';

/** A cancelled response written this long before the timeout ends is the CLI's own timeout, not the human's End. */
const TIMEOUT_SLACK_MS = 2_000;
/** How many answered and ended cues the panel shows, newest kept. */
export const HISTORY_LIMIT = 200;

/** What a cue asks for, its labels resolved: what the panel, the quick picks and the notifications offer. */
export type CueAsk =
  | { kind: 'none' }
  | { kind: 'invalid'; warning: string }
  | { kind: 'choice'; options: string[]; multiple: boolean }
  | { kind: 'confirm'; text: string; confirmLabel: string; cancelLabel: string }
  | { kind: 'pause'; text: string; confirmLabel: string }
  | { kind: 'form'; fields: Array<{ label: string; options: string[]; multiple: boolean }> };

/**
 * pending: waiting for the human; expired: pending but its cueme stopped waiting (expiry.ts), so
 * nobody reads an answer any more; answered / cancelled / timeout: has a response; closed: ended elsewhere.
 */
export type ShownState = 'pending' | 'expired' | 'answered' | 'cancelled' | 'timeout' | 'closed';

export interface Cue {
  requestId: string;
  agentId: string;
  prompt: string;
  payload: CueAsk;
  state: ShownState;
  createdAtMs?: number;
  /** When a pending cue expires (absent for pauses, which never do, and for ended cues). */
  expiresAtMs?: number;
  response?: { text: string; files: string[]; atMs?: number };
}

export interface CueAgent {
  agentId: string;
  runtime?: string;
  projectDir?: string;
  terminal?: string;
  lastActivityMs?: number;
  /** Its cues waiting for the human (expired ones not counted). */
  pendingCount: number;
  /** A reply waiting for this agent's next cue. */
  queued?: string;
}

export function toAsk(view: PayloadView): CueAsk {
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

export function shownState(entry: CueEntry, nowMs: number, timeoutMs: number): ShownState {
  if (entry.state === 'pending') return isExpired(entry, nowMs, timeoutMs) ? 'expired' : 'pending';
  if (entry.state === 'cancelled') {
    const answeredAt = entry.response?.createdAtMs;
    const expiresAt = expiresAtMs(entry, timeoutMs);
    const timedOut = answeredAt !== undefined && expiresAt !== undefined && answeredAt >= expiresAt - TIMEOUT_SLACK_MS;
    return timedOut ? 'timeout' : 'cancelled';
  }
  return entry.state;
}

export function toCue(entry: CueEntry, nowMs: number, timeoutMs: number): Cue {
  const cue: Cue = {
    requestId: entry.requestId,
    agentId: entry.agentId,
    prompt: entry.prompt,
    payload: toAsk(entry.payload),
    state: shownState(entry, nowMs, timeoutMs),
  };
  if (entry.createdAtMs !== undefined) cue.createdAtMs = entry.createdAtMs;
  const expiresAt = expiresAtMs(entry, timeoutMs);
  if (cue.state === 'pending' && expiresAt !== undefined) cue.expiresAtMs = expiresAt;
  if (entry.response) {
    cue.response = { text: entry.response.text, files: entry.response.files.map((f) => path.basename(f.file)) };
    if (entry.response.createdAtMs !== undefined) cue.response.atMs = entry.response.createdAtMs;
  }
  return cue;
}

/** Why a request cannot be answered from the editor now, or undefined when it can. */
export function whyNotAnswerable(entry: CueEntry | undefined, nowMs: number, timeoutMs: number): string | undefined {
  if (!entry) return 'this cue is no longer in the mailbox';
  if (entry.state === 'answered') return 'this cue was already answered';
  if (entry.state === 'cancelled') return 'this cue was already ended';
  if (entry.state === 'closed') return `this cue was closed elsewhere (status ${entry.status})`;
  if (isExpired(entry, nowMs, timeoutMs)) return `this cue expired: its cueme stopped waiting after ${describeTimeout(timeoutMs)}, so nobody would read the answer`;
  return undefined;
}

/** A reply waiting for an agent's next cue: delivered to the first cue written after it was queued. */
export interface QueuedReply {
  text: string;
  /** The mailbox's highest request row id when the reply was queued; only later cues get it. */
  afterId: number;
}

/** Which pending cues receive a queued reply now: for each agent, its oldest cue newer than the queueing. */
export function queuedDeliveries(
  pending: readonly CueEntry[],
  queue: ReadonlyMap<string, QueuedReply>,
  nowMs: number,
  timeoutMs: number,
): Array<{ requestId: string; agentId: string; text: string }> {
  const deliveries: Array<{ requestId: string; agentId: string; text: string }> = [];
  for (const [agentId, reply] of queue) {
    const next = pending
      .filter((e) => e.agentId === agentId && e.id > reply.afterId && e.state === 'pending' && !isExpired(e, nowMs, timeoutMs))
      .sort((a, b) => a.id - b.id)[0];
    if (next) deliveries.push({ requestId: next.requestId, agentId, text: reply.text });
  }
  return deliveries;
}

export interface CuesSnapshot {
  nowMs: number;
  pending: Cue[];
  agents: CueAgent[];
  history: Cue[];
  /** Pending cues that can still be answered (expired ones excluded): the badge's number. */
  waitingCount: number;
}

/** Everything the editor shows, from one read of the mailbox. */
export function buildSnapshot(
  source: { agents: readonly AgentSummary[]; pending: readonly CueEntry[]; recent: readonly CueEntry[] },
  queue: ReadonlyMap<string, QueuedReply>,
  nowMs: number,
  timeoutMs: number,
): CuesSnapshot {
  const pending = source.pending.map((e) => toCue(e, nowMs, timeoutMs));
  const history = source.recent.filter((e) => e.state !== 'pending').map((e) => toCue(e, nowMs, timeoutMs));
  const agents: CueAgent[] = source.agents.map((a) => {
    // Expired cues are not waiting for anyone: counted out, as on the badge.
    const agent: CueAgent = { agentId: a.agentId, pendingCount: pending.filter((c) => c.agentId === a.agentId && c.state === 'pending').length };
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

/** When the first cue still waiting expires (so the badge can stop counting it), if any does. */
export function nextExpiryMs(snapshot: CuesSnapshot): number | undefined {
  const times = snapshot.pending.flatMap((c) => (c.expiresAtMs === undefined ? [] : [c.expiresAtMs]));
  return times.length > 0 ? Math.min(...times) : undefined;
}

/** The first line of a prompt, shortened, for notifications and quick picks. */
export function promptSummary(prompt: string, max = 140): string {
  const line = prompt.split(/\r?\n/).map((l) => l.trim()).find((l) => l.length > 0) ?? '';
  const plain = line.replace(/^#+\s*/, '').replace(/[*_`]/g, '');
  return plain.length > max ? `${plain.slice(0, max - 1)}…` : plain;
}
