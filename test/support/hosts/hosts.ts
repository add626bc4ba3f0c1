// Test hosts: "other machines" made on this one for the remote-engine tests. Each host is a
// network namespace joined to this machine by a veth pair and nothing else (no route out), with
// its own SSH server (its own host key, key-only login for one user), a user of its own with
// rootless podman (runc, its own storage under its home, its own subordinate ids) serving its API
// socket, and the base image loaded there from this machine's storage (`podman save` piped into
// `podman --url … load`). Needs root, Linux, podman, openssh-server, uidmap and iproute2.
// Facts that shaped it: the SSH server and the podman service start with `nsenter --net`, not
// `ip netns exec` (which remounts /sys: runc then finds no cgroup mount); podman 4.3 needs the
// port in an ssh:// URL. Every name carries this process's pid, so hosts of tests running side by
// side never meet, and `removeStaleHosts` removes those of a test process that is gone.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { tempDir, type TempDir } from '../temp.ts';

const PREFIX = 'bth';

export interface TestHost {
  /** e.g. bth1234x0: the namespace's and the user's name. */
  name: string;
  user: string;
  uid: number;
  /** The host's address, reachable from this machine only. */
  address: string;
  /** What `--engine-host` takes: ssh://user@address:22 (the engine adds the socket's path). */
  engineHost: string;
  /** The podman URL, socket path included. */
  podmanUrl: string;
  /** The private key that logs in as `user` (the only way in; the same for every host of a set, as a person's own key). */
  identity: string;
  /** Runs a program as the host's user there (through SSH), to its end. */
  ssh(command: string, timeoutMs?: number): { code: number | null; stdout: string; stderr: string };
  /** Runs `podman …` against the host's engine (through SSH), to its end. */
  podman(args: readonly string[], input?: Buffer, timeoutMs?: number): { code: number | null; stdout: string; stderr: string };
  /** Processes of the host's user still running, as "pid command" (the podman service and its pause process excluded). */
  userProcesses(): string[];
  /** Cuts the host off this machine (its link goes down) or back. */
  setReachable(reachable: boolean): void;
}

export interface TestHosts {
  hosts: TestHost[];
  /** A HOME for SSH clients that knows every host's key (`.ssh/known_hosts`), and the keys. */
  clientHome: string;
  /** Environment for an engine client that reaches the hosts: HOME with the known hosts, CONTAINER_SSHKEY the key. */
  clientEnv: Record<string, string>;
  /** Removes everything: servers, namespaces, links, users and their storage. Idempotent. */
  remove(): Promise<void>;
}

export interface MakeHostsOptions {
  /** Image loaded on each host from this machine's storage (none when absent). */
  loadImage?: string;
}

