// What a pseudoterminal shows, without the editor (src/ui/pseudoterminal.ts gives it to VS Code):
// writes are held until the terminal is opened, `\n` becomes the `\r\n` a terminal needs, a
// transcript is kept up to a limit (what tests read), and the exit code closes the terminal, at
// once when it is open or as soon as it opens.

/** Converts bare `\n` to `\r\n`, as a pseudoterminal needs. */
export function toTerminalNewlines(text: string): string {
  return text.replace(/\r?\n/g, '\r\n');
}

/** Where the output goes once the terminal is open. */
export interface TerminalSink {
  write(text: string): void;
  close(exitCode: number): void;
}

export class TerminalOutput {
  readonly #sink: TerminalSink;
  readonly #transcriptLimit: number;
  #held: string[] = [];
  #opened = false;
  #transcript = '';
  #exitCode: number | undefined;
  #closed = false;

  /** `transcriptLimit`: how many characters of what is written to keep (0: none). */
  constructor(sink: TerminalSink, transcriptLimit = 0) {
    this.#sink = sink;
    this.#transcriptLimit = transcriptLimit;
  }

  get opened(): boolean {
    return this.#opened;
  }
  get transcript(): string {
    return this.#transcript;
  }
  /** Set by `exit`: the terminal closes (or has closed) with it. */
  get exitCode(): number | undefined {
    return this.#exitCode;
  }
  /** Closed: by `exit` once open, or by the person (`closedByPerson`). Nothing more is shown. */
  get closed(): boolean {
    return this.#closed;
  }

  /** The terminal is open: what was held is written now, and an exit asked for before closes it. */
  open(): void {
    if (this.#opened) return;
    this.#opened = true;
    for (const text of this.#held.splice(0)) this.#sink.write(text);
    if (this.#exitCode !== undefined) this.#close();
  }

  /** Shows `text` (`\n` newlines); once closed, it only reaches the transcript. */
  write(text: string): void {
    if (text === '') return;
    if (this.#transcript.length < this.#transcriptLimit) this.#transcript += text;
    if (this.#closed) return;
    const out = toTerminalNewlines(text);
    if (this.#opened) this.#sink.write(out);
    else this.#held.push(out);
  }

  /** Closes the terminal with `exitCode`, now when it is open, else as soon as it opens; once. */
  exit(exitCode: number): void {
    if (this.#exitCode !== undefined || this.#closed) return;
    this.#exitCode = exitCode;
    if (this.#opened) this.#close();
  }

  /** The person closed the terminal: it is gone, with nothing more to say. */
  closedByPerson(): void {
    this.#closed = true;
    this.#held = [];
  }

  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#sink.close(this.#exitCode ?? 0);
  }
}
