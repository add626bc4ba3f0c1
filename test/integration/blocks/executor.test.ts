import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { applyPlan, executeAnswer } from '../../../src/blocks/core/executor.ts';
import { parseAnswer } from '../../../src/blocks/core/parser.ts';
import { AnswerState, planAnswer } from '../../../src/blocks/core/plan.ts';
import { formatResult, formatResults } from '../../../src/blocks/core/results.ts';
import { openWorkspace, type Workspace } from '../../../src/blocks/core/sandbox.ts';
import { fixture, markedEnv, markLine, processesMarked, tempDir } from '../../support/blocks/helpers.ts';

let ws: string;
let cleanup: () => void;
let workspace: Workspace;

beforeEach(async () => {
  ({ dir: ws, remove: cleanup } = tempDir());
  workspace = await openWorkspace(ws);
});
afterEach(() => cleanup());

const read = (name: string) => readFile(path.join(ws, name), 'utf8');
const write = (name: string, text: string | Buffer) => writeFile(path.join(ws, name), text);

async function lines(answer: string, options = {}): Promise<string> {
  return formatResults((await executeAnswer(workspace, answer, options)).results);
}

describe('executor: the seven commands and their result lines', () => {
  it('runs a realistic answer in order', async () => {
    const report = await executeAnswer(workspace, await fixture('every-command.txt'));
    assert.deepEqual(
      report.results.map((r) => formatResult(r).split('\n')[0]),
      [
        "[OK] CREATE_FILE: Created 'src/hello.py'",
        "[OK] CREATE_FILE: Created 'notes/todo.md'",
        "[OK] EDIT_FILE: Edited 'src/hello.py' lines 2-2",
        "[OK] READ_FILE: Queued 'src/hello.py' for next outbox",
        `[OK] RUN_COMMAND: Ran 'python3 src/hello.py || echo "no python"' (exit code 0)`,
        "[OK] DELETE_FILE: Deleted 'notes/todo.md'",
        '[OK] MESSAGE: The greeting now uses an f-string.',
        '[OK] DONE: Created src/hello.py and fixed the greeting.',
      ],
    );
    assert.equal(await read('src/hello.py'), 'def greet(name):\n    return f"Hello, {name}!"\n\nif __name__ == "__main__":\n    print(greet("world"))\n');
    assert.equal(existsSync(path.join(ws, 'notes', 'todo.md')), false);
    assert.ok(report.done && report.success);
    assert.deepEqual(report.readFileRequests, ['src/hello.py']);
  });

  it('reports failures in the protocol format', async () => {
    assert.equal(
      await lines('[EDIT_FILE path="x" start_line="1" end_line="1"]\na\n[/EDIT_FILE]\n[DELETE_FILE path="x"]\n[READ_FILE path="x"]\n[RUN_COMMAND]exit 3[/RUN_COMMAND]'),
      [
        "[FAILED] EDIT_FILE: File 'x' not found",
        "[FAILED] DELETE_FILE: File 'x' not found",
        "[FAILED] READ_FILE: File 'x' not found",
        "[FAILED] RUN_COMMAND: Ran 'exit 3' (exit code 3)",
      ].join('\n'),
    );
  });

  it('turns parse errors into PARSE_ERROR results, in order, and runs nothing from an unclosed block', async () => {
    const report = await executeAnswer(workspace, '[CREATE_FILE path="a.txt"]\na\n[/CREATE_FILE]\n[EDIT_FILE path="a.txt" start_line="x" end_line="1"]\n[/EDIT_FILE]\n[RUN_COMMAND]\ntouch ran\n[CREATE_FILE path="b.txt"]\nb\n[/CREATE_FILE]');
    assert.deepEqual(report.results.map(formatResult), [
      "[OK] CREATE_FILE: Created 'a.txt'",
      "[FAILED] PARSE_ERROR: Line 4: EDIT_FILE start_line must be an integer, got 'x'",
      '[FAILED] PARSE_ERROR: Line 6: RUN_COMMAND missing closing tag [/RUN_COMMAND]; it and everything after it were not executed',
    ]);
    assert.equal(existsSync(path.join(ws, 'b.txt')), false);
    assert.equal(existsSync(path.join(ws, 'ran')), false);
    assert.equal(report.success, false);
  });

  it('runs commands after DONE, and still reports DONE', async () => {
    const report = await executeAnswer(workspace, '[DONE]Finished[/DONE]\n[CREATE_FILE path="after.txt"]\nlate\n[/CREATE_FILE]');
    assert.ok(report.done);
    assert.equal(await read('after.txt'), 'late');
  });

  it('creates parent folders, writes UTF-8 without BOM or final newline, keeps an existing file\'s permissions', async () => {
    await write('tool.sh', '#!/bin/sh\n');
    await chmod(path.join(ws, 'tool.sh'), 0o755);
    await lines('[CREATE_FILE path="deep/er/é.txt"]\nnaïve\n[/CREATE_FILE]\n[CREATE_FILE path="tool.sh"]\n#!/bin/sh\necho hi\n\n[/CREATE_FILE]');
    assert.deepEqual(await readFile(path.join(ws, 'deep', 'er', 'é.txt')), Buffer.from('naïve', 'utf8'));
    assert.equal(await read('tool.sh'), '#!/bin/sh\necho hi\n');
    assert.equal((await stat(path.join(ws, 'tool.sh'))).mode & 0o777, 0o755);
  });

  it('small files and large ones (written in place, or through the thread pool) land whole, keeping permissions, leaving no temporary file', async () => {
    const big = `${'a line of a large file\n'.repeat(40_000)}end`;
    for (const name of ['small.sh', 'big.sh']) {
      await write(name, 'old\n');
      await chmod(path.join(ws, name), 0o750);
    }
    const answer = `[CREATE_FILE path="small.sh"]\nsmall\n[/CREATE_FILE]\n[CREATE_FILE path="big.sh"]\n${big}\n[/CREATE_FILE]\n[CREATE_FILE path="new/big.txt"]\n${big}\n[/CREATE_FILE]`;
    assert.ok((await executeAnswer(workspace, answer)).success);
    assert.equal(await read('small.sh'), 'small');
    assert.equal(await read('big.sh'), big);
    assert.equal(await read('new/big.txt'), big);
    for (const name of ['small.sh', 'big.sh']) assert.equal((await stat(path.join(ws, name))).mode & 0o777, 0o750);
    assert.deepEqual((await readdir(ws)).sort(), ['big.sh', 'new', 'small.sh']);
    assert.deepEqual(await readdir(path.join(ws, 'new')), ['big.txt']);
  });

  it('writes atomically: no temporary file is left, and a failed write leaves no folder behind', async () => {
    await lines('[CREATE_FILE path="a.txt"]\nx\n[/CREATE_FILE]');
    assert.deepEqual(await readdir(ws), ['a.txt']);
    const tooLong = `new-folder/${'n'.repeat(300)}.txt`;
    const [result] = (await executeAnswer(workspace, `[CREATE_FILE path="${tooLong}"]\nx\n[/CREATE_FILE]`)).results;
    assert.equal(result!.success, false);
    assert.match(result!.summary, /^Could not write/);
    assert.deepEqual(await readdir(ws), ['a.txt']);
  });

  it('refuses to create a file where a folder is, and to delete a folder', async () => {
    await mkdir(path.join(ws, 'dir'));
    assert.equal(
      await lines('[CREATE_FILE path="dir"]\nx\n[/CREATE_FILE]\n[DELETE_FILE path="dir"]'),
      "[FAILED] CREATE_FILE: 'dir' is a folder\n[FAILED] DELETE_FILE: 'dir' is a folder; DELETE_FILE deletes files only",
    );
  });
});

