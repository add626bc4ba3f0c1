// The one planning function every caller shares (language server, editor, `belay blocks apply`):
// a code for every failure kind, warnings as data, skipping, stale edits, simulating versus
// carrying out. Real files in temporary folders.
import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, symlink, utimes, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { looksLikeAnswer } from '../../../src/blocks/core/answerTarget.ts';
import { executeAnswer } from '../../../src/blocks/core/executor.ts';
import { lensArguments } from '../../../src/blocks/core/lenses.ts';
import { AnswerState, planAnswer, type PlannedBlock } from '../../../src/blocks/core/plan.ts';
import { outcomeStatus } from '../../../src/blocks/core/results.ts';
import { openWorkspace, resolveInWorkspace, type Workspace } from '../../../src/blocks/core/sandbox.ts';
import { textDigest, writeSeen } from '../../../src/blocks/core/seen.ts';
import { sessionWithChangedFile, tempDir } from '../../support/blocks/helpers.ts';

let base: string;
let ws: string;
let cleanup: () => void;
let workspace: Workspace;

beforeEach(async () => {
  ({ dir: base, remove: cleanup } = tempDir());
  ws = path.join(base, 'ws');
  await mkdir(ws);
  workspace = await openWorkspace(ws);
});
afterEach(() => cleanup());

const write = (name: string, text: string | Buffer) => writeFile(path.join(ws, name), text);

/** Each block as `code` when its plan fails, else its kind (and warning). */
const kinds = (blocks: readonly PlannedBlock[]) => blocks.map(({ plan }) => (plan.kind === 'fail' ? plan.code : plan.kind === 'write' && plan.warning ? `write ${plan.warning}` : plan.kind));

describe('planAnswer: every failure has a code', () => {
  it('codes each way a block can fail, keeping the summary people and the LLM read', async () => {
    await write('a.txt', '1\n2\n3\n');
    await write('bin.dat', Buffer.from([0, 1, 2]));
    await mkdir(path.join(ws, 'dir'));
    await symlink('/etc', path.join(ws, 'link'));
    const { blocks } = await planAnswer(
      workspace,
      [
        '[CREATE_FILE path="../out.txt"]\nx\n[/CREATE_FILE]',
        '[CREATE_FILE path="link/passwd"]\nx\n[/CREATE_FILE]',
        '[EDIT_FILE path="missing.txt" start_line="1" end_line="1"]\nx\n[/EDIT_FILE]',
        '[CREATE_FILE path="dir"]\nx\n[/CREATE_FILE]',
        '[EDIT_FILE path="bin.dat" start_line="1" end_line="1"]\nx\n[/EDIT_FILE]',
        '[EDIT_FILE path="a.txt" start_line="9" end_line="9"]\nx\n[/EDIT_FILE]',
        '[EDIT_FILE path="a.txt" start_line="1" end_line="2"]\nx\n[/EDIT_FILE]',
        '[EDIT_FILE path="a.txt" start_line="2" end_line="2"]\ny\n[/EDIT_FILE]',
        '[EDIT_FILE path="a.txt" start_line="3" end_line="99"]\nz\n[/EDIT_FILE]',
        '[READ_FILE path="a.txt/inner"]',
        '[DELETE_FILE path="."]',
        '[DELETE_FILE path="dir"]',
        '[READ_FILE path="gone.txt"]',
        '[RUN_COMMAND]true[/RUN_COMMAND]',
      ].join('\n'),
    );
    assert.deepEqual(kinds(blocks), [
      'outside-workspace',
      'outside-workspace',
      'not-found',
      'is-folder',
      'not-text',
      'line-range',
      'write',
      'overlap',
      'write end-line-cut',
      'through-file',
      'workspace-folder',
      'is-folder',
      'not-found',
      'run',
    ]);
    const summaries = blocks.map(({ plan }) => ('result' in plan ? plan.result.summary : ''));
    assert.equal(summaries[0], "REJECTED: Path '../out.txt' is outside workspace");
    assert.equal(summaries[5], 'Invalid line range 9-9 for file with 3 lines');
    assert.equal(summaries[7], 'Lines 2-2 overlap lines 1-2 edited earlier in this answer');
    assert.equal(summaries[8], "Edited 'a.txt' lines 3-3 (end_line 99 is past the end of the file, cut to 3) (at line 2 after earlier edits in this answer)");
  });

  it('the sandbox says why it refuses a path, as a code', async () => {
    const codeOf = async (given: string) => {
      const resolution = await resolveInWorkspace(workspace, given);
      return resolution.ok ? 'ok' : resolution.code;
    };
    await write('f.txt', 'x');
    assert.equal(await codeOf('  '), 'empty-path');
    assert.equal(await codeOf('/etc/passwd'), 'outside-workspace');
    assert.equal(await codeOf('f.txt/x'), 'through-file');
    assert.equal(await codeOf('f.txt'), 'ok');
  });

  it('a rejected path is what the editor shows as rejected; any other failure as failed', () => {
    const result = (success: boolean) => ({ commandType: 'CREATE_FILE' as const, summary: 's', success });
    assert.equal(outcomeStatus({ result: result(true) }), 'applied');
    assert.equal(outcomeStatus({ result: result(false), code: 'outside-workspace' }), 'rejected');
    assert.equal(outcomeStatus({ result: result(false), code: 'not-found' }), 'failed');
  });

  it('carrying an answer out codes what fails only then: commands, parse errors', async () => {
    // Each command under a timeout it cannot reach by chance on a loaded machine: `exit 3` with the
    // default 30 s, `sleep 30` with a short one.
    const report = await executeAnswer(workspace, '[RUN_COMMAND]exit 3[/RUN_COMMAND]\n[EDIT_FILE path="a" start_line="x" end_line="1"]\n[/EDIT_FILE]\n[MESSAGE]hi[/MESSAGE]');
    const slow = await executeAnswer(workspace, '[RUN_COMMAND]sleep 30[/RUN_COMMAND]', { runTimeoutMs: 300 });
    assert.deepEqual(
      [...report.items, ...slow.items].map((item) => item.code ?? 'ok'),
      ['exit-code', 'parse-error', 'ok', 'timeout'],
    );
  });
});

