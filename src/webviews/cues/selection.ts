// What the payload UIs send, from what the human picked: pure, so the rules are unit-tested
// (test/unit/cues/panel-selection.test.ts) and the host composes the answer text with the core.
import type { UiAgent, UiPayload, UiSelection } from '../../contracts/cuesPage.ts';

/** The reply box's text as the optional extra line (blank -> none). */
function extra(text: string): Pick<UiSelection, 'text'> {
  return text.trim() ? { text } : {};
}

/** A single-choice option clicked (plus any text typed in the reply box). */
export function choiceClicked(label: string, replyText: string): UiSelection {
  return { choices: [label], ...extra(replyText) };
}

/** The confirm (or pause's Continue) button. */
export function confirmClicked(replyText: string): UiSelection {
  return { confirm: true, ...extra(replyText) };
}

/**
 * "Send": what the card holds. `checked` are the ticked options of a multiple choice; `fields`
 * the form's values per label (several for a multi-select field; blank text fields left out).
 */
export function sendSelection(payload: UiPayload, ui: { replyText: string; checked?: readonly string[]; fields?: ReadonlyMap<string, readonly string[]> }): UiSelection {
  switch (payload.kind) {
    case 'choice': {
      const checked = payload.options.filter((o) => ui.checked?.includes(o));
      return checked.length > 0 ? { choices: checked, ...extra(ui.replyText) } : extra(ui.replyText);
    }
    case 'form': {
      const fields: Array<[string, string]> = [];
      for (const field of payload.fields) {
        for (const value of ui.fields?.get(field.label) ?? []) if (value.trim()) fields.push([field.label, value.trim()]);
      }
      return fields.length > 0 ? { fields, ...extra(ui.replyText) } : extra(ui.replyText);
    }
    default:
      return extra(ui.replyText);
  }
}

/** True when "Send" has nothing to send (the UI then says what to do instead of sending). */
export function isEmptySelection(selection: UiSelection, attachments: number): boolean {
  return attachments === 0 && !selection.confirm && !selection.text?.trim() && !(selection.choices?.length) && !(selection.fields?.length);
}

/** Number keys 1-9 pick the n-th option; anything else is no option. */
export function optionIndexForKey(key: string): number | undefined {
  return /^[1-9]$/.test(key) ? Number(key) - 1 : undefined;
}

/** "2m 10s", "45s", "3h 5m": how long ago, as the panel shows it. */
function age(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  const [h, m, s] = [Math.floor(seconds / 3600), Math.floor(seconds / 60) % 60, seconds % 60];
  return h > 0 ? `${h}h ${m}m` : m > 0 ? `${m}m ${s}s` : `${s}s`;
}

/** "waiting 2m 10s" */
export function waitingLabel(createdAtMs: number | undefined, nowMs: number): string {
  return createdAtMs === undefined ? 'waiting' : `waiting ${age(nowMs - createdAtMs)}`;
}

/** "3m ago" style label for history times and agents' last activity. */
export function agoLabel(ms: number | undefined, nowMs: number): string {
  if (ms === undefined) return '';
  return `${age(nowMs - ms)} ago`;
}

/** An agent with no cue waiting and no sign of life for this long is offered for archiving in bulk. */
export const IDLE_AFTER_MS = 3600_000;

/** Agents nobody waits on, with nothing queued, not heard from for an hour: what "Archive idle agents" archives. */
export function idleAgents(agents: readonly UiAgent[], now: number): UiAgent[] {
  return agents.filter((a) => !a.archived && a.pendingCount === 0 && !a.queued && (a.lastActivityMs === undefined || now - a.lastActivityMs > IDLE_AFTER_MS));
}
