import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import { cp, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { blockKeys } from '../../src/blocks/core/blockKey.ts';
import { parseAnswer } from '../../src/blocks/core/parser.ts';
import { updateSession } from '../../src/blocks/core/session.ts';
import { activateBelay, EXTENSION_ID, waitFor } from './helpers.ts';

const folder = () => vscode.workspace.workspaceFolders![0]!.uri.fsPath;
const demo = () => path.join(folder(), 'blocks');

async function openAnswer(file: string): Promise<vscode.TextDocument> {
  const document = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
  await vscode.window.showTextDocument(document);
  return document;
}

/**
 * A new untitled answer with this text. VS Code names it after the lowest free number, and when the
 * untitled answer that had the name is still closing, the extension host can hand back that
 * closing document (its old text) for the new name: wait for it to go, and open again.
 */
async function openUntitled(content: string, language = 'codingagent'): Promise<vscode.TextDocument> {
  for (let attempt = 0; ; attempt++) {
    const document = await vscode.workspace.openTextDocument({ language, content });
    if (document.getText() === content && document.languageId === language) return document;
    if (attempt === 5) throw new Error(`${document.uri.toString()} still shows another document's text`);
    await waitFor(`${document.uri.toString()} to close`, () => document.isClosed, [vscode.workspace.onDidCloseTextDocument], 5_000).catch(() => undefined);
  }
}

function diagnosticsOf(uri: vscode.Uri, count: number): Promise<vscode.Diagnostic[]> {
  return waitFor(`${count} diagnostics on ${path.basename(uri.fsPath)}`, () => vscode.languages.getDiagnostics(uri).length >= count, [vscode.languages.onDidChangeDiagnostics]).then(() =>
    vscode.languages.getDiagnostics(uri),
  );
}

/** Resolves when diagnostics change (the server has analysed something), or after 200 ms: lenses have no event. */
function diagnosticsOrAWhile(): Promise<void> {
  return new Promise<void>((resolve) => {
    const sub = vscode.languages.onDidChangeDiagnostics(() => {
      sub.dispose();
      clearTimeout(timer);
      resolve();
    });
    const timer = setTimeout(() => {
      sub.dispose();
      resolve();
    }, 200);
  });
}

/** CodeLenses once the language server answers with some (it starts with the first answer document). */
async function lensesOf(uri: vscode.Uri): Promise<vscode.CodeLens[]> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const lenses = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri);
    if (lenses.length > 0) return lenses;
    await diagnosticsOrAWhile();
  }
  throw new Error(`no CodeLenses on ${uri.fsPath}`);
}

/** Waits until one of the document's CodeLenses has a title matching `title`; resolves with all titles. */
async function waitForLens(uri: vscode.Uri, title: RegExp): Promise<string[]> {
  let titles: string[] = [];
  for (let attempt = 0; attempt < 150; attempt++) {
    const lenses = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri);
    titles = lenses.map((l) => l.command?.title ?? '');
    if (titles.some((t) => title.test(t))) return titles;
    await diagnosticsOrAWhile();
  }
  throw new Error(`no lens ${title} on ${uri.toString()}: ${titles.join(' | ')}`);
}

function blockArgs(document: vscode.TextDocument, type: string): [string, number, string] {
  const { commands } = parseAnswer(document.getText());
  const keys = blockKeys(commands);
  const index = commands.findIndex((c) => c.type === type);
  return [document.uri.toString(), commands[index]!.openTag.range.start.line, keys[index]!];
}

async function tree(root: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  const walk = async (dir: string) => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else files[path.relative(root, full)] = await readFile(full, 'utf8');
    }
  };
  await walk(root);
  return files;
}

