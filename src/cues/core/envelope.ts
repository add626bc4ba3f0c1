// The stdin envelope of `cueme cue <agent_id> -` and `cueme pause <agent_id> -`: tag blocks,
// each tag alone on its line, only whitespace outside the blocks.
import { errorMessage } from '../../shared/errors.ts';

export interface Envelope {
  prompt: string;
  /** The payload re-serialised compactly, or null when absent, blank or `null`. */
  payloadJson: string | null;
  /** The parsed payload (an object) or null. */
  payload: Record<string, unknown> | null;
}

/** A malformed envelope: the message says what and where; cueme exits 2. */
export class EnvelopeError extends Error {
  override name = 'EnvelopeError';
}

const TAGS = ['cueme_prompt', 'cueme_payload'] as const;
type Tag = (typeof TAGS)[number];

const EXAMPLE = 'expected:\n<cueme_prompt>\nyour prompt\n</cueme_prompt>\n\n<cueme_payload>\n{"type":"choice","options":["Continue","Stop"]}\n</cueme_payload>';

/**
 * Parses the envelope. `allowPayload` is false for `pause`, whose envelope holds a prompt only.
 */
export function parseEnvelope(input: string, options: { allowPayload: boolean } = { allowPayload: true }): Envelope {
  const trimmed = input.trim();
  if (trimmed === '') throw new EnvelopeError(`stdin is empty; ${EXAMPLE}`);
  if (trimmed.startsWith('{')) throw new EnvelopeError(`the legacy JSON envelope is not supported; use tag blocks. ${EXAMPLE}`);
  const lines = input.replace(/^\uFEFF/, '').split(/\r?\n/);
  const blocks = new Map<Tag, string>();
  let open: { tag: Tag; line: number; body: string[] } | undefined;
  lines.forEach((line, index) => {
    const lineNo = index + 1;
    const bare = line.trim();
    if (open) {
      if (bare === `</${open.tag}>`) {
        blocks.set(open.tag, open.body.join('\n'));
        open = undefined;
      } else {
        open.body.push(line);
      }
      return;
    }
    if (bare === '') return;
    const tag = TAGS.find((t) => bare === `<${t}>`);
    if (!tag) {
      const closing = TAGS.find((t) => bare === `</${t}>`);
      if (closing) throw new EnvelopeError(`line ${lineNo}: </${closing}> closes a block that was not opened`);
      const inline = TAGS.find((t) => bare.includes(`<${t}>`) || bare.includes(`</${t}>`));
      if (inline) throw new EnvelopeError(`line ${lineNo}: the <${inline}> tags must be alone on their lines`);
      throw new EnvelopeError(`line ${lineNo}: only whitespace is allowed outside the tag blocks, found ${JSON.stringify(bare.slice(0, 40))}`);
    }
    if (tag === 'cueme_payload' && !options.allowPayload) throw new EnvelopeError(`line ${lineNo}: pause takes a <cueme_prompt> block only, not <cueme_payload>`);
    if (blocks.has(tag)) throw new EnvelopeError(`line ${lineNo}: a second <${tag}> block`);
    open = { tag, line: lineNo, body: [] };
  });
  if (open) throw new EnvelopeError(`line ${open.line}: <${open.tag}> is never closed by a line </${open.tag}>`);
  const prompt = blocks.get('cueme_prompt');
  if (prompt === undefined) throw new EnvelopeError(`the <cueme_prompt> block is missing; ${EXAMPLE}`);
  if (prompt.trim() === '') throw new EnvelopeError('the <cueme_prompt> block is empty: the prompt must say something');
  const rawPayload = blocks.get('cueme_payload');
  let payload: Record<string, unknown> | null = null;
  if (rawPayload !== undefined && rawPayload.trim() !== '') {
    let value: unknown;
    try {
      value = JSON.parse(rawPayload);
    } catch (error) {
      throw new EnvelopeError(`the <cueme_payload> block is not valid JSON: ${errorMessage(error)}`);
    }
    if (value !== null && (typeof value !== 'object' || Array.isArray(value))) {
      throw new EnvelopeError(`the <cueme_payload> block must hold a JSON object or null, not ${Array.isArray(value) ? 'an array' : typeof value}`);
    }
    payload = value as Record<string, unknown> | null;
  }
  return { prompt: prompt.trim(), payload, payloadJson: payload === null ? null : JSON.stringify(payload) };
}
