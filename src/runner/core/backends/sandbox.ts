// The sandbox backend: bubblewrap, where no container engine is available. Each phase is one
// sandbox whose program is Belay's executor (belay-exec, shown read-only at /.belay/exec; see
// src/shared/executor/), started once and running every command of the phase over its stdin and
// stdout: its own PID namespace (everything in it dies with it), no network, no capabilities and
// no new privileges (also when Belay runs as root), and only what the phase needs: read-only
// system folders (an allowlist of /etc), the workspace at /app, a private /tmp and home kept for
// the run, and, in the agent phase, the agent's own folders read-only with the task folders and
// run records masked inside them. Ending the agent phase ends its sandbox (the executor kills
// every process it started, then the PID namespace goes); the verify phase is a new sandbox with
// /tests and /logs, which no agent-phase process ever saw.
// Ways in and out, all over the executor's channel: in the agent phase an SDK 2.0 agent's port
// (`connect`); in each phase its own host services (the executor listens on 127.0.0.1:<port>
// inside and hands each connection over, piped here to the service's socket): the agent phase's
// end with its sandbox, the verify phase's (its egress proxy) are given to `startVerifyPhase`.
// Nothing of the host is mounted for them.
import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { errorMessage } from '../../../shared/errors.ts';
import { executorBinary } from '../../../shared/executor/binary.ts';
import { startExecutor } from '../../../shared/executor/client.ts';
import type { Executor } from '../../../shared/executor/contract.ts';
import { runBounded } from '../../../shared/process.ts';
import { BackendUnavailableError, programEnvironment, type Backend, type BaseEnvironment, type Phase, type RunFolders } from './backend.ts';
import { spawnOn } from './executor-child.ts';
import { checkServices, insidePort, ServiceLinks, socketFolder } from './services.ts';
import { hostPidOf, killMarked } from './sweep.ts';

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
  /** Folders shown read-only in every phase at the same path. */
  runtime: readonly string[];
  /** The executor's program on the host, shown read-only at EXECUTOR_INSIDE. */
  executor?: string;
  /** The relay's sockets of the host services, shown read-only at SERVICES_INSIDE in the agent phase. */
  services?: string;
  cwd: string;
}

/** Where the agent phase sees the run's agent-state folder (an installed CLI's own files). */
export const STATE_INSIDE = '/belay-state';

/** Where the sandbox shows the host services' sockets. */
export const SERVICES_INSIDE = '/run/belay';

/** Where each phase's sandbox has the executor (its program). */
export const EXECUTOR_INSIDE = '/.belay/exec';

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
  if (layout.executor !== undefined) args.push('--ro-bind', layout.executor, EXECUTOR_INSIDE);
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
  const executor = executorBinary();
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
      // The current phase's services: the agent phase's now, the verify phase's once it starts.
      let services = checkServices(spec.services);
      // The short links to long service sockets, in a private folder never shown to the run.
      let sockets = services.length > 0 ? await socketFolder() : undefined;
      const openLinks = async (): Promise<ServiceLinks | undefined> => {
        if (services.length === 0) return undefined;
        sockets ??= await socketFolder();
        return ServiceLinks.open(services, sockets.path);
      };
      let links = await openLinks().catch(async (error: unknown) => {
        await sockets?.remove();
        throw error;
      });
      const base = sandboxBaseEnvironment(system);
      const homeInside = base.HOME;
      const mark = { file: 'mountinfo' as const, text: token };
      let phase: Phase = 'agent';
      /** The phase's sandbox: bubblewrap whose program is the executor, its stdin and stdout the channel. */
      const startPhase = async (now: Phase): Promise<Executor> => {
        const layout: SandboxLayout = { phase: now, folders, tmp, home, homeInside, agentFolders, hidden, runtime: [], executor, cwd: '/app' };
        const started = await startExecutor({ argv: [bwrap, ...isolation, ...system.args, ...layoutArgs(layout), '--', EXECUTOR_INSIDE], cwd: '/', env: {} });
        const [phaseLinks, phaseServices] = [links, services];
        if (phaseLinks) {
          try {
            for (const service of phaseServices) await started.listen(insidePort(phaseServices, service.name), (stream) => phaseLinks.accept(service.name, stream));
          } catch (error) {
            await started.close();
            throw new Error(`the host services could not be started in the sandbox: ${errorMessage(error)}`);
          }
        }
        return started;
      };
      let current: Promise<Executor> = startPhase('agent');
      // Caught here so that a failed start is reported once, where it is awaited.
      current.catch(() => undefined);
      try {
        await current;
      } catch (error) {
        await sockets?.remove();
        throw error;
      }
      const endPhase = async () => {
        const executor = await current.catch(() => undefined);
        links?.close();
        await executor?.close();
        // What the phase's executor could not reach (it never can be left: its PID namespace ends with it).
        await killMarked(mark);
      };
      let agentEnding: Promise<void> | undefined;
      const endAgentPhase = () => (agentEnding ??= endPhase());
      return {
        backend: 'sandbox',
        workdir: '/app',
        stateDir: folders.agentState ? STATE_INSIDE : undefined,
        testsDir: '/tests',
        logsDir: '/logs',
        get phase() {
          return phase;
        },
        spawn(command) {
          const child = spawnOn(current, {
            argv: command.argv,
            cwd: command.cwd ?? '/app',
            env: programEnvironment(base, command.env),
            stdin: command.stdin ?? 'pipe',
            ...(spec.diskBudgetBytes !== undefined ? { maxFileBytes: Math.ceil(spec.diskBudgetBytes) } : {}),
            ...(command.onStdout ? { onStdout: command.onStdout } : {}),
            ...(command.onStderr ? { onStderr: command.onStderr } : {}),
          });
          // The pid as this machine sees it (the protocol hints read its process group in /proc).
          let hostPid: number | undefined;
          return {
            get pid() {
              const inner = child.pid;
              if (inner !== undefined && hostPid === undefined) hostPid = hostPidOf(mark, inner);
              return hostPid;
            },
            write: (text) => child.write(text),
            endInput: () => child.endInput(),
            kill: () => child.kill(),
            ended: child.ended,
          };
        },
        connect: async (port) => (await current).connect(port),
        serviceUrl: (name) => `http://127.0.0.1:${insidePort(services, name)}`,
        endAgentPhase,
        async startVerifyPhase(verifyServices) {
          if (phase === 'verify') return;
          await endAgentPhase();
          phase = 'verify';
          // The agent phase's services ended with its sandbox; the verify phase's own (if any) listen in the new one.
          services = checkServices(verifyServices);
          links = await openLinks();
          current = startPhase('verify');
          current.catch(() => undefined);
          await current;
        },
        async close() {
          await endPhase();
          // The private /tmp and home go with the sandbox: the records keep /app.
          await rm(privateRoot, { recursive: true, force: true });
          await sockets?.remove();
        },
        // Only the folders the sandbox let its programs write are the agent's: /tmp (also /var/tmp,
        // bubblewrap's link to it) and the home, each a private folder of this session on the host.
        async artifactOutside(artifact) {
          const writable = [
            { inside: '/tmp', host: tmp },
            { inside: '/var/tmp', host: tmp },
            { inside: homeInside, host: home },
          ];
          const place = writable.find((w) => inside(artifact, w.inside));
          if (!place) return { refused: `not in a folder the sandbox's programs could write (/app, /tmp, ${homeInside}): the rest is this machine's system, shown read-only, not collected` };
          return { root: place.host, parts: path.posix.relative(place.inside, artifact).split('/').filter((part) => part !== '') };
        },
      };
    },
  };
}
