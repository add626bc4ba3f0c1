import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { MailboxError, toMailboxError } from './errors.ts';
import { loadSqlite, type Database } from './sqlite.ts';

const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/** Refuses a file that exists but is no SQLite database, before SQLite touches it. */
function checkHeader(dbPath: string): void {
  let size: number;
  try {
    size = statSync(dbPath).size;
  } catch {
    return; // missing: SQLite creates it
  }
  if (size === 0) return;
  const header = Buffer.alloc(16);
  const fd = openSync(dbPath, 'r');
  try {
    readSync(fd, header, 0, 16, 0);
  } finally {
    closeSync(fd);
  }
  if (size < 100 || !header.equals(SQLITE_HEADER)) {
    throw new MailboxError('corrupt', `${dbPath} is not an SQLite database (its first bytes are not the SQLite header); it was left untouched. Move it aside to start a new mailbox`);
  }
}

/** Opens one connection on the mailbox file with the bounded busy wait; used by the store and by watchers. */
export function openConnection(dbPath: string, busyTimeoutMs: number): Database {
  checkHeader(dbPath);
  const { DatabaseSync } = loadSqlite();
  try {
    // Foreign keys stay off as in every other tool: cue-console declares one the others do not honour.
    const db = new DatabaseSync(dbPath, { enableForeignKeyConstraints: false });
    db.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`);
    return db;
  } catch (error) {
    throw toMailboxError(error, dbPath);
  }
}
