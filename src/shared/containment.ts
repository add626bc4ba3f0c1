// Running a command so that nothing it starts outlives it. On Linux the command gets a PID
// namespace of its own (bubblewrap, else util-linux `unshare`): when its first process ends, or
// is killed at the timeout, the kernel kills every process left in the namespace, whatever they
// did to leave the process group (setsid, double forks, nohup) and whatever pipes they hold.
// Everything else is as the user sees it: the same files (the workspace writable as before), the
// same network and environment. Where namespaces are not available (other systems, or Linux
// without user namespaces), the process group is killed as before and, on Linux, a sweep kills
// what still carries the run's mark in its environment (a process that clears its environment
// escapes that sweep: only a namespace holds everything).
import { access, constants, readdir, readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { runBounded } from './process.ts';

export type Containment =
  /** The command runs after `prefix` (the namespace tool and its options). */
  | { kind: 'namespace'; tool: 'bwrap' | 'unshare'; prefix: readonly string[] }
  /** The process group is killed, then (on Linux) the processes carrying the run's mark. */
  | { kind: 'tree' };

/** The environment variable that marks every process of one run (for the sweep, whatever the containment). */
export const RUN_MARK_VARIABLE = 'BELAY_RUN_ID';

/** Where `program` is on the PATH, if it is. */
async function which(program: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  for (const dir of (env.PATH ?? '/usr/bin:/bin').split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, program);
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/** The ways to get a PID namespace, best first: each is tried once with `true` before it is used. */
async function candidates(env: NodeJS.ProcessEnv): Promise<Containment[]> {
  const found: Containment[] = [];
  const bwrap = await which('bwrap', env);
  if (bwrap) {
    // The whole file system as it is (devices too), a fresh /proc for the new PID namespace; the
    // namespace ends with Belay.
    found.push({ kind: 'namespace', tool: 'bwrap', prefix: [bwrap, '--dev-bind', '/', '/', '--proc', '/proc', '--unshare-pid', '--die-with-parent', '--'] });
  }
  const unshare = await which('unshare', env);
  if (unshare) {
    const pid = ['--pid', '--fork', '--kill-child', '--mount-proc'];
    // Without privileges a user namespace is needed, mapped to the user's own ids.
    found.push({ kind: 'namespace', tool: 'unshare', prefix: [unshare, ...pid, '--'] });
    found.push({ kind: 'namespace', tool: 'unshare', prefix: [unshare, '--user', '--map-current-user', ...pid, '--'] });
  }
  return found;
}

/**
 * How commands can be contained here: a PID namespace if one can be made (tried with a command
 * that does nothing), else the tree. Costs a few milliseconds on Linux: keep the answer for a run
 * of commands.
 */
export async function detectContainment(platform: NodeJS.Platform = process.platform, env: NodeJS.ProcessEnv = process.env): Promise<Containment> {
  if (platform !== 'linux') return { kind: 'tree' };
  for (const candidate of await candidates(env)) {
    if (candidate.kind !== 'namespace') continue;
    const probe = await runBounded({
      argv: [candidate.prefix[0]!, ...candidate.prefix.slice(1), '/bin/sh', '-c', 'exit 0'],
      cwd: '/',
      env,
      timeoutMs: 5000,
      maxOutputChars: 1000,
    });
    if (probe.exitCode === 0 && !probe.spawnError) return candidate;
  }
  return { kind: 'tree' };
}

/** The argument vector that runs `argv` contained. */
export function containedArgv(containment: Containment, argv: readonly [string, ...string[]]): [string, ...string[]] {
  if (containment.kind === 'tree') return [...argv];
  return [containment.prefix[0]!, ...containment.prefix.slice(1), ...argv];
}

/**
 * Kills every process whose environment carries `RUN_MARK_VARIABLE=mark`; Linux only, a no-op
 * elsewhere. Each one found is stopped at once (SIGSTOP: it forks no more), the processes are
 * looked for again until `quietRounds` rounds in a row (default 3) find no new one (a process
 * caught in the middle of a fork or an exec shows up in the next), then all are killed (SIGKILL),
 * and waited for until they are gone. After a PID namespace ended, one round is enough: its
 * processes were all killed by the kernel and fork no more; the sweep then only waits until the
 * last of them is gone. Returns how many it found.
 */
export async function sweepMarked(mark: string, options: { quietRounds?: number; platform?: NodeJS.Platform } = {}): Promise<number> {
  if ((options.platform ?? process.platform) !== 'linux') return 0;
  const quietRounds = options.quietRounds ?? 3;
  const needle = Buffer.from(`\0${RUN_MARK_VARIABLE}=${mark}\0`);
  const first = Buffer.from(`${RUN_MARK_VARIABLE}=${mark}\0`);
  const stopped = new Set<number>();
  for (let quiet = 0, round = 0; quiet < quietRounds && round < 50; round++) {
    let names: string[];
    try {
      names = await readdir('/proc');
    } catch {
      break;
    }
    const before = stopped.size;
    await Promise.all(
      names.map(async (name) => {
        const pid = Number(name);
        if (!Number.isInteger(pid) || pid === process.pid || stopped.has(pid)) return;
        let environ: Buffer;
        try {
          environ = await readFile(`/proc/${pid}/environ`);
        } catch {
          return;
        }
        if (!environ.includes(needle) && !environ.subarray(0, first.length).equals(first)) return;
        try {
          process.kill(pid, 'SIGSTOP');
          stopped.add(pid);
        } catch {
          // Gone already.
        }
      }),
    );
    quiet = stopped.size === before ? quiet + 1 : 0;
    if (quiet > 0 && quiet < quietRounds) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  for (const pid of stopped) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
  // Killed is not yet dead: wait (a little) until each is gone or a zombie, so that what the
  // caller does next never meets one of them.
  let dying = [...stopped];
  for (let round = 0; dying.length > 0 && round < 200; round++) {
    if (round > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    const states = await Promise.all(dying.map((pid) => readFile(`/proc/${pid}/stat`, 'latin1').then((stat) => stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3), () => 'gone')));
    dying = dying.filter((_, i) => states[i] !== 'gone' && states[i] !== 'Z' && states[i] !== 'X');
  }
  return stopped.size;
}
