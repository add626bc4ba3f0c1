// The sandbox an LLM's shell command (RUN_COMMAND) runs in by default: bubblewrap with the whole
// system read-only, the workspace and a private temp folder writable, the places that hold
// credentials hidden (an empty folder or an empty file over each), no capabilities, a PID
// namespace of its own (nothing it starts outlives it) and, unless the network is allowed, a
// network namespace with only its own loopback. Its environment is built from an allowlist: what
// builds need (PATH, locale, toolchain folders), never Belay's tokens or keys. Where bubblewrap
// cannot run (other systems, Linux without user namespaces), the caller says so and runs the
// command unsandboxed, as the person chose or was told.
import { mkdtemp, rm, writeFile, lstat, realpath, readdir, chmod } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { runBounded } from './process.ts';

/** Sandboxed (the default) or the person's own shell, chosen explicitly. */
export type ShellMode = 'sandboxed' | 'unsandboxed';

export interface ShellPolicy {
  mode: ShellMode;
  /** The sandboxed command may reach the network (its own loopback only when false). */
  network: boolean;
  /** Where the unsandboxed shell was chosen (a setting, an option), for the line that says so. */
  chosenBy?: string;
  /** More places to hide, absolute (the editor's mailbox when the setting moved it). */
  hidden?: readonly string[];
}

/** Places under the home folder that hold credentials, keys, tokens or a person's browsing. */
export const HIDDEN_IN_HOME: readonly string[] = [
  '.ssh',
  '.aws',
  '.gnupg',
  '.config/gh',
  '.config/hub',
  '.docker',
  '.kube',
  '.netrc',
  '.npmrc',
  '.yarnrc',
  '.yarnrc.yml',
  '.pypirc',
  '.git-credentials',
  '.config/git/credentials',
  '.cargo/credentials',
  '.cargo/credentials.toml',
  '.config/gcloud',
  '.azure',
  '.config/containers/auth.json',
  '.password-store',
  '.local/share/keyrings',
  '.pki',
  '.terraform.d/credentials.tfrc.json',
  '.m2/settings.xml',
  '.gradle/gradle.properties',
  '.mozilla',
  '.config/google-chrome',
  '.config/chromium',
  '.config/BraveSoftware',
  '.config/microsoft-edge',
  '.config/Code',
  '.config/Code - Insiders',
  '.config/VSCodium',
  '.vscode-server/data',
  '.local/share/code-server',
  '.config/code-server',
  '.cue',
  '.claude',
  '.claude.json',
  '.codex',
  '.gemini',
  '.config/github-copilot',
  '.config/anthropic',
  '.config/openai',
  '.bash_history',
  '.zsh_history',
  '.python_history',
  '.node_repl_history',
  '.psql_history',
  '.mysql_history',
];

/** System places hidden whatever the home: password hashes, host keys, other programs' sockets. */
export const HIDDEN_SYSTEM: readonly string[] = [
  '/etc/shadow',
  '/etc/shadow-',
  '/etc/gshadow',
  '/etc/gshadow-',
  '/etc/sudoers',
  '/etc/sudoers.d',
  // Other programs' sockets (the session bus, systemd's, engines', agents'): a socket on a
  // read-only mount still takes connections, and some of them obey whoever connects as this user.
  // The network off does not stop them; only hiding does. What the resolver reads there is bound
  // back (resolvConfPlaces).
  '/run',
  '/var/run',
];

/**
 * The environment variables a sandboxed command gets from Belay's, by name: the shell's basics, the
 * locale, and where toolchains live. Nothing else: tokens, keys, sockets and Belay's own settings
 * stay outside.
 */
const ENV_ALLOWED = new Set([
  'PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'TERM', 'LANG', 'LANGUAGE', 'TZ', 'COLORTERM', 'NO_COLOR', 'FORCE_COLOR',
  'JAVA_HOME', 'GOROOT', 'GOPATH', 'GOCACHE', 'GOMODCACHE', 'CARGO_HOME', 'RUSTUP_HOME', 'RUSTUP_TOOLCHAIN', 'NVM_DIR', 'NVM_BIN',
  'PYENV_ROOT', 'VIRTUAL_ENV', 'CONDA_PREFIX', 'CONDA_DEFAULT_ENV', 'PYTHONPATH', 'PYTHONHOME', 'NODE_PATH', 'DOTNET_ROOT',
  'CC', 'CXX', 'CFLAGS', 'CXXFLAGS', 'LDFLAGS', 'PKG_CONFIG_PATH', 'LD_LIBRARY_PATH', 'MAKEFLAGS',
]);

