import { readFileSync, readlinkSync } from 'node:fs';
import * as os from 'node:os';

// Whether the process that waits for a cue's answer is still there. A cue whose waiter is gone
// (killed with -9, its terminal closed, its machine gone) must not be answered: nobody would read
// the answer. Belay's own writers (`cueme`, `belay mcp`, the editor's tools) record who waits in
// Belay's side table (bookkeeping.ts) when they write the request; the public tools record
// nothing, so for their cues the answer is "unknown" and only the timeout rule applies (expiry.ts).
//
// Two ways to know, by where the reader is:
// - on the waiter's own machine (same boot, same pid namespace): its pid is running, and is the
//   same process (Linux: the start time in /proc/<pid>/stat tells a reused pid apart). Instant.
// - elsewhere (another container, another machine sharing the mailbox folder): the heartbeat the
//   waiter writes every HEARTBEAT_MS is recent.

export interface WaiterRecord {
  requestId: string;
  pid: number;
  /** Where `pid` means something: this boot and pid namespace on Linux, else the host name. */
  machine: string;
  /** The process's start as the system counts it (Linux: clock ticks since boot), to tell a reused pid apart. */
  startMark?: string;
  /** The host name, for messages. */
  host: string;
  /** When the waiter stops waiting (wall clock, as it computed it); absent for a pause, which waits forever. */
  deadlineMs?: number;
  /** The waiter's last sign of life. */
  heartbeatMs: number;
}

/** Who the current process is, as a waiter record names it. */
export interface ProcessIdentity {
  pid: number;
  machine: string;
  startMark?: string;
  host: string;
}

/** What a reader can find out about processes from where it runs. */
export interface ProcessProbe {
  /** This reader's machine, as WaiterRecord.machine says it. */
  readonly machine: string;
  /** False when no process `pid` runs, or it is another one than the one started at `startMark`. */
  isRunning(pid: number, startMark: string | undefined): boolean;
}

/** How often a waiter says it is alive. */
export const HEARTBEAT_MS = 15_000;
/** A waiter on another machine silent for this long is taken for gone (several missed beats, not one). */
export const HEARTBEAT_STALE_MS = 4 * HEARTBEAT_MS;

/** alive / gone: known from the waiter's record; unknown: no record (a cue of the public tools). */
export type Liveness = 'alive' | 'gone' | 'unknown';

export function waiterLiveness(record: WaiterRecord | undefined, probe: ProcessProbe, nowMs: number): Liveness {
  if (!record) return 'unknown';
  if (record.machine === probe.machine) return probe.isRunning(record.pid, record.startMark) ? 'alive' : 'gone';
  return nowMs - record.heartbeatMs <= HEARTBEAT_STALE_MS ? 'alive' : 'gone';
}

/** "the process that waited for it (pid 4242 on devbox) is gone" */
export function goneWaiterText(waiter: Pick<WaiterRecord, 'pid' | 'host'>): string {
  return `the process that waited for it (pid ${waiter.pid}${waiter.host ? ` on ${waiter.host}` : ''}) is gone`;
}

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses). */
function procStat(pid: number | 'self'): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** Field 22 of /proc/<pid>/stat (starttime) is index 19 after the name; field 3 (state) is index 0. */
const START_FIELD = 19;

function linuxMachine(): string | undefined {
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const pidNamespace = readlinkSync('/proc/self/ns/pid');
    return boot && pidNamespace ? `linux:${boot}:${pidNamespace}` : undefined;
  } catch {
    return undefined; // no /proc (or a restricted one): fall back to the host name
  }
}

/** True when a process `pid` exists, as signal 0 tells (EPERM: it exists, owned by someone else). */
function signalZero(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function linuxIsRunning(pid: number, startMark: string | undefined): boolean {
  let fields: string[];
  try {
    fields = procStat(pid);
  } catch {
    // Not visible in /proc (hidepid, another user's process): signal 0 still tells whether it exists.
    return signalZero(pid);
  }
  const state = fields[0];
  if (state === 'Z' || state === 'X') return false; // killed, not yet reaped
  return startMark === undefined || fields[START_FIELD] === startMark;
}

/** The current process as a waiter record names it. */
export function currentProcess(): ProcessIdentity {
  const linux = process.platform === 'linux' ? linuxMachine() : undefined;
  const identity: ProcessIdentity = { pid: process.pid, machine: linux ?? `host:${os.hostname()}`, host: os.hostname() };
  if (linux) {
    try {
      const start = procStat('self')[START_FIELD];
      if (start) identity.startMark = start;
    } catch {
      // No start time: the pid alone is checked.
    }
  }
  return identity;
}

/** The probe of the machine this code runs on. */
export function systemProbe(): ProcessProbe {
  const linux = process.platform === 'linux' ? linuxMachine() : undefined;
  return {
    machine: linux ?? `host:${os.hostname()}`,
    isRunning: (pid, startMark) => (pid === process.pid ? true : linux ? linuxIsRunning(pid, startMark) : signalZero(pid)),
  };
}
