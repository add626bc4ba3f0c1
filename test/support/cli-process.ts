// One of Belay's command lines (a dist/ bundle) run as a child process of the test, as a user's
// shell would run it: its exit code, signal and output, with stderr seen as it comes.
import { spawn, type ChildProcess } from 'node:child_process';

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  cwd: string;
  /** Variables over this process's own. */
  env?: NodeJS.ProcessEnv;
  /** Written to its stdin, then closed; without it stdin is empty. */
  input?: string;
  /** Called with all of stdout so far each time more arrives. */
  onStdout?: (text: string, child: ChildProcess) => void;
  /** Called with all of stderr so far each time more arrives. */
  onStderr?: (text: string, child: ChildProcess) => void;
}

export function runCli(script: string, args: readonly string[], options: CliOptions): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { cwd: options.cwd, stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'], env: { ...process.env, ...options.env } });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
      options.onStdout?.(stdout, child);
    });
    child.stderr!.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
      options.onStderr?.(stderr, child);
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
    if (options.input !== undefined) child.stdin!.end(options.input);
  });
}