/** The allowlisted part of `env`, with the temp folder the sandbox gives (LC_* kept: locale only). */
export function sandboxEnvironment(env: NodeJS.ProcessEnv): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (ENV_ALLOWED.has(name) || /^LC_[A-Z]+$/.test(name)) kept[name] = value;
  }
  kept.TMPDIR = '/tmp';
  kept.PATH ??= '/usr/local/bin:/usr/bin:/bin';
  return kept;
}

/** Where the executor (src/shared/executor/) is inside the sandbox, when the command runs through it. */
export const EXECUTOR_IN_SANDBOX = '/tmp/.belay-exec';

/** A place to hide, as found on this machine: its real path and whether it is a folder. */
export interface HiddenPlace {
  real: string;
  folder: boolean;
}

/** `inner` is `outer` or inside it. */
function within(outer: string, inner: string): boolean {
  return inner === outer || inner.startsWith(outer.endsWith('/') ? outer : `${outer}/`);
}

/**
 * The places to hide that exist here, each by its real path (a link to a key elsewhere hides the
 * key), without those that hold the workspace (hiding them would hide it; what is inside them and
 * not in the workspace stays readable then, as the person chose to work there). `/root` is hidden
 * whole unless the workspace is in it or it is the person's own home (Belay run as root): then,
 * as for any home, its credential places are hidden and its toolchains stay readable.
 */
export async function hiddenPlaces(workspace: string, home: string | undefined, extra: readonly string[] = []): Promise<HiddenPlace[]> {
  const homeReal = home ? await realpath(home).catch(() => home) : undefined;
  const wanted = [...HIDDEN_SYSTEM, ...(homeReal === '/root' ? [] : ['/root']), ...extra];
  if (home && path.isAbsolute(home) && home !== '/') wanted.push(...HIDDEN_IN_HOME.map((p) => path.join(home, p)));
  try {
    // Host keys: private ones only (the public ones and ssh_config stay readable).
    for (const name of await readdir('/etc/ssh')) if (/^ssh_host_.*_key$/.test(name)) wanted.push(path.join('/etc/ssh', name));
  } catch {
    // No /etc/ssh.
  }
  const found = new Map<string, HiddenPlace>();
  for (const place of wanted) {
    let real: string;
    try {
      real = await realpath(place);
    } catch {
      continue;
    }
    if (within(real, workspace) || real === '/') continue;
    const stats = await lstat(real).catch(() => undefined);
    if (!stats || (!stats.isDirectory() && !stats.isFile() && !stats.isSocket())) continue;
    found.set(real, { real, folder: stats.isDirectory() });
  }
  // An outer place hides what is inside it: the inner ones need no mount of their own.
  const places = [...found.values()].sort((a, b) => a.real.length - b.real.length);
  return places.filter((p, i) => !places.slice(0, i).some((q) => q.folder && within(q.real, p.real)));
}

/**
 * bubblewrap's arguments (after the program) for a command in `workspace`: the system read-only,
 * fresh /dev and /proc, private /tmp and /var/tmp, the workspace writable, then each hidden place
 * covered by an empty read-only folder or file (after the workspace, so a place inside the
 * workspace is hidden too), no capabilities,
 * new PID, IPC and UTS namespaces (and network, unless allowed), a session of its own.
 */
