// The outbox/inbox loop. Under a root folder:
//   workspace/          the files the LLM works on
//   outbox/             {id}_seq{NNNN}.txt, the messages to paste into the LLM
//   inbox/              the LLM's answers, as .txt files; processed/ once applied
//   sessions/{id}.json  the session state
// Every file Belay writes here is written atomically. An answer is applied at most once: its
// SHA-256 is remembered, and a marker written before applying keeps an interrupted run from
// applying it again. Sequence numbers come from the saved state, so resuming never skips one.
import { createHash, randomBytes } from 'node:crypto';
import { promises as fs, watch } from 'node:fs';
import * as path from 'node:path';
import * as z from 'zod';
import { writeFileAtomic } from '../../shared/atomic.ts';
import { errorMessage } from '../../shared/errors.ts';
import { processAlive } from '../../shared/pidLock.ts';
import { executeAnswer, type ExecuteOptions, type ExecutionReport } from './executor.ts';
import { collectOutbox, outboxFileName, renderOutbox, seenByLlm } from './outbox.ts';
import { DEFAULT_RUN_TIMEOUT_SECONDS, SECTION } from './protocol.ts';
import { RESULT_TYPES, type CommandResult } from './results.ts';
import { openWorkspace } from './sandbox.ts';
import { snapshotFiles, writeSeen } from './seen.ts';

/** One command's outcome, as the session file stores it (`lastResults`). */
const commandResultSchema = z.object({
  commandType: z.enum(RESULT_TYPES),
  summary: z.string(),
  success: z.boolean(),
  output: z.string().optional(),
}) satisfies z.ZodType<CommandResult>;

export const sessionStateSchema = z.object({
  sessionId: z.string().regex(/^[0-9a-f]{8}$/),
  task: z.string(),
  /** The sequence number of the latest outbox. */
  sequenceNumber: z.number().int().min(1),
  isComplete: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
  lastResults: z.array(commandResultSchema),
  readFileRequests: z.array(z.string()),
  /** Belay's additions: SHA-256 of every answer applied, and of the one being applied. */
  processedAnswers: z.array(z.string()).default([]),
  pendingAnswer: z.object({ sha256: z.string(), sequence: z.number().int() }).optional(),
  /** Set when Belay stopped while applying the previous answer, so its results are unknown. */
  interrupted: z.boolean().optional(),
  /** RUN_COMMAND timeout chosen when the session started (the PROTOCOL text states it). */
  runTimeoutSeconds: z.number().positive().optional(),
  /**
   * The latest answers applied, each with the outbox it answered and its results in order (parse
   * errors among them): what the editor shows on an answer the session processed.
   */
  answers: z.array(z.object({ sha256: z.string(), sequence: z.number().int(), results: z.array(commandResultSchema) })).default([]),
  /** The editor applies the file blocks of an answer from a model as it arrives (commands always wait for a click). */
  autoApplyFiles: z.boolean().optional(),
  /** The model "Send to Model" uses for this session (`lm:<vendor>/<id>` or `openai:<model>`). */
  model: z.string().optional(),
});
export type SessionState = z.infer<typeof sessionStateSchema>;

/** Answers whose results a session file keeps (the digests of all are kept). */
const MAX_ANSWERS_KEPT = 100;

/** SHA-256 of an answer's text: how a session knows an answer it applied. */
export function answerDigest(answer: string): string {
  return createHash('sha256').update(answer).digest('hex');
}

export interface SessionLayout {
  root: string;
  workspace: string;
  inbox: string;
  processed: string;
  outbox: string;
  sessions: string;
}

export function sessionLayout(root: string): SessionLayout {
  const absolute = path.resolve(root);
  return {
    root: absolute,
    workspace: path.join(absolute, 'workspace'),
    inbox: path.join(absolute, 'inbox'),
    processed: path.join(absolute, 'inbox', 'processed'),
    outbox: path.join(absolute, 'outbox'),
    sessions: path.join(absolute, 'sessions'),
  };
}

async function ensureLayout(root: string): Promise<SessionLayout> {
  const layout = sessionLayout(root);
  for (const folder of [layout.workspace, layout.processed, layout.outbox, layout.sessions]) await fs.mkdir(folder, { recursive: true });
  return layout;
}

export function outboxPath(layout: SessionLayout, state: Pick<SessionState, 'sessionId' | 'sequenceNumber'>): string {
  return path.join(layout.outbox, outboxFileName(state.sessionId, state.sequenceNumber));
}

