// The sandbox backend: bubblewrap, where no container engine is available. Every command is
// its own sandbox with its own PID namespace (everything in it dies with it), no network, no
// capabilities and no new privileges (also when Belay runs as root), and only what the phase
// needs: read-only system folders (an allowlist of /etc), the workspace at /app, a private /tmp
// and home kept for the run, and, in the agent phase, the agent's own folders read-only with
// the task folders and run records masked inside them; in the verify phase, /tests and /logs.
// Ways in and out, agent phase only, all through Unix sockets in the session's short private
// folder: an SDK 2.0 agent's port (the host connects to /belay/agent.sock), and host services
// (the relay's sockets, shown read-only at /run/belay, reached at 127.0.0.1:<port> inside).
// Both are served by one bridge (Belay's own Node) that is the parent of the agent's command:
// it listens before the command starts, and killing it ends the sandbox (its PID namespace
// dies with the sandbox's first process), so the agent cannot replace it and keep running.
import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { runBounded } from '../../../shared/process.ts';
import { programText } from '../../../shared/programText.ts';
import { BackendUnavailableError, connectEndpoint, programEnvironment, spawnHost, type Backend, type CommandSpec, type HostCommand, type BaseEnvironment, type Phase, type RunFolders } from './backend.ts';
import { limitFileSize } from './file-size.ts';
import { checkServices, insidePort, ServiceRelay, socketFolder } from './services.ts';
import { killMarked } from './sweep.ts';

export interface SandboxOptions {
  bwrap?: string;
}

/** Top-level system folders shown read-only (or as the symlinks they are). */
const SYSTEM_FOLDERS = ['usr', 'bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32'];

/**
 * What programs read in /etc: the loader, users and groups, locales and time zones, certificates,
 * alternatives, shells' startup files, interpreters' settings. Secrets (shadow, sudoers, ssh host
 * keys, ssl/private) are never among them.
 */
const ETC_ENTRIES = [
  'alternatives', 'bash.bashrc', 'bash_completion.d', 'ca-certificates', 'ca-certificates.conf', 'crypto-policies', 'debian_version',
  'fonts', 'gai.conf', 'group', 'host.conf', 'hostname', 'hosts', 'inputrc', 'issue', 'ld.so.cache', 'ld.so.conf', 'ld.so.conf.d',
  'locale.alias', 'locale.conf', 'locale.gen', 'localtime', 'lsb-release', 'magic', 'magic.mime', 'mailcap', 'mime.types',
  'nsswitch.conf', 'os-release', 'passwd', 'perl', 'pki', 'profile', 'profile.d', 'protocols', 'redhat-release', 'resolv.conf',
  'rpc', 'services', 'shells', 'ssl', 'terminfo', 'timezone', 'vim', 'xdg', 'zsh',
];
/** Versioned folders such as python3.11. */
const ETC_PREFIXES = ['python', 'java', 'gcc', 'ImageMagick'];
/** Inside allowed /etc folders, still masked. */
const ETC_MASKED = ['ssl/private', 'pki/tls/private'];

/** The host's system view, computed once per backend. */
export interface SystemView {
  /** bwrap arguments that build the read-only system part of the root. */
  args: string[];
  /** PATH inside: the host's PATH entries that exist inside. */
  path: string;
}

function entryArgs(full: string): string[] {
  let stat;
  try {
    stat = lstatSync(full);
  } catch {
    return [];
  }
  if (stat.isSymbolicLink()) return ['--symlink', readlinkSync(full), full];
  return ['--ro-bind', full, full];
}

export function systemView(hostPath = process.env.PATH ?? '', root = '/'): SystemView {
  const args: string[] = [];
  for (const name of SYSTEM_FOLDERS) args.push(...entryArgs(path.join(root, name)));
  let etc: string[] = [];
  try {
    etc = readdirSync(path.join(root, 'etc'));
  } catch {
    // no /etc: programs cope
  }
  for (const name of etc.sort()) {
    if (ETC_ENTRIES.includes(name) || ETC_PREFIXES.some((prefix) => name.startsWith(prefix))) args.push(...entryArgs(path.join(root, 'etc', name)));
  }
  for (const masked of ETC_MASKED) {
    const full = path.join(root, 'etc', masked);
    if (existsSync(full) && lstatSync(full).isDirectory()) args.push('--tmpfs', full, '--remount-ro', full);
  }
  const shown = (dir: string) => SYSTEM_FOLDERS.some((name) => dir === `/${name}` || dir.startsWith(`/${name}/`));
  const entries = hostPath.split(':').filter((dir) => dir.startsWith('/') && shown(dir));
  const fallback = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];
  return { args, path: [...new Set(entries.length > 0 ? entries : fallback)].join(':') };
}

