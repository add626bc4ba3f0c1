// Line diffs and relocation: hunks that rebuild the new text, partial application, and where a
// range of what the LLM saw lies in the file as it is now.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyHunks, diffLines, relocateRange } from '../../../src/blocks/core/diff.ts';

const lines = (text: string) => (text === '' ? [] : text.split(' '));

describe('diffLines', () => {
  it('finds the smallest set of changed stretches, and applying all of them gives the new text', () => {
    const cases: Array<[string, string]> = [
      ['a b c', 'a b c'],
      ['a b c', 'a x c'],
      ['a b c d e', 'a c d x e y'],
      ['', 'a b'],
      ['a b', ''],
      ['a b c d', 'x a b y c d z'],
      ['a a a b', 'a b a a'],
    ];
    for (const [before, after] of cases) {
      const a = lines(before);
      const b = lines(after);
      const hunks = diffLines(a, b);
      const all = new Set(hunks.map((_, i) => i));
      assert.deepEqual(applyHunks(a, b, hunks, all), b, `${before} -> ${after}`);
      assert.deepEqual(applyHunks(a, b, hunks, new Set()), a);
      for (const h of hunks) assert.ok(h.beforeEnd > h.beforeStart || h.afterEnd > h.afterStart, 'an empty hunk');
    }
    assert.deepEqual(diffLines(lines('a b c'), lines('a x c')), [{ beforeStart: 1, beforeEnd: 2, afterStart: 1, afterEnd: 2 }]);
  });

  it('random texts: every subset of hunks applies cleanly, all of them give the new text', () => {
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    for (let round = 0; round < 200; round++) {
      const a = Array.from({ length: Math.floor(random() * 12) }, () => 'abcd'[Math.floor(random() * 4)]!);
      const b = Array.from({ length: Math.floor(random() * 12) }, () => 'abcd'[Math.floor(random() * 4)]!);
      const hunks = diffLines(a, b);
      assert.deepEqual(applyHunks(a, b, hunks, new Set(hunks.map((_, i) => i))), b, `${a.join('')} -> ${b.join('')}`);
      const changed = hunks.reduce((sum, h) => sum + (h.beforeEnd - h.beforeStart) + (h.afterEnd - h.afterStart), 0);
      // Shortest: no more changed lines than the two texts minus twice their longest common subsequence.
      assert.ok(changed <= a.length + b.length - 2 * lcs(a, b), `${a.join('')} -> ${b.join('')}: not minimal`);
    }
  });

  it('stays bounded on texts with nothing in common', () => {
    const a = Array.from({ length: 50_000 }, (_, i) => `a${i}`);
    const b = Array.from({ length: 50_000 }, (_, i) => `b${i}`);
    assert.deepEqual(diffLines(a, b), [{ beforeStart: 0, beforeEnd: 50_000, afterStart: 0, afterEnd: 50_000 }]);
  });
});

function lcs(a: readonly string[], b: readonly string[]): number {
  const row = new Array<number>(b.length + 1).fill(0);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = 0;
    for (let j = 1; j <= b.length; j++) {
      const up = row[j]!;
      row[j] = a[i - 1] === b[j - 1] ? diagonal + 1 : Math.max(row[j]!, row[j - 1]!);
      diagonal = up;
    }
  }
  return row[b.length]!;
}

describe('relocateRange', () => {
  const base = lines('1 2 3 4 5 6 7 8');
  it('an unchanged file: the same lines', () => {
    assert.deepEqual(relocateRange(base, base, 3, 4), { kind: 'same', start: 3, end: 4 });
  });
  it('lines added or removed before the range shift it; after it, nothing', () => {
    assert.deepEqual(relocateRange(base, lines('0 0 1 2 3 4 5 6 7 8'), 3, 4), { kind: 'moved', start: 5, end: 6 });
    assert.deepEqual(relocateRange(base, lines('2 3 4 5 6 7 8'), 3, 4), { kind: 'moved', start: 2, end: 3 });
    assert.deepEqual(relocateRange(base, lines('1 2 3 4 5 6 x 8'), 3, 4), { kind: 'moved', start: 3, end: 4 });
    // Insertions right before and right after the range leave it whole.
    assert.deepEqual(relocateRange(base, lines('1 2 x 3 4 y 5 6 7 8'), 3, 4), { kind: 'moved', start: 4, end: 5 });
  });
  it('a change inside the range, or an insertion within it, is a conflict with those changes', () => {
    const changed = relocateRange(base, lines('1 2 3 X 5 6 7 8'), 3, 4);
    assert.equal(changed.kind, 'conflict');
    assert.deepEqual(changed.kind === 'conflict' && changed.hunks, [{ beforeStart: 3, beforeEnd: 4, afterStart: 3, afterEnd: 4 }]);
    assert.equal(relocateRange(base, lines('1 2 3 x 4 5 6 7 8'), 3, 4).kind, 'conflict');
    assert.equal(relocateRange(base, lines('1 2 4 5 6 7 8'), 3, 4).kind, 'conflict');
  });
});
