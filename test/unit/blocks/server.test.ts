// The language server's logic over a real LSP connection, in process: no editor involved.
import assert from 'node:assert/strict';
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { createConnection } from 'vscode-languageserver/node';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from 'vscode-jsonrpc/node';
import type { CodeLens, CompletionItem, Diagnostic, DocumentSymbol, FoldingRange, Hover, PublishDiagnosticsParams } from 'vscode-languageserver';
import { blockKeys } from '../../../src/blocks/core/blockKey.ts';
import { parseAnswer } from '../../../src/blocks/core/parser.ts';
import { HandledBlocksNotification } from '../../../src/contracts/languageServer.ts';
import { startServer } from '../../../src/server/server.ts';
import { sessionWithChangedFile, tempDir } from '../../support/blocks/helpers.ts';

/** A diagnostic's message as text (LSP allows Markdown there too). */
const text_ = (message: string | { value: string }) => (typeof message === 'string' ? message : message.value);

interface Client {
  rpc: MessageConnection;
  open(file: string, text: string): Promise<Diagnostic[]>;
  change(uri: string, version: number, text: string): Promise<Diagnostic[]>;
  next(uri: string): Promise<Diagnostic[]>;
  close(): void;
}

async function startPair(workspaceFolders: string[]): Promise<Client> {
  const toServer = new PassThrough();
  const toClient = new PassThrough();
  const server = createConnection(new StreamMessageReader(toServer), new StreamMessageWriter(toClient));
  startServer(server);
  server.listen();
  const rpc = createMessageConnection(new StreamMessageReader(toClient), new StreamMessageWriter(toServer));
  const waiting = new Map<string, Array<(p: PublishDiagnosticsParams) => void>>();
  rpc.onNotification('textDocument/publishDiagnostics', (p: PublishDiagnosticsParams) => {
    const list = waiting.get(p.uri);
    if (list?.length) list.shift()!(p);
  });
  rpc.onRequest('workspace/codeLens/refresh', () => null);
  rpc.listen();
  await rpc.sendRequest('initialize', { processId: null, rootUri: null, capabilities: {}, initializationOptions: { workspaceFolders, sessionRoot: '.belay/agent' } });
  await rpc.sendNotification('initialized', {});
  const next = (uri: string) =>
    new Promise<Diagnostic[]>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no diagnostics for ${uri}`)), 10_000);
      const list = waiting.get(uri) ?? [];
      list.push((p) => {
        clearTimeout(timer);
        resolve(p.diagnostics);
      });
      waiting.set(uri, list);
    });
  return {
    rpc,
    async open(file, text) {
      const uri = pathToFileURL(file).href;
      const diagnostics = next(uri);
      await rpc.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'codingagent', version: 1, text } });
      return diagnostics;
    },
    next,
    async change(uri, version, text) {
      const diagnostics = next(uri);
      await rpc.sendNotification('textDocument/didChange', { textDocument: { uri, version }, contentChanges: [{ text }] });
      return diagnostics;
    },
    close() {
      rpc.dispose();
      server.dispose();
      toServer.destroy();
      toClient.destroy();
    },
  };
}

const nextDiagnostics = (client: Client, uri: string) => client.next(uri);

describe('CodingAgent language server', () => {
  let dir: string;
  let cleanup: () => void;
  let client: Client;
  before(async () => {
    ({ dir, remove: cleanup } = tempDir('belay-server-'));
    await mkdir(path.join(dir, 'src'));
    await writeFile(path.join(dir, 'src', 'app.py'), 'line 1\nline 2\nline 3\n');
    client = await startPair([dir]);
  });
  after(async () => {
    client?.close();
    await cleanup();
  });

  test('reports every parse error with its exact range', async () => {
    const text = 'Intro\n[EDIT_FILE path="src/app.py" start_line="x" end_line="2"]\nbody\n[/EDIT_FILE]\n[WRITE_FILE path="a"]\n[/WRITE_FILE]\n';
    const diagnostics = await client.open(path.join(dir, 'parse.agent'), text);
    const invalid = diagnostics.find((d) => d.code === 'invalid-line-number');
    assert.ok(invalid, JSON.stringify(diagnostics));
    const x = text.split('\n')[1]!.indexOf('"x"') + 1;
    assert.deepEqual(invalid.range, { start: { line: 1, character: x }, end: { line: 1, character: x + 1 } });
    const unknown = diagnostics.find((d) => d.code === 'unknown-command');
    assert.ok(unknown);
    assert.match(text_(unknown.message), /did you mean CREATE_FILE/);
    assert.equal(unknown.range.start.line, 4);
    const lenses: CodeLens[] = await client.rpc.sendRequest('textDocument/codeLens', { textDocument: { uri: pathToFileURL(path.join(dir, 'parse.agent')).href } });
    assert.deepEqual(
      lenses.map((l) => [l.range.start.line, l.command!.title]),
      [
        [1, "$(warning) Not executable: EDIT_FILE start_line must be an integer, got 'x'"],
        [4, '$(warning) Not executable: Unknown command WRITE_FILE; did you mean CREATE_FILE?'],
      ],
    );
  });

  test('a "did you mean" problem has a quick fix renaming the opening and closing tags', async () => {
    const text = 'Sure:\n[WRITE_FILE path="a.txt"]\nA\n[/WRITE_FILE]\n[/CREAT_FILE]\n';
    const file = path.join(dir, 'typo.agent');
    const diagnostics = await client.open(file, text);
    const unknown = diagnostics.filter((d) => d.code === 'unknown-command');
    assert.equal(unknown.length, 2, JSON.stringify(diagnostics));
    const actions: Array<{ title: string; kind: string; isPreferred: boolean; edit: { changes: Record<string, Array<{ range: unknown; newText: string }>> } }> = await client.rpc.sendRequest('textDocument/codeAction', {
      textDocument: { uri: pathToFileURL(file).href },
      range: { start: { line: 0, character: 0 }, end: { line: 5, character: 0 } },
      context: { diagnostics: unknown },
    });
    assert.deepEqual(actions.map((a) => [a.title, a.kind, a.isPreferred]), [
      ['Change to CREATE_FILE', 'quickfix', true],
      ['Change to CREATE_FILE', 'quickfix', true],
    ]);
    assert.deepEqual(actions[0]!.edit.changes[pathToFileURL(file).href], [
      { range: { start: { line: 1, character: 1 }, end: { line: 1, character: 11 } }, newText: 'CREATE_FILE' },
      { range: { start: { line: 3, character: 2 }, end: { line: 3, character: 12 } }, newText: 'CREATE_FILE' },
    ]);
    assert.deepEqual(actions[1]!.edit.changes[pathToFileURL(file).href], [{ range: { start: { line: 4, character: 0 }, end: { line: 4, character: 13 } }, newText: '[/CREATE_FILE]' }]);
  });

  test('flags paths outside the workspace, missing files, ranges past the end, overlapping edits', async () => {
    await symlink('/etc', path.join(dir, 'link'));
    const text = [
      '[CREATE_FILE path="../escape.txt"]',
      'x',
      '[/CREATE_FILE]',
      '[CREATE_FILE path="link/passwd"]',
      'x',
      '[/CREATE_FILE]',
      '[DELETE_FILE path="src/missing.py"]',
      '[EDIT_FILE path="src/app.py" start_line="9" end_line="10"]',
      'y',
      '[/EDIT_FILE]',
      '[EDIT_FILE path="src/app.py" start_line="1" end_line="2"]',
      'a',
      '[/EDIT_FILE]',
      '[EDIT_FILE path="src/app.py" start_line="2" end_line="3"]',
      'b',
      '[/EDIT_FILE]',
      '[CREATE_FILE path="new.txt"]',
      'one',
      '[/CREATE_FILE]',
      '[EDIT_FILE path="new.txt" start_line="1" end_line="1"]',
      'edited after create: fine',
      '[/EDIT_FILE]',
    ].join('\n');
    const diagnostics = await client.open(path.join(dir, 'plan.agent'), text);
    const byLine = (line: number) => diagnostics.filter((d) => d.range.start.line === line).map((d) => text_(d.message));
    assert.deepEqual(byLine(0), ["REJECTED: Path '../escape.txt' is outside workspace"]);
    assert.deepEqual(diagnostics.find((d) => d.range.start.line === 0)!.range, { start: { line: 0, character: 19 }, end: { line: 0, character: 32 } });
    assert.deepEqual(byLine(3), ["REJECTED: Path 'link/passwd' is outside workspace"]);
    assert.deepEqual(byLine(6), ["File 'src/missing.py' not found"]);
    assert.match(byLine(7)[0] ?? '', /Invalid line range 9-10 for file with 3 lines/);
    assert.deepEqual(byLine(10), []);
    assert.match(byLine(13)[0] ?? '', /overlap lines 1-2/);
    // Line problems underline the line numbers, from start_line's value to end_line's.
    const lines = text.split('\n');
    const lineNumbers = (line: number) => {
      const start = lines[line]!.indexOf('start_line="') + 'start_line="'.length;
      const end = lines[line]!.lastIndexOf('"]');
      return { start: { line, character: start }, end: { line, character: end } };
    };
    assert.deepEqual(diagnostics.find((d) => d.range.start.line === 7)!.range, lineNumbers(7));
    assert.deepEqual(diagnostics.find((d) => d.range.start.line === 13)!.range, lineNumbers(13));
    assert.deepEqual(byLine(19), [], 'an edit of a file created earlier in the answer is fine');
    assert.equal(diagnostics.length, 5, JSON.stringify(diagnostics, null, 1));
  });

  test('diagnostics follow edits of the document', async () => {
    const file = path.join(dir, 'live.agent');
    const uri = pathToFileURL(file).href;
    assert.equal((await client.open(file, '[DELETE_FILE path="src/app.py"]\n')).length, 0);
    const changed = await client.change(uri, 2, '[DELETE_FILE path="/etc/passwd"]\n');
    assert.deepEqual(changed.map((d) => d.message), ["REJECTED: Path '/etc/passwd' is outside workspace"]);
  });

  test('an outbox shows its example blocks without diagnostics or lenses', async () => {
    const file = path.join(dir, 'outbox', 'abcdef12_seq0001.txt');
    const text = '=== HEADER ===\nSession: abcdef12\n\n=== PROTOCOL ===\n[CREATE_FILE path="relative/path"]\nfile contents\n[/CREATE_FILE]\n[EDIT_FILE path="x" start_line="N" end_line="M"]\n[/EDIT_FILE]\n\n=== PROMPT ===\nDo it\n';
    const diagnostics = await client.open(file, text);
    assert.deepEqual(diagnostics, []);
    const uri = pathToFileURL(file).href;
    const lenses: CodeLens[] = await client.rpc.sendRequest('textDocument/codeLens', { textDocument: { uri } });
    assert.deepEqual(lenses, []);
    const symbols: DocumentSymbol[] = await client.rpc.sendRequest('textDocument/documentSymbol', { textDocument: { uri } });
    assert.deepEqual(symbols.map((s) => s.name), ['HEADER', 'PROTOCOL', 'PROMPT']);
  });

  test('an answer closed and another opened under the same URI (as untitled answers are) gets its own lenses and diagnostics', async () => {
    const file = path.join(dir, 'reused.agent');
    const uri = pathToFileURL(file).href;
    await client.open(file, '[EDIT_FILE path="src/app.py" start_line="1" end_line="3"]\nx\n[/EDIT_FILE]\n');
    const first: CodeLens[] = await client.rpc.sendRequest('textDocument/codeLens', { textDocument: { uri } });
    assert.deepEqual(first.map((l) => l.command!.title), ['Apply All (1)', 'Preview All', 'Apply', 'Preview']);
    // Closed and opened anew at once, at version 1 again, while the first one's work may be under way.
    const diagnostics = client.next(uri);
    void client.rpc.sendNotification('textDocument/didClose', { textDocument: { uri } });
    const reopened = client.open(file, '[CREATE_FILE path="b.txt"]\nB\n[/CREATE_FILE]\n[CREATE_FILE path="../out.txt"]\nno\n[/CREATE_FILE]\n');
    assert.deepEqual(await diagnostics, [], 'closing clears the first answer\'s diagnostics');
    assert.deepEqual((await reopened).map((d) => d.message), ["REJECTED: Path '../out.txt' is outside workspace"]);
    const second: CodeLens[] = await client.rpc.sendRequest('textDocument/codeLens', { textDocument: { uri } });
    assert.deepEqual(second.map((l) => l.command!.title), ['Apply All (1)', 'Preview All', 'Apply', 'Preview', '$(circle-slash) REJECTED: Path \'../out.txt\' is outside workspace']);
  });

  test('CodeLenses: Apply All (N) and Preview All at the top, Apply/Preview/Run per block', async () => {
    const file = path.join(dir, 'lenses.agent');
    const text = 'Hi\n[CREATE_FILE path="a.txt"]\nA\n[/CREATE_FILE]\n[RUN_COMMAND]ls[/RUN_COMMAND]\n[READ_FILE path="src/app.py"]\n[DONE]ok[/DONE]\n';
    await client.open(file, text);
    const lenses: CodeLens[] = await client.rpc.sendRequest('textDocument/codeLens', { textDocument: { uri: pathToFileURL(file).href } });
    const titles = lenses.map((l) => `${l.range.start.line}:${l.command!.title}`);
    assert.deepEqual(titles, ['1:Apply All (2)', '1:Preview All', '1:Apply', '1:Preview', '4:Run', '5:Open File', '6:Task Done']);
    assert.equal(lenses[2]!.command!.command, 'belay.blocks.apply');
    assert.deepEqual(lenses[2]!.command!.arguments!.slice(0, 2), [pathToFileURL(file).href, 1]);
  });

  test('completion: command snippets, attributes, workspace paths', async () => {
    const file = path.join(dir, 'complete.agent');
    const text = '[\n[EDIT_FILE \n[READ_FILE path="sr\n';
    await client.open(file, text);
    const uri = pathToFileURL(file).href;
    const at = (line: number, character: number): Promise<CompletionItem[]> => client.rpc.sendRequest('textDocument/completion', { textDocument: { uri }, position: { line, character } });
    const commands = await at(0, 1);
    const create = commands.find((c) => c.label === 'CREATE_FILE');
    assert.ok(create?.textEdit && 'newText' in create.textEdit);
    assert.match(create.textEdit.newText, /^CREATE_FILE path="\$\{1:path\}"\]\n\$0\n\[\/CREATE_FILE\]$/);
    const attributes = await at(1, 11);
    assert.deepEqual(attributes.map((c) => c.label), ['path', 'start_line', 'end_line']);
    const paths = await at(2, 18);
    assert.deepEqual(paths.map((c) => c.label).sort(), ['src/', 'src/app.py']);
  });

  test('hover: what the command does, and the lines an EDIT_FILE replaces', async () => {
    const file = path.join(dir, 'hover.agent');
    await client.open(file, '[EDIT_FILE path="src/app.py" start_line="2" end_line="3"]\nnew\n[/EDIT_FILE]\n');
    const result: Hover = await client.rpc.sendRequest('textDocument/hover', { textDocument: { uri: pathToFileURL(file).href }, position: { line: 0, character: 3 } });
    const value = (result.contents as { value: string }).value;
    assert.match(value, /\*\*EDIT_FILE\*\*: Replaces lines/);
    assert.match(value, /```\nline 2\nline 3\n```/);
  });

  test('outline and folding: one per block', async () => {
    const file = path.join(dir, 'outline.agent');
    await client.open(file, '[CREATE_FILE path="a.py"]\nprint(1)\n[/CREATE_FILE]\n[DELETE_FILE path="src/app.py"]\n');
    const uri = pathToFileURL(file).href;
    const symbols: DocumentSymbol[] = await client.rpc.sendRequest('textDocument/documentSymbol', { textDocument: { uri } });
    assert.deepEqual(symbols.map((s) => s.name), ['CREATE_FILE a.py', 'DELETE_FILE src/app.py']);
    const folds: FoldingRange[] = await client.rpc.sendRequest('textDocument/foldingRange', { textDocument: { uri } });
    assert.deepEqual(folds.map((f) => [f.startLine, f.endLine]), [[0, 2]]);
  });

  test('a block the editor has handled is not planned again', async () => {
    const victim = path.join(dir, 'victim.txt');
    await writeFile(victim, 'x\n');
    const file = path.join(dir, 'handled.agent');
    const uri = pathToFileURL(file).href;
    const text = '[DELETE_FILE path="victim.txt"]\n';
    assert.deepEqual(await client.open(file, text), []);
    await rm(victim);
    const missing = nextDiagnostics(client, uri);
    await client.rpc.sendNotification('workspace/didChangeWatchedFiles', { changes: [{ uri: pathToFileURL(victim).href, type: 3 }] });
    assert.deepEqual((await missing).map((d) => text_(d.message)), ["File 'victim.txt' not found"]);
    const cleared = nextDiagnostics(client, uri);
    await client.rpc.sendNotification(HandledBlocksNotification.method, { uri, keys: blockKeys(parseAnswer(text).commands) });
    assert.deepEqual(await cleared, []);
  });

  test('after a file changes, only the blocks whose paths it touches are planned again', async () => {
    for (const name of ['keep.txt', 'gone.txt']) await writeFile(path.join(dir, name), 'x\n');
    const file = path.join(dir, 'incremental.agent');
    const uri = pathToFileURL(file).href;
    assert.deepEqual(await client.open(file, '[DELETE_FILE path="keep.txt"]\n[DELETE_FILE path="gone.txt"]\n'), []);
    // Both files go, but the server hears only of one: the other block's plan is kept as it was.
    await rm(path.join(dir, 'keep.txt'));
    await rm(path.join(dir, 'gone.txt'));
    const next = nextDiagnostics(client, uri);
    await client.rpc.sendNotification('workspace/didChangeWatchedFiles', { changes: [{ uri: pathToFileURL(path.join(dir, 'gone.txt')).href, type: 3 }] });
    assert.deepEqual((await next).map((d) => [d.range.start.line, text_(d.message)]), [[1, "File 'gone.txt' not found"]]);
    // A change of a folder above a block's file plans that block again too.
    const again = nextDiagnostics(client, uri);
    await client.rpc.sendNotification('workspace/didChangeWatchedFiles', { changes: [{ uri: pathToFileURL(dir).href, type: 2 }] });
    assert.deepEqual((await again).map((d) => [d.range.start.line, text_(d.message)]), [
      [0, "File 'keep.txt' not found"],
      [1, "File 'gone.txt' not found"],
    ]);
  });

  test('warns when an edited file\'s content changed since the outbox the answer replies to', async () => {
    const { root } = await sessionWithChangedFile(dir);
    const answer = path.join(root, 'inbox', 'answer.txt');
    const text = '[EDIT_FILE path="old.txt" start_line="1" end_line="1"]\nx\n[/EDIT_FILE]\n[EDIT_FILE path="new.txt" start_line="1" end_line="1"]\ny\n[/EDIT_FILE]\n';
    await writeFile(answer, text);
    const diagnostics = await client.open(answer, text);
    assert.equal(diagnostics.length, 1, JSON.stringify(diagnostics));
    assert.equal(diagnostics[0]!.code, 'stale');
    assert.equal(diagnostics[0]!.range.start.line, 3);
    assert.match(text_(diagnostics[0]!.message), /'new\.txt' changed since the LLM saw it \(0123abcd_seq0001\.txt\)/);
  });
});
