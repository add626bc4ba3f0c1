// The answer each payload UI produces: the panel's selection, composed by the core into the text
// the agent reads (the same rules as the public console and `belay cues answer`).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { composeAnswerText } from '../../../src/cues/core/answer.ts';
import { parsePayload, PAUSE_PAYLOAD_JSON } from '../../../src/cues/core/payload.ts';
import { toAsk } from '../../../src/cues/core/model.ts';
import { choiceClicked, confirmClicked, isEmptySelection, optionIndexForKey, sendSelection, waitingLabel } from '../../../src/webviews/cues/selection.ts';

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
