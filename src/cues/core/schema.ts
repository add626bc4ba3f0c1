import { MailboxError } from './errors.ts';
import type { Database } from './sqlite.ts';

/** The mailbox schema version the public tools (cueme 0.1.x, cue-console 0.1.x, cuemcp) speak. */
export const SCHEMA_VERSION = '3';

/**
 * The tables as the public cueme creates them on a new file. Every statement is IF NOT EXISTS,
 * because any of the tools may have created the file first with slightly different column types.
 */
const CREATE_STATEMENTS = [
  `CREATE TABLE IF NOT EXISTS schema_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS cue_requests (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  request_id TEXT UNIQUE,
  agent_id TEXT DEFAULT '',
  prompt TEXT NOT NULL,
  payload TEXT,
  status TEXT DEFAULT 'PENDING',
  created_at TEXT,
  updated_at TEXT
)`,
  `CREATE INDEX IF NOT EXISTS ix_cue_requests_request_id ON cue_requests(request_id)`,
  `CREATE INDEX IF NOT EXISTS ix_cue_requests_agent_id ON cue_requests(agent_id)`,
  `CREATE TABLE IF NOT EXISTS cue_responses (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  request_id TEXT UNIQUE,
  response_json TEXT NOT NULL,
  cancelled INTEGER DEFAULT 0,
  created_at TEXT
)`,
  `CREATE INDEX IF NOT EXISTS ix_cue_responses_request_id ON cue_responses(request_id)`,
  `CREATE TABLE IF NOT EXISTS cue_files (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  sha256 TEXT UNIQUE NOT NULL,
  file TEXT NOT NULL,
  mime_type TEXT NOT NULL,
  size_bytes INTEGER NOT NULL,
  created_at TEXT
)`,
  `CREATE INDEX IF NOT EXISTS ix_cue_files_sha256 ON cue_files(sha256)`,
  `CREATE TABLE IF NOT EXISTS cue_response_files (
  response_id INTEGER NOT NULL,
  file_id INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  PRIMARY KEY (response_id, idx)
)`,
  `CREATE INDEX IF NOT EXISTS ix_cue_response_files_response_id ON cue_response_files(response_id)`,
  `CREATE INDEX IF NOT EXISTS ix_cue_response_files_file_id ON cue_response_files(file_id)`,
  `CREATE TABLE IF NOT EXISTS agent_envs (
  agent_id TEXT PRIMARY KEY,
  agent_runtime TEXT,
  project_dir TEXT,
  agent_terminal TEXT,
  updated_at TEXT
)`,
];

const MAILBOX_TABLES = ['cue_requests', 'cue_responses', 'cue_files', 'cue_response_files', 'agent_envs', 'schema_meta'];

/** The columns each mailbox table has in this file: writers only name columns that exist. */
export type ColumnMap = ReadonlyMap<string, ReadonlySet<string>>;

function tableNames(db: Database): Set<string> {
  const rows = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).all() as Array<{ name: unknown }>;
  return new Set(rows.map((r) => String(r.name)));
}

export function readColumns(db: Database): ColumnMap {
  const map = new Map<string, Set<string>>();
  for (const table of MAILBOX_TABLES) {
    const rows = db.prepare(`SELECT name FROM pragma_table_info(?)`).all(table) as Array<{ name: unknown }>;
    map.set(table, new Set(rows.map((r) => String(r.name))));
  }
  return map;
}

function count(db: Database, table: string): number {
  const row = db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number } | undefined;
  return Number(row?.n ?? 0);
}

/** True when every table is there at the right version: the usual case, checked without a write lock. */
function isComplete(db: Database): boolean {
  const tables = tableNames(db);
  if (!MAILBOX_TABLES.every((t) => tables.has(t))) return false;
  const row = db.prepare(`SELECT value FROM schema_meta WHERE key = 'schema_version'`).get() as { value: unknown } | undefined;
  return row !== undefined && String(row.value) === SCHEMA_VERSION;
}

/**
 * Decides whether the open file is a mailbox Belay may use, and creates what is missing.
 * Runs inside one write transaction, so of several processes creating a new mailbox at once
 * exactly one creates it. A foreign database or another schema version is refused before
 * anything is written.
 */
export function ensureSchema(db: Database, dbPath: string): void {
  if (isComplete(db)) return;
  db.exec('BEGIN IMMEDIATE');
  try {
    const tables = tableNames(db);
    const userTables = [...tables].filter((t) => !t.startsWith('sqlite_'));
    const hasMailboxTable = tables.has('cue_requests') || tables.has('cue_responses') || tables.has('schema_meta');
    if (userTables.length > 0 && !hasMailboxTable) {
      throw new MailboxError(
        'foreign',
        `${dbPath} is an SQLite database but not a cue mailbox (it has tables ${userTables.slice(0, 5).join(', ')}${userTables.length > 5 ? ', …' : ''}); it was left untouched. Point CUE_HOME at another folder or move the file aside`,
      );
    }
    let version: string | undefined;
    if (tables.has('schema_meta')) {
      const row = db.prepare(`SELECT value FROM schema_meta WHERE key = 'schema_version'`).get() as { value: unknown } | undefined;
      version = row?.value === undefined || row.value === null ? undefined : String(row.value);
    }
    if (version !== undefined && version !== SCHEMA_VERSION) {
      throw new MailboxError(
        'foreign',
        `${dbPath} is a cue mailbox of schema version ${version}; Belay speaks version ${SCHEMA_VERSION}. It was left untouched: migrate it with the tool that wrote it, or point CUE_HOME at another folder`,
      );
    }
    if (version === undefined && tables.has('cue_requests') && tables.has('cue_responses')) {
      // The public tools treat a versionless mailbox holding data as pre-file-storage (schema 1/2).
      if (count(db, 'cue_requests') > 0 || count(db, 'cue_responses') > 0) {
        throw new MailboxError(
          'foreign',
          `${dbPath} is a cue mailbox without a schema version (older than version ${SCHEMA_VERSION}); it was left untouched. Migrate it first with the public tool ("cueme migrate"), or point CUE_HOME at another folder`,
        );
      }
    }
    for (const statement of CREATE_STATEMENTS) db.exec(statement);
    db.prepare(`INSERT OR IGNORE INTO schema_meta (key, value) VALUES ('schema_version', ?)`).run(SCHEMA_VERSION);
    db.exec('COMMIT');
  } catch (error) {
    if (db.isTransaction) db.exec('ROLLBACK');
    throw error;
  }
}
