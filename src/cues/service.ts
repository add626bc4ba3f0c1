import * as os from 'node:os';
import * as vscode from 'vscode';
import { composeAnswerText, selectionIsEmpty, type Selection } from './core/answer.ts';
import { MailboxError } from './core/errors.ts';
import { mailboxPaths, type MailboxPaths } from './core/home.ts';
import { silenceSqliteExperimentalWarning } from './core/sqlite.ts';
import { Mailbox, type CueEntry } from './core/store.ts';
import type { BelayContext } from '../context.ts';
import { buildSnapshot, expandHomeSetting, HISTORY_LIMIT, isExpired, queuedDeliveries, whyNotAnswerable, EXPIRE_AFTER_MS, type PanelSnapshot, type QueuedReply } from './model.ts';

/**
 * Reads run on the extension host's thread and wait this long at most for another program's lock
 * (the core's default is 5 s, which would freeze the editor); a busy read is retried on the next change.
 */
export const PANEL_BUSY_TIMEOUT_MS = 400;
const QUEUE_KEY = 'belay.cues.queue';

/** Where the mailbox is for the `belay.cues.home` setting (empty: CUE_HOME, else ~/.cue). */
export function panelMailboxPaths(setting: string): MailboxPaths {
  const home = expandHomeSetting(setting, os.homedir());
  return mailboxPaths(home === undefined ? {} : { home });
}

/**
 * The one owner of the mailbox in the editor: one connection, one watch, one snapshot that the
 * panel, the badge, the status bar and the notifications all read. Answers go through here.
 */
export class CuesService implements vscode.Disposable {
  readonly #ctx: BelayContext;
  readonly #changed = new vscode.EventEmitter<PanelSnapshot>();
  /** Fires after every read of the mailbox that found a change (and after a re-open). */
  readonly onDidChange = this.#changed.event;
  #mailbox: Mailbox | undefined;
  #stopWatch: (() => void) | undefined;
  #paths: MailboxPaths | undefined;
  #error: string | undefined;
  #snapshot: PanelSnapshot = { nowMs: Date.now(), pending: [], agents: [], history: [], waitingCount: 0 };
  #pendingEntries: CueEntry[] = [];
  #queue: Map<string, QueuedReply>;
  #expiryTimer: NodeJS.Timeout | undefined;
  #refreshScheduled = false;
  #delivering = new Set<string>();
  #opening: NodeJS.Immediate | undefined;
  #loaded = false;
  readonly #subscriptions: vscode.Disposable[] = [];

