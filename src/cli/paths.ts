// Paths given on a command line, checked before anything runs: a missing task folder, a file
// where a folder goes or a folder where a file goes is a usage mistake, reported in one line that
// names the option and the path (exit 2), never as the system's `ENOENT … scandir`.
import { lstatSync, statSync, type Stats } from 'node:fs';
import * as path from 'node:path';
import { UsageError } from '../shared/args.ts';
import { neutraliseControls } from '../shared/terminalText.ts';

/** A path as the message shows it: on one line, its control characters shown as text (they do nothing to the terminal). */
function shown(file: string): string {
  return neutraliseControls(file).replace(/\n/g, '\\n');
}

/** What the path is, following links as the command will: undefined when nothing is there. */
function kindOf(file: string, what: string, given: string): 'folder' | 'file' | 'other' | undefined {
  let stats: Stats;
  try {
    stats = statSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      // A link to nothing: neither there nor free to be made.
      if (lstatSync(file, { throwIfNoEntry: false })?.isSymbolicLink()) throw new UsageError(`${what} ${shown(given)}: a symbolic link to a path that does not exist`);
      return undefined;
    }
    // A file where a folder of the path should be: nothing can be there.
    if (code === 'ENOTDIR') throw new UsageError(`${what} ${shown(given)}: a part of the path is a file, not a folder`);
    if (code === 'ELOOP') throw new UsageError(`${what} ${shown(given)}: the path loops through symbolic links`);
    if (code === 'EACCES' || code === 'EPERM') throw new UsageError(`${what} ${shown(given)}: not allowed to look there (permission denied)`);
    if (code === 'ENAMETOOLONG') throw new UsageError(`${what} ${shown(given)}: the path is too long`);
    throw new UsageError(`${what} ${shown(given)}: cannot be read (${code ?? 'unknown error'})`);
  }
  return stats.isDirectory() ? 'folder' : stats.isFile() ? 'file' : 'other';
}

/** A folder that must exist (a task folder, --agent-dir, --workspace, --cwd); its absolute path. */
export function existingFolder(given: string, what: string, cwd: string): string {
  const full = path.resolve(cwd, given);
  const kind = kindOf(full, what, given);
  if (kind === undefined) throw new UsageError(`${what} ${shown(given)}: no such folder${full !== given ? ` (${shown(full)})` : ''}`);
  if (kind !== 'folder') throw new UsageError(`${what} ${shown(given)}: is a ${kind === 'file' ? 'file' : 'special file'}, not a folder`);
  return full;
}

/** A file that must exist and be a file (an answer to parse, --config, --media, --attach); its absolute path. */
export function existingFile(given: string, what: string, cwd: string): string {
  const full = path.resolve(cwd, given);
  const kind = kindOf(full, what, given);
  if (kind === undefined) throw new UsageError(`${what} ${shown(given)}: no such file${full !== given ? ` (${shown(full)})` : ''}`);
  if (kind === 'folder') throw new UsageError(`${what} ${shown(given)}: is a folder, not a file`);
  return full;
}

/**
 * A folder the command makes when missing (--out, --root of a new session, --cache): it must be a
 * folder when it exists, and the nearest part of the path that exists must be a folder too.
 */
export function folderToMake(given: string, what: string, cwd: string): string {
  const full = path.resolve(cwd, given);
  const kind = kindOf(full, what, given);
  if (kind === 'folder') return full;
  if (kind !== undefined) throw new UsageError(`${what} ${shown(given)}: is a ${kind === 'file' ? 'file' : 'special file'}, not a folder`);
  for (let parent = path.dirname(full); ; parent = path.dirname(parent)) {
    const above = kindOf(parent, what, given);
    if (above === 'folder') return full;
    if (above !== undefined) throw new UsageError(`${what} ${shown(given)}: ${shown(parent)} is a file, not a folder`);
    if (parent === path.dirname(parent)) return full;
  }
}
