import * as os from 'node:os';
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { errorMessage } from '../shared/errors.ts';
import { lazy } from '../shared/lazy.ts';
import { composeAnswerText, selectionIsEmpty, type Selection } from './core/answer.ts';
import { CUE_TIMEOUT_MS, cueTimeoutMs } from './core/expiry.ts';
import { mailboxPathsForSetting, type MailboxPaths } from './core/home.ts';
import { buildSnapshot, HISTORY_LIMIT, nextExpiryMs, queuedDeliveries, whyNotAnswerable, type CuesSnapshot, type QueuedReply } from './core/model.ts';
import type { CueEntry, Mailbox } from './core/store.ts';

/**
 * Reads run on the extension host's thread and wait this long at most for another program's lock
 * (the core's default is 5 s, which would freeze the editor); a busy read is retried on the next change.
 */
const BUSY_TIMEOUT_MS = 400;
const QUEUE_KEY = 'belay.cues.queue';

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
  #queue: Map<string, QueuedReply>;
  #expiryTimer: NodeJS.Timeout | undefined;
  #refreshScheduled = false;
  #delivering = new Set<string>();
  #opening: NodeJS.Immediate | undefined;
  #loaded = false;
  readonly #subscriptions: vscode.Disposable[] = [];

  /** How long a cue is waited for: cues older than this are expired (core/expiry.ts). */
  readonly cueTimeoutMs: number;

  constructor(ctx: BelayContext) {
    this.#ctx = ctx;
    this.cueTimeoutMs = editorCueTimeoutMs(ctx);
    this.#queue = new Map();
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
      this.#queue = this.#loadQueue();
      this.#mailbox = mailboxStore().Mailbox.open({ home: this.#paths.home, busyTimeoutMs: BUSY_TIMEOUT_MS });
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
      const pending = mailbox.listRequests({ pendingOnly: true });
      const recent = mailbox.listRequests({ limit: HISTORY_LIMIT });
      const agents = mailbox.listAgents();
      this.#pendingEntries = pending;
      this.#snapshot = buildSnapshot({ agents, pending, recent }, this.#queue, nowMs, this.cueTimeoutMs);
      this.#loaded = true;
    } catch (error) {
      // Busy past the short wait: keep what is shown; the next change or the watch's backstop reads again.
      this.#ctx.log.warn(`cues: reading the mailbox failed: ${errorMessage(error)}`);
      return;
    }
    this.#scheduleExpiry();
    this.#changed.fire(this.#snapshot);
    this.#deliverQueued(nowMs);
  }

  /** Reads again just after the first waiting cue expires, so the badge stops counting it. */
  #scheduleExpiry(): void {
    if (this.#expiryTimer) clearTimeout(this.#expiryTimer);
    this.#expiryTimer = undefined;
    const next = nextExpiryMs(this.#snapshot);
    if (next !== undefined) this.#expiryTimer = setTimeout(() => this.#refresh(), Math.max(0, next + 1 - this.#snapshot.nowMs));
  }

  #deliverQueued(nowMs: number): void {
    for (const delivery of queuedDeliveries(this.#pendingEntries, this.#queue, nowMs, this.cueTimeoutMs)) {
      if (this.#delivering.has(delivery.requestId)) continue;
      this.#delivering.add(delivery.requestId);
      this.#queue.delete(delivery.agentId);
      void this.#saveQueue();
      this.answer(delivery.requestId, { text: delivery.text }, []).then(
        () => this.#ctx.log.info(`cues: delivered the queued reply to ${delivery.agentId} (${delivery.requestId})`),
        (error: unknown) => {
          // Not delivered (e.g. answered elsewhere first): keep the reply for the next cue.
          this.#ctx.log.warn(`cues: queued reply for ${delivery.agentId} not delivered: ${errorMessage(error)}`);
          if (!this.#queue.has(delivery.agentId)) this.queueReply(delivery.agentId, delivery.text);
        },
      ).finally(() => this.#delivering.delete(delivery.requestId));
    }
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
    const why = whyNotAnswerable(entry, Date.now(), this.cueTimeoutMs);
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
    if (entry.state !== 'pending') throw new Error(whyNotAnswerable(entry, Date.now(), this.cueTimeoutMs) ?? 'this cue is not waiting');
    mailbox.cancel(requestId);
    this.#refresh();
  }

  /** Queues `text` for the agent's next cue (an empty text removes it). */
  queueReply(agentId: string, text: string): void {
    if (text.trim() === '') this.#queue.delete(agentId);
    else this.#queue.set(agentId, { text: text.trim(), afterId: this.#maxRequestId() });
    void this.#saveQueue();
    this.#refresh();
  }

  #maxRequestId(): number {
    const mailbox = this.#mailbox;
    if (!mailbox) return 0;
    const newest = mailbox.listRequests({ limit: 1 })[0];
    return newest?.id ?? 0;
  }

  #queueKey(): string {
    return `${QUEUE_KEY}:${this.#paths?.home ?? ''}`;
  }

  #loadQueue(): Map<string, QueuedReply> {
    const raw = this.#ctx.extension.globalState.get<unknown>(this.#queueKey());
    const map = new Map<string, QueuedReply>();
    if (raw && typeof raw === 'object') {
      for (const [agentId, value] of Object.entries(raw as Record<string, unknown>)) {
        const v = value as Partial<QueuedReply> | undefined;
        if (typeof v?.text === 'string' && typeof v.afterId === 'number') map.set(agentId, { text: v.text, afterId: v.afterId });
      }
    }
    return map;
  }

  async #saveQueue(): Promise<void> {
    await this.#ctx.extension.globalState.update(this.#queueKey(), Object.fromEntries(this.#queue));
  }

  #close(): void {
    this.#stopWatch?.();
    this.#stopWatch = undefined;
    this.#mailbox?.close();
    this.#mailbox = undefined;
  }

  dispose(): void {
    if (this.#opening) clearImmediate(this.#opening);
    if (this.#expiryTimer) clearTimeout(this.#expiryTimer);
    this.#close();
    this.#subscriptions.forEach((s) => s.dispose());
    this.#changed.dispose();
  }
}
