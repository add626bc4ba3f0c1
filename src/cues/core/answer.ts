import type { UiSelection } from '../../contracts/cuesPage.ts';
import { confirmLabel } from './labels.ts';
import type { PayloadView } from './payload.ts';

// The text an answer becomes follows the public console's rules, so an agent reads the same
// thing whichever program answered: choice -> the label(s), one per line; form -> `Label: value`
// lines (`Label: a, b` for several); confirm -> its confirm label. A pause's "Continue" is an
// empty text, which cueme reports as "The user resumed the conversation."

/** What the human picked or typed, from the page or the command line; which parts apply depends on the payload. */
export type Selection = UiSelection;

/** A selection that does not fit the payload: a usage mistake, nothing is written. */
export class SelectionError extends Error {
  override name = 'SelectionError';
}

function quoteList(values: readonly string[]): string {
  return values.map((v) => `"${v}"`).join(', ');
}

/** The response text for `selection` answered to a request with `view`; throws SelectionError when they do not fit. */
export function composeAnswerText(view: PayloadView, selection: Selection): string {
  const extra = selection.text?.trim() ?? '';
  const choices = selection.choices ?? [];
  const fields = selection.fields ?? [];
  const kind = view.kind === 'invalid' ? 'none' : view.kind;
  if (choices.length > 0 && kind !== 'choice') throw new SelectionError(`this request is a ${kind} prompt, not a choice: a choice label does not apply`);
  if (fields.length > 0 && kind !== 'form') throw new SelectionError(`this request is a ${kind} prompt, not a form: a field does not apply`);
  if (selection.confirm && kind !== 'confirm' && kind !== 'pause') throw new SelectionError(`this request is a ${kind} prompt, not a confirm: confirming does not apply`);

  const parts: string[] = [];
  switch (view.kind) {
    case 'none':
    case 'invalid':
      break;
    case 'choice': {
      const options = view.payload.options;
      for (const choice of choices) {
        if (!options.includes(choice)) throw new SelectionError(`"${choice}" is not one of the options: ${quoteList(options)}`);
      }
      const picked = options.filter((o) => choices.includes(o));
      if (picked.length > 1 && !view.payload.allow_multiple) throw new SelectionError(`this choice takes one option, got ${picked.length}: ${quoteList(picked)}`);
      parts.push(...picked);
      break;
    }
    case 'confirm':
      if (selection.confirm) parts.push(confirmLabel(view.payload));
      break;
    case 'pause':
      break;
    case 'form': {
      const byLabel = new Map<string, string[]>();
      for (const [label, value] of fields) {
        const field = view.payload.fields.find((f) => f.label === label);
        if (!field) throw new SelectionError(`the form has no field "${label}"; its fields are ${quoteList(view.payload.fields.map((f) => f.label))}`);
        if (field.options && field.options.length > 0 && !field.options.includes(value)) {
          throw new SelectionError(`"${value}" is not an option of field "${label}": ${quoteList(field.options)}`);
        }
        const values = byLabel.get(label) ?? [];
        if (!values.includes(value)) values.push(value);
        if (values.length > 1 && !field.allow_multiple) throw new SelectionError(`field "${label}" takes one value, got ${quoteList(values)}`);
        byLabel.set(label, values);
      }
      for (const field of view.payload.fields) {
        const values = byLabel.get(field.label);
        if (!values) continue;
        // Multi-select values keep the order of the field's options, as checkboxes show them.
        const ordered = field.options ? field.options.filter((o) => values.includes(o)) : values;
        parts.push(`${field.label}: ${ordered.join(', ')}`);
      }
      break;
    }
  }
  if (extra) parts.push(extra);
  return parts.join('\n');
}

/** True when the selection says anything at all (a confirm counts even though a pause's text is empty). */
export function selectionIsEmpty(selection: Selection): boolean {
  return !selection.confirm && !(selection.text?.trim()) && (selection.choices?.length ?? 0) === 0 && (selection.fields?.length ?? 0) === 0;
}
