// A long-lived agent process: its own process group (killed whole at the end, on timeout and
// on abort), stdout read as lines of bounded length, stdout and stderr copied to capped log
// files, and only a bounded tail of stderr kept in memory.
import { BoundedText, type RunningChild } from '../../../shared/process.ts';
import type { BackendSession, CommandSpec } from '../backends/backend.ts';
import { CappedLog } from '../records/logs.ts';

export interface AgentProcessOptions {
  /** Where the agent runs, and what it runs there. */
  session: Pick<BackendSession, 'spawn'>;
  command: CommandSpec;
  /** 'pipe' keeps stdin open for requests; 'ignore' gives the agent an empty stdin. */
  stdin: 'pipe' | 'ignore';
  stdoutLog: string;
  stderrLog: string;
  /** Each log keeps its head and tail within this. */
  maxLogBytes: number;
  /** Longer stdout lines are cut here (the log keeps them whole). */
  maxLineChars?: number;
  /** Unread lines kept; older ones are dropped beyond this. */
  maxQueuedLines?: number;
  onStderr?: (chunk: string) => void;
  onStdout?: (chunk: string) => void;
}

/** Characters of unread stdout lines kept at most (a flooding agent is read, not hoarded). */
const MAX_QUEUED_CHARS = 16_000_000;

export type LineResult =
  | { kind: 'line'; text: string; truncated: boolean }
  | { kind: 'eof' }
  | { kind: 'timeout' }
  | { kind: 'aborted' };

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  spawnError?: Error;
}

export class AgentProcess {
  readonly stderrTail = new BoundedText(0, 8000);
  /** Resolves when the process has exited and its output is read (or could not start). */
  readonly exited: Promise<ExitInfo>;
  private readonly child: RunningChild;
  private readonly lines: { text: string; truncated: boolean }[] = [];
  private partial = '';
  private partialTruncated = false;
  private ended = false;
  private wake: (() => void) | undefined;
  private readonly maxLine: number;
  private readonly maxQueued: number;
  private queuedChars = 0;
  private exitInfo: ExitInfo | undefined;

  constructor(options: AgentProcessOptions) {
    this.maxLine = options.maxLineChars ?? 1_000_000;
    this.maxQueued = options.maxQueuedLines ?? 1000;
    const stdoutLog = new CappedLog(options.stdoutLog, options.maxLogBytes, 'a');
    const stderrLog = new CappedLog(options.stderrLog, options.maxLogBytes, 'a');
    this.child = options.session.spawn({
      ...options.command,
      stdin: options.stdin,
      onStdout: (chunk) => {
        stdoutLog.write(chunk);
        options.onStdout?.(chunk);
        this.takeStdout(chunk);
      },
      onStderr: (chunk) => {
        stderrLog.write(chunk);
        this.stderrTail.append(chunk);
        options.onStderr?.(chunk);
      },
    });
    this.exited = this.child.ended.then(({ exitCode, signal, spawnError }) => {
      const info: ExitInfo = { code: exitCode, signal, ...(spawnError ? { spawnError } : {}) };
      this.exitInfo = info;
      this.endLines();
      stdoutLog.close();
      stderrLog.close();
      return info;
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Set once the process has ended. */
  get exit(): ExitInfo | undefined {
    return this.exitInfo;
  }

  send(line: string): void {
    if (!this.exitInfo) this.child.write(line.endsWith('\n') ? line : `${line}\n`);
  }

  closeStdin(): void {
    this.child.endInput();
  }

  /** The next stdout line; waits at most `timeoutMs`. */
  nextLine(timeoutMs: number, signal?: AbortSignal): Promise<LineResult> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const finish = (result: LineResult) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.wake = undefined;
        resolve(result);
      };
      const check = () => {
        const line = this.lines.shift();
        if (line) this.queuedChars -= line.text.length;
        if (line) finish({ kind: 'line', ...line });
        else if (this.ended) finish({ kind: 'eof' });
        else return false;
        return true;
      };
      const onAbort = () => finish({ kind: 'aborted' });
      if (signal?.aborted) return finish({ kind: 'aborted' });
      if (check()) return;
      timer = setTimeout(() => finish({ kind: 'timeout' }), timeoutMs);
      signal?.addEventListener('abort', onAbort);
      this.wake = () => void check();
    });
  }

  /** Kills the whole process group and waits until the process is gone. */
  async kill(): Promise<ExitInfo> {
    this.child.kill();
    return this.exited;
  }

  private takeStdout(chunk: string): void {
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf('\n', start);
      const piece = chunk.slice(start, newline < 0 ? undefined : newline);
      const room = this.maxLine - this.partial.length;
      if (piece.length > room) this.partialTruncated = true;
      if (room > 0) this.partial += piece.slice(0, room);
      if (newline < 0) break;
      this.pushLine();
      start = newline + 1;
    }
  }

  private pushLine(): void {
    const text = this.partial.endsWith('\r') ? this.partial.slice(0, -1) : this.partial;
    this.lines.push({ text, truncated: this.partialTruncated });
    this.queuedChars += text.length;
    // Unread lines are bounded in number and in size: the oldest go first.
    while (this.lines.length > this.maxQueued || (this.queuedChars > MAX_QUEUED_CHARS && this.lines.length > 1)) {
      this.queuedChars -= this.lines.shift()!.text.length;
    }
    this.partial = '';
    this.partialTruncated = false;
    this.wake?.();
  }

  private endLines(): void {
    if (this.partial !== '' || this.partialTruncated) this.pushLine();
    this.ended = true;
    this.wake?.();
  }
}

/** How an agent's process ended, in words: "with code 1", "on SIGKILL", "(it could not start: …)". */
export function describeExit(exit: ExitInfo | undefined): string {
  if (!exit) return 'somehow';
  if (exit.spawnError) return `(it could not start: ${exit.spawnError.message})`;
  return exit.code !== null ? `with code ${exit.code}` : `on ${exit.signal}`;
}

/** The end of what an agent printed on stderr, as a clause for a one-line notice ('' when nothing). */
export function stderrClause(agent: AgentProcess): string {
  const text = agent.stderrTail.text('…').trim().slice(-300);
  return text ? `; its stderr ends with: ${text}` : '';
}