function sessionFile(layout: SessionLayout, sessionId: string): string {
  return path.join(layout.sessions, `${sessionId}.json`);
}

export class SessionError extends Error {
  override name = 'SessionError';
}

export async function loadSession(layout: SessionLayout, sessionId: string): Promise<SessionState> {
  if (!/^[0-9a-f]{8}$/.test(sessionId)) throw new SessionError(`'${sessionId}' is not a session id (8 hex characters)`);
  const file = sessionFile(layout, sessionId);
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new SessionError(`no session ${sessionId} under ${layout.root}`);
    throw error;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new SessionError(`${file} is not valid JSON: ${errorMessage(error)}`);
  }
  const parsed = sessionStateSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new SessionError(`${file} is not a Belay session: ${issue.path.join('.') || '(top level)'}: ${issue.message}`);
  }
  return parsed.data;
}

async function saveSession(layout: SessionLayout, state: SessionState): Promise<void> {
  state.updatedAt = new Date().toISOString();
  await writeFileAtomic(sessionFile(layout, state.sessionId), `${JSON.stringify(state, null, 2)}\n`);
}

/** Every readable session under the root, most recently updated first. */
export async function listSessions(root: string): Promise<SessionState[]> {
  const layout = sessionLayout(root);
  let names: string[];
  try {
    names = await fs.readdir(layout.sessions);
  } catch {
    return [];
  }
  const sessions: SessionState[] = [];
  for (const name of names) {
    const match = /^([0-9a-f]{8})\.json$/.exec(name);
    if (!match) continue;
    try {
      sessions.push(await loadSession(layout, match[1]!));
    } catch {
      // Not a session file of ours: not listed.
    }
  }
  return sessions.sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : a.updatedAt > b.updatedAt ? -1 : 0));
}

/** The session a command means: the one named, or else the most recently updated one still open. */
export async function findSession(root: string, sessionId?: string): Promise<SessionState> {
  const layout = sessionLayout(root);
  if (sessionId !== undefined) return loadSession(layout, sessionId);
  const open = (await listSessions(root)).filter((s) => !s.isComplete);
  if (open.length === 0) throw new SessionError(`no open session under ${layout.root}; start one with 'belay session start'`);
  return open[0]!;
}

/** Where a document belongs in a session root: the session it is an outbox of, or an answer to. */
export interface DocumentSession {
  /** The session root, when the document's place says it (`root/outbox/…`, `root/inbox/…`). */
  root?: string;
  sessionId: string;
  /** The outbox sequence it is, or answers. */
  sequence?: number;
}

const OUTBOX_NAME = /^([0-9a-f]{8})_seq(\d{4,})\.txt$/;
const ANSWER_NAME = /^([0-9a-f]{8})_answer(\d{4,})(?:_[^/\\]*)?\.(?:txt|agent)$/;

/**
 * The name an answer to outbox `sequence` of a session gets in `inbox/`. A `.txt` answer is the
 * session loop's to process (the inbox watcher takes it); an `.agent` one waits for the person,
 * block by block, in the editor (an answer from a model).
 */
export function answerFileName(sessionId: string, sequence: number, at = Date.now(), extension: 'txt' | 'agent' = 'txt'): string {
  return `${sessionId}_answer${String(sequence).padStart(4, '0')}_${at}.${extension}`;
}

/**
 * The session a document belongs to, from its place (an outbox under `outbox/`, an answer under
 * `inbox/` or `inbox/processed/` named after its session), else from an outbox's own HEADER.
 * Undefined for any other document: the caller must ask, never guess.
 */
export function sessionOfDocument(documentPath: string | undefined, text: string | undefined): DocumentSession | undefined {
  if (documentPath !== undefined) {
    const absolute = path.resolve(documentPath);
    const name = path.basename(absolute);
    const folder = path.dirname(absolute);
    const outbox = OUTBOX_NAME.exec(name);
    if (outbox && path.basename(folder) === 'outbox') return { root: path.dirname(folder), sessionId: outbox[1]!, sequence: Number(outbox[2]) };
    const answer = ANSWER_NAME.exec(name);
    if (answer) {
      const inbox = path.basename(folder) === 'processed' && path.basename(path.dirname(folder)) === 'inbox' ? path.dirname(folder) : path.basename(folder) === 'inbox' ? folder : undefined;
      if (inbox !== undefined) return { root: path.dirname(inbox), sessionId: answer[1]!, sequence: Number(answer[2]) };
    }
  }
  const header = text?.trimStart().slice(0, 2000);
  if (header?.startsWith(SECTION.header)) {
    const id = /^Session: ([0-9a-f]{8})\s*$/m.exec(header);
    const sequence = /^Sequence: (\d+)\s*$/m.exec(header);
    if (id) return { sessionId: id[1]!, ...(sequence ? { sequence: Number(sequence[1]) } : {}) };
  }
  return undefined;
}

