// A cue as an MCP form elicitation, for a 2026-07-28 client that shows elicitations itself: the
// cue's payload (none, choice, confirm, form, pause) becomes the flat schema, and the client's
// ElicitResult becomes the answer text a HAP console would have written (answer.ts's rules), so
// the agent reads the same text whichever side the human answered on.
import { composeAnswerText, SelectionError, type Selection } from '../cues/core/answer.ts';
import { cancelLabel, confirmLabel } from '../cues/core/labels.ts';
import { parsePayload, type PayloadView } from '../cues/core/payload.ts';
import type { ElicitResult } from './mcpModern.ts';

export interface CueElicitation {
  params: { mode: 'form'; message: string; requestedSchema: { type: 'object'; properties: Record<string, object>; required?: string[] } };
}

const ANSWER = 'answer';
const CHOICE = 'choice';
const fieldKey = (i: number) => `field${i + 1}`;

/** The elicitation for a cue with `prompt` and the payload JSON stored with it. */
export function cueElicitation(prompt: string, payloadJson: string | null): CueElicitation {
  const view = parsePayload(payloadJson);
  const properties: Record<string, object> = {};
  const required: string[] = [];
  let message = prompt;
  switch (view.kind) {
    case 'none':
    case 'invalid':
      properties[ANSWER] = { type: 'string', title: 'Your answer' };
      break;
    case 'choice':
      properties[CHOICE] = view.payload.allow_multiple
        ? { type: 'array', title: 'Choose', items: { type: 'string', enum: view.payload.options } }
        : { type: 'string', title: 'Choose', enum: view.payload.options };
      required.push(CHOICE);
      break;
    case 'confirm':
      message = `${prompt}\n\nAccept: ${confirmLabel(view.payload)}. Decline: ${cancelLabel(view.payload)}.`;
      break;
    case 'pause':
      break;
    case 'form':
      view.payload.fields.forEach((field, i) => {
        const options = field.options && field.options.length > 0 ? field.options : undefined;
        properties[fieldKey(i)] = options
          ? field.allow_multiple
            ? { type: 'array', title: field.label, items: { type: 'string', enum: options } }
            : { type: 'string', title: field.label, enum: options }
          : { type: field.kind === 'number' ? 'number' : 'string', title: field.label };
      });
      break;
  }
  return { params: { mode: 'form', message, requestedSchema: { type: 'object', properties, ...(required.length > 0 ? { required } : {}) } } };
}

export type ElicitedAnswer = { text: string } | { cancelled: true } | { problem: string };

const asStrings = (value: unknown): string[] | undefined =>
  Array.isArray(value) ? (value.every((v) => typeof v === 'string') ? value : undefined) : typeof value === 'string' ? [value] : undefined;

/** The answer text for the client's result to `cueElicitation(…, payloadJson)`, or what did not fit. */
export function answerFromElicitation(payloadJson: string | null, result: ElicitResult): ElicitedAnswer {
  if (result.action !== 'accept') return { cancelled: true };
  const view: PayloadView = parsePayload(payloadJson);
  const content = result.content ?? {};
  const selection: Selection = {};
  switch (view.kind) {
    case 'none':
    case 'invalid': {
      const text = content[ANSWER];
      if (text !== undefined && typeof text !== 'string') return { problem: `"${ANSWER}" must be text` };
      return { text: text ?? '' };
    }
    case 'choice': {
      const picked = asStrings(content[CHOICE]);
      if (!picked) return { problem: `"${CHOICE}" must name the option(s) picked` };
      selection.choices = picked;
      break;
    }
    case 'confirm':
    case 'pause':
      selection.confirm = true;
      break;
    case 'form': {
      const fields: Array<[string, string]> = [];
      view.payload.fields.forEach((field, i) => {
        const value = content[fieldKey(i)];
        if (value === undefined || value === '') return;
        const values = typeof value === 'number' || typeof value === 'boolean' ? [String(value)] : asStrings(value);
        for (const v of values ?? []) fields.push([field.label, v]);
      });
      selection.fields = fields;
      break;
    }
  }
  try {
    return { text: composeAnswerText(view, selection) };
  } catch (error) {
    if (error instanceof SelectionError) return { problem: error.message };
    throw error;
  }
}
