// The live agent terminal: a pseudoterminal (src/ui/pseudoterminal.ts) that shows a run's events
// as they come and closes with the run's exit code. Ctrl+C (or closing the terminal) stops the
// run. Terminals are created through a factory that tests replace to read what was written.
// Every entry point starts its run through here: in a terminal (the commands, a repeat from the trajectory view, the `belay` task type) or, for Test
// Explorer, as the same text without a terminal. The media lines of chat terminals are links.
import * as path from 'node:path';
import * as vscode from 'vscode';
import { errorMessage } from '../shared/errors.ts';
import { BelayPseudoterminal, TerminalOpener } from '../ui/pseudoterminal.ts';
import type { Agent } from './core/agents/agents.ts';
import { ansi, EventFormatter } from './core/records/format.ts';
import { editorFix } from './core/protocols/mismatch.ts';
import type { RunResult } from './core/records/records.ts';
import type { Task } from './core/tasks/task.ts';
import type { RunnerService } from './service.ts';

/**
 * Makes the runner's terminals (runs and chats) and knows which ones are chats. Belay's
 * integration tests replace `create` (TerminalOpener's) to read the pseudoterminals instead.
 */
export class Terminals extends TerminalOpener {
  readonly #chats = new WeakSet<vscode.Terminal>();
  /** The last terminal of each task, which its next run (with any agent) reuses once it is idle. */
  readonly #runs = new Map<string, { terminal: vscode.Terminal; pty: OutputTerminal }>();

  openRun(name: string, pty: BelayPseudoterminal): vscode.Terminal | undefined {
    return this.open(name, pty, new vscode.ThemeIcon('beaker'));
  }

  /**
   * A terminal for a new run of `key` (a task): the one its last run used when that run has ended
   * and the terminal is still open, else a new one. A running terminal is never taken over: a
   * second run at the same time gets its own (and becomes the one the next run reuses). Each run
   * starts below a rule naming `heading` (the agent) and the time.
   */
  runTerminal(key: string, name: string, heading: string): OutputTerminal {
    const last = this.#runs.get(key);
    if (last?.pty.idle) {
      last.pty.restart(heading);
      last.terminal.show(true);
      return last.pty;
    }
    const pty = new OutputTerminal({ closeWhenDone: false });
    pty.write(`${ansi.dim(`──────── ${heading} · ${new Date().toLocaleTimeString()} ────────`)}\n`);
    const terminal = this.openRun(name, pty);
    if (terminal) this.#runs.set(key, { terminal, pty });
    return pty;
  }

  openChat(name: string, pty: BelayPseudoterminal): vscode.Terminal | undefined {
    const terminal = this.open(name, pty, new vscode.ThemeIcon('comment-discussion'));
    if (terminal) this.#chats.add(terminal);
    return terminal;
  }

  isChat(terminal: vscode.Terminal): boolean {
    return this.#chats.has(terminal);
  }
}

/** A chat's media lines start with this; the link provider makes the path after it clickable. */
export const MEDIA_PREFIX = 'media: ';

/** Makes the media lines of chat terminals open their file. */
export function mediaLinkProvider(isChat: (terminal: vscode.Terminal) => boolean): vscode.TerminalLinkProvider<vscode.TerminalLink & { file: string }> {
  return {
    provideTerminalLinks(context) {
      if (!isChat(context.terminal) || !context.line.startsWith(MEDIA_PREFIX)) return [];
      const file = context.line.slice(MEDIA_PREFIX.length).trim();
      if (!path.isAbsolute(file)) return [];
      return [{ startIndex: MEDIA_PREFIX.length, length: file.length, tooltip: 'Open the media file', file }];
    },
    handleTerminalLink(link) {
      void vscode.commands.executeCommand('vscode.open', vscode.Uri.file(link.file));
    },
  };
}

export interface OutputTerminalOptions {
  /** Called once when the person asks to stop (Ctrl+C, or closing the terminal while running); `onStop()` sets it per run. */
  onStop?: () => void;
  /** Close at once with the exit code when done (tasks), or wait for a key (interactive runs). */
  closeWhenDone: boolean;
}

export class OutputTerminal extends BelayPseudoterminal {
  readonly #options: OutputTerminalOptions;
  #onStop: (() => void) | undefined;
  /** The exit code of the run shown now, once it has ended. */
  #exitCode: number | undefined;
  #stopAsked = false;

