import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import * as z from 'zod';
import { writeFileAtomic } from '../../shared/atomic.ts';
import { errorMessage } from '../../shared/errors.ts';
import { beat, ensureBookkeeping, pruneWaiters, readArchived, readQueue, readWaiters, recordWaiter, removeArchived, removeQueued, writeArchived, writeQueued, type QueueRow } from './bookkeeping.ts';
import { MailboxError, toMailboxError } from './errors.ts';
import { mailboxPaths, type MailboxPaths } from './home.ts';
import { parsePayload, type PayloadView } from './payload.ts';
import { ensureSchema, readColumns, type ColumnMap } from './schema.ts';
import { loadSqlite, type Database } from './sqlite.ts';
import { openConnection } from './connection.ts';
import { localIsoWithOffset, parseMailboxTime } from './time.ts';
import { currentProcess, goneWaiterText, HEARTBEAT_MS, systemProbe, waiterLiveness, type Liveness, type ProcessIdentity, type ProcessProbe, type WaiterRecord } from './waiters.ts';
import { watchMailbox, type WatchOptions } from './watch.ts';

/** How long a write waits for another program's lock before it fails with a clear "busy" error. */
export const DEFAULT_BUSY_TIMEOUT_MS = 5000;
/** Largest attachment accepted: files are read whole into memory to hash them. */
export const MAX_ATTACHMENT_BYTES = 64 * 1024 * 1024;

export interface MailboxOptions {
  /** The mailbox folder; by default CUE_HOME, else ~/.cue (see home.ts). */
  home?: string;
  env?: NodeJS.ProcessEnv;
  busyTimeoutMs?: number;
  /** How this process judges whether another one still runs (tests pass their own). */
  probe?: ProcessProbe;
  /** Who this process is, as the waiter records of its requests say (tests pass another one). */
  identity?: ProcessIdentity;
}

// Rows as they come out of files written by any of the tools: loose, every column but the keys optional.
const text = z.string().nullish();
const time = z.union([z.string(), z.number()]).nullish();
const RequestRow = z.looseObject({
  id: z.number(),
  request_id: z.string(),
  agent_id: text,
  prompt: text,
  payload: text,
  status: text,
  created_at: time,
  updated_at: time,
});
type RequestRow = z.infer<typeof RequestRow>;
const ResponseRow = z.looseObject({
  id: z.number(),
  request_id: z.string(),
  response_json: text,
  cancelled: z.union([z.number(), z.string(), z.boolean()]).nullish(),
  created_at: time,
});
type ResponseRow = z.infer<typeof ResponseRow>;
const FileRow = z.looseObject({
  response_id: z.number(),
  idx: z.number(),
  file: z.string(),
  mime_type: text,
  size_bytes: z.number().nullish(),
});
const AgentEnvRow = z.looseObject({
  agent_id: z.string(),
  agent_runtime: text,
  project_dir: text,
  agent_terminal: text,
  updated_at: time,
});
/** The stored answer: `text` is all an agent sees; cue-console adds `mentions`. */
const ResponseJson = z.looseObject({ text: z.string().optional(), mentions: z.array(z.unknown()).optional() });

export interface AttachedFile {
  /** As stored: a path relative to the mailbox folder (`files/<sha256>.<ext>`), or absolute. */
  file: string;
  /** Where the file is on this machine. */
  absolutePath: string;
  mimeType: string;
  sizeBytes?: number;
}

export interface CueResponse {
  id: number;
  text: string;
  cancelled: boolean;
  createdAt?: string;
  createdAtMs?: number;
  files: AttachedFile[];
  mentions?: unknown[];
  /** Set when response_json could not be read; the text is then empty. */
  warning?: string;
}

export type CueState = 'pending' | 'answered' | 'cancelled' | 'closed';

