// Reading processes from /proc (Linux), for tests that check what is still running: the process
// layer's own, and every test that asserts a run, a command or an agent left nothing behind.
import { readdirSync, readFileSync } from 'node:fs';

/** Whether a process still runs (a killed one may linger as a zombie until it is reaped: not running). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Processes but this one whose command line contains `token`, each as "pid: command line". */
export function processesWith(token: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmdline.includes(token) && Number(pid) !== process.pid) found.push(`${pid}: ${cmdline}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/**
 * The processes below `pid` (children, theirs, …), read from /proc/<pid>/task/<tid>/children: what
 * a process still holds, without asking after pids that another program may have been given since.
 */
export function descendants(pid: number): number[] {
  const found: number[] = [];
  const visit = (parent: number) => {
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${parent}/task`);
    } catch {
      return;
    }
    for (const task of tasks) {
      let text = '';
      try {
        text = readFileSync(`/proc/${parent}/task/${task}/children`, 'utf8');
      } catch {
        continue;
      }
      for (const child of text.split(/\s+/).filter(Boolean).map(Number)) {
        if (found.includes(child)) continue;
        found.push(child);
        visit(child);
      }
    }
  };
  visit(pid);
  return found.filter(alive);
}
