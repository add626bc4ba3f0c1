import * as os from 'node:os';
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { errorMessage } from '../shared/errors.ts';
import { lazy } from '../shared/lazy.ts';
import { composeAnswerText, selectionIsEmpty, type Selection } from './core/answer.ts';
import { CUE_TIMEOUT_MS, cueTimeoutMs } from './core/expiry.ts';
import { mailboxPathsForSetting, type MailboxPaths } from './core/home.ts';
import { buildSnapshot, HISTORY_LIMIT, nextExpiryMs, queuedDeliveries, whyNotAnswerable, type CuesSnapshot, type LivenessOf, type QueuedReply } from './core/model.ts';
import type { CueEntry, Mailbox } from './core/store.ts';

/**
 * Reads run on the extension host's thread and wait this long at most for another program's lock
 * (the core's default is 5 s, which would freeze the editor); a busy read is retried on the next change.
 */
const BUSY_TIMEOUT_MS = 400;
/** Where each window kept its own reply queue before the queue moved into the mailbox: read once, moved, cleared. */
const OLD_QUEUE_KEY = 'belay.cues.queue';
/**
 * How often the processes waiting for the cues shown are looked at: a cueme killed with -9 writes
 * nothing, so no mailbox change says it is gone. A look is a read of /proc per waiter, no file write.
 */
const LIVENESS_CHECK_MS = 1000;

/** The mailbox (node:sqlite, rows parsed with zod, the folder watch): loaded when it is first opened, not at activation. */
const mailboxStore = lazy(() => require('./core/store.ts') as typeof import('./core/store.ts'));

/** Where the mailbox is for the `belay.cues.home` setting (empty: CUE_HOME, else ~/.cue). */
export function settingMailboxPaths(ctx: BelayContext): MailboxPaths {
  return mailboxPathsForSetting(ctx.config.get('cues.home'), os.homedir());
}

/** How long cuemes started from this editor's terminals wait (CUEME_TIMEOUT_SECONDS, else 600 s). */
function editorCueTimeoutMs(ctx: BelayContext): number {
  try {
    return cueTimeoutMs(process.env);
  } catch (error) {
    ctx.log.warn(`cues: ${errorMessage(error)}; using ${CUE_TIMEOUT_MS / 1000} s`);
    return CUE_TIMEOUT_MS;
  }
}

/**
 * The one owner of the mailbox in the editor: one connection, one watch, one snapshot that the
 * panel, the badge, the status bar and the notifications all read. Answers and the language-model
 * tools' cues go through here.
 */
export class CuesService implements vscode.Disposable {
  readonly #ctx: BelayContext;
  readonly #changed = new vscode.EventEmitter<CuesSnapshot>();
  /** Fires after every read of the mailbox that found a change (and after a re-open). */
  readonly onDidChange = this.#changed.event;
  #mailbox: Mailbox | undefined;
  #stopWatch: (() => void) | undefined;
  #paths: MailboxPaths | undefined;
  #error: string | undefined;
  #snapshot: CuesSnapshot = { nowMs: Date.now(), pending: [], agents: [], history: [], waitingCount: 0 };
  #pendingEntries: CueEntry[] = [];
  #expiryTimer: NodeJS.Timeout | undefined;
  #livenessTimer: NodeJS.Timeout | undefined;
  /** The liveness of each pending cue with a recorded waiter, as last shown. */
  #livenessShown = '';
  #refreshScheduled = false;
  #opening: NodeJS.Immediate | undefined;
  #loaded = false;
  readonly #subscriptions: vscode.Disposable[] = [];

  /** How long a cue is waited for: cues older than this are expired (core/expiry.ts). */
  readonly cueTimeoutMs: number;

