// Built as its own bundle (dist/languageClient.js) and loaded on the first CodingAgent document:
// vscode-languageclient is about half of what Belay would otherwise load at activation.
import { LanguageClient, TransportKind, type LanguageClientOptions } from 'vscode-languageclient/node';

export function createLanguageClient(serverModule: string, clientOptions: LanguageClientOptions): LanguageClient {
  return new LanguageClient(
    'belay.codingagent',
    'Belay CodingAgent',
    {
      run: { module: serverModule, transport: TransportKind.ipc },
      debug: { module: serverModule, transport: TransportKind.ipc, options: { execArgv: ['--nolazy', '--inspect=6019'] } },
    },
    clientOptions,
  );
}
