import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, utimes, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { renderOutbox } from '../../../src/blocks/core/outbox.ts';
import { CONTINUATION_PROMPT, protocolText } from '../../../src/blocks/core/protocol.ts';
import { readSeen, textDigest } from '../../../src/blocks/core/seen.ts';
import {
  loadSession,
  recordAnswer,
  SessionError,
  answerFileName,
  sessionLayout,
  sessionOfDocument,
  sessionStateSchema,
  startSession,
  stepSession,
  updateSession,
  watchSession,
} from '../../../src/blocks/core/session.ts';
import { tempDir } from '../../support/blocks/helpers.ts';

let root: string;
let cleanup: () => void;
beforeEach(async () => {
  ({ dir: root, remove: cleanup } = tempDir('belay-session-'));
});
afterEach(() => cleanup());

const layout = () => sessionLayout(root);
const inWorkspace = (file: string) => path.join(root, 'workspace', file);

/** The sections of an outbox, by marker. */
function sections(text: string): Record<string, string> {
  const parts = text.split(/^(=== [A-Z]+ ===)$/m);
  assert.equal(parts[0], '', 'the outbox starts with its HEADER marker');
  const out: Record<string, string> = {};
  for (let i = 1; i < parts.length; i += 2) out[parts[i]!] = parts[i + 1]!.replace(/^\n/, '').replace(/\n+$/, '');
  return out;
}

describe('session: start', () => {
  it('creates the layout, the session file and the first outbox, exactly as the protocol describes', async () => {
    await mkdir(path.join(root, 'workspace', 'src'), { recursive: true });
    await writeFile(inWorkspace('src/main.c'), 'int main;');
    const { state, outboxPath } = await startSession(root, 'Build a calculator\nin C');
    for (const folder of ['workspace', 'inbox', 'inbox/processed', 'outbox', 'sessions']) assert.ok(existsSync(path.join(root, folder)), folder);
    assert.match(state.sessionId, /^[0-9a-f]{8}$/);
    assert.equal(outboxPath, path.join(root, 'outbox', `${state.sessionId}_seq0001.txt`));
    const text = await readFile(outboxPath, 'utf8');
    const s = sections(text);
    assert.deepEqual(Object.keys(s), ['=== HEADER ===', '=== PROTOCOL ===', '=== CONTEXT ===', '=== PROMPT ===']);
    assert.equal(s['=== HEADER ==='], `Session: ${state.sessionId}\nSequence: 1\nTask: Build a calculator\n  in C`);
    assert.equal(s['=== PROTOCOL ==='], protocolText());
    assert.equal(s['=== CONTEXT ==='], '## Workspace Files\n  src/main.c (9 bytes)');
    assert.equal(s['=== PROMPT ==='], 'Build a calculator\nin C');
    const saved = sessionStateSchema.parse(JSON.parse(await readFile(path.join(root, 'sessions', `${state.sessionId}.json`), 'utf8')));
    assert.equal(saved.sequenceNumber, 1);
    assert.equal(saved.isComplete, false);
    assert.deepEqual(saved.lastResults, []);
    assert.deepEqual(saved.readFileRequests, []);
    assert.ok(!Number.isNaN(Date.parse(saved.createdAt)) && !Number.isNaN(Date.parse(saved.updatedAt)));
  });

  it('says (empty workspace) and sends the same PROTOCOL text every time', async () => {
    const a = await startSession(root, 'one');
    const b = await startSession(root, 'two');
    const [sa, sb] = await Promise.all([a.outboxPath, b.outboxPath].map(async (p) => sections(await readFile(p, 'utf8'))));
    assert.equal(sa!['=== CONTEXT ==='], '## Workspace Files\n(empty workspace)');
    assert.equal(sa!['=== PROTOCOL ==='], sb!['=== PROTOCOL ===']);
    assert.notEqual(a.state.sessionId, b.state.sessionId);
  });
});

