// The git work of a repository task, on this machine: the base commit fetched from the local
// source into a repository of Belay's own (never the agent's), the agent's checkout made from it,
// the agent's change read as a binary patch, and that patch applied to a clean checkout.
// Git never runs with a repository or configuration the agent wrote: the agent's working tree is
// read as a work tree of Belay's repository through a private index (so its .git, hooks, config
// and attributes' drivers do nothing), and every git here runs without the system's or the
// person's configuration, without hooks, and with local transport only.
import { constants as fsConstants, promises as fs } from 'node:fs';
import * as path from 'node:path';
import { runBounded } from '../../../shared/process.ts';

const GIT_TIMEOUT_MS = 300_000;

/** The git settings every call here runs with (given as GIT_CONFIG_* so no file is read). */
const SETTINGS: [string, string][] = [
  ['safe.directory', '*'],
  ['core.hooksPath', '/dev/null'],
  ['core.fsmonitor', 'false'],
  ['core.autocrlf', 'false'],
  ['core.symlinks', 'true'],
  ['core.quotePath', 'false'],
  ['gc.auto', '0'],
  ['maintenance.auto', 'false'],
  ['protocol.allow', 'never'],
  ['protocol.file.allow', 'always'],
  ['user.name', 'Belay'],
  ['user.email', 'belay@localhost'],
];

function gitEnvironment(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: '/nonexistent',
    LANG: 'C',
    LC_ALL: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ALLOW_PROTOCOL: 'file',
    GIT_CONFIG_COUNT: String(SETTINGS.length),
  };
  SETTINGS.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return { ...env, ...extra };
}

export class GitError extends Error {
  override name = 'GitError';
}