/** How a step executes the answer; the RUN_COMMAND timeout is the session's own. */
export type SessionOptions = Omit<ExecuteOptions, 'runTimeoutMs'>;

async function writeOutboxFor(layout: SessionLayout, state: SessionState): Promise<string> {
  const workspace = await openWorkspace(layout.workspace);
  const base = {
    sessionId: state.sessionId,
    sequence: state.sequenceNumber,
    task: state.task,
    protocol: { runTimeoutSeconds: state.runTimeoutSeconds ?? DEFAULT_RUN_TIMEOUT_SECONDS },
    ...(state.sequenceNumber > 1 ? { previousResults: state.lastResults } : {}),
    ...(state.interrupted ? { notice: 'Belay stopped while applying your last answer, so its results are unknown. Check the workspace files before continuing.' } : {}),
  };
  const content = await collectOutbox(workspace, base, state.readFileRequests);
  const file = outboxPath(layout, state);
  // What the LLM sees goes beside the outbox first: an answer's edits are judged against it.
  const { listed, sent } = seenByLlm(content);
  await writeSeen(file, await snapshotFiles(workspace.realRoot, listed, sent));
  await writeFileAtomic(file, renderOutbox(content));
  return file;
}

/** Creates the folders and the first outbox. */
export async function startSession(root: string, task: string, options: { runTimeoutSeconds?: number } = {}): Promise<{ state: SessionState; outboxPath: string }> {
  if (task.trim() === '') throw new SessionError('the task is empty');
  const layout = await ensureLayout(root);
  let sessionId: string;
  do sessionId = randomBytes(4).toString('hex');
  while (await exists(sessionFile(layout, sessionId)));
  const now = new Date().toISOString();
  const state: SessionState = {
    sessionId,
    task,
    sequenceNumber: 1,
    isComplete: false,
    createdAt: now,
    updatedAt: now,
    lastResults: [],
    readFileRequests: [],
    processedAnswers: [],
    answers: [],
    ...(options.runTimeoutSeconds !== undefined ? { runTimeoutSeconds: options.runTimeoutSeconds } : {}),
  };
  const file = await writeOutboxFor(layout, state);
  await saveSession(layout, state);
  return { state, outboxPath: file };
}

export interface StepOutcome {
  /** 'applied': the answer ran; 'duplicate': it had been applied before and was not applied again. */
  kind: 'applied' | 'duplicate';
  state: SessionState;
  report?: ExecutionReport;
  /** The outbox to paste next; undefined once the session is complete. */
  outboxPath: string | undefined;
  /** Where the answer's file went (`inbox/processed/…`), when it was moved. */
  processedPath?: string;
}

/**
 * Processes one LLM answer: applies its commands to the workspace and writes the next outbox
 * (none after DONE). `source`, when given and inside `inbox/`, is moved to `inbox/processed/`.
 */
export async function stepSession(root: string, answer: string, options: SessionOptions & { sessionId?: string; source?: string } = {}): Promise<StepOutcome> {
  const layout = await ensureLayout(root);
  const found = await findSession(root, options.sessionId);
  return withLock(layout, found.sessionId, async () => {
    let state = await loadSession(layout, found.sessionId);
    const sha256 = answerDigest(answer);
    let outcome: StepOutcome;
    if (state.pendingAnswer) state = await recoverInterrupted(layout, state);
    if (state.processedAnswers.includes(sha256)) {
      outcome = { kind: 'duplicate', state, outboxPath: state.isComplete ? undefined : outboxPath(layout, state) };
    } else if (state.isComplete) {
      throw new SessionError(`session ${state.sessionId} is complete; start a new one`);
    } else {
      outcome = await apply(layout, state, answer, sha256, options);
    }
    if (options.source !== undefined) await moveToProcessed(layout, options.source);
    return outcome;
  });
}

async function apply(layout: SessionLayout, state: SessionState, answer: string, sha256: string, options: SessionOptions & { source?: string }): Promise<StepOutcome> {
  state.pendingAnswer = { sha256, sequence: state.sequenceNumber };
  await saveSession(layout, state);
  const workspace = await openWorkspace(layout.workspace);
  // Edits are judged against what the LLM saw with the outbox it answers (carried over a change since).
  const stale = { target: { workspace: layout.workspace, sessionRoot: layout.root }, answerPath: options.source };
  const report = await executeAnswer(workspace, answer, { ...options, stale, runTimeoutMs: (state.runTimeoutSeconds ?? DEFAULT_RUN_TIMEOUT_SECONDS) * 1000 });
  return finish(layout, state, sha256, report);
}

