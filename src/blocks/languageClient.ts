// The CodingAgent language client, built as its own bundle (dist/languageClient.js) and loaded on
// the first CodingAgent document: vscode-languageclient (and the JSON-RPC messages of lsp.ts) are
// about half of what Belay would otherwise load at activation. Its server is dist/server.js, over
// IPC. The CodeLenses come from the server; the client adds what only the editor knows: which
// blocks were handled, and whether the workspace is trusted.
import * as vscode from 'vscode';
import { LanguageClient, TransportKind, type LanguageClientOptions } from 'vscode-languageclient/node';
import type { BelayContext } from '../context.ts';
import { errorMessage } from '../shared/errors.ts';
import type { BlockApplier } from './apply.ts';
import { decorateLenses } from './core/lenses.ts';
import { HandledBlocksNotification, RefreshLensesNotification, SettingsNotification, type ServerSettings } from './core/lsp.ts';

/** Starts the client and its server; disposing stops both. */
export async function startLanguageClient(ctx: BelayContext, applier: BlockApplier): Promise<vscode.Disposable> {
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
        const uri = document.uri.toString();
        // Block states and trust on top of the server's lenses.
        return decorateLenses(lenses, (key) => applier.outcome(uri, key), (action) => ctx.trust.refusal(action)).map((lens) =>
          lens instanceof vscode.CodeLens ? lens : new vscode.CodeLens(lens.range, lens.command as vscode.Command),
        );
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
  const notify = (sent: Promise<void>) => void sent.catch((error: unknown) => ctx.log.warn(`notifying the language server failed: ${errorMessage(error)}`));
  const sendSettings = () => notify(client.sendNotification(SettingsNotification, settings()));
  subscriptions.push(
    applier.onDidChange((uri) => notify(client.sendNotification(HandledBlocksNotification, { uri: uri.toString(), keys: applier.handledKeys(uri.toString()) }))),
    ctx.trust.onDidGrant(() => notify(client.sendNotification(RefreshLensesNotification))),
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
