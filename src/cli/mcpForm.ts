// An MCP form elicitation as a HAP cue, and the human's answer back as the elicitation's content.
// The request's flat schema (string, number, integer, boolean, single and multiple choice) becomes
// a `form` payload (or a `confirm` when it asks for nothing); the answer text the panel and
// `belay cues answer` write (`Label: value` lines, `Label: a, b` for several) is read back into
// typed values and checked against the schema, so the server gets content it accepts.
import * as z from 'zod';

const Title = z.string().optional();
const StringProperty = z.looseObject({
  type: z.literal('string'),
  title: Title,
  description: z.string().optional(),
  enum: z.array(z.string()).min(1).optional(),
  enumNames: z.array(z.string()).optional(),
  oneOf: z.array(z.looseObject({ const: z.string(), title: z.string().optional() })).min(1).optional(),
  minLength: z.number().optional(),
  maxLength: z.number().optional(),
  format: z.string().optional(),
  default: z.string().optional(),
});
const NumberProperty = z.looseObject({
  type: z.enum(['number', 'integer']),
  title: Title,
  description: z.string().optional(),
  minimum: z.number().optional(),
  maximum: z.number().optional(),
  default: z.number().optional(),
});
const BooleanProperty = z.looseObject({ type: z.literal('boolean'), title: Title, description: z.string().optional(), default: z.boolean().optional() });
const ArrayProperty = z.looseObject({
  type: z.literal('array'),
  title: Title,
  description: z.string().optional(),
  minItems: z.number().optional(),
  maxItems: z.number().optional(),
  items: z
    .looseObject({
      type: z.literal('string').optional(),
      enum: z.array(z.string()).min(1).optional(),
      anyOf: z.array(z.looseObject({ const: z.string(), title: z.string().optional() })).min(1).optional(),
    })
    .refine((items) => items.enum !== undefined || items.anyOf !== undefined, 'a multiple choice lists its options (enum or anyOf)'),
  default: z.array(z.string()).optional(),
});
const Property = z.union([StringProperty, NumberProperty, BooleanProperty, ArrayProperty]);

/** The params of an `elicitation/create` request in form mode (URL mode is not ours). */
export const ElicitFormParams = z.looseObject({
  mode: z.literal('form').optional(),
  message: z.string(),
  requestedSchema: z.looseObject({
    type: z.literal('object').optional(),
    properties: z.record(z.string(), z.unknown()).optional(),
    required: z.array(z.string()).optional(),
  }),
});

export type FieldKind = 'text' | 'number' | 'integer' | 'boolean' | 'choice' | 'multiple';
export type FieldValue = string | number | boolean | string[];

interface Option {
  value: string;
  label: string;
}

export interface Field {
  /** The property name in the content. */
  key: string;
  /** What the human sees and the answer names (unique in the form). */
  label: string;
  kind: FieldKind;
  required: boolean;
  options?: Option[];
  description?: string;
  default?: FieldValue;
  min?: number;
  max?: number;
  format?: string;
}

export interface ElicitationForm {
  prompt: string;
  /** The cue's payload: a form, or a confirm when nothing is asked but a yes. */
  payloadJson: string;
  fields: Field[];
}

export const YES = 'Yes';
export const NO = 'No';
export const ACCEPT_LABEL = 'Accept';
export const DECLINE_LABEL = 'Decline';

/**
 * Text as one line a label can be (the answer names fields and options by their labels, one per
 * line); `fallback` when nothing visible is left.
 */
function oneLine(text: string | undefined, fallback: string): string {
  return text?.replace(/\s+/g, ' ').trim() || fallback;
}

function optionsOf(values: readonly string[], titles: ReadonlyArray<string | undefined> | undefined): Option[] {
  const shown = (value: string, i: number) => oneLine(titles?.[i], oneLine(value, '(empty)'));
  const labels = values.map(shown);
  // Titles that repeat could not be read back: the values are shown instead, and where those
  // repeat too (once made one line), their position tells them apart.
  const plain = values.map((value) => oneLine(value, '(empty)'));
  const chosen = new Set(labels).size === labels.length ? labels : plain;
  const unique = new Set(chosen).size === chosen.length;
  return values.map((value, i) => ({ value, label: unique ? chosen[i]! : `${i + 1}. ${plain[i]!}` }));
}

