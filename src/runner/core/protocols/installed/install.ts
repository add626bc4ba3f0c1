// Installs a coding CLI's pinned version from the npm registry into a per-user cache, once: each
// version in a folder of its own (`<cache>/<protocol>-<version>`), made in a fresh folder beside
// it and renamed into place when npm has finished, so a folder that exists is whole, and two
// installs racing (two runs, two windows) each end with the same finished folder.
import { existsSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { runBounded } from '../../../../shared/process.ts';
import { shellQuote } from '../../../../shared/shell.ts';
import type { InstalledAgent } from './installedAgent.ts';

/** Written last into a finished install. */
const MARK = '.belay-installed';
/** npm's whole install may take this long (a slow registry, a 250 MB binary). */
const INSTALL_TIMEOUT_MS = 15 * 60_000;

/** The per-user cache of installed CLIs: `$XDG_CACHE_HOME/belay/agents`, else `~/.cache/belay/agents`. */
export function defaultAgentCache(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME && path.isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : path.join(os.homedir(), '.cache');
  return path.join(base, 'belay', 'agents');
}

export interface InstalledCli {
  /** The executable (`<folder>/node_modules/.bin/<bin>`, a link into the package). */
  bin: string;
  /** The install's folder: everything the CLI reads, shown read-only to the run. */
  folder: string;
  version: string;
}

/** Where `agent`'s pinned version lives in `cache`, installed or not. */
export function installFolder(agent: Pick<InstalledAgent, 'name' | 'version'>, cache: string): string {
  return path.join(cache, `${agent.name}-${agent.version}`);
}

/** The installed CLI when it is in the cache already, else undefined. */
export function findInstalled(agent: InstalledAgent, cache: string): InstalledCli | undefined {
  const folder = installFolder(agent, cache);
  const bin = path.join(folder, 'node_modules', '.bin', agent.bin);
  return existsSync(path.join(folder, MARK)) && existsSync(bin) ? { bin, folder, version: agent.version } : undefined;
}

/** An install that could not be made: one line, what to do. */
export class InstallError extends Error {
  override name = 'InstallError';
}

export interface InstallOptions {
  cache: string;
  /** npm's command (default `npm` on PATH). */
  npm?: string;
  /** Progress in words ("installing Claude Code 2.1.197 from the npm registry"). */
  onProgress?: (message: string) => void;
  signal?: AbortSignal;
  /** The environment npm runs with (default Belay's: npm's own settings, registry and proxy, apply). */
  env?: NodeJS.ProcessEnv;
}

/** The pinned CLI from the cache, installed there first when it is not. */
export async function ensureInstalled(agent: InstalledAgent, options: InstallOptions): Promise<InstalledCli> {
  const found = findInstalled(agent, options.cache);
  if (found) return found;
  const spec = `${agent.package}@${agent.version}`;
  const folder = installFolder(agent, options.cache);
  const partial = `${folder}.partial-${process.pid}-${randomBytes(4).toString('hex')}`;
  options.onProgress?.(`installing ${agent.title} ${agent.version} (${spec}) from the npm registry into ${options.cache}`);
  try {
    await mkdir(partial, { recursive: true, mode: 0o755 });
    await writeFile(path.join(partial, 'package.json'), JSON.stringify({ name: 'belay-installed-agent', private: true }) + '\n');
    const result = await runBounded({
      argv: [options.npm ?? 'npm', 'install', '--no-audit', '--no-fund', '--no-save', '--loglevel=error', '--prefix', partial, spec],
      cwd: partial,
      env: options.env ?? process.env,
      maxOutputChars: 8000,
      keepTailChars: 4000,
      timeoutMs: INSTALL_TIMEOUT_MS,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (result.spawnError) throw new InstallError(`${agent.title} is not installed and npm could not be started to install it (${result.spawnError.message}): install Node.js's npm, or name the CLI with --agent`);
    if (result.aborted) throw new InstallError(`the install of ${spec} was stopped`);
    if (result.timedOut) throw new InstallError(`the install of ${spec} from the npm registry did not finish within ${INSTALL_TIMEOUT_MS / 60_000} minutes`);
    if (result.exitCode !== 0) throw new InstallError(`${spec} could not be installed from the npm registry: ${npmReason(result.stderr.text('…') + '\n' + result.stdout.text('…'))}`);
    const bin = path.join(partial, 'node_modules', '.bin', agent.bin);
    if (!existsSync(bin)) throw new InstallError(`${spec} installed, but it has no ${agent.bin} program for this platform (${process.platform}-${process.arch})`);
    await writeFile(path.join(partial, MARK), `${spec}\n`);
    try {
      await rename(partial, folder);
    } catch (error) {
      // Another install finished first: its folder is as good as this one.
      if (!findInstalled(agent, options.cache)) throw error;
    }
  } finally {
    await rm(partial, { recursive: true, force: true });
  }
  const installed = findInstalled(agent, options.cache);
  if (!installed) throw new InstallError(`${spec} was installed into ${folder} but is not there now`);
  options.onProgress?.(`installed ${agent.title} ${agent.version}`);
  return installed;
}

/** npm's reason in one line: the first `npm error` line that says what went wrong. */
export function npmReason(output: string): string {
  const lines = output
    .split('\n')
    .map((line) => line.replace(/^npm (ERR!|error)\s*/, '').trim())
    .filter((line) => line && line !== '…' && !/^(A complete log|Log files were not saved|\/.*debug.*\.log$)/.test(line));
  const said = lines.filter((line) => !/^code \S+$/.test(line));
  const network = said.find((line) => /request to .* failed/i.test(line)) ?? said.find((line) => /ENOTFOUND|ECONNREFUSED|ETIMEDOUT|EAI_AGAIN|ECONNRESET|network/i.test(line)) ?? (lines.some((line) => /^code (ENOTFOUND|ECONNREFUSED|ETIMEDOUT|EAI_AGAIN|ECONNRESET)$/.test(line)) ? lines[0] : undefined);
  const chosen = network ?? said[0] ?? lines[0] ?? 'npm failed without saying why';
  const words = network ? `the npm registry cannot be reached (${chosen})` : chosen;
  return words.length > 300 ? `${words.slice(0, 297)}…` : words;
}

/**
 * The shell command that starts an installed CLI: its native executable where the install has one
 * for this platform (no Node needed inside the run), else its program, or for a Node program
 * Belay's own runtime (`node`, the editor's with ELECTRON_RUN_AS_NODE) with the program's script.
 */
export function launchCommand(agent: Pick<InstalledAgent, 'needsNode' | 'nativeExecutable'>, cli: Pick<InstalledCli, 'bin' | 'folder'>, node: string = process.execPath): string {
  const native = agent.nativeExecutable?.(process.platform, process.arch);
  if (native !== undefined) {
    const program = path.join(cli.folder, native);
    if (program.startsWith(cli.folder + path.sep) && existsSync(program)) return shellQuote(program);
  }
  return agent.needsNode ? `${shellQuote(node)} ${shellQuote(cli.bin)}` : shellQuote(cli.bin);
}
