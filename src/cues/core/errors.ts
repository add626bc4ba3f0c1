/** Why the mailbox could not do what was asked; each kind maps to one clear message for the user. */
export type MailboxErrorKind =
  | 'no-sqlite' // the runtime has no node:sqlite
  | 'no-home' // neither CUE_HOME nor HOME/USERPROFILE says where the mailbox is
  | 'not-writable' // the folder or the file cannot be written
  | 'wrong-kind' // cue.db is a folder (or another kind of file), or the mailbox folder is a file
  | 'corrupt' // the file is not an SQLite database, or SQLite reports it damaged
  | 'foreign' // an SQLite database that is not a cue mailbox, or of another schema version
  | 'busy' // another program held the lock past the bounded wait
  | 'unknown-request'
  | 'already-answered'
  | 'abandoned' // its recorded waiter is gone: an answer would reach nobody
  | 'io'; // anything else SQLite or the file system reported

export class MailboxError extends Error {
  override name = 'MailboxError';
  readonly kind: MailboxErrorKind;
  constructor(kind: MailboxErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.kind = kind;
  }
}

/** SQLite's primary result codes that need their own message (extended codes are masked to these). */
const SQLITE_BUSY = 5;
const SQLITE_LOCKED = 6;
const SQLITE_READONLY = 8;
const SQLITE_CORRUPT = 11;
const SQLITE_CANTOPEN = 14;
const SQLITE_NOTADB = 26;

interface SqliteErrorShape {
  code?: unknown;
  errcode?: unknown;
  errstr?: unknown;
  message?: unknown;
}

/** Turns an error thrown by node:sqlite (or the file system) into a MailboxError that says what to do. */
export function toMailboxError(error: unknown, dbPath: string): MailboxError {
  if (error instanceof MailboxError) return error;
  const e = (typeof error === 'object' && error !== null ? error : {}) as SqliteErrorShape;
  const detail = typeof e.message === 'string' ? e.message : String(error);
  const primary = typeof e.errcode === 'number' ? e.errcode & 0xff : undefined;
  switch (primary) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return new MailboxError('busy', `the mailbox ${dbPath} is busy: another program held its lock past the wait limit (${detail}); try again`, { cause: error });
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
      return new MailboxError('not-writable', `cannot write the mailbox ${dbPath}: ${detail}. Check that the file and its folder are writable by this user (or point CUE_HOME at a writable folder)`, { cause: error });
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return new MailboxError('corrupt', `the mailbox ${dbPath} is not a usable SQLite database (${detail}); it was left untouched. Move it aside to start a new mailbox`, { cause: error });
  }
  const code = typeof e.code === 'string' ? e.code : '';
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
    return new MailboxError('not-writable', `cannot write the mailbox folder for ${dbPath}: ${detail}`, { cause: error });
  }
  return new MailboxError('io', `mailbox ${dbPath}: ${detail}`, { cause: error });
}
