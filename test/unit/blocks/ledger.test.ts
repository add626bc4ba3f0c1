// The ledger the editor's block states are derived from: block keys by content, states from the
// files' digests, records and the texts kept for Undo Answer, across a reload.
import assert from 'node:assert/strict';
import { readdir, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { blockIds, digest, Ledger, recordState, type BlockRecord } from '../../../src/blocks/core/ledger.ts';
import { parseAnswer } from '../../../src/blocks/core/parser.ts';
import { tempDir } from '../../support/blocks/helpers.ts';

let dir: string;
let cleanup: () => void;
beforeEach(async () => {
  ({ dir, remove: cleanup } = tempDir('belay-ledger-'));
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
    assert.deepEqual(await readdir(path.join(folder, 'blobs')), [], 'the text of a record taken back is not kept');
  });

  it('keeps a text while some record needs it, and no longer once none does', async () => {
    const folder = path.join(dir, 'texts');
    const ledger = new Ledger(folder);
    const record = (id: string, before: string): BlockRecord => ({
      id,
      at: 1,
      batch: 'b',
      files: [{ real: `/ws/${id}`, relative: id, before: digest(before), after: digest('new\n') }],
      result: { commandType: 'EDIT_FILE', summary: 'Edited', success: true },
    });
    const kept = async () => (await readdir(path.join(folder, 'blobs'))).sort();
    await ledger.add([record('a#1', 'shared\n'), record('b#1', 'shared\n'), record('c#1', 'own\n')], new Map([[digest('shared\n')!, 'shared\n'], [digest('own\n')!, 'own\n']]));
    assert.deepEqual(await kept(), [digest('own\n'), digest('shared\n')].sort());
    // A later record of c replaces the earlier one, with another text before it.
    await ledger.add([record('c#1', 'later\n')], new Map([[digest('later\n')!, 'later\n']]));
    assert.deepEqual(await kept(), [digest('later\n'), digest('shared\n')].sort());
    await ledger.remove(['a#1']);
    assert.deepEqual(await kept(), [digest('later\n'), digest('shared\n')].sort(), 'b still needs the shared text');
    await ledger.remove(['b#1', 'c#1']);
    assert.deepEqual(await kept(), []);
    // Only what the ledger itself names is swept: another file in its folder stays.
    await writeFile(path.join(folder, 'blobs', 'notes.txt'), 'x');
    await ledger.add([], new Map());
    assert.deepEqual(await kept(), ['notes.txt']);
  });

  it('a damaged ledger file starts empty rather than failing', async () => {
    const folder = path.join(dir, 'broken');
    const ledger = new Ledger(folder);
    await ledger.add([], new Map());
    await writeFile(path.join(folder, 'ledger.json'), '{"version": 1, "records": [{"id": 3}]}');
    const reloaded = new Ledger(folder);
    await reloaded.load();
    assert.equal(reloaded.get('3'), undefined);
  });
});