describe('executor: EDIT_FILE', () => {
  it('replaces, grows and shrinks ranges, and an empty body deletes the lines', async () => {
    await write('a.txt', '1\n2\n3\n4\n5\n');
    await lines('[EDIT_FILE path="a.txt" start_line="2" end_line="3"]\n[/EDIT_FILE]');
    assert.equal(await read('a.txt'), '1\n4\n5\n');
    await lines('[EDIT_FILE path="a.txt" start_line="1" end_line="1"]\none\nuno\n[/EDIT_FILE]');
    assert.equal(await read('a.txt'), 'one\nuno\n4\n5\n');
    await lines('[EDIT_FILE path="a.txt" start_line="3" end_line="3"]\n\n[/EDIT_FILE]');
    assert.equal(await read('a.txt'), 'one\nuno\n\n5\n', 'a single blank line replaces, it does not delete');
  });

  it('clamps an end past the file, and refuses a start past it', async () => {
    await write('a.txt', 'a\nb\nc');
    assert.equal(
      await lines('[EDIT_FILE path="a.txt" start_line="2" end_line="99"]\nB\n[/EDIT_FILE]'),
      "[OK] EDIT_FILE: Edited 'a.txt' lines 2-3 (end_line 99 is past the end of the file, cut to 3)",
    );
    assert.equal(await read('a.txt'), 'a\nB', 'a file without final newline keeps having none');
    assert.equal(await lines('[EDIT_FILE path="a.txt" start_line="5" end_line="6"]\nx\n[/EDIT_FILE]'), '[FAILED] EDIT_FILE: Invalid line range 5-6 for file with 2 lines');
  });

  it('shifts later edits of the same file by earlier ones: line numbers refer to the file before the answer', async () => {
    await write('a.txt', 'l1\nl2\nl3\nl4\nl5\nl6\n');
    const out = await lines(
      [
        '[EDIT_FILE path="a.txt" start_line="2" end_line="2"]\nA\nA\nA\n[/EDIT_FILE]',
        '[EDIT_FILE path="a.txt" start_line="5" end_line="6"]\nB\n[/EDIT_FILE]',
        '[EDIT_FILE path="a.txt" start_line="1" end_line="1"]\n[/EDIT_FILE]',
        '[EDIT_FILE path="a.txt" start_line="4" end_line="4"]\nC\n[/EDIT_FILE]',
      ].join('\n'),
    );
    assert.equal(await read('a.txt'), 'A\nA\nA\nl3\nC\nB\n');
    assert.match(out, /Edited 'a\.txt' lines 5-6 \(at line 7 after earlier edits in this answer\)/);
  });

  it('fails a later edit that overlaps an earlier one in the same answer, and leaves the file as the earlier one made it', async () => {
    await write('a.txt', '1\n2\n3\n4\n');
    const out = await lines('[EDIT_FILE path="a.txt" start_line="2" end_line="3"]\nX\n[/EDIT_FILE]\n[EDIT_FILE path="a.txt" start_line="3" end_line="4"]\nY\n[/EDIT_FILE]');
    assert.equal(out.split('\n')[1], '[FAILED] EDIT_FILE: Lines 3-4 overlap lines 2-3 edited earlier in this answer');
    assert.equal(await read('a.txt'), '1\nX\n4\n');
  });

  it('counts lines from the created content after a CREATE_FILE in the same answer', async () => {
    await write('a.txt', 'old1\nold2\nold3\n');
    await lines('[CREATE_FILE path="a.txt"]\nn1\nn2\n[/CREATE_FILE]\n[EDIT_FILE path="a.txt" start_line="2" end_line="2"]\nN2\n[/EDIT_FILE]');
    assert.equal(await read('a.txt'), 'n1\nN2');
  });

  it('keeps CRLF line endings, mixed endings of untouched lines and the BOM', async () => {
    await write('crlf.txt', '\uFEFFa\r\nb\r\nc\r\n');
    await lines('[EDIT_FILE path="crlf.txt" start_line="2" end_line="2"]\nB1\nB2\n[/EDIT_FILE]');
    assert.deepEqual(await readFile(path.join(ws, 'crlf.txt')), Buffer.from('\uFEFFa\r\nB1\r\nB2\r\nc\r\n', 'utf8'));
    await write('mixed.txt', 'a\r\nb\nc\r\nd\r\n');
    await lines('[EDIT_FILE path="mixed.txt" start_line="3" end_line="4"]\n[/EDIT_FILE]');
    assert.equal(await read('mixed.txt'), 'a\r\nb\n');
    await write('open.txt', 'a\nb\nc');
    await lines('[EDIT_FILE path="open.txt" start_line="2" end_line="3"]\n[/EDIT_FILE]');
    assert.equal(await read('open.txt'), 'a', 'deleting the last lines of a file without final newline leaves none');
  });

  it('applies an answer written with CRLF to an LF file without bringing CRs in', async () => {
    await write('a.txt', 'x\ny\n');
    await lines('[EDIT_FILE path="a.txt" start_line="1" end_line="1"]\r\nX\r\n[/EDIT_FILE]\r\n');
    assert.equal(await read('a.txt'), 'X\ny\n');
  });

  it('refuses to edit a binary file', async () => {
    await write('bin.dat', Buffer.from([0, 1, 2, 10, 3]));
    assert.equal(
      await lines('[EDIT_FILE path="bin.dat" start_line="1" end_line="1"]\nx\n[/EDIT_FILE]'),
      "[FAILED] EDIT_FILE: File 'bin.dat' is not UTF-8 text; replace it with CREATE_FILE instead",
    );
  });
});