suite('Belay command blocks', () => {
  suiteSetup(async () => {
    await activateBelay();
  });

  teardown(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  test('an answer file is CodingAgent and its problems are diagnostics with exact ranges', async () => {
    const document = await openAnswer(path.join(demo(), 'answers', 'with-problems.agent'));
    assert.equal(document.languageId, 'codingagent');
    const diagnostics = await diagnosticsOf(document.uri, 4);
    const text = document.getText();
    const at = (d: vscode.Diagnostic) => document.getText(d.range);
    const outside = diagnostics.find((d) => d.message.startsWith('REJECTED'));
    assert.ok(outside, JSON.stringify(diagnostics.map((d) => d.message)));
    assert.equal(at(outside), '../outside.txt');
    const lineNumber = diagnostics.find((d) => /must be an integer/.test(d.message));
    assert.equal(lineNumber && at(lineNumber), 'first');
    const missing = diagnostics.find((d) => /not found/.test(d.message));
    assert.equal(missing && at(missing), 'missing.py');
    const unknown = diagnostics.find((d) => /Unknown command WRITE_FILE/.test(d.message));
    assert.equal(unknown && at(unknown), 'WRITE_FILE');
    assert.ok(text.length > 0);
  });

  test('every block of the demo answer has a CodeLens, and the first Apply All (4) and Preview All', async () => {
    const document = await openAnswer(path.join(demo(), 'answers', 'example.agent'));
    const lenses = await lensesOf(document.uri);
    const { commands } = parseAnswer(document.getText());
    for (const command of commands) {
      assert.ok(
        lenses.some((l) => l.range.start.line === command.openTag.range.start.line),
        `no lens on the ${command.type} block at line ${command.openTag.range.start.line + 1}`,
      );
    }
    const titles = lenses.map((l) => l.command?.title ?? '');
    assert.ok(titles.includes('$(check-all) Apply All (4)'), titles.join(' | '));
    assert.ok(titles.includes('$(diff-multiple) Preview All'));
    assert.ok(titles.includes('Run'));
  });

  test('Preview shows a diff and writes nothing', async () => {
    const document = await openAnswer(path.join(demo(), 'answers', 'example.agent'));
    const target = path.join(demo(), 'workspace', 'wordcount.py');
    await vscode.commands.executeCommand('belay.blocks.preview', ...blockArgs(document, 'CREATE_FILE'));
    await waitFor('a diff editor', () => vscode.window.tabGroups.activeTabGroup.activeTab?.input instanceof vscode.TabInputTextDiff, [vscode.window.tabGroups.onDidChangeTabs]);
    const input = vscode.window.tabGroups.activeTabGroup.activeTab!.input as vscode.TabInputTextDiff;
    const planned = await vscode.workspace.openTextDocument(input.modified);
    assert.match(planned.getText(), /def count_words/);
    await assert.rejects(stat(target), /ENOENT/, 'Preview wrote the file');
  });

  test('a block\'s state follows its file: applied, put back (as Undo does), applied again; reopening keeps it', async () => {
    const notes = path.join(demo(), 'workspace', 'notes.txt');
    const original = await readFile(notes, 'utf8');
    const text = '[EDIT_FILE path="notes.txt" start_line="1" end_line="1"]\nFirst line, edited by the LLM\n[/EDIT_FILE]\n';
    // An answer outside any session root acts on the configured root's workspace/ when it exists:
    // the demo's settings point belay.blocks.sessionRoot at blocks/.
    const answer = await openUntitled(text);
    await vscode.window.showTextDocument(answer);
    try {
      await waitForLens(answer.uri, /^Apply$/);
      const args = blockArgs(answer, 'EDIT_FILE');
      const outcome = await vscode.commands.executeCommand<{ status: string; summary: string }>('belay.blocks.apply', ...args);
      assert.equal(outcome?.status, 'applied');
      assert.equal(outcome.summary, "Edited 'notes.txt' lines 1-1");
      const edited = await readFile(notes, 'utf8');
      assert.equal(edited.split('\n')[0], 'First line, edited by the LLM');
      await waitForLens(answer.uri, /^\$\(check\) Applied: Edited 'notes\.txt' lines 1-1$/);
      // What Undo does: the file's text goes back in the editor (unsaved).
      const target = await vscode.workspace.openTextDocument(vscode.Uri.file(notes));
      const back = new vscode.WorkspaceEdit();
      back.replace(target.uri, new vscode.Range(0, 0, target.lineCount, 0), original);
      assert.ok(await vscode.workspace.applyEdit(back));
      assert.ok(target.isDirty);
      await waitForLens(answer.uri, /^Apply$/);
      // Apply works again, from the text the editor shows, and saves it.
      const again = await vscode.commands.executeCommand<{ status: string }>('belay.blocks.apply', ...args);
      assert.equal(again?.status, 'applied');
      assert.equal(await readFile(notes, 'utf8'), edited, 'the block was not applied once more from the text on screen');
      await waitForLens(answer.uri, /^\$\(check\) Applied/);
      // The same answer opened anew (another document) shows the block applied.
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      // The same text under the same name: only the first one's close tells them apart.
      await waitFor('the first answer to close', () => answer.isClosed, [vscode.workspace.onDidCloseTextDocument], 5_000).catch(() => undefined);
      const reopened = await openUntitled(text);
      assert.notEqual(reopened, answer);
      await vscode.window.showTextDocument(reopened);
      await waitForLens(reopened.uri, /^\$\(check\) Applied: Edited 'notes\.txt' lines 1-1$/);
      // Undo Answer puts the file back; the block can be applied again.
      assert.equal(await vscode.commands.executeCommand('belay.blocks.undoAnswer', reopened.uri.toString()), true);
      assert.equal(await readFile(notes, 'utf8'), original);
      await waitForLens(reopened.uri, /^Apply$/);
    } finally {
      await writeFile(notes, original);
    }
  });

  test('a preview applies the change under the cursor only; the lens says the block is applied in part', async () => {
    const file = path.join(demo(), 'workspace', 'hunks.txt');
    // A diff left open by an earlier test must not pass for this preview below.
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await writeFile(file, 'one\ntwo\nthree\nfour\nfive\n');
    const answer = await openUntitled('[EDIT_FILE path="hunks.txt" start_line="1" end_line="5"]\none\nTWO\nthree\nFOUR\nfive\n[/EDIT_FILE]\n');
    await vscode.window.showTextDocument(answer);
    try {
      await waitForLens(answer.uri, /^Apply$/);
      await vscode.commands.executeCommand('belay.blocks.preview', ...blockArgs(answer, 'EDIT_FILE'));
      await waitFor('the preview', () => vscode.window.tabGroups.activeTabGroup.activeTab?.input instanceof vscode.TabInputTextDiff, [vscode.window.tabGroups.onDidChangeTabs]);
      const preview = (vscode.window.tabGroups.activeTabGroup.activeTab!.input as vscode.TabInputTextDiff).modified;
      await waitFor('the preview\'s editor', () => vscode.window.visibleTextEditors.some((e) => e.document.uri.toString() === preview.toString()), [vscode.window.onDidChangeVisibleTextEditors]);
      const right = vscode.window.visibleTextEditors.find((e) => e.document.uri.toString() === preview.toString())!;
      right.selection = new vscode.Selection(3, 0, 3, 0);
      const outcome = await vscode.commands.executeCommand<{ status: string }>('belay.blocks.applyPreviewedChange', preview);
      assert.deepEqual([outcome?.status, await readFile(file, 'utf8')], ['applied', 'one\ntwo\nthree\nFOUR\nfive\n']);
      await waitForLens(answer.uri, /^\$\(check\) Applied in part: 1 of 2 changes: Edited 'hunks\.txt' lines 1-5$/);
    } finally {
      await rm(file, { force: true });
    }
  });

  test('Apply All skips what cannot succeed and says why, applies files only when asked, and counts agree', async () => {
    const text = [
      '[CREATE_FILE path="counts/one.txt"]',
      'one',
      '[/CREATE_FILE]',
      '[EDIT_FILE path="counts/missing.txt" start_line="1" end_line="1"]',
      'x',
      '[/EDIT_FILE]',
      '[RUN_COMMAND]',
      'echo ran > counts/ran.txt',
      '[/RUN_COMMAND]',
      '[CREATE_FILE path="counts/two.txt"]',
      'two',
      '[/CREATE_FILE]',
      '[CREATE_FILE path="../outside.txt"]',
      'no',
      '[/CREATE_FILE]',
      '',
    ].join('\n');
    const answer = await openUntitled(text);
    await vscode.window.showTextDocument(answer);
    const counts = path.join(demo(), 'workspace', 'counts');
    try {
      // Two blocks cannot succeed: counted nowhere, and their problems stay.
      let titles = await waitForLens(answer.uri, /^\$\(check-all\) Apply All \(3\)$/);
      assert.ok(titles.includes('Apply Files Only (2)'), titles.join(' | '));
      assert.ok(titles.includes("$(error) Cannot apply: File 'counts/missing.txt' not found"), titles.join(' | '));
      assert.ok(titles.includes("$(circle-slash) REJECTED: Path '../outside.txt' is outside workspace"), titles.join(' | '));
      const outcomes = await vscode.commands.executeCommand<Array<{ status: string; summary: string }>>('belay.blocks.applyFilesOnly', answer.uri.toString(), { confirmed: true });
      assert.deepEqual(outcomes?.map((o) => `${o.status} ${o.summary}`), [
        "applied Created 'counts/one.txt'",
        "failed File 'counts/missing.txt' not found",
        "applied Created 'counts/two.txt'",
        "rejected REJECTED: Path '../outside.txt' is outside workspace",
      ]);
      assert.deepEqual((await readdir(counts)).sort(), ['one.txt', 'two.txt'], 'the command ran');
      titles = await waitForLens(answer.uri, /^\$\(check-all\) Apply All \(1\)$/);
      assert.ok(!titles.some((t) => t.startsWith('Apply Files Only')), titles.join(' | '));
      assert.ok(titles.includes('Run'), titles.join(' | '));
      // The problems of the blocks not applied are still in the Problems view.
      const problems = vscode.languages.getDiagnostics(answer.uri).map((d) => d.message);
      assert.ok(problems.includes("File 'counts/missing.txt' not found"), problems.join(' | '));
      assert.ok(problems.includes("REJECTED: Path '../outside.txt' is outside workspace"), problems.join(' | '));
      assert.equal(await vscode.commands.executeCommand('belay.blocks.undoAnswer', answer.uri.toString()), true);
      assert.deepEqual(await readdir(counts), []);
      await waitForLens(answer.uri, /^\$\(check-all\) Apply All \(3\)$/);
    } finally {
      await rm(counts, { recursive: true, force: true });
    }
  });

  test('Apply All on the demo answer gives what `belay blocks apply` gives for the same text', async () => {
    const cliWorkspace = await mkdtemp(path.join(os.tmpdir(), 'belay-host-cli-'));
    try {
      await cp(path.join(demo(), 'workspace'), cliWorkspace, { recursive: true });
      const answerFile = path.join(demo(), 'answers', 'example.agent');
      const cli = path.join(vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath, 'dist', 'cli.js');
      const stdout = await new Promise<string>((resolve, reject) =>
        execFile(process.execPath, [cli, 'blocks', 'apply', '--json', '--workspace', cliWorkspace, answerFile], (error, out) => (error && error.code !== 0 && error.code !== 1 ? reject(error) : resolve(out))),
      );
      const cliResults = (JSON.parse(stdout) as { results: Array<{ commandType: string; success: boolean; summary: string }> }).results;

      const document = await openAnswer(answerFile);
      const outcomes = await vscode.commands.executeCommand<Array<{ result: { commandType: string; success: boolean; summary: string } }>>('belay.blocks.applyAll', document.uri.toString(), { confirmed: true });
      assert.ok(outcomes, 'Apply All was declined');
      assert.deepEqual(
        outcomes.map((o) => [o.result.commandType, o.result.success, o.result.summary]),
        cliResults.map((r) => [r.commandType, r.success, r.summary]),
      );
      assert.deepEqual(await tree(path.join(demo(), 'workspace')), await tree(cliWorkspace));
      assert.ok(!(await tree(cliWorkspace))['obsolete.txt'], 'DELETE_FILE did not delete');
      const lenses = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', document.uri);
      assert.ok(lenses.some((l) => l.command?.title.startsWith("$(check) Applied: Created 'wordcount.py'")), lenses.map((l) => l.command?.title).join(' | '));
    } finally {
      await rm(cliWorkspace, { recursive: true, force: true });
    }
  });

  test('an untitled document holding an answer becomes CodingAgent', async () => {
    const document = await openUntitled('Sure:\n[CREATE_FILE path="a.py"]\nprint(1)\n[/CREATE_FILE]\n', 'plaintext');
    await waitFor('the document to become CodingAgent', () => vscode.workspace.textDocuments.some((d) => d.uri.toString() === document.uri.toString() && d.languageId === 'codingagent'), [
      vscode.workspace.onDidOpenTextDocument,
    ]);
  });

  test('Start Session writes and copies the first outbox; Paste LLM Answer applies and hands over the next', async () => {
    await vscode.workspace.getConfiguration('belay').update('blocks.sessionRoot', 'loop-root', vscode.ConfigurationTarget.Workspace);
    try {
      const state = await vscode.commands.executeCommand<{ sessionId: string }>('belay.blocks.startSession', 'Create hello.txt');
      assert.ok(state?.sessionId);
      const first = path.join(folder(), 'loop-root', 'outbox', `${state.sessionId}_seq0001.txt`);
      assert.equal(await vscode.env.clipboard.readText(), await readFile(first, 'utf8'));
      const outcome = await vscode.commands.executeCommand<{ kind: string; outboxPath: string; state: { sequenceNumber: number; lastResults: Array<{ success: boolean }> } }>(
        'belay.blocks.pasteAnswer',
        '[CREATE_FILE path="hello.txt"]\nhi\n[/CREATE_FILE]\n',
      );
      assert.equal(outcome?.kind, 'applied');
      assert.equal(outcome.state.sequenceNumber, 2);
      assert.deepEqual(outcome.state.lastResults.map((r) => r.success), [true]);
      assert.equal(await readFile(path.join(folder(), 'loop-root', 'workspace', 'hello.txt'), 'utf8'), 'hi');
      assert.equal(await vscode.env.clipboard.readText(), await readFile(outcome.outboxPath, 'utf8'));
      assert.match(await readFile(outcome.outboxPath, 'utf8'), /\[OK\] CREATE_FILE: Created 'hello.txt'/);
      assert.deepEqual(await readdir(path.join(folder(), 'loop-root', 'inbox')), ['processed']);
    } finally {
      await vscode.workspace.getConfiguration('belay').update('blocks.sessionRoot', undefined, vscode.ConfigurationTarget.Workspace);
    }
  });

  test('Paste LLM Answer acts on the session of the focused answer, and a completed one takes nothing', async () => {
    await vscode.workspace.getConfiguration('belay').update('blocks.sessionRoot', 'focus-root', vscode.ConfigurationTarget.Workspace);
    try {
      const root = path.join(folder(), 'focus-root');
      const older = await vscode.commands.executeCommand<{ sessionId: string }>('belay.blocks.startSession', 'Older session');
      const newer = await vscode.commands.executeCommand<{ sessionId: string }>('belay.blocks.startSession', 'Newer session');
      assert.ok(older && newer);
      // An answer to the older session, open in the editor (where Send to Model or a person put it).
      const answerFile = path.join(root, 'inbox', `${older.sessionId}_answer0001_1.txt`);
      await writeFile(answerFile, '[CREATE_FILE path="older.txt"]\nfor the older session\n[/CREATE_FILE]\n');
      await openAnswer(answerFile);
      const first = await vscode.commands.executeCommand<{ state: { sessionId: string; sequenceNumber: number } }>('belay.blocks.pasteAnswer', '[CREATE_FILE path="older.txt"]\nfor the older session\n[/CREATE_FILE]\n[DONE]\nok\n[/DONE]\n');
      assert.equal(first?.state.sessionId, older.sessionId, 'the answer went to the newest session, not the focused one');
      const newerState = () => readFile(path.join(root, 'sessions', `${newer.sessionId}.json`), 'utf8').then((t) => JSON.parse(t) as { sequenceNumber: number; isComplete: boolean });
      assert.equal((await newerState()).sequenceNumber, 1);
      // The older session is complete now: with its outbox focused, nothing is applied anywhere.
      await openAnswer(path.join(root, 'outbox', `${older.sessionId}_seq0001.txt`));
      const second = await vscode.commands.executeCommand('belay.blocks.pasteAnswer', '[CREATE_FILE path="stray.txt"]\nx\n[/CREATE_FILE]\n');
      assert.equal(second, undefined);
      assert.deepEqual(await newerState().then((s) => [s.sequenceNumber, s.isComplete]), [1, false]);
      await assert.rejects(stat(path.join(root, 'workspace', 'stray.txt')), /ENOENT/);
    } finally {
      await vscode.workspace.getConfiguration('belay').update('blocks.sessionRoot', undefined, vscode.ConfigurationTarget.Workspace);
    }
  });

  test('an edit of a file changed since the LLM read it applies where its lines are now; one whose lines changed is refused', async () => {
    await vscode.workspace.getConfiguration('belay').update('blocks.sessionRoot', 'reloc-root', vscode.ConfigurationTarget.Workspace);
    try {
      const root = path.join(folder(), 'reloc-root');
      const session = await vscode.commands.executeCommand<{ sessionId: string }>('belay.blocks.startSession', 'Tidy app.txt');
      assert.ok(session);
      const app = path.join(root, 'workspace', 'app.txt');
      await writeFile(app, 'alpha\nbeta\ngamma\ndelta\n');
      await vscode.commands.executeCommand('belay.blocks.pasteAnswer', '[READ_FILE path="app.txt"]\n');
      // After the LLM read it, someone adds a header and changes delta.
      await writeFile(app, '# header\n\nalpha\nbeta\ngamma\nDELTA\n');
      const answerFile = path.join(root, 'inbox', `${session.sessionId}_answer0002_1.txt`);
      await writeFile(answerFile, '[EDIT_FILE path="app.txt" start_line="2" end_line="2"]\nBETA\n[/EDIT_FILE]\n[EDIT_FILE path="app.txt" start_line="4" end_line="4"]\ndelta!\n[/EDIT_FILE]\n');
      const answer = await openAnswer(answerFile);
      const titles = await waitForLens(answer.uri, /^Apply \(moved to lines 4-4: the file changed\)$/);
      assert.ok(titles.some((t) => t.startsWith("$(error) Cannot apply: Lines 4-4 of 'app.txt' changed since you read the file")), titles.join(' | '));
      const relocated = () => vscode.languages.getDiagnostics(answer.uri).find((d) => d.code === 'relocated');
      await waitFor('the diagnostic of the moved edit', () => relocated() !== undefined, [vscode.languages.onDidChangeDiagnostics]);
      assert.match(relocated()!.message, /lines 2-2 it wrote this edit for are lines 4-4 now/);
      const outcome = await vscode.commands.executeCommand<{ status: string; summary: string }>('belay.blocks.apply', ...blockArgs(answer, 'EDIT_FILE'));
      assert.equal(outcome?.status, 'applied');
      assert.equal(outcome.summary, "Edited 'app.txt' lines 2-2 (now lines 4-4: the file changed since you read it)");
      assert.equal(await readFile(app, 'utf8'), '# header\n\nalpha\nBETA\ngamma\nDELTA\n');
    } finally {
      await vscode.workspace.getConfiguration('belay').update('blocks.sessionRoot', undefined, vscode.ConfigurationTarget.Workspace);
    }
  });
});

suite('Belay Send to Model', () => {
  const fixtureId = 'belay-test.belay-test-models';
  let model: { answers: string[]; requests: string[] };
  suiteSetup(async () => {
    await activateBelay();
    const extension = vscode.extensions.getExtension<{ answers: string[]; requests: string[] }>(fixtureId);
    assert.ok(extension, `${fixtureId} (test/fixtures/lm-provider) is not loaded in this host`);
    model = await extension.activate();
    await vscode.workspace.getConfiguration('belay').update('blocks.sessionRoot', 'model-root', vscode.ConfigurationTarget.Workspace);
  });
  suiteTeardown(async () => {
    await vscode.workspace.getConfiguration('belay').update('blocks.sessionRoot', undefined, vscode.ConfigurationTarget.Workspace);
  });
  teardown(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });
  const root = () => path.join(folder(), 'model-root');
  const start = async (task: string, change: { model?: string; autoApplyFiles?: boolean }) => {
    const state = await vscode.commands.executeCommand<{ sessionId: string }>('belay.blocks.startSession', task);
    assert.ok(state);
    await updateSession(root(), state.sessionId, change);
    return state.sessionId;
  };
  const activeDocument = () => vscode.window.activeTextEditor?.document;

  test('VS Code\'s model answers the outbox; the answer opens with its lenses, nothing applied; Continue sends the results on', async () => {
    const id = await start('Say hello through a model', { model: 'lm:belay-test/scripted' });
    model.answers.push('[CREATE_FILE path="hello.txt"]\nhello from the model\n[/CREATE_FILE]\n[RUN_COMMAND]\necho ran > ran.txt\n[/RUN_COMMAND]\n');
    const answerFile = await vscode.commands.executeCommand<string>('belay.blocks.sendToModel', id);
    assert.ok(answerFile, 'nothing was sent');
    assert.equal(path.dirname(answerFile), path.join(root(), 'inbox'));
    assert.match(model.requests.at(-1) ?? '', new RegExp(`Session: ${id}\\nSequence: 1\\nTask: Say hello through a model`));
    const answer = activeDocument()!;
    assert.equal(answer.uri.fsPath, answerFile);
    assert.equal(answer.languageId, 'codingagent');
    const titles = await waitForLens(answer.uri, /^\$\(check-all\) Apply All \(2\)$/);
    assert.ok(titles.includes('$(send) Send Results to Model'), titles.join(' | '));
    await assert.rejects(stat(path.join(root(), 'workspace', 'hello.txt')), /ENOENT/, 'applied without a click');
    // The person applies the file, leaves the command out, and continues: the model gets the results.
    assert.equal((await vscode.commands.executeCommand<{ status: string }>('belay.blocks.apply', ...blockArgs(answer, 'CREATE_FILE')))?.status, 'applied');
    model.answers.push('[DONE]\nSaid hello.\n[/DONE]\n');
    const outcome = await vscode.commands.executeCommand<{ state: { sequenceNumber: number } }>('belay.blocks.continueSession', answer.uri.toString(), { confirmed: true });
    assert.equal(outcome?.state.sequenceNumber, 2);
    await waitFor('the model\'s second answer', () => model.requests.length >= 2 && /_answer0002_/.test(activeDocument()?.uri.fsPath ?? ''), [vscode.window.onDidChangeActiveTextEditor]);
    const second = model.requests.at(-1)!;
    assert.match(second, /\[OK\] CREATE_FILE: Created 'hello\.txt'\n\[FAILED\] RUN_COMMAND: Not applied: the person left this block out/);
    await assert.rejects(stat(path.join(root(), 'workspace', 'ran.txt')), /ENOENT/, 'the command ran');
    assert.deepEqual(await readdir(path.join(root(), 'inbox', 'processed')), [path.basename(answerFile)]);
    // The last answer says DONE: continuing completes the session.
    const done = await vscode.commands.executeCommand<{ state: { isComplete: boolean } }>('belay.blocks.continueSession', activeDocument()!.uri.toString(), { confirmed: true });
    assert.equal(done?.state.isComplete, true);
  });

  test('with auto-apply on, file blocks apply as the answer arrives; commands still wait', async () => {
    const id = await start('Auto-apply', { model: 'lm:belay-test/scripted', autoApplyFiles: true });
    model.answers.push('[CREATE_FILE path="auto.txt"]\nauto\n[/CREATE_FILE]\n[RUN_COMMAND]\necho ran > auto-ran.txt\n[/RUN_COMMAND]\n');
    await vscode.commands.executeCommand('belay.blocks.sendToModel', id);
    assert.equal(await readFile(path.join(root(), 'workspace', 'auto.txt'), 'utf8'), 'auto');
    await assert.rejects(stat(path.join(root(), 'workspace', 'auto-ran.txt')), /ENOENT/, 'a command ran without a click');
    const titles = await waitForLens(activeDocument()!.uri, /^\$\(check\) Applied: Created 'auto\.txt'$/);
    assert.ok(titles.includes('Run'), titles.join(' | '));
  });

  test('an OpenAI-compatible endpoint (a real HTTP server here) answers with the key from secret storage', async () => {
    const requests: Array<{ authorization: string | undefined; body: { model: string; messages: Array<{ content: string }> } }> = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        requests.push({ authorization: req.headers.authorization, body: JSON.parse(body) });
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const piece of ['[CREATE_FILE path="from-endpoint.txt"]\n', 'streamed', '\n[/CREATE_FILE]\n']) res.write(`data: ${JSON.stringify({ choices: [{ delta: { content: piece } }] })}\n\n`);
        res.end('data: [DONE]\n\n');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const config = vscode.workspace.getConfiguration('belay');
    try {
      await config.update('blocks.openai.baseUrl', `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`, vscode.ConfigurationTarget.Workspace);
      await config.update('blocks.openai.model', 'test-model', vscode.ConfigurationTarget.Workspace);
      assert.equal(await vscode.commands.executeCommand('belay.blocks.setModelKey', 'sk-belay-test'), true);
      const id = await start('Through an endpoint', { model: 'openai:test-model' });
      const answerFile = await vscode.commands.executeCommand<string>('belay.blocks.sendToModel', id);
      assert.ok(answerFile);
      assert.equal(await readFile(answerFile, 'utf8'), '[CREATE_FILE path="from-endpoint.txt"]\nstreamed\n[/CREATE_FILE]\n');
      assert.equal(requests[0]?.authorization, 'Bearer sk-belay-test');
      assert.equal(requests[0]?.body.model, 'test-model');
      assert.match(requests[0]?.body.messages[0]?.content ?? '', /Task: Through an endpoint/);
      await waitForLens(activeDocument()!.uri, /^Apply$/);
    } finally {
      await config.update('blocks.openai.baseUrl', undefined, vscode.ConfigurationTarget.Workspace);
      await config.update('blocks.openai.model', undefined, vscode.ConfigurationTarget.Workspace);
      await vscode.commands.executeCommand('belay.blocks.setModelKey', '');
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

suite('Belay RUN_COMMAND: sandbox, network question, unsandboxed shell', () => {
  interface Asked {
    message: string;
    detail: string;
    items: string[];
  }
  interface BlocksTestApi {
    questions: { ask(message: string, options: vscode.MessageOptions, ...items: string[]): Thenable<string | undefined> };
    shell: { forgetNetworkAnswer(): Promise<void> };
    applier: { terminals: { create: (options: { name: string; pty: vscode.Pseudoterminal }) => vscode.Terminal | undefined } };
  }
  let blocks: BlocksTestApi;
  let realAsk: BlocksTestApi['questions']['ask'];
  let realCreate: BlocksTestApi['applier']['terminals']['create'];
  const asked: Asked[] = [];
  const written: string[] = [];
  /** What the person answers, by the start of the question. */
  const answers = new Map<string, string>();

  suiteSetup(async () => {
    const { api } = await activateBelay();
    assert.ok(api.test?.blocks, 'the API has no blocks test seams (is the extension in test mode?)');
    blocks = api.test.blocks as BlocksTestApi;
    realAsk = blocks.questions.ask;
    blocks.questions.ask = async (message, options, ...items) => {
      asked.push({ message, detail: options.detail ?? '', items });
      return [...answers].find(([start]) => message.startsWith(start))?.[1];
    };
    realCreate = blocks.applier.terminals.create;
    blocks.applier.terminals.create = ({ name, pty }) => {
      let text = '';
      pty.onDidWrite((chunk) => {
        text += chunk;
        written[written.length - 1] = text;
      });
      written.push('');
      return vscode.window.createTerminal({ name, pty });
    };
    await blocks.shell.forgetNetworkAnswer();
  });
  suiteTeardown(async () => {
    if (!blocks) return;
    blocks.questions.ask = realAsk;
    blocks.applier.terminals.create = realCreate;
    await blocks.shell.forgetNetworkAnswer();
    await vscode.workspace.getConfiguration('belay.blocks').update('commandSandbox', undefined, vscode.ConfigurationTarget.Global);
  });
  teardown(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  async function runBlock(command: 'belay.blocks.run' | 'belay.blocks.runAgain', document: vscode.TextDocument) {
    return vscode.commands.executeCommand<{ status: string; summary: string } | undefined>(command, ...blockArgs(document, 'RUN_COMMAND'));
  }

  test('Run asks about the network once per workspace, names the sandbox in its confirmation and terminal, and the unsandboxed shell when chosen', async function () {
    if (process.platform !== 'linux') this.skip();
    this.timeout(120_000);
    // An untitled answer acts on the session root's workspace/ when it exists, else on the first
    // folder (earlier tests change which): the command's folder is found where it wrote.
    const places = [path.join(demo(), 'workspace'), ...(vscode.workspace.workspaceFolders ?? []).flatMap((f) => [f.uri.fsPath, path.join(f.uri.fsPath, 'workspace')])];
    const ranIn = async () => {
      for (const place of places) if (await stat(path.join(place, 'shell-check', 'interfaces.txt')).then(() => true, () => false)) return place;
      return undefined;
    };
    let out = path.join(demo(), 'workspace', 'shell-check');
    let escape = path.join(demo(), 'shell-escape.txt');
    const answer = await openUntitled('[RUN_COMMAND]\nmkdir -p shell-check && grep -c : /proc/net/dev > shell-check/interfaces.txt; (echo x > ../shell-escape.txt) 2>/dev/null; true\n[/RUN_COMMAND]\n');
    await vscode.window.showTextDocument(answer);
    try {
      await waitForLens(answer.uri, /Run/);
      // The confirmation first, saying the network is asked next; dismissing that question runs nothing and keeps no answer.
      answers.clear();
      answers.set('Run this command', 'Run');
      assert.equal(await runBlock('belay.blocks.run', answer), undefined);
      const question = 'May the LLM\'s commands in this workspace reach the network?';
      assert.deepEqual(asked.map((a) => a.message), ['Run this command from the LLM answer?', question]);
      assert.match(asked[0]!.detail, /\nSandboxed: the workspace and a private \/tmp writable, the system read-only, credentials hidden, the network asked next$/);
      assert.deepEqual(asked[1]!.items, ['Allow Network', 'No Network']);
      assert.equal(await ranIn(), undefined, 'nothing ran');

      asked.length = 0;
      answers.set('May the LLM', 'No Network');
      const first = await runBlock('belay.blocks.run', answer);
      assert.equal(first?.status, 'applied', first?.summary);
      assert.deepEqual(asked.map((a) => a.message), ['Run this command from the LLM answer?', question]);
      const sandboxed = /\nSandboxed: the workspace and a private \/tmp writable, the system read-only, credentials hidden, network off$/;
      assert.match(written.at(-1)!, /^# Sandboxed: .*network off\r\n\$ mkdir -p shell-check/);
      const folder = await ranIn();
      assert.ok(folder, `the command wrote shell-check/interfaces.txt in none of ${places.join(', ')}`);
      out = path.join(folder, 'shell-check');
      escape = path.join(path.dirname(folder), 'shell-escape.txt');
      assert.equal(await readFile(path.join(out, 'interfaces.txt'), 'utf8'), '1\n', 'only its own loopback: the network is off');
      assert.equal(await stat(escape).then(() => true, () => false), false, 'nothing written outside the workspace');

      // Asked once: the next run only confirms, and keeps the answer.
      asked.length = 0;
      const again = await runBlock('belay.blocks.runAgain', answer);
      assert.equal(again?.status, 'applied', again?.summary);
      assert.deepEqual(asked.map((a) => a.message), ['Run this command from the LLM answer?']);
      assert.match(asked[0]!.detail, sandboxed);

      // The unsandboxed shell, chosen in the settings, is named in the confirmation, the terminal and the result.
      await vscode.workspace.getConfiguration('belay.blocks').update('commandSandbox', 'unsandboxed', vscode.ConfigurationTarget.Global);
      asked.length = 0;
      const unsandboxed = await runBlock('belay.blocks.runAgain', answer);
      assert.match(unsandboxed?.summary ?? '', /\(exit code 0, unsandboxed\)$/);
      const line = 'Unsandboxed shell (setting belay.blocks.commandSandbox): commands run as you, with every file you can read and the network';
      assert.deepEqual(asked.map((a) => a.message), ['Run this command from the LLM answer?']);
      assert.ok(asked[0]!.detail.endsWith(`\n${line}`), asked[0]!.detail);
      assert.ok(written.at(-1)!.startsWith(`# ${line}\r\n`), written.at(-1));
      assert.equal(await readFile(escape, 'utf8'), 'x\n', 'as the person, the command writes where the person can');
    } finally {
      await vscode.workspace.getConfiguration('belay.blocks').update('commandSandbox', undefined, vscode.ConfigurationTarget.Global);
      await rm(out, { recursive: true, force: true });
      await rm(escape, { force: true });
    }
  });
});