export interface CueEntry {
  id: number;
  requestId: string;
  agentId: string;
  prompt: string;
  /** The payload column as stored (JSON text), or null. */
  payloadJson: string | null;
  payload: PayloadView;
  status: string;
  createdAt?: string;
  createdAtMs?: number;
  /** pending: waiting for the human; answered/cancelled: has a response; closed: no response but not PENDING (e.g. auto-cancelled elsewhere). */
  state: CueState;
  response?: CueResponse;
  /** Who waits for the answer, when a Belay writer recorded it (waiters.ts); never for the public tools' requests. */
  waiter?: WaiterRecord;
}

export interface AgentSummary {
  agentId: string;
  runtime?: string;
  projectDir?: string;
  terminal?: string;
  requestCount: number;
  pendingCount: number;
  lastActivityMs?: number;
  lastPrompt?: string;
  /** Archived by the human and not heard from since. */
  archived?: boolean;
}

export interface AgentEnv {
  agentId: string;
  runtime: string;
  projectDir: string;
  terminal: string;
}

export interface Answer {
  text: string;
  /** Paths of files to attach; copied into the mailbox's files folder. */
  attachments?: readonly string[];
  mentions?: readonly unknown[];
}

/** A queued reply and the request it answers. */
export interface Delivery {
  requestId: string;
  agentId: string;
  text: string;
}

export interface ListFilter {
  pendingOnly?: boolean;
  agentId?: string;
  /** Only the newest N requests (still returned oldest first). */
  limit?: number;
}

function isPendingStatus(status: string | null | undefined): boolean {
  return status === null || status === undefined || status === '' || status.toUpperCase() === 'PENDING';
}

function newRequestId(): string {
  return `req_${randomBytes(6).toString('hex')}`;
}

const MIME_BY_EXT: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  svg: 'image/svg+xml',
  pdf: 'application/pdf',
  txt: 'text/plain',
  md: 'text/markdown',
  json: 'application/json',
  csv: 'text/csv',
  log: 'text/plain',
  html: 'text/html',
  zip: 'application/zip',
};

export function mimeForFile(fileName: string): string {
  const ext = path.extname(fileName).slice(1).toLowerCase();
  return MIME_BY_EXT[ext] ?? 'application/octet-stream';
}

interface PreparedFile {
  sha256: string;
  rel: string;
  mimeType: string;
  size: number;
}

/** What a path is, following links as SQLite does; undefined when nothing is there (or it cannot be looked at: opening says why). */
function kindAt(file: string): 'folder' | 'file' | 'other' | undefined {
  try {
    const stats = statSync(file);
    return stats.isDirectory() ? 'folder' : stats.isFile() ? 'file' : 'other';
  } catch {
    return undefined;
  }
}

/** A folder named cue.db, or a file where the mailbox folder goes, said in one line with what to do (SQLite would say EISDIR or "unable to open"). */
function checkKinds(paths: MailboxPaths): void {
  const home = kindAt(paths.home);
  if (home !== undefined && home !== 'folder') {
    throw new MailboxError('wrong-kind', `the mailbox folder ${paths.home} is a file, not a folder: move it aside, or point CUE_HOME at the folder that holds cue.db`);
  }
  const db = kindAt(paths.dbPath);
  if (db === 'folder') {
    throw new MailboxError('wrong-kind', `the mailbox ${paths.dbPath} is a folder, not a mailbox file: move the folder aside (a new mailbox is then made there), or point CUE_HOME at another folder`);
  }
  if (db === 'other') throw new MailboxError('wrong-kind', `the mailbox ${paths.dbPath} is not a regular file: move it aside, or point CUE_HOME at another folder`);
}

/**
 * The cue mailbox (`~/.cue/cue.db`), shared with the public cueme, cue-console and cuemcp.
 * Synchronous SQLite through node:sqlite with real file locking; every write is one
 * BEGIN IMMEDIATE transaction, so a busy file waits (bounded) up front instead of failing midway.
 */