function run(argv: string[], options: { input?: Buffer | string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): { code: number | null; stdout: string; stderr: string } {
  const result = spawnSync(argv[0]!, argv.slice(1), { input: options.input, timeout: options.timeoutMs ?? 60_000, env: options.env ?? process.env, maxBuffer: 64 * 1024 * 1024 });
  return { code: result.status, stdout: result.stdout?.toString() ?? '', stderr: result.stderr?.toString() ?? String(result.error ?? '') };
}

function must(argv: string[], options: { input?: Buffer | string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): string {
  const result = run(argv, options);
  if (result.code !== 0) throw new Error(`test hosts: ${argv.join(' ')} failed (${result.code}): ${result.stderr.trim().split('\n').slice(-3).join(' | ')}`);
  return result.stdout;
}

/** Why test hosts cannot be made here, or undefined when they can. */
export function hostsUnavailable(): string | undefined {
  if (process.platform !== 'linux') return 'test hosts need Linux';
  if (process.getuid?.() !== 0) return 'test hosts need root (network namespaces, users)';
  for (const program of ['/usr/sbin/sshd', '/usr/bin/newuidmap', '/usr/bin/podman', '/usr/bin/nsenter', '/usr/bin/setpriv']) {
    if (!existsSync(program)) return `test hosts need ${program} (apt-get install openssh-server uidmap podman util-linux)`;
  }
  if (run(['ip', '-V']).code !== 0) return 'test hosts need iproute2';
  return undefined;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A /30 in 10.213.0.0/16 that no interface here uses yet. */
function freeSubnet(taken: Set<string>): string {
  const used = must(['ip', '-4', '-o', 'addr']);
  for (;;) {
    const block = Math.floor(Math.random() * 16384) * 4;
    const base = `10.213.${Math.floor(block / 256)}.${block % 256}`;
    const prefix = base.split('.').slice(0, 3).join('.');
    const first = block % 256;
    if (taken.has(base)) continue;
    if ([1, 2].some((offset) => used.includes(` ${prefix}.${first + offset}/`))) continue;
    taken.add(base);
    return `${prefix}.${first}`;
  }
}

function addressIn(subnet: string, offset: number): string {
  const parts = subnet.split('.').map(Number);
  return `${parts[0]}.${parts[1]}.${parts[2]}.${parts[3]! + offset}`;
}

/** Waits for `check` to hold, re-reading every 50 ms; throws `what` after `timeoutMs`. */
async function until(check: () => boolean, what: () => string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`test hosts: ${what()} within ${timeoutMs / 1000} s`);
    await delay(50);
  }
}

interface Made {
  name: string;
  servers: ChildProcess[];
}

/** Makes `count` hosts; `remove()` undoes all of it (call it in `after`). */
export async function makeHosts(count: number, options: MakeHostsOptions = {}): Promise<TestHosts> {
  const unavailable = hostsUnavailable();
  if (unavailable) throw new Error(unavailable);
  await removeStaleHosts();
  const home: TempDir = tempDir('belay-hosts-');
  chmodSync(home.dir, 0o700);
  const ssh = path.join(home.dir, '.ssh');
  mkdirSync(ssh, { mode: 0o700 });
  const made: Made[] = [];
  const hosts: TestHost[] = [];
  const subnets = new Set<string>();
  const identity = path.join(ssh, 'id_ed25519');
  must(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', `belay-test-client-${process.pid}`, '-f', identity]);
  let removed = false;
  const result: TestHosts = {
    hosts,
    clientHome: home.dir,
    clientEnv: { HOME: home.dir, PATH: process.env.PATH ?? '/usr/bin:/bin', CONTAINER_SSHKEY: identity },
    async remove() {
      if (removed) return;
      removed = true;
      for (const host of made) await removeHost(host.name, host.servers);
      home.remove();
    },
  };
  try {
    for (let index = 0; index < count; index++) {
      const name = `${PREFIX}${process.pid}x${index}`;
      const entry: Made = { name, servers: [] };
      made.push(entry);
      hosts.push(await makeHost(name, entry, freeSubnet(subnets), home.dir, identity));
    }
    writeFileSync(path.join(ssh, 'config'), hosts.map((host) => `Host ${host.address}\n  User ${host.user}\n  IdentityFile ${host.identity}\n  IdentitiesOnly yes\n  BatchMode yes\n`).join(''));
    if (options.loadImage) {
      const image = spawnSync('podman', ['save', options.loadImage], { maxBuffer: 2 * 1024 * 1024 * 1024, timeout: 300_000 });
      if (image.status !== 0) throw new Error(`test hosts: podman save ${options.loadImage}: ${image.stderr.toString().trim()}`);
      for (const host of hosts) {
        const loaded = host.podman(['load'], image.stdout, 300_000);
        if (loaded.code !== 0) throw new Error(`test hosts: loading ${options.loadImage} on ${host.name}: ${loaded.stderr.trim()}`);
      }
    }
  } catch (error) {
    await result.remove();
    throw error;
  }
  return result;
}

async function makeHost(name: string, entry: Made, subnet: string, clientHome: string, identity: string): Promise<TestHost> {
  const outside = addressIn(subnet, 1);
  const address = addressIn(subnet, 2);
  const netns = `/run/netns/${name}`;
  // 1. The network: a namespace, a veth pair, an address on each side, no route beyond.
  must(['ip', 'netns', 'add', name]);
  must(['ip', 'link', 'add', `${name}a`, 'type', 'veth', 'peer', 'name', `${name}b`]);
  must(['ip', 'link', 'set', `${name}b`, 'netns', name]);
  must(['ip', 'addr', 'add', `${outside}/30`, 'dev', `${name}a`]);
  must(['ip', 'link', 'set', `${name}a`, 'up']);
  must(['nsenter', `--net=${netns}`, 'ip', 'addr', 'add', `${address}/30`, 'dev', `${name}b`]);
  must(['nsenter', `--net=${netns}`, 'ip', 'link', 'set', `${name}b`, 'up']);
  must(['nsenter', `--net=${netns}`, 'ip', 'link', 'set', 'lo', 'up']);
  // 2. The user, with subordinate ids (useradd adds them) and rootless podman set to runc.
  must(['useradd', '--create-home', '--shell', '/bin/sh', '--comment', `belay test host of ${process.pid}`, name]);
  // No password at all ('*'): not locked ('!'), which sshd refuses, yet no password logs in.
  must(['usermod', '--password', '*', name]);
  const uid = Number(must(['id', '-u', name]).trim());
  const gid = Number(must(['id', '-g', name]).trim());
  const userHome = `/home/${name}`;
  if (!readFileSync('/etc/subuid', 'utf8').split('\n').some((line) => line.startsWith(`${name}:`))) {
    throw new Error(`test hosts: useradd gave ${name} no subordinate ids (/etc/subuid)`);
  }
  const own = (dir: string, mode = 0o700) => {
    mkdirSync(dir, { recursive: true, mode });
    chownSync(dir, uid, gid);
  };
  for (const dir of ['.config', '.config/containers', '.ssh']) own(path.join(userHome, dir));
  writeFileSync(path.join(userHome, '.config/containers/containers.conf'), '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n[containers]\n');
  const runtime = `/run/user/${uid}`;
  rmSync(runtime, { recursive: true, force: true });
  own(runtime);
  own(`${runtime}/podman`);
  // 3. Keys: the host's own, and the client key that logs in (kept in the client's home).
  const keys = path.join(clientHome, '.ssh');
  const serverDir = path.join(userHome, '.belay-test-sshd');
  mkdirSync(serverDir, { mode: 0o700 });
  const hostKey = path.join(serverDir, 'host_ed25519');
  must(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', `host@${name}`, '-f', hostKey]);
  const authorized = path.join(userHome, '.ssh/authorized_keys');
  writeFileSync(authorized, readFileSync(`${identity}.pub`));
  chownSync(authorized, uid, gid);
  chmodSync(authorized, 0o600);
  const hostPublic = readFileSync(`${hostKey}.pub`, 'utf8').trim().split(' ').slice(0, 2).join(' ');
  writeFileSync(path.join(keys, 'known_hosts'), `${address} ${hostPublic}\n`, { flag: 'a' });
  const config = path.join(serverDir, 'sshd_config');
  writeFileSync(
    config,
    [
      `ListenAddress ${address}`,
      'Port 22',
      `HostKey ${hostKey}`,
      `PidFile ${path.join(serverDir, 'sshd.pid')}`,
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PubkeyAuthentication yes',
      'PermitRootLogin no',
      `AllowUsers ${name}`,
      'AuthorizedKeysFile .ssh/authorized_keys',
      'UsePAM no',
      'X11Forwarding no',
      'AllowTcpForwarding local',
      'AllowStreamLocalForwarding local',
      `SetEnv XDG_RUNTIME_DIR=${runtime}`,
      'MaxSessions 64',
      'MaxStartups 64:30:128',
      '',
    ].join('\n'),
  );
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const sshd = spawn('nsenter', [`--net=${netns}`, '/usr/sbin/sshd', '-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  entry.servers.push(sshd);
  let sshdSaid = '';
  sshd.stderr!.on('data', (chunk: Buffer) => (sshdSaid = (sshdSaid + chunk.toString()).slice(-2000)));
  // 4. The user's podman service on its socket, in the host's network namespace.
  const socket = `${runtime}/podman/podman.sock`;
  const podmanEnv = { HOME: userHome, USER: name, LOGNAME: name, XDG_RUNTIME_DIR: runtime, PATH: '/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin' };
  const service = spawn('nsenter', [`--net=${netns}`, '--', 'setpriv', `--reuid=${uid}`, `--regid=${gid}`, '--init-groups', '--', 'podman', 'system', 'service', '--time=0', `unix://${socket}`], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: podmanEnv,
    cwd: userHome,
  });
  entry.servers.push(service);
  let serviceSaid = '';
  service.stderr!.on('data', (chunk: Buffer) => (serviceSaid = (serviceSaid + chunk.toString()).slice(-2000)));
  const sshArgs = (command: string) => ['ssh', '-F', '/dev/null', '-o', `UserKnownHostsFile=${path.join(keys, 'known_hosts')}`, '-o', 'StrictHostKeyChecking=yes', '-o', 'BatchMode=yes', '-o', 'ConnectTimeout=10', '-i', identity, `${name}@${address}`, command];
  const clientEnv = { HOME: clientHome, PATH: process.env.PATH ?? '/usr/bin:/bin' };
  const podmanUrl = `ssh://${name}@${address}:22${socket}`;
  const host: TestHost = {
    name,
    user: name,
    uid,
    address,
    engineHost: `ssh://${name}@${address}:22`,
    podmanUrl,
    identity,
    ssh: (command, timeoutMs = 60_000) => run(sshArgs(command), { timeoutMs, env: clientEnv }),
    podman: (args, input, timeoutMs = 120_000) => run(['podman', '--url', podmanUrl, '--identity', identity, ...args], { ...(input ? { input } : {}), timeoutMs, env: clientEnv }),
    userProcesses() {
      // Zombies are dead already (reparented ones wait for this machine's init to reap them).
      return run(['ps', '-u', String(uid), '-o', 'pid=,stat=,args=']).stdout
        .split('\n')
        .map((line) => line.trim().split(/\s+/))
        .filter((fields) => fields.length >= 3 && !fields[1]!.startsWith('Z'))
        .map((fields) => `${fields[0]} ${fields.slice(2).join(' ')}`)
        .filter((line) => !/podman system service|catatonit -P|sshd: /.test(line));
    },
    setReachable(reachable) {
      must(['ip', 'link', 'set', `${name}a`, reachable ? 'up' : 'down']);
    },
  };
  let sshSaid = '';
  await until(
    () => {
      if (sshd.exitCode !== null) return true;
      const tried = host.ssh('true', 10_000);
      sshSaid = tried.stderr.trim();
      return tried.code === 0;
    },
    () => `the SSH server of ${name} did not let its user in (${sshSaid} ${sshdSaid.trim().split('\n').slice(-2).join(' | ')})`,
  );
  if (sshd.exitCode !== null) throw new Error(`test hosts: the SSH server of ${name} ended: ${sshdSaid.trim()}`);
  await until(() => service.exitCode !== null || existsSync(socket), () => `the podman service of ${name} did not listen`);
  if (service.exitCode !== null) throw new Error(`test hosts: the podman service of ${name} ended: ${serviceSaid.trim().split('\n').slice(-3).join(' | ')}`);
  const info = host.podman(['info', '--format', '{{.Host.OCIRuntime.Name}} {{.Host.Security.Rootless}}']);
  if (info.code !== 0 || info.stdout.trim() !== 'runc true') throw new Error(`test hosts: podman on ${name} is not rootless runc: ${info.stdout.trim()} ${info.stderr.trim()}`);
  return host;
}

async function removeHost(name: string, servers: readonly ChildProcess[]): Promise<void> {
  // The user's containers first (through its own engine), then everything the user runs.
  const uid = run(['id', '-u', name]).stdout.trim();
  if (/^\d+$/.test(uid)) {
    const env = { HOME: `/home/${name}`, XDG_RUNTIME_DIR: `/run/user/${uid}`, PATH: '/usr/bin:/bin:/usr/sbin:/sbin' };
    const asUser = ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--init-groups', '--', 'podman'];
    if (existsSync(`/home/${name}`)) run([...asUser, 'rm', '--all', '--force', '--time', '0'], { env, timeoutMs: 120_000 });
    // Rootless storage holds files of the subordinate ids: removed from inside the user's
    // namespace (which starts its pause process again: killed below with the rest).
    if (existsSync(`/home/${name}/.local/share/containers`)) run([...asUser, 'unshare', 'rm', '-rf', `/home/${name}/.local/share/containers`], { env, timeoutMs: 120_000 });
  }
  for (const server of servers) if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
  if (/^\d+$/.test(uid)) {
    const deadline = Date.now() + 20_000;
    while (run(['pgrep', '-u', uid]).code === 0 && Date.now() < deadline) {
      run(['pkill', '-KILL', '-u', uid]);
      await delay(50);
    }
    run(['userdel', '--remove', '--force', name]);
    rmSync(`/run/user/${uid}`, { recursive: true, force: true });
  }
  rmSync(`/home/${name}`, { recursive: true, force: true });
  run(['ip', 'link', 'del', `${name}a`]);
  run(['ip', 'netns', 'del', name]);
}

/** Removes the test hosts of test processes that are gone (killed before they could). */
export async function removeStaleHosts(): Promise<void> {
  let names: string[] = [];
  try {
    names = readdirSync('/run/netns');
  } catch {
    // no namespaces at all
  }
  const users = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((line) => line.split(':', 1)[0]!)
    .filter((user) => user.startsWith(PREFIX));
  for (const name of new Set([...names.filter((n) => n.startsWith(PREFIX)), ...users])) {
    const match = new RegExp(`^${PREFIX}(\\d+)x\\d+$`).exec(name);
    if (!match || pidAlive(Number(match[1]))) continue;
    await removeHost(name, []);
  }
}
