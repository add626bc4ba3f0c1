// Every child process Belay starts goes through this module. On Linux and macOS a small helper
// process forks them and hands their pipes back (spawn-host.ts: a fork of the extension host
// blocked its thread for milliseconds); each leads its own process group, killed as a group, and
// dies with Belay even when Belay is killed outright. On Windows, and wherever the helper cannot
// start, execa starts them here. execa gives: Windows-correct spawning (PATHEXT and shebang
// lookup, argument quoting), tree kills (`killDescendants`: the child leads its own process group
// on Unix, `taskkill /T` on Windows), cleanup when Belay itself exits, and the reason a spawn
// failed.
// Done on top, because execa does not do it:
// - output bounded in memory keeping head and tail (execa's `maxBuffer` kills the process instead);
// - a timeout counted from when the input is given (execa's `timeout` counts from the spawn);
// - ending the group when the program exits (background members would hold the pipes open);
// - not waiting on pipes held by a process that left the group (setsid), see ESCAPED_PIPE_GRACE_MS.
// execa is initialised on the first spawn, not when this module loads: ~18 ms that activation
// must not pay.
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { errorMessage } from './errors.ts';
import { HOST_UNAVAILABLE, killGroup, spawnHosted } from './spawn-host.ts';

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

/** How a program is started: the argument vector and where. */
export interface ChildOptions {
  /** Program and arguments; `shellCommand(script)` gives the platform's shell for a shell command. */
  argv: readonly [string, ...string[]];
  cwd: string;
  /** The whole environment of the child (never merged with Belay's own); default: Belay's. */
  env?: NodeJS.ProcessEnv;
  /** Hands the arguments to Windows as written (cmd.exe's own quoting); `shellCommand` sets it. */
  windowsVerbatimArguments?: boolean;
}

/** A shell command as a program to start, in the form `ChildOptions` takes. */
export interface ShellInvocation {
  argv: readonly [string, ...string[]];
  windowsVerbatimArguments: boolean;
}

/**
 * The platform's shell running `command`, as the CodingAgent protocol says: `/bin/sh -c` on Linux
 * and macOS, `cmd.exe /c` on Windows (`/d` skips AutoRun, `/s` takes the quoted line as written).
 */
export function shellCommand(command: string, platform: NodeJS.Platform = process.platform, env: NodeJS.ProcessEnv = process.env): ShellInvocation {
  if (platform === 'win32') return { argv: [env.ComSpec ?? env.comspec ?? 'cmd.exe', '/d', '/s', '/c', `"${command}"`], windowsVerbatimArguments: true };
  return { argv: ['/bin/sh', '-c', command], windowsVerbatimArguments: false };
}

/** A failed spawn as one line naming the program, e.g. `/usr/bin/bwrap: not found (ENOENT)`; `code` is kept. */
export function spawnFailure(program: string, cwd: string, error: Error): Error {
  const code = (error as NodeJS.ErrnoException).code;
  let reason: string;
  if (code === 'ENOENT') reason = existsSync(cwd) ? 'not found' : `its working folder ${cwd} does not exist`;
  else if (code === 'EACCES') reason = 'not executable';
  else reason = error.message.split('\n', 1)[0]!;
  const failure: NodeJS.ErrnoException = new Error(`${program}: ${reason}${code && !reason.includes(code) ? ` (${code})` : ''}`);
  if (code !== undefined) failure.code = code;
  return failure;
}

/**
 * How long, after the program exited and its group was killed, the output pipes are still read:
 * a process that left the group (setsid) may hold them open for ever.
 */
export const ESCAPED_PIPE_GRACE_MS = 2000;

export interface StartChildOptions extends ChildOptions {
  /** 'pipe' (default): `write` and `endInput` feed the child; 'ignore': its stdin is empty. */
  stdin?: 'pipe' | 'ignore';
  onStdout?: (chunk: string) => void;
  onStderr?: (chunk: string) => void;
}

export interface ChildEnd {
  /** Exit code, or null when the process was ended by a signal (or never started). */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the program could not be started at all: one line naming it (see `spawnFailure`). */
  spawnError?: Error;
}

/** A started program. Every method may be called at once: what needs the process waits for the spawn. */
export interface RunningChild {
  /** Known once the process is spawned. */
  readonly pid: number | undefined;
  /** Writes to the child's stdin (with `stdin: 'pipe'`); nothing once `endInput` was called. */
  write(text: string): void;
  /** Closes the child's stdin once what was written has gone. */
  endInput(): void;
  /** Kills the whole tree; safe before the spawn (it is killed as soon as it exists) and after the end. */
  kill(): void;
  /** Settles when the process has exited and its output is read, or could not start; never rejects. */
  readonly ended: Promise<ChildEnd>;
}