/** What one sandboxed command sees, beyond the system view. */
export interface SandboxLayout {
  phase: Phase;
  folders: Pick<RunFolders, 'workspace' | 'tests' | 'logs' | 'control' | 'agentState'>;
  /** Private, writable, kept for the run: shown as /tmp and as the home. */
  tmp: string;
  home: string;
  /** The home as seen inside. */
  homeInside: string;
  /** Shown read-only at `path` (as the agent names it) from `source` (where it really is). */
  agentFolders: readonly { path: string; source: string }[];
  /** Real paths never shown, masked where they lie inside an agent folder. */
  hidden: readonly string[];
  /** Folders shown read-only in every phase at the same path (Belay's own runtime for the port bridge). */
  runtime: readonly string[];
  /** The relay's sockets of the host services, shown read-only at SERVICES_INSIDE in the agent phase. */
  services?: string;
  cwd: string;
}

/** Where the agent phase sees the run's agent-state folder (an installed CLI's own files). */
export const STATE_INSIDE = '/belay-state';

/** Where the sandbox shows the host services' sockets. */
export const SERVICES_INSIDE = '/run/belay';

function inside(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent.endsWith('/') ? parent : `${parent}/`);
}

/** The bwrap arguments (after the system view) for one command. */
export function layoutArgs(layout: SandboxLayout): string[] {
  const args = ['--bind', layout.folders.workspace, '/app', '--bind', layout.tmp, '/tmp', '--bind', layout.home, layout.homeInside];
  args.push('--symlink', '../tmp', '/var/tmp');
  for (const dir of layout.runtime) args.push('--ro-bind', dir, dir);
  if (layout.phase === 'agent') {
    args.push('--bind', layout.folders.control, '/belay');
    if (layout.folders.agentState) args.push('--bind', layout.folders.agentState, STATE_INSIDE);
    if (layout.services !== undefined) args.push('--ro-bind', layout.services, SERVICES_INSIDE);
    for (const dir of layout.agentFolders) args.push('--ro-bind', dir.source, dir.path);
    // Task folders and run records under the agent's folders: an empty, read-only folder instead.
    for (const dir of layout.agentFolders) {
      for (const hidden of layout.hidden) {
        if (hidden === dir.source || !inside(hidden, dir.source) || !existsSync(hidden)) continue;
        const target = path.join(dir.path, path.relative(dir.source, hidden));
        if (lstatSync(hidden).isDirectory()) args.push('--tmpfs', target, '--remount-ro', target);
        else args.push('--ro-bind', '/dev/null', target);
      }
    }
  } else {
    args.push('--ro-bind', layout.folders.tests, '/tests', '--bind', layout.folders.logs, '/logs');
  }
  args.push('--remount-ro', '/', '--chdir', layout.cwd);
  return args;
}

/**
 * The namespaces and privileges: everything unshared (no network), a PID namespace that ends
 * with the sandbox, no capabilities and no new privileges whatever the user, no user namespaces
 * inside (they would give capabilities back), a fresh /proc with /proc/sys read-only, a minimal
 * /dev with a small /dev/shm.
 */
export function isolationArgs(userNamespace: boolean): string[] {
  // No --new-session: the sandbox has no terminal to inject into (its stdio are pipes), and
  // staying in the harness's process group lets it find an agent's listening ports.
  const args = ['--unshare-all', '--die-with-parent', '--cap-drop', 'ALL'];
  if (userNamespace) args.push('--unshare-user', '--disable-userns');
  args.push('--dev', '/dev', '--size', String(64 * 1024 * 1024), '--tmpfs', '/dev/shm', '--proc', '/proc', '--ro-bind', '/proc/sys', '/proc/sys');
  return args;
}

/** Whether an agent folder would show the user's whole home (or more): refused. */
export function tooWide(dir: string, home = os.homedir()): boolean {
  return dir === '/' || inside(home, dir);
}

