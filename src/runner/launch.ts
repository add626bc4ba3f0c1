// How a run started in the editor shows itself: its events as terminal text, written to a live
// terminal (the commands, a repeat from the trajectory view, the `belay` task type) or to Test
// Explorer's output. Every entry point starts its run through here.
import { errorMessage } from '../shared/errors.ts';
import type { Agent } from './core/agents.ts';
import { ansi, EventFormatter } from './core/format.ts';
import type { RunResult } from './core/records.ts';
import type { Task } from './core/task.ts';
import type { RunnerService } from './service.ts';
import { OutputTerminal } from './terminal.ts';

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
      const text = formatter.format(event);
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
 * or wait for a key (runs started by a person, who reads the result).
 */
export function runInTerminal(service: RunnerService, task: Task, agent: Agent, options: { closeWhenDone: boolean }): TerminalRun {
  const stop = new AbortController();
  const pty = new OutputTerminal({ closeWhenDone: options.closeWhenDone, onStop: () => stop.abort() });
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
