// The editor's layer over the server's CodeLenses (block states, untrusted workspaces), on the
// lenses the server really computes for an answer.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { blockKeys } from '../../../src/blocks/core/blockKey.ts';
import { parseAnswer } from '../../../src/blocks/core/parser.ts';
import { decorateLenses, EXPLAIN_UNTRUSTED, type LensLike } from '../../../src/blocks/core/lenses.ts';
import { codeLenses } from '../../../src/server/analysis.ts';

const ANSWER = '[CREATE_FILE path="a.txt"]\nA\n[/CREATE_FILE]\n[RUN_COMMAND]ls[/RUN_COMMAND]\n[DELETE_FILE path="b.txt"]\n';
const { commands } = parseAnswer(ANSWER);
const keys = blockKeys(commands);
const lenses = codeLenses('file:///answer.agent', commands, keys);
/** Trust as the editor has it: nothing refused, or each action refused with its own reason. */
const trusted = () => undefined;
const untrusted = (action: string) => `no ${action} here`;
const titles = (list: Array<LensLike<{ start: { line: number } }>>) => list.map((l) => `${l.range.start.line}:${l.command?.title}`);

test('a trusted workspace with nothing applied keeps every action and counts them', () => {
  assert.deepEqual(titles(decorateLenses(lenses, () => undefined, trusted)), [
    '0:$(check-all) Apply All (3)',
    '0:$(diff-multiple) Preview All',
    '0:Apply',
    '0:Preview',
    '3:Run',
    '4:Apply',
    '4:Preview',
  ]);
});

test('handled blocks show their state instead of Apply and Preview, and leave the count', () => {
  const outcomes = new Map([
    [keys[0]!, { status: 'applied' as const, summary: "Created 'a.txt'" }],
    [keys[2]!, { status: 'failed' as const, summary: "File 'b.txt' not found" }],
  ]);
  assert.deepEqual(titles(decorateLenses(lenses, (k) => outcomes.get(k), trusted)), [
    '0:$(check-all) Apply All (1)',
    '0:$(diff-multiple) Preview All',
    "0:$(check) Applied: Created 'a.txt'",
    '3:Run',
    "4:$(error) Failed: File 'b.txt' not found",
  ]);
});

test('an untrusted workspace: Apply, Run and Apply All say why and do nothing; Preview stays', () => {
  const decorated = decorateLenses(lenses, () => undefined, untrusted);
  assert.deepEqual(titles(decorated), [
    '0:$(lock) Apply All (3) (untrusted workspace)',
    '0:$(diff-multiple) Preview All',
    '0:$(lock) Apply (untrusted workspace)',
    '0:Preview',
    '3:$(lock) Run (untrusted workspace)',
    '4:$(lock) Apply (untrusted workspace)',
    '4:Preview',
  ]);
  for (const lens of decorated.filter((l) => l.command?.title.includes('untrusted'))) assert.equal(lens.command!.command, EXPLAIN_UNTRUSTED);
  // Each lock says why with the reason for its own action, and passes that action on.
  assert.deepEqual(
    decorated.filter((l) => l.command?.command === EXPLAIN_UNTRUSTED).map((l) => [l.range.start.line, l.command!.arguments, l.command!.tooltip]),
    [
      [0, ['applyBlocks'], 'no applyBlocks here'],
      [0, ['applyBlocks'], 'no applyBlocks here'],
      [3, ['runCommands'], 'no runCommands here'],
      [4, ['applyBlocks'], 'no applyBlocks here'],
    ],
  );
});
