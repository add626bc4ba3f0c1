// The CodingAgent language client, built as its own bundle (dist/languageClient.js) and loaded on
// the first CodingAgent document: vscode-languageclient (and the JSON-RPC messages of lsp.ts) are
// about half of what Belay would otherwise load at activation. Its server is dist/server.js, over
// IPC. The CodeLenses come from the server; the client adds what only the editor knows: each
// block's state (derived from the files and the records), and whether the workspace is trusted.
import * as vscode from 'vscode';
import { LanguageClient, NotificationType, NotificationType0, TransportKind, type LanguageClientOptions } from 'vscode-languageclient/node';
import type { BelayContext } from '../context.ts';
import { errorMessage } from '../shared/errors.ts';
import type { BlockStates } from './states.ts';
import { decorateLenses, LENS_COMMANDS, type LensState } from './core/lenses.ts';
import { HandledBlocksNotification, RefreshLensesNotification, SettingsNotification, type ClientNotification, type ServerSettings } from '../contracts/languageServer.ts';

/** Starts the client and its server; disposing stops both. */
export async function startLanguageClient(ctx: BelayContext, states: BlockStates): Promise<vscode.Disposable> {
  const settings = (): ServerSettings => ({
    workspaceFolders: (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
    sessionRoot: ctx.config.get('blocks.sessionRoot', vscode.workspace.workspaceFolders?.[0]),
  });
  const watcher = vscode.workspace.createFileSystemWatcher('**/*');
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ language: 'codingagent' }],
    initializationOptions: settings(),
    synchronize: { fileEvents: watcher },
    outputChannel: ctx.log,
    middleware: {
      provideCodeLenses: async (document, token, next) => {
        const lenses = (await next(document, token)) ?? [];
        // Block states (derived from the files) and trust on top of the server's lenses.
        const view = await states.view(document).catch(() => undefined);
        const byKey = new Map<string, LensState>();
        for (const [index, settled] of view?.settled ?? []) byKey.set(view!.keys[index]!, settled);
        const decorated = decorateLenses(lenses, (key) => byKey.get(key), (action) => ctx.trust.refusal(action)).map((lens) =>
          lens instanceof vscode.CodeLens ? lens : new vscode.CodeLens(lens.range, lens.command as vscode.Command),
        );
        // An answer waiting in a session's inbox: what was done with it goes on to the session.
        const waiting = view?.answers;
        const first = view?.parsed.commands[0];
        if (waiting && first) {
          // An answer with DONE ends the session; otherwise its results go on (to the model when the session has one).
          const ends = view.parsed.commands.some((c) => c.type === 'DONE');
          const title = ends ? '$(pass) Complete Session' : waiting.model ? '$(send) Send Results to Model' : '$(arrow-right) Continue Session';
          const line = new vscode.Range(first.range.start.line, 0, first.range.start.line, 0);
          // After the answer-wide lenses (Apply All, Undo Answer, Preview All), before the first block's own.
          const answerWide = new Set<string>([LENS_COMMANDS.applyAll, LENS_COMMANDS.applyFilesOnly, LENS_COMMANDS.undoAnswer, LENS_COMMANDS.previewAll]);
          let at = 0;
          while (at < decorated.length && answerWide.has(decorated[at]!.command?.command ?? '')) at++;
          decorated.splice(at, 0, new vscode.CodeLens(line, { title, command: 'belay.blocks.continueSession', arguments: [document.uri.toString()], tooltip: `Give session ${waiting.sessionId} the results of this answer and write its next outbox` }));
        }
        return decorated;
      },
    },
  };
  const serverModule = ctx.extension.asAbsolutePath('dist/server.js');
  const client = new LanguageClient(
    'belay.codingagent',
    'Belay CodingAgent',
    {
      run: { module: serverModule, transport: TransportKind.ipc },
      debug: { module: serverModule, transport: TransportKind.ipc, options: { execArgv: ['--nolazy', '--inspect=6019'] } },
    },
    clientOptions,
  );
  const subscriptions: vscode.Disposable[] = [watcher];
  try {
    await client.start();
  } catch (error) {
    subscriptions.forEach((s) => s.dispose());
    throw error;
  }
  ctx.log.info('CodingAgent language server started');
  /** Sends one of the contract's notifications, its parameters typed by it (none for a `void` one). */
  const notify = <P>(notification: ClientNotification<P>, ...params: P extends void ? [] : [P]) => {
    const sent = params.length === 0 ? client.sendNotification(new NotificationType0(notification.method)) : client.sendNotification(new NotificationType<unknown>(notification.method), params[0]);
    void sent.catch((error: unknown) => ctx.log.warn(`notifying the language server failed: ${errorMessage(error)}`));
  };
  const sendSettings = () => notify(SettingsNotification, settings());
  subscriptions.push(
    states.onDidChange((uri) => {
      const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
      if (!document) return;
      void states.view(document).then((view) => {
        const settled = [...view.settled];
        notify(HandledBlocksNotification, { uri: uri.toString(), keys: settled.map(([i]) => view.keys[i]!), replays: settled.map(([, s]) => s.replay ?? null) });
      }, () => undefined);
    }),
    ctx.trust.onDidGrant(() => notify(RefreshLensesNotification)),
    ctx.config.onDidChange('blocks.sessionRoot', sendSettings),
    vscode.workspace.onDidChangeWorkspaceFolders(sendSettings),
  );
  return {
    dispose: () => {
      subscriptions.splice(0).forEach((s) => s.dispose());
      void client.stop().catch(() => undefined);
    },
  };
}
