// Host services in a run, and the short private folder every socket Belay makes lives in.
// A Unix socket's address holds at most 107 bytes, so sockets never go under the run folder
// (which sits in the user's project, as deep as it likes): they go under a private folder of
// this user in $XDG_RUNTIME_DIR or the temp folder, mode 0700, removed when the session closes.
// A service's own socket may lie anywhere: a long path is reached through a short symlink.
// The relay is the host side of a service in a run: a listener per service (a Unix socket that
// the sandbox or the container is shown, or a loopback TCP port for the local backend) whose
// connections are piped to the service's socket. Closing it (at the end of the agent phase)
// cuts every connection and unlinks the sockets, so the verify phase finds nothing to reach.
import { randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync } from 'node:fs';
import { chmod, mkdir, rm, symlink } from 'node:fs/promises';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Duplex } from 'node:stream';
import type { ServiceSpec } from './backend.ts';

/** The longest socket path Belay binds or connects to directly (the kernel's limit is 107 bytes). */
export const MAX_SOCKET_PATH = 100;
/** Inside the sandbox and the container, services listen on 127.0.0.1 from this port up, in the order given. */
export const SERVICE_PORT_BASE = 4141;
/** Connections open at once per service; more are refused (a run flooding the host). */
const MAX_CONNECTIONS = 256;

/** Throws when a service name is unusable or given twice. */
export function checkServices(services: readonly ServiceSpec[] | undefined): readonly ServiceSpec[] {
  const seen = new Set<string>();
  for (const service of services ?? []) {
    if (!/^[A-Za-z][A-Za-z0-9_-]{0,31}$/.test(service.name)) throw new Error(`service name '${service.name}': letters, digits, '-' and '_' only, starting with a letter`);
    if (seen.has(service.name)) throw new Error(`service '${service.name}' is given twice`);
    if (!path.isAbsolute(service.socketPath)) throw new Error(`service '${service.name}': its socket path must be absolute (${service.socketPath})`);
    seen.add(service.name);
  }
  return services ?? [];
}

/** The port a service listens on inside an isolated backend. */
export function insidePort(services: readonly ServiceSpec[], name: string): number {
  const index = services.findIndex((service) => service.name === name);
  if (index < 0) throw new Error(`no service named '${name}' in this session (given: ${services.map((s) => s.name).join(', ') || 'none'})`);
  return SERVICE_PORT_BASE + index;
}

function ownedPrivateFolder(dir: string): boolean {
  try {
    const stat = lstatSync(dir);
    const uid = process.getuid?.();
    return stat.isDirectory() && (uid === undefined || stat.uid === uid) && (stat.mode & 0o077) === 0;
  } catch {
    return false;
  }
}

/**
 * The folder of this user that holds every session's sockets: `$XDG_RUNTIME_DIR/belay` when that
 * is short enough, else `<tmp>/belay-<uid>`. Refuses one that is not a private folder of this
 * user (a symlink or a folder planted by someone else in a shared /tmp).
 */
