import { spawn, type SpawnOptions } from 'node:child_process';

/** Keeps at most `limit` characters of a stream in memory: the head, and where asked, the tail. */
export class BoundedText {
  private head = '';
  private tail = '';
  private total = 0;
  private readonly limit: number;
  private readonly keepTail: number;

  constructor(limit: number, keepTail = 0) {
    this.limit = limit;
    this.keepTail = keepTail;
  }

  append(chunk: string): void {
    this.total += chunk.length;
    const room = this.limit - this.head.length;
    if (room > 0) {
      this.head += chunk.slice(0, room);
      chunk = chunk.slice(room);
    }
    if (chunk.length > 0 && this.keepTail > 0) {
      this.tail = (this.tail + chunk).slice(-this.keepTail);
    }
  }

  get length(): number {
    return this.total;
  }

  get truncated(): boolean {
    return this.total > this.head.length + this.tail.length;
  }

  /** The kept text; when something was dropped, `marker` stands where it was. */
  text(marker: string): string {
    if (!this.truncated) return this.head + this.tail;
    return this.keepTail > 0 ? `${this.head}\n${marker}\n${this.tail}` : `${this.head}\n${marker}`;
  }
}

export interface BoundedRunOptions {
  /** Program and arguments; use `['/bin/sh', '-c', script]` for a shell command. */
  argv: readonly [string, ...string[]];
  cwd: string;
  env?: NodeJS.ProcessEnv;
  /** Written to the child's stdin, which is then closed; stdin is empty otherwise. */
  input?: string;
  timeoutMs: number;
  /** Characters of stdout and of stderr each kept in memory. */
  maxOutputChars: number;
  /** Characters of the end of each stream kept besides the head (0: head only). */
  keepTailChars?: number;
  onStdout?: (chunk: string) => void;
  onStderr?: (chunk: string) => void;
  signal?: AbortSignal;
}

export interface BoundedRunResult {
  /** Exit code, or null when the process was ended by a signal. */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: BoundedText;
  stderr: BoundedText;
  timedOut: boolean;
  aborted: boolean;
  durationMs: number;
  /** Set when the program could not be started at all. */
  spawnError?: Error;
}

/** Sends a signal to a whole process group; a group that is gone already is not an error. */
export function killProcessGroup(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: every member has exited already.
  }
}

/**
 * Runs a program in its own process group with a timeout and bounded memory.
 * When the timeout passes, the signal aborts, or the program exits while members of its group
 * (background children) still hold the pipes, the whole group is killed, so the call always ends.
 */
export function runBounded(options: BoundedRunOptions): Promise<BoundedRunResult> {
  const started = performance.now();
  const stdout = new BoundedText(options.maxOutputChars, options.keepTailChars ?? 0);
  const stderr = new BoundedText(options.maxOutputChars, options.keepTailChars ?? 0);
  const [program, ...args] = options.argv;
  const spawnOptions: SpawnOptions = {
    cwd: options.cwd,
    env: options.env ?? process.env,
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  };
  return new Promise((resolve) => {
    let timedOut = false;
    let aborted = false;
    let exitCode: number | null = null;
    let exitSignal: NodeJS.Signals | null = null;
    let settled = false;
    const child = spawn(program, args, spawnOptions);
    const finish = (spawnError?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      const result: BoundedRunResult = {
        exitCode,
        signal: exitSignal,
        stdout,
        stderr,
        timedOut,
        aborted,
        durationMs: performance.now() - started,
      };
      if (spawnError) result.spawnError = spawnError;
      resolve(result);
    };
    const killGroup = () => {
      if (child.pid !== undefined) killProcessGroup(child.pid);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, options.timeoutMs);
    const onAbort = () => {
      aborted = true;
      killGroup();
    };
    if (options.signal?.aborted) onAbort();
    options.signal?.addEventListener('abort', onAbort);

    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout.append(chunk);
      options.onStdout?.(chunk);
    });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr.append(chunk);
      options.onStderr?.(chunk);
    });
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(options.input ?? '');
    child.on('error', (error) => {
      exitCode = null;
      finish(error);
    });
    child.on('exit', (code, signal) => {
      exitCode = code;
      exitSignal = signal;
      // Background members of the group may still hold stdout open: end them so 'close' comes.
      killGroup();
    });
    child.on('close', () => finish());
  });
}