/** Runs git; a failure is one line (git's own last line of stderr), never a stack. */
async function git(args: string[], cwd: string, options: { env?: Record<string, string>; signal?: AbortSignal; allowFailure?: boolean } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const result = await runBounded({
    argv: ['git', ...args],
    cwd,
    env: gitEnvironment(options.env),
    maxOutputChars: 64_000,
    keepTailChars: 8_000,
    timeoutMs: GIT_TIMEOUT_MS,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (result.spawnError) throw new GitError(`git could not be started (a repository task needs git on this machine): ${result.spawnError.message}`);
  const stdout = result.stdout.text('');
  const stderr = result.stderr.text('');
  if (result.timedOut) throw new GitError(`git ${args[0]} did not finish within ${GIT_TIMEOUT_MS / 1000} s`);
  if (result.aborted) throw new GitError(`git ${args[0]} was stopped`);
  if (result.exitCode !== 0 && !options.allowFailure) {
    const last = stderr.trim().split('\n').filter((line) => line.trim() !== '').pop() ?? `exit ${result.exitCode ?? result.signal}`;
    throw new GitError(`git ${args[0]}: ${last.replace(/^(fatal|error): /, '').slice(0, 300)}`);
  }
  return { code: result.exitCode, stdout, stderr };
}

/**
 * Fetches `revision` (a full commit id, a branch or a tag; HEAD when absent) and its history from
 * `source` into the bare repository `baseRepo` (made here), and returns the commit id. Nothing
 * else of the source comes along: no later commit, no other branch.
 */
export async function fetchBase(source: string, revision: string | undefined, baseRepo: string, signal?: AbortSignal): Promise<string> {
  await fs.mkdir(baseRepo, { recursive: true });
  await git(['init', '-q', '--bare', baseRepo], baseRepo, { ...(signal ? { signal } : {}) });
  try {
    await git(['fetch', '-q', '--no-tags', '--no-recurse-submodules', source, revision ?? 'HEAD'], baseRepo, { ...(signal ? { signal } : {}) });
  } catch (error) {
    if (!(error instanceof GitError)) throw error;
    const what = revision === undefined ? 'its HEAD' : `'${revision}'`;
    throw new GitError(`${what} could not be fetched from ${source} (${error.message}): name a full commit id, a branch or a tag it has`);
  }
  const sha = (await git(['rev-parse', '--verify', '-q', 'FETCH_HEAD^{commit}'], baseRepo)).stdout.trim();
  if (!/^[0-9a-f]{40,64}$/.test(sha)) throw new GitError(`'${revision ?? 'HEAD'}' of ${source} is not a commit`);
  await git(['update-ref', 'refs/belay/base', sha], baseRepo);
  return sha;
}

/** The base commit `fetchBase` recorded in `baseRepo`. */
export async function resolveBase(baseRepo: string): Promise<string> {
  return (await git(['rev-parse', '--verify', '-q', 'refs/belay/base^{commit}'], baseRepo)).stdout.trim();
}

/** Makes `dest` a repository checked out (detached) at `sha`, from Belay's `baseRepo`; its objects are its own copies. */
export async function checkoutBase(baseRepo: string, sha: string, dest: string, signal?: AbortSignal): Promise<void> {
  await fs.mkdir(dest, { recursive: true });
  const opts = signal ? { signal } : {};
  await git(['init', '-q', dest], dest, opts);
  await git(['fetch', '-q', '--no-tags', baseRepo, sha], dest, opts);
  await git(['checkout', '-q', '--detach', sha], dest, opts);
  // So an agent can commit inside, as Term Challenge agents do (there is no global configuration there).
  await git(['config', 'user.name', 'Term Challenge agent'], dest, opts);
  await git(['config', 'user.email', 'agent@localhost'], dest, opts);
}

export interface CapturedPatch {
  /** Bytes of the patch (0: the agent changed nothing). */
  bytes: number;
  /** Paths the patch changes, relative to the repository. */
  paths: string[];
  /** Set when the patch is larger than allowed: then `patchFile` is not written. */
  tooLarge?: boolean;
}

/**
 * The agent's change to the base commit, whatever it did with git (commits, the index, a broken
 * or deleted .git): everything in `worktree` that its .gitignore does not ignore, as a binary
 * patch written to `patchFile`. Symlinks are recorded as links; FIFOs, sockets and devices are
 * skipped (git records none). A patch larger than `maxBytes` is not kept.
 */
export async function capturePatch(options: { baseRepo: string; sha: string; worktree: string; patchFile: string; maxBytes: number; scratch: string; signal?: AbortSignal }): Promise<CapturedPatch> {
  const { baseRepo, sha, worktree, patchFile } = options;
  await fs.mkdir(options.scratch, { recursive: true });
  const index = path.join(options.scratch, 'capture.index');
  const draft = path.join(options.scratch, 'capture.diff');
  await fs.rm(index, { force: true });
  await fs.rm(draft, { force: true });
  const env = { GIT_DIR: path.resolve(baseRepo), GIT_WORK_TREE: path.resolve(worktree), GIT_INDEX_FILE: index };
  const opts = { env, ...(options.signal ? { signal: options.signal } : {}) };
  try {
    await git(['read-tree', sha], worktree, opts);
    await git(['add', '-A', '--ignore-errors'], worktree, { ...opts, allowFailure: true });
    const names = await git(['diff', '--cached', '--name-only', '-z', '--no-renames', sha], worktree, opts);
    const paths = names.stdout.split('\0').filter((name) => name !== '');
    if (paths.length === 0) {
      await fs.mkdir(path.dirname(patchFile), { recursive: true });
      await fs.writeFile(patchFile, '');
      return { bytes: 0, paths };
    }
    await git(['diff', '--cached', '--binary', '--full-index', '--no-renames', '--no-ext-diff', '--no-textconv', '--no-color', `--output=${draft}`, sha], worktree, opts);
    const bytes = (await fs.stat(draft)).size;
    if (bytes > options.maxBytes) return { bytes, paths, tooLarge: true };
    await fs.mkdir(path.dirname(patchFile), { recursive: true });
    await fs.rename(draft, patchFile);
    return { bytes, paths };
  } finally {
    await fs.rm(index, { force: true });
    await fs.rm(draft, { force: true });
  }
}

/**
 * Applies `patchFile` to the clean checkout `checkout` (all of it or nothing). git refuses paths
 * outside the repository, paths inside .git and changes beyond a symbolic link; the refusal is
 * the error, in one line.
 */
export async function applyPatch(checkout: string, patchFile: string, signal?: AbortSignal): Promise<void> {
  if ((await fs.stat(patchFile)).size === 0) return;
  try {
    await git(['apply', '--binary', '--whitespace=nowarn', path.resolve(patchFile)], checkout, { env: { GIT_DIR: path.join(path.resolve(checkout), '.git'), GIT_WORK_TREE: path.resolve(checkout) }, ...(signal ? { signal } : {}) });
  } catch (error) {
    if (error instanceof GitError) throw new GitError(`the agent's patch does not apply to a clean checkout: ${error.message.replace(/^git apply: /, '')}`);
    throw error;
  }
}

/**
 * Copies `files` (relative paths with `/`) from `fromDir` into `intoDir` at the same paths,
 * replacing whatever is there: a symlink, a file or a folder standing where a folder or the file
 * goes is removed first, so nothing is written through a link. Run only while no program of the
 * run can change `intoDir`.
 */
export async function layFiles(fromDir: string, files: readonly string[], intoDir: string): Promise<void> {
  for (const rel of files) {
    const dest = await clearedPath(intoDir, rel);
    const source = path.join(fromDir, ...rel.split('/'));
    await fs.copyFile(source, dest, fsConstants.COPYFILE_EXCL);
    await fs.chmod(dest, (await fs.stat(source)).mode & 0o777);
  }
}

/** Writes generated files (an executable script each) into `intoDir` as `layFiles` lays them. */
export async function writeFiles(files: readonly { name: string; content: string }[], intoDir: string): Promise<void> {
  for (const file of files) await fs.writeFile(await clearedPath(intoDir, file.name), file.content, { flag: 'wx', mode: 0o755 });
}

/** `rel` under `intoDir` with every folder on the way a real folder and nothing at the end. */
async function clearedPath(intoDir: string, rel: string): Promise<string> {
  const parts = rel.split('/');
  if (parts.some((part) => part === '' || part === '.' || part === '..')) throw new Error(`${rel}: not a plain relative path`);
  let at = path.resolve(intoDir);
  for (const part of parts.slice(0, -1)) {
    at = path.join(at, part);
    const stat = await fs.lstat(at).catch(() => undefined);
    if (stat?.isDirectory()) continue;
    if (stat) await fs.rm(at, { recursive: true, force: true });
    await fs.mkdir(at);
  }
  const dest = path.join(at, parts[parts.length - 1]!);
  await fs.rm(dest, { recursive: true, force: true });
  return dest;
}
