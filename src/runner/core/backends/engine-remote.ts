// Engines on other machines: `--engine-host ssh://user@host[:port][/socket]` (repeatable;
// `belay.runner.engineHosts`) reaches podman or docker there through its own remote mode over SSH
// (podman's `--url ssh://…`, docker's `DOCKER_HOST=ssh://…`). The key stays on this machine: the
// engine client here reads it (`CONTAINER_SSHKEY` or the SSH client's own configuration) and the
// host is checked against this machine's known hosts (never accepted blindly). No folder of this
// machine can be mounted there, so what a session needs crosses by copy (the engine's `cp`), and
// no port is opened on any network: the engine's API travels over the SSH connection.
import { runBounded } from '../../../shared/process.ts';
import { Engine, EngineUnavailableError, engineEnvironment, failureText, findProgram, hostLimits, parseEngineInfo, type EngineInfo, type EngineName, type RemoteEndpoint } from './engine.ts';

/** One `--engine-host` as given, read. */
export interface EngineHost {
  /** The text as given (trimmed). */
  text: string;
  user: string;
  /** A name or an address (IPv6 without brackets). */
  hostname: string;
  port: number;
  /** The engine's API socket there; asked of the host when absent. */
  socket: string | undefined;
  /** user@host, with :port when not 22: how the host is named to people. */
  label: string;
}

/** Reads `ssh://user@host[:port][/socket]`; throws one line saying what is wrong. */
export function parseEngineHost(text: string): EngineHost {
  const given = text.trim();
  const say = (why: string) => new Error(`engine host '${given}': ${why} (expected ssh://user@host[:port][/path/to/engine.sock])`);
  if (!/^ssh:\/\//i.test(given)) throw say('only ssh:// is supported');
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw say('not a URL');
  }
  if (url.password) throw say('a password does not belong in the URL (log in with a key)');
  if (!url.username) throw say('no user');
  if (!url.hostname) throw say('no host');
  if (url.search || url.hash) throw say('no query or fragment is read');
  const user = decodeURIComponent(url.username);
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(user)) throw say(`the user '${user}' is not a plain user name`);
  const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!/^[A-Za-z0-9.:-]+$/.test(hostname) || hostname.startsWith('-')) throw say(`the host '${hostname}' is not a plain name or address`);
  const port = url.port === '' ? 22 : Number(url.port);
  const socket = url.pathname === '' || url.pathname === '/' ? undefined : decodeURIComponent(url.pathname);
  if (socket !== undefined && !/^\/[A-Za-z0-9_./-]+$/.test(socket)) throw say(`the socket path '${socket}' holds characters Belay does not pass on`);
  const shownHost = hostname.includes(':') ? `[${hostname}]` : hostname;
  return { text: given, user, hostname, port, socket, label: `${user}@${shownHost}${port === 22 ? '' : `:${port}`}` };
}

/** Reads a list of engine hosts (flags or the setting), refusing duplicates. */
export function parseEngineHosts(texts: readonly string[]): EngineHost[] {
  const hosts = texts.filter((text) => text.trim() !== '').map(parseEngineHost);
  const seen = new Set<string>();
  for (const host of hosts) {
    const key = `${host.user}@${host.hostname}:${host.port}`;
    if (seen.has(key)) throw new Error(`engine host '${host.text}' is given twice`);
    seen.add(key);
  }
  return hosts;
}