describe('executor: plan and apply, as the editor uses them', () => {
  it('plans without touching anything, then applies to the same result', async () => {
    await write('a.txt', 'one\ntwo\n');
    const state = new AnswerState();
    const { plan } = (await planAnswer(workspace, '[EDIT_FILE path="a.txt" start_line="2" end_line="2"]\nTWO\n[/EDIT_FILE]', { state })).blocks[0]!;
    assert.equal(plan.kind, 'write');
    assert.ok(plan.kind === 'write');
    assert.equal(plan.before, 'one\ntwo\n');
    assert.equal(plan.after, 'one\nTWO\n');
    assert.equal(plan.target.real, path.join(ws, 'a.txt'));
    assert.equal(await read('a.txt'), 'one\ntwo\n');
    const { result } = await applyPlan(workspace, plan, state);
    assert.deepEqual(result, plan.result);
    assert.equal(await read('a.txt'), 'one\nTWO\n');
  });

  it('an edit applied elsewhere (by the editor) and recorded shifts the next one as Belay would', async () => {
    await write('a.txt', '1\n2\n3\n');
    const answer = parseAnswer('[EDIT_FILE path="a.txt" start_line="1" end_line="1"]\nA\nB\n[/EDIT_FILE]\n[EDIT_FILE path="a.txt" start_line="3" end_line="3"]\nC\n[/EDIT_FILE]');
    const state = new AnswerState();
    const only = async (index: number) => (await planAnswer(workspace, answer, { state, skip: (i) => i !== index })).blocks[0]!.plan;
    const plan = await only(0);
    assert.ok(plan.kind === 'write');
    await write('a.txt', plan.after);
    state.record(plan);
    const next = await only(1);
    assert.ok(next.kind === 'write');
    assert.equal(next.after, 'A\nB\n2\nC\n');
  });

  it('previews a whole answer, each block seeing the earlier ones, and writes nothing', async () => {
    await write('a.txt', '1\n2\n');
    const { items: planned } = await planAnswer(workspace, '[CREATE_FILE path="b.txt"]\nb\n[/CREATE_FILE]\n[EDIT_FILE path="b.txt" start_line="1" end_line="1"]\nB\n[/EDIT_FILE]\n[DELETE_FILE path="a.txt"]\n[READ_FILE path="a.txt"]\n[RUN_COMMAND]rm -rf .[/RUN_COMMAND]');
    const kinds = planned.map((p) => ('plan' in p ? p.plan.kind : 'error'));
    assert.deepEqual(kinds, ['write', 'write', 'delete', 'fail', 'run']);
    const edit = planned[1]!;
    assert.ok('plan' in edit && edit.plan.kind === 'write' && edit.plan.before === 'b' && edit.plan.after === 'B');
    assert.deepEqual((await readdir(ws)).sort(), ['a.txt']);
    assert.equal(await read('a.txt'), '1\n2\n');
  });
});

