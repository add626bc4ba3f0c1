// Programs are started by a small helper process, not by Belay's own process. On Linux, libuv
// starts a program by forking the calling process and waiting until the fork has exec'd: the
// extension host (or a `belay run` with a job's trials in it) is large, so each start blocked its
// one thread for 2–6 ms (copying its page tables, then waiting for a core while trials compete
// for the machine). The helper is plain Node with nothing loaded: it forks in about 1 ms, on its
// own thread, and hands the three pipes of the program back over its IPC channel (Node passes
// pipe handles between processes), so Belay reads and writes them directly, without copies.
//
// The helper leads its own session (a Ctrl+C in a terminal reaches Belay, which decides), and it
// lives as long as its channel: when Belay exits or is killed, even with SIGKILL, the channel
// closes and the helper kills every program it started (their whole process groups) and exits.
// If the helper dies, Belay kills the groups it knows of and starts another helper on the next
// spawn. Not on Windows (no fork there; execa starts programs directly).
import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { programText } from './programText.ts';

/**
 * The helper's program (run with `node -e`, so no file needs to be found in any layout). It keeps
 * nothing but the live programs' process ids. Each program is its own session and process group
 * (as execa's `killDescendants` makes them). Its pipes stop being read in the helper before the
 * event loop turns, and are taken out of the ChildProcess so that Node does not read (and lose)
 * what is left in them when the program exits before they are handed over.
 */
export const HOST_SOURCE = programText(import.meta.url, './programs/spawn-host.cjs');

/** A program for the helper to start. */
export interface HostedSpawn {
  file: string;
  args: readonly string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  stdin: 'pipe' | 'ignore';
}

/** What happens to it, in this order: `spawned` then `exit`, or only `failed`. */
export interface HostedEvents {
  /** The program runs; its pipes are Belay's own now (`stdin` is absent when it was ignored or the program already exited). */
  spawned(pid: number, stdout: Socket, stderr: Socket, stdin: Socket | undefined): void;
  exit(code: number | null, signal: NodeJS.Signals | null): void;
  /** It could not be started: the error carries the system's `code` (ENOENT, EACCES, ...). */
  failed(error: NodeJS.ErrnoException): void;
}

interface Pending {
  events: HostedEvents;
  pid?: number;
  stdout?: Socket;
  stderr?: Socket;
  /** The pipes were handed over and `spawned` was called. */
  started: boolean;
  /** The exit, when it was reported before the pipes arrived. */
  exit?: { code: number | null; signal: NodeJS.Signals | null };
}

/** With a pipe handle, over the IPC channel. */
type HandleMessage = { t: 'stdout'; id: number; pid: number } | { t: 'stderr' | 'stdin'; id: number; last: boolean };
/**
 * As a line on the helper's stdout: exits do not wait behind other programs' pipes, which the
 * IPC channel sends one at a time, each after the last was acknowledged.
 */
type ReportLine = { t: 'exit'; id: number; code: number | null; signal: NodeJS.Signals | null } | { t: 'error'; id: number; code?: string; message: string };

/** SIGKILL to the process group `pid` leads; nothing when it is gone already. */
export function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

/** The code of `failed` when the helper itself could not run: the caller starts the program itself. */
export const HOST_UNAVAILABLE = 'BELAY_SPAWN_HOST_UNAVAILABLE';

class SpawnHost {
  readonly #pending = new Map<number, Pending>();
  readonly #program: readonly string[];
  #next = 0;
  #process: ChildProcess | undefined;
  #unavailable = false;
  /** The helper has done something: a helper that dies before that could not run here at all. */
  #worked = false;

  constructor(program: readonly string[]) {
    this.#program = program;
  }