function fieldOf(key: string, raw: unknown, required: boolean): Omit<Field, 'label'> & { title: string } | undefined {
  const parsed = Property.safeParse(raw);
  if (!parsed.success) return undefined;
  const p = parsed.data;
  const base = { key, title: oneLine(p.title, oneLine(key, '(unnamed)')), required, ...(p.description?.trim() ? { description: p.description.trim() } : {}) };
  switch (p.type) {
    case 'string': {
      if (p.oneOf) return { ...base, kind: 'choice', options: optionsOf(p.oneOf.map((o) => o.const), p.oneOf.map((o) => o.title)), ...(p.default !== undefined ? { default: p.default } : {}) };
      if (p.enum) return { ...base, kind: 'choice', options: optionsOf(p.enum, p.enumNames), ...(p.default !== undefined ? { default: p.default } : {}) };
      return {
        ...base,
        kind: 'text',
        ...(p.default !== undefined ? { default: p.default } : {}),
        ...(p.minLength !== undefined ? { min: p.minLength } : {}),
        ...(p.maxLength !== undefined ? { max: p.maxLength } : {}),
        ...(p.format ? { format: p.format } : {}),
      };
    }
    case 'number':
    case 'integer':
      return {
        ...base,
        kind: p.type,
        ...(p.default !== undefined ? { default: p.default } : {}),
        ...(p.minimum !== undefined ? { min: p.minimum } : {}),
        ...(p.maximum !== undefined ? { max: p.maximum } : {}),
      };
    case 'boolean':
      return { ...base, kind: 'boolean', options: [{ value: 'true', label: YES }, { value: 'false', label: NO }], ...(p.default !== undefined ? { default: p.default } : {}) };
    case 'array': {
      const items = p.items;
      const options = items.anyOf ? optionsOf(items.anyOf.map((o) => o.const), items.anyOf.map((o) => o.title)) : optionsOf(items.enum ?? [], undefined);
      return {
        ...base,
        kind: 'multiple',
        options,
        ...(p.default !== undefined ? { default: p.default } : {}),
        ...(p.minItems !== undefined ? { min: p.minItems } : {}),
        ...(p.maxItems !== undefined ? { max: p.maxItems } : {}),
      };
    }
  }
}

function describeField(field: Field): string | undefined {
  const notes: string[] = [];
  if (field.kind === 'number') notes.push('a number');
  if (field.kind === 'integer') notes.push('a whole number');
  if (field.format) notes.push(`format ${field.format}`);
  if (field.kind === 'multiple' && (field.min !== undefined || field.max !== undefined)) notes.push(`pick ${rangeText(field.min, field.max)}`);
  else if (field.kind === 'text' && (field.min !== undefined || field.max !== undefined)) notes.push(`${rangeText(field.min, field.max)} characters`);
  else if (field.min !== undefined || field.max !== undefined) notes.push(`${rangeText(field.min, field.max)}`);
  if (field.default !== undefined) notes.push(`default ${displayValue(field, field.default)}`);
  if (!field.description && notes.length === 0) return undefined;
  return `- **${field.label}**${notes.length > 0 ? ` (${notes.join(', ')})` : ''}${field.description ? `: ${field.description}` : ''}`;
}

function rangeText(min: number | undefined, max: number | undefined): string {
  if (min !== undefined && max !== undefined) return min === max ? `exactly ${min}` : `${min} to ${max}`;
  return min !== undefined ? `at least ${min}` : `at most ${max}`;
}

function displayValue(field: Field, value: FieldValue): string {
  const label = (v: string) => field.options?.find((o) => o.value === v)?.label ?? v;
  if (Array.isArray(value)) return value.map(label).join(', ');
  if (typeof value === 'boolean') return value ? YES : NO;
  return label(String(value));
}