/** An answer's results go into the session: the next outbox is written, or the session completes. */
async function finish(layout: SessionLayout, state: SessionState, sha256: string, report: Pick<ExecutionReport, 'results' | 'readFileRequests' | 'done' | 'shell'>): Promise<StepOutcome> {
  state.lastResults = report.results;
  state.readFileRequests = report.readFileRequests;
  state.processedAnswers.push(sha256);
  state.answers = [...state.answers, { sha256, sequence: state.sequenceNumber, results: report.results }].slice(-MAX_ANSWERS_KEPT);
  delete state.interrupted;
  let next: string | undefined;
  if (report.done) {
    state.isComplete = true;
  } else {
    state.sequenceNumber += 1;
    next = await writeOutboxFor(layout, state);
  }
  delete state.pendingAnswer;
  await saveSession(layout, state);
  const results = report.results;
  return { kind: 'applied', state, report: { items: [], ...report, success: results.every((r) => r.success) }, outboxPath: next };
}

/** What the editor did with an answer's blocks, one by one as the person chose: the results in order. */
export interface EditorAnswer {
  sessionId: string;
  results: CommandResult[];
  readFileRequests: string[];
  done: boolean;
  /** The answer's file; moved to `inbox/processed/` when it is in `inbox/`. */
  source?: string;
}

/**
 * Records an answer the editor applied (the person applied, ran or left out each block) as the
 * session's step, as `stepSession` records one it executes: the next outbox carries its results.
 */
export async function recordAnswer(root: string, answer: string, given: EditorAnswer): Promise<StepOutcome> {
  const layout = await ensureLayout(root);
  return withLock(layout, given.sessionId, async () => {
    let state = await loadSession(layout, given.sessionId);
    if (state.pendingAnswer) state = await recoverInterrupted(layout, state);
    const sha256 = answerDigest(answer);
    if (state.processedAnswers.includes(sha256)) return { kind: 'duplicate', state, outboxPath: state.isComplete ? undefined : outboxPath(layout, state) };
    if (state.isComplete) throw new SessionError(`session ${state.sessionId} is complete; start a new one`);
    const outcome = await finish(layout, state, sha256, given);
    const moved = given.source === undefined ? undefined : await moveToProcessed(layout, given.source);
    return moved === undefined ? outcome : { ...outcome, processedPath: moved };
  });
}

/** Changes a session's editor preferences: auto-applying file blocks of answers from a model, and the model. */
export async function updateSession(root: string, sessionId: string, change: Partial<Pick<SessionState, 'autoApplyFiles' | 'model'>>): Promise<SessionState> {
  const layout = await ensureLayout(root);
  return withLock(layout, sessionId, async () => {
    const state = await loadSession(layout, sessionId);
    for (const [key, value] of Object.entries(change) as Array<[keyof typeof change, unknown]>) {
      if (value === undefined) delete state[key];
      else (state as Record<string, unknown>)[key] = value;
    }
    await saveSession(layout, state);
    return state;
  });
}

/** Belay stopped while applying an answer: never apply it again; tell the LLM in the next outbox. */
async function recoverInterrupted(layout: SessionLayout, state: SessionState): Promise<SessionState> {
  const pending = state.pendingAnswer!;
  if (!state.processedAnswers.includes(pending.sha256)) state.processedAnswers.push(pending.sha256);
  state.sequenceNumber = pending.sequence + 1;
  state.lastResults = [];
  state.readFileRequests = [];
  state.interrupted = true;
  await writeOutboxFor(layout, state);
  delete state.pendingAnswer;
  await saveSession(layout, state);
  return state;
}

/** Moves an answer out of `inbox/` into `inbox/processed/`; resolves with where it went (undefined: it stays). */
async function moveToProcessed(layout: SessionLayout, source: string): Promise<string | undefined> {
  const absolute = path.resolve(source);
  if (path.dirname(absolute) !== layout.inbox) return undefined;
  const name = path.basename(absolute);
  let target = path.join(layout.processed, name);
  if (await exists(target)) target = path.join(layout.processed, `${path.parse(name).name}.${Date.now()}${path.extname(name)}`);
  await fs.rename(absolute, target);
  return target;
}