describe('executor: RUN_COMMAND', () => {
  it('runs /bin/sh -c in the workspace and returns stdout then stderr', async () => {
    await write('in.txt', 'data');
    const [result] = (await executeAnswer(workspace, '[RUN_COMMAND]\necho err >&2\ncat in.txt\necho\npwd\n[/RUN_COMMAND]')).results;
    assert.equal(result!.success, true);
    assert.equal(result!.output, `data\n${ws}\nerr`);
    assert.equal(formatResult(result!), `[OK] RUN_COMMAND: Ran 'echo err >&2 …' (exit code 0)\n  Output:\n    data\n    ${ws}\n    err`);
  });

  it('cuts the output to 4000 characters with the marker, however much the command prints', async () => {
    const [result] = (await executeAnswer(workspace, '[RUN_COMMAND]head -c 20000000 /dev/zero | tr "\\0" x; echo tail >&2[/RUN_COMMAND]')).results;
    assert.equal(result!.success, true);
    assert.equal(result!.output, `${'x'.repeat(4000)}\n... (output truncated)`);
  });

  // The children are found by a mark in their environment: in a PID namespace, `$!` is not the host's PID.
  it('kills the whole process tree at the timeout, even when a child keeps the pipe open', { timeout: 20_000 }, async () => {
    const mark = `tree-${process.pid}-${Date.now()}`;
    const report = await executeAnswer(workspace, `[RUN_COMMAND]\n${markLine(mark)}\n(sleep 30; echo late) &\necho started\nsleep 30\n[/RUN_COMMAND]`, { runTimeoutMs: 2000, env: markedEnv(mark) });
    const [result] = report.results;
    assert.equal(result!.success, false);
    assert.match(result!.summary, /timed out after 2 s, process tree killed/);
    assert.equal(result!.output, 'started');
    const left = await processesMarked(mark);
    assert.deepEqual(left, [], `background children ${left.join(', ')} still run`);
  });

  it('does not wait for a background child after the command itself ends', { timeout: 20_000 }, async () => {
    const mark = `bg-${process.pid}-${Date.now()}`;
    const [result] = (await executeAnswer(workspace, `[RUN_COMMAND]${markLine(mark)}; sleep 30 & echo done[/RUN_COMMAND]`, { env: markedEnv(mark) })).results;
    assert.equal(result!.success, true);
    assert.equal(result!.output, 'done');
    assert.deepEqual(await processesMarked(mark), []);
  });
});
