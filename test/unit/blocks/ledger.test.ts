// The ledger the editor's block states are derived from: block keys by content, states from the
// files' digests, records and the texts kept for Undo Answer, across a reload.
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { blockIds, digest, Ledger, recordState, type BlockRecord } from '../../../src/blocks/core/ledger.ts';
import { parseAnswer } from '../../../src/blocks/core/parser.ts';
import { tempDir } from './helpers.ts';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('belay-ledger-'));
});
afterEach(() => cleanup());

const commands = (text: string) => parseAnswer(text).commands;

describe('block keys', () => {
  it('follow what a block does, not where it sits; equal blocks are told apart; commands belong to their answer', () => {
    const create = '[CREATE_FILE path="a.txt"]\nA\n[/CREATE_FILE]\n';
    const run = '[RUN_COMMAND]npm test[/RUN_COMMAND]\n';
    const first = `Intro\n${create}${run}`;
    const moved = `Other prose, and more of it\n\n${create}${run}`;
    const [a1, r1] = blockIds('/ws', commands(first), first);
    const [a2, r2] = blockIds('/ws', commands(moved), moved);
    assert.equal(a1, a2, 'the same file block in another answer is the same block');
    assert.notEqual(r1, r2, 'the same command in another answer is another run');
    assert.deepEqual(blockIds('/ws', commands(first), first), [a1, r1], 'the same answer reopened');
    const [x, y] = blockIds('/ws', commands(`${create}${create}`));
    assert.notEqual(x, y);
    assert.notEqual(blockIds('/other', commands(create))[0], a1, 'another folder');
    assert.notEqual(blockIds('/ws', commands('[CREATE_FILE path="a.txt"]\nB\n[/CREATE_FILE]\n'))[0], a1, 'another body');
  });
});

describe('record states', () => {
  const record = { files: [{ real: '/ws/a.txt', relative: 'a.txt', before: digest('old\n'), after: digest('new\n') }] };
  it('applied while the file holds what was written, undone once it holds what was there, changed otherwise', () => {
    assert.equal(recordState(record, () => digest('new\n')), 'applied');
    assert.equal(recordState(record, () => digest('\ufeffnew\n')), 'applied', 'a byte order mark aside');
    assert.equal(recordState(record, () => digest('old\n')), 'undone');
    assert.equal(recordState(record, () => digest('other\n')), 'changed');
    const created = { files: [{ real: '/ws/b.txt', relative: 'b.txt', before: null, after: digest('b') }] };
    assert.equal(recordState(created, () => null), 'undone', 'a created file deleted again');
    assert.equal(recordState({ files: [] }, () => null), 'applied', 'a command that ran');
  });
});

describe('Ledger', () => {
  it('keeps records and the texts before them across a reload; a later record of a block replaces the earlier', async () => {
    const folder = path.join(dir, 'ledger');
    const ledger = new Ledger(folder);
    const base: Omit<BlockRecord, 'id' | 'at'> = {
      files: [{ real: '/ws/a.txt', relative: 'a.txt', before: digest('old\n'), after: digest('new\n') }],
      replay: { kind: 'write', real: '/ws/a.txt', lineCount: 1 },
      result: { commandType: 'CREATE_FILE', summary: "Created 'a.txt'", success: true },
      batch: 'b1',
    };
    await ledger.add([{ ...base, id: 'one#1', at: 1 }], new Map([[digest('old\n')!, 'old\n']]));
    await ledger.add([{ ...base, id: 'one#1', at: 2, batch: 'b2' }], new Map());
    const reloaded = new Ledger(folder);
    await reloaded.load();
    assert.equal(reloaded.get('one#1')?.batch, 'b2');
    assert.deepEqual(reloaded.batch('b1'), []);
    assert.equal(await reloaded.text(digest('old\n')!), 'old\n');
    assert.equal(await reloaded.text('../../etc/passwd'), undefined, 'only digests name kept texts');
    await reloaded.remove(['one#1']);
    const again = new Ledger(folder);
    await again.load();
    assert.equal(again.get('one#1'), undefined);
    assert.deepEqual((await readdir(folder)).sort(), ['blobs', 'ledger.json']);
  });

  it('a damaged ledger file starts empty rather than failing', async () => {
    const folder = path.join(dir, 'broken');
    const ledger = new Ledger(folder);
    await ledger.add([], new Map());
    const { writeFile } = await import('node:fs/promises');
    await writeFile(path.join(folder, 'ledger.json'), '{"version": 1, "records": [{"id": 3}]}');
    const reloaded = new Ledger(folder);
    await reloaded.load();
    assert.equal(reloaded.get('3'), undefined);
  });
});
