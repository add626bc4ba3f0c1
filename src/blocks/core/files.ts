// The files blocks act on, as plans and outboxes see them: only regular files are read (a FIFO,
// socket or device is named, never opened), through the confined walk (src/shared/confined.ts),
// so a folder swapped for a link meanwhile cannot make Belay read outside the workspace; a file
// too large to edit as text is refused by its size before a byte is read.
import { ConfinedError, ConfinedRoot, describeKind, entryKind, type EntryKind } from '../../shared/confined.ts';
import type { Workspace } from './sandbox.ts';

/**
 * The largest file EDIT_FILE edits (and whose text a plan holds, for diffs and undo): its text and
 * the edited text are both in memory, as strings and as lines. CREATE_FILE and DELETE_FILE work on
 * files of any size; they only leave out the text before.
 */
export const MAX_TEXT_BYTES = 64 * 1024 * 1024;

export type FileState =
  | { kind: 'missing' }
  | { kind: 'directory' }
  /** A FIFO, socket or device: never opened, never replaced, never deleted. */
  | { kind: 'special'; what: Exclude<EntryKind, 'file' | 'directory' | 'missing'> }
  /**
   * A regular file; `text` is undefined when it is not UTF-8 text, or when it is larger than the
   * limit (`tooLarge`, and nothing of it was read); `mode` is undefined for a file only planned.
   */
  | { kind: 'file'; text: string | undefined; mode: number | undefined; size: number; tooLarge: boolean };

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** "12.3 MB": sizes as the refusals print them. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value >= 100 ? Math.round(value) : value.toFixed(1).replace(/\.0$/, '')} ${units[unit]}`;
}

/** What a special file is, in a result: "'x' is a FIFO (named pipe), not a regular file". */
export function notRegularSummary(given: string, what: EntryKind): string {
  return `'${given}' is ${describeKind(what)}, not a regular file; Belay only reads, replaces and deletes regular files`;
}

/** The file at `real` (a real path inside the workspace), its text read when it is at most `limit` bytes. */
export async function readFileState(workspace: Workspace, real: string, limit = MAX_TEXT_BYTES): Promise<FileState> {
  return ConfinedRoot.with(workspace.realRoot, async (confined) => {
    try {
      const file = await confined.readRegular(real, { limit });
      const { data } = file;
      let text: string | undefined;
      if (!data.includes(0)) {
        try {
          text = utf8.decode(data);
        } catch {
          text = undefined;
        }
      }
      return { kind: 'file', text, mode: file.mode, size: file.size, tooLarge: false };
    } catch (error) {
      if (!(error instanceof ConfinedError)) throw error;
      switch (error.code) {
        case 'ENOENT':
          return { kind: 'missing' };
        case 'EISDIR':
          return { kind: 'directory' };
        case 'ENOTREG':
          return { kind: 'special', what: special(error.kind) };
        case 'EFBIG': {
          const stats = await confined.lstat(real);
          return { kind: 'file', text: undefined, mode: (stats?.mode ?? 0o644) & 0o7777, size: error.size ?? stats?.size ?? 0, tooLarge: true };
        }
        default:
          throw error;
      }
    }
  });
}

/** What the entry at `real` is, without opening it (a link is not followed). */
export async function entryAt(workspace: Workspace, real: string): Promise<EntryKind> {
  return ConfinedRoot.with(workspace.realRoot, async (confined) => entryKind(await confined.lstat(real)));
}

export type FileHead = { ok: true; data: Buffer; size: number } | { ok: false; note: string };

/** The first `maxBytes` bytes of a regular file (for an outbox), or why there are none. */
export async function readFileHead(workspace: Workspace, real: string, maxBytes: number): Promise<FileHead> {
  try {
    const file = await ConfinedRoot.with(workspace.realRoot, (confined) => confined.readRegular(real, { maxBytes }));
    return { ok: true, data: file.data, size: file.size };
  } catch (error) {
    if (!(error instanceof ConfinedError)) {
      const code = (error as NodeJS.ErrnoException).code;
      return { ok: false, note: `could not read: ${code ?? String(error)}` };
    }
    switch (error.code) {
      case 'ENOENT':
        return { ok: false, note: 'file not found' };
      case 'EISDIR':
        return { ok: false, note: 'a folder, not a file' };
      case 'ENOTREG':
        return { ok: false, note: `${describeKind(error.kind ?? 'device')}, not a regular file; not read` };
      default:
        return { ok: false, note: `not read: ${error.message}` };
    }
  }
}

/** Why reading a file for a plan failed: 'changed' when another process changed its path meanwhile. */
export function readFailureCode(error: unknown): 'changed' | 'unreadable' {
  return error instanceof ConfinedError && error.code === 'ECHANGED' ? 'changed' : 'unreadable';
}

function special(kind: EntryKind | undefined): Exclude<EntryKind, 'file' | 'directory' | 'missing'> {
  return kind === 'fifo' || kind === 'socket' || kind === 'symlink' ? kind : 'device';
}
