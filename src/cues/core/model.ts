// What the editor shows of the mailbox (the Cues panel, its badge, the status bar, notifications,
// quick picks) and what may be done, computed from mailbox entries. Its cues and agents are the
// page's (src/contracts/cuesPage.ts): src/cues/view.ts sends them as they are. Unit-tested:
// test/unit/cues/panel*.test.ts.
import * as path from 'node:path';
import type { CueState, UiAgent, UiCue, UiPayload } from '../../contracts/cuesPage.ts';
import { describeTimeout, expiresAtMs, isExpired } from './expiry.ts';
import { cancelLabel, confirmLabel } from './labels.ts';
import type { PayloadView } from './payload.ts';
import type { AgentSummary, CueEntry } from './store.ts';
import { goneWaiterText, type Liveness } from './waiters.ts';

/** A cancelled response written this long before the timeout ends is the CLI's own timeout, not the human's End. */
const TIMEOUT_SLACK_MS = 2_000;
/** How many answered and ended cues the panel shows, newest kept. */
export const HISTORY_LIMIT = 200;

/** What a cue asks for, its labels resolved: what the panel, the quick picks and the notifications offer. */
export type CueAsk = UiPayload;

/** A cue's state as shown (see the contract's `cueStateSchema`; expiry.ts, waiters.ts decide expired and abandoned). */
export type ShownState = CueState;

/** Whether the process waiting for a cue is still there (waiters.ts; the store's `liveness`). */
export type LivenessOf = (entry: CueEntry) => Liveness;
/** Without a way to look at processes, nothing is known: the timeout alone decides. */
const NOTHING_KNOWN: LivenessOf = () => 'unknown';

/** A cue as the editor shows it. */
export type Cue = UiCue;

/** An agent of the mailbox as the editor lists it; `pendingCount` leaves expired cues out. */
export type CueAgent = UiAgent;

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

/**
 * A waiting cue's state. When its waiter is known (Belay's writers record it), that decides: alive
 * means it waits, whatever the clock says (a machine that slept resumes its timer); gone means
 * abandoned. Otherwise (the public tools' cues) only the timeout rule can say (expiry.ts).
 */
function pendingState(entry: CueEntry, nowMs: number, timeoutMs: number, liveness: LivenessOf): 'pending' | 'expired' | 'abandoned' {
  switch (liveness(entry)) {
    case 'gone':
      return 'abandoned';
    case 'alive':
      return 'pending';
    case 'unknown':
      return isExpired(entry, nowMs, timeoutMs) ? 'expired' : 'pending';
  }
}

export function shownState(entry: CueEntry, nowMs: number, timeoutMs: number, liveness: LivenessOf = NOTHING_KNOWN): ShownState {
  if (entry.state === 'pending') return pendingState(entry, nowMs, timeoutMs, liveness);
  if (entry.state === 'cancelled') {
    const answeredAt = entry.response?.createdAtMs;
    const expiresAt = expiresAtMs(entry, timeoutMs);
    const timedOut = answeredAt !== undefined && expiresAt !== undefined && answeredAt >= expiresAt - TIMEOUT_SLACK_MS;
    return timedOut ? 'timeout' : 'cancelled';
  }
  return entry.state;
}

export function toCue(entry: CueEntry, nowMs: number, timeoutMs: number, liveness: LivenessOf = NOTHING_KNOWN): Cue {
  const cue: Cue = {
    requestId: entry.requestId,
    agentId: entry.agentId,
    prompt: entry.prompt,
    payload: toAsk(entry.payload),
    state: shownState(entry, nowMs, timeoutMs, liveness),
  };
  if (entry.createdAtMs !== undefined) cue.createdAtMs = entry.createdAtMs;
  const expiresAt = expiresAtMs(entry, timeoutMs);
  // A live waiter past its deadline (its machine slept) still reads the answer: nothing to count down.
  if (cue.state === 'pending' && expiresAt !== undefined && expiresAt >= nowMs) cue.expiresAtMs = expiresAt;
  if (entry.waiter) cue.waiter = { pid: entry.waiter.pid, host: entry.waiter.host };
  if (entry.response) {
    cue.response = { text: entry.response.text, files: entry.response.files.map((f) => path.basename(f.file)) };
    if (entry.response.createdAtMs !== undefined) cue.response.atMs = entry.response.createdAtMs;
  }
  return cue;
}