describe('session: step', () => {
  it('applies an answer and writes the next outbox with results, requested contents and the continuation prompt', async () => {
    const { state } = await startSession(root, 'task');
    const answer = '[CREATE_FILE path="src/a.py"]\nprint(1)\n\n[/CREATE_FILE]\n[READ_FILE path="src/a.py"]\n[READ_FILE path="nope.txt"]\n[RUN_COMMAND]echo hi[/RUN_COMMAND]';
    const outcome = await stepSession(root, answer);
    assert.equal(outcome.kind, 'applied');
    assert.equal(outcome.outboxPath, path.join(root, 'outbox', `${state.sessionId}_seq0002.txt`));
    const s = sections(await readFile(outcome.outboxPath!, 'utf8'));
    assert.equal(s['=== HEADER ==='], `Session: ${state.sessionId}\nSequence: 2\nTask: task`);
    assert.equal(
      s['=== CONTEXT ==='],
      [
        '## Workspace Files',
        '  src/a.py (9 bytes)',
        '',
        '## Previous Command Results',
        "[OK] CREATE_FILE: Created 'src/a.py'",
        "[OK] READ_FILE: Queued 'src/a.py' for next outbox",
        "[FAILED] READ_FILE: File 'nope.txt' not found",
        "[OK] RUN_COMMAND: Ran 'echo hi' (exit code 0)",
        '  Output: hi',
        '',
        '## Requested File Contents',
        '--- src/a.py ---',
        'print(1)',
        '--- end src/a.py ---',
      ].join('\n'),
    );
    assert.equal(s['=== PROMPT ==='], CONTINUATION_PROMPT);
    const saved = await loadSession(layout(), state.sessionId);
    assert.equal(saved.sequenceNumber, 2);
    assert.deepEqual(saved.readFileRequests, ['src/a.py']);
    assert.deepEqual(saved.lastResults[3], { commandType: 'RUN_COMMAND', summary: "Ran 'echo hi' (exit code 0)", success: true, output: 'hi' });
    assert.equal(saved.pendingAnswer, undefined);
  });

  it('records what the LLM saw with each outbox: a digest per listed file, the text of each file sent whole', async () => {
    const { outboxPath: first } = await startSession(root, 'task');
    assert.deepEqual(await readSeen(first).then((s) => s && [[...s.digests], [...s.texts]]), [[], []]);
    await writeFile(inWorkspace('a.py'), 'print(1)\n');
    await writeFile(inWorkspace('b.py'), 'print(2)\n');
    const outcome = await stepSession(root, '[READ_FILE path="./a.py"]');
    const seen = await readSeen(outcome.outboxPath!);
    assert.deepEqual([...seen!.digests].sort(), [
      ['a.py', textDigest('print(1)\n')],
      ['b.py', textDigest('print(2)\n')],
    ]);
    assert.deepEqual([...seen!.texts], [['a.py', 'print(1)\n']]);
    // Kept with the session, out of the outbox folder.
    assert.deepEqual((await readdir(path.join(root, 'outbox'))).filter((f) => !f.endsWith('.txt')), []);
  });

  it('carries an edit over a change made since the LLM read the file, as the editor does', async () => {
    const { state } = await startSession(root, 'task');
    await writeFile(inWorkspace('a.py'), 'one\ntwo\n');
    await stepSession(root, '[READ_FILE path="a.py"]');
    await writeFile(inWorkspace('a.py'), '# added\none\ntwo\n');
    const source = path.join(root, 'inbox', `${state.sessionId}_answer0002_1.txt`);
    const answer = '[EDIT_FILE path="a.py" start_line="2" end_line="2"]\nTWO\n[/EDIT_FILE]';
    await writeFile(source, answer);
    const outcome = await stepSession(root, answer, { source });
    assert.equal(await readFile(inWorkspace('a.py'), 'utf8'), '# added\none\nTWO\n');
    assert.deepEqual(outcome.report?.results.map((r) => r.summary), ["Edited 'a.py' lines 2-2 (now lines 3-3: the file changed since you read it)"]);
  });

  it('records an answer the editor applied block by block: its results go into the next outbox, once', async () => {
    const { state } = await startSession(root, 'task');
    const answer = '[CREATE_FILE path="a.txt"]\nA\n[/CREATE_FILE]\n[RUN_COMMAND]make[/RUN_COMMAND]';
    const source = path.join(root, 'inbox', `${state.sessionId}_answer0001_1.txt`);
    await writeFile(source, answer);
    const results = [
      { commandType: 'CREATE_FILE' as const, summary: "Created 'a.txt'", success: true },
      { commandType: 'RUN_COMMAND' as const, summary: 'Not applied: the person left this block out', success: false },
    ];
    const outcome = await recordAnswer(root, answer, { sessionId: state.sessionId, results, readFileRequests: [], done: false, source });
    assert.equal(outcome.kind, 'applied');
    assert.equal(outcome.state.sequenceNumber, 2);
    assert.match(await readFile(outcome.outboxPath!, 'utf8'), /\[OK\] CREATE_FILE: Created 'a\.txt'\n\[FAILED\] RUN_COMMAND: Not applied: the person left this block out/);
    assert.deepEqual(await readdir(path.join(root, 'inbox', 'processed')), [path.basename(source)]);
    assert.equal((await recordAnswer(root, answer, { sessionId: state.sessionId, results, readFileRequests: [], done: false })).kind, 'duplicate');
    const saved = await updateSession(root, state.sessionId, { autoApplyFiles: true, model: 'openai:m' });
    assert.deepEqual([saved.autoApplyFiles, saved.model, saved.sequenceNumber], [true, 'openai:m', 2]);
    assert.equal((await updateSession(root, state.sessionId, { autoApplyFiles: undefined })).autoApplyFiles, undefined);
  });

  it('never applies the same answer twice, and resuming never skips a sequence number', async () => {
    const { state } = await startSession(root, 'task');
    const append = '[RUN_COMMAND]echo x >> log.txt[/RUN_COMMAND]';
    await stepSession(root, append);
    const again = await stepSession(root, append);
    assert.equal(again.kind, 'duplicate');
    assert.equal(await readFile(inWorkspace('log.txt'), 'utf8'), 'x\n');
    await stepSession(root, '[MESSAGE]next[/MESSAGE]', { sessionId: state.sessionId });
    assert.deepEqual(await readdir(path.join(root, 'outbox')), [1, 2, 3].map((n) => `${state.sessionId}_seq000${n}.txt`));
    assert.equal((await loadSession(layout(), state.sessionId)).sequenceNumber, 3);
  });

  it('after an interruption while applying, does not apply that answer again and tells the LLM', async () => {
    const { state } = await startSession(root, 'task');
    const answer = '[RUN_COMMAND]echo x >> log.txt[/RUN_COMMAND]';
    // What a crash between "about to apply" and "done" leaves behind.
    const file = path.join(root, 'sessions', `${state.sessionId}.json`);
    const saved = JSON.parse(await readFile(file, 'utf8'));
    const { createHash } = await import('node:crypto');
    saved.pendingAnswer = { sha256: createHash('sha256').update(answer).digest('hex'), sequence: 1 };
    await writeFile(file, JSON.stringify(saved));
    const outcome = await stepSession(root, answer);
    assert.equal(outcome.kind, 'duplicate');
    assert.equal(existsSync(inWorkspace('log.txt')), false);
    assert.equal(outcome.outboxPath, path.join(root, 'outbox', `${state.sessionId}_seq0002.txt`));
    assert.match(await readFile(outcome.outboxPath!, 'utf8'), /Belay stopped while applying your last answer/);
    const next = await stepSession(root, '[MESSAGE]go on[/MESSAGE]');
    assert.equal(next.outboxPath, path.join(root, 'outbox', `${state.sessionId}_seq0003.txt`));
    assert.doesNotMatch(await readFile(next.outboxPath!, 'utf8'), /Belay stopped/);
  });

  it('completes on DONE without a further outbox, and refuses further answers', async () => {
    const { state } = await startSession(root, 'task');
    const outcome = await stepSession(root, '[DONE]All done[/DONE]');
    assert.equal(outcome.outboxPath, undefined);
    const saved = await loadSession(layout(), state.sessionId);
    assert.equal(saved.isComplete, true);
    assert.deepEqual(saved.lastResults, [{ commandType: 'DONE', summary: 'All done', success: true }]);
    await assert.rejects(stepSession(root, '[MESSAGE]more[/MESSAGE]', { sessionId: state.sessionId }), SessionError);
    await assert.rejects(stepSession(root, '[MESSAGE]more[/MESSAGE]'), /no open session/);
  });

  it('moves an inbox file to inbox/processed/, and leaves no temporary files', async () => {
    await startSession(root, 'task');
    const file = path.join(root, 'inbox', 'answer.txt');
    await writeFile(file, '[MESSAGE]hi[/MESSAGE]');
    await stepSession(root, await readFile(file, 'utf8'), { source: file });
    assert.deepEqual(await readdir(path.join(root, 'inbox')), ['processed']);
    assert.deepEqual(await readdir(path.join(root, 'inbox', 'processed')), ['answer.txt']);
    for (const folder of ['outbox', 'sessions']) assert.ok((await readdir(path.join(root, folder))).every((n) => !n.endsWith('.tmp') && !n.endsWith('.lock')));
  });

  it('rejects a damaged session file with a clear message', async () => {
    const { state } = await startSession(root, 'task');
    await writeFile(path.join(root, 'sessions', `${state.sessionId}.json`), '{"sessionId": 3}');
    await assert.rejects(loadSession(layout(), state.sessionId), /is not a Belay session: sessionId/);
  });
});

