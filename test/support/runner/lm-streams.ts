// Helpers for the LM translators' tests: a writer's whole stream for given parts, read back as
// events (name and JSON), as an agent's SSE parser would.
import type { LmOutPart, LmStop, LmStreamWriter, LmUsage } from '../../../src/runner/core/gateway/lmModel.ts';
import { SseReader } from '../../../src/runner/core/gateway/sse.ts';

export interface ReadEvent {
  event: string | undefined;
  /** The data's JSON ({} for `[DONE]`, marked by `done`). */
  json: Record<string, unknown>;
  done?: true;
}

/** The SSE text as events. */
export function readEvents(text: string): ReadEvent[] {
  const reader = new SseReader();
  return [...reader.push(Buffer.from(text)), ...reader.end()].map((e) => (e.data === '[DONE]' ? { event: e.event, json: {}, done: true as const } : { event: e.event, json: JSON.parse(e.data) as Record<string, unknown> }));
}

/** Everything a writer sends for these parts, read back. */
export function streamed(writer: LmStreamWriter, parts: LmOutPart[], usage: LmUsage, stop: LmStop): ReadEvent[] {
  return readEvents(writer.start() + parts.map((part) => writer.part(part)).join('') + writer.end(usage, stop));
}
