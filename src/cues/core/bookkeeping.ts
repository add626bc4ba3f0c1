import type { Database } from './sqlite.ts';
import type { WaiterRecord } from './waiters.ts';

// Belay's own tables in the mailbox, beside the public tools' ones and never in their columns (as
// cue-console keeps its groups and pins in tables of its own). The public tools ignore them; a
// mailbox without them is simply one no Belay has written to yet, so every read copes with their
// absence and every write creates them first (IF NOT EXISTS, inside the write's transaction).
//
// - belay_waiters: who waits for a request (waiters.ts), written with the request.
// - belay_reply_queue: a reply waiting for an agent's next cue, one per agent, shared by every window.
// - belay_archived_agents: agents hidden from the list until they write a newer request.

const CREATE = [
  `CREATE TABLE IF NOT EXISTS belay_waiters (
  request_id TEXT PRIMARY KEY,
  pid INTEGER NOT NULL,
  machine TEXT NOT NULL,
  start_mark TEXT,
  host TEXT,
  deadline_ms INTEGER,
  heartbeat_ms INTEGER NOT NULL
)`,
  `CREATE TABLE IF NOT EXISTS belay_reply_queue (
  agent_id TEXT PRIMARY KEY,
  text TEXT NOT NULL,
  after_id INTEGER NOT NULL,
  queued_ms INTEGER NOT NULL
)`,
  `CREATE TABLE IF NOT EXISTS belay_archived_agents (
  agent_id TEXT PRIMARY KEY,
  last_request_id INTEGER NOT NULL,
  archived_ms INTEGER NOT NULL
)`,
];

/** Answered requests' waiter rows are kept this long (the history tells a timeout from them), then dropped. */
const KEEP_ENDED_WAITERS_MS = 7 * 24 * 3600_000;

/** Creates Belay's tables when missing; call inside a write transaction. */
export function ensureBookkeeping(db: Database): void {
  for (const statement of CREATE) db.exec(statement);
}

function hasTable(db: Database, name: string): boolean {
  return db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(name) !== undefined;
}

const int = (value: unknown): number | undefined => (typeof value === 'number' || typeof value === 'bigint' ? Number(value) : undefined);
const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

export function recordWaiter(db: Database, record: WaiterRecord): void {
  db.prepare(
    `INSERT OR REPLACE INTO belay_waiters (request_id, pid, machine, start_mark, host, deadline_ms, heartbeat_ms) VALUES (?, ?, ?, ?, ?, ?, ?)`,
  ).run(record.requestId, record.pid, record.machine, record.startMark ?? null, record.host, record.deadlineMs ?? null, record.heartbeatMs);
}

/** Drops the rows of requests answered long ago, and of requests another tool deleted. */
export function pruneWaiters(db: Database, nowMs: number): void {
  db.prepare(
    `DELETE FROM belay_waiters WHERE request_id NOT IN (SELECT request_id FROM cue_requests WHERE request_id IS NOT NULL)
       OR (heartbeat_ms < ? AND request_id IN (SELECT request_id FROM cue_responses))`,
  ).run(nowMs - KEEP_ENDED_WAITERS_MS);
}

/** The waiter records of these requests (those that have one). */
export function readWaiters(db: Database, requestIds: readonly string[]): Map<string, WaiterRecord> {
  const map = new Map<string, WaiterRecord>();
  if (requestIds.length === 0 || !hasTable(db, 'belay_waiters')) return map;
  for (let i = 0; i < requestIds.length; i += 500) {
    const chunk = requestIds.slice(i, i + 500);
    const rows = db.prepare(`SELECT * FROM belay_waiters WHERE request_id IN (${chunk.map(() => '?').join(',')})`).all(...chunk) as Array<Record<string, unknown>>;
    for (const row of rows) {
      const requestId = str(row.request_id);
      const pid = int(row.pid);
      const machine = str(row.machine);
      const heartbeatMs = int(row.heartbeat_ms);
      // A row that does not name one real process says nothing (signal 0 to pid 0 or -1 reaches a whole group).
      if (!requestId || pid === undefined || !Number.isSafeInteger(pid) || pid <= 0 || !machine || heartbeatMs === undefined) continue;
      const record: WaiterRecord = { requestId, pid, machine, host: str(row.host) ?? '', heartbeatMs };
      const startMark = str(row.start_mark);
      if (startMark) record.startMark = startMark;
      const deadlineMs = int(row.deadline_ms);
      if (deadlineMs !== undefined) record.deadlineMs = deadlineMs;
      map.set(requestId, record);
    }
  }
  return map;
}