describe('session: watch', () => {
  it('processes inbox files oldest first, including ones that arrive while watching, until DONE', { timeout: 30_000 }, async () => {
    const { state } = await startSession(root, 'task');
    const inbox = path.join(root, 'inbox');
    const now = Date.now() / 1000;
    // Written in one order, dated in another: the dates decide.
    await writeFile(path.join(inbox, 'b.txt'), '[RUN_COMMAND]echo second >> order.txt[/RUN_COMMAND]');
    await writeFile(path.join(inbox, 'a.txt'), '[RUN_COMMAND]echo first >> order.txt[/RUN_COMMAND]');
    await writeFile(path.join(inbox, 'ignored.md'), '[DONE]not an answer[/DONE]');
    // Named after another session: that session's answer, never this one's.
    await writeFile(path.join(inbox, '0000beef_answer0001_1.txt'), '[RUN_COMMAND]echo other >> order.txt[/RUN_COMMAND]');
    await utimes(path.join(inbox, 'b.txt'), now - 50, now - 50);
    await utimes(path.join(inbox, 'a.txt'), now - 100, now - 100);
    const seen: string[] = [];
    let arrived!: () => void;
    const twoProcessed = new Promise<void>((resolve) => (arrived = resolve));
    const watching = watchSession(root, {
      settleMs: 0,
      pollMs: 60_000,
      onStep: (outcome, file) => {
        seen.push(`${path.basename(file)}:${outcome.outboxPath ? path.basename(outcome.outboxPath) : 'complete'}`);
        if (seen.length === 2) arrived();
      },
    });
    await twoProcessed;
    await writeFile(path.join(inbox, 'c.txt'), '[RUN_COMMAND]echo third >> order.txt[/RUN_COMMAND]\n[DONE]ok[/DONE]');
    const final = await watching;
    assert.equal(final.isComplete, true);
    assert.deepEqual(seen, [`a.txt:${state.sessionId}_seq0002.txt`, `b.txt:${state.sessionId}_seq0003.txt`, 'c.txt:complete']);
    assert.equal(await readFile(inWorkspace('order.txt'), 'utf8'), 'first\nsecond\nthird\n');
    assert.deepEqual((await readdir(inbox)).sort(), ['0000beef_answer0001_1.txt', 'ignored.md', 'processed']);
  });

  it('stops when its signal aborts', { timeout: 30_000 }, async () => {
    await startSession(root, 'task');
    const controller = new AbortController();
    const watching = watchSession(root, { signal: controller.signal, pollMs: 60_000 });
    controller.abort();
    const state = await watching;
    assert.equal(state.isComplete, false);
  });
});