describe('planAnswer: what callers ask for', () => {
  it('simulates on a copy of the given state and touches nothing; skipped blocks are not planned', async () => {
    await write('a.txt', '1\n2\n');
    const answer = '[EDIT_FILE path="a.txt" start_line="1" end_line="1"]\nA\nA\n[/EDIT_FILE]\n[DELETE_FILE path="a.txt"]\n[EDIT_FILE path="a.txt" start_line="2" end_line="2"]\nB\n[/EDIT_FILE]';
    const state = new AnswerState();
    const plan = await planAnswer(workspace, answer, { state, skip: (index) => index === 1 });
    assert.deepEqual(plan.blocks.map((b) => b.index), [0, 2]);
    const last = plan.blocks[1]!.plan;
    assert.ok(last.kind === 'write');
    assert.equal(last.after, 'A\nA\nB\n', 'the second edit sees the first one, shifted');
    assert.equal(plan.state.simulated(path.join(ws, 'a.txt')), 'A\nA\nB\n');
    assert.equal(state.history(path.join(ws, 'a.txt')), undefined, 'the given state is left as it was');
    assert.equal(await readFile(path.join(ws, 'a.txt'), 'utf8'), '1\n2\n');
  });

  it('parse errors come in order among the blocks, each with its outcome', async () => {
    const { items } = await planAnswer(workspace, '[MESSAGE]a[/MESSAGE]\n[EDIT_FILE path="x" start_line="q" end_line="1"]\n[/EDIT_FILE]\n[DONE]b[/DONE]');
    assert.deepEqual(
      items.map((item) => ('error' in item ? `${item.outcome.code}: ${item.outcome.result.summary}` : item.plan.kind)),
      ['message', "parse-error: Line 2: EDIT_FILE start_line must be an integer, got 'q'", 'done'],
    );
  });

  it('marks the first edit of each file whose content changed since the outbox the answer replies to, in a session root only', async () => {
    const { root, outbox } = await sessionWithChangedFile(base);
    const answer = [
      '[EDIT_FILE path="old.txt" start_line="1" end_line="1"]\nx\n[/EDIT_FILE]',
      '[EDIT_FILE path="new.txt" start_line="1" end_line="1"]\ny\n[/EDIT_FILE]',
      '[EDIT_FILE path="new.txt" start_line="2" end_line="2"]\nz\n[/EDIT_FILE]',
    ].join('\n');
    const sessionWorkspace = await openWorkspace(path.join(root, 'workspace'));
    const target = { workspace: sessionWorkspace.root, sessionRoot: root };
    const { blocks } = await planAnswer(sessionWorkspace, answer, { stale: { target, answerPath: undefined } });
    assert.deepEqual(blocks.map((b) => b.staleSince), [undefined, outbox, undefined]);
    const outside = await planAnswer(sessionWorkspace, answer, { stale: { target: { workspace: sessionWorkspace.root }, answerPath: undefined } });
    assert.deepEqual(outside.blocks.map((b) => b.staleSince), [undefined, undefined, undefined], 'no session root, no outbox to compare with');
  });

  it('carries an edit of a file changed since the LLM read it to where its lines are now; refuses it when they changed', async () => {
    const root = path.join(base, 'relocate');
    for (const folder of ['workspace', 'sessions', 'outbox']) await mkdir(path.join(root, folder), { recursive: true });
    const read = 'a\nb\nc\nd\ne\n';
    const outbox = path.join(root, 'outbox', '0123abcd_seq0002.txt');
    await writeFile(outbox, '=== HEADER ===\n');
    await writeSeen(outbox, { files: { 'app.py': textDigest(read) }, texts: { 'app.py': read } });
    // Since then someone added two lines at the top and changed d.
    await writeFile(path.join(root, 'workspace', 'app.py'), 'new0\nnew1\na\nb\nc\nD!\ne\n');
    const sessionWorkspace = await openWorkspace(path.join(root, 'workspace'));
    const answer = [
      '[EDIT_FILE path="app.py" start_line="2" end_line="3"]\nB\nC\nC2\n[/EDIT_FILE]',
      '[EDIT_FILE path="app.py" start_line="4" end_line="4"]\nd?\n[/EDIT_FILE]',
      '[EDIT_FILE path="app.py" start_line="5" end_line="5"]\nE\n[/EDIT_FILE]',
    ].join('\n');
    const { blocks } = await planAnswer(sessionWorkspace, answer, { stale: { target: { workspace: sessionWorkspace.root, sessionRoot: root }, answerPath: path.join(root, 'inbox', '0123abcd_answer0002_1.txt') } });
    const [first, second, third] = blocks.map((b) => b.plan);
    assert.equal(first?.kind, 'write');
    assert.deepEqual(first?.kind === 'write' && first.relocated, { outbox, from: [2, 3], to: [4, 5] });
    assert.match(first?.kind === 'write' ? first.result.summary : '', /^Edited 'app\.py' lines 2-3 \(now lines 4-5: the file changed since you read it\)$/);
    assert.equal(second?.kind === 'fail' && second.code, 'conflict');
    assert.equal(second?.kind === 'fail' && second.result.summary, "Lines 4-4 of 'app.py' changed since you read the file; not edited. They are now:\n  6: D!\nRead the file again and send the edit for its current lines.");
    // Later edits of the file are carried over too, after the earlier edit's extra line.
    assert.equal(third?.kind === 'write' && third.after, 'new0\nnew1\na\nB\nC\nC2\nD!\nE\n');
    assert.deepEqual(blocks.map((b) => b.staleSince), [undefined, undefined, undefined], 'carried over, not merely stale');
  });

  it('a fresh clone: files newer than the outbox but with the content the LLM saw are not stale', async () => {
    const { root } = await sessionWithChangedFile(base);
    const now = new Date();
    for (const file of ['old.txt', 'new.txt']) await utimes(path.join(root, 'workspace', file), now, now);
    const sessionWorkspace = await openWorkspace(path.join(root, 'workspace'));
    const { blocks } = await planAnswer(sessionWorkspace, '[EDIT_FILE path="old.txt" start_line="1" end_line="1"]\nx\n[/EDIT_FILE]', {
      stale: { target: { workspace: sessionWorkspace.root, sessionRoot: root }, answerPath: undefined },
    });
    assert.deepEqual(blocks.map((b) => [b.plan.kind, b.staleSince]), [['write', undefined]]);
  });

  it('carries each block out before planning the next when asked, as `belay blocks apply` does', async () => {
    const state = new AnswerState();
    const order: string[] = [];
    const plan = await planAnswer(workspace, '[RUN_COMMAND]echo hi > made.txt[/RUN_COMMAND]\n[EDIT_FILE path="made.txt" start_line="1" end_line="1"]\nHI\n[/EDIT_FILE]', {
      state,
      carryOut: async (block) => {
        order.push(block.plan.kind);
        if (block.plan.kind === 'run') await write('made.txt', 'hi\n');
        if (block.plan.kind === 'write') await write('made.txt', block.plan.after);
        state.record(block.plan);
        return { result: { commandType: block.command.type, summary: 'done', success: true } };
      },
    });
    assert.deepEqual(order, ['run', 'write'], 'the edit was planned after the command had made its file');
    assert.deepEqual(plan.blocks.map((b) => b.outcome?.result.summary), ['done', 'done']);
    assert.deepEqual(await readdir(ws), ['made.txt']);
    assert.equal(await readFile(path.join(ws, 'made.txt'), 'utf8'), 'HI\n');
  });
});