/**
 * Starts a program as the leader of its own process group, killed with Belay when Belay exits,
 * its stdout and stderr handed to the callbacks as UTF-8 text. When it exits, the rest of its
 * group is killed so that background members do not hold the output open; `ended` follows.
 */
export function startChild(options: StartChildOptions): RunningChild {
  return startHostedChild(options) ?? startExecaChild(options);
}

/** `startChild` through the spawn helper (see spawn-host.ts); undefined where there is none. */
function startHostedChild(options: StartChildOptions): RunningChild | undefined {
  const input = new PassThrough();
  const [program, ...args] = options.argv;
  let pid: number | undefined;
  let killRequested = false;
  const killTree = () => {
    if (pid === undefined) killRequested = true;
    else killGroup(pid);
  };
  let resolveEnd!: (end: ChildEnd) => void;
  const ended = new Promise<ChildEnd>((resolve) => (resolveEnd = resolve));
  let exit: ChildEnd | undefined;
  let open = 2;
  const settle = () => {
    if (exit && open === 0) resolveEnd(exit);
  };
  const streams: Socket[] = [];
  let fallback: RunningChild | undefined;
  const hosted = spawnHosted(
    { file: program, args, cwd: options.cwd, env: options.env ?? process.env, stdin: options.stdin ?? 'pipe' },
    {
      spawned: (childPid, stdout, stderr, stdin) => {
        pid = childPid;
        streams.push(stdout, stderr);
        stdout.setEncoding('utf8').on('data', (chunk: string) => options.onStdout?.(chunk));
        stderr.setEncoding('utf8').on('data', (chunk: string) => options.onStderr?.(chunk));
        for (const stream of [stdout, stderr]) {
          // A pipe with nothing in it may have ended and closed before it reached us.
          if (stream.closed) open--;
          else {
            stream.on('close', () => {
              open--;
              settle();
            });
          }
        }
        if (stdin) input.pipe(stdin);
        if (killRequested) killTree();
      },
      exit: (exitCode, signal) => {
        exit = { exitCode, signal };
        // Background members of the group may still hold stdout open: end them so 'close' comes.
        killTree();
        setTimeout(() => {
          for (const stream of streams) stream.destroy();
        }, ESCAPED_PIPE_GRACE_MS).unref();
        settle();
      },
      failed: (error) => {
        if (error.code !== HOST_UNAVAILABLE) {
          resolveEnd({ exitCode: null, signal: null, spawnError: spawnFailure(program, options.cwd, error) });
          return;
        }
        // The helper cannot run here: the program is started here instead, with what it was given.
        const direct = startExecaChild(options);
        fallback = direct;
        input.on('data', (chunk: Buffer) => direct.write(chunk.toString()));
        input.on('end', () => direct.endInput());
        if (killRequested) direct.kill();
        void direct.ended.then(resolveEnd);
      },
    },
  );
  if (!hosted) return undefined;
  return {
    get pid() {
      return fallback ? fallback.pid : pid;
    },
    write: (text) => {
      if (options.stdin !== 'ignore' && !input.writableEnded) input.write(text);
    },
    endInput: () => void input.end(),
    kill: () => (fallback ? fallback.kill() : killTree()),
    ended,
  };
}

/** `startChild` with execa in this process (Windows, or where the helper could not start). */
function startExecaChild(options: StartChildOptions): RunningChild {
  const input = new PassThrough();
  let child: ChildProcess | undefined;
  let killRequested = false;
  let killTree = () => {
    killRequested = true;
  };
  const spawned = async (): Promise<ChildEnd> => {
    const { execa } = await import('execa');
    const [program, ...args] = options.argv;
    const subprocess = execa(program, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      extendEnv: false,
      stdin: options.stdin ?? 'pipe',
      stdout: 'pipe',
      stderr: 'pipe',
      // The callbacks read the streams: nothing is gathered by execa, and its promise never rejects.
      buffer: false,
      reject: false,
      killDescendants: true,
      killSignal: 'SIGKILL',
      forceKillAfterDelay: false,
      cleanup: true,
      windowsHide: true,
      ...(options.windowsVerbatimArguments ? { windowsVerbatimArguments: true } : {}),
    });
    const node = (child = subprocess.nodeChildProcess);
    // execa's kill reaches the whole tree (the group on Unix, taskkill /T on Windows).
    killTree = () => void subprocess.kill('SIGKILL');
    node.stdout!.setEncoding('utf8').on('data', (chunk: string) => options.onStdout?.(chunk));
    node.stderr!.setEncoding('utf8').on('data', (chunk: string) => options.onStderr?.(chunk));
    if (node.stdin) {
      node.stdin.on('error', () => undefined);
      input.pipe(node.stdin);
    }
    if (killRequested) killTree();
    return new Promise<ChildEnd>((resolve) => {
      let exit: ChildEnd = { exitCode: null, signal: null };
      node.on('error', (error) => {
        if (node.pid !== undefined) return;
        resolve({ exitCode: null, signal: null, spawnError: spawnFailure(program, options.cwd, error) });
      });
      node.on('exit', (exitCode, signal) => {
        exit = { exitCode, signal };
        // Background members of the group may still hold stdout open: end them so 'close' comes.
        killTree();
        setTimeout(() => {
          node.stdout!.destroy();
          node.stderr!.destroy();
        }, ESCAPED_PIPE_GRACE_MS).unref();
      });
      node.on('close', () => resolve(exit));
    });
  };
  const ended = spawned().catch((error: unknown) => ({ exitCode: null, signal: null, spawnError: new Error(`${options.argv[0]}: ${errorMessage(error)}`) }));
  return {
    get pid() {
      return child?.pid;
    },
    write: (text) => {
      if (options.stdin !== 'ignore' && !input.writableEnded) input.write(text);
    },
    endInput: () => void input.end(),
    kill: () => killTree(),
    ended,
  };
}