  spawn(request: HostedSpawn, events: HostedEvents): boolean {
    if (this.#unavailable) return false;
    const host = this.#process ?? this.#start();
    if (!host) {
      this.#unavailable = true;
      return false;
    }
    const id = this.#next++;
    this.#pending.set(id, { events, started: false });
    this.#hold();
    host.send({ t: 'spawn', id, file: request.file, args: request.args, cwd: request.cwd, env: request.env, stdin: request.stdin });
    return true;
  }

  #start(): ChildProcess | undefined {
    let host: ChildProcess;
    try {
      host = spawn(process.execPath, this.#program, {
        // Nothing of Belay's environment (NODE_OPTIONS would load modules into it); Electron's
        // binary needs to be told to run as Node.
        env: process.versions.electron ? { ELECTRON_RUN_AS_NODE: '1' } : {},
        stdio: ['ignore', 'pipe', 'ignore', 'ipc'],
        detached: true,
        windowsHide: true,
      });
    } catch {
      return undefined;
    }
    host.on('error', () => undefined);
    if (host.pid === undefined) return undefined;
    host.on('message', (message: HandleMessage, handle?: Socket) => this.#handOver(message, handle));
    let partial = '';
    host.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      for (const line of lines) this.#report(JSON.parse(line) as ReportLine);
    });
    host.on('exit', () => this.#lost(host));
    this.#process = host;
    this.#release();
    return host;
  }

  #handOver(message: HandleMessage, handle: Socket | undefined): void {
    this.#worked = true;
    const pending = this.#pending.get(message.id);
    if (!pending) {
      handle?.destroy();
      return;
    }
    handle?.on('error', () => undefined);
    if (message.t === 'stdout') {
      pending.pid = message.pid;
      pending.stdout = handle;
    } else if (message.t === 'stderr') pending.stderr = handle;
    if (message.t === 'stdout' || !message.last) return;
    pending.started = true;
    pending.events.spawned(pending.pid!, pending.stdout ?? emptyStream(), pending.stderr ?? emptyStream(), message.t === 'stdin' ? handle : undefined);
    if (pending.exit) this.#exited(message.id, pending, pending.exit.code, pending.exit.signal);
  }

  #report(line: ReportLine): void {
    this.#worked = true;
    const pending = this.#pending.get(line.id);
    if (!pending) return;
    if (line.t === 'error') {
      this.#finish(line.id);
      // A pipe handed over before the failure is no one's now.
      pending.stdout?.destroy();
      pending.stderr?.destroy();
      const error: NodeJS.ErrnoException = new Error(line.message);
      if (line.code) error.code = line.code;
      pending.events.failed(error);
    } else if (pending.started) this.#exited(line.id, pending, line.code, line.signal);
    else pending.exit = { code: line.code, signal: line.signal };
  }

  #exited(id: number, pending: Pending, code: number | null, signal: NodeJS.Signals | null): void {
    this.#finish(id);
    pending.events.exit(code, signal);
  }

  #finish(id: number): void {
    this.#pending.delete(id);
    if (this.#pending.size === 0) this.#release();
  }

  /** The helper died: its programs are killed here, each reported as ended by SIGKILL. */
  #lost(host: ChildProcess): void {
    if (this.#process === host) this.#process = undefined;
    // A helper that never worked cannot run here (a runtime that refuses `-e`, say): from now on
    // the callers start their programs themselves, those waiting now included.
    if (!this.#worked) this.#unavailable = true;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const entry of pending) {
      if (entry.pid !== undefined) killGroup(entry.pid);
      if (entry.started) entry.events.exit(null, 'SIGKILL');
      else {
        const error: NodeJS.ErrnoException = new Error('the process helper exited before the program started');
        if (this.#unavailable) error.code = HOST_UNAVAILABLE;
        entry.events.failed(error);
      }
    }
  }

  /** While programs run, the helper keeps Belay's event loop alive (their exits come from it). */
  #hold(): void {
    this.#process?.ref();
    this.#process?.channel?.ref();
    (this.#process?.stdout as Socket | null)?.ref();
  }

  #release(): void {
    this.#process?.unref();
    this.#process?.channel?.unref();
    (this.#process?.stdout as Socket | null)?.unref();
  }
}

function emptyStream(): Socket {
  // A stream that ends at once, for a pipe the helper could not hand over.
  const stream = new PassThrough();
  stream.end();
  return stream as unknown as Socket;
}

/** How the helper is started: its program, and an argument that names it in process listings. */
const HOST_PROGRAM = ['-e', HOST_SOURCE, 'belay-spawn-host'];

let host: SpawnHost | undefined;

/**
 * Starts a program through the helper. False when there is no helper here (Windows, or it could
 * not be started): the caller then starts the program itself.
 */
export function spawnHosted(request: HostedSpawn, events: HostedEvents): boolean {
  if (process.platform === 'win32') return false;
  host ??= new SpawnHost(HOST_PROGRAM);
  return host.spawn(request, events);
}

/** Tests only: the next spawn starts a new helper from `program` (Node's arguments), or the real one. */
export function replaceSpawnHost(program: readonly string[] = HOST_PROGRAM): void {
  host = new SpawnHost(program);
}
