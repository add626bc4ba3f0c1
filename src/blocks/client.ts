// The language client: started on the first CodingAgent document, its server in dist/server.js
// over IPC. Its CodeLenses come from the server; the client adds what only the editor knows:
// which blocks were applied, and whether the workspace is trusted.
import * as vscode from 'vscode';
import type { LanguageClient, LanguageClientOptions } from 'vscode-languageclient/node';
import type { BelayContext } from '../context.ts';
import { HANDLED_NOTIFICATION, REFRESH_NOTIFICATION, SETTINGS_NOTIFICATION, type ServerSettings } from '../server/protocol.ts';
import type { BlockApplier } from './apply.ts';
import { decorateLenses, EXPLAIN_UNTRUSTED } from './lensDecoration.ts';

export { EXPLAIN_UNTRUSTED };

export class CodingAgentClient implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<LanguageClient> | undefined;
  private readonly ctx: BelayContext;
  private readonly applier: BlockApplier;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(ctx: BelayContext, applier: BlockApplier) {
    this.ctx = ctx;
    this.applier = applier;
    const startFor = (document: vscode.TextDocument) => {
      if (document.languageId === 'codingagent') void this.start();
    };
    vscode.workspace.textDocuments.forEach(startFor);
    this.subscriptions.push(
      vscode.workspace.onDidOpenTextDocument(startFor),
      applier.onDidChange((uri) => void this.client?.sendNotification(HANDLED_NOTIFICATION, { uri: uri.toString(), keys: applier.handledKeys(uri.toString()) })),
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.refreshLenses()),
      ctx.config.onDidChange('blocks.sessionRoot', () => void this.client?.sendNotification(SETTINGS_NOTIFICATION, this.settings())),
      vscode.workspace.onDidChangeWorkspaceFolders(() => void this.client?.sendNotification(SETTINGS_NOTIFICATION, this.settings())),
    );
  }

  private settings(): ServerSettings {
    return { workspaceFolders: (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath), sessionRoot: this.ctx.config.get('blocks.sessionRoot', vscode.workspace.workspaceFolders?.[0]) };
  }

  refreshLenses(): void {
    void this.client?.sendNotification(REFRESH_NOTIFICATION);
  }

  /** Starts the server once; later calls get the same client. */
  start(): Promise<LanguageClient> {
    this.starting ??= this.create();
    return this.starting;
  }

  private async create(): Promise<LanguageClient> {
    const watcher = vscode.workspace.createFileSystemWatcher('**/*');
    this.subscriptions.push(watcher);
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ language: 'codingagent' }],
      initializationOptions: this.settings(),
      synchronize: { fileEvents: watcher },
      outputChannel: this.ctx.log,
      middleware: {
        provideCodeLenses: async (document, token, next) => {
          const lenses = (await next(document, token)) ?? [];
          return this.decorate(document, lenses);
        },
      },
    };
    // The client library is its own bundle, loaded now rather than at activation.
    const { createLanguageClient } = require(this.ctx.extension.asAbsolutePath('dist/languageClient.js')) as typeof import('./languageClient.ts');
    const client = createLanguageClient(this.ctx.extension.asAbsolutePath('dist/server.js'), clientOptions);
    await client.start();
    this.client = client;
    this.ctx.log.info('CodingAgent language server started');
    return client;
  }

  /** Block states and trust on top of the server's lenses. */
  private decorate(document: vscode.TextDocument, lenses: vscode.CodeLens[]): vscode.CodeLens[] {
    const uri = document.uri.toString();
    return decorateLenses(lenses, (key) => this.applier.outcome(uri, key), vscode.workspace.isTrusted).map((lens) =>
      lens instanceof vscode.CodeLens ? lens : new vscode.CodeLens(lens.range, lens.command as vscode.Command),
    );
  }

  async dispose(): Promise<void> {
    this.subscriptions.splice(0).forEach((s) => s.dispose());
    const client = this.client;
    this.client = undefined;
    if (client) await client.stop().catch(() => undefined);
  }
}
