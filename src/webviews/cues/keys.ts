// The keyboard rules of a cue card, pure so they are unit-tested (test/unit/cues/panel-selection.test.ts):
// - number keys select (a single choice's option, a multiple choice's checkbox); they never send;
// - Enter sends what the card holds (in a form field: once every field is filled);
// - a confirm's confirm label is never one key away: it takes Ctrl+Enter (⌘Enter on a Mac), a
//   chord nobody types by accident; a number key or a plain Enter on a confirm only says so;
// - Ctrl+Backspace (⌘⌫) ends the cue, outside text fields (where it deletes a word);
// - a pause's Continue is harmless: Enter continues.
import type { UiPayload } from '../../contracts/cuesPage.ts';
import { optionIndexForKey } from './selection.ts';

export interface KeyPress {
  key: string;
  ctrl: boolean;
  meta: boolean;
  shift: boolean;
  alt: boolean;
  /** An IME composition is under way: the key belongs to it. */
  composing?: boolean;
}

/** Where the key was pressed: the card itself, the reply box, a form's text field, a button, a checkbox or radio. */
export type KeyFocus = 'card' | 'reply' | 'field' | 'button' | 'choice';

export type KeyAction =
  | { kind: 'select'; index: number }
  | { kind: 'send' }
  /** A form: send when every field has a value, else point at the first empty one. */
  | { kind: 'sendIfComplete' }
  /** The confirm button (a pause's Continue). */
  | { kind: 'confirm' }
  /** End (a confirm's cancel label, a dead card's Dismiss). */
  | { kind: 'end' }
  | { kind: 'hint'; text: string }
  /** Not the card's: typing, or a focused button's own Enter. */
  | { kind: 'none' };

/** What the key hints on the buttons say, on this platform. */
export interface KeyNames {
  confirm: string;
  end: string;
  send: string;
  /** For aria-keyshortcuts. */
  confirmAria: string;
  endAria: string;
}

export function keyNames(mac: boolean): KeyNames {
  return mac
    ? { confirm: '⌘Enter', end: '⌘⌫', send: 'Enter', confirmAria: 'Meta+Enter', endAria: 'Meta+Backspace' }
    : { confirm: 'Ctrl+Enter', end: 'Ctrl+Backspace', send: 'Enter', confirmAria: 'Control+Enter', endAria: 'Control+Backspace' };
}

/** What a key does on a card showing `ask`. */
export function keyAction(ask: UiPayload, press: KeyPress, focus: KeyFocus, names: KeyNames): KeyAction {
  if (press.composing || press.alt) return { kind: 'none' };
  const accel = press.ctrl || press.meta;
  const typing = focus === 'reply' || focus === 'field';
  const confirmLike = ask.kind === 'confirm' || ask.kind === 'pause';
  if (press.key === 'Enter' && accel) return confirmLike ? { kind: 'confirm' } : { kind: 'send' };
  if (press.key === 'Backspace' && accel) return typing ? { kind: 'none' } : { kind: 'end' };
  if (accel) return { kind: 'none' };
  if (press.key === 'Enter') {
    if (press.shift || focus === 'button') return { kind: 'none' };
    if (ask.kind === 'pause') return { kind: 'confirm' };
    if (ask.kind === 'form' && focus !== 'reply') return { kind: 'sendIfComplete' };
    if (ask.kind === 'confirm' && focus !== 'reply') return { kind: 'hint', text: `Enter does not confirm: ${names.confirm} answers “${ask.confirmLabel}”, ${names.end} answers “${ask.cancelLabel}”.` };
    return { kind: 'send' };
  }
  const index = typing ? undefined : optionIndexForKey(press.key);
  if (index !== undefined) {
    if (ask.kind === 'choice') {
      return index < ask.options.length ? { kind: 'select', index } : { kind: 'hint', text: `There is no option ${press.key}: this cue has ${ask.options.length}.` };
    }
    if (ask.kind === 'confirm') return { kind: 'hint', text: `Number keys do not answer a confirm: ${names.confirm} answers “${ask.confirmLabel}”, ${names.end} answers “${ask.cancelLabel}”.` };
  }
  return { kind: 'none' };
}

/** The first field of a form that takes one value and has none (multi-select fields may stay empty); undefined when complete. */
export function firstMissingField(ask: UiPayload, values: ReadonlyMap<string, readonly string[]>): string | undefined {
  if (ask.kind !== 'form') return undefined;
  return ask.fields.find((f) => !f.multiple && !(values.get(f.label) ?? []).some((v) => v.trim() !== ''))?.label;
}
