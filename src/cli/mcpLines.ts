// MCP's stdio framing: newline-delimited JSON-RPC. Splits a stream into lines and reads a line as
// a message, for `belay mcp` (which routes each request to its era) and `--wrap` (which looks
// into the messages it passes on).
import * as z from 'zod';

/** A line longer than this (no newline in 64 Mi characters) is no MCP message: the reader stops. */
export const MAX_LINE_CHARS = 64 * 1024 * 1024;

export const RequestId = z.union([z.string(), z.number()]);
export type RequestId = z.infer<typeof RequestId>;
/** The parts of a message Belay looks into; anything else is passed on without being parsed further. */
export const Message = z.looseObject({
  jsonrpc: z.literal('2.0'),
  id: RequestId.optional(),
  method: z.string().optional(),
  params: z.unknown().optional(),
  result: z.unknown().optional(),
  error: z.unknown().optional(),
});
export type Message = z.infer<typeof Message>;

/** Splits a stream of text into lines (without their `\n`), refusing one that never ends. */
export class LineReader {
  #buffer = '';
  readonly #onLine: (line: string) => void;
  readonly #onOverflow: () => void;

  constructor(onLine: (line: string) => void, onOverflow: () => void) {
    this.#onLine = onLine;
    this.#onOverflow = onOverflow;
  }

  push(chunk: string): void {
    this.#buffer += chunk;
    let at: number;
    while ((at = this.#buffer.indexOf('\n')) >= 0) {
      const line = this.#buffer.slice(0, at);
      this.#buffer = this.#buffer.slice(at + 1);
      this.#onLine(line);
    }
    if (this.#buffer.length > MAX_LINE_CHARS) {
      this.#buffer = '';
      this.#onOverflow();
    }
  }

  /** What is left without a newline at the end of the stream. */
  end(): void {
    const rest = this.#buffer;
    this.#buffer = '';
    if (rest.trim() !== '') this.#onLine(rest);
  }
}

/** A line as a JSON-RPC message, or undefined when it is none. */
export function parseLine(line: string): Message | undefined {
  try {
    const parsed = Message.safeParse(JSON.parse(line));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