  constructor(ctx: BelayContext) {
    this.#ctx = ctx;
    this.cueTimeoutMs = editorCueTimeoutMs(ctx);
    this.#subscriptions.push(
      ctx.config.onDidChange('cues.home', () => {
        if (this.#paths && settingMailboxPaths(ctx).home !== this.#paths.home) this.#reopen();
      }),
    );
    // The mailbox opens right after activation, not on first use: the badge, the status bar and
    // the notifications must show cues before the panel was ever opened, with no action from the
    // user. But not during activation either: loading it (zod, node:sqlite) and opening it (schema
    // check, folder watch) would count towards the activation time VS Code measures and waits on,
    // so it waits for the next turn of the event loop.
    this.#opening = setImmediate(() => {
      this.#opening = undefined;
      if (!this.#paths) this.#reopen();
    });
  }

  /** True once the mailbox has been read at least once. */
  get loaded(): boolean {
    return this.#loaded;
  }

  get snapshot(): CuesSnapshot {
    return this.#snapshot;
  }

  /** The mailbox folder shown to the user (also when it could not be opened). */
  get home(): string {
    if (this.#paths) return this.#paths.home;
    try {
      return settingMailboxPaths(this.#ctx).home;
    } catch (error) {
      return errorMessage(error);
    }
  }

  get error(): string | undefined {
    return this.#error;
  }

  /** (Re)opens the mailbox named by the settings; failures become `error`, shown in the panel. */
  #reopen(): void {
    this.#close();
    this.#error = undefined;
    try {
      this.#paths = settingMailboxPaths(this.#ctx);
      this.#mailbox = mailboxStore().Mailbox.open({ home: this.#paths.home, busyTimeoutMs: BUSY_TIMEOUT_MS });
      this.#moveOldQueue(this.#mailbox, this.#paths.home);
      this.#stopWatch = this.#mailbox.watch(() => this.#refresh(), {
        onError: (error) => this.#ctx.log.debug(`cues: mailbox check failed, retrying: ${errorMessage(error)}`),
      });
      this.#ctx.log.info(`cues: watching the mailbox ${this.#paths.dbPath}`);
    } catch (error) {
      this.#error = errorMessage(error);
      this.#ctx.log.error(`cues: cannot open the mailbox: ${this.#error}`);
    }
    this.#refresh();
  }

  /** Reads the mailbox now; coalesces calls made in the same turn. */
  #refresh(): void {
    if (this.#refreshScheduled) return;
    this.#refreshScheduled = true;
    queueMicrotask(() => {
      this.#refreshScheduled = false;
      this.#read();
    });
  }

  /** Reads the mailbox now (commands use this so they act on what is there, not on the last event). */
  readNow(): CuesSnapshot {
    this.#openCurrent();
    this.#read();
    return this.#snapshot;
  }

  /** Opens the mailbox the settings name now, unless it is the one open already. */
  #openCurrent(): void {
    try {
      if (settingMailboxPaths(this.#ctx).home === this.#paths?.home) return;
    } catch {
      // No home: reopen says why.
    }
    this.#reopen();
  }

  /**
   * The editor's one connection to the mailbox, for the language-model tools, and a way to wait on
   * its one watch. Throws, saying why, when the mailbox cannot be opened.
   */
  connection(): { mailbox: Mailbox; subscribe: (onChange: () => void) => () => void } {
    this.#openCurrent();
    const mailbox = this.#requireMailbox();
    const subscribe = (onChange: () => void) => {
      const subscription = this.#changed.event(() => onChange());
      return () => subscription.dispose();
    };
    return { mailbox, subscribe };
  }

  /** Whether the process waiting for a cue is still there, seen from this editor (core/waiters.ts). */
  #liveness(nowMs: number): LivenessOf {
    const mailbox = this.#mailbox;
    return (entry) => (mailbox ? mailbox.liveness(entry, nowMs) : 'unknown');
  }

  #read(): void {
    const mailbox = this.#mailbox;
    const nowMs = Date.now();
    if (!mailbox) {
      this.#pendingEntries = [];
      this.#snapshot = { nowMs, pending: [], agents: [], history: [], waitingCount: 0 };
      this.#changed.fire(this.#snapshot);
      return;
    }
    try {
      this.#deliverQueued(mailbox, nowMs);
    } catch (error) {
      this.#ctx.log.warn(`cues: delivering queued replies failed, retrying on the next change: ${errorMessage(error)}`);
    }
    try {
      const pending = mailbox.listRequests({ pendingOnly: true });
      const recent = mailbox.listRequests({ limit: HISTORY_LIMIT });
      const agents = mailbox.listAgents();
      const queue: Map<string, QueuedReply> = mailbox.listQueue();
      this.#pendingEntries = pending;
      const liveness = this.#liveness(nowMs);
      this.#livenessShown = livenessKey(pending, liveness);
      this.#snapshot = buildSnapshot({ agents, pending, recent }, queue, nowMs, this.cueTimeoutMs, liveness);
      this.#loaded = true;
    } catch (error) {
      // Busy past the short wait: keep what is shown; the next change or the watch's backstop reads again.
      this.#ctx.log.warn(`cues: reading the mailbox failed: ${errorMessage(error)}`);
      return;
    }
    this.#scheduleExpiry();
    this.#scheduleLivenessCheck();
    this.#changed.fire(this.#snapshot);
  }

  /** While a shown cue has a recorded waiter, looks at the waiters every second and reads again when one went away. */
  #scheduleLivenessCheck(): void {
    const watched = this.#pendingEntries.some((e) => e.waiter);
    if (!watched && this.#livenessTimer) {
      clearInterval(this.#livenessTimer);
      this.#livenessTimer = undefined;
    } else if (watched && !this.#livenessTimer) {
      this.#livenessTimer = setInterval(() => {
        if (livenessKey(this.#pendingEntries, this.#liveness(Date.now())) !== this.#livenessShown) this.#refresh();
      }, LIVENESS_CHECK_MS);
    }
  }

  /** Reads again just after the first waiting cue expires, so the badge stops counting it. */
  #scheduleExpiry(): void {
    if (this.#expiryTimer) clearTimeout(this.#expiryTimer);
    this.#expiryTimer = undefined;
    const next = nextExpiryMs(this.#snapshot);
    if (next !== undefined) this.#expiryTimer = setTimeout(() => this.#refresh(), Math.max(0, next + 1 - this.#snapshot.nowMs));
  }

  /**
   * Answers cues that a queued reply is waiting for. The queue lives in the mailbox, shared by every
   * window; the store uses a reply up in the same transaction as the answer, so two windows never
   * both deliver it.
   */
  #deliverQueued(mailbox: Mailbox, nowMs: number): void {
    const delivered = mailbox.deliverQueued((pending, queue) => queuedDeliveries(pending, queue, nowMs, this.cueTimeoutMs, this.#liveness(nowMs)));
    for (const d of delivered) this.#ctx.log.info(`cues: delivered the queued reply to ${d.agentId} (${d.requestId})`);
  }

  /** The pending entry for a request, read fresh (not from the snapshot). */
  #entry(requestId: string): CueEntry | undefined {
    return this.#requireMailbox().getRequest(requestId);
  }

  #requireMailbox(): Mailbox {
    if (!this.#mailbox) throw new Error(this.#error ?? 'the cue mailbox is not open');
    return this.#mailbox;
  }

  /**
   * Answers a cue with what the human picked, as the core composes it. Throws with a message for
   * the user when the cue cannot be answered (already answered, expired, a selection that does not fit).
   */
  async answer(requestId: string, selection: Selection, attachments: readonly string[]): Promise<void> {
    const mailbox = this.#requireMailbox();
    const entry = this.#entry(requestId);
    const why = whyNotAnswerable(entry, Date.now(), this.cueTimeoutMs, this.#liveness(Date.now()));
    if (why || !entry) throw new Error(why ?? 'unknown cue');
    if (selectionIsEmpty(selection) && attachments.length === 0) {
      throw new Error('nothing to send: pick an option or type a reply (End stops the agent instead)');
    }
    const text = composeAnswerText(entry.payload, selection);
    await mailbox.answer(requestId, { text, attachments });
    this.#refresh();
  }

  /** End: a cancelled response; the agent is told to pause. */
  cancel(requestId: string): void {
    const mailbox = this.#requireMailbox();
    const entry = this.#entry(requestId);
    if (!entry) throw new Error('this cue is no longer in the mailbox');
    if (entry.state !== 'pending') throw new Error(whyNotAnswerable(entry, Date.now(), this.cueTimeoutMs, this.#liveness(Date.now())) ?? 'this cue is not waiting');
    mailbox.cancel(requestId);
    this.#refresh();
  }

  /** Queues `text` for the agent's next cue (an empty text removes it), for every window. */
  queueReply(agentId: string, text: string): void {
    this.#requireMailbox().setQueued(agentId, text);
    this.#refresh();
  }

  /** Hides agents from the list until they cue again (every window sees it). */
  archiveAgents(agentIds: readonly string[]): void {
    this.#requireMailbox().archiveAgents(agentIds);
    this.#refresh();
  }

  unarchiveAgents(agentIds: readonly string[]): void {
    this.#requireMailbox().unarchiveAgents(agentIds);
    this.#refresh();
  }

  /**
   * Moves the reply queue this window kept in its own state (before the queue moved into the
   * mailbox) into the mailbox, once; a reply queued there since wins.
   */
  #moveOldQueue(mailbox: Mailbox, home: string): void {
    const key = `${OLD_QUEUE_KEY}:${home}`;
    const raw = this.#ctx.extension.globalState.get<unknown>(key);
    if (!raw || typeof raw !== 'object') return;
    try {
      const queued = mailbox.listQueue();
      for (const [agentId, value] of Object.entries(raw as Record<string, unknown>)) {
        const v = value as Partial<QueuedReply> | undefined;
        if (typeof v?.text === 'string' && typeof v.afterId === 'number' && !queued.has(agentId)) mailbox.setQueued(agentId, v.text, v.afterId);
      }
      void this.#ctx.extension.globalState.update(key, undefined);
    } catch (error) {
      this.#ctx.log.warn(`cues: could not move this window's queued replies into the mailbox yet: ${errorMessage(error)}`);
    }
  }

  #close(): void {
    if (this.#livenessTimer) clearInterval(this.#livenessTimer);
    this.#livenessTimer = undefined;
    this.#stopWatch?.();
    this.#stopWatch = undefined;
    this.#mailbox?.close();
    this.#mailbox = undefined;
  }

  dispose(): void {
    if (this.#opening) clearImmediate(this.#opening);
    if (this.#expiryTimer) clearTimeout(this.#expiryTimer);
    if (this.#livenessTimer) clearInterval(this.#livenessTimer);
    this.#close();
    this.#subscriptions.forEach((s) => s.dispose());
    this.#changed.dispose();
  }
}

/** "req_a:alive,req_b:gone": the liveness of each pending cue with a recorded waiter, to notice a change. */
function livenessKey(pending: readonly CueEntry[], liveness: LivenessOf): string {
  return pending.flatMap((e) => (e.waiter ? [`${e.requestId}:${liveness(e)}`] : [])).join(',');
}
