// The workspace sandbox: every path an LLM names is resolved to the real file it would touch,
// symbolic links included, and refused unless that file lies inside the workspace.
import { lstatSync, promises as fs, readlinkSync, realpathSync, type Stats } from 'node:fs';
import * as path from 'node:path';
import { errorMessage } from '../../shared/errors.ts';
import type { FailureCode } from './results.ts';

/** A workspace folder and its real path (symbolic links resolved), computed once. */
export interface Workspace {
  /** The folder as given, absolute. */
  root: string;
  realRoot: string;
}

export async function openWorkspace(root: string): Promise<Workspace> {
  const absolute = path.resolve(root);
  const realRoot = await fs.realpath(absolute);
  const stats = await fs.stat(realRoot);
  if (!stats.isDirectory()) throw new Error(`workspace '${root}' is not a folder`);
  return { root: absolute, realRoot };
}

/** A path that passed the sandbox. */
export interface ResolvedPath {
  /** As the LLM wrote it. */
  given: string;
  /** Normalised, `/`-separated, relative to the workspace ('' for the workspace itself). */
  relative: string;
  /** The absolute real path the command acts on: inside the workspace, no symbolic link on the way. */
  real: string;
  /** Whether `real` existed when resolved (always false for an 'entry' resolution, which does not look). */
  exists: boolean;
}

export type PathCheck =
  | { ok: true; segments: string[] }
  | { ok: false; reason: 'empty' | 'outside' };

/**
 * What can be decided from the text alone (no file system): empty paths, NUL bytes, absolute
 * paths, drive letters, UNC paths and `..` segments. Backslashes count as separators, so a
 * Windows-style path is read the same everywhere.
 */
export function checkPathText(given: string): PathCheck {
  if (given.trim() === '') return { ok: false, reason: 'empty' };
  if (given.includes('\0')) return { ok: false, reason: 'outside' };
  const slashed = given.replace(/\\/g, '/');
  if (slashed.startsWith('/') || /^[A-Za-z]:/.test(slashed)) return { ok: false, reason: 'outside' };
  const segments = slashed.split('/').filter((segment) => segment !== '' && segment !== '.');
  if (segments.includes('..')) return { ok: false, reason: 'outside' };
  return { ok: true, segments };
}

/** The protocol's rejection of a path outside the workspace. */
function rejected(given: string): Resolution {
  return { ok: false, code: 'outside-workspace', summary: `REJECTED: Path '${given}' is outside workspace` };
}

export type Resolution =
  | { ok: true; path: ResolvedPath }
  | { ok: false; code: Extract<FailureCode, 'outside-workspace' | 'empty-path' | 'workspace-folder' | 'through-file' | 'unresolvable' | 'changed'>; summary: string };

export interface ResolveOptions {
  /**
   * 'follow' (the default): the file a read or write reaches, following a symbolic link at the end.
   * 'entry': the directory entry itself (what deleting removes); only the folders above it are followed.
   */
  final?: 'follow' | 'entry';
  /**
   * Real paths of folders already resolved, shared by the resolutions of one run of commands, so
   * a file in a known folder costs one lstat. Valid only while no folder can change: the caller
   * clears it whenever something else may have run (a shell command, a delete).
   */
  folders?: FolderCache;
}

/** Absolute folder path -> its real path. */
export type FolderCache = Map<string, string>;