export interface RemoteProbeOptions {
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

/**
 * The `ssh` options every connection gets: no prompt (a key or nothing), the known hosts checked
 * (those of `$HOME`, as the engine client reads them, not only the account's), a bounded wait.
 */
function sshOptions(host: EngineHost, env: Record<string, string>): string[] {
  const known = env.HOME ? ['-o', `UserKnownHostsFile=${env.HOME}/.ssh/known_hosts`] : [];
  return ['-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=yes', '-o', 'ConnectTimeout=15', ...known, '-p', String(host.port), ...(env.CONTAINER_SSHKEY ? ['-i', env.CONTAINER_SSHKEY, '-o', 'IdentitiesOnly=yes'] : [])];
}

/**
 * The engine's API socket on the host, asked of its own podman over SSH (as `podman system
 * connection add` does) when the URL names none.
 */
async function remoteSocket(host: EngineHost, env: Record<string, string>, timeoutMs: number): Promise<string> {
  if (host.socket) return host.socket;
  const ssh = findProgram('ssh', env.PATH);
  if (!ssh) throw new EngineUnavailableError(`podman on ${host.label}: no ssh client here to ask for its socket (install openssh-client, or give the socket's path in the URL)`);
  const result = await runBounded({ argv: [ssh, ...sshOptions(host, env), `${host.user}@${host.hostname}`, 'podman info --format {{.Host.RemoteSocket.Path}}'], cwd: '/', env, timeoutMs, maxOutputChars: 4000 });
  const socket = result.stdout.text('').trim().replace(/^unix:\/\//, '');
  if (result.exitCode !== 0 || !/^\/\S+$/.test(socket)) throw new EngineUnavailableError(`podman on ${host.label}: ${failureText(result, timeoutMs).split('\n')[0]}`);
  return socket;
}

/** How the engine client reaches `host`. */
function endpoint(name: EngineName, host: EngineHost, socket: string | undefined): Omit<RemoteEndpoint, 'cpus' | 'arch'> {
  const hostPart = `${host.user}@${host.hostname.includes(':') ? `[${host.hostname}]` : host.hostname}:${host.port}`;
  // Podman 4's ssh:// URL needs the port (it fails on `strconv.Atoi: parsing ""` without one).
  if (name === 'podman') return { host: host.label, flags: ['--url', `ssh://${hostPart}${socket ?? ''}`], env: {} };
  return { host: host.label, flags: [], env: { DOCKER_HOST: `ssh://${hostPart}` } };
}

/**
 * An engine's name for its host's architecture as Node names it: podman says Go's (`amd64`,
 * `arm64`), docker the kernel's (`x86_64`, `aarch64`); anything else is kept as said.
 */
export function nodeArch(said: unknown): string | undefined {
  if (typeof said !== 'string' || said === '') return undefined;
  const known: Record<string, string> = { amd64: 'x64', x86_64: 'x64', arm64: 'arm64', aarch64: 'arm64' };
  return known[said] ?? said;
}

/** Probes the engine on another machine; throws with the reason it cannot be used. */
export async function probeRemoteEngine(name: EngineName, host: EngineHost, options: RemoteProbeOptions = {}): Promise<Engine> {
  const env = engineEnvironment(options.env ?? process.env);
  const program = findProgram(name, env.PATH);
  if (!program) throw new EngineUnavailableError(`${name}: not installed here (its client reaches ${host.label})`);
  const timeoutMs = options.timeoutMs ?? 30_000;
  const socket = name === 'podman' ? await remoteSocket(host, env, timeoutMs) : undefined;
  const reach = endpoint(name, host, socket);
  const result = await runBounded({ argv: [program, ...reach.flags, 'info', '--format', '{{json .}}'], cwd: '/', env: { ...env, ...reach.env }, timeoutMs, maxOutputChars: 200_000 });
  if (result.exitCode !== 0) {
    const said = failureText(result, timeoutMs).split('\n').filter((line) => line.trim() !== '').slice(-1)[0] ?? '';
    throw new EngineUnavailableError(`${name} on ${host.label}: ${said}`);
  }
  let info: EngineInfo = { version: '', runtime: '', rootless: false, cgroupVersion: undefined };
  let cpus: number | undefined;
  let arch: string | undefined;
  try {
    const json = result.stdout.text('');
    info = parseEngineInfo(name, json);
    const raw = JSON.parse(json) as { host?: { cpus?: unknown; arch?: unknown }; NCPU?: unknown; Architecture?: unknown };
    const count = name === 'podman' ? raw.host?.cpus : raw.NCPU;
    cpus = typeof count === 'number' && count > 0 ? count : undefined;
    arch = nodeArch(name === 'podman' ? raw.host?.arch : raw.Architecture);
  } catch {
    // an engine that says nothing usable: the usual values
  }
  // The host's own hard limits are not readable through the engine: this machine's bound the flags.
  return new Engine(name, program, info, env, hostLimits(), { ...reach, cpus, arch });
}

/** Every host's engine, in order; one line per host that does not answer (the caller decides). */
export async function probeRemoteEngines(name: EngineName | undefined, hosts: readonly EngineHost[], options: RemoteProbeOptions = {}): Promise<{ engines: Engine[]; failures: string[] }> {
  const engines: Engine[] = [];
  const failures: string[] = [];
  const tried = await Promise.all(
    hosts.map(async (host) => {
      const reasons: string[] = [];
      for (const candidate of name ? [name] : (['podman', 'docker'] as const)) {
        try {
          return { engine: await probeRemoteEngine(candidate, host, options) };
        } catch (error) {
          if (!(error instanceof EngineUnavailableError)) throw error;
          reasons.push(error.message);
        }
      }
      return { failure: `${host.label}: no engine answers (${reasons.join('; ')})` };
    }),
  );
  for (const one of tried) {
    if (one.engine) engines.push(one.engine);
    else failures.push(one.failure!);
  }
  return { engines, failures };
}

/**
 * Sessions spread over engines by free capacity: each session goes to the engine with the most
 * room left (its host's CPUs, as its engine says, less the sessions open there; one when unsaid),
 * the first listed on a tie. The job's concurrency bounds how many there are in all.
 */
export class EnginePool {
  readonly #open = new Map<Engine, number>();
  readonly #lost = new Set<Engine>();
  readonly #engines: readonly Engine[];

  constructor(engines: readonly Engine[]) {
    if (engines.length === 0) throw new Error('an engine pool needs an engine');
    this.#engines = engines;
    for (const engine of engines) this.#open.set(engine, 0);
  }

  /** How many sessions each engine holds now. */
  get load(): ReadonlyMap<Engine, number> {
    return this.#open;
  }

  #free(engine: Engine): number {
    const capacity = engine.remote ? (engine.remote.cpus ?? 1) : Number.POSITIVE_INFINITY;
    return capacity - this.#open.get(engine)!;
  }

  /** An engine whose host stopped answering: no session goes there while another answers. */
  markLost(engine: Engine): void {
    this.#lost.add(engine);
  }

  /** The engine for the next session (counted as open until `release`). */
  take(): Engine {
    const answering = this.#engines.filter((engine) => !this.#lost.has(engine));
    const candidates = answering.length > 0 ? answering : this.#engines;
    let best = candidates[0]!;
    for (const engine of candidates) if (this.#free(engine) > this.#free(best)) best = engine;
    this.#open.set(best, this.#open.get(best)! + 1);
    return best;
  }

  release(engine: Engine): void {
    this.#open.set(engine, Math.max(0, (this.#open.get(engine) ?? 0) - 1));
  }
}
