// One agent command run as a shell command in the backend. The working directory is tracked
// for real: after the command, whatever it did, the shell reports its directory on a side
// channel (the original stderr), while the command's own stdout and stderr share one stream.
import { prepareBounded, type BoundedRunResult } from '../../../shared/process.ts';
import { CappedLog } from '../records/logs.ts';
import { commandWords, shellPath, type BackendSession } from '../backends/backend.ts';

// stdin: the directory to start in (one line), then the command; $1: the fallback directory
// when that one is gone. Nothing about the step is needed at spawn, so the shell can be started
// ahead of time. The command itself gets /dev/null as stdin.
function stepScript(shell: string): string {
  const readCommand = shell.endsWith('bash') ? "IFS= read -r -d '' c" : 'c=$(cat)';
  return `IFS= read -r d; ${readCommand}; cd -- "$d" 2>/dev/null || cd -- "$1"; exec 3>&2 2>&1 </dev/null; trap 'pwd >&3' EXIT; eval "$c" 3>&-`;
}

export interface StepOptions {
  session: BackendSession;
  command: string;
  cwd: string;
  timeoutMs: number;
  /** Receives the output (its head and tail within `maxLogBytes`); only an excerpt is kept in memory. */
  outputFile: string;
  /** How the agent is told where the output went (the file relative to the run's records). */
  outputName?: string;
  maxLogBytes: number;
  /** Characters kept from the start and from the end of the output for the agent. */
  excerptChars: number;
  env?: Record<string, string>;
  onOutput?: (chunk: string) => void;
  signal?: AbortSignal;
}

export interface StepResult {
  exitCode: number | null;
  timedOut: boolean;
  aborted: boolean;
  /** The directory the command ended in (unchanged when it could not be known). */
  cwd: string;
  /** What the agent is shown: the output (a marked excerpt when long) and exit/timeout notes. */
  observation: string;
  outputChars: number;
  durationMs: number;
}

export interface PreparedStep {
  run(options: Omit<StepOptions, 'session' | 'env' | 'excerptChars'>): Promise<StepResult>;
  discard(): void;
}

/** Starts the shell of a step now; the directory and the command are given to `run` later. */
export function prepareStep(options: Pick<StepOptions, 'session' | 'env' | 'excerptChars'>): PreparedStep {
  const { session } = options;
  if (session.shell === null) return directStep(options);
  const shell = session.shell ?? shellPath();
  const prepared = prepareBounded({
    start: (output) =>
      session.spawn({
        argv: [shell, '-c', stepScript(shell), 'belay-step', session.workdir],
        // The script changes to `cwd` itself, so a directory that is gone does not stop the step.
        cwd: session.workdir,
        ...(options.env ? { env: options.env } : {}),
        ...output,
      }),
    maxOutputChars: options.excerptChars,
    keepTailChars: options.excerptChars,
  });
  return {
    discard: () => prepared.discard(),
    async run(run) {
      // The command is given first and its log created while it runs (creating a file takes a
      // while on some file systems); no output can come before this turn ends.
      let log: CappedLog | undefined;
      const running = prepared.start({
        input: `${run.cwd.replace(/\n/g, ' ')}\n${run.command}`,
        timeoutMs: run.timeoutMs,
        onStdout: (chunk) => {
          log?.write(chunk);
          run.onOutput?.(chunk);
        },
        signal: run.signal,
      });
      let result;
      try {
        log = new CappedLog(run.outputFile, run.maxLogBytes);
        result = await running;
      } finally {
        if (log) log.close();
        else prepared.discard();
      }
      return observe(result, run.cwd, run.timeoutMs, run.outputName ?? run.outputFile, options.excerptChars);
    },
  };
}

/**
 * A step where the environment has no shell: the command's words are the program and its
 * arguments, run in `cwd` (which therefore never changes), stdout and stderr as one stream.
 */
function directStep(options: Pick<StepOptions, 'session' | 'env' | 'excerptChars'>): PreparedStep {
  const { session } = options;
  return {
    discard: () => undefined,
    async run(run) {
      const words = commandWords(run.command);
      const log = new CappedLog(run.outputFile, run.maxLogBytes);
      let result;
      try {
        result = await prepareBounded({
          start: (output) =>
            session.spawn({
              argv: words.length > 0 ? (words as [string, ...string[]]) : ['true'],
              cwd: run.cwd,
              ...(options.env ? { env: options.env } : {}),
              stdin: 'ignore',
              onStdout: output.onStdout,
              onStderr: output.onStdout,
            }),
          maxOutputChars: options.excerptChars,
          keepTailChars: options.excerptChars,
        }).start({
          timeoutMs: run.timeoutMs,
          onStdout: (chunk) => {
            log.write(chunk);
            run.onOutput?.(chunk);
          },
          signal: run.signal,
        });
      } finally {
        log.close();
      }
      return observe(result, run.cwd, run.timeoutMs, run.outputName ?? run.outputFile, options.excerptChars);
    },
  };
}

function observe(result: BoundedRunResult, cwdBefore: string, timeoutMs: number, outputFile: string, excerptChars: number): StepResult {
  const reported = result.stderr.text('').trimEnd().split('\n').at(-1) ?? '';
  const cwd = !result.timedOut && reported.startsWith('/') ? reported : cwdBefore;
  const out = result.stdout;
  const omitted = out.length - Math.min(out.length, excerptChars * 2);
  const parts = [out.text(`[... ${omitted} characters omitted; the full output is in ${outputFile} ...]`).trimEnd()];
  if (result.spawnError) parts.push(`[could not start the command: ${result.spawnError.message}]`);
  if (result.timedOut) parts.push(`[Command timed out after ${Math.round(timeoutMs / 1000)}s]`);
  else if (result.exitCode !== 0 && result.exitCode !== null) parts.push(`[exit code: ${result.exitCode}]`);
  return {
    exitCode: result.exitCode,
    timedOut: result.timedOut,
    aborted: result.aborted,
    cwd,
    observation: parts.filter((part) => part !== '').join('\n'),
    outputChars: out.length,
    durationMs: result.durationMs,
  };
}
