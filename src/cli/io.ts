/** What a command-line subcommand may touch; tests hand in their own streams. */
export interface CliIO {
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export { UsageError } from '../shared/args.ts';

export function processIO(): CliIO {
  return { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() };
}

/** Reads all of a stream as UTF-8 text. */
export async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * How the client of a stdio server went away: `ended` closed stdin (an MCP client's way to end a
 * stdio server), `broken` a pipe failed (for stdout: the reader closed it, EPIPE). Later write
 * errors stay handled: nobody is there to tell.
 */
export function clientGone(stdin: NodeJS.ReadableStream, stdout: NodeJS.WritableStream): Promise<'ended' | 'broken'> {
  return new Promise((resolve) => {
    stdin.once('end', () => resolve('ended')).once('close', () => resolve('ended'));
    stdin.on('error', () => resolve('broken'));
    stdout.on('error', () => resolve('broken'));
  });
}

/**
 * Calls `listener` on every one of `signals` until the returned function is called. Never `once`:
 * execa's clean-up on exit (signal-exit) re-raises a signal it finds no other listener for, so a
 * listener gone by the time that clean-up looks let one Ctrl-C kill the process before it had
 * stopped its children.
 */
export function onSignals(signals: readonly NodeJS.Signals[], listener: () => void): () => void {
  for (const signal of signals) process.on(signal, listener);
  return () => signals.forEach((signal) => process.off(signal, listener));
}

/** Resolves when the process is asked to stop (SIGINT, SIGTERM, SIGHUP) until `dispose` is called. */
export function stopRequested(): { promise: Promise<void>; dispose(): void } {
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  let stop = () => undefined as void;
  const promise = new Promise<void>((resolve) => (stop = resolve));
  return { promise, dispose: onSignals(signals, () => stop()) };
}

/** How often a server whose client closed stdin checks that the client is still there. */
export const ORPHAN_CHECK_MS = 1000;

/** The parent this process started with: read before anything can happen to it. */
const startedBy = process.ppid;

/**
 * Resolves when this process's parent is gone: a process whose parent dies is re-parented, so its
 * ppid changes (POSIX; on Windows nothing is re-parented and this never resolves). The parent is
 * the one the process started with, so a parent that died before this was called counts too.
 * Checked every ORPHAN_CHECK_MS without keeping the process alive; `dispose` stops checking.
 */
export function orphaned(parent: number = startedBy): { promise: Promise<void>; dispose(): void } {
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<void>((resolve) => {
    timer = setInterval(() => {
      if (process.ppid === parent) return;
      clearInterval(timer);
      resolve();
    }, ORPHAN_CHECK_MS).unref();
  });
  return { promise, dispose: () => clearInterval(timer) };
}
