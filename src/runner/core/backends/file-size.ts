// The run's disk budget as a bound no single file can pass: RLIMIT_FSIZE on every program of the
// run (a write past it fails, and the writer gets SIGXFSZ). The budget's poll (bounds.ts) still
// counts the sum of what was written; this keeps one file from outrunning the poll. Children
// inherit the limit, and without CAP_SYS_RESOURCE (none of the run's programs has it) it cannot be
// raised again.
import { existsSync } from 'node:fs';

/** Where util-linux's prlimit is, which sets the limit and then runs the program. */
const PRLIMIT = '/usr/bin/prlimit';

/**
 * `argv` run with RLIMIT_FSIZE at `bytes` (soft and hard): through prlimit on Linux; unchanged
 * where there is no budget, no prlimit, or not Linux.
 */
export function limitFileSize<T extends [string, ...string[]]>(argv: T, bytes: number | undefined, prlimit = PRLIMIT): T | [string, ...string[]] {
  if (bytes === undefined || !Number.isFinite(bytes) || bytes <= 0 || process.platform !== 'linux' || !installed(prlimit)) return argv;
  const limit = Math.ceil(bytes);
  return [prlimit, `--fsize=${limit}:${limit}`, '--', ...argv];
}

/** Whether prlimit is there, looked up once per path (every command of a run asks). */
const presence = new Map<string, boolean>();
function installed(prlimit: string): boolean {
  let present = presence.get(prlimit);
  if (present === undefined) presence.set(prlimit, (present = existsSync(prlimit)));
  return present;
}
