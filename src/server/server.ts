// Belay's language server for CodingAgent documents, over any LSP connection (IPC in the editor,
// an in-process stream pair in the tests).
import { fileURLToPath } from 'node:url';
import { CodeActionKind, CodeLensRefreshRequest, TextDocuments, TextDocumentSyncKind, type Connection } from 'vscode-languageserver';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { analyze, documentSymbols, foldingRanges, PlanCache, type Analysis, type RenameFix } from './analysis.ts';
import { complete, hover, ListingCache } from './assist.ts';
import {
  HandledBlocksNotification,
  handledBlocksSchema,
  RefreshLensesNotification,
  SettingsNotification,
  serverSettingsSchema,
  type Replay,
  type ServerSettings,
} from '../contracts/languageServer.ts';

/** How long after the last keystroke diagnostics are recomputed. */
const SETTLE_MS = 150;

export function startServer(connection: Connection): void {
  const documents = new TextDocuments(TextDocument);
  // Replaced by the client's initializationOptions. Without folders the session root setting is
  // never read: only answers inside a session root have a target.
  let settings: ServerSettings = { workspaceFolders: [], sessionRoot: '' };
  // Keyed by URI, but held for one document object and version: an answer closed and another opened
  // under the same URI (untitled documents reuse theirs) starts at version 1 again.
  const analyses = new Map<string, { document: TextDocument; version: number; analysis: Promise<Analysis> }>();
  const timers = new Map<string, NodeJS.Timeout>();
  const listings = new ListingCache();
  const plans = new PlanCache();
  const handled = new Map<string, Map<string, Replay | null>>();

  const filePath = (uri: string) => (uri.startsWith('file:') ? fileURLToPath(uri) : undefined);

  /** The analysis of the document's current version, computed once per version. */
  function analysisOf(document: TextDocument): Promise<Analysis> {
    const cached = analyses.get(document.uri);
    if (cached && cached.document === document && cached.version === document.version) return cached.analysis;
    const analysis = analyze({ uri: document.uri, text: document.getText(), documentPath: filePath(document.uri), settings, plans, handled: handled.get(document.uri) });
    analyses.set(document.uri, { document, version: document.version, analysis });
    return analysis;
  }

  async function publish(document: TextDocument): Promise<void> {
    const analysis = await analysisOf(document);
    const current = documents.get(document.uri);
    if (current !== document || current.version !== document.version) return;
    await connection.sendDiagnostics({ uri: document.uri, version: document.version, diagnostics: analysis.diagnostics });
  }

  function schedule(document: TextDocument, delay = SETTLE_MS): void {
    clearTimeout(timers.get(document.uri));
    timers.set(
      document.uri,
      setTimeout(() => {
        timers.delete(document.uri);
        publish(document).catch((error: unknown) => connection.console.error(`diagnostics failed: ${String(error)}`));
      }, delay),
    );
  }

  /**
   * Settings changed (everything is planned again), or files did (`changed`: only the blocks whose
   * paths they touch are): every open answer is analysed again.
   */
  function reanalyseAll(changed?: readonly string[]): void {
    analyses.clear();
    listings.clear();
    if (changed) plans.invalidate(changed);
    else plans.clear();
    for (const document of documents.all()) schedule(document, 50);
    void connection.sendRequest(CodeLensRefreshRequest.type).catch(() => undefined);
  }

  connection.onInitialize((params) => {
    const options = serverSettingsSchema.safeParse(params.initializationOptions);
    if (options.success) settings = options.data;
    return {
      capabilities: {
        textDocumentSync: TextDocumentSyncKind.Incremental,
        completionProvider: { triggerCharacters: ['[', '"', "'", '/', ' '] },
        hoverProvider: true,
        documentSymbolProvider: true,
        foldingRangeProvider: true,
        codeLensProvider: { resolveProvider: false },
        codeActionProvider: { codeActionKinds: [CodeActionKind.QuickFix] },
      },
      serverInfo: { name: 'Belay CodingAgent' },
    };
  });

  // Parameters are typed by their notification (src/contracts/languageServer.ts), but checked here, where they arrive.
  connection.onNotification(SettingsNotification.method, (params: unknown) => {
    const parsed = serverSettingsSchema.safeParse(params);
    if (!parsed.success) return;
    settings = parsed.data;
    reanalyseAll();
  });
  connection.onNotification(RefreshLensesNotification.method, () => {
    void connection.sendRequest(CodeLensRefreshRequest.type).catch(() => undefined);
  });
  connection.onNotification(HandledBlocksNotification.method, (params: unknown) => {
    const parsed = handledBlocksSchema.safeParse(params);
    if (!parsed.success) return;
    const replays = parsed.data.replays;
    handled.set(parsed.data.uri, new Map(parsed.data.keys.map((key, i) => [key, replays?.[i] ?? null])));
    analyses.delete(parsed.data.uri);
    const document = documents.get(parsed.data.uri);
    if (document) schedule(document, 0);
    void connection.sendRequest(CodeLensRefreshRequest.type).catch(() => undefined);
  });
  connection.onDidChangeWatchedFiles((params) => reanalyseAll(params.changes.flatMap((change) => filePath(change.uri) ?? [])));

  documents.onDidOpen((e) => schedule(e.document, 0));
  documents.onDidChangeContent((e) => schedule(e.document));
  documents.onDidClose((e) => {
    clearTimeout(timers.get(e.document.uri));
    timers.delete(e.document.uri);
    analyses.delete(e.document.uri);
    handled.delete(e.document.uri);
    void connection.sendDiagnostics({ uri: e.document.uri, diagnostics: [] });
  });

  const withDocument = <T>(uri: string, fallback: T, work: (document: TextDocument, analysis: Analysis) => Promise<T> | T): Promise<T> | T => {
    const document = documents.get(uri);
    if (!document) return fallback;
    return analysisOf(document).then((analysis) => work(document, analysis));
  };

  connection.onCodeLens((params) => withDocument(params.textDocument.uri, [], (_d, analysis) => analysis.lenses));
  connection.onDocumentSymbol((params) => withDocument(params.textDocument.uri, [], (document, analysis) => documentSymbols(analysis, document.getText())));
  connection.onFoldingRanges((params) => withDocument(params.textDocument.uri, [], (document, analysis) => foldingRanges(analysis, document.getText())));
  connection.onCompletion((params) => withDocument(params.textDocument.uri, [], (document, analysis) => complete(analysis, document.getText(), params.position, listings)));
  connection.onCodeAction((params) =>
    params.context.diagnostics.flatMap((diagnostic) => {
      const fix = diagnostic.data as RenameFix | undefined;
      if (diagnostic.source !== 'belay' || diagnostic.code !== 'unknown-command' || !fix?.edits) return [];
      return [{ title: `Change to ${fix.suggestion}`, kind: CodeActionKind.QuickFix, isPreferred: true, diagnostics: [diagnostic], edit: { changes: { [params.textDocument.uri]: fix.edits } } }];
    }),
  );
  connection.onHover((params) => withDocument(params.textDocument.uri, null, (_d, analysis) => hover(analysis, params.position)));

  documents.listen(connection);
  connection.onShutdown(() => {
    for (const timer of timers.values()) clearTimeout(timer);
    timers.clear();
  });
}