/** What the bridge serves: Unix sockets piped to inside ports, inside ports piped to Unix sockets. */
export interface BridgePlan {
  /** [socket, port]: the harness connects to the socket, the bridge to 127.0.0.1:port (SDK 2.0). */
  in: [string, number][];
  /** [port, socket]: programs connect to 127.0.0.1:port, the bridge to the socket (host services). */
  out: [number, string][];
}

// The bridge: argv = [plan (JSON), program, ...args]. It listens as planned, then runs the
// program with the same stdio and environment (less the variable that makes Electron a Node),
// passes on termination signals, and ends as the program ends (same code, same signal). It is in
// the agent's process group: its program starts with BELAY_HELPER_MARK, so that the protocol hints
// never take its listeners (the services' ports) for the agent's.
const BRIDGE_SOURCE = programText(import.meta.url, './programs/sandbox-bridge.cjs');

/** The command line that runs `argv` under the bridge with Belay's Node (`node`). */
export function bridgedArgv(node: string, plan: BridgePlan, argv: readonly string[]): string[] {
  return [node, '-e', BRIDGE_SOURCE, JSON.stringify(plan), ...argv];
}

export function realDir(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return path.resolve(dir);
  }
}

/**
 * The base variables of a program in a sandbox: the system view's PATH, a home where root's or the
 * user's is (a private one is bound there), and this process's LANG and TERM.
 */
export function sandboxBaseEnvironment(system: SystemView): BaseEnvironment {
  const home = process.getuid?.() === 0 ? '/root' : os.homedir();
  return { PATH: system.path, HOME: home, LANG: process.env.LANG ?? 'C.UTF-8', TERM: process.env.TERM ?? 'dumb' };
}

/** What a working bubblewrap here needs: the program, the isolation flags that work, the system view. */
export interface SandboxProbe {
  bwrap: string;
  isolation: string[];
  system: SystemView;
}

/**
 * Probes once; throws BackendUnavailableError with bwrap's own words when it cannot run here.
 * Where user namespaces are unavailable, root still gets the sandbox without one.
 */
export async function probeSandbox(options: SandboxOptions = {}): Promise<SandboxProbe> {
  const bwrap = options.bwrap ?? '/usr/bin/bwrap';
  if (process.platform !== 'linux') throw new BackendUnavailableError('sandbox', `bubblewrap needs Linux (this is ${process.platform})`);
  if (!existsSync(bwrap)) throw new BackendUnavailableError('sandbox', `${bwrap} not found (Debian/Ubuntu: apt-get install bubblewrap)`);
  const system = systemView();
  const probe = async (userNamespace: boolean) =>
    runBounded({
      argv: [bwrap, ...isolationArgs(userNamespace), ...system.args, '--tmpfs', '/app', '--remount-ro', '/', '--', '/bin/sh', '-c', 'exit 0'],
      cwd: '/',
      env: { PATH: system.path },
      timeoutMs: 10_000,
      maxOutputChars: 2000,
    });
  let userNamespace = true;
  let result = await probe(true);
  if (result.exitCode !== 0 && !result.spawnError && process.getuid?.() === 0) {
    const without = await probe(false);
    if (without.exitCode === 0) {
      userNamespace = false;
      result = without;
    }
  }
  if (result.spawnError) throw new BackendUnavailableError('sandbox', result.spawnError.message);
  if (result.exitCode !== 0) {
    const said = result.stderr.text('…').trim() || `exit code ${result.exitCode ?? result.signal}`;
    throw new BackendUnavailableError('sandbox', `${bwrap} failed: ${said} (user namespaces may be disabled here)`);
  }
  return { bwrap, isolation: isolationArgs(userNamespace), system };
}

