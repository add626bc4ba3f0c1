// What every installed CLI's event reader does to a line before it reads it, and to a text it keeps:
// a line is a JSON object or nothing (never a throw), and no kept text is unbounded.

/** The most characters kept of one text, command or output of an event. */
export const MAX_FIELD_CHARS = 64_000;

/** `text` cut to `max` characters and an ellipsis. */
export function clip(text: string, max = MAX_FIELD_CHARS): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** The line as a JSON object; undefined for anything else (not JSON, an array, longer than `maxChars`). */
export function jsonObject(line: string, maxChars = Number.POSITIVE_INFINITY): Record<string, unknown> | undefined {
  if (line.length > maxChars || !line.trimStart().startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(line);
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A string field, or ''. */
export function str(value: unknown): string {
  return typeof value === 'string' ? value : '';
}
