// The container backend: each run in its own container of the task's image, as the real
// harnesses run agents. The container is created with no network, no capabilities, no new
// privileges, bounded CPUs, memory and process count, /app as the working directory, the
// agent's folders read-only at their own paths, and the run's verifier logs at /logs. The
// container's main process is Belay's executor (belay-exec, mounted read-only at /.belay/exec; see
// src/shared/executor/), attached with `start --attach --interactive`: its stdin and stdout are
// the channel over which every program (the agent, its commands, the tests) is started. Nothing
// is needed in the image: no shell, no python3, no perl.
// Phases: ending the agent phase stops the container (the engine kills every process in it,
// setsid or not) and starts it again, with a fresh executor as its main process; the tests are
// then shown at /tests.
// Lifetimes: the attached session holds the executor's channel on a pipe from Belay, so when
// Belay dies, however it dies, the executor kills what it started and ends, and the container
// stops; containers carry their owner (host, process, start time) in a label, and the next Belay
// to start removes those whose owner is gone.
// Host services, each phase its own: the executor listens on 127.0.0.1:<port> inside and hands
// each connection over its channel, piped here to the service's socket. Ending the agent phase
// stops the container (the listeners with it) and cuts those connections, so the verify phase
// reaches none of them; it reaches only the services given to `startVerifyPhase` (its egress
// proxy), which its fresh executor listens for. The agent may take a port by being first (or
// kill the executor, which ends the phase): it then only loses the service.
import { randomBytes } from 'node:crypto';
import { existsSync, promises as fs, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Duplex } from 'node:stream';
import { errorMessage } from '../../../shared/errors.ts';
import { executorBinary, hostArch } from '../../../shared/executor/binary.ts';
import { startExecutor, type ChannelExecutor } from '../../../shared/executor/client.ts';
import type { RunningChild } from '../../../shared/process.ts';
import { BackendUnavailableError, programEnvironment, type ArtifactPlace, type Backend, type BackendSession, type Phase, type ServiceSpec, type SessionSpec, type SpawnSpec } from './backend.ts';
import { formatBytes } from '../records/logs.ts';
import type { TaskEnvironment } from '../tasks/task.ts';
import { detectEngine, EngineUnavailableError, failureText, type Engine, type EngineName } from './engine.ts';
import { BASE_IMAGE } from './image-base.ts';
import { taskImage, taskImageSource, VERIFIER_CONTEXT_BOUNDS } from './image-task.ts';
import { checkServices, insidePort, ServiceLinks, socketFolder, type SocketFolder } from './services.ts';
import { EnginePool, parseEngineHosts, probeRemoteEngines } from './engine-remote.ts';
import { copyExecutorIn, copyFolderBack, copyFolderIn, copyFoldersIn, hostUnreachable, watchHost } from './remote-session.ts';

export interface ContainerBackendOptions {
  /** podman or docker; the first that answers when absent. */
  engine?: EngineName;
  /** Engines on other machines (`ssh://user@host[:port][/socket]`, see engine-remote.ts): sessions go there, spread by each host's free capacity, instead of here. */
  engineHosts?: readonly string[];
  env?: NodeJS.ProcessEnv;
  /** CPUs when the task does not say (task.toml [environment] cpus). */
  cpus?: number;
  /** Memory in MB when the task does not say (task.toml [environment] memory_mb). */
  memoryMb?: number;
  /** Most processes (and threads) alive at once in a container. */
  pidsLimit?: number;
  /** Longest image build when the task does not say ([environment] build_timeout_sec). */
  buildTimeoutSec?: number;
  /** The build log kept with the run is cut beyond this (head and tail kept). */
  buildLogChars?: number;
  /** Most the container may write (its writable layer) when the task does not say ([environment] storage_mb). */
  storageMb?: number;
  /** How often the writable layer is measured against the storage limit and the run's disk budget (default 2 s). */
  storageCheckMs?: number;
  /** The agent's final /app is copied into the run's workspace when the container wrote at most this. */
  workspaceCopyLimitBytes?: number;
}

export const CONTAINER_DEFAULTS = { cpus: 2, memoryMb: 4096, pidsLimit: 1024, buildTimeoutSec: 600, buildLogChars: 2_000_000, storageMb: 4096, storageCheckMs: 2_000, workspaceCopyLimitBytes: 200 * 1024 * 1024 };

/** Labels every container of Belay carries. */
export const LABELS = { run: 'belay.run', owner: 'belay.owner', task: 'belay.task' } as const;

/** The mark of this Belay process: host, pid, and the process's start time (pids are reused). */
export function ownerMark(): string {
  return `${os.hostname()}/${process.pid}/${processStart(process.pid) ?? 'unknown'}`;
}