/** Resolves a path an LLM wrote against the workspace, or says why it may not be used. */
export async function resolveInWorkspace(workspace: Workspace, given: string, options: ResolveOptions = {}): Promise<Resolution> {
  const check = checkPathText(given);
  if (!check.ok) {
    return check.reason === 'empty' ? { ok: false, code: 'empty-path', summary: 'Path is empty' } : rejected(given);
  }
  const relative = check.segments.join('/');
  const joined = path.join(workspace.realRoot, ...check.segments);
  if (options.final === 'entry' && check.segments.length === 0) return { ok: false, code: 'workspace-folder', summary: `'${given}' is the workspace folder itself` };
  let real = '';
  let exists = false;
  // Without a shared cache, one for this resolution only: the workspace is known, and each folder
  // found on the way (by lstat, not a link) is its parent's real path plus its name, so no
  // realpath is needed. Nothing of it outlives this call.
  const folders = options.folders ?? new Map([[workspace.realRoot, workspace.realRoot]]);
  // A link that is gone (or no longer a link) between its lstat and its readlink, a folder gone
  // before its realpath: another process is changing the path; it is resolved again, a few times.
  for (let attempt = 0; ; attempt++) {
    try {
      if (options.final === 'entry') real = path.join(realTarget(path.dirname(joined), folders).real, path.basename(joined));
      else ({ real, exists } = realTarget(joined, folders));
      break;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOTDIR') return { ok: false, code: 'through-file', summary: `Path '${given}' goes through a file as if it were a folder` };
      if (code === 'ELOOP') return rejected(given);
      if (code !== 'ENOENT' && code !== 'EINVAL') return { ok: false, code: 'unresolvable', summary: `Could not resolve '${given}': ${errorText(error)}` };
      folders.clear();
      folders.set(workspace.realRoot, workspace.realRoot);
      if (attempt === 2) {
        return { ok: false, code: 'changed', summary: `Path '${given}' kept changing while Belay resolved it (another process is changing the workspace); nothing was done` };
      }
    }
  }
  if (!isInside(workspace.realRoot, real)) return rejected(given);
  return { ok: true, path: { given, relative, real, exists } };
}

function isInside(realRoot: string, candidate: string): boolean {
  if (candidate === realRoot) return true;
  const prefix = realRoot.endsWith(path.sep) ? realRoot : realRoot + path.sep;
  return candidate.startsWith(prefix);
}

const MAX_LINKS = 40;

/**
 * The real path that `absolute` designates, even when it does not exist yet: the nearest existing
 * ancestor's real path plus the missing rest. A dangling symbolic link is followed to where it
 * points. The caller then acts on the returned path itself, so no link is followed unchecked.
 * Synchronous: each step is an lstat (or readlink) of microseconds that opens nothing (a FIFO
 * cannot make it wait), where a round trip through the thread pool per step cost more than the
 * step (an answer names thousands of paths); what writes checks again on its own (confined.ts).
 */
function realTarget(absolute: string, folders: FolderCache | undefined, links = 0): { real: string; exists: boolean } {
  const known = folders?.get(absolute);
  if (known !== undefined) return { real: known, exists: true };
  let stats: Stats | undefined;
  try {
    stats = lstatSync(absolute);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const parent = path.dirname(absolute);
  if (stats === undefined) {
    if (parent === absolute) return { real: absolute, exists: false };
    const above = realTarget(parent, folders, links);
    // Its child was missing, not ENOTDIR: an existing parent is a folder.
    if (above.exists) folders?.set(parent, above.real);
    return { real: path.join(above.real, path.basename(absolute)), exists: false };
  }
  if (stats.isSymbolicLink()) {
    if (links >= MAX_LINKS) throw Object.assign(new Error(`too many symbolic links at '${absolute}'`), { code: 'ELOOP' });
    const target = readlinkSync(absolute);
    const base = realTarget(parent, folders, links + 1);
    return realTarget(path.resolve(base.real, target), folders, links + 1);
  }
  const knownParent = folders?.get(parent);
  const real = knownParent !== undefined ? path.join(knownParent, path.basename(absolute)) : realpathSync.native(absolute);
  if (stats.isDirectory()) folders?.set(absolute, real);
  return { real, exists: true };
}

/** An error as a summary shows it: its system code first when it has one (`ENOENT: …`). */
export function errorText(error: unknown): string {
  const code = error instanceof Error ? (error as NodeJS.ErrnoException).code : undefined;
  return code ? `${code}: ${errorMessage(error).replace(/^[A-Z]+: /, '')}` : errorMessage(error);
}