describe('the editor side of the contract, in plain Node', () => {
  it('lens arguments are [documentUri, openTagLine, blockKey], nothing else', () => {
    assert.deepEqual(lensArguments(['file:///a.agent', 3, 'k#1']), ['file:///a.agent', 3, 'k#1']);
    for (const bad of [undefined, [], ['file:///a.agent', 3], ['file:///a.agent', -1, 'k'], ['file:///a.agent', 1.5, 'k'], [1, 2, 3], ['u', 1, 'k', 'extra']]) {
      assert.equal(lensArguments(bad), undefined, JSON.stringify(bad));
    }
  });

  it('content detection: an opening tag and a closing one (or a one-line block) make an answer', () => {
    assert.ok(looksLikeAnswer('Sure:\n[CREATE_FILE path="a.py"]\nprint(1)\n[/CREATE_FILE]\n'));
    assert.ok(looksLikeAnswer('[RUN_COMMAND]\nls\n[/RUN_COMMAND]'));
    assert.ok(looksLikeAnswer('[EDIT_FILE path="a" start_line="1" end_line="1"]\n[DELETE_FILE path="b"]'));
    assert.ok(!looksLikeAnswer('Use [CREATE_FILE path="x"] to make files.'), 'an opening tag inside prose');
    assert.ok(!looksLikeAnswer('[CREATE_FILE path="a.py"]\nprint(1)\n'), 'no closing tag');
  });
});
