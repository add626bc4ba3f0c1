// The answer each payload UI produces: the panel's selection, composed by the core into the text
// the agent reads (the same rules as the public console and `belay cues answer`).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { composeAnswerText } from '../../../src/cues/core/answer.ts';
import { parsePayload, PAUSE_PAYLOAD_JSON } from '../../../src/cues/core/payload.ts';
import { toAsk } from '../../../src/cues/core/model.ts';
import { firstMissingField, keyAction, keyNames, type KeyPress } from '../../../src/webviews/cues/keys.ts';
import { choiceClicked, confirmClicked, IDLE_AFTER_MS, idleAgents, isEmptySelection, optionIndexForKey, sendSelection, waitingLabel } from '../../../src/webviews/cues/selection.ts';

const view = (payload: unknown) => parsePayload(JSON.stringify(payload));

describe('what the Cues panel sends', () => {
  test('single choice: the clicked label; with a typed line after it', () => {
    const v = view({ type: 'choice', options: ['Staging', 'Production'] });
    assert.equal(composeAnswerText(v, choiceClicked('Production', '')), 'Production');
    assert.equal(composeAnswerText(v, choiceClicked('Staging', 'and tell me the URL')), 'Staging\nand tell me the URL');
    // "Other": no option, only the reply box.
    assert.equal(composeAnswerText(v, sendSelection(toAsk(v), { replyText: 'Neither, wait' })), 'Neither, wait');
  });

  test('multiple choice: ticked labels one per line, in the options order', () => {
    const v = view({ type: 'choice', options: ['lint', 'unit', 'e2e'], allow_multiple: true });
    const selection = sendSelection(toAsk(v), { replyText: '', checked: ['e2e', 'lint'] });
    assert.equal(composeAnswerText(v, selection), 'lint\ne2e');
  });

  test('confirm: its confirm label; pause: Continue is an empty text (cueme says "resumed")', () => {
    const v = view({ type: 'confirm', text: 'Ship?', confirm_label: 'Deploy', cancel_label: 'Not yet' });
    assert.deepEqual(toAsk(v), { kind: 'confirm', text: 'Ship?', confirmLabel: 'Deploy', cancelLabel: 'Not yet' });
    assert.equal(composeAnswerText(v, confirmClicked('')), 'Deploy');
    const pause = parsePayload(PAUSE_PAYLOAD_JSON);
    assert.equal(toAsk(pause).kind, 'pause');
    assert.equal(composeAnswerText(pause, confirmClicked('')), '');
    assert.equal(isEmptySelection(confirmClicked(''), 0), false, 'Continue is something to send');
  });

  test('form: every field kind becomes `Label: value` lines; blank text fields are left out', () => {
    const v = view({
      type: 'form',
      fields: [
        { label: 'Env', options: ['prod', 'staging'] },
        { label: 'Checks', options: ['lint', 'unit', 'e2e'], allow_multiple: true },
        { label: 'Note', kind: 'text' },
        { label: 'Ticket', kind: 'text' },
      ],
    });
    const ui = toAsk(v);
    assert.deepEqual(ui.kind === 'form' && ui.fields.map((f) => [f.label, f.options.length, f.multiple]), [
      ['Env', 2, false],
      ['Checks', 3, true],
      ['Note', 0, false],
      ['Ticket', 0, false],
    ]);
    const fields = new Map([
      ['Env', ['staging']],
      ['Checks', ['e2e', 'lint']],
      ['Note', ['  ship it ']],
      ['Ticket', ['   ']],
    ]);
    assert.equal(composeAnswerText(v, sendSelection(ui, { replyText: '', fields })), 'Env: staging\nChecks: lint, e2e\nNote: ship it');
  });

  test('nothing picked and nothing typed is empty; attachments alone are not', () => {
    const ui = toAsk(view({ type: 'choice', options: ['a', 'b'], allow_multiple: true }));
    const empty = sendSelection(ui, { replyText: '  ', checked: [] });
    assert.equal(isEmptySelection(empty, 0), true);
    assert.equal(isEmptySelection(empty, 1), false);
  });

  test('number keys 1-9 pick options; the waiting label counts up', () => {
    assert.equal(optionIndexForKey('1'), 0);
    assert.equal(optionIndexForKey('9'), 8);
    assert.equal(optionIndexForKey('0'), undefined);
    assert.equal(optionIndexForKey('a'), undefined);
    assert.equal(waitingLabel(1_000, 131_000), 'waiting 2m 10s');
  });
});