/**
 * The cue for an elicitation, or undefined when it is not a form Belay can show (another mode, a
 * property of a type the protocol does not allow): such a request is passed on to the client.
 * `source` names who asks (the wrapped server).
 */
export function elicitationForm(params: unknown, source: string): ElicitationForm | undefined {
  const parsed = ElicitFormParams.safeParse(params);
  if (!parsed.success) return undefined;
  const { message, requestedSchema } = parsed.data;
  // A property the parse had to drop (`__proto__`) could not be answered: not a form for Belay.
  const given = (params as { requestedSchema: { properties?: object } }).requestedSchema.properties;
  if (Object.keys(given ?? {}).length !== Object.keys(requestedSchema.properties ?? {}).length) return undefined;
  const required = new Set(requestedSchema.required ?? []);
  const drafts: Array<Omit<Field, 'label'> & { title: string }> = [];
  for (const [key, raw] of Object.entries(requestedSchema.properties ?? {})) {
    const field = fieldOf(key, raw, required.has(key));
    if (!field) return undefined;
    drafts.push(field);
  }
  const titles = drafts.map((d) => d.title);
  const used = new Set<string>();
  const fields: Field[] = drafts.map(({ title, ...field }) => {
    let label = titles.filter((t) => t === title).length > 1 ? `${title} (${oneLine(field.key, '?')})` : title;
    if (!field.required) label += ' (optional)';
    for (let n = 2, first = label; used.has(label); n++) label = `${first} ${n}`;
    used.add(label);
    return { ...field, label };
  });
  const lines = [message.trim() || 'The MCP server asks for your input.'];
  const details = fields.map(describeField).filter((line): line is string => line !== undefined);
  if (details.length > 0) lines.push(details.join('\n'));
  lines.push(`_Asked by the MCP server ${source} (an elicitation, through Belay)._`);
  const payload =
    fields.length === 0
      ? { type: 'confirm', text: message.trim(), confirm_label: ACCEPT_LABEL, cancel_label: DECLINE_LABEL }
      : {
          type: 'form',
          fields: fields.map((f) => ({
            label: f.label,
            ...(f.options ? {} : { kind: f.kind === 'text' ? 'text' : 'number' }),
            ...(f.options ? { options: f.options.map((o) => o.label) } : {}),
            ...(f.kind === 'multiple' ? { allow_multiple: true } : {}),
          })),
        };
  return { prompt: lines.join('\n\n'), payloadJson: JSON.stringify(payload), fields };
}

export type FormAnswer = { content: Record<string, FieldValue> } | { problems: string[] };

/** Splits `a, b, c` into the options it names (an option may itself hold ", "). */
function splitOptions(text: string, options: readonly Option[]): string[] | undefined {
  const parts = text.split(', ');
  const picked: string[] = [];
  let i = 0;
  while (i < parts.length) {
    let matched = false;
    for (let j = parts.length; j > i; j--) {
      const candidate = parts.slice(i, j).join(', ').trim();
      const option = options.find((o) => o.label === candidate) ?? options.find((o) => o.value === candidate);
      if (option) {
        if (!picked.includes(option.value)) picked.push(option.value);
        i = j;
        matched = true;
        break;
      }
    }
    if (!matched) return undefined;
  }
  return picked;
}

function optionList(field: Field): string {
  return (field.options ?? []).map((o) => `"${o.label}"`).join(', ');
}

const FORMATS: Record<string, (value: string) => boolean> = {
  email: (v) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(v),
  uri: (v) => URL.canParse(v),
  date: (v) => /^\d{4}-\d{2}-\d{2}$/.test(v) && !Number.isNaN(Date.parse(v)),
  'date-time': (v) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(v) && !Number.isNaN(Date.parse(v)),
};

