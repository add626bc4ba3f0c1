// Finds and kills the processes a run left behind, for the phases' "everything is dead" promise.
// Processes are recognised by something they cannot shed: a sandbox's mounts (its mount table
// names the session's private folders) or, for the local backend, a variable in their
// environment (which a hostile program can drop: the local backend is labelled unisolated).
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';

/** What identifies a process of one session, read from /proc/<pid>/<file>. */
export interface ProcessMark {
  file: 'mountinfo' | 'environ';
  text: string;
}

/** The processes (pids) whose /proc file holds the mark; empty where there is no /proc. */
export function markedProcesses(mark: ProcessMark, proc = '/proc'): number[] {
  let names: string[];
  try {
    names = readdirSync(proc);
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const name of names) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`${proc}/${name}/${mark.file}`, 'latin1').includes(mark.text)) found.push(Number(name));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

/**
 * Kills every marked process until none is left; resolves with how many it killed. Rejects when
 * some are still there after `timeoutMs` (a process stuck in the kernel): the caller must not
 * go on as if they were dead.
 */
export async function killMarked(mark: ProcessMark, timeoutMs = 5000): Promise<number> {
  const killed = new Set<number>();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const alive = markedProcesses(mark);
    if (alive.length === 0) return killed.size;
    for (const pid of alive) {
      try {
        process.kill(pid, 'SIGKILL');
        killed.add(pid);
      } catch {
        // already gone
      }
    }
    if (Date.now() > deadline) throw new Error(`${alive.length} process(es) of the run would not die: ${alive.slice(0, 5).join(', ')}`);
    await delay(20);
  }
}

/**
 * The pid on this machine of the marked process that is `innerPid` in its own PID namespace (a
 * sandbox's command, as its executor names it); undefined when there is none (it ended).
 */
export function hostPidOf(mark: ProcessMark, innerPid: number, proc = '/proc'): number | undefined {
  for (const pid of markedProcesses(mark, proc)) {
    try {
      const nspid = /^NSpid:\s*(.*)$/m.exec(readFileSync(`${proc}/${pid}/status`, 'latin1'))?.[1]?.trim().split(/\s+/);
      if (nspid && nspid.length > 1 && Number(nspid.at(-1)) === innerPid) return pid;
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}
