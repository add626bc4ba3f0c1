// Where agents and commands run. A backend turns "run this program inside the run's
// environment" into a host command line; protocols never know which backend they use, so a
// container engine can be added as one more implementation of `Backend`.
import { existsSync, readdirSync, lstatSync, readlinkSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import * as path from 'node:path';
import { runBounded } from '../../shared/process.ts';

/** The host folders of one run that its environment exposes. */
export interface RunFolders {
  /** The working directory agents and tests see (as /app in the sandbox). */
  workspace: string;
  /** The staged tests (seen as /tests in the sandbox); staged only after the agent finishes. */
  tests: string;
  /** Verifier logs: logs/verifier/reward.txt, logs/verifier/ctrf.json (seen as /logs). */
  logs: string;
  /** Harness-private files such as the agent's HTTP socket (seen as /belay). */
  control: string;
}

export interface CommandSpec {
  argv: readonly [string, ...string[]];
  /** Working directory as seen inside; the workspace when absent. */
  cwd?: string;
  env?: Record<string, string>;
  /** Make the staged tests visible (verification). */
  withTests?: boolean;
  /** A TCP port inside that the harness must reach (SDK 2.0); see `BackendSession.endpoint`. */
  exposePort?: number;
}

export interface HostCommand {
  argv: [string, ...string[]];
  cwd: string;
  env: NodeJS.ProcessEnv;
}

/** How the harness reaches a port inside the environment. */
export type Endpoint = { host: string; port: number } | { socketPath: string };

export interface BackendSession {
  readonly backend: string;
  /** The workspace as seen inside. */
  readonly workdir: string;
  readonly testsDir: string;
  readonly logsDir: string;
  /** The host command that runs `spec` inside this environment. */
  command(spec: CommandSpec): HostCommand;
  /** How to reach `port` for a command started with `exposePort: port`. */
  endpoint(port: number): Endpoint;
  /** Ends everything the environment still runs (a container engine would remove it here). */
  close(): Promise<void>;
}

export interface Backend {
  readonly name: string;
  /** Shown to the user beside every run, e.g. "local (no isolation)". */
  readonly label: string;
  open(folders: RunFolders): Promise<BackendSession>;
}

export class SandboxUnavailableError extends Error {
  override name = 'SandboxUnavailableError';
  constructor(reason: string) {
    super(`sandbox unavailable: ${reason}`);
  }
}

/** The shell that runs command strings: bash where present (agents assume it), else sh. */
export function shellPath(): string {
  return existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh';
}

/** A plain child process in the run's folders: no isolation, for systems without a sandbox. */
export function localBackend(): Backend {
  return {
    name: 'local',
    label: 'local (no isolation: agents can reach the whole filesystem and network)',
    async open(folders) {
      return {
        backend: 'local',
        workdir: folders.workspace,
        testsDir: folders.tests,
        logsDir: folders.logs,
        command(spec) {
          return {
            argv: [...spec.argv],
            cwd: spec.cwd ?? folders.workspace,
            env: { ...process.env, ...spec.env },
          };
        },
        endpoint: (port) => ({ host: '127.0.0.1', port }),
        async close() {},
      };
    },
  };
}

export interface SandboxOptions {
  bwrap?: string;
  /** Extra host folders made readable inside at the same path (e.g. the agent's own folder). */
  readable?: string[];
}

// Forwards connections on a Unix socket (reachable from the host through the bound control
// folder) to a TCP port on the sandbox's private loopback: the only way in from outside.
const BRIDGE_SOURCE = `const net=require('node:net');const [sock,port]=process.argv.slice(-2);
require('node:fs').rmSync(sock,{force:true});
net.createServer((c)=>{const t=net.connect(Number(port),'127.0.0.1');c.pipe(t).pipe(c);
c.on('error',()=>t.destroy());t.on('error',()=>c.destroy());}).listen(sock);`;

/**
 * bubblewrap: the run's workspace bound at /app, every other top-level folder read-only, a
 * private /tmp, no network, its own PID namespace (everything dies with it).
 * Probes once; throws SandboxUnavailableError with bwrap's own words when it cannot run here.
 */
export async function sandboxBackend(options: SandboxOptions = {}): Promise<Backend> {
  const bwrap = options.bwrap ?? '/usr/bin/bwrap';
  if (process.platform !== 'linux') throw new SandboxUnavailableError(`bubblewrap needs Linux (this is ${process.platform})`);
  if (!existsSync(bwrap)) throw new SandboxUnavailableError(`${bwrap} not found (Debian/Ubuntu: apt-get install bubblewrap)`);
  const base = baseArgs(options.readable ?? []);
  const probe = await runBounded({
    argv: [bwrap, ...base, '--tmpfs', '/app', '--', '/bin/sh', '-c', 'exit 0'],
    cwd: '/',
    timeoutMs: 10_000,
    maxOutputChars: 2000,
  });
  if (probe.spawnError) throw new SandboxUnavailableError(probe.spawnError.message);
  if (probe.exitCode !== 0) {
    const said = probe.stderr.text('…').trim() || `exit code ${probe.exitCode ?? probe.signal}`;
    throw new SandboxUnavailableError(`${bwrap} failed: ${said} (user namespaces may be disabled here)`);
  }
  return {
    name: 'sandbox',
    label: 'sandbox (bubblewrap: /app writable, rest read-only, no network)',
    async open(folders) {
      await mkdir(folders.control, { recursive: true });
      await mkdir(folders.logs, { recursive: true });
      return {
        backend: 'sandbox',
        workdir: '/app',
        testsDir: '/tests',
        logsDir: '/logs',
        command(spec) {
          const args = [...base, '--bind', folders.workspace, '/app', '--bind', folders.logs, '/logs', '--bind', folders.control, '/belay'];
          if (spec.withTests) args.push('--ro-bind', folders.tests, '/tests');
          args.push('--chdir', spec.cwd ?? '/app', '--setenv', 'HOME', '/tmp', '--setenv', 'TMPDIR', '/tmp');
          let argv: string[] = [...spec.argv];
          if (spec.exposePort !== undefined) {
            const bridge = ['-e', BRIDGE_SOURCE, '/belay/agent.sock', String(spec.exposePort)];
            argv = ['/bin/sh', '-c', '"$0" "$1" "$2" "$3" "$4" & shift 4; exec "$@"', process.execPath, ...bridge, ...argv];
          }
          return { argv: [bwrap, ...args, '--', ...argv], cwd: '/', env: { ...process.env, ...spec.env } };
        },
        endpoint: () => ({ socketPath: path.join(folders.control, 'agent.sock') }),
        // The PID namespace ends with its first process, which the harness kills by group.
        async close() {},
      };
    },
  };
}

/** Read-only binds for every top-level folder but the ones the sandbox replaces. */
function baseArgs(readable: string[]): string[] {
  const args = ['--unshare-all', '--die-with-parent', '--dev', '/dev', '--proc', '/proc'];
  for (const name of readdirSync('/')) {
    if (['proc', 'dev', 'tmp', 'sys', 'app', 'tests', 'logs', 'belay'].includes(name)) continue;
    const full = `/${name}`;
    let stat;
    try {
      stat = lstatSync(full);
    } catch {
      continue;
    }
    if (stat.isSymbolicLink()) args.push('--symlink', readlinkSync(full), full);
    else if (stat.isDirectory()) args.push('--ro-bind', full, full);
  }
  args.push('--tmpfs', '/tmp');
  // Folders under the private /tmp that the agent needs to read (its own code, say).
  for (const dir of readable) if (dir.startsWith('/tmp/') && existsSync(dir)) args.push('--ro-bind', dir, dir);
  return args;
}