/** The start time of a process in clock ticks since boot, with the boot's id; undefined when it is not running. */
export function processStart(pid: number, proc = '/proc'): string | undefined {
  try {
    const stat = readFileSync(`${proc}/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const boot = readFileSync(`${proc}/sys/kernel/random/boot_id`, 'utf8').trim();
    return `${boot.slice(0, 8)}-${fields[19]}`;
  } catch {
    return undefined;
  }
}

/** Whether the Belay that labelled a container is gone (only judged for this host's containers). */
export function ownerGone(mark: string, host = os.hostname(), proc = '/proc'): boolean {
  const [owner, pid, start] = mark.split('/');
  if (owner !== host || pid === undefined || !/^\d+$/.test(pid)) return false;
  const now = processStart(Number(pid), proc);
  return now === undefined || (start !== 'unknown' && now !== start);
}

/** Removes the containers whose Belay is gone (killed before it could remove them); returns their names. */
export async function removeLeftovers(engine: Engine): Promise<string[]> {
  const label = engine.name === 'podman' ? `{{index .Labels "${LABELS.owner}"}}` : `{{.Label "${LABELS.owner}"}}`;
  const listed = await engine.run(['ps', '--all', '--filter', `label=${LABELS.owner}`, '--format', `{{.ID}}\t{{.Names}}\t${label}`], { timeoutMs: 60_000 });
  if (listed.exitCode !== 0) return [];
  const stale = listed.stdout
    .text('')
    .split('\n')
    .map((line) => line.split('\t'))
    .filter((fields) => fields.length === 3 && ownerGone(fields[2]!.trim()));
  if (stale.length === 0) return [];
  await engine.run(['rm', '--force', ...stale.map((fields) => fields[0]!)], { timeoutMs: 120_000 });
  return stale.map((fields) => fields[1]!);
}

/** A container name from the run id (names allow [a-zA-Z0-9_.-], starting with a letter or digit). */
export function containerName(runId: string): string {
  return `belay-${runId.replace(/[^a-zA-Z0-9_.-]/g, '_')}`.slice(0, 200);
}

/**
 * Variables the engine client itself reads: these go on the command line with their values
 * (nothing secret about them); every other variable reaches the container through the client's
 * environment (`--env NAME`), so that secrets never show in the host's process list.
 */
function clientReads(name: string): boolean {
  return /^(PATH|HOME|USER|LOGNAME|SHELL|TMPDIR|TZ|LANG|LC_\w+|TERM|XDG_\w+|CONTAINERS?_\w+|DOCKER_\w+|BUILDAH_\w+|PODMAN_\w+|REGISTRY_AUTH_FILE|DBUS_SESSION_BUS_ADDRESS|GODEBUG|GOMAXPROCS|HTTPS?_PROXY|NO_PROXY|https?_proxy|no_proxy)$/.test(name);
}

/** `exec` flags and the client's environment that give a program exactly `env`. */
export function execEnvironment(clientEnv: Record<string, string>, env: Record<string, string>): { flags: string[]; env: Record<string, string> } {
  const flags: string[] = [];
  const passed: Record<string, string> = { ...clientEnv };
  for (const [name, value] of Object.entries(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) continue;
    if (clientReads(name)) flags.push('--env', `${name}=${value}`);
    else {
      flags.push('--env', name);
      passed[name] = value;
    }
  }
  return { flags, env: passed };
}

/** Where the container has the executor (its main process). */
const EXECUTOR_INSIDE = '/.belay/exec';

/** Where the agent phase sees the run's agent-state folder. */
const STATE_INSIDE = '/belay-state';

/** The bounds a container gets: the task's [environment] first, then the settings. */
export function containerLimits(environment: Pick<TaskEnvironment, 'cpus' | 'memoryMb'>, options: ContainerBackendOptions, hostCpus = os.availableParallelism()): { cpus: number; memoryMb: number; pidsLimit: number } {
  const cpus = environment.cpus ?? options.cpus ?? CONTAINER_DEFAULTS.cpus;
  return {
    cpus: Math.max(0.01, Math.min(cpus, hostCpus)),
    memoryMb: Math.max(6, Math.round(environment.memoryMb ?? options.memoryMb ?? CONTAINER_DEFAULTS.memoryMb)),
    pidsLimit: options.pidsLimit ?? CONTAINER_DEFAULTS.pidsLimit,
  };
}

/** Folders of the image's own system: a host folder there would shadow the image's programs. */
const SYSTEM_FOLDERS = ['/bin', '/boot', '/dev', '/etc', '/lib', '/lib32', '/lib64', '/libx32', '/proc', '/run', '/sbin', '/sys', '/usr', '/var'];

function inside(parent: string, child: string): boolean {
  return child === parent || child.startsWith(`${parent}/`);
}

/** The real path of an existing file or folder (symlinks resolved); undefined when it is not there. */
function realPath(file: string): string | undefined {
  try {
    return realpathSync(file);
  } catch {
    return undefined;
  }
}

/**
 * Mount flags: the agent's folders read-only at the paths given (the agent's command names them
 * so, even through a symlink: the engine binds what they point to), the hidden paths in them
 * (compared as real paths) masked by an empty folder (`empty`) or, for a file, by /dev/null.
 * `skipped` names the agent's folders that are not shown: '/', and the image's system folders
 * (the image brings its own).
 */
export function agentMounts(agentFolders: readonly string[], hidden: readonly string[], empty: string): { flags: string[]; skipped: string[] } {
  const masked = [...new Set(hidden.map((h) => realPath(path.resolve(h))).filter((h): h is string => h !== undefined))];
  const skipped: string[] = [];
  const folders: { shown: string; real: string }[] = [];
  for (const shown of new Set(agentFolders.map((folder) => path.resolve(folder)))) {
    const real = realPath(shown);
    // A folder that is (or lies in) a hidden one is not shown at all.
    if (real === undefined || masked.some((h) => inside(h, real))) continue;
    if ([shown, real].some((p) => p === '/' || SYSTEM_FOLDERS.some((system) => inside(system, p)))) skipped.push(shown);
    else if (!folders.some((folder) => folder.shown === shown)) folders.push({ shown, real });
  }
  const flags: string[] = [];
  const mount = (source: string, target: string) => {
    if (/[:,]/.test(source) || /[:,]/.test(target)) throw new Error(`cannot show ${target} in the container: its path holds ':' or ','`);
    flags.push('--volume', `${source}:${target}:ro`);
  };
  for (const folder of folders) mount(folder.shown, folder.shown);
  // Inside a masked folder there is nothing left to mask (and no folder to mount on).
  const outermost = masked.filter((target) => !masked.some((other) => other !== target && inside(other, target)));
  for (const folder of folders) {
    for (const target of outermost) {
      if (target === folder.real || !inside(folder.real, target)) continue;
      mount(statSync(target).isDirectory() ? empty : '/dev/null', path.join(folder.shown, path.relative(folder.real, target)));
    }
  }
  return { flags, skipped };
}

/** The user that owns the run's logs folder while the agent runs: root inside cannot write it. */
const NOBODY = 65534;

/**
 * Gives a host folder to `uid` as the container sees users: directly when Belay runs as root
 * beside a rootful engine (the container's users are the host's), through `podman unshare` for
 * rootless podman (its users are mapped). False when neither can be done here.
 */
export async function chownForContainer(engine: Engine, dir: string, uid: number): Promise<boolean> {
  if (engine.info.rootless) {
    if (engine.name !== 'podman') return false;
    const result = await engine.run(['unshare', 'chown', `${uid}:${uid}`, dir], { timeoutMs: 60_000 });
    return result.exitCode === 0;
  }
  if (process.getuid?.() !== 0) return false;
  await fs.chown(dir, uid, uid);
  return true;
}

export async function containerBackend(options: ContainerBackendOptions = {}): Promise<Backend> {
  let engines: Engine[];
  let unreachable: string[] = [];
  try {
    if (options.engineHosts && options.engineHosts.length > 0) {
      let hosts;
      try {
        hosts = parseEngineHosts(options.engineHosts);
      } catch (error) {
        throw new EngineUnavailableError(errorMessage(error));
      }
      const probed = await probeRemoteEngines(options.engine, hosts, { ...(options.env ? { env: options.env } : {}) });
      if (probed.engines.length === 0) throw new EngineUnavailableError(`no engine host answers (${probed.failures.join('; ')})`);
      engines = probed.engines;
      unreachable = probed.failures;
    } else engines = [await detectEngine({ ...(options.engine ? { engine: options.engine } : {}), ...(options.env ? { env: options.env } : {}) })];
  } catch (error) {
    if (error instanceof EngineUnavailableError) throw new BackendUnavailableError('container', `${error.message}; install podman (Debian/Ubuntu: apt-get install podman runc) or start docker`);
    throw error;
  }
  // "The next start removes labelled leftovers": containers of a Belay that was killed, on every host.
  await Promise.all(engines.map((engine) => removeLeftovers(engine).catch(() => [])));
  const owner = ownerMark();
  // Each engine's images' configuration, read once.
  const images = new Map<Engine, Map<string, ImageConfig>>(engines.map((engine) => [engine, new Map()]));
  const pool = new EnginePool(engines);
  const where = engines.length === 1 ? engines[0]!.label : `${engines[0]!.name} on ${engines.map((engine) => engine.remote?.host).join(', ')}`;
  return {
    name: 'container',
    label: `container (${where}: the task's image, no network, no capabilities)${unreachable.length > 0 ? ` (not answering: ${unreachable.join('; ')})` : ''}`,
    isolated: true,
    keepsWorkBetweenSessions: (task) => !task.environment.dockerfile,
    images: true,
    open: async (spec) => {
      const engine = pool.take();
      // A host that stops answering takes no more sessions while another answers.
      const onLimit: SessionSpec['onLimit'] = (cause, message) => {
        if (cause === 'host_lost') pool.markLost(engine);
        spec.onLimit?.(cause, message);
      };
      try {
        const session = await openSession(engine, owner, options, { ...spec, onLimit }, images.get(engine)!);
        const close = session.close.bind(session);
        let released = false;
        session.close = async () => {
          try {
            await close();
          } finally {
            if (!released) pool.release(engine);
            released = true;
          }
        };
        return session;
      } catch (error) {
        pool.release(engine);
        throw error;
      }
    },
  };
}

async function openSession(engine: Engine, owner: string, options: ContainerBackendOptions, spec: SessionSpec, images: Map<string, ImageConfig>): Promise<BackendSession> {
  const { folders, task, signal } = spec;
  for (const dir of [folders.logs, folders.tests, folders.scratch, path.dirname(folders.environmentLog)]) await fs.mkdir(dir, { recursive: true });
  // The agent's own state (an installed CLI's): writable by whichever user the task's image runs as.
  if (folders.agentState) {
    await fs.mkdir(folders.agentState, { recursive: true });
    await fs.chmod(folders.agentState, 0o777);
  }
  const stateMount = folders.agentState ? ['--volume', `${path.resolve(folders.agentState)}:${STATE_INSIDE}:rw`] : [];
  await fs.mkdir(folders.control, { recursive: true, mode: 0o700 });

  // 1. The image.
  // A separate verifier's own image (its tests/Dockerfile, or a prebuilt one) instead of the task's.
  const source = spec.image ?? (await taskImageSource(engine, task, spec.onNotice, signal));
  let image: string;
  if (source.kind === 'base') {
    if (!(await engine.imageExists(BASE_IMAGE, signal))) {
      throw new Error(`the task has no Dockerfile, so it runs in ${BASE_IMAGE}, which is not built yet: run 'belay image build-base' once`);
    }
    image = BASE_IMAGE;
    await fs.writeFile(folders.environmentLog, `No Dockerfile in the task: ${BASE_IMAGE}, /app seeded from the task's environment files.\n`);
  } else {
    const built = await taskImage({
      engine,
      taskName: spec.image ? `${task.name}-verifier` : task.name,
      taskDir: task.dir,
      source,
      ...(spec.image ? { contextBounds: VERIFIER_CONTEXT_BOUNDS } : {}),
      logFile: folders.environmentLog,
      logLimitChars: options.buildLogChars ?? CONTAINER_DEFAULTS.buildLogChars,
      timeoutMs: (task.environment.buildTimeoutSec ?? options.buildTimeoutSec ?? CONTAINER_DEFAULTS.buildTimeoutSec) * 1000,
      ...(spec.onNotice ? { onNotice: spec.onNotice } : {}),
      ...(signal ? { signal } : {}),
    });
    image = built.image;
  }
  let config = images.get(image);
  if (config === undefined) images.set(image, (config = await imageConfig(engine, image)));

  // 2. The container, created stopped.
  const services = checkServices(spec.services);
  const empty = path.join(path.resolve(folders.scratch), 'empty');
  await fs.mkdir(empty, { recursive: true });
  const name = containerName(spec.runId);
  const limits = containerLimits(task.environment, options);
  const storageBytes = (task.environment.storageMb ?? options.storageMb ?? CONTAINER_DEFAULTS.storageMb) * 1024 * 1024;
  const writeLimit = Math.min(storageBytes, spec.diskBudgetBytes ?? Infinity);
  const mounts = agentMounts(spec.agentFolders, spec.hidden, empty);
  for (const folder of mounts.skipped) spec.onNotice?.(`${folder} is not shown in the container: the image has its own system folders (install what the agent needs in the task's image)`);
  if (!engine.canLimitResources) spec.onNotice?.(`${engine.name} runs rootless on cgroups v1 here: the container's CPUs, memory and processes are not bounded`);
  // The session's short links to long service sockets, in a short private folder never shown to the run.
  const sockets = await socketFolder();
  // The executor for the machine the container runs on (a remote host may be another architecture).
  const executor = executorBinary(hostArch(engine.remote?.arch));
  // On another machine no folder of this one can be mounted: they cross by copy (remote-session.ts).
  const remote = engine.remote !== undefined;
  const folderMounts = remote
    ? []
    : [
        // Read-only and empty until the harness stages the tests between the phases.
        '--volume',
        `${path.resolve(folders.tests)}:/tests:ro`,
        '--volume',
        `${path.resolve(folders.logs)}:/logs:rw`,
        ...mounts.flags,
        ...stateMount,
        '--volume',
        `${executor}:${EXECUTOR_INSIDE}:ro`,
        // A working folder given whole (a verifier's final state) is /app itself, not laid over the image's.
        ...(spec.seedFromWorkspace ? ['--volume', `${path.resolve(folders.workspace)}:/app:rw`] : []),
      ];
  const created = await engine.run(
    [
      'create',
      '--interactive',
      '--init',
      '--name',
      name,
      '--label',
      `${LABELS.run}=${spec.runId}`,
      '--label',
      `${LABELS.owner}=${owner}`,
      '--label',
      `${LABELS.task}=${task.name}`,
      ...engine.isolationFlags(),
      '--cap-drop=all',
      '--security-opt=no-new-privileges',
      ...engine.resourceFlags(limits),
      // No file may grow past what the container may write at all (children inherit it; no one inside can raise it).
      '--ulimit',
      `fsize=${writeLimit}:${writeLimit}`,
      '--workdir',
      '/app',
      ...folderMounts,
      '--entrypoint',
      EXECUTOR_INSIDE,
      image,
    ],
    { timeoutMs: 120_000, ...(signal ? { signal } : {}) },
  );
  if (created.exitCode !== 0) {
    await sockets.remove();
    throw new Error(`${engine.name} create: ${failureText(created, 120_000)}`);
  }
  // While the agent runs, the logs folder (the verifier's /logs) belongs to a user the agent is
  // not and cannot become: root without capabilities can neither write it nor take it back.
  await fs.chmod(folders.logs, 0o555);
  const logsLocked = !remote && (await chownForContainer(engine, path.resolve(folders.logs), NOBODY));
  if (remote) await fs.chmod(folders.logs, 0o755);
  else if (!logsLocked) {
    await fs.chmod(folders.logs, 0o755);
    spec.onNotice?.(`the run's /logs stays writable in the agent phase here (${engine.name} is rootful and Belay does not run as root): what the agent leaves there is removed before the tests`);
  }
  const session = new ContainerSession(engine, name, spec, config, {
    storageBytes,
    storageCheckMs: options.storageCheckMs ?? CONTAINER_DEFAULTS.storageCheckMs,
    copyLimitBytes: options.workspaceCopyLimitBytes ?? CONTAINER_DEFAULTS.workspaceCopyLimitBytes,
    logsLocked,
    remote,
  }, sockets, services);
  // Otherwise /app starts as the task's image holds it (the run's workspace folder is seeded into /app, or is /app, below).
  session.workspaceFromImage = source.kind !== 'base' && task.repo === undefined && spec.seedFromWorkspace !== true;
  try {
    // A repository task's workspace is its checkout: /app holds it even in the task's own image.
    if ((source.kind === 'base' || task.repo !== undefined || (spec.seedFromWorkspace && remote)) && existsSync(folders.workspace)) {
      await engine.check(['cp', `${path.resolve(folders.workspace)}/.`, `${name}:/app`], { timeoutMs: 300_000 });
    }
    if (remote) {
      // The executor, the agent's folders at their own paths (a copy of its own there, not read-only), its state folder.
      await copyExecutorIn(engine, name, executor, EXECUTOR_INSIDE, signal);
      const shown = mounts.flags.filter((flag, index) => mounts.flags[index - 1] === '--volume' && flag.split(':')[0] === flag.split(':')[1]).map((flag) => flag.split(':')[0]!);
      await copyFoldersIn(engine, name, shown.map((folder) => realpathSync(folder)), spec.hidden, signal);
      if (folders.agentState) await copyFolderIn(engine, name, folders.agentState, STATE_INSIDE, signal);
    }
    await session.start();
    await session.startServices();
  } catch (error) {
    await session.close();
    throw error;
  }
  return session;
}

const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** What a program inside needs from the image's configuration: its PATH, and the home of its user. */
export interface ImageConfig {
  path: string;
  /** /root when the image runs as root; unknown otherwise (the engine then sets it from the image's users). */
  home: string | undefined;
}

/** Reads the image's PATH (a usual one when it sets none) and user. */
export async function imageConfig(engine: Engine, image: string): Promise<ImageConfig> {
  const out = await engine.check(['image', 'inspect', '--format', '{{json .Config}}', image], { timeoutMs: 60_000 });
  let config: { Env?: string[] | null; User?: string } = {};
  try {
    config = (JSON.parse(out) as typeof config | null) ?? {};
  } catch {
    // an engine that says nothing usable: the usual values
  }
  const user = (config.User ?? '').split(':', 1)[0]!;
  return {
    path: config.Env?.find((entry) => entry.startsWith('PATH='))?.slice('PATH='.length) || DEFAULT_PATH,
    home: user === '' || user === 'root' || user === '0' ? '/root' : undefined,
  };
}

/**
 * A program's environment inside: the base variables (the image's PATH, then the agent's
 * runtimes; the home; a UTF-8 locale; a dumb terminal) and Belay's, nothing of the host's.
 */
export function containerEnvironment(config: ImageConfig, runtimes: readonly string[], env: Record<string, string> | undefined): Record<string, string> {
  const base = { PATH: [config.path, ...runtimes].join(':'), HOME: config.home ?? '', LANG: 'C.UTF-8', TERM: 'dumb' };
  const result = programEnvironment(base, env);
  if (config.home === undefined && env?.HOME === undefined) delete result.HOME;
  return result;
}

/** The agent's folders that hold programs (a host Node's bin, say), put on PATH after the image's own. */
export function agentRuntimes(agentFolders: readonly string[]): string[] {
  return agentFolders.map((folder) => path.resolve(folder)).filter((folder) => /\/(bin|sbin)$/.test(folder) && !SYSTEM_FOLDERS.some((system) => inside(system, folder)));
}

class ContainerSession implements BackendSession {
  readonly backend = 'container';
  readonly workdir = '/app';
  readonly testsDir = '/tests';
  get stateDir(): string | undefined {
    return this.#spec.folders.agentState ? STATE_INSIDE : undefined;
  }
  readonly logsDir = '/logs';
  get host(): string | undefined {
    return this.#engine.remote?.host;
  }
  #phase: Phase = 'agent';
  /** Set when the other machine stopped answering: nothing more is asked of its engine. */
  #lost = false;
  #stopHostWatch: (() => void) | undefined;
  #agentEnded = false;
  #agentEnding: Promise<void> | undefined;
  #verifyStarted = false;
  #workspaceNotFinal: string | undefined;
  /** See BackendSession; set once the container is made. */
  workspaceFromImage = false;
  get workspaceNotFinal(): string | undefined {
    return this.#workspaceNotFinal;
  }
  #closed = false;
  /** The phase's executor: the container's main process, over the attached session. */
  #executor: ChannelExecutor | undefined;
  /** Found once the container first runs (see `shell`). */
  #shell: string | null | undefined;
  #storageTimer: NodeJS.Timeout | undefined;
  readonly #engine: Engine;
  readonly #name: string;
  readonly #spec: SessionSpec;
  readonly #config: ImageConfig;
  readonly #runtimes: string[];
  readonly #bounds: { storageBytes: number; storageCheckMs: number; copyLimitBytes: number; logsLocked: boolean; remote: boolean };
  readonly #sockets: SocketFolder;
  /** The current phase's services: the agent phase's, then the verify phase's. */
  #services: readonly ServiceSpec[];
  #links: ServiceLinks | undefined;

  constructor(
    engine: Engine,
    name: string,
    spec: SessionSpec,
    config: ImageConfig,
    bounds: { storageBytes: number; storageCheckMs: number; copyLimitBytes: number; logsLocked: boolean; remote: boolean },
    sockets: SocketFolder,
    services: readonly ServiceSpec[],
  ) {
    this.#sockets = sockets;
    this.#services = services;
    this.#engine = engine;
    this.#name = name;
    this.#spec = spec;
    this.#bounds = bounds;
    this.#config = config;
    this.#runtimes = agentRuntimes(spec.agentFolders);
  }

  get phase(): Phase {
    return this.#phase;
  }

  /** Starts the container with its executor attached; resolves once the executor is ready. */
  async start(): Promise<void> {
    try {
      this.#executor = await startExecutor({ argv: this.#engine.argv(['start', '--attach', '--interactive', this.#name]), cwd: '/', env: this.#engine.env }, { readyTimeoutMs: 120_000 });
    } catch (error) {
      throw new Error(`${this.#engine.name} start: ${errorMessage(error)}`);
    }
    if (this.#shell === undefined) this.#shell = await this.#findShell(this.#executor);
    if (!this.#agentEnded) this.#watchStorage();
    if (this.#bounds.remote) {
      this.#stopHostWatch?.();
      this.#stopHostWatch = watchHost(this.#engine, this.#name, (why) => this.#hostLost(why));
    }
  }

  /** The other machine stopped answering: the run ends with that cause, and nothing more is asked of it. */
  #hostLost(why: string): void {
    if (this.#lost) return;
    this.#lost = true;
    this.#stopHostWatch?.();
    // A cut connection may stay open for minutes: its transport is ended now, so every command's end settles.
    this.#executor?.abandon(why);
    this.#spec.onNotice?.(why);
    this.#spec.onLimit?.('host_lost', why);
  }

  /** Ends the channel to a host that does not answer without waiting for it (its container stops with the connection; the next start removes it). */
  async #dropExecutor(): Promise<void> {
    const executor = this.#executor;
    if (!executor) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([executor.close(), new Promise<void>((resolve) => (timer = setTimeout(resolve, 5000)))]);
    clearTimeout(timer);
  }

  /** The shell that runs command strings: the image's bash, else its sh, else none (null). */
  async #findShell(executor: ChannelExecutor): Promise<string | null> {
    for (const shell of ['/bin/bash', '/bin/sh']) {
      const end = await executor.spawn({ argv: [shell, '-c', 'exit 0'], cwd: '/', env: { PATH: this.#config.path }, stdin: 'ignore' }).ended;
      if (!end.spawnError && end.exitCode === 0) return shell;
    }
    return null;
  }

  get shell(): string | null {
    return this.#shell ?? null;
  }

  /** The current phase's host services: the executor listens inside before this resolves (so before the agent or the tests start). */
  async startServices(): Promise<void> {
    if (this.#services.length === 0 || !this.#executor) return;
    const links = (this.#links = await ServiceLinks.open(this.#services, this.#sockets.path));
    try {
      for (const service of this.#services) await this.#executor.listen(insidePort(this.#services, service.name), (stream) => links.accept(service.name, stream));
    } catch (error) {
      throw new Error(`the host services could not be started in the container: ${errorMessage(error)}`);
    }
  }

  serviceUrl(name: string): string {
    return `http://127.0.0.1:${insidePort(this.#services, name)}`;
  }

  #stopServices(): void {
    this.#links?.close();
  }

  /**
   * Stops the agent phase when the container's writable layer outgrows the task's storage or the
   * run's disk budget, whichever is smaller, and tells the run that this is why it ends. Measured
   * every `storageCheckMs`, less often when measuring itself takes long (a layer of many files).
   */
  #watchStorage(): void {
    const budget = this.#spec.diskBudgetBytes;
    const byBudget = budget !== undefined && budget < this.#bounds.storageBytes;
    const limit = byBudget ? budget : this.#bounds.storageBytes;
    const check = async () => {
      const started = performance.now();
      const measured = await this.#engine.run(['container', 'inspect', '--size', '--format', '{{.SizeRw}}', this.#name], { timeoutMs: 60_000 });
      const bytes = Number(measured.stdout.text('').trim());
      if (this.#agentEnded) return;
      if (Number.isFinite(bytes) && bytes > limit) {
        const reason = byBudget
          ? `the run wrote ${formatBytes(bytes)} in its container, more than its disk budget of ${formatBytes(limit)}`
          : `the container wrote ${Math.round(bytes / 1024 / 1024)} MB, more than its storage limit of ${Math.round(limit / 1024 / 1024)} MB`;
        this.#spec.onLimit?.('disk_budget', reason);
        this.#spec.onNotice?.(`${reason}: the agent phase is stopped`);
        // Its failure, if any, is the harness's to hear when it ends the phase (the same promise).
        await this.endAgentPhase().catch(() => undefined);
        return;
      }
      this.#storageTimer = setTimeout(() => void check(), Math.max(this.#bounds.storageCheckMs, (performance.now() - started) * 10));
      this.#storageTimer.unref();
    };
    this.#storageTimer = setTimeout(() => void check(), this.#bounds.storageCheckMs);
    this.#storageTimer.unref();
  }

  spawn(spec: SpawnSpec): RunningChild {
    const agentPhase = this.#phase === 'agent';
    const command = {
      argv: spec.argv,
      cwd: spec.cwd ?? this.workdir,
      // The agent's runtimes are on PATH while its folders are; the tests get the image's own.
      env: containerEnvironment(this.#config, agentPhase ? this.#runtimes : [], spec.env),
      stdin: spec.stdin ?? 'pipe',
      ...(spec.onStdout ? { onStdout: spec.onStdout } : {}),
      ...(spec.onStderr ? { onStderr: spec.onStderr } : {}),
    } as const;
    if (this.#executor && !(agentPhase && this.#agentEnded)) {
      const child = this.#executor.spawn(command);
      if (!this.#bounds.remote || agentPhase) return child;
      // From another machine, what a verify-phase program wrote in /logs is here when it has ended.
      const ended = child.ended.then(async (end) => {
        if (!this.#lost) {
          await copyFolderBack(this.#engine, this.#name, this.logsDir, this.#spec.folders.logs, this.#spec.diskBudgetBytes, this.#spec.onNotice).catch((error: unknown) => this.#spec.onNotice?.(errorMessage(error)));
        }
        return end;
      });
      return {
        get pid() {
          return child.pid;
        },
        write: (chunk) => child.write(chunk),
        endInput: () => child.endInput(),
        kill: () => child.kill(),
        ended,
      };
    }
    // Between the phases, or after close: nothing runs.
    const executor = this.#executor;
    return {
      pid: undefined,
      write: () => undefined,
      endInput: () => undefined,
      kill: () => undefined,
      ended: Promise.resolve({ exitCode: null, signal: null, spawnError: new Error(`${spec.argv[0]}: not started: ${executor ? 'the agent phase has ended' : 'the container is not running'}`) }),
    };
  }

  async connect(port: number): Promise<Duplex> {
    if (!this.#executor || this.#agentEnded) throw new Error(`connect to 127.0.0.1:${port}: the agent phase has ended`);
    return this.#executor.connect(port);
  }

  endAgentPhase(): Promise<void> {
    this.#agentEnding ??= this.#endAgentPhase();
    return this.#agentEnding;
  }

  async #endAgentPhase(): Promise<void> {
    this.#agentEnded = true;
    clearTimeout(this.#storageTimer);
    this.#stopServices();
    // Stopping kills every process of the container at once (its PID namespace ends, setsid or
    // not); the executor's channel ends with it. The files stay as the agent left them.
    if (this.#lost) {
      this.#workspaceNotFinal = 'the engine holding the container stopped answering';
      await this.#dropExecutor();
      return;
    }
    const stopped = await this.#engine.run(['stop', '-t', '0', this.#name], { timeoutMs: 120_000 });
    if (stopped.exitCode !== 0) {
      const said = failureText(stopped, 120_000);
      if (this.#bounds.remote && hostUnreachable(said, stopped.timedOut)) {
        this.#workspaceNotFinal = 'the engine holding the container stopped answering';
        this.#hostLost(`the engine on ${this.#engine.remote!.host} stopped answering (${said.split('\n').filter((line) => line.trim() !== '').slice(-1)[0]?.slice(0, 300) ?? ''})`);
        await this.#dropExecutor();
        return;
      }
      throw new Error(`${this.#engine.name} stop: ${said}`);
    }
    await this.#executor?.closed;
    await this.#copyWorkspaceOut();
  }

  /**
   * The agent's /app into the run's workspace, for the records. Only the engine reads the
   * container's files (its programs are the agent's to replace), and only when what the
   * container wrote is within the limit.
   */
  async #copyWorkspaceOut(): Promise<void> {
    const measured = await this.#engine.run(['container', 'inspect', '--size', '--format', '{{.SizeRw}}', this.#name], { timeoutMs: 60_000 });
    const written = Number(measured.stdout.text('').trim());
    if (!Number.isFinite(written) || written > this.#bounds.copyLimitBytes) {
      this.#spec.onNotice?.(`the container wrote ${Number.isFinite(written) ? `${Math.round(written / 1024 / 1024)} MB` : 'an unknown amount'}: its /app is not copied into the run's workspace (limit ${Math.round(this.#bounds.copyLimitBytes / 1024 / 1024)} MB)`);
      this.#workspaceNotFinal = `the container's /app was not copied out (it wrote more than ${Math.round(this.#bounds.copyLimitBytes / 1024 / 1024)} MB)`;
      return;
    }
    const workspace = path.resolve(this.#spec.folders.workspace);
    const copy = `${workspace}.copy-${randomBytes(4).toString('hex')}`;
    await fs.mkdir(copy, { mode: 0o700 });
    try {
      await this.#engine.check(['cp', `${this.#name}:/app/.`, copy], { timeoutMs: 300_000 });
      await sanitizeTree(copy);
      await fs.rm(workspace, { recursive: true, force: true });
      await fs.rename(copy, workspace);
      await fs.chmod(workspace, 0o755);
    } finally {
      await fs.rm(copy, { recursive: true, force: true });
    }
  }

  async startVerifyPhase(services?: readonly ServiceSpec[]): Promise<void> {
    if (this.#verifyStarted) return;
    await this.endAgentPhase();
    this.#verifyStarted = true;
    this.#phase = 'verify';
    this.#services = checkServices(services);
    await this.#unlockLogs();
    if (this.#bounds.remote) {
      // On another machine: the staged tests and the run's logs folder go in by copy.
      await copyFolderIn(this.#engine, this.#name, this.#spec.folders.tests, this.testsDir);
      await copyFolderIn(this.#engine, this.#name, this.#spec.folders.logs, this.logsDir);
    }
    // Only a fresh executor comes back; the tests are in /tests through its read-only mount.
    await this.start();
    await this.startServices();
  }

  /**
   * The logs folder back to root and writable for the tests, whichever user the image runs them
   * as (no process of the agent is left to use it); `final` leaves it as a run folder should be.
   */
  async #unlockLogs(final = false): Promise<void> {
    const logs = path.resolve(this.#spec.folders.logs);
    if (this.#bounds.logsLocked) {
      this.#bounds.logsLocked = false;
      if (!(await chownForContainer(this.#engine, logs, 0))) throw new Error(`could not give ${logs} back to the container's root`);
    }
    await fs.chmod(logs, final ? 0o755 : 0o777).catch(() => undefined);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#agentEnded = true;
    clearTimeout(this.#storageTimer);
    this.#stopServices();
    // An agent phase ending meanwhile (stopped by the storage watch) finishes its copy first.
    await this.#agentEnding?.catch(() => undefined);
    this.#stopHostWatch?.();
    if (this.#lost) {
      await this.#dropExecutor();
      await this.#sockets.remove();
      await this.#unlockLogs(true);
      return;
    }
    const removed = await this.#engine.run(['rm', '--force', this.#name], { timeoutMs: 120_000 });
    await this.#executor?.close();
    await this.#sockets.remove();
    // The empty folder the masks were mounted from: nothing of the session stays in the run's scratch.
    await fs.rm(path.join(path.resolve(this.#spec.folders.scratch), 'empty'), { recursive: true, force: true });
    // A run folder its user cannot delete would be a leftover too.
    await this.#unlockLogs(true);
    if (removed.exitCode !== 0 && !/no such container|no container with name/i.test(failureText(removed, 120_000))) {
      throw new Error(`${this.#engine.name} rm ${this.#name}: ${failureText(removed, 120_000)}`);
    }
  }

  /**
   * An artifact outside /app, from the stopped container: the engine copies it (resolving the path
   * within the container's own files, never the host's) into the run's staging folder, and only
   * when what the container wrote was within the limit its /app was copied out under.
   */
  async artifactOutside(inside: string, staging: string): Promise<ArtifactPlace> {
    if (!this.#agentEnded || this.#closed) return { refused: 'the container is not there to copy it from' };
    await this.#agentEnding?.catch(() => undefined);
    if (this.#workspaceNotFinal !== undefined) return { refused: `not copied out of the container: ${this.#workspaceNotFinal}` };
    const copied = await this.#engine.run(['cp', `${this.#name}:${inside}`, path.join(staging, 'artifact')], { timeoutMs: 300_000 });
    if (copied.exitCode !== 0) {
      const said = failureText(copied, 300_000);
      if (/no such file|could not find|not found|does not exist/i.test(said)) return { refused: 'not there after the agent phase' };
      return { refused: `${this.#engine.name} cp could not copy it: ${said.split('\n').find((line) => line.trim() !== '')?.slice(0, 300) ?? ''}` };
    }
    return { root: staging, parts: ['artifact'] };
  }
}

/**
 * Makes a copy of files from the container safe on the host: no set-user or set-group bits,
 * nothing but files, folders and links, and readable by the user who owns the run folder.
 */
export async function sanitizeTree(dir: string): Promise<void> {
  const entries = await fs.readdir(dir, { withFileTypes: true });
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isSymbolicLink()) continue;
    if (entry.isDirectory()) {
      await fs.chmod(full, 0o755);
      await sanitizeTree(full);
    } else if (entry.isFile()) {
      const stat = await fs.lstat(full);
      await fs.chmod(full, stat.mode & 0o111 ? 0o755 : 0o644);
    } else await fs.rm(full, { force: true });
  }
}
