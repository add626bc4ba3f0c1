// The executor as the tests start it: the built belay-exec (dist/native/), spawned directly as the
// local backend does, and what the tests read of processes from /proc.
import { readFileSync } from 'node:fs';
import { after, before } from 'node:test';
import { executorBinary } from '../../src/shared/executor/binary.ts';
import { startExecutor, type ChannelExecutor } from '../../src/shared/executor/client.ts';
import type { ChildEnd } from '../../src/shared/process.ts';
import type { ExecutorCommand } from '../../src/shared/executor/contract.ts';
import { alive } from './processes.ts';
import { tempDir, type TempDir } from './temp.ts';

export const PATH_ENV = { PATH: '/usr/local/bin:/usr/bin:/bin' };

/** A started executor on this machine; `prefix` runs it under another program (setpriv, qemu). */
export function localExecutor(prefix: readonly string[] = [], binary = executorBinary()): Promise<ChannelExecutor> {
  const argv: [string, ...string[]] = prefix.length > 0 ? [prefix[0]!, ...prefix.slice(1), binary] : [binary];
  return startExecutor({ argv, cwd: '/', env: PATH_ENV });
}

/**
 * One executor and one temporary folder for a whole test file: started before its first test,
 * closed and removed after its last. Read them through the returned object once tests run.
 */
export function executorForFile(tempPrefix: string): { readonly executor: ChannelExecutor; readonly temp: TempDir } {
  let executor: ChannelExecutor | undefined;
  let temp: TempDir | undefined;
  before(async () => {
    executor = await localExecutor();
    temp = tempDir(tempPrefix);
  });
  after(async () => {
    await executor?.close();
    temp?.remove();
  });
  return {
    get executor() {
      if (!executor) throw new Error('the executor is started before the first test');
      return executor;
    },
    get temp() {
      if (!temp) throw new Error('the temporary folder is made before the first test');
      return temp;
    },
  };
}

export interface Ran extends ChildEnd {
  stdout: string;
  stderr: string;
}

/** Runs a command to its end, gathering its output. */
export async function run(executor: ChannelExecutor, command: Omit<ExecutorCommand, 'onStdout' | 'onStderr'> & { input?: string }): Promise<Ran> {
  let stdout = '';
  let stderr = '';
  const child = executor.spawn({ ...command, onStdout: (t) => (stdout += t), onStderr: (t) => (stderr += t) });
  if (command.input !== undefined) child.write(command.input);
  if ((command.stdin ?? 'pipe') === 'pipe') child.endInput();
  const end = await child.ended;
  return { ...end, stdout, stderr };
}

/** Resident memory of a process in KiB (VmRSS), 0 when it is gone. */
export function rssKib(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

/**
 * A process killed from elsewhere (its parent died, a signal from another process) finishes
 * exiting a moment later: waits, bounded, until it has. True when it is gone.
 */
export async function gone(pid: number, withinMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (alive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 10));
  }
  return true;
}

/** The pids a command printed, one a line. */
export function pids(text: string): number[] {
  return text
    .split(/\s+/)
    .filter((word) => /^\d+$/.test(word))
    .map(Number);
}

export { alive };
