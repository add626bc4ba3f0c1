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
import type { CommandShell } from './commandShell.ts';

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

  private readonly shell: CommandShell;

  constructor(ctx: BelayContext, shell: CommandShell) {
    this.ctx = ctx;
    this.shell = shell;
    ctx.own(ctx.config.onDidChange(['blocks.sessionRoot', 'blocks.watchInbox'], () => {
      this.watchFiles();
      this.refresh();
      this.syncInboxWatcher();
    }));
  }

  /** Starts watching the session files (and the inbox, when asked to): just after activation, not during it. */
  start(): void {
    this.watchFiles();
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
    const item = new vscode.TreeItem(firstLine(s.task, 70), s.lastResults.length > 0 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
    const failed = s.lastResults.filter((r) => !r.success).length;
    item.description = `${s.sessionId} · #${s.sequenceNumber} · ${s.isComplete ? 'complete' : 'open'}${s.lastResults.length ? ` · ${s.lastResults.length - failed} OK, ${failed} failed` : ''}${!s.isComplete && s.autoApplyFiles ? ' · auto-apply files' : ''}`;
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

  requireRoot(): string {
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

  /**
   * Saves the clipboard (or the given text) to the inbox of the session it answers, processes it,
   * hands over the next outbox. The session is the one named (`{ sessionId }`, or a Sessions view
   * item), else the one whose outbox or answer is in the active editor, else the person picks one:
   * never a guess. A completed session takes no answer: the person is told, with a way on.
   */
  async pasteAnswer(given?: unknown, options?: unknown): Promise<StepOutcome | undefined> {
    if (!this.ctx.trust.require('continueSession')) return undefined;
    const named = sessionIdOf(given) ?? sessionIdOf(options);
    // Text given by a caller (Belay's tests) was confirmed there; the clipboard's is asked about.
    const fromClipboard = typeof given !== 'string';
    const answer = fromClipboard ? await readClipboard() : given;
    if (answer === undefined) return undefined;
    const parsed = parser().parseAnswer(answer);
    if (parsed.commands.length === 0 && parsed.errors.length === 0) {
      throw new Error('The clipboard holds no command blocks: copy the LLM\'s whole answer, then run this again.');
    }
    const chosen = await this.sessionMeant(named, 'Which session is this answer for?');
    if (!chosen) return undefined;
    if (chosen.session.isComplete) {
      this.offerOtherSession(chosen, answer, fromClipboard);
      return undefined;
    }
    return this.submit(chosen, answer, fromClipboard);
  }

  /**
   * The session a command means: the one named; else the one whose outbox or answer is in the
   * active editor; else the one the person picks among the open ones (undefined when dismissed).
   */
  async sessionMeant(named: string | undefined, title: string): Promise<{ root: string; session: SessionState } | undefined> {
    const root = this.requireRoot();
    const { loadSession, sessionLayout, sessionOfDocument } = core();
    if (named !== undefined) return { root, session: await loadSession(sessionLayout(root), named) };
    const document = vscode.window.activeTextEditor?.document;
    const place = document && sessionOfDocument(document.uri.scheme === 'file' ? document.uri.fsPath : undefined, document.getText());
    if (place) return { root: place.root ?? root, session: await loadSession(sessionLayout(place.root ?? root), place.sessionId) };
    return this.pickSession(root, title);
  }

  /** Says that a completed session took nothing; the person may pick an open one or start one. */
  private offerOtherSession(completed: { root: string; session: SessionState }, answer: string, confirmRuns: boolean): void {
    const id = completed.session.sessionId;
    const other = 'Choose an Open Session…';
    const fresh = 'Start a New Session';
    void vscode.window.showWarningMessage(`Session ${id} is complete: it takes no new answer. Nothing was applied.`, other, fresh).then(async (choice) => {
      try {
        if (choice === fresh) await this.startSession();
        if (choice !== other) return;
        const chosen = await this.pickSession(completed.root, `Session ${id} is complete: which open session is this answer for?`);
        if (chosen) await this.submit(chosen, answer, confirmRuns);
      } catch (error) {
        void vscode.window.showErrorMessage(`Belay: ${errorMessage(error)}`);
      }
    });
  }

  /** Applies an answer to an open session, after asking about its shell commands when `confirmRuns`. */
  private async submit(chosen: { root: string; session: SessionState }, answer: string, confirmRuns: boolean): Promise<StepOutcome | undefined> {
    const { session } = chosen;
    const runs = parser().parseAnswer(answer).commands.filter((c) => c.type === 'RUN_COMMAND');
    // The session loop never asks about the network: the workspace's answer, else none.
    const shell = (await this.shell.policy(false))!;
    if (runs.length > 0 && confirmRuns) {
      const list = runs.map((c) => `$ ${'body' in c ? c.body.text : ''}`).join('\n');
      const choice = await this.shell.questions.ask(
        `This answer runs ${runs.length} command${runs.length === 1 ? '' : 's'} in the workspace of session ${session.sessionId}. Apply it?`,
        { modal: true, detail: `${list}\n\n${await this.shell.describe(shell)}` },
        'Apply and Run',
      );
      if (choice !== 'Apply and Run') return undefined;
    }
    const { answerFileName, sessionLayout, stepSession } = core();
    const layout = sessionLayout(chosen.root);
    const file = path.join(layout.inbox, answerFileName(session.sessionId, session.sequenceNumber));
    await fs.mkdir(layout.inbox, { recursive: true });
    await writeFileAtomic(file, answer);
    const outcome = await stepSession(chosen.root, answer, { sessionId: session.sessionId, source: file, shell });
    await this.report(outcome);
    return outcome;
  }

  /** A quick pick of the open sessions under the root (newest first); undefined when dismissed. */
  private async pickSession(root: string, title: string): Promise<{ root: string; session: SessionState } | undefined> {
    const open = (await core().listSessions(root)).filter((s) => !s.isComplete);
    if (open.length === 0) {
      const start = 'Start Session';
      const choice = await vscode.window.showWarningMessage(`No open session under ${root}: an answer needs one.`, start);
      if (choice === start) await this.startSession();
      return undefined;
    }
    const picked = await vscode.window.showQuickPick(
      open.map((session) => ({ label: firstLine(session.task, 80), description: `${session.sessionId} · #${session.sequenceNumber}`, detail: `updated ${new Date(session.updatedAt).toLocaleString()}`, session })),
      { title, placeHolder: 'The answer is applied to the workspace of the session you pick', matchOnDescription: true },
    );
    return picked && { root, session: picked.session };
  }

  /** After a step: the Sessions view is refreshed, the next outbox handed over (or the end said). */
  async report(outcome: StepOutcome): Promise<void> {
    this.refresh();
    const results = outcome.report?.results ?? [];
    const failed = results.filter((r) => !r.success).length;
    const how = outcome.report?.shell ? `\nRUN_COMMAND: ${outcome.report.shell}` : '';
    this.ctx.log.info(`session ${outcome.state.sessionId}: ${outcome.kind}${how}\n${results.map((r) => formatResult(r)).join('\n')}`);
    // Commands that ran outside the sandbox say so where the person looks.
    const unsandboxed = outcome.report?.shell && !outcome.report.shell.startsWith('Sandboxed') ? ` ${outcome.report.shell}.` : '';
    const summary = outcome.kind === 'duplicate' ? 'This answer was applied before; nothing was applied again.' : `${results.length - failed} OK, ${failed} failed.${unsandboxed}`;
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
        const shell = (await this.shell.policy(false))!;
        await watchSession(root, { sessionId: session.sessionId, signal: controller.signal, shell, onStep: (outcome) => void this.report(outcome) });
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

/** A session id given to a command: a string of 8 hex, `{ sessionId }`, or a Sessions view item. */
export function sessionIdOf(value: unknown): string | undefined {
  if (typeof value === 'string') return /^[0-9a-f]{8}$/.test(value) ? value : undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as { sessionId?: unknown; session?: { sessionId?: unknown } };
  const id = record.sessionId ?? record.session?.sessionId;
  return typeof id === 'string' && /^[0-9a-f]{8}$/.test(id) ? id : undefined;
}

function firstLine(text: string, max: number): string {
  const line = text.trim().split('\n', 1)[0] ?? '';
  return line.length > max ? `${line.slice(0, max - 3)}...` : line;
}

/**
 * The clipboard's text. Empty is not always empty: in a browser VS Code reads the clipboard only
 * when the site may (it has then already said so, and reads nothing), so the message names both
 * causes there and offers an editor to paste into, which needs no permission.
 */
export async function readClipboard(): Promise<string | undefined> {
  const text = await vscode.env.clipboard.readText();
  if (text.trim() !== '') return text;
  if (vscode.env.uiKind !== vscode.UIKind.Web) throw new Error('The clipboard is empty: copy the LLM\'s whole answer first.');
  const paste = 'Paste into an Editor';
  const choice = await vscode.window.showErrorMessage(
    'Belay read no text from the clipboard: the browser did not let VS Code read it (allow clipboard access for this site), or the clipboard is empty.',
    paste,
  );
  if (choice === paste) {
    const document = await vscode.workspace.openTextDocument({ language: 'codingagent', content: '' });
    await vscode.window.showTextDocument(document, { preview: false });
  }
  return undefined;
}
