// The container engines Belay drives, podman and docker: finding one that answers here, and
// running its command line through the process layer with the flags this machine needs. Facts
// that shaped it: a runtime refuses rlimits above the host's hard limits (podman's defaults are
// above them on many machines), so every container gets explicit ones; the default bridge
// network rewrites the host's firewall, so Belay never lets an engine choose a network.
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { runBounded, type BoundedRunResult } from '../../../shared/process.ts';

export type EngineName = 'podman' | 'docker';
export const ENGINE_NAMES: readonly EngineName[] = ['podman', 'docker'];

/** No engine answers here; the message names each one tried and why it failed. */
export class EngineUnavailableError extends Error {
  override name = 'EngineUnavailableError';
}

/** The host's hard limits that bound what a container may be given (see `ulimitFlags`). */
export interface HostLimits {
  /** Hard RLIMIT_NOFILE; undefined when unlimited or unknown. */
  openFiles: number | undefined;
  /** Hard RLIMIT_NPROC; undefined when unlimited or unknown. */
  processes: number | undefined;
  /** /proc/sys/kernel/pid_max: runtimes refuse an RLIMIT_NPROC above it on some kernels. */
  pidMax: number | undefined;
}

/** Reads the hard limits out of the text of /proc/self/limits (and pid_max). */
export function parseHostLimits(limitsText: string, pidMaxText = ''): HostLimits {
  const hard = (label: string): number | undefined => {
    const line = limitsText.split('\n').find((l) => l.startsWith(label));
    const value = line?.slice(label.length).trim().split(/\s+/)[1];
    return value !== undefined && /^\d+$/.test(value) ? Number(value) : undefined;
  };
  const pidMax = pidMaxText.trim();
  return { openFiles: hard('Max open files'), processes: hard('Max processes'), pidMax: /^\d+$/.test(pidMax) ? Number(pidMax) : undefined };
}

export function hostLimits(): HostLimits {
  const read = (file: string) => {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      return '';
    }
  };
  return parseHostLimits(read('/proc/self/limits'), read('/proc/sys/kernel/pid_max'));
}

/** What the engines' own defaults would ask for; used where the host sets no bound. */
const GENEROUS = { openFiles: 1_048_576, processes: 1_048_576 };

/**
 * `--ulimit` flags within the host's hard limits. Without them podman asks the runtime for
 * rlimits the host forbids and every start fails with "setrlimit: operation not permitted".
 * The per-container bound on processes is `--pids-limit`; RLIMIT_NPROC counts the whole user.
 */
export function ulimitFlags(limits: HostLimits): string[] {
  const openFiles = Math.min(limits.openFiles ?? GENEROUS.openFiles, GENEROUS.openFiles);
  const processes = Math.min(limits.processes ?? GENEROUS.processes, limits.pidMax ?? GENEROUS.processes, GENEROUS.processes);
  return ['--ulimit', `nofile=${openFiles}:${openFiles}`, '--ulimit', `nproc=${processes}:${processes}`];
}