/** The output callbacks a start function hands to the program it starts. */
export interface ChildOutput {
  onStdout(chunk: string): void;
  onStderr(chunk: string): void;
}

/**
 * Where a bounded program comes from: a program started here (`ChildOptions`), or `start`, which
 * starts it elsewhere (in a backend's environment) with stdin piped and hands back its handle.
 */
export type ChildSource = ChildOptions | { start(output: ChildOutput): RunningChild };

export type PreparedProcessOptions = ChildSource & {
  /** Characters of stdout and of stderr each kept in memory. */
  maxOutputChars: number;
  /** Characters of the end of each stream kept besides the head (0: head only). */
  keepTailChars?: number;
};

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
  /** Set when the program could not be started at all: one line naming it (see `spawnFailure`). */
  spawnError?: Error;
}

/** A process spawned ahead of its input (e.g. a shell started while an agent is still thinking). */
export interface PreparedProcess {
  /** Gives the process its input and waits for it; the timeout starts now. */
  start(options: StartOptions): Promise<BoundedRunResult>;
  /** Kills a process that will not be started. */
  discard(): void;
}

/**
 * Spawns a program in its own process group (or has `start` do it), its output bounded in memory, and holds it until
 * `start` hands it its input. When the timeout passes, the signal aborts, or the program exits
 * while members of its group (background children) still hold the pipes, the whole group is
 * killed, so `start` always ends.
 */
export function prepareBounded(options: PreparedProcessOptions): PreparedProcess {
  const stdout = new BoundedText(options.maxOutputChars, options.keepTailChars ?? 0);
  const stderr = new BoundedText(options.maxOutputChars, options.keepTailChars ?? 0);
  let onStdout: ((chunk: string) => void) | undefined;
  let onStderr: ((chunk: string) => void) | undefined;
  const output: ChildOutput = {
    onStdout: (chunk) => {
      stdout.append(chunk);
      onStdout?.(chunk);
    },
    onStderr: (chunk) => {
      stderr.append(chunk);
      onStderr?.(chunk);
    },
  };
  const child =
    'start' in options
      ? options.start(output)
      : startChild({
          argv: options.argv,
          cwd: options.cwd,
          ...(options.env ? { env: options.env } : {}),
          ...(options.windowsVerbatimArguments ? { windowsVerbatimArguments: true } : {}),
          ...output,
        });

  return {
    discard: () => child.kill(),
    async start(run) {
      const started = performance.now();
      onStdout = run.onStdout;
      onStderr = run.onStderr;
      let timedOut = false;
      let aborted = false;
      const timer = setTimeout(() => {
        timedOut = true;
        child.kill();
      }, run.timeoutMs);
      const onAbort = () => {
        aborted = true;
        child.kill();
      };
      if (run.signal?.aborted) onAbort();
      run.signal?.addEventListener('abort', onAbort);
      if (run.input) child.write(run.input);
      child.endInput();
      let end: ChildEnd;
      try {
        end = await child.ended;
      } finally {
        clearTimeout(timer);
        run.signal?.removeEventListener('abort', onAbort);
      }
      const result: BoundedRunResult = { exitCode: end.exitCode, signal: end.signal, stdout, stderr, timedOut, aborted, durationMs: performance.now() - started };
      if (end.spawnError) result.spawnError = end.spawnError;
      return result;
    },
  };
}

/** Runs a program at once with the guarantees of `prepareBounded`. */
export function runBounded(options: BoundedRunOptions): Promise<BoundedRunResult> {
  return prepareBounded(options).start(options);
}
