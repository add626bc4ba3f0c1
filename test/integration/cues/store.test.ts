import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { MailboxError } from '../../../src/cues/core/errors.ts';
import { mailboxPaths } from '../../../src/cues/core/home.ts';
import { Mailbox } from '../../../src/cues/core/store.ts';
import { currentProcess, HEARTBEAT_STALE_MS, systemProbe, waiterLiveness } from '../../../src/cues/core/waiters.ts';
import { repoRoot, tempHome } from '../../support/cues/helpers.ts';

function rawDb(file: string): DatabaseSync {
  const db = new DatabaseSync(file, { enableForeignKeyConstraints: false });
  db.exec('PRAGMA busy_timeout = 5000');
  return db;
}

function count(db: DatabaseSync, sql: string, ...params: string[]): number {
  return Number((db.prepare(sql).get(...params) as { n: number }).n);
}

function sha(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

function isKind(kind: string) {
  return (error: unknown) => error instanceof MailboxError && error.kind === kind;
}

/** Counts change events; `atLeast` resolves on the event that reaches n (bounded wait, no sleeps). */
function changeCounter() {
  let count = 0;
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  return {
    get count() {
      return count;
    },
    onChange: () => {
      count++;
      for (const w of waiters.filter((w) => count >= w.n)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    },
    atLeast(n: number, what: string, timeoutMs = 10_000): Promise<void> {
      if (count >= n) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeoutMs);
        waiters.push({ n, resolve: () => (clearTimeout(timer), resolve()) });
      });
    },
  };
}