export class Mailbox {
  readonly paths: MailboxPaths;
  readonly busyTimeoutMs: number;
  readonly #db: Database;
  readonly #columns: ColumnMap;
  readonly #probe: ProcessProbe;
  readonly #identity: ProcessIdentity | undefined;
  /** Requests this process wrote and waits for: their heartbeat goes on until each has a response. */
  readonly #waiting = new Set<string>();
  #heartbeat: NodeJS.Timeout | undefined;

  private constructor(paths: MailboxPaths, db: Database, busyTimeoutMs: number, options: MailboxOptions) {
    this.paths = paths;
    this.#db = db;
    this.busyTimeoutMs = busyTimeoutMs;
    this.#columns = readColumns(db);
    this.#probe = options.probe ?? systemProbe();
    this.#identity = options.identity;
  }

  /** Opens (creating when new) the mailbox; throws MailboxError with a message fit for the user. */
  static open(options: MailboxOptions = {}): Mailbox {
    const paths = mailboxPaths(options);
    const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
    // A runtime without node:sqlite, or a mailbox path of the wrong kind, is refused before anything is created.
    loadSqlite();
    checkKinds(paths);
    if (!existsSync(paths.home)) {
      try {
        mkdirSync(paths.home, { recursive: true, mode: 0o700 });
      } catch (error) {
        throw toMailboxError(error, paths.dbPath);
      }
    }
    const db = openConnection(paths.dbPath, busyTimeoutMs);
    try {
      ensureSchema(db, paths.dbPath);
      return new Mailbox(paths, db, busyTimeoutMs, options);
    } catch (error) {
      db.close();
      throw toMailboxError(error, paths.dbPath);
    }
  }

  close(): void {
    this.#stopHeartbeat();
    if (this.#db.isOpen) this.#db.close();
  }

  /**
   * Calls `onChange` soon (well under 100 ms) after any program commits a change to the mailbox.
   * Returns the disposer. See watch.ts for how.
   */
  watch(onChange: () => void, options: Omit<WatchOptions, 'onChange'> = {}): () => void {
    return watchMailbox(this.paths, this.busyTimeoutMs, { ...options, onChange });
  }

  #has(table: string, column: string): boolean {
    return this.#columns.get(table)?.has(column) ?? false;
  }

