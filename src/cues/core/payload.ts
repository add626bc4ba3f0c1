import * as z from 'zod';
import { errorMessage } from '../../shared/errors.ts';
import { cancelLabel, confirmLabel } from './labels.ts';

// The payloads of the Human Agent Protocol (../../../shared/specs/hap-cueme.md). Agents write them,
// so they are parsed leniently where the protocol gives defaults and strictly where a wrong
// shape would make an answer impossible; anything else degrades to a plain prompt with a warning.

const label = z.string().trim().min(1);

export const ChoicePayload = z.looseObject({
  type: z.literal('choice'),
  options: z.array(label).min(1),
  allow_multiple: z.boolean().optional(),
});
export type ChoicePayload = z.infer<typeof ChoicePayload>;

export const ConfirmPayload = z.looseObject({
  type: z.literal('confirm'),
  text: z.string().optional(),
  confirm_label: z.string().optional(),
  cancel_label: z.string().optional(),
  /** `pause` marks the request `cueme pause` writes: a "Continue" card with no timeout. */
  variant: z.string().optional(),
});
export type ConfirmPayload = z.infer<typeof ConfirmPayload>;

export const FormField = z.looseObject({
  label,
  kind: z.string().optional(),
  options: z.array(label).optional(),
  allow_multiple: z.boolean().optional(),
});
export type FormField = z.infer<typeof FormField>;

export const FormPayload = z.looseObject({
  type: z.literal('form'),
  fields: z.array(FormField).min(1),
});
export type FormPayload = z.infer<typeof FormPayload>;

export const CuePayload = z.discriminatedUnion('type', [ChoicePayload, ConfirmPayload, FormPayload]);
export type CuePayload = z.infer<typeof CuePayload>;

/** The payload `cueme pause` writes, byte for byte as the public cueme does. */
export const PAUSE_PAYLOAD_JSON =
  '{"type":"confirm","variant":"pause","text":"Paused. Click Continue when you are ready.","confirm_label":"Continue","cancel_label":""}';
export const PAUSE_DEFAULT_PROMPT = 'Paused. Click Continue when you are ready.';

/** What a stored payload means to a responder. */
export type PayloadView =
  | { kind: 'none' }
  | { kind: 'choice'; payload: ChoicePayload }
  | { kind: 'confirm'; payload: ConfirmPayload }
  | { kind: 'pause'; payload: ConfirmPayload }
  | { kind: 'form'; payload: FormPayload }
  /** Not a protocol payload: shown as a plain prompt; `warning` says what was wrong. */
  | { kind: 'invalid'; warning: string };

/** Reads the `payload` column (JSON text or null) without ever throwing. */
export function parsePayload(raw: unknown): PayloadView {
  if (raw === null || raw === undefined) return { kind: 'none' };
  if (typeof raw !== 'string') return { kind: 'invalid', warning: `payload is a ${typeof raw}, not JSON text` };
  if (raw.trim() === '' || raw.trim() === 'null') return { kind: 'none' };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    return { kind: 'invalid', warning: `payload is not valid JSON (${errorMessage(error)})` };
  }
  return viewPayload(value);
}

/** Classifies an already parsed payload value (null means none). */
export function viewPayload(value: unknown): PayloadView {
  if (value === null) return { kind: 'none' };
  const result = CuePayload.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0];
    const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
    return { kind: 'invalid', warning: `payload does not follow the protocol${where}: ${issue?.message ?? 'unknown shape'}` };
  }
  const payload = result.data;
  switch (payload.type) {
    case 'choice':
      return { kind: 'choice', payload };
    case 'confirm':
      return payload.variant === 'pause' ? { kind: 'pause', payload } : { kind: 'confirm', payload };
    case 'form':
      return { kind: 'form', payload };
  }
}

/** One line describing a payload, for listings. */
export function describePayload(view: PayloadView): string {
  switch (view.kind) {
    case 'none':
      return 'text';
    case 'choice':
      return `choice${view.payload.allow_multiple ? ' (multiple)' : ''}: ${view.payload.options.join(' | ')}`;
    case 'confirm':
      return `confirm: ${confirmLabel(view.payload)} / ${cancelLabel(view.payload)}`;
    case 'pause':
      return 'pause: Continue';
    case 'form':
      return `form: ${view.payload.fields.map((f) => f.label + (f.options ? ` [${f.options.join('|')}]` : '')).join(', ')}`;
    case 'invalid':
      return `text (${view.warning})`;
  }
}