/** One field's text as its typed value, or the problem with it. */
function readValue(field: Field, text: string): { value: FieldValue } | { problem: string } {
  switch (field.kind) {
    case 'text': {
      if (field.min !== undefined && text.length < field.min) return { problem: `${field.label} needs at least ${field.min} characters` };
      if (field.max !== undefined && text.length > field.max) return { problem: `${field.label} takes at most ${field.max} characters` };
      const check = field.format ? FORMATS[field.format] : undefined;
      if (check && !check(text)) return { problem: `${field.label} must be ${field.format === 'email' ? 'an email address' : field.format === 'uri' ? 'a URI' : `a ${field.format} (ISO 8601)`}, got "${text}"` };
      return { value: text };
    }
    case 'number':
    case 'integer': {
      const value = Number(text.replace(/_/g, ''));
      if (text === '' || !Number.isFinite(value)) return { problem: `${field.label} must be a number, got "${text}"` };
      if (field.kind === 'integer' && !Number.isInteger(value)) return { problem: `${field.label} must be a whole number, got "${text}"` };
      if (field.min !== undefined && value < field.min) return { problem: `${field.label} must be at least ${field.min}, got ${value}` };
      if (field.max !== undefined && value > field.max) return { problem: `${field.label} must be at most ${field.max}, got ${value}` };
      return { value };
    }
    case 'boolean': {
      const word = text.toLowerCase();
      if (['yes', 'true', 'y', 'on', '1'].includes(word)) return { value: true };
      if (['no', 'false', 'n', 'off', '0'].includes(word)) return { value: false };
      return { problem: `${field.label} is ${YES} or ${NO}, got "${text}"` };
    }
    case 'choice': {
      const option = field.options?.find((o) => o.label === text) ?? field.options?.find((o) => o.value === text);
      return option ? { value: option.value } : { problem: `${field.label} is one of ${optionList(field)}, got "${text}"` };
    }
    case 'multiple': {
      const picked = splitOptions(text, field.options ?? []);
      if (!picked) return { problem: `${field.label} takes options from ${optionList(field)}, got "${text}"` };
      if (field.min !== undefined && picked.length < field.min) return { problem: `${field.label} needs at least ${field.min} choices` };
      if (field.max !== undefined && picked.length > field.max) return { problem: `${field.label} takes at most ${field.max} choices` };
      // In the order of the options, as the checkboxes show them.
      return { value: (field.options ?? []).map((o) => o.value).filter((v) => picked.includes(v)) };
    }
  }
}

/**
 * The content for an answer text, or what is wrong with it. Lines are `Label: value`; other lines
 * are free text, which answers the one field of a one-field form when that field has no line. A
 * field left out takes its default; a required one without a default is a problem.
 */
export function readFormAnswer(form: ElicitationForm, text: string): FormAnswer {
  const byLongestLabel = [...form.fields].sort((a, b) => b.label.length - a.label.length);
  const raw = new Map<string, string>();
  const free: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const field = byLongestLabel.find((f) => line.startsWith(`${f.label}:`));
    if (field && !raw.has(field.key)) raw.set(field.key, line.slice(field.label.length + 1).trim());
    else if (line.trim()) free.push(line.trim());
  }
  if (form.fields.length === 1 && raw.size === 0 && free.length > 0) raw.set(form.fields[0]!.key, free.join('\n'));
  const content: Record<string, FieldValue> = {};
  // Own properties whatever the key (a property named `__proto__` stays a property).
  const set = (key: string, value: FieldValue) => Object.defineProperty(content, key, { value, enumerable: true, writable: true, configurable: true });
  const problems: string[] = [];
  for (const field of form.fields) {
    const given = raw.get(field.key);
    if (given === undefined || given === '') {
      if (field.default !== undefined) set(field.key, field.default);
      else if (field.required) problems.push(`${field.label} is required`);
      continue;
    }
    const read = readValue(field, given);
    if ('problem' in read) problems.push(read.problem);
    else set(field.key, read.value);
  }
  return problems.length > 0 ? { problems } : { content };
}
