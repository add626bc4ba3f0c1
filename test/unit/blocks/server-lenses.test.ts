// The editor's layer over the server's CodeLenses (block states, untrusted workspaces), on the
// lenses the server really computes for an answer.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { blockKeys } from '../../../src/blocks/core/blockKey.ts';
import { parseAnswer } from '../../../src/blocks/core/parser.ts';
import { decorateLenses, EXPLAIN_UNTRUSTED, LENS_COMMANDS, type LensLike } from '../../../src/blocks/core/lenses.ts';
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
    '0:Apply Files Only (2)',
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
    [keys[0]!, { status: 'applied' as const, summary: "Created 'a.txt'", open: '/ws/a.txt' }],
    [keys[2]!, { status: 'failed' as const, summary: "File 'b.txt' not found" }],
  ]);
  const decorated = decorateLenses(lenses, (k) => outcomes.get(k), trusted);
  // No file block is left to apply: no Preview All, no Apply Files Only.
  assert.deepEqual(titles(decorated), [
    '0:$(check-all) Apply All (1)',
    '0:$(discard) Undo Answer',
    "0:$(check) Applied: Created 'a.txt'",
    '0:Undo',
    '3:Run',
    "4:$(error) Failed: File 'b.txt' not found",
  ]);
  // The applied lens opens the file it wrote; Undo names its block.
  assert.deepEqual(decorated[2]!.command!.arguments, ['/ws/a.txt']);
  assert.equal(decorated[3]!.command!.command, LENS_COMMANDS.undo);
  assert.deepEqual(decorated[3]!.command!.arguments, lenses.find((l) => l.command?.command === LENS_COMMANDS.apply)!.command!.arguments);
});

test('nothing left to apply: no Apply All (0); Undo Answer while the editor applied something', () => {
  const states = new Map([
    [keys[0]!, { status: 'applied' as const, summary: "Created 'a.txt'" }],
    [keys[1]!, { status: 'ran' as const, summary: "Ran 'ls' (exit code 0)" }],
    [keys[2]!, { status: 'changed' as const, summary: "Deleted 'b.txt'" }],
  ]);
  assert.deepEqual(titles(decorateLenses(lenses, (k) => states.get(k), trusted)), [
    '0:$(discard) Undo Answer',
    "0:$(check) Applied: Created 'a.txt'",
    '0:Undo',
    "3:$(check) Ran: Ran 'ls' (exit code 0)",
    '3:Run Again',
    "4:$(check) Applied, changed since: Deleted 'b.txt'",
    '4:Undo',
  ]);
  const processed = new Map(keys.map((k) => [k, { status: 'session' as const, summary: 'done (session 0123abcd #2)' }]));
  assert.deepEqual(titles(decorateLenses(lenses, (k) => processed.get(k), trusted)), [
    '0:$(check) Applied: done (session 0123abcd #2)',
    '3:$(check) Applied: done (session 0123abcd #2)',
    '4:$(check) Applied: done (session 0123abcd #2)',
  ]);
});

test('a block the server found cannot succeed shows why in place of Apply, and is not counted', () => {
  const failing = codeLenses('file:///answer.agent', commands, keys, new Map([[2, { summary: "File 'b.txt' not found", kind: 'failed' as const }]]));
  assert.deepEqual(titles(decorateLenses(failing, () => undefined, trusted)), [
    '0:$(check-all) Apply All (2)',
    '0:Apply Files Only (1)',
    '0:$(diff-multiple) Preview All',
    '0:Apply',
    '0:Preview',
    '3:Run',
    "4:$(error) Cannot apply: File 'b.txt' not found",
  ]);
  const rejected = codeLenses('file:///answer.agent', commands, keys, new Map([[0, { summary: "REJECTED: Path 'a.txt' is outside workspace", kind: 'rejected' as const }]]));
  assert.equal(rejected.find((l) => l.range.start.line === 0 && l.command?.command === LENS_COMMANDS.problem)?.command?.title, "$(circle-slash) REJECTED: Path 'a.txt' is outside workspace");
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
