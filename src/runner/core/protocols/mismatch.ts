// Telling an agent that speaks the other protocol from one that is merely slow, so that the
// user reads "this is an HTTP agent, use --protocol sdk2" instead of a silent timeout. The
// protocols say the command line's fix; a run the editor made gets the editor's (editorFix).
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { isBelayHelper } from '../backends/backend.ts';

/** "run it with --protocol sdk2" or "(use --protocol sdk1)": the command line's fix in a run's error. */
const FLAG_FIX = /(?:run it with|use) --protocol ([a-z0-9]+)/;

/** The protocol a run's error says the agent speaks instead, when it is a protocol mismatch. */
export function suggestedProtocol(error: string | null | undefined): string | undefined {
  return error ? FLAG_FIX.exec(error)?.[1] : undefined;
}

/**
 * A run's error as the editor says it: the fix of a protocol mismatch is the agent's `protocol`
 * in the belay.agents setting, not a flag of `belay run`. Other errors are unchanged.
 */
export function editorFix(error: string, agent: string): string {
  return error.replace(FLAG_FIX, (_all, protocol: string) => `set "protocol": "${protocol}" in the agent '${agent}' of the belay.agents setting`);
}

/** The first balanced JSON object in a line (string- and escape-aware), or undefined. */
export function firstJsonObject(line: string): unknown {
  for (let start = line.indexOf('{'); start >= 0; start = line.indexOf('{', start + 1)) {
    let depth = 0;
    let inString = false;
    for (let i = start; i < line.length; i++) {
      const c = line[i];
      if (inString) {
        if (c === '\\') i++;
        else if (c === '"') inString = false;
      } else if (c === '"') inString = true;
      else if (c === '{') depth++;
      else if (c === '}' && --depth === 0) {
        try {
          const value: unknown = JSON.parse(line.slice(start, i + 1));
          return value;
        } catch {
          break;
        }
      }
    }
  }
  return undefined;
}

/** True when the line carries what an SDK 1.x agent answers with. */
export function looksLikeSdk1Response(line: string): boolean {
  const value = firstJsonObject(line);
  return typeof value === 'object' && value !== null && ('task_complete' in value || 'command' in value || 'commands' in value);
}

/** True when an agent's stderr says it wants `--instruction` (an SDK 3.0 agent's argument parser). */
export function asksForInstruction(stderr: string): boolean {
  return /--instruction/.test(stderr) && /required|usage|expected one argument|missing/i.test(stderr);
}

/** Appended to the error of an agent that exited asking for --instruction. */
export const SDK3_HINT = '; it looks like an SDK 3.0 agent (it asks for --instruction): run it with --protocol sdk3';

/** A TCP port an agent's process listens on, and whether that process shares Belay's network. */
export interface AgentListener {
  port: number;
  pid: number;
  /** The process is in Belay's own network namespace: 127.0.0.1:port reaches it (local backend). */
  reachable: boolean;
}

function readArgv(pid: string): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return [];
  }
}

function netNamespace(pid: string): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/ns/net`);
  } catch {
    return undefined;
  }
}

/**
 * The TCP listeners of the agent's processes: the members of its process group (Linux /proc;
 * nothing elsewhere), less Belay's own helpers in that group (the sandbox's port bridge, which
 * holds the host services' ports): what they hold is Belay's, whatever the port. The sockets are
 * matched by inode, so other programs' listeners on the machine do not count.
 */
export function agentListeners(processGroup: number): AgentListener[] {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  const ownNetwork = netNamespace('self');
  const found = new Map<number, AgentListener>();
  for (const pid of pids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue;
    }
    // Fields after the parenthesised name: state ppid pgrp ...
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) !== processGroup) continue;
    if (isBelayHelper(readArgv(pid))) continue;
    const inodes = new Set<string>();
    try {
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
        const match = /^socket:\[(\d+)\]$/.exec(target);
        if (match) inodes.add(match[1]!);
      }
    } catch {
      continue;
    }
    if (inodes.size === 0) continue;
    const reachable = ownNetwork !== undefined && netNamespace(pid) === ownNetwork;
    for (const table of ['tcp', 'tcp6']) {
      let text: string;
      try {
        text = readFileSync(`/proc/${pid}/net/${table}`, 'utf8');
      } catch {
        continue;
      }
      for (const row of text.split('\n').slice(1)) {
        const cols = row.trim().split(/\s+/);
        // local_address rem_address st ... inode (column 9)
        if (cols[3] !== '0A' || !inodes.has(cols[9] ?? '')) continue;
        const port = Number.parseInt(cols[1]!.split(':')[1]!, 16);
        if (!found.has(port)) found.set(port, { port, pid: Number(pid), reachable });
      }
    }
  }
  return [...found.values()].sort((a, b) => a.port - b.port);
}

/** The TCP ports the agent's processes listen on (see agentListeners). */
export function listeningPorts(processGroup: number): number[] {
  return agentListeners(processGroup).map((listener) => listener.port);
}
