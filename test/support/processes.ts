// Reading processes from /proc, for the process layer's tests.
import { readFileSync } from 'node:fs';

/** Whether a process still runs (a killed one may linger as a zombie until it is reaped: not running). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