export async function sandboxBackend(options: SandboxOptions = {}): Promise<Backend> {
  const { bwrap, isolation, system } = await probeSandbox(options);
  const node = realpathSync(process.execPath);
  const runtime = path.dirname(node);
  return {
    name: 'sandbox',
    label: 'sandbox (bubblewrap: only /app writable, no network, no capabilities)',
    isolated: true,
    keepsWorkBetweenSessions: () => true,
    async open(spec) {
      const { folders } = spec;
      // Shown where the agent names them, read from where they really are (through symlinks).
      const agentFolders = [...new Set(spec.agentFolders.map((dir) => path.resolve(dir)))].map((dir) => ({ path: dir, source: realDir(dir) }));
      const userHome = realDir(os.homedir());
      const wide = agentFolders.find((dir) => tooWide(dir.source, userHome));
      if (wide) throw new Error(`the agent's folder ${wide.path} would show your whole home folder to the agent: give the agent a folder of its own`);
      const hidden = spec.hidden.map(realDir);
      for (const dir of agentFolders) {
        const covering = hidden.find((h) => inside(dir.source, h));
        if (covering) throw new Error(`the agent's folder ${dir.path} is inside ${covering}, which the agent must not see (a task's tests and solution, or run records): give the agent a folder of its own`);
      }
      // A random part in the private folders' paths: it shows in the mount table of every process
      // of this session, which is how the sweep finds them.
      const token = randomBytes(12).toString('hex');
      const privateRoot = path.join(folders.scratch, `sandbox-${token}`);
      const tmp = path.join(privateRoot, 'tmp');
      const home = path.join(privateRoot, 'home');
      for (const dir of [tmp, home, folders.control, folders.logs, folders.tests]) await mkdir(dir, { recursive: true });
      if (folders.agentState) await mkdir(folders.agentState, { recursive: true, mode: 0o700 });
      const services = checkServices(spec.services);
      // The sockets: the agent's (SDK 2.0) at /belay, the services' relay read-only at /run/belay.
      const sockets = await socketFolder();
      const agentSockets = path.join(sockets.path, 'agent');
      const serviceSockets = path.join(sockets.path, 'services');
      await mkdir(agentSockets, { mode: 0o700 });
      await mkdir(serviceSockets, { mode: 0o755 });
      let relay: ServiceRelay | undefined;
      if (services.length > 0) {
        relay = await ServiceRelay.open(services, { kind: 'unix', dir: serviceSockets }, sockets.path).catch(async (error: unknown) => {
          await sockets.remove();
          throw error;
        });
      }
      const base = sandboxBaseEnvironment(system);
      const homeInside = base.HOME;
      const mark = { file: 'mountinfo' as const, text: token };
      let phase: Phase = 'agent';
      const hostCommand = (command: CommandSpec): HostCommand => {
        const agentPhase = phase === 'agent';
        const plan: BridgePlan = {
          in: agentPhase && command.exposePort !== undefined ? [['/belay/agent.sock', command.exposePort]] : [],
          out: agentPhase ? services.map((service): [number, string] => [insidePort(services, service.name), `${SERVICES_INSIDE}/${service.name}.sock`]) : [],
        };
        const bridged = plan.in.length + plan.out.length > 0;
        const argv = bridged ? bridgedArgv(node, plan, command.argv) : [...command.argv];
        const layout: SandboxLayout = {
          phase,
          folders: { ...folders, control: agentSockets },
          tmp,
          home,
          homeInside,
          agentFolders,
          hidden,
          runtime: bridged ? [runtime] : [],
          ...(agentPhase && relay ? { services: serviceSockets } : {}),
          cwd: command.cwd ?? '/app',
        };
        // Electron (the editor's runtime) behaves as Node only with ELECTRON_RUN_AS_NODE; the bridge drops it for the program.
        const env = programEnvironment(base, bridged ? { ...command.env, ELECTRON_RUN_AS_NODE: '1' } : command.env);
        return { argv: limitFileSize([bwrap, ...isolation, ...system.args, ...layoutArgs(layout), '--', ...argv], spec.diskBudgetBytes), cwd: '/', env };
      };
      return {
        backend: 'sandbox',
        workdir: '/app',
        stateDir: folders.agentState ? STATE_INSIDE : undefined,
        testsDir: '/tests',
        logsDir: '/logs',
        get phase() {
          return phase;
        },
        spawn: (command) => spawnHost(hostCommand(command), command),
        connect: () => connectEndpoint({ socketPath: path.join(agentSockets, 'agent.sock') }),
        serviceUrl: (name) => `http://127.0.0.1:${insidePort(services, name)}`,
        async endAgentPhase() {
          await relay?.close();
          await killMarked(mark);
        },
        async startVerifyPhase() {
          phase = 'verify';
        },
        async close() {
          await relay?.close();
          await killMarked(mark);
          // The private /tmp and home go with the sandbox: the records keep /app.
          await rm(privateRoot, { recursive: true, force: true });
          await sockets.remove();
        },
      };
    },
  };
}
