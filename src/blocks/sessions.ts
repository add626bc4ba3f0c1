// The session loop in the editor: the Sessions view, Start Session, Paste LLM Answer, and the
// optional inbox watcher. Everything that touches session files goes through the core (the same
// code as `belay session`).
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { writeFileAtomic } from '../shared/atomic.ts';
import { errorMessage } from '../shared/errors.ts';
import { formatResult, type CommandResult } from './core/results.ts';
import type { SessionState, StepOutcome } from './core/session.ts';

// The session core (which checks session files with zod) and the parser load when first used.
const core = () => require('./core/session.ts') as typeof import('./core/session.ts');
const parser = () => require('./core/parser.ts') as typeof import('./core/parser.ts');

type Node = { kind: 'session'; session: SessionState } | { kind: 'result'; result: CommandResult; index: number } | { kind: 'note'; text: string };

export class SessionsView implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly ctx: BelayContext;
  private watcher: vscode.FileSystemWatcher | undefined;
  private watching: AbortController | undefined;

  constructor(ctx: BelayContext) {
    this.ctx = ctx;
    this.watchFiles();
    ctx.own(ctx.config.onDidChange(['blocks.sessionRoot', 'blocks.watchInbox'], () => {
      this.watchFiles();
      this.refresh();
      this.syncInboxWatcher();
    }));
    this.syncInboxWatcher();
  }

  /** The session root: the setting, relative to the first workspace folder. */
  private root(): string | undefined {
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!folder) return undefined;
    return path.resolve(folder.uri.fsPath, this.ctx.config.get('blocks.sessionRoot', folder));
  }

  private watchFiles(): void {
    this.watcher?.dispose();
    const root = this.root();
    if (!root) return;
    this.watcher = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(vscode.Uri.file(root), 'sessions/*.json'));
    const refresh = () => this.refresh();
    this.watcher.onDidChange(refresh);
    this.watcher.onDidCreate(refresh);
    this.watcher.onDidDelete(refresh);
  }

  refresh(): void {
    this.changed.fire(undefined);
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === 'note') return new vscode.TreeItem(node.text);
    if (node.kind === 'result') {
      const r = node.result;
      const item = new vscode.TreeItem(`${r.commandType}: ${r.summary.split('\n', 1)[0]}`);
      item.iconPath = r.success ? new vscode.ThemeIcon('pass', new vscode.ThemeColor('testing.iconPassed')) : new vscode.ThemeIcon('error', new vscode.ThemeColor('testing.iconFailed'));
      item.tooltip = formatResult(r);
      return item;
    }
    const s = node.session;
    const firstLine = s.task.trim().split('\n', 1)[0] ?? '';
    const item = new vscode.TreeItem(firstLine.length > 70 ? `${firstLine.slice(0, 67)}...` : firstLine, s.lastResults.length > 0 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
    const failed = s.lastResults.filter((r) => !r.success).length;
    item.description = `${s.sessionId} · #${s.sequenceNumber} · ${s.isComplete ? 'complete' : 'open'}${s.lastResults.length ? ` · ${s.lastResults.length - failed} OK, ${failed} failed` : ''}`;
    item.iconPath = new vscode.ThemeIcon(s.isComplete ? 'pass-filled' : 'comment-discussion');
    item.contextValue = s.isComplete ? 'belay.session.complete' : 'belay.session.open';
    item.tooltip = new vscode.MarkdownString().appendText(`${s.task}\n\nSession ${s.sessionId}, sequence ${s.sequenceNumber}, updated ${s.updatedAt}`);
    item.command = { title: 'Open Latest Outbox', command: 'belay.blocks.openOutbox', arguments: [s.sessionId] };
    item.id = s.sessionId;
    return item;
  }

  async getChildren(node?: Node): Promise<Node[]> {
    if (node?.kind === 'session') return node.session.lastResults.map((result, index) => ({ kind: 'result', result, index }));
    if (node) return [];
    this.ctx.markViewResolved('belay.sessions');
    const root = this.root();
    if (!root) return [];
    return (await core().listSessions(root)).map((session) => ({ kind: 'session', session }));
  }

  private requireRoot(): string {
    const root = this.root();
    if (!root) throw new Error('Open a folder first: sessions live under it (belay.blocks.sessionRoot).');
    return root;
  }

  /** Opens the outbox and copies it, ready to paste into the LLM chat. */
  private async hand(outbox: string, what: string): Promise<void> {
    const text = await fs.readFile(outbox, 'utf8');
    const copied = await Promise.resolve(vscode.env.clipboard.writeText(text)).then(
      () => true,
      (error: unknown) => {
        this.ctx.log.warn(`could not copy the outbox: ${errorMessage(error)}`);
        return false;
      },
    );
    const document = await vscode.workspace.openTextDocument(vscode.Uri.file(outbox));
    await vscode.window.showTextDocument(document, { preview: false });
    const how = copied ? 'is copied: paste it' : 'is open (copying it failed: select all and copy it)';
    void vscode.window.showInformationMessage(`${what} Outbox ${path.basename(outbox)} ${how} into your LLM chat, copy its whole answer, then run "Belay: Paste LLM Answer".`);
  }

  async startSession(task?: unknown): Promise<SessionState | undefined> {
    const root = this.requireRoot();
    const text =
      typeof task === 'string'
        ? task
        : await vscode.window.showInputBox({ title: 'Belay: Start Session', prompt: 'What should the LLM do in the session workspace?', placeHolder: 'e.g. Write a Python CLI that counts words in a file, with tests', ignoreFocusOut: true, validateInput: (v) => (v.trim() === '' ? 'Describe the task' : undefined) });
    if (text === undefined) return undefined;
    const { state, outboxPath: outbox } = await core().startSession(root, text, { runTimeoutSeconds: this.ctx.config.get('blocks.runTimeoutSeconds', vscode.workspace.workspaceFolders?.[0]) });
    this.refresh();
    await this.hand(outbox, `Session ${state.sessionId} started.`);
    this.syncInboxWatcher();
    return state;
  }

  /** Saves the clipboard (or the given text) to the inbox, processes it, hands over the next outbox. */
  async pasteAnswer(given?: unknown): Promise<StepOutcome | undefined> {
    if (!this.ctx.trust.require('continueSession')) return undefined;
    const root = this.requireRoot();
    const answer = typeof given === 'string' ? given : await vscode.env.clipboard.readText();
    const { findSession, sessionLayout, stepSession } = core();
    const parsed = parser().parseAnswer(answer);
    if (parsed.commands.length === 0 && parsed.errors.length === 0) {
      throw new Error('The clipboard holds no command blocks: copy the LLM\'s whole answer, then run this again.');
    }
    const session = await findSession(root);
    const runs = parsed.commands.filter((c) => c.type === 'RUN_COMMAND');
    if (runs.length > 0 && typeof given !== 'string') {
      const list = runs.map((c) => `$ ${'body' in c ? c.body.text : ''}`).join('\n');
      const choice = await vscode.window.showWarningMessage(`This answer runs ${runs.length} command${runs.length === 1 ? '' : 's'} in the session workspace. Apply it?`, { modal: true, detail: list }, 'Apply and Run');
      if (choice !== 'Apply and Run') return undefined;
    }
    const layout = sessionLayout(root);
    const file = path.join(layout.inbox, `${session.sessionId}_answer${String(session.sequenceNumber).padStart(4, '0')}_${Date.now()}.txt`);
    await fs.mkdir(layout.inbox, { recursive: true });
    await writeFileAtomic(file, answer);
    const outcome = await stepSession(root, answer, { sessionId: session.sessionId, source: file });
    await this.report(outcome);
    return outcome;
  }

  private async report(outcome: StepOutcome): Promise<void> {
    this.refresh();
    const results = outcome.report?.results ?? [];
    const failed = results.filter((r) => !r.success).length;
    this.ctx.log.info(`session ${outcome.state.sessionId}: ${outcome.kind}\n${results.map((r) => formatResult(r)).join('\n')}`);
    const summary = outcome.kind === 'duplicate' ? 'This answer was applied before; nothing was applied again.' : `${results.length - failed} OK, ${failed} failed.`;
    if (outcome.outboxPath) await this.hand(outcome.outboxPath, summary);
    else void vscode.window.showInformationMessage(`Session ${outcome.state.sessionId} is complete. ${summary}`);
  }

  async openOutbox(sessionId?: unknown): Promise<void> {
    const root = this.requireRoot();
    const { findSession, outboxPath, sessionLayout } = core();
    const state = await findSession(root, typeof sessionId === 'string' ? sessionId : undefined);
    const outbox = outboxPath(sessionLayout(root), state);
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(vscode.Uri.file(outbox)), { preview: false });
  }

  /** The inbox watcher: on when the setting says so, the workspace is trusted and a session is open. */
  syncInboxWatcher(): void {
    const refusal = this.ctx.trust.refusal('watchInbox');
    const wanted = this.ctx.config.get('blocks.watchInbox', vscode.workspace.workspaceFolders?.[0]);
    if (!wanted || refusal !== undefined) {
      if (wanted) this.ctx.log.info(refusal!);
      this.watching?.abort();
      this.watching = undefined;
      return;
    }
    if (this.watching) return;
    const root = this.root();
    if (!root) return;
    const controller = new AbortController();
    this.watching = controller;
    void (async () => {
      const { findSession, sessionLayout, watchSession } = core();
      try {
        const session = await findSession(root);
        this.ctx.log.info(`watching ${sessionLayout(root).inbox} for answers to session ${session.sessionId}`);
        await watchSession(root, { sessionId: session.sessionId, signal: controller.signal, onStep: (outcome) => void this.report(outcome) });
      } catch (error) {
        this.ctx.log.info(`inbox watcher idle: ${errorMessage(error)}`);
      } finally {
        if (this.watching === controller) this.watching = undefined;
      }
    })();
  }

  dispose(): void {
    this.watching?.abort();
    this.watcher?.dispose();
    this.changed.dispose();
  }
}