  constructor(options: OutputTerminalOptions) {
    // No transcript: the run folder keeps everything, and tests read the pseudoterminal itself.
    super();
    this.#options = options;
    this.#onStop = options.onStop;
  }

  /** Its run has ended and the terminal is still open: a new run may use it. */
  get idle(): boolean {
    return this.#exitCode !== undefined && !this.closed;
  }

  /** What stops the run shown now. */
  onStop(stop: () => void): void {
    this.#onStop = stop;
  }

  /** Starts showing a new run after the one that ended, below a rule naming `heading` (the agent). */
  restart(heading: string): void {
    if (!this.idle) throw new Error('the terminal is still running a task or was closed');
    this.#exitCode = undefined;
    this.#stopAsked = false;
    this.#onStop = undefined;
    this.write(`\n${ansi.dim(`──────── run again · ${heading} · ${new Date().toLocaleTimeString()} ────────`)}\n\n`);
  }

  protected override onClosedByPerson(): void {
    // The person closed the terminal: a run still going is stopped, not left behind unseen.
    if (this.#exitCode === undefined) this.#stop();
  }

  override handleInput(data: string): void {
    if (this.#exitCode !== undefined) {
      this.exit(this.#exitCode);
      return;
    }
    if (data === '\x03') this.#stop();
  }

  #stop(): void {
    if (this.#stopAsked) return;
    this.#stopAsked = true;
    this.write('\n^C stopping the run and everything it started…\n');
    this.#onStop?.();
  }

  /** Marks the end: closes now (tasks) or after the next key press. */
  end(exitCode: number): void {
    if (this.#exitCode !== undefined) return;
    this.#exitCode = exitCode;
    if (this.#options.closeWhenDone) this.exit(exitCode);
    else this.write('\n\x1b[2mPress any key to close this terminal.\x1b[0m\n');
  }
}

export interface OutputOptions {
  signal?: AbortSignal;
  /** Receives the run as terminal text (ANSI colours, `\n` newlines). */
  write(text: string): void;
}

/** Runs `agent` on `task`, writing its events as text; resolves with the result. */
export function runWithOutput(service: RunnerService, task: Task, agent: Agent, options: OutputOptions): Promise<RunResult> {
  const formatter = new EventFormatter();
  return service.start(task, agent, {
    signal: options.signal,
    onEvent: (event) => {
      // A protocol mismatch is fixed in the agent's setting here, not with a flag of `belay run`.
      const shown = event.type === 'run-ended' && event.result.error ? { ...event, result: { ...event.result, error: editorFix(event.result.error, agent.name) } } : event;
      const text = formatter.format(shown);
      if (text !== '') options.write(text);
    },
  });
}

export interface TerminalRun {
  /** Give it to VS Code as a terminal: it holds what the run writes until it is opened. */
  pty: OutputTerminal;
  /** Rejects when the run could not start (the reason is also written in the terminal). */
  result: Promise<RunResult>;
}

/**
 * Starts a run shown in a live terminal. Ctrl+C or closing the terminal stops it; it ends with
 * exit code 0 (passed), 1 (failed) or 2 (could not run). `closeWhenDone`: close at once (tasks)
 * or wait for a key (runs started by a person, who reads the result). `pty`: a terminal to show
 * it in (Terminals.runTerminal's), else a new one.
 */
export function runInTerminal(service: RunnerService, task: Task, agent: Agent, options: { closeWhenDone: boolean; pty?: OutputTerminal }): TerminalRun {
  const stop = new AbortController();
  const pty = options.pty ?? new OutputTerminal({ closeWhenDone: options.closeWhenDone });
  pty.onStop(() => stop.abort());
  const result = runWithOutput(service, task, agent, { signal: stop.signal, write: (text) => pty.write(text) }).then(
    (done) => {
      pty.end(done.passed ? 0 : 1);
      return done;
    },
    (error: unknown) => {
      endWithError(pty, error);
      throw error;
    },
  );
  return { pty, result };
}

/** A terminal that only says why a run could not start, and ends with exit code 2. */
export function failedTerminal(reason: string): OutputTerminal {
  const pty = new OutputTerminal({ closeWhenDone: true });
  endWithError(pty, reason);
  return pty;
}

function endWithError(pty: OutputTerminal, error: unknown): void {
  pty.write(`${ansi.red(`Belay: ${errorMessage(error)}`)}\n`);
  pty.end(2);
}