describe('mailbox store', () => {
  let home: ReturnType<typeof tempHome>;
  const open: Mailbox[] = [];
  const openMailbox = (busyTimeoutMs?: number) => {
    const m = Mailbox.open({ home: home.cueHome, ...(busyTimeoutMs !== undefined ? { busyTimeoutMs } : {}) });
    open.push(m);
    return m;
  };
  beforeEach(() => {
    home = tempHome();
  });
  afterEach(() => {
    for (const m of open.splice(0)) m.close();
    home.remove();
  });

  it('creates a new mailbox as the public cueme does: schema 3, rollback journal', () => {
    const mailbox = openMailbox();
    assert.equal(mailbox.paths.dbPath, path.join(home.cueHome, 'cue.db'));
    const db = rawDb(mailbox.paths.dbPath);
    try {
      const tables = (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`).all() as Array<{ name: string }>).map((r) => r.name);
      for (const t of ['agent_envs', 'cue_files', 'cue_requests', 'cue_response_files', 'cue_responses', 'schema_meta']) assert.ok(tables.includes(t), t);
      assert.equal((db.prepare(`SELECT value FROM schema_meta WHERE key = 'schema_version'`).get() as { value: string }).value, '3');
      assert.equal((db.prepare('PRAGMA journal_mode').get() as { journal_mode: string }).journal_mode, 'delete');
    } finally {
      db.close();
    }
    assert.deepEqual(mailbox.listRequests(), []);
  });

  it('answers with attachments, response, links and status in one transaction', async () => {
    const mailbox = openMailbox();
    const { requestId } = mailbox.createRequest({ agentId: 'alpha', prompt: 'Which env?', payloadJson: '{"type":"choice","options":["prod","staging"]}' });
    assert.match(requestId, /^req_[0-9a-f]{12}$/);
    const pending = mailbox.listRequests({ pendingOnly: true });
    assert.equal(pending.length, 1);
    assert.equal(pending[0]!.payload.kind, 'choice');
    const attachment = path.join(home.dir, 'notes.txt');
    writeFileSync(attachment, 'deploy notes');
    await mailbox.answer(requestId, { text: 'staging', attachments: [attachment] });

    const entry = mailbox.getRequest(requestId)!;
    assert.equal(entry.state, 'answered');
    assert.equal(entry.status, 'COMPLETED');
    assert.equal(entry.response!.text, 'staging');
    assert.equal(entry.response!.files.length, 1);
    const file = entry.response!.files[0]!;
    const digest = createHash('sha256').update('deploy notes').digest('hex');
    assert.equal(file.file, `files/${digest}.txt`);
    assert.equal(file.mimeType, 'text/plain');
    assert.equal(readFileSync(file.absolutePath, 'utf8'), 'deploy notes');
    assert.deepEqual(mailbox.listRequests({ pendingOnly: true }), []);
    const db = rawDb(mailbox.paths.dbPath);
    try {
      assert.equal(count(db, `SELECT COUNT(*) AS n FROM cue_response_files`), 1);
      assert.deepEqual(JSON.parse((db.prepare(`SELECT response_json AS j FROM cue_responses`).get() as { j: string }).j), { text: 'staging' });
    } finally {
      db.close();
    }
  });

  it('refuses to answer twice, an unknown request, and an answer after a cancel, writing nothing', async () => {
    const mailbox = openMailbox();
    const { requestId } = mailbox.createRequest({ agentId: 'a', prompt: 'p', payloadJson: null });
    await mailbox.answer(requestId, { text: 'first' });
    const db = rawDb(mailbox.paths.dbPath);
    try {
      const before = count(db, 'SELECT COUNT(*) AS n FROM cue_responses');
      await assert.rejects(mailbox.answer(requestId, { text: 'second' }), isKind('already-answered'));
      assert.throws(() => mailbox.cancel(requestId), isKind('already-answered'));
      await assert.rejects(mailbox.answer('req_000000000000', { text: 'x' }), isKind('unknown-request'));
      assert.equal(count(db, 'SELECT COUNT(*) AS n FROM cue_responses'), before);
      assert.equal(mailbox.getResponse(requestId)!.text, 'first');

      const other = mailbox.createRequest({ agentId: 'a', prompt: 'q', payloadJson: null }).requestId;
      mailbox.cancel(other);
      await assert.rejects(mailbox.answer(other, { text: 'late' }), isKind('already-answered'));
      const row = db.prepare(`SELECT r.status AS status, s.cancelled AS cancelled, s.response_json AS j FROM cue_requests r JOIN cue_responses s USING (request_id) WHERE request_id = ?`).get(other) as { status: string; cancelled: number; j: string };
      assert.deepEqual({ ...row }, { status: 'CANCELLED', cancelled: 1, j: '{"text":""}' });
      assert.equal(count(db, 'SELECT COUNT(*) AS n FROM cue_requests'), 2, 'nothing is deleted');
    } finally {
      db.close();
    }
  });

  it('closeUnanswered cancels a waiting request, but hands back an answer that got in first', async () => {
    const mailbox = openMailbox();
    const waiting = mailbox.createRequest({ agentId: 'a', prompt: 'p', payloadJson: null }).requestId;
    assert.equal(mailbox.closeUnanswered(waiting), undefined);
    assert.equal(mailbox.getRequest(waiting)!.state, 'cancelled');
    const answered = mailbox.createRequest({ agentId: 'a', prompt: 'p', payloadJson: null }).requestId;
    await mailbox.answer(answered, { text: 'just in time' });
    assert.equal(mailbox.closeUnanswered(answered)!.text, 'just in time');
    assert.equal(mailbox.getRequest(answered)!.state, 'answered');
  });

  it('lists agents with pending first, their runtime and counts; history per agent oldest first', async () => {
    const mailbox = openMailbox();
    mailbox.upsertAgent({ agentId: 'quiet', runtime: 'cursor', projectDir: '/p', terminal: 'zsh' });
    mailbox.upsertAgent({ agentId: 'busy', runtime: 'claude_code', projectDir: '/q', terminal: 'bash' });
    const first = mailbox.createRequest({ agentId: 'busy', prompt: 'one', payloadJson: null }).requestId;
    mailbox.createRequest({ agentId: 'busy', prompt: 'two', payloadJson: null });
    const q = mailbox.createRequest({ agentId: 'quiet', prompt: 'three', payloadJson: null }).requestId;
    await mailbox.answer(q, { text: 'done' });
    await mailbox.answer(first, { text: 'ok' });
    const agents = mailbox.listAgents();
    assert.deepEqual(
      agents.map((a) => [a.agentId, a.runtime, a.requestCount, a.pendingCount]),
      [
        ['busy', 'claude_code', 2, 1],
        ['quiet', 'cursor', 1, 0],
      ],
    );
    assert.deepEqual(mailbox.listRequests({ agentId: 'busy' }).map((e) => [e.prompt, e.state, e.response?.text]), [
      ['one', 'answered', 'ok'],
      ['two', 'pending', undefined],
    ]);
    assert.deepEqual(mailbox.listRequests({ agentId: 'busy', limit: 1 }).map((e) => e.prompt), ['two']);
  });

  it('refuses a corrupt file and leaves it untouched', () => {
    mkdirSync(home.cueHome, { recursive: true });
    const dbPath = path.join(home.cueHome, 'cue.db');
    writeFileSync(dbPath, 'this is not a database\n'.repeat(20));
    const before = sha(dbPath);
    assert.throws(() => openMailbox(), (e: unknown) => isKind('corrupt')(e) && /not an SQLite database/.test((e as Error).message));
    assert.equal(sha(dbPath), before);
    assert.deepEqual(readdirSync(home.cueHome), ['cue.db']);
  });

  it('refuses a damaged SQLite file (valid header, garbage pages) without writing', () => {
    mkdirSync(home.cueHome, { recursive: true });
    const dbPath = path.join(home.cueHome, 'cue.db');
    const bytes = Buffer.alloc(8192, 0xa5);
    Buffer.from('SQLite format 3\0', 'latin1').copy(bytes, 0);
    writeFileSync(dbPath, bytes);
    const before = sha(dbPath);
    assert.throws(() => openMailbox(), isKind('corrupt'));
    assert.equal(sha(dbPath), before);
  });

  it('refuses a foreign SQLite database and another schema version, untouched', () => {
    mkdirSync(home.cueHome, { recursive: true });
    const dbPath = path.join(home.cueHome, 'cue.db');
    let db = rawDb(dbPath);
    db.exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('mine')`);
    db.close();
    let before = sha(dbPath);
    assert.throws(() => openMailbox(), (e: unknown) => isKind('foreign')(e) && /not a cue mailbox/.test((e as Error).message));
    assert.equal(sha(dbPath), before);

    home.remove();
    mkdirSync(home.cueHome, { recursive: true });
    db = rawDb(dbPath);
    db.exec(readFileSync(path.join(repoRoot, 'test/fixtures/cues/cueme-legacy-v2.sql'), 'utf8'));
    db.close();
    before = sha(dbPath);
    assert.throws(() => openMailbox(), (e: unknown) => isKind('foreign')(e) && /schema version 2/.test((e as Error).message));
    assert.equal(sha(dbPath), before);
  });

  it('needs HOME (or CUE_HOME) to find the mailbox', () => {
    assert.throws(() => mailboxPaths({ env: {} }), (e: unknown) => isKind('no-home')(e) && /HOME is not set/.test((e as Error).message));
    assert.equal(mailboxPaths({ env: { USERPROFILE: '/u' } }).dbPath, path.resolve('/u/.cue/cue.db'));
    assert.equal(mailboxPaths({ env: { HOME: '/h', CUE_HOME: '/elsewhere' } }).dbPath, path.resolve('/elsewhere/cue.db'));
  });

  it('waits a bounded time for a busy file, then says it is busy', () => {
    const mailbox = openMailbox(150);
    const holder = rawDb(mailbox.paths.dbPath);
    try {
      holder.exec('BEGIN EXCLUSIVE');
      assert.throws(() => mailbox.createRequest({ agentId: 'a', prompt: 'p', payloadJson: null }), (e: unknown) => isKind('busy')(e) && /busy/.test((e as Error).message));
      holder.exec('COMMIT');
      assert.match(mailbox.createRequest({ agentId: 'a', prompt: 'p', payloadJson: null }).requestId, /^req_/);
    } finally {
      holder.close();
    }
  });

  it('retries a busy file: a write waits for another process\'s lock to go, then succeeds', async () => {
    const mailbox = openMailbox(10_000);
    // A real second process takes the exclusive lock and lets it go a moment after saying so.
    const holder = spawn(process.execPath, ['--no-warnings', '-e', `
      const { DatabaseSync } = require('node:sqlite');
      const db = new DatabaseSync(process.argv[1]);
      db.exec('BEGIN EXCLUSIVE');
      process.stdout.write('locked\\n');
      setTimeout(() => { db.exec('COMMIT'); db.close(); }, 300);
    `, mailbox.paths.dbPath], { stdio: ['ignore', 'pipe', 'inherit'] });
    const closed = new Promise((resolve) => holder.on('close', resolve));
    await new Promise<void>((resolve, reject) => {
      holder.on('error', reject);
      holder.stdout!.setEncoding('utf8').on('data', (chunk: string) => chunk.includes('locked') && resolve());
    });
    const { requestId } = mailbox.createRequest({ agentId: 'patient', prompt: 'p', payloadJson: null });
    assert.equal(mailbox.getRequest(requestId)!.state, 'pending');
    await closed;
  });

  it('works on a file whose tables lack optional columns', async () => {
    mkdirSync(home.cueHome, { recursive: true });
    const db = rawDb(path.join(home.cueHome, 'cue.db'));
    db.exec(`CREATE TABLE schema_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      INSERT INTO schema_meta VALUES ('schema_version', '3');
      CREATE TABLE cue_requests (id INTEGER PRIMARY KEY AUTOINCREMENT, request_id TEXT UNIQUE, agent_id TEXT, prompt TEXT NOT NULL, payload TEXT, created_at TEXT);
      CREATE TABLE cue_responses (id INTEGER PRIMARY KEY AUTOINCREMENT, request_id TEXT UNIQUE, response_json TEXT NOT NULL, cancelled INTEGER);`);
    db.close();
    const mailbox = openMailbox();
    const { requestId } = mailbox.createRequest({ agentId: 'a', prompt: 'p', payloadJson: null });
    assert.equal(mailbox.listRequests({ pendingOnly: true }).length, 1);
    await mailbox.answer(requestId, { text: 'fine' });
    assert.equal(mailbox.getRequest(requestId)!.state, 'answered');
  });

  for (const mode of ['delete', 'wal'] as const) {
    it(`notifies subscribers of another connection's commits (${mode} journal), until disposed`, async () => {
      const watcher = openMailbox();
      const writer = openMailbox();
      if (mode === 'wal') {
        const db = rawDb(watcher.paths.dbPath);
        db.exec('PRAGMA journal_mode = WAL');
        db.close();
      }
      const counter = changeCounter();
      const dispose = watcher.watch(counter.onChange);
      const { requestId } = writer.createRequest({ agentId: 'a', prompt: 'p', payloadJson: null });
      await counter.atLeast(1, 'a change event for the request');
      const seen = counter.count;
      await writer.answer(requestId, { text: 'x' });
      await counter.atLeast(seen + 1, 'a change event for the answer');
      dispose();
      const afterDispose = counter.count;
      // A fresh subscription sees the next commit; the disposed one must not count it.
      const second = changeCounter();
      const disposeSecond = watcher.watch(second.onChange);
      writer.createRequest({ agentId: 'a', prompt: 'again', payloadJson: null });
      await second.atLeast(1, 'a change event on the fresh subscription');
      disposeSecond();
      assert.equal(counter.count, afterDispose);
      if (mode === 'wal') assert.ok(existsSync(`${watcher.paths.dbPath}-wal`));
    });
  }
});

/** The pid of a process that ran and is gone. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((resolve) => child.on('exit', resolve));
  return child.pid!;
}

describe("Belay's bookkeeping beside the mailbox", () => {
  let home: ReturnType<typeof tempHome>;
  const open: Mailbox[] = [];
  const openMailbox = (options: Omit<Parameters<typeof Mailbox.open>[0] & object, 'home'> = {}) => {
    const m = Mailbox.open({ home: home.cueHome, ...options });
    open.push(m);
    return m;
  };
  beforeEach(() => {
    home = tempHome();
  });
  afterEach(() => {
    for (const m of open.splice(0)) m.close();
    home.remove();
  });

  it("records who waits for a request in its own table: the public tools' tables keep their columns", () => {
    const mailbox = openMailbox();
    const before = Date.now();
    const { requestId } = mailbox.createRequest({ agentId: 'a', prompt: 'p', payloadJson: null, timeoutMs: 30_000 });
    const entry = mailbox.getRequest(requestId)!;
    assert.equal(entry.waiter?.pid, process.pid);
    assert.equal(entry.waiter?.machine, systemProbe().machine);
    assert.ok(entry.waiter!.deadlineMs! >= before + 30_000 && entry.waiter!.deadlineMs! <= Date.now() + 30_000);
    assert.equal(mailbox.liveness(entry), 'alive');
    const pause = mailbox.createRequest({ agentId: 'a', prompt: 'p', payloadJson: null });
    assert.equal(mailbox.getRequest(pause.requestId)!.waiter?.deadlineMs, undefined, 'no timeout, no deadline');
    const db = rawDb(mailbox.paths.dbPath);
    try {
      const columns = (table: string) => (db.prepare(`SELECT name FROM pragma_table_info(?)`).all(table) as Array<{ name: string }>).map((r) => r.name);
      assert.deepEqual(columns('cue_requests'), ['id', 'request_id', 'agent_id', 'prompt', 'payload', 'status', 'created_at', 'updated_at']);
      assert.deepEqual(columns('cue_responses'), ['id', 'request_id', 'response_json', 'cancelled', 'created_at']);
      assert.deepEqual(columns('agent_envs'), ['agent_id', 'agent_runtime', 'project_dir', 'agent_terminal', 'updated_at']);
      // A request written by the public tools (no bookkeeping): nothing is known of its waiter.
      db.prepare(`INSERT INTO cue_requests (request_id, agent_id, prompt, status) VALUES ('req_publictool1', 'a', 'from cueme 0.1', 'PENDING')`).run();
    } finally {
      db.close();
    }
    const publicEntry = mailbox.getRequest('req_publictool1')!;
    assert.equal(publicEntry.waiter, undefined);
    assert.equal(mailbox.liveness(publicEntry), 'unknown');
  });

  it('refuses an answer to a request whose waiter is gone (abandoned), writing nothing; End still closes it', async () => {
    const probe = systemProbe();
    const gone = await deadPid();
    const writer = openMailbox({ identity: { pid: gone, machine: probe.machine, host: 'devbox' } });
    const { requestId } = writer.createRequest({ agentId: 'a', prompt: 'Delete the production database?', payloadJson: null, timeoutMs: 600_000 });
    const responder = openMailbox();
    const entry = responder.getRequest(requestId)!;
    assert.equal(responder.liveness(entry), 'gone');
    await assert.rejects(responder.answer(requestId, { text: 'Yes' }), (e: unknown) => isKind('abandoned')(e) && new RegExp(`pid ${gone} on devbox\\) is gone`).test((e as Error).message));
    assert.equal(responder.getResponse(requestId), undefined, 'nothing written');
    responder.cancel(requestId);
    assert.equal(responder.getRequest(requestId)!.state, 'cancelled');
  });

  it('a malformed waiter row is ignored: nothing is known, and the cue stays answerable until its timeout', async () => {
    const mailbox = openMailbox();
    const ids = ['a', 'b', 'c', 'd'].map((agentId) => mailbox.createRequest({ agentId, prompt: 'p', payloadJson: null }).requestId);
    const db = rawDb(mailbox.paths.dbPath);
    try {
      const set = db.prepare(`UPDATE belay_waiters SET pid = ?, heartbeat_ms = ? WHERE request_id = ?`);
      set.run(0, Date.now(), ids[0]!);
      set.run(-1, Date.now(), ids[1]!);
      set.run(1.5, Date.now(), ids[2]!);
      set.run(4242, 'yesterday', ids[3]!);
    } finally {
      db.close();
    }
    for (const id of ids) {
      const entry = mailbox.getRequest(id)!;
      assert.equal(entry.waiter, undefined, id);
      assert.equal(mailbox.liveness(entry), 'unknown', id);
      await mailbox.answer(id, { text: 'still answerable' });
    }
  });

  it('tells a reused pid apart by its start time, and judges a waiter on another machine by its heartbeat', () => {
    const probe = systemProbe();
    const me = currentProcess();
    assert.equal(probe.isRunning(process.ppid, undefined), true);
    if (me.startMark !== undefined) assert.equal(probe.isRunning(process.ppid, 'not-its-start'), false, 'the same pid with another start time is another process');
    const record = { requestId: 'req_x', pid: 1, machine: 'linux:another-boot:pid:[1]', host: 'far', heartbeatMs: 1_000_000 };
    assert.equal(waiterLiveness(record, probe, 1_000_000 + HEARTBEAT_STALE_MS), 'alive');
    assert.equal(waiterLiveness(record, probe, 1_000_001 + HEARTBEAT_STALE_MS), 'gone');
    assert.equal(waiterLiveness(undefined, probe, 0), 'unknown');
    const fake = { machine: 'here', isRunning: (pid: number) => pid === 7 };
    assert.equal(waiterLiveness({ ...record, machine: 'here', pid: 7 }, fake, 0), 'alive', 'on the same machine the process decides, not the heartbeat');
    assert.equal(waiterLiveness({ ...record, machine: 'here', pid: 8, heartbeatMs: Date.now() }, fake, Date.now()), 'gone');
  });

  it('the reply queue is one per mailbox: any connection sees it, and exactly one delivers it', async () => {
    const a = openMailbox();
    const b = openMailbox();
    const old = a.createRequest({ agentId: 'ada', prompt: 'before the queueing', payloadJson: null }).requestId;
    a.setQueued('ada', '  next: write the changelog ');
    assert.deepEqual([...b.listQueue().values()].map((q) => [q.agentId, q.text]), [['ada', 'next: write the changelog']]);
    const next = b.createRequest({ agentId: 'ada', prompt: 'what next?', payloadJson: null }).requestId;
    const choose = (pending: ReturnType<Mailbox['listRequests']>, queue: ReturnType<Mailbox['listQueue']>) =>
      [...queue.values()].flatMap((q) => {
        const hit = pending.filter((e) => e.agentId === q.agentId && e.id > q.afterId)[0];
        return hit ? [{ requestId: hit.requestId, agentId: q.agentId, text: q.text }] : [];
      });
    const delivered = [...a.deliverQueued(choose), ...b.deliverQueued(choose)];
    assert.deepEqual(delivered, [{ requestId: next, agentId: 'ada', text: 'next: write the changelog' }]);
    assert.equal(a.getResponse(next)?.text, 'next: write the changelog');
    assert.equal(a.getResponse(old), undefined, 'an older cue does not take it');
    assert.equal(b.listQueue().size, 0, 'used once');
    a.setQueued('bob', 'x');
    a.setQueued('bob', '');
    assert.equal(b.listQueue().size, 0, 'an empty text removes it');
  });

  it('archived agents are listed as such until they write a newer request', () => {
    const mailbox = openMailbox();
    mailbox.upsertAgent({ agentId: 'OldAgent', runtime: 'cursor', projectDir: '/p', terminal: 'zsh' });
    mailbox.createRequest({ agentId: 'OldAgent', prompt: 'p', payloadJson: null });
    mailbox.upsertAgent({ agentId: 'other', runtime: 'cursor', projectDir: '/p', terminal: 'zsh' });
    mailbox.archiveAgents(['OldAgent', 'other']);
    const archived = () => mailbox.listAgents().filter((a) => a.archived).map((a) => a.agentId).sort();
    assert.deepEqual(archived(), ['OldAgent', 'other']);
    mailbox.createRequest({ agentId: 'OldAgent', prompt: 'back again', payloadJson: null });
    assert.deepEqual(archived(), ['other']);
    mailbox.unarchiveAgents(['other']);
    assert.deepEqual(archived(), []);
  });
});