describe('outbox rendering', () => {
  it('caps a huge listing and reports interrupted processing in place of results', () => {
    const files = Array.from({ length: 2005 }, (_, i) => ({ path: `f${String(i).padStart(5, '0')}`, size: 1 }));
    const text = renderOutbox({ sessionId: 'abcdef01', sequence: 2, task: 't', files, requested: [], notice: 'interrupted' });
    assert.match(text, /\n {2}f01999 \(1 bytes\)\n {2}\.\.\. and 5 more files\n/);
    assert.match(text, /## Previous Command Results\ninterrupted\n/);
  });
});

describe('session: which session a document belongs to', () => {
  it('an outbox by its place, an answer in inbox/ or inbox/processed/ by its name, an outbox elsewhere by its HEADER', () => {
    const root = path.join(path.sep, 'w', 'root');
    assert.deepEqual(sessionOfDocument(path.join(root, 'outbox', '0123abcd_seq0003.txt'), ''), { root, sessionId: '0123abcd', sequence: 3 });
    const answer = answerFileName('0123abcd', 2, 1700000000000);
    assert.equal(answer, '0123abcd_answer0002_1700000000000.txt');
    assert.deepEqual(sessionOfDocument(path.join(root, 'inbox', answer), 'anything'), { root, sessionId: '0123abcd', sequence: 2 });
    assert.deepEqual(sessionOfDocument(path.join(root, 'inbox', 'processed', answer), 'anything'), { root, sessionId: '0123abcd', sequence: 2 });
    const outboxText = renderOutbox({ sessionId: 'feedbeef', sequence: 4, task: 't', files: [], requested: [] });
    assert.deepEqual(sessionOfDocument(path.join(root, 'copy.txt'), `\ufeff${outboxText}`), { sessionId: 'feedbeef', sequence: 4 });
    assert.deepEqual(sessionOfDocument(undefined, outboxText), { sessionId: 'feedbeef', sequence: 4 });
  });

  it('anything else belongs to no session: the caller asks rather than guesses', () => {
    const root = path.join(path.sep, 'w', 'root');
    assert.equal(sessionOfDocument(path.join(root, 'answers', 'x.agent'), '[CREATE_FILE path="a"]\n[/CREATE_FILE]'), undefined);
    assert.equal(sessionOfDocument(path.join(root, 'workspace', 'outbox', 'notes.txt'), 'Session: 0123abcd'), undefined);
    assert.equal(sessionOfDocument(path.join(root, 'inbox', 'my-answer.txt'), ''), undefined);
    assert.equal(sessionOfDocument(path.join(root, 'elsewhere', '0123abcd_seq0001.txt'), ''), undefined);
    assert.equal(sessionOfDocument(undefined, 'Session: 0123abcd'), undefined);
  });
});