export function socketRoot(env: NodeJS.ProcessEnv = process.env): string {
  const uid = process.getuid?.() ?? 0;
  const candidates: string[] = [];
  const runtime = env.XDG_RUNTIME_DIR;
  if (runtime && path.isAbsolute(runtime) && ownedPrivateFolder(runtime)) candidates.push(path.join(runtime, 'belay'));
  const tmp = os.tmpdir();
  if (path.isAbsolute(tmp)) candidates.push(path.join(tmp, `belay-${uid}`));
  candidates.push(`/tmp/belay-${uid}`);
  let refused = '';
  for (const root of candidates) {
    // Room for a session folder and a socket name beneath.
    if (Buffer.byteLength(root) > MAX_SOCKET_PATH - 40) continue;
    try {
      mkdirSync(root, { mode: 0o700 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') continue;
    }
    if (ownedPrivateFolder(root)) return root;
    refused = root;
  }
  throw new Error(`no private folder for Belay's sockets: ${refused || os.tmpdir()} is not a folder of this user with mode 0700 (remove it, or set XDG_RUNTIME_DIR)`);
}

/** A session's own folder for sockets, short enough for any socket name Belay gives. */
export interface SocketFolder {
  readonly path: string;
  remove(): Promise<void>;
}

export async function socketFolder(env?: NodeJS.ProcessEnv): Promise<SocketFolder> {
  const dir = path.join(socketRoot(env), randomBytes(6).toString('hex'));
  await mkdir(dir, { mode: 0o700 });
  return { path: dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** A path to connect to `socketPath` by: itself when short, else a short symlink to it made in `dir`. */
export async function connectablePath(socketPath: string, dir: string, name: string): Promise<string> {
  if (Buffer.byteLength(socketPath) <= MAX_SOCKET_PATH) return socketPath;
  const link = path.join(dir, `${name}.target`);
  await rm(link, { force: true });
  await symlink(socketPath, link);
  return link;
}

/** Where a relay listens: Unix sockets in a folder (shown to an isolated run), or loopback TCP ports. */
export type RelayListen = { kind: 'unix'; dir: string } | { kind: 'tcp' };

/**
 * Pipes one connection made inside to the service at `target`, at most MAX_CONNECTIONS at once
 * per service (`open` counts them); both ends are in `connections` while they last.
 */
function pipeToService(inbound: Duplex, target: string, open: { count: number }, connections: Set<Duplex>): void {
  if (open.count >= MAX_CONNECTIONS) {
    inbound.destroy();
    return;
  }
  open.count++;
  const outbound = net.connect(target);
  for (const socket of [inbound, outbound]) connections.add(socket);
  const done = () => {
    inbound.destroy();
    outbound.destroy();
  };
  inbound.once('close', () => {
    open.count--;
    connections.delete(inbound);
    outbound.destroy();
  });
  outbound.once('close', () => {
    connections.delete(outbound);
    // What the service already sent reaches the run before the connection goes.
    inbound.end();
  });
  inbound.on('error', done);
  outbound.on('error', done);
  inbound.pipe(outbound);
  outbound.pipe(inbound);
}

/**
 * The host services for an environment reached through its executor: each connection made to a
 * service's port inside arrives as a stream (`Executor.listen`) and is piped here to the service.
 * Nothing listens on the host.
 */
export class ServiceLinks {
  readonly #targets = new Map<string, string>();
  readonly #open = new Map<string, { count: number }>();
  readonly #connections = new Set<Duplex>();
  #closed = false;

  private constructor() {}

  /** `linkDir` (a private socket folder never shown to the run) receives the short links to long service paths. */
  static async open(services: readonly ServiceSpec[], linkDir: string): Promise<ServiceLinks> {
    const links = new ServiceLinks();
    for (const service of services) {
      links.#targets.set(service.name, await connectablePath(service.socketPath, linkDir, service.name));
      links.#open.set(service.name, { count: 0 });
    }
    return links;
  }

  /** Pipes a connection made inside to the service `name`; refused once closed. */
  accept(name: string, inbound: Duplex): void {
    const target = this.#targets.get(name);
    if (this.#closed || target === undefined) inbound.destroy();
    else pipeToService(inbound, target, this.#open.get(name)!, this.#connections);
  }

  /** Cuts every connection; later ones are refused. Idempotent. */
  close(): void {
    this.#closed = true;
    for (const socket of this.#connections) socket.destroy();
    this.#connections.clear();
  }
}

export class ServiceRelay {
  readonly #servers = new Map<string, net.Server>();
  readonly #addresses = new Map<string, string | number>();
  readonly #connections = new Set<Duplex>();
  #closed = false;

  private constructor() {}

  /**
   * Starts one listener per service. `linkDir` (a private socket folder never shown to the run)
   * receives the short links to long service paths.
   */
  static async open(services: readonly ServiceSpec[], listen: RelayListen, linkDir: string): Promise<ServiceRelay> {
    const relay = new ServiceRelay();
    try {
      for (const service of services) {
        const target = await connectablePath(service.socketPath, linkDir, service.name);
        await relay.#listen(service.name, target, listen);
      }
    } catch (error) {
      await relay.close();
      throw error;
    }
    return relay;
  }

  async #listen(name: string, target: string, listen: RelayListen): Promise<void> {
    const open = { count: 0 };
    const server = net.createServer((inbound) => {
      if (this.#closed) inbound.destroy();
      else pipeToService(inbound, target, open, this.#connections);
    });
    server.on('error', () => undefined);
    const address = listen.kind === 'unix' ? path.join(listen.dir, `${name}.sock`) : undefined;
    if (address !== undefined) await rm(address, { force: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      if (address !== undefined) server.listen(address, resolve);
      else server.listen(0, '127.0.0.1', resolve);
    });
    this.#servers.set(name, server);
    if (address !== undefined) {
      // Reachable by whichever user the run's programs are (the folder around it is private).
      await chmod(address, 0o666);
      this.#addresses.set(name, address);
    } else {
      const bound = server.address();
      this.#addresses.set(name, typeof bound === 'object' && bound ? bound.port : 0);
    }
  }

  /** The loopback port of a TCP relay. */
  port(name: string): number {
    const address = this.#addresses.get(name);
    if (typeof address !== 'number') throw new Error(`no service named '${name}' in this session`);
    return address;
  }

  /** Stops listening, cuts every connection, unlinks the sockets. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    const closing = [...this.#servers.values()].map((server) => new Promise<void>((resolve) => server.close(() => resolve())));
    for (const socket of this.#connections) socket.destroy();
    this.#connections.clear();
    await Promise.all(closing);
    this.#servers.clear();
    for (const address of this.#addresses.values()) if (typeof address === 'string') await rm(address, { force: true });
  }
}