/** The executable `name` on `PATH`, or undefined. */
export function findProgram(name: string, searchPath: string | undefined): string | undefined {
  for (const dir of (searchPath ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const file = path.join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** What `info` told about the engine. */
export interface EngineInfo {
  version: string;
  /** The OCI runtime (runc, crun, ...) when the engine says. */
  runtime: string;
  rootless: boolean;
  /** 1 or 2; cgroups v1 without root cannot bound memory or CPUs. */
  cgroupVersion: number | undefined;
}

export interface EngineRunOptions {
  timeoutMs: number;
  /** Written to the engine's stdin, which is then closed. */
  input?: string;
  maxOutputChars?: number;
  onOutput?: (chunk: string) => void;
  signal?: AbortSignal;
  /** Variables for the engine process itself, added to the engine's environment. */
  env?: Record<string, string>;
}

/**
 * Where an engine on another machine is reached: the client's flags (podman's `--url`) or
 * variables (docker's `DOCKER_HOST`), and the host's name for people (see engine-remote.ts).
 */
export interface RemoteEndpoint {
  /** e.g. "ci@build-2" or "ci@10.0.0.5:2222": named in the terminal and the records. */
  host: string;
  flags: string[];
  env: Record<string, string>;
  /** The host's CPUs, as its engine says: how many trials it takes at once by default. */
  cpus: number | undefined;
  /** The host's architecture as Node names it ('x64', 'arm64', …), as its engine says; undefined when it did not. */
  arch: string | undefined;
}

/** A container engine that answered `info`: here, or on another machine through its remote mode. */
export class Engine {
  readonly name: EngineName;
  readonly program: string;
  readonly info: EngineInfo;
  /** The environment the engine client runs with (Belay's own: the client is trusted). */
  readonly env: Record<string, string>;
  readonly limits: HostLimits;
  /** Set when the engine runs on another machine: no folder of this one can be mounted there. */
  readonly remote: RemoteEndpoint | undefined;

  constructor(name: EngineName, program: string, info: EngineInfo, env: Record<string, string>, limits: HostLimits = hostLimits(), remote?: RemoteEndpoint) {
    this.name = name;
    this.program = program;
    this.info = info;
    this.env = remote ? { ...env, ...remote.env } : env;
    this.limits = limits;
    this.remote = remote;
  }

  /** e.g. "podman 4.3.1 (runc)", or "podman 4.3.1 (runc, rootless) on ci@build-2". */
  get label(): string {
    return `${this.name} ${this.info.version}${this.info.runtime ? ` (${this.info.runtime}${this.info.rootless ? ', rootless' : ''})` : ''}${this.remote ? ` on ${this.remote.host}` : ''}`;
  }

  /** Whether `--memory` and `--cpus` can be applied (rootless engines on cgroups v1 cannot). */
  get canLimitResources(): boolean {
    return !(this.info.rootless && this.info.cgroupVersion === 1);
  }

  /**
   * Flags that bound a container's CPUs, memory (no swap beyond it where the kernel accounts
   * swap) and processes; none where the engine cannot apply them (rootless on cgroups v1).
   */
  resourceFlags(bounds: { cpus: number; memoryMb: number; pidsLimit: number }): string[] {
    if (!this.canLimitResources) return [];
    const swapAccounted = this.info.cgroupVersion !== 1 || existsSync('/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes');
    return [
      '--cpus',
      String(bounds.cpus),
      '--memory',
      `${bounds.memoryMb}m`,
      ...(swapAccounted ? ['--memory-swap', `${bounds.memoryMb}m`] : []),
      `--pids-limit=${bounds.pidsLimit}`,
    ];
  }

  /** The flags every `run`, `create` and `build` gets: no network, rlimits the host allows. */
  isolationFlags(): string[] {
    return ['--network=none', ...ulimitFlags(this.limits)];
  }

  argv(args: readonly string[]): [string, ...string[]] {
    return [this.program, ...(this.remote?.flags ?? []), ...args];
  }

  /** Runs `<engine> args` to its end, output bounded, within the timeout. */
  run(args: readonly string[], options: EngineRunOptions): Promise<BoundedRunResult> {
    return runBounded({
      argv: this.argv(args),
      cwd: '/',
      env: { ...this.env, ...options.env },
      timeoutMs: options.timeoutMs,
      maxOutputChars: options.maxOutputChars ?? 64_000,
      keepTailChars: options.maxOutputChars ?? 64_000,
      ...(options.input !== undefined ? { input: options.input } : {}),
      ...(options.onOutput ? { onStdout: options.onOutput, onStderr: options.onOutput } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  /** Like `run`, but an exit other than 0 throws an error quoting the engine's own words. */
  async check(args: readonly string[], options: EngineRunOptions): Promise<string> {
    const result = await this.run(args, options);
    if (result.exitCode !== 0) throw new Error(`${this.name} ${args[0]}: ${failureText(result, options.timeoutMs)}`);
    return result.stdout.text('…');
  }

  /** Whether an image with this name exists in the engine's storage. */
  async imageExists(image: string, signal?: AbortSignal): Promise<boolean> {
    // `podman image exists` answers by its exit code; docker has no such command.
    const args = this.name === 'podman' ? ['image', 'exists', image] : ['image', 'inspect', '--format', '{{.Id}}', image];
    const result = await this.run(args, { timeoutMs: 60_000, maxOutputChars: 4000, ...(signal ? { signal } : {}) });
    if (result.exitCode === 0) return true;
    if (result.spawnError || result.timedOut) throw new Error(`${this.name} ${args.slice(0, 2).join(' ')}: ${failureText(result, 60_000)}`);
    return false;
  }
}

/** One line or a few saying why an engine command failed, in the engine's own words. */
export function failureText(result: BoundedRunResult, timeoutMs: number): string {
  if (result.spawnError) return result.spawnError.message;
  if (result.timedOut) return `no answer within ${Math.round(timeoutMs / 1000)} s`;
  if (result.aborted) return 'stopped';
  const said = (result.stderr.text('…').trim() || result.stdout.text('…').trim()).split('\n').slice(-6).join('\n');
  return said || `exit code ${result.exitCode ?? result.signal}`;
}

/** The variables the engine client itself needs from Belay's environment. */
export function engineEnvironment(env: NodeJS.ProcessEnv): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (['PATH', 'HOME', 'USER', 'LOGNAME', 'TMPDIR', 'LANG', 'LC_ALL'].includes(key) || /^(XDG_|CONTAINER|CONTAINERS_|DOCKER_|BUILDAH_|REGISTRY_AUTH_FILE$|DBUS_SESSION_BUS_ADDRESS$)/.test(key)) {
      kept[key] = value;
    }
  }
  return kept;
}

/** Reads what `info` says, from podman's or docker's JSON. */
export function parseEngineInfo(name: EngineName, json: string): EngineInfo {
  const raw = JSON.parse(json) as Record<string, unknown>;
  const get = (object: unknown, ...keys: string[]): unknown => keys.reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), object);
  const text = (value: unknown) => (typeof value === 'string' ? value : '');
  if (name === 'podman') {
    const cgroup = text(get(raw, 'host', 'cgroupVersion'));
    return {
      version: text(get(raw, 'version', 'Version')),
      runtime: text(get(raw, 'host', 'ociRuntime', 'name')),
      rootless: get(raw, 'host', 'security', 'rootless') === true,
      cgroupVersion: cgroup === 'v1' ? 1 : cgroup === 'v2' ? 2 : undefined,
    };
  }
  const options = get(raw, 'SecurityOptions');
  const cgroup = text(get(raw, 'CgroupVersion'));
  return {
    version: text(get(raw, 'ServerVersion')),
    runtime: text(get(raw, 'DefaultRuntime')),
    rootless: Array.isArray(options) && options.some((o) => typeof o === 'string' && o.includes('rootless')),
    cgroupVersion: cgroup === '1' ? 1 : cgroup === '2' ? 2 : undefined,
  };
}

export interface DetectOptions {
  /** Only this engine; otherwise podman, then docker. */
  engine?: EngineName;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

/** Probes one engine: its program on PATH, then `info`; throws with the reason it cannot be used. */
export async function probeEngine(name: EngineName, options: Omit<DetectOptions, 'engine'> = {}): Promise<Engine> {
  const env = engineEnvironment(options.env ?? process.env);
  const program = findProgram(name, env.PATH);
  if (!program) throw new EngineUnavailableError(`${name}: not installed (not on PATH)`);
  const timeoutMs = options.timeoutMs ?? 20_000;
  const result = await runBounded({ argv: [program, 'info', '--format', '{{json .}}'], cwd: '/', env, timeoutMs, maxOutputChars: 200_000 });
  if (result.exitCode !== 0) {
    const said = failureText(result, timeoutMs).split('\n')[0]!;
    throw new EngineUnavailableError(`${name}: ${program} info failed: ${said}`);
  }
  let info: EngineInfo;
  try {
    info = parseEngineInfo(name, result.stdout.text(''));
  } catch {
    info = { version: '', runtime: '', rootless: false, cgroupVersion: undefined };
  }
  return new Engine(name, program, info, env);
}

/** The first engine that answers: the one asked for, else podman, else docker. */
export async function detectEngine(options: DetectOptions = {}): Promise<Engine> {
  const names = options.engine ? [options.engine] : ENGINE_NAMES;
  const reasons: string[] = [];
  for (const name of names) {
    try {
      return await probeEngine(name, options);
    } catch (error) {
      if (!(error instanceof EngineUnavailableError)) throw error;
      reasons.push(error.message);
    }
  }
  throw new EngineUnavailableError(`no container engine answers here (${reasons.join('; ')})`);
}

/** Reads `--engine` / `belay.runner.containerEngine`: 'auto' (or nothing) lets detection choose. */
export function engineChoice(value: string | undefined): EngineName | undefined {
  if (value === undefined || value === '' || value === 'auto') return undefined;
  if ((ENGINE_NAMES as readonly string[]).includes(value)) return value as EngineName;
  throw new Error(`the container engine must be podman, docker or auto (got '${value}')`);
}