describe('the keyboard on a cue card', () => {
  const keys = keyNames(false);
  const press = (key: string, mods: Partial<KeyPress> = {}): KeyPress => ({ key, ctrl: false, meta: false, shift: false, alt: false, ...mods });
  const choice = toAsk(view({ type: 'choice', options: ['Staging', 'Production', 'Both'] }));
  const multi = toAsk(view({ type: 'choice', options: ['lint', 'unit'], allow_multiple: true }));
  const confirm = toAsk(view({ type: 'confirm', text: 'Delete the production database?', confirm_label: 'Delete', cancel_label: 'Keep it' }));
  const pause = toAsk(parsePayload(PAUSE_PAYLOAD_JSON));
  const form = toAsk(view({ type: 'form', fields: [{ label: 'Env', options: ['prod', 'staging'] }, { label: 'Checks', options: ['lint', 'e2e'], allow_multiple: true }, { label: 'Note' }] }));
  const text = toAsk(view(null));

  test('number keys select and never send; Enter sends', () => {
    assert.deepEqual(keyAction(choice, press('2'), 'card', keys), { kind: 'select', index: 1 });
    assert.deepEqual(keyAction(multi, press('1'), 'choice', keys), { kind: 'select', index: 0 });
    assert.deepEqual(keyAction(choice, press('2'), 'button', keys), { kind: 'select', index: 1 }, 'also with an option focused');
    assert.deepEqual(keyAction(choice, press('Enter'), 'card', keys), { kind: 'send' });
    assert.equal(keyAction(choice, press('7'), 'card', keys).kind, 'hint', 'no option 7: said, not guessed');
    for (const ask of [choice, multi, confirm, pause, form, text]) {
      for (const digit of ['1', '2', '3']) assert.notEqual(keyAction(ask, press(digit), 'card', keys).kind, 'send', `${ask.kind} ${digit}`);
    }
  });

  test("a confirm's dangerous label is never one key away: only the Ctrl+Enter chord confirms", () => {
    for (const focus of ['card', 'button', 'choice', 'reply'] as const) {
      for (const key of ['1', '2', 'Enter', ' ', 'y', 'Escape']) {
        assert.notEqual(keyAction(confirm, press(key), focus, keys).kind, 'confirm', `${key} on ${focus}`);
      }
    }
    const hint = keyAction(confirm, press('1'), 'card', keys);
    assert.deepEqual(hint, { kind: 'hint', text: 'Number keys do not answer a confirm: Ctrl+Enter answers “Delete”, Ctrl+Backspace answers “Keep it”.' });
    assert.equal(keyAction(confirm, press('Enter'), 'card', keys).kind, 'hint');
    assert.deepEqual(keyAction(confirm, press('Enter', { ctrl: true }), 'card', keys), { kind: 'confirm' });
    assert.deepEqual(keyAction(confirm, press('Enter', { meta: true }), 'reply', keys), { kind: 'confirm' });
    assert.deepEqual(keyAction(confirm, press('Enter'), 'reply', keys), { kind: 'send' }, 'a typed reply is sent as text, never as the confirm');
  });

  test("a pause's Continue is Enter; Ctrl+Backspace ends outside text boxes; typing is left alone", () => {
    assert.deepEqual(keyAction(pause, press('Enter'), 'card', keys), { kind: 'confirm' });
    assert.deepEqual(keyAction(text, press('Backspace', { ctrl: true }), 'card', keys), { kind: 'end' });
    assert.deepEqual(keyAction(text, press('Backspace', { ctrl: true }), 'reply', keys), { kind: 'none' }, 'deletes a word');
    assert.deepEqual(keyAction(choice, press('2'), 'reply', keys), { kind: 'none' });
    assert.deepEqual(keyAction(text, press('Enter', { shift: true }), 'reply', keys), { kind: 'none' }, 'a new line');
    assert.deepEqual(keyAction(text, press('Enter', { composing: true }), 'reply', keys), { kind: 'none' });
    assert.deepEqual(keyAction(choice, press('Enter'), 'button', keys), { kind: 'none' }, 'a focused button acts itself');
  });

  test('Enter in a form field sends once every single-value field is filled; Ctrl+Enter sends as it is', () => {
    assert.deepEqual(keyAction(form, press('Enter'), 'field', keys), { kind: 'sendIfComplete' });
    assert.deepEqual(keyAction(form, press('Enter', { ctrl: true }), 'field', keys), { kind: 'send' });
    assert.equal(firstMissingField(form, new Map([['Env', ['prod']], ['Note', ['  ']]])), 'Note');
    assert.equal(firstMissingField(form, new Map([['Note', ['x']]])), 'Env');
    assert.equal(firstMissingField(form, new Map([['Env', ['prod']], ['Note', ['x']]])), undefined, 'a multi-select may stay empty');
  });

  test('the key names on a Mac', () => {
    assert.deepEqual(keyNames(true), { confirm: '⌘Enter', end: '⌘⌫', send: 'Enter', confirmAria: 'Meta+Enter', endAria: 'Meta+Backspace' });
  });

  test('idle agents: nothing waiting, nothing queued, silent for an hour', () => {
    const now = 10 * IDLE_AFTER_MS;
    const agents = [
      { agentId: 'old', pendingCount: 0, lastActivityMs: now - IDLE_AFTER_MS - 1 },
      { agentId: 'recent', pendingCount: 0, lastActivityMs: now - 1000 },
      { agentId: 'asking', pendingCount: 1, lastActivityMs: 0 },
      { agentId: 'queued', pendingCount: 0, queued: 'next', lastActivityMs: 0 },
      { agentId: 'gone', pendingCount: 0, archived: true },
      { agentId: 'unknown', pendingCount: 0 },
    ];
    assert.deepEqual(idleAgents(agents, now).map((a) => a.agentId), ['old', 'unknown']);
  });
});