export function sandboxArguments(options: {
  workspace: string;
  network: boolean;
  hidden: readonly HiddenPlace[];
  emptyFile: string;
  root: boolean;
  executor?: string;
  boundBack?: readonly string[];
  /**
   * Folders under /tmp or /var/tmp shown read-only in the private ones (the home, the toolchains
   * on PATH, when they live there): the private /tmp hides only what is not the person's.
   */
  shownInTmp?: readonly string[];
  /** The private /tmp's and /var/tmp's size in bytes (bubblewrap 0.7 and later): their files are memory. */
  tmpBytes?: number;
}): string[] {
  const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'];
  // The kernel's settings stay read-only, whoever the command runs as (as root without
  // capabilities, /proc/sys still takes writes by file mode).
  args.push('--ro-bind-try', '/proc/sys', '/proc/sys', '--ro-bind-try', '/proc/sysrq-trigger', '/proc/sysrq-trigger');
  const size = options.tmpBytes ? ['--size', String(options.tmpBytes)] : [];
  args.push(...size, '--tmpfs', '/tmp', ...size, '--tmpfs', '/var/tmp');
  const shown = options.shownInTmp ?? [];
  for (const folder of shown) args.push('--ro-bind-try', folder, folder);
  args.push('--bind', options.workspace, options.workspace);
  // The executor, where the sandbox can always see it (its own folder may be hidden: code-server's
  // extensions live under a hidden place), read-only.
  if (options.executor) args.push('--ro-bind', options.executor, EXECUTOR_IN_SANDBOX);
  for (const place of options.hidden) {
    const inPrivateTmp = (within('/tmp', place.real) || within('/var/tmp', place.real)) && !shown.some((folder) => within(folder, place.real));
    if (inPrivateTmp || within('/dev', place.real) || within('/proc', place.real)) continue;
    args.push(...(place.folder ? ['--tmpfs', place.real, '--remount-ro', place.real] : ['--ro-bind', options.emptyFile, place.real]));
  }
  // Bound back inside a hidden place: what the resolver needs (resolv.conf's target under /run).
  for (const back of options.boundBack ?? []) args.push('--ro-bind-try', back, back);
  args.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try');
  if (!options.network) args.push('--unshare-net');
  // As root, bubblewrap keeps capabilities unless told; without root it keeps none.
  if (options.root) args.push('--cap-drop', 'ALL');
  args.push('--die-with-parent', '--new-session', '--chdir', options.workspace, '--');
  return args;
}

/** What can sandbox commands here: bubblewrap, found and able to run, or why not (a few words). */
export type SandboxSupport = { ok: true; bwrap: string; /** It takes `--size` for a tmpfs (0.7 and later). */ sizes?: boolean } | { ok: false; reason: string };

/** The private temp folders' size: a quarter of the memory, at most 4 GiB (their files are memory), in whole MiB. */
export function tmpBytes(totalMemory: number = os.totalmem()): number {
  const mib = 1024 ** 2;
  return Math.min(4 * 1024 ** 3, Math.floor(totalMemory / 4 / mib) * mib);
}

/**
 * Whether the sandbox works here: bubblewrap on the PATH (or the usual places), run once with the
 * sandbox's own options on `/` (a few milliseconds; keep the answer).
 */
export async function detectSandbox(platform: NodeJS.Platform = process.platform, env: NodeJS.ProcessEnv = process.env, usual: readonly string[] = ['/usr/bin', '/bin']): Promise<SandboxSupport> {
  if (platform !== 'linux') return { ok: false, reason: `${platform === 'darwin' ? 'macOS' : platform === 'win32' ? 'Windows' : platform}: Belay's sandbox is bubblewrap, on Linux` };
  const dirs = [...(env.PATH ?? '').split(':').filter((d) => d !== ''), ...usual];
  let bwrap: string | undefined;
  for (const dir of dirs) {
    const candidate = path.join(dir, 'bwrap');
    if (await lstat(candidate).then((s) => s.isFile() || s.isSymbolicLink(), () => false)) {
      bwrap = candidate;
      break;
    }
  }
  if (!bwrap) return { ok: false, reason: 'bubblewrap (bwrap) is not installed' };
  const probe = await runBounded({
    argv: [bwrap, ...sandboxArguments({ workspace: '/tmp', network: false, hidden: [], emptyFile: '/dev/null', root: process.getuid?.() === 0 }), '/bin/sh', '-c', 'exit 0'],
    cwd: '/',
    env: { PATH: env.PATH ?? '/usr/bin:/bin' },
    timeoutMs: 10_000,
    maxOutputChars: 2000,
  });
  if (probe.spawnError || probe.exitCode !== 0) {
    const said = probe.stderr.text('').trim().split('\n').pop() ?? '';
    return { ok: false, reason: `bubblewrap cannot run here${said ? ` (${said.slice(0, 160)})` : ''}; user namespaces may be off` };
  }
  const help = await runBounded({ argv: [bwrap, '--help'], cwd: '/', env: { PATH: env.PATH ?? '/usr/bin:/bin' }, timeoutMs: 10_000, maxOutputChars: 20_000 });
  const sizes = /--size\b/.test(help.stdout.text('') + help.stderr.text(''));
  return { ok: true, bwrap, sizes };
}