  constructor(ctx: BelayContext) {
    this.#ctx = ctx;
    silenceSqliteExperimentalWarning();
    this.#queue = new Map();
    this.#subscriptions.push(
      ctx.config.onDidChange('cues.home', () => {
        if (this.#paths && panelMailboxPaths(ctx.config.get('cues.home')).home !== this.#paths.home) this.reopen();
      }),
    );
    // Opening the mailbox (SQLite, schema check, folder watch) waits until activation is done.
    this.#opening = setImmediate(() => {
      this.#opening = undefined;
      if (!this.#paths) this.reopen();
    });
  }

  /** True once the mailbox has been read at least once. */
  get loaded(): boolean {
    return this.#loaded;
  }

  get snapshot(): PanelSnapshot {
    return this.#snapshot;
  }

  /** The mailbox folder shown to the user (also when it could not be opened). */
  get home(): string {
    if (this.#paths) return this.#paths.home;
    try {
      return panelMailboxPaths(this.#ctx.config.get('cues.home')).home;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }

  get error(): string | undefined {
    return this.#error;
  }

  /** (Re)opens the mailbox named by the settings; failures become `error`, shown in the panel. */
  reopen(): void {
    this.#close();
    this.#error = undefined;
    try {
      this.#paths = panelMailboxPaths(this.#ctx.config.get('cues.home'));
      this.#queue = this.#loadQueue();
      this.#mailbox = Mailbox.open({ home: this.#paths.home, busyTimeoutMs: PANEL_BUSY_TIMEOUT_MS });
      this.#stopWatch = this.#mailbox.watch(() => this.refresh(), {
        onError: (error) => this.#ctx.log.debug(`cues: mailbox check failed, retrying: ${String(error)}`),
      });
      this.#ctx.log.info(`cues: watching the mailbox ${this.#paths.dbPath}`);
    } catch (error) {
      this.#error = error instanceof Error ? error.message : String(error);
      this.#ctx.log.error(`cues: cannot open the mailbox: ${this.#error}`);
    }
    this.refresh();
  }

  /** Reads the mailbox now; coalesces calls made in the same turn. */
  refresh(): void {
    if (this.#refreshScheduled) return;
    this.#refreshScheduled = true;
    queueMicrotask(() => {
      this.#refreshScheduled = false;
      this.#read();
    });
  }

  /** Reads the mailbox now (commands use this so they act on what is there, not on the last event). */
  readNow(): PanelSnapshot {
    try {
      if (panelMailboxPaths(this.#ctx.config.get('cues.home')).home !== this.#paths?.home) this.reopen();
    } catch {
      // No home: reopen already reported it.
    }
    this.#read();
    return this.#snapshot;
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
      this.#snapshot = buildSnapshot({ agents, pending, recent }, this.#queue, nowMs);
      this.#loaded = true;
    } catch (error) {
      // Busy past the short wait: keep what is shown; the next change or the watch's backstop reads again.
      this.#ctx.log.warn(`cues: reading the mailbox failed: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    this.#scheduleExpiry(nowMs);
    this.#changed.fire(this.#snapshot);
    this.#deliverQueued(nowMs);
  }

  /** Reads again when the oldest waiting cue expires, so the badge stops counting it. */
  #scheduleExpiry(nowMs: number): void {
    if (this.#expiryTimer) clearTimeout(this.#expiryTimer);
    this.#expiryTimer = undefined;
    const next = this.#pendingEntries
      .filter((e) => !isExpired(e, nowMs) && e.payload.kind !== 'pause' && e.createdAtMs !== undefined)
      .map((e) => e.createdAtMs! + EXPIRE_AFTER_MS + 1)
      .sort((a, b) => a - b)[0];
    if (next !== undefined) this.#expiryTimer = setTimeout(() => this.refresh(), Math.max(0, next - nowMs));
  }

  #deliverQueued(nowMs: number): void {
    for (const delivery of queuedDeliveries(this.#pendingEntries, this.#queue, nowMs)) {
      if (this.#delivering.has(delivery.requestId)) continue;
      this.#delivering.add(delivery.requestId);
      this.#queue.delete(delivery.agentId);
      void this.#saveQueue();
      this.answer(delivery.requestId, { text: delivery.text }, []).then(
        () => this.#ctx.log.info(`cues: delivered the queued reply to ${delivery.agentId} (${delivery.requestId})`),
        (error: unknown) => {
          // Not delivered (e.g. answered elsewhere first): keep the reply for the next cue.
          this.#ctx.log.warn(`cues: queued reply for ${delivery.agentId} not delivered: ${error instanceof Error ? error.message : String(error)}`);
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

  /** Pending entries from the last read (with their payloads), oldest first. */
  get pendingEntries(): readonly CueEntry[] {
    return this.#pendingEntries;
  }

  /**
   * Answers a cue with what the human picked, as the core composes it. Throws with a message for
   * the user when the cue cannot be answered (already answered, expired, a selection that does not fit).
   */
  async answer(requestId: string, selection: Selection, attachments: readonly string[]): Promise<void> {
    const mailbox = this.#requireMailbox();
    const entry = this.#entry(requestId);
    const why = whyNotAnswerable(entry, Date.now());
    if (why || !entry) throw new Error(why ?? 'unknown cue');
    if (selectionIsEmpty(selection) && attachments.length === 0) {
      throw new Error('nothing to send: pick an option or type a reply (End stops the agent instead)');
    }
    const text = composeAnswerText(entry.payload, selection);
    await mailbox.answer(requestId, { text, attachments });
    this.refresh();
  }

  /** End: a cancelled response; the agent is told to pause. */
  cancel(requestId: string): void {
    const mailbox = this.#requireMailbox();
    const entry = this.#entry(requestId);
    if (!entry) throw new Error('this cue is no longer in the mailbox');
    if (entry.state !== 'pending') throw new Error(whyNotAnswerable(entry, Date.now()) ?? 'this cue is not waiting');
    mailbox.cancel(requestId);
    this.refresh();
  }

  /** Queues `text` for the agent's next cue (an empty text removes it). */
  queueReply(agentId: string, text: string): void {
    if (text.trim() === '') this.#queue.delete(agentId);
    else this.#queue.set(agentId, { text: text.trim(), afterId: this.#maxRequestId() });
    void this.#saveQueue();
    this.refresh();
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

/** A message for the user from anything a cue action threw. */
export function describeError(error: unknown): string {
  if (error instanceof MailboxError) return error.message;
  return error instanceof Error ? error.message : String(error);
}
