// A one-shot process started ahead of its input: the step's shell is spawned while the agent
// is still thinking, then gets its command on stdin. Same guarantees as runBounded in
// src/shared/process.ts (own process group, killed whole on timeout, abort and exit, bounded
// memory), which cannot be used here because it writes the input and starts its timer at spawn.
import { spawn } from 'node:child_process';
import { BoundedText, killProcessGroup, type BoundedRunResult } from '../../shared/process.ts';

export interface PreparedStart {
  /** Written to stdin, which is then closed. */
  input: string;
  /** Counted from `start`, not from the spawn. */
  timeoutMs: number;
  onStdout?: (chunk: string) => void;
  onStderr?: (chunk: string) => void;
  signal?: AbortSignal;
}

export interface PreparedProcess {
  start(options: PreparedStart): Promise<BoundedRunResult>;
  /** Kills a process that will not be started. */
  discard(): void;
}

export function prepareBounded(options: {
  argv: readonly [string, ...string[]];
  cwd: string;
  env: NodeJS.ProcessEnv;
  maxOutputChars: number;
  keepTailChars?: number;
}): PreparedProcess {
  const stdout = new BoundedText(options.maxOutputChars, options.keepTailChars ?? 0);
  const stderr = new BoundedText(options.maxOutputChars, options.keepTailChars ?? 0);
  const [program, ...args] = options.argv;
  const child = spawn(program, args, { cwd: options.cwd, env: options.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
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
      child.stdin!.end(run.input);
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
