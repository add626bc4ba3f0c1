import { spawn } from 'node:child_process';

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

export interface PreparedProcessOptions {
  /** Program and arguments; use `['/bin/sh', '-c', script]` for a shell command. */
  argv: readonly [string, ...string[]];
  cwd: string;
  env?: NodeJS.ProcessEnv;
  /** Characters of stdout and of stderr each kept in memory. */
  maxOutputChars: number;
  /** Characters of the end of each stream kept besides the head (0: head only). */
  keepTailChars?: number;
}

export interface StartOptions {
  /** Written to the child's stdin, which is then closed; stdin is empty otherwise. */
  input?: string;
  /** Counted from `start`, not from the spawn. */
  timeoutMs: number;
  onStdout?: (chunk: string) => void;
  onStderr?: (chunk: string) => void;
  signal?: AbortSignal;
}

export type BoundedRunOptions = PreparedProcessOptions & StartOptions;

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

/** A process spawned ahead of its input (e.g. a shell started while an agent is still thinking). */
export interface PreparedProcess {
  /** Gives the process its input and waits for it; the timeout starts now. */
  start(options: StartOptions): Promise<BoundedRunResult>;
  /** Kills a process that will not be started. */
  discard(): void;
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
 * Spawns a program in its own process group, its output bounded in memory, and holds it until
 * `start` hands it its input. When the timeout passes, the signal aborts, or the program exits
 * while members of its group (background children) still hold the pipes, the whole group is
 * killed, so `start` always ends.
 */
export function prepareBounded(options: PreparedProcessOptions): PreparedProcess {
  const stdout = new BoundedText(options.maxOutputChars, options.keepTailChars ?? 0);
  const stderr = new BoundedText(options.maxOutputChars, options.keepTailChars ?? 0);
  const [program, ...args] = options.argv;
  const child = spawn(program, args, { cwd: options.cwd, env: options.env ?? process.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  const killGroup = () => {
    if (child.pid !== undefined) killProcessGroup(child.pid);
  };
  let onStdout: ((chunk: string) => void) | undefined;
  let onStderr: ((chunk: string) => void) | undefined;
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    stdout.append(chunk);
    onStdout?.(chunk);
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr.append(chunk);
    onStderr?.(chunk);
  });
  child.stdin!.on('error', () => undefined);
  let exitCode: number | null = null;
  let exitSignal: NodeJS.Signals | null = null;
  let spawnError: Error | undefined;
  const closed = new Promise<void>((resolve) => {
    child.on('error', (error) => {
      spawnError = error;
      resolve();
    });
    child.on('exit', (code, signal) => {
      exitCode = code;
      exitSignal = signal;
      // Background members of the group may still hold stdout open: end them so 'close' comes.
      killGroup();
    });
    child.on('close', () => resolve());
  });

  return {
    discard() {
      killGroup();
      child.stdin!.destroy();
    },
    async start(run) {
      const started = performance.now();
      onStdout = run.onStdout;
      onStderr = run.onStderr;
      let timedOut = false;
      let aborted = false;
      const timer = setTimeout(() => {
        timedOut = true;
        killGroup();
      }, run.timeoutMs);
      const onAbort = () => {
        aborted = true;
        killGroup();
      };
      if (run.signal?.aborted) onAbort();
      run.signal?.addEventListener('abort', onAbort);
      child.stdin!.end(run.input ?? '');
      try {
        await closed;
      } finally {
        clearTimeout(timer);
        run.signal?.removeEventListener('abort', onAbort);
      }
      const result: BoundedRunResult = { exitCode, signal: exitSignal, stdout, stderr, timedOut, aborted, durationMs: performance.now() - started };
      if (spawnError) result.spawnError = spawnError;
      return result;
    },
  };
}

/** Runs a program at once with the guarantees of `prepareBounded`. */
export function runBounded(options: BoundedRunOptions): Promise<BoundedRunResult> {
  return prepareBounded(options).start(options);
}