/**
 * What name resolution reads that lies in a hidden place (/etc/resolv.conf is often a link into
 * /run: systemd-resolved, NetworkManager, resolvconf): bound back read-only when the network is on.
 */
async function resolvConfPlaces(hidden: readonly HiddenPlace[]): Promise<string[]> {
  const real = await realpath('/etc/resolv.conf').catch(() => undefined);
  if (!real || real === '/etc/resolv.conf' || !hidden.some((p) => p.folder && within(p.real, real))) return [];
  return [real];
}

/**
 * What of /tmp and /var/tmp stays the person's in the sandbox (read-only): the home and the
 * folders of the programs on PATH, when they live there (a checkout under /tmp runs its own
 * node_modules/.bin: the whole node_modules is shown, as its links point inside it).
 */
export async function shownInPrivateTmp(home: string | undefined, searchPath: string | undefined): Promise<string[]> {
  const inTmp = (real: string) => real !== '/tmp' && real !== '/var/tmp' && (within('/tmp', real) || within('/var/tmp', real));
  const wanted = [...(home && path.isAbsolute(home) ? [home] : []), ...(searchPath ?? '').split(':').filter((entry) => path.isAbsolute(entry)).map((entry) => (path.basename(entry) === '.bin' && path.basename(path.dirname(entry)) === 'node_modules' ? path.dirname(entry) : entry))];
  const shown = new Set<string>();
  for (const place of wanted) {
    const real = await realpath(place).catch(() => undefined);
    if (real && inTmp(real)) shown.add(real);
  }
  return [...shown];
}

/** A sandbox for one command: its argument vector prefix and environment; `dispose` removes its empty file. */
export interface PreparedSandbox {
  prefix: [string, ...string[]];
  env: Record<string, string>;
  dispose(): Promise<void>;
}

/**
 * Prepares the sandbox for one command in `workspace` (a real path); with `executor` (its path on
 * the host), the sandbox's program is that executor, at EXECUTOR_IN_SANDBOX.
 */
export async function prepareSandbox(support: Extract<SandboxSupport, { ok: true }>, workspace: string, policy: ShellPolicy, env: NodeJS.ProcessEnv, executor?: string): Promise<PreparedSandbox> {
  const hidden = await hiddenPlaces(workspace, env.HOME ?? os.homedir(), [...(policy.hidden ?? []), ...(env.CUE_HOME ? [env.CUE_HOME] : [])]);
  // The file laid over hidden files: empty, read-only, in a folder of Belay's own (0700).
  const folder = await mkdtemp(path.join(os.tmpdir(), 'belay-sandbox-'));
  const emptyFile = path.join(folder, 'empty');
  await writeFile(emptyFile, '', { mode: 0o444 });
  await chmod(emptyFile, 0o444);
  const boundBack = policy.network ? await resolvConfPlaces(hidden) : [];
  const shownInTmp = await shownInPrivateTmp(env.HOME ?? os.homedir(), env.PATH);
  const args = sandboxArguments({ workspace, network: policy.network, hidden, emptyFile, root: process.getuid?.() === 0, boundBack, shownInTmp, ...(executor ? { executor } : {}), ...(support.sizes ? { tmpBytes: tmpBytes() } : {}) });
  return {
    prefix: [support.bwrap, ...args],
    env: sandboxEnvironment(env),
    dispose: () => rm(folder, { recursive: true, force: true }),
  };
}

/** One line naming how commands run: for confirmations, terminals and the session loop. */
export function shellDescription(policy: ShellPolicy, support: SandboxSupport): string {
  if (policy.mode === 'unsandboxed') return `Unsandboxed shell (${policy.chosenBy ?? 'chosen'}): commands run as you, with every file you can read and the network`;
  if (!support.ok) return `No sandbox here (${support.reason}): commands run unsandboxed, as you, with every file you can read`;
  return `Sandboxed: the workspace and a private /tmp writable, the system read-only, credentials hidden, network ${policy.network ? 'on' : 'off'}`;
}
