// The one pseudoterminal of Belay's terminals (a run's output, a micro-agent chat, a RUN_COMMAND
// block's command): what it writes is held until VS Code opens it, `\n` becomes `\r\n`, and it
// closes with an exit code (src/shared/terminalOutput.ts, which holds the logic without the
// editor). Terminals are opened through a factory that Belay's integration tests replace to read
// what is written, and each opener disposes, with itself, the terminals it opened that are still
// there.
import * as vscode from 'vscode';
import { TerminalOutput } from '../shared/terminalOutput.ts';

export interface TerminalFactory {
  (options: { name: string; pty: vscode.Pseudoterminal; iconPath?: vscode.ThemeIcon }): vscode.Terminal | undefined;
}

/** VS Code's terminal panel: shown without taking the focus, not restored after a reload. */
export const showTerminal: TerminalFactory = ({ name, pty, iconPath }) => {
  const terminal = vscode.window.createTerminal({ name, pty, iconPath, isTransient: true });
  terminal.show(true);
  return terminal;
};

/**
 * A pseudoterminal that writes text and ends with an exit code. Subclasses say what opening it,
 * a key press and the person closing it do; what they write before VS Code opens it is held.
 */
export class BelayPseudoterminal implements vscode.Pseudoterminal, vscode.Disposable {
  readonly #written = new vscode.EventEmitter<string>();
  readonly #closed = new vscode.EventEmitter<number | void>();
  readonly onDidWrite = this.#written.event;
  readonly onDidClose = this.#closed.event;
  readonly #output: TerminalOutput;
  readonly #ended: Array<() => void> = [];

  /** `transcriptLimit`: how many characters of what is written `transcript` keeps (0: none). */
  constructor(transcriptLimit = 0) {
    this.#output = new TerminalOutput(
      {
        write: (text) => this.#written.fire(text),
        close: (exitCode) => {
          this.#closed.fire(exitCode);
          this.#end();
        },
      },
      transcriptLimit,
    );
  }

  /** VS Code has opened it: what is written shows at once. */
  get opened(): boolean {
    return this.#output.opened;
  }
  get transcript(): string {
    return this.#output.transcript;
  }
  /** It has closed (with `exit`) or the person closed it. */
  get closed(): boolean {
    return this.#output.closed;
  }

  write(text: string): void {
    this.#output.write(text);
  }

  /** Closes the terminal with `exitCode`: now when it is open, else as soon as VS Code opens it. */
  exit(exitCode: number): void {
    this.#output.exit(exitCode);
  }

  /** Calls `listener` once, when the terminal has closed either way. */
  whenEnded(listener: () => void): void {
    if (this.closed) listener();
    else this.#ended.push(listener);
  }

  open(): void {
    this.#output.open();
    if (!this.closed) this.onOpen();
  }

  close(): void {
    if (this.closed) return;
    this.#output.closedByPerson();
    this.onClosedByPerson();
    this.#end();
  }

  handleInput(_data: string): void {}

  /** VS Code has opened the terminal (what was held is shown). */
  protected onOpen(): void {}

  /** The person closed the terminal (it closed by `exit` otherwise). */
  protected onClosedByPerson(): void {}

  #end(): void {
    for (const listener of this.#ended.splice(0)) listener();
  }

  dispose(): void {
    this.#written.dispose();
    this.#closed.dispose();
  }
}

/**
 * Opens terminals through `create` (tests replace it to read the pseudoterminals instead) and,
 * when it is disposed (with its feature), disposes those it opened that are still there.
 */
export class TerminalOpener implements vscode.Disposable {
  create: TerminalFactory = showTerminal;
  readonly #open = new Map<BelayPseudoterminal, vscode.Terminal | undefined>();

  open(name: string, pty: BelayPseudoterminal, iconPath?: vscode.ThemeIcon): vscode.Terminal | undefined {
    const terminal = this.create({ name, pty, iconPath });
    this.#open.set(pty, terminal);
    pty.whenEnded(() => {
      this.#open.delete(pty);
      pty.dispose();
    });
    return terminal;
  }

  dispose(): void {
    const open = [...this.#open];
    this.#open.clear();
    for (const [pty] of open) pty.dispose();
    for (const [, terminal] of open) terminal?.dispose();
  }
}
