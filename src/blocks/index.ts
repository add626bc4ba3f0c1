import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import * as path from 'node:path';
import { errorMessage } from '../shared/errors.ts';
import { lazy } from '../shared/lazy.ts';
import { CommandShell, type CommandQuestions } from './commandShell.ts';
import { looksLikeAnswer } from './core/answerTarget.ts';
import { EXPLAIN_UNTRUSTED, LENS_COMMANDS } from './core/lenses.ts';
import { PLAN_SCHEME, PlannedContents } from './preview.ts';
import { readClipboard, SessionsView } from './sessions.ts';

/**
 * Command blocks in the editor: the CodingAgent language (its client and server started on the
 * first such document), CodeLens Apply / Preview / Run, Apply All / Preview All, and the session
 * loop. What only a block command needs (the applier, the parser, the planner) loads with the
 * first one, not at activation.
 */
export function registerBlocks(ctx: BelayContext): void {
  const previews = ctx.own(new PlannedContents());
  ctx.own(vscode.workspace.registerTextDocumentContentProvider(PLAN_SCHEME, previews));
  // The block states (their ledger and parser) and the applier load with the first answer or block command.
  const blocks = lazy(() => {
    const { Ledger } = require('./core/ledger.ts') as typeof import('./core/ledger.ts');
    const { BlockStates } = require('./states.ts') as typeof import('./states.ts');
    const { BlockApplier } = require('./apply.ts') as typeof import('./apply.ts');
    const storage = ctx.extension.storageUri ?? ctx.extension.globalStorageUri;
    const states = ctx.own(new BlockStates(ctx, new Ledger(path.join(storage.fsPath, 'blocks-ledger'))));
    return { states, applier: ctx.own(new BlockApplier(ctx, previews, states, shell)) };
  });
  const applier = () => blocks().applier;
  // The modal questions about commands go through one seam: Belay's host tests answer them.
  const questions: CommandQuestions = { ask: (message, options, ...items) => vscode.window.showWarningMessage(message, options, ...items) };
  const shell = new CommandShell(ctx, questions);
  ctx.exposeForTests('blocks', { questions, shell, get applier() { return applier(); } });
  const sessions = ctx.own(new SessionsView(ctx, shell));
  ctx.own(vscode.window.createTreeView('belay.sessions', { treeDataProvider: sessions, showCollapseAll: true }));

  // `{ confirmed: true }` skips the questions about shell commands and stale files: only for
  // Belay's own tests (the extension host runs them in test mode). Lenses never pass it.
  const testMode = ctx.extension.extensionMode === vscode.ExtensionMode.Test;
  // Send to Model and its settings load on first use.
  const models = lazy(() => {
    const { ModelSender } = require('./models.ts') as typeof import('./models.ts');
    return new ModelSender(ctx, sessions, applier);
  });
  ctx.registerCommands({
    [LENS_COMMANDS.apply]: (...args) => applier().apply(args),
    [LENS_COMMANDS.preview]: (...args) => applier().preview(args),
    [LENS_COMMANDS.run]: (...args) => applier().run(args),
    [LENS_COMMANDS.runAgain]: (...args) => applier().run(args, true),
    [LENS_COMMANDS.applyAll]: (uri, options) => applier().applyAll(uri, { confirmed: isConfirmed(options) && testMode, filesOnly: isFilesOnly(options) }),
    [LENS_COMMANDS.applyFilesOnly]: (uri, options) => applier().applyAll(uri, { confirmed: isConfirmed(options) && testMode, filesOnly: true }),
    [LENS_COMMANDS.previewAll]: (uri) => applier().previewAll(uri),
    [LENS_COMMANDS.open]: async (...args) => {
      const target = await applier().readTarget(args);
      await vscode.window.showTextDocument(vscode.Uri.file(target), { preview: true });
    },
    [LENS_COMMANDS.show]: (...args) => applier().showMessage(args),
    [LENS_COMMANDS.problem]: (...args) => applier().showProblem(args),
    [LENS_COMMANDS.openApplied]: async (file) => {
      if (typeof file === 'string') await vscode.window.showTextDocument(vscode.Uri.file(file), { preview: true });
    },
    [LENS_COMMANDS.undo]: (...args) => applier().undoBlock(args),
    [LENS_COMMANDS.undoAnswer]: (uri) => applier().undoAnswer(uri),
    'belay.blocks.applyPreviewed': (uri) => applier().applyPreviewed(uri, 'all'),
    'belay.blocks.applyPreviewedChanges': (uri) => applier().applyPreviewed(uri, 'pick'),
    'belay.blocks.applyPreviewedChange': (uri) => applier().applyPreviewed(uri, 'cursor'),
    // A locked lens: says why (the one wording per capability), with a way to manage trust.
    [EXPLAIN_UNTRUSTED]: (action) => ctx.trust.require(action === 'runCommands' ? 'runCommands' : 'applyBlocks'),
    'belay.blocks.openFromClipboard': async () => {
      const text = await readClipboard();
      if (text === undefined) return undefined;
      const document = await vscode.workspace.openTextDocument({ language: 'codingagent', content: text });
      await vscode.window.showTextDocument(document, { preview: false });
      return document.uri.toString();
    },
    'belay.blocks.sendToModel': (session) => models().send(session),
    'belay.blocks.chooseModel': (session) => models().chooseModelFor(session),
    'belay.blocks.setModelKey': (key) => models().setKey(ctx.extension.extensionMode === vscode.ExtensionMode.Test ? key : undefined),
    'belay.blocks.toggleAutoApply': (session) => models().toggleAutoApply(session),
    'belay.blocks.continueSession': async (uri, options) => {
      const outcome = await applier().continueSession(uri, isConfirmed(options) && testMode);
      if (!outcome) return undefined;
      // With a model chosen for the session the loop goes on by itself; otherwise the outbox is handed over.
      if (outcome.outboxPath && outcome.state.model) {
        sessions.refresh();
        await models().send(outcome.state.sessionId);
      } else {
        await sessions.report(outcome);
      }
      return outcome;
    },
    'belay.blocks.startSession': (task) => sessions.startSession(task),
    'belay.blocks.pasteAnswer': (text, options) => sessions.pasteAnswer(text, options),
    'belay.blocks.openOutbox': (sessionId) => sessions.openOutbox(sessionId),
    'belay.sessions.refresh': () => sessions.refresh(),
  });

  // The language client: its own bundle, loaded and started on the first CodingAgent document.
  let client: Promise<vscode.Disposable | undefined> | undefined;
  const startClient = (document: vscode.TextDocument) => {
    if (document.languageId !== 'codingagent' || client) return;
    const { startLanguageClient } = require(ctx.extension.asAbsolutePath('dist/languageClient.js')) as typeof import('./languageClient.ts');
    client = startLanguageClient(ctx, blocks().states).catch((error: unknown) => {
      ctx.log.error(`the CodingAgent language server did not start: ${errorMessage(error)}`);
      return undefined;
    });
  };
  ctx.own({ dispose: () => void client?.then((started) => started?.dispose()) });

  // Content detection: an untitled plain-text document that turns out to be an LLM answer.
  const detect = (document: vscode.TextDocument) => {
    if (document.languageId !== 'plaintext' || document.uri.scheme !== 'untitled') return;
    if (looksLikeAnswer(document.getText())) void vscode.languages.setTextDocumentLanguage(document, 'codingagent');
  };
  const opened = (document: vscode.TextDocument) => {
    startClient(document);
    detect(document);
  };
  ctx.own(vscode.workspace.onDidOpenTextDocument(opened));
  ctx.own(vscode.workspace.onDidChangeTextDocument((e) => detect(e.document)));
  ctx.own(ctx.trust.onDidGrant(() => sessions.syncInboxWatcher()));
  // The watchers and the documents already open are taken up just after activation, not during it.
  const soon = setTimeout(() => {
    try {
      sessions.start();
      vscode.workspace.textDocuments.forEach(opened);
    } catch (error) {
      ctx.log.error(`blocks: could not start: ${errorMessage(error)}`);
    }
  }, 0);
  ctx.own({ dispose: () => clearTimeout(soon) });
}

/** `{ confirmed: true }`: the caller has already asked about the answer's shell commands. */
function isConfirmed(options: unknown): boolean {
  return typeof options === 'object' && options !== null && (options as { confirmed?: unknown }).confirmed === true;
}

/** `{ filesOnly: true }`: apply the file blocks, run no command. */
function isFilesOnly(options: unknown): boolean {
  return typeof options === 'object' && options !== null && (options as { filesOnly?: unknown }).filesOnly === true;
}
