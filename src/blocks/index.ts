import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { LENS_COMMANDS } from '../server/protocol.ts';
import { BlockApplier } from './apply.ts';
import { CodingAgentClient, EXPLAIN_UNTRUSTED } from './client.ts';
import { PLAN_SCHEME, PlannedContents } from './preview.ts';
import { SessionsView } from './sessions.ts';

/** A line that opens a command block, and one that closes one: both make a text an LLM answer. */
const OPENING = /^[ \t]*\[(CREATE_FILE|EDIT_FILE|DELETE_FILE|READ_FILE|RUN_COMMAND)[ \t\]]/m;
const CLOSING = /^[ \t]*\[\/(CREATE_FILE|EDIT_FILE|RUN_COMMAND)\][ \t]*$/m;
/** Content detection looks at this much of a document at most. */
const DETECT_CHARS = 200_000;

export function looksLikeAnswer(text: string): boolean {
  const head = text.length > DETECT_CHARS ? text.slice(0, DETECT_CHARS) : text;
  return OPENING.test(head) && (CLOSING.test(head) || /^[ \t]*\[(DELETE_FILE|READ_FILE)\b[^\]\n]*\]/m.test(head));
}

/**
 * Command blocks in the editor: the CodingAgent language (its server started on the first such
 * document), CodeLens Apply / Preview / Run, Apply All / Preview All, and the session loop.
 */
export function registerBlocks(ctx: BelayContext): void {
  const previews = ctx.own(new PlannedContents());
  ctx.own(vscode.workspace.registerTextDocumentContentProvider(PLAN_SCHEME, previews));
  const applier = ctx.own(new BlockApplier(ctx, previews));
  const client = ctx.own(new CodingAgentClient(ctx, applier));
  const sessions = ctx.own(new SessionsView(ctx));
  ctx.own(vscode.window.createTreeView('belay.sessions', { treeDataProvider: sessions, showCollapseAll: true }));

  ctx.registerCommand(LENS_COMMANDS.apply, (uri, line, key) => applier.apply(uri, line, key));
  ctx.registerCommand(LENS_COMMANDS.preview, (uri, line, key) => applier.preview(uri, line, key));
  ctx.registerCommand(LENS_COMMANDS.run, (uri, line, key) => applier.run(uri, line, key));
  ctx.registerCommand(LENS_COMMANDS.applyAll, (uri, options) => applier.applyAll(uri, isConfirmed(options)));
  ctx.registerCommand(LENS_COMMANDS.previewAll, (uri) => applier.previewAll(uri));
  ctx.registerCommand(LENS_COMMANDS.open, async (uri, line, key) => {
    const target = await applier.readTarget(uri, line, key);
    await vscode.window.showTextDocument(vscode.Uri.file(target), { preview: true });
  });
  ctx.registerCommand(LENS_COMMANDS.show, (uri, line, key) => applier.showMessage(uri, line, key));
  ctx.registerCommand(EXPLAIN_UNTRUSTED, async () => {
    const choice = await vscode.window.showWarningMessage(
      'This workspace is not trusted, so Belay only highlights and checks command blocks: applying them and running their commands is disabled.',
      'Manage Workspace Trust',
    );
    if (choice) await vscode.commands.executeCommand('workbench.trust.manage');
  });
  ctx.registerCommand('belay.blocks.openFromClipboard', async () => {
    const text = await vscode.env.clipboard.readText();
    if (text.trim() === '') throw new Error('The clipboard is empty: copy the LLM\'s whole answer first.');
    const document = await vscode.workspace.openTextDocument({ language: 'codingagent', content: text });
    await vscode.window.showTextDocument(document, { preview: false });
    return document.uri.toString();
  });
  ctx.registerCommand('belay.blocks.startSession', (task) => sessions.startSession(task));
  ctx.registerCommand('belay.blocks.pasteAnswer', (text) => sessions.pasteAnswer(text));
  ctx.registerCommand('belay.blocks.openOutbox', (sessionId) => sessions.openOutbox(sessionId));
  ctx.registerCommand('belay.sessions.refresh', () => sessions.refresh());

  // Content detection: an untitled plain-text document that turns out to be an LLM answer.
  const detect = (document: vscode.TextDocument) => {
    if (document.languageId !== 'plaintext' || document.uri.scheme !== 'untitled') return;
    if (looksLikeAnswer(document.getText())) void vscode.languages.setTextDocumentLanguage(document, 'codingagent');
  };
  vscode.workspace.textDocuments.forEach(detect);
  ctx.own(vscode.workspace.onDidOpenTextDocument(detect));
  ctx.own(vscode.workspace.onDidChangeTextDocument((e) => detect(e.document)));
  ctx.own(vscode.workspace.onDidCloseTextDocument((document) => applier.forget(document.uri)));
  ctx.own(vscode.workspace.onDidGrantWorkspaceTrust(() => sessions.syncInboxWatcher()));
  void client;
}

/**
 * `{ confirmed: true }` from a programmatic caller (a test, another extension acting for its
 * user) that has already asked the user about the answer's shell commands. Lenses never pass it.
 */
function isConfirmed(options: unknown): boolean {
  return typeof options === 'object' && options !== null && (options as { confirmed?: unknown }).confirmed === true;
}
