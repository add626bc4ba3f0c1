import type * as Sqlite from 'node:sqlite';
import { MailboxError } from './errors.ts';

export type SqliteModule = typeof Sqlite;
export type Database = Sqlite.DatabaseSync;

/**
 * Loads node:sqlite on first use. It is a built-in of Node 22.13+ (22.5+ behind a flag); VS Code runs
 * its extension host on Node 22 (Belay requires 1.103+). Loading lazily lets entry points silence its
 * experimental warning first and gives older runtimes a message instead of a crash at import.
 */
export function loadSqlite(): SqliteModule {
  let mod: SqliteModule | undefined;
  try {
    mod = process.getBuiltinModule?.('node:sqlite') as SqliteModule | undefined;
  } catch {
    mod = undefined;
  }
  if (!mod?.DatabaseSync) {
    throw new MailboxError(
      'no-sqlite',
      `the cue mailbox needs the built-in SQLite of Node 22.13 or later (node:sqlite); this is Node ${process.versions.node}. ` +
        'In VS Code use version 1.103 or later (Belay\'s minimum; its extension host runs Node 22); on the command line run with Node 22.13+.',
    );
  }
  return mod;
}

/**
 * Keeps node:sqlite's one ExperimentalWarning off stderr: agents read cueme's output, and the warning
 * would look like an error to them. Every other warning still goes through. Call it in entry points
 * before the mailbox is first opened.
 */
export function silenceSqliteExperimentalWarning(): void {
  const original = process.emitWarning;
  const filtered = function (this: unknown, warning: string | Error, ...rest: unknown[]): void {
    const message = typeof warning === 'string' ? warning : warning.message;
    const type = typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: string } | undefined)?.type;
    const warningType = typeof warning === 'string' ? type : warning.name;
    if (warningType === 'ExperimentalWarning' && /SQLite/i.test(message)) return;
    (original as (...args: unknown[]) => void).call(process, warning, ...rest);
  };
  process.emitWarning = filtered as typeof process.emitWarning;
}