/**
 * Marks these waiters alive now, and returns the ones still waiting (no response yet): a waiter
 * stops beating for a request once it has its answer.
 */
export function beat(db: Database, requestIds: readonly string[], nowMs: number): string[] {
  if (requestIds.length === 0 || !hasTable(db, 'belay_waiters')) return [];
  const marks = requestIds.map(() => '?').join(',');
  const open = (
    db.prepare(`SELECT request_id FROM cue_requests r WHERE request_id IN (${marks}) AND NOT EXISTS (SELECT 1 FROM cue_responses s WHERE s.request_id = r.request_id)`).all(...requestIds) as Array<{
      request_id: string;
    }>
  ).map((r) => r.request_id);
  if (open.length > 0) db.prepare(`UPDATE belay_waiters SET heartbeat_ms = ? WHERE request_id IN (${open.map(() => '?').join(',')})`).run(nowMs, ...open);
  return open;
}

// ---- the reply queue ----

export interface QueueRow {
  agentId: string;
  text: string;
  /** The mailbox's highest request row id when the reply was queued; only later requests take it. */
  afterId: number;
}

export function readQueue(db: Database): QueueRow[] {
  if (!hasTable(db, 'belay_reply_queue')) return [];
  const rows = db.prepare(`SELECT agent_id, text, after_id FROM belay_reply_queue ORDER BY queued_ms`).all() as Array<Record<string, unknown>>;
  const queue: QueueRow[] = [];
  for (const row of rows) {
    const agentId = str(row.agent_id);
    const text = str(row.text);
    const afterId = int(row.after_id);
    if (agentId !== undefined && text !== undefined && afterId !== undefined) queue.push({ agentId, text, afterId });
  }
  return queue;
}

/** Queues `text` for the agent's next request (after the newest one there is now, unless `afterId` says). */
export function writeQueued(db: Database, agentId: string, text: string, nowMs: number, afterId?: number): void {
  const after = afterId ?? int((db.prepare(`SELECT MAX(id) AS n FROM cue_requests`).get() as { n: unknown } | undefined)?.n) ?? 0;
  db.prepare(`INSERT OR REPLACE INTO belay_reply_queue (agent_id, text, after_id, queued_ms) VALUES (?, ?, ?, ?)`).run(agentId, text, after, nowMs);
}

export function removeQueued(db: Database, agentId: string): void {
  if (hasTable(db, 'belay_reply_queue')) db.prepare(`DELETE FROM belay_reply_queue WHERE agent_id = ?`).run(agentId);
}

// ---- archived agents ----

/** Agents archived and not heard from since: their archive mark and their newest request are the same. */
export function readArchived(db: Database): Set<string> {
  if (!hasTable(db, 'belay_archived_agents')) return new Set();
  const rows = db
    .prepare(
      `SELECT a.agent_id AS agent_id FROM belay_archived_agents a
       WHERE NOT EXISTS (SELECT 1 FROM cue_requests r WHERE COALESCE(r.agent_id, '') = a.agent_id AND r.id > a.last_request_id)`,
    )
    .all() as Array<{ agent_id: unknown }>;
  return new Set(rows.map((r) => String(r.agent_id)));
}

export function writeArchived(db: Database, agentIds: readonly string[], nowMs: number): void {
  const last = db.prepare(`SELECT COALESCE(MAX(id), 0) AS n FROM cue_requests WHERE COALESCE(agent_id, '') = ?`);
  const insert = db.prepare(`INSERT OR REPLACE INTO belay_archived_agents (agent_id, last_request_id, archived_ms) VALUES (?, ?, ?)`);
  for (const agentId of agentIds) insert.run(agentId, int((last.get(agentId) as { n: unknown }).n) ?? 0, nowMs);
}

export function removeArchived(db: Database, agentIds: readonly string[]): void {
  if (!hasTable(db, 'belay_archived_agents')) return;
  const remove = db.prepare(`DELETE FROM belay_archived_agents WHERE agent_id = ?`);
  for (const agentId of agentIds) remove.run(agentId);
}