/** Why a request cannot be answered from the editor now, or undefined when it can. */
export function whyNotAnswerable(entry: CueEntry | undefined, nowMs: number, timeoutMs: number, liveness: LivenessOf = NOTHING_KNOWN): string | undefined {
  if (!entry) return 'this cue is no longer in the mailbox';
  if (entry.state === 'answered') return 'this cue was already answered';
  if (entry.state === 'cancelled') return 'this cue was already ended';
  if (entry.state === 'closed') return `this cue was closed elsewhere (status ${entry.status})`;
  switch (pendingState(entry, nowMs, timeoutMs, liveness)) {
    case 'abandoned':
      return `this cue was abandoned: ${entry.waiter ? goneWaiterText(entry.waiter) : 'the process that waited for it is gone'}, so nobody would read the answer`;
    case 'expired': {
      const waited = entry.waiter?.deadlineMs !== undefined && entry.createdAtMs !== undefined ? entry.waiter.deadlineMs - entry.createdAtMs : timeoutMs;
      return `this cue expired: its cueme stopped waiting after ${describeTimeout(waited)}, so nobody would read the answer`;
    }
    case 'pending':
      return undefined;
  }
}

/** "One agent…": a phrase as the start of a sentence. */
export function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** The badge's, the status bar's and the screen reader's words for `n` cues waiting. */
export function waitingPhrase(n: number): string {
  return n === 1 ? 'one agent question is waiting for your answer' : `${n} agent questions are waiting for your answer`;
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
  liveness: LivenessOf = NOTHING_KNOWN,
): Array<{ requestId: string; agentId: string; text: string }> {
  const deliveries: Array<{ requestId: string; agentId: string; text: string }> = [];
  for (const [agentId, reply] of queue) {
    // Never to an expired or abandoned cue: the reply would be used up and reach nobody.
    const next = pending
      .filter((e) => e.agentId === agentId && e.id > reply.afterId && e.state === 'pending' && pendingState(e, nowMs, timeoutMs, liveness) === 'pending')
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
  /** Pending cues that can still be answered (expired and abandoned ones excluded): the badge's number. */
  waitingCount: number;
}

/** Everything the editor shows, from one read of the mailbox. */
export function buildSnapshot(
  source: { agents: readonly AgentSummary[]; pending: readonly CueEntry[]; recent: readonly CueEntry[] },
  queue: ReadonlyMap<string, QueuedReply>,
  nowMs: number,
  timeoutMs: number,
  liveness: LivenessOf = NOTHING_KNOWN,
): CuesSnapshot {
  const pending = source.pending.map((e) => toCue(e, nowMs, timeoutMs, liveness));
  const history = source.recent.filter((e) => e.state !== 'pending').map((e) => toCue(e, nowMs, timeoutMs, liveness));
  const agents: CueAgent[] = source.agents.map((a) => {
    // Expired cues are not waiting for anyone: counted out, as on the badge.
    const agent: CueAgent = { agentId: a.agentId, pendingCount: pending.filter((c) => c.agentId === a.agentId && c.state === 'pending').length };
    if (a.runtime) agent.runtime = a.runtime;
    if (a.projectDir) agent.projectDir = a.projectDir;
    if (a.terminal) agent.terminal = a.terminal;
    // Its last sign of life or the human's last answer to it, whichever is later: one clock for the agent's line.
    const answeredAt = history.flatMap((c) => (c.agentId === a.agentId && c.response?.atMs !== undefined ? [c.response.atMs] : []));
    const last = Math.max(a.lastActivityMs ?? -Infinity, ...answeredAt);
    if (Number.isFinite(last)) agent.lastActivityMs = last;
    // An archived agent that has a cue waiting is listed again: the human must see who asks.
    if (a.archived && agent.pendingCount === 0) agent.archived = true;
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
