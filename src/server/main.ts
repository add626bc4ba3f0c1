// The language server process (dist/server.js), started by the extension over IPC.
import { createConnection, ProposedFeatures } from 'vscode-languageserver/node';
import { startServer } from './server.ts';

const connection = createConnection(ProposedFeatures.all);
startServer(connection);
connection.listen();
