import { watch as fsWatch, type FSWatcher } from 'node:fs';
import type { MailboxPaths } from './home.ts';
import type { Database } from './sqlite.ts';
import { openConnection } from './connection.ts';

export interface WatchOptions {
  onChange: () => void;
  /** Interval of the `PRAGMA data_version` backstop, for file systems whose events are lost (network mounts). */
  backstopMs?: number;
  /** Called when a check fails (e.g. the file went away); watching goes on. */
  onError?: (error: unknown) => void;
}

export const DEFAULT_BACKSTOP_MS = 1000;
/**
 * A commit's last file event can arrive a moment before its effect is visible to other
 * connections (the WAL index is updated after the frames are written), so each burst of events
 * is followed by one trailing check this much later.
 */
const TRAILING_CHECK_MS = 25;

/**
 * Watches the mailbox folder (cue.db, -wal, -journal, -shm) and reports committed changes.
 * A file event only schedules a check of `PRAGMA data_version` on a connection of its own, which
 * changes exactly when another connection has committed; a slow timer runs the same check as a
 * backstop. The tables are never polled.
 */
export function watchMailbox(paths: MailboxPaths, busyTimeoutMs: number, options: WatchOptions): () => void {
  let db: Database | undefined = openConnection(paths.dbPath, Math.min(busyTimeoutMs, 1000));
  let lastVersion = readVersion(db);
  let disposed = false;
  let immediate: NodeJS.Immediate | undefined;
  let trailing: NodeJS.Timeout | undefined;

  const check = () => {
    if (disposed || !db) return;
    let version: number;
    try {
      version = readVersion(db);
    } catch (error) {
      options.onError?.(error);
      schedule(); // busy for a moment: look again shortly
      return;
    }
    if (version !== lastVersion) {
      lastVersion = version;
      try {
        options.onChange();
      } catch (error) {
        options.onError?.(error);
      }
    }
  };
  const schedule = () => {
    if (disposed) return;
    immediate ??= setImmediate(() => {
      immediate = undefined;
      check();
    });
    if (trailing) clearTimeout(trailing);
    trailing = setTimeout(() => {
      trailing = undefined;
      check();
    }, TRAILING_CHECK_MS);
  };

  let watcher: FSWatcher | undefined;
  try {
    watcher = fsWatch(paths.home, { persistent: true }, (_event, filename) => {
      // No name: the platform did not say which file; check anyway.
      if (filename === null || String(filename).startsWith(paths.dbFileName)) schedule();
    });
    watcher.on('error', (error) => options.onError?.(error));
  } catch (error) {
    // Folder events unavailable here: the backstop alone still reports changes.
    options.onError?.(error);
  }
  const backstop = setInterval(check, options.backstopMs ?? DEFAULT_BACKSTOP_MS);

  return () => {
    if (disposed) return;
    disposed = true;
    watcher?.close();
    clearInterval(backstop);
    if (immediate) clearImmediate(immediate);
    if (trailing) clearTimeout(trailing);
    db?.close();
    db = undefined;
  };
}

function readVersion(db: Database): number {
  return Number((db.prepare('PRAGMA data_version').get() as { data_version: number }).data_version);
}

/**
 * Resolves when `ready()` returns a value, re-checking on every mailbox change; `undefined` when
 * `signal` aborts first. Checks once right after the watch starts, so a change that landed before
 * the watch is not missed.
 */
export function waitForChange<T>(
  subscribe: (onChange: () => void) => () => void,
  ready: () => T | undefined,
  signal?: AbortSignal,
): Promise<T | undefined> {
  return new Promise((resolve, reject) => {
    let done = false;
    let dispose: (() => void) | undefined;
    const finish = (value: T | undefined, error?: unknown) => {
      if (done) return;
      done = true;
      dispose?.();
      signal?.removeEventListener('abort', onAbort);
      if (error !== undefined) reject(error);
      else resolve(value);
    };
    const probe = () => {
      if (done) return;
      try {
        const value = ready();
        if (value !== undefined) finish(value);
      } catch (error) {
        finish(undefined, error);
      }
    };
    const onAbort = () => finish(undefined);
    if (signal?.aborted) return finish(undefined);
    signal?.addEventListener('abort', onAbort);
    try {
      dispose = subscribe(probe);
    } catch (error) {
      return finish(undefined, error);
    }
    if (done) dispose();
    else probe();
  });
}