/** Inbox answers waiting: `.txt` files, oldest modification first (then by name). */
async function pendingInboxFiles(layout: SessionLayout): Promise<Array<{ file: string; mtimeMs: number }>> {
  let names: string[];
  try {
    names = await fs.readdir(layout.inbox);
  } catch {
    return [];
  }
  const files: Array<{ file: string; mtimeMs: number; name: string }> = [];
  for (const name of names) {
    if (!name.toLowerCase().endsWith('.txt') || name.startsWith('.')) continue;
    const file = path.join(layout.inbox, name);
    try {
      const stats = await fs.stat(file);
      if (stats.isFile()) files.push({ file, mtimeMs: stats.mtimeMs, name });
    } catch {
      // Gone meanwhile.
    }
  }
  files.sort((a, b) => a.mtimeMs - b.mtimeMs || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return files.map(({ file, mtimeMs }) => ({ file, mtimeMs }));
}

export interface WatchOptions extends SessionOptions {
  sessionId?: string;
  /** Called after each inbox file is processed. */
  onStep?: (outcome: StepOutcome, file: string) => void;
  /** A file younger than this (by modification time) may still be being written: it waits. Default 300 ms. */
  settleMs?: number;
  /** How often the inbox is looked at besides file-system events. Default 1000 ms. */
  pollMs?: number;
}

/**
 * Processes inbox files as they arrive, oldest first, until the session is complete (resolves
 * with its state) or the signal aborts (resolves with the state so far).
 */
export async function watchSession(root: string, options: WatchOptions = {}): Promise<SessionState> {
  const layout = await ensureLayout(root);
  let state = await findSession(root, options.sessionId);
  const settleMs = options.settleMs ?? 300;
  const pollMs = options.pollMs ?? 1000;
  while (!state.isComplete && !options.signal?.aborted) {
    const inbox = watchFolder(layout.inbox);
    let wait = pollMs;
    for (const { file, mtimeMs } of await pendingInboxFiles(layout)) {
      // An answer named after another session is that session's: never applied to this one.
      const named = sessionOfDocument(file, undefined);
      if (named !== undefined && named.sessionId !== state.sessionId) continue;
      const age = Date.now() - mtimeMs;
      if (age < settleMs) {
        wait = Math.min(wait, settleMs - age + 10);
        break;
      }
      const outcome = await stepSession(root, await fs.readFile(file, 'utf8'), { ...options, sessionId: state.sessionId, source: file });
      state = outcome.state;
      options.onStep?.(outcome, file);
      if (state.isComplete || options.signal?.aborted) break;
    }
    if (state.isComplete || options.signal?.aborted) {
      inbox.close();
      break;
    }
    await inbox.wait(wait, options.signal);
  }
  return state;
}

/**
 * Watches a folder from now on: `wait` resolves when something changed in it since the watch
 * began (at once if it already did), after `ms`, or on abort, whichever comes first. Watching
 * before looking at the folder means a file that arrives meanwhile is never missed.
 */
function watchFolder(folder: string): { wait(ms: number, signal: AbortSignal | undefined): Promise<void>; close(): void } {
  let changed = false;
  let wake: (() => void) | undefined;
  const watcher = (() => {
    try {
      return watch(folder, () => {
        changed = true;
        wake?.();
      });
    } catch {
      return undefined;
    }
  })();
  watcher?.on('error', () => {
    changed = true;
    wake?.();
  });
  return {
    close: () => watcher?.close(),
    wait: (ms, signal) =>
      new Promise((resolve) => {
        const done = () => {
          clearTimeout(timer);
          watcher?.close();
          signal?.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, changed ? 0 : ms);
        wake = done;
        signal?.addEventListener('abort', done);
      }),
  };
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.lstat(file);
    return true;
  } catch {
    return false;
  }
}

/** One step at a time per session, across processes: a lock file holding the owner's pid. */
async function withLock<T>(layout: SessionLayout, sessionId: string, work: () => Promise<T>): Promise<T> {
  const lock = path.join(layout.sessions, `${sessionId}.lock`);
  for (let attempt = 0; ; attempt++) {
    try {
      await fs.writeFile(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number(await fs.readFile(lock, 'utf8').catch(() => ''));
      if (!processAlive(owner)) {
        await fs.rm(lock, { force: true });
        continue;
      }
      if (attempt >= 600) throw new SessionError(`session ${sessionId} is busy (process ${owner} holds ${lock})`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  try {
    return await work();
  } finally {
    await fs.rm(lock, { force: true });
  }
}