  #run<T>(fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      throw toMailboxError(error, this.paths.dbPath);
    }
  }

  /** Runs `fn` in one write transaction: all of it is committed, or none. */
  #transaction<T>(fn: () => T): T {
    return this.#run(() => {
      this.#db.exec('BEGIN IMMEDIATE');
      try {
        const result = fn();
        this.#db.exec('COMMIT');
        return result;
      } catch (error) {
        if (this.#db.isTransaction) this.#db.exec('ROLLBACK');
        throw error;
      }
    });
  }

  /** Inserts the named values, leaving out columns this file's table does not have. */
  #insert(table: string, values: Record<string, unknown>, verb = 'INSERT'): number {
    const names = Object.keys(values).filter((name) => this.#has(table, name));
    const sql = `${verb} INTO ${table} (${names.join(', ')}) VALUES (${names.map(() => '?').join(', ')})`;
    const result = this.#db.prepare(sql).run(...names.map((n) => values[n] as string | number | null));
    return Number(result.lastInsertRowid);
  }

  /**
   * Writes a new PENDING request, as `cueme cue` does, and beside it (Belay's own table) that this
   * process waits for its answer, until when (`timeoutMs`; none for a pause), so a reader can tell
   * a request nobody waits for any more (waiters.ts). The waiter beats every HEARTBEAT_MS while
   * the request has no response, for readers on other machines.
   */
  createRequest(input: { agentId: string; prompt: string; payloadJson: string | null; timeoutMs?: number | undefined }): { requestId: string; createdAt: string } {
    const requestId = newRequestId();
    const now = new Date();
    const createdAt = localIsoWithOffset(now);
    const identity = this.#identity ?? currentProcess();
    const waiter: WaiterRecord = { requestId, ...identity, heartbeatMs: now.getTime() };
    if (input.timeoutMs !== undefined) waiter.deadlineMs = now.getTime() + input.timeoutMs;
    this.#transaction(() => {
      this.#insert('cue_requests', {
        request_id: requestId,
        agent_id: input.agentId,
        prompt: input.prompt,
        payload: input.payloadJson,
        status: 'PENDING',
        created_at: createdAt,
        updated_at: createdAt,
      });
      ensureBookkeeping(this.#db);
      recordWaiter(this.#db, waiter);
      pruneWaiters(this.#db, now.getTime());
    });
    this.#waiting.add(requestId);
    this.#heartbeat ??= setInterval(() => this.#beat(), HEARTBEAT_MS).unref();
    return { requestId, createdAt };
  }

  #beat(): void {
    try {
      const open = this.#transaction(() => beat(this.#db, [...this.#waiting], Date.now()));
      for (const id of [...this.#waiting]) if (!open.includes(id)) this.#waiting.delete(id);
    } catch {
      // Busy or gone for a moment: the next beat comes well before a reader gives up on this one.
    }
    if (this.#waiting.size === 0) this.#stopHeartbeat();
  }

  #stopHeartbeat(): void {
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
  }

  /** Whether the process that waits for `entry` is still there, as seen from this process (waiters.ts). */
  liveness(entry: Pick<CueEntry, 'waiter'>, nowMs = Date.now()): Liveness {
    return waiterLiveness(entry.waiter, this.#probe, nowMs);
  }

  upsertAgent(env: AgentEnv): void {
    this.#transaction(() =>
      this.#insert(
        'agent_envs',
        { agent_id: env.agentId, agent_runtime: env.runtime, project_dir: env.projectDir, agent_terminal: env.terminal, updated_at: localIsoWithOffset() },
        'INSERT OR REPLACE',
      ),
    );
  }

  /** The agent of the newest request whose prompt contains `hints` (case-insensitive for ASCII). */
  findAgentByHints(hints: string): string | undefined {
    const pattern = `%${hints.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    const row = this.#run(() =>
      this.#db.prepare(`SELECT agent_id FROM cue_requests WHERE agent_id IS NOT NULL AND agent_id != '' AND prompt LIKE ? ESCAPE '\\' ORDER BY id DESC LIMIT 1`).get(pattern),
    ) as { agent_id?: unknown } | undefined;
    return typeof row?.agent_id === 'string' ? row.agent_id : undefined;
  }

  #filesFor(responseIds: readonly number[]): Map<number, AttachedFile[]> {
    const map = new Map<number, AttachedFile[]>();
    for (let i = 0; i < responseIds.length; i += 500) {
      const chunk = responseIds.slice(i, i + 500);
      const rows = this.#db
        .prepare(
          `SELECT rf.response_id AS response_id, rf.idx AS idx, f.file AS file, f.mime_type AS mime_type, f.size_bytes AS size_bytes
           FROM cue_response_files rf JOIN cue_files f ON f.id = rf.file_id
           WHERE rf.response_id IN (${chunk.map(() => '?').join(',')}) ORDER BY rf.response_id, rf.idx`,
        )
        .all(...chunk);
      for (const raw of rows) {
        const parsed = FileRow.safeParse(raw);
        if (!parsed.success) continue;
        const row = parsed.data;
        const list = map.get(row.response_id) ?? [];
        const file: AttachedFile = {
          file: row.file,
          absolutePath: path.isAbsolute(row.file) ? row.file : path.join(this.paths.home, row.file.replace(/^[/\\]+/, '')),
          mimeType: row.mime_type || mimeForFile(row.file),
        };
        if (typeof row.size_bytes === 'number') file.sizeBytes = row.size_bytes;
        list.push(file);
        map.set(row.response_id, list);
      }
    }
    return map;
  }

  #toResponse(row: ResponseRow, files: AttachedFile[]): CueResponse {
    const response: CueResponse = {
      id: row.id,
      text: '',
      cancelled: row.cancelled === 1 || row.cancelled === true || row.cancelled === '1',
      files,
    };
    if (typeof row.created_at === 'string') response.createdAt = row.created_at;
    const ms = parseMailboxTime(row.created_at);
    if (ms !== undefined) response.createdAtMs = ms;
    try {
      const json = ResponseJson.safeParse(JSON.parse(row.response_json ?? ''));
      if (json.success) {
        response.text = json.data.text ?? '';
        if (json.data.mentions) response.mentions = json.data.mentions;
      } else {
        response.warning = 'response_json is not an object with a text';
      }
    } catch {
      response.warning = 'response_json is not valid JSON';
    }
    return response;
  }

  /** The response to a request, if there is one (what `cueme cue` waits for). */
  getResponse(requestId: string): CueResponse | undefined {
    return this.#run(() => {
      const raw = this.#db.prepare(`SELECT * FROM cue_responses WHERE request_id = ?`).get(requestId);
      const parsed = ResponseRow.safeParse(raw);
      if (!parsed.success) return undefined;
      return this.#toResponse(parsed.data, this.#filesFor([parsed.data.id]).get(parsed.data.id) ?? []);
    });
  }

  #toEntry(row: RequestRow, response: CueResponse | undefined, waiter: WaiterRecord | undefined): CueEntry {
    const status = row.status ?? '';
    const entry: CueEntry = {
      id: row.id,
      requestId: row.request_id,
      agentId: row.agent_id ?? '',
      prompt: row.prompt ?? '',
      payloadJson: row.payload ?? null,
      payload: parsePayload(row.payload ?? null),
      status,
      state: response ? (response.cancelled ? 'cancelled' : 'answered') : isPendingStatus(status) ? 'pending' : 'closed',
    };
    if (typeof row.created_at === 'string') entry.createdAt = row.created_at;
    const ms = parseMailboxTime(row.created_at);
    if (ms !== undefined) entry.createdAtMs = ms;
    if (response) entry.response = response;
    if (waiter) entry.waiter = waiter;
    return entry;
  }

  getRequest(requestId: string): CueEntry | undefined {
    return this.#run(() => {
      const parsed = RequestRow.safeParse(this.#db.prepare(`SELECT * FROM cue_requests WHERE request_id = ?`).get(requestId));
      if (!parsed.success) return undefined;
      return this.#toEntry(parsed.data, this.getResponse(requestId), readWaiters(this.#db, [requestId]).get(requestId));
    });
  }

  /**
   * Requests with their responses, oldest first (timestamps of every writer's format parsed;
   * insertion order breaks ties). With `pendingOnly`, only those still waiting for the human.
   */
  listRequests(filter: ListFilter = {}): CueEntry[] {
    return this.#run(() => {
      const where: string[] = [];
      const params: Array<string | number> = [];
      if (filter.agentId !== undefined) {
        where.push('r.agent_id = ?');
        params.push(filter.agentId);
      }
      if (filter.pendingOnly) where.push('NOT EXISTS (SELECT 1 FROM cue_responses s WHERE s.request_id = r.request_id)');
      const whereSql = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
      const limitSql = filter.limit !== undefined ? `ORDER BY r.id DESC LIMIT ${Math.max(0, Math.floor(filter.limit))}` : '';
      const requestRows = this.#db.prepare(`SELECT r.* FROM cue_requests r ${whereSql} ${limitSql}`).all(...params);
      const requests: RequestRow[] = [];
      for (const raw of requestRows) {
        const parsed = RequestRow.safeParse(raw);
        if (parsed.success) requests.push(parsed.data);
      }
      const responses = new Map<string, ResponseRow>();
      if (!filter.pendingOnly && requests.length > 0) {
        for (let i = 0; i < requests.length; i += 500) {
          const ids = requests.slice(i, i + 500).map((r) => r.request_id);
          const rows = this.#db.prepare(`SELECT * FROM cue_responses WHERE request_id IN (${ids.map(() => '?').join(',')})`).all(...ids);
          for (const raw of rows) {
            const parsed = ResponseRow.safeParse(raw);
            if (parsed.success) responses.set(parsed.data.request_id, parsed.data);
          }
        }
      }
      const files = this.#filesFor([...responses.values()].map((r) => r.id));
      const waiters = readWaiters(this.#db, requests.map((r) => r.request_id));
      let entries = requests.map((row) => {
        const response = responses.get(row.request_id);
        return this.#toEntry(row, response ? this.#toResponse(response, files.get(response.id) ?? []) : undefined, waiters.get(row.request_id));
      });
      if (filter.pendingOnly) entries = entries.filter((e) => e.state === 'pending');
      return entries.sort((a, b) => (a.createdAtMs ?? Infinity) - (b.createdAtMs ?? Infinity) || a.id - b.id);
    });
  }

  /** Every agent known from `agent_envs` or from its requests; agents with pending cues first, then the most recently active. */
  listAgents(): AgentSummary[] {
    return this.#run(() => {
      const agents = new Map<string, AgentSummary>();
      const get = (agentId: string): AgentSummary => {
        let agent = agents.get(agentId);
        if (!agent) {
          agent = { agentId, requestCount: 0, pendingCount: 0 };
          agents.set(agentId, agent);
        }
        return agent;
      };
      for (const raw of this.#db.prepare(`SELECT * FROM agent_envs`).all()) {
        const parsed = AgentEnvRow.safeParse(raw);
        if (!parsed.success) continue;
        const agent = get(parsed.data.agent_id);
        if (parsed.data.agent_runtime) agent.runtime = parsed.data.agent_runtime;
        if (parsed.data.project_dir) agent.projectDir = parsed.data.project_dir;
        if (parsed.data.agent_terminal) agent.terminal = parsed.data.agent_terminal;
        const ms = parseMailboxTime(parsed.data.updated_at);
        if (ms !== undefined) agent.lastActivityMs = ms;
      }
      const statusSql = this.#has('cue_requests', 'status') ? `(r.status IS NULL OR r.status = '' OR upper(r.status) = 'PENDING')` : '1';
      const counts = this.#db
        .prepare(
          `SELECT COALESCE(r.agent_id, '') AS agent_id, COUNT(*) AS n, MAX(r.id) AS last_id,
             SUM(CASE WHEN ${statusSql} AND NOT EXISTS (SELECT 1 FROM cue_responses s WHERE s.request_id = r.request_id) THEN 1 ELSE 0 END) AS pending
           FROM cue_requests r GROUP BY COALESCE(r.agent_id, '')`,
        )
        .all() as Array<{ agent_id: string; n: number; last_id: number; pending: number }>;
      const lastRow = this.#db.prepare(`SELECT * FROM cue_requests WHERE id = ?`);
      for (const row of counts) {
        const agent = get(String(row.agent_id));
        agent.requestCount = Number(row.n);
        agent.pendingCount = Number(row.pending);
        const last = RequestRow.safeParse(lastRow.get(row.last_id));
        if (last.success) {
          if (last.data.prompt) agent.lastPrompt = last.data.prompt;
          const ms = parseMailboxTime(last.data.created_at);
          if (ms !== undefined && (agent.lastActivityMs === undefined || ms > agent.lastActivityMs)) agent.lastActivityMs = ms;
        }
      }
      for (const agentId of readArchived(this.#db)) {
        const agent = agents.get(agentId);
        if (agent) agent.archived = true;
      }
      return [...agents.values()].sort(
        (a, b) => Number(b.pendingCount > 0) - Number(a.pendingCount > 0) || (b.lastActivityMs ?? 0) - (a.lastActivityMs ?? 0) || a.agentId.localeCompare(b.agentId),
      );
    });
  }

  /** Copies an attachment into `files/` (content-addressed, so a retry or a rolled-back answer leaves no inconsistency). */
  async #prepareFile(source: string): Promise<PreparedFile> {
    let data: Buffer;
    try {
      const size = statSync(source).size;
      if (size > MAX_ATTACHMENT_BYTES) throw new MailboxError('io', `attachment ${source} is ${size} bytes; the limit is ${MAX_ATTACHMENT_BYTES}`);
      data = await readFile(source);
    } catch (error) {
      if (error instanceof MailboxError) throw error;
      throw new MailboxError('io', `cannot read attachment ${source}: ${errorMessage(error)}`, { cause: error });
    }
    const sha256 = createHash('sha256').update(data).digest('hex');
    const rawExt = path.extname(source).slice(1).toLowerCase();
    const ext = /^[a-z0-9]{1,10}$/.test(rawExt) ? rawExt : 'bin';
    const rel = `files/${sha256}.${ext}`;
    const target = path.join(this.paths.home, rel);
    if (!existsSync(target)) {
      try {
        mkdirSync(path.dirname(target), { recursive: true });
        await writeFileAtomic(target, data);
      } catch (error) {
        throw toMailboxError(error, this.paths.dbPath);
      }
    }
    return { sha256, rel, mimeType: mimeForFile(source), size: data.length };
  }

  /**
   * Checks, inside the caller's transaction, that the request exists and has no answer yet; for an
   * answer (not an End), also that its recorded waiter is still there to read it.
   */
  #requireOpen(requestId: string, forAnswer = false): void {
    const request = this.#db.prepare(`SELECT * FROM cue_requests WHERE request_id = ?`).get(requestId) as { status?: unknown } | undefined;
    if (!request) throw new MailboxError('unknown-request', `no request ${requestId} in the mailbox ${this.paths.dbPath}`);
    const response = this.#db.prepare(`SELECT cancelled FROM cue_responses WHERE request_id = ?`).get(requestId) as { cancelled?: unknown } | undefined;
    if (response) {
      throw new MailboxError('already-answered', `request ${requestId} was already ${Number(response.cancelled) === 1 ? 'cancelled' : 'answered'}; nothing was written`);
    }
    const status = typeof request.status === 'string' ? request.status : null;
    if (!isPendingStatus(status)) throw new MailboxError('already-answered', `request ${requestId} is ${status} already; nothing was written`);
    if (forAnswer) {
      const waiter = readWaiters(this.#db, [requestId]).get(requestId);
      if (waiter && this.liveness({ waiter }) === 'gone') throw new MailboxError('abandoned', `request ${requestId} was abandoned: ${goneWaiterText(waiter)}, so nobody would read an answer; nothing was written`);
    }
  }

  #writeResponse(requestId: string, json: string, cancelled: boolean, files: readonly PreparedFile[]): void {
    const now = localIsoWithOffset();
    const responseId = this.#insert('cue_responses', { request_id: requestId, response_json: json, cancelled: cancelled ? 1 : 0, created_at: now });
    files.forEach((file, idx) => {
      this.#insert('cue_files', { sha256: file.sha256, file: file.rel, mime_type: file.mimeType, size_bytes: file.size, created_at: now }, 'INSERT OR IGNORE');
      const row = this.#db.prepare(`SELECT id FROM cue_files WHERE sha256 = ?`).get(file.sha256) as { id: number };
      this.#insert('cue_response_files', { response_id: responseId, file_id: row.id, idx });
    });
    if (this.#has('cue_requests', 'status')) {
      const setUpdated = this.#has('cue_requests', 'updated_at') ? ', updated_at = ?' : '';
      const params = this.#has('cue_requests', 'updated_at') ? [cancelled ? 'CANCELLED' : 'COMPLETED', now, requestId] : [cancelled ? 'CANCELLED' : 'COMPLETED', requestId];
      this.#db.prepare(`UPDATE cue_requests SET status = ?${setUpdated} WHERE request_id = ?`).run(...params);
    }
  }

  /**
   * Answers a pending request: attachments, the response row, their links and the request's
   * status in one transaction. Throws MailboxError 'unknown-request' or 'already-answered'
   * (writing nothing) when the request cannot be answered.
   */
  async answer(requestId: string, answer: Answer): Promise<void> {
    // Fail before copying files when the answer cannot go in anyway.
    this.#run(() => this.#requireOpen(requestId, true));
    const files: PreparedFile[] = [];
    for (const source of answer.attachments ?? []) files.push(await this.#prepareFile(source));
    const json = JSON.stringify(answer.mentions && answer.mentions.length > 0 ? { text: answer.text, mentions: answer.mentions } : { text: answer.text });
    this.#transaction(() => {
      this.#requireOpen(requestId, true);
      this.#writeResponse(requestId, json, false, files);
    });
  }

  /** Ends a pending request without an answer: a cancelled response; nothing is ever deleted. */
  cancel(requestId: string): void {
    this.#transaction(() => {
      this.#requireOpen(requestId);
      this.#writeResponse(requestId, JSON.stringify({ text: '' }), true, []);
    });
  }

  /**
   * For a `cueme cue` that stops waiting (timeout, Ctrl-C): cancels the request unless an answer
   * got in first, in which case that answer is returned so it can still be delivered.
   */
  closeUnanswered(requestId: string): CueResponse | undefined {
    const answered = this.#transaction(() => {
      const existing = this.#db.prepare(`SELECT 1 FROM cue_responses WHERE request_id = ?`).get(requestId);
      if (existing) return true;
      this.#writeResponse(requestId, JSON.stringify({ text: '' }), true, []);
      return false;
    });
    return answered ? this.getResponse(requestId) : undefined;
  }

  // ---- Belay's bookkeeping (bookkeeping.ts): shared by every window and command line ----

  /** Replies waiting for agents' next cues, by agent. */
  listQueue(): Map<string, QueueRow> {
    return this.#run(() => new Map(readQueue(this.#db).map((row) => [row.agentId, row])));
  }

  /** Queues `text` for the agent's next cue (written after now, or after request row `afterId`); an empty text removes it. */
  setQueued(agentId: string, text: string, afterId?: number): void {
    this.#transaction(() => {
      if (text.trim() === '') return removeQueued(this.#db, agentId);
      ensureBookkeeping(this.#db);
      writeQueued(this.#db, agentId, text.trim(), Date.now(), afterId);
    });
  }

  /**
   * Delivers queued replies: `choose` picks, from the pending requests and the queue, which request
   * gets which agent's reply (model.ts, `queuedDeliveries`); each picked request is answered and the
   * reply used up in one transaction, so of every window and process trying at once exactly one
   * delivers it. Returns what was delivered.
   */
  deliverQueued(choose: (pending: CueEntry[], queue: Map<string, QueueRow>) => Delivery[]): Delivery[] {
    const pick = (): Delivery[] => {
      const queue = this.listQueue();
      return queue.size === 0 ? [] : choose(this.listRequests({ pendingOnly: true }), queue);
    };
    // Look first without the write lock: almost always there is nothing to deliver.
    if (this.#run(pick).length === 0) return [];
    return this.#transaction(() => {
      const picks = pick();
      for (const p of picks) {
        removeQueued(this.#db, p.agentId);
        this.#writeResponse(p.requestId, JSON.stringify({ text: p.text }), false, []);
      }
      return picks;
    });
  }

  /** Hides agents from the list until they write a newer request. */
  archiveAgents(agentIds: readonly string[]): void {
    if (agentIds.length === 0) return;
    this.#transaction(() => {
      ensureBookkeeping(this.#db);
      writeArchived(this.#db, agentIds, Date.now());
    });
  }

  unarchiveAgents(agentIds: readonly string[]): void {
    this.#transaction(() => removeArchived(this.#db, agentIds));
  }

  /** `PRAGMA data_version` of this connection: changes when another connection commits. */
  dataVersion(): number {
    return this.#run(() => Number((this.#db.prepare('PRAGMA data_version').get() as { data_version: number }).data_version));
  }
}
