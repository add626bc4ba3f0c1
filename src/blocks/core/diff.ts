// Line diffs: the changes between two versions of a file as hunks (what a block's preview lets a
// person apply one by one), and where a range of the older version lies in the newer one (how an
// EDIT_FILE written against what the LLM saw is relocated onto the file as it is now).

/** One change: lines [beforeStart, beforeEnd) of the old text became [afterStart, afterEnd) of the new (0-based). */
export interface Hunk {
  beforeStart: number;
  beforeEnd: number;
  afterStart: number;
  afterEnd: number;
}

/** Beyond this many differing lines the middle of two texts is one hunk (the search stays bounded). */
const MAX_EDIT_DISTANCE = 2000;

/**
 * The hunks that turn `a` into `b`, in order: Myers' O(ND) search between the common prefix and
 * suffix. Past MAX_EDIT_DISTANCE differences the rest is reported as one hunk.
 */
export function diffLines(a: readonly string[], b: readonly string[]): Hunk[] {
  let prefix = 0;
  while (prefix < a.length && prefix < b.length && a[prefix] === b[prefix]) prefix++;
  let suffix = 0;
  while (suffix < a.length - prefix && suffix < b.length - prefix && a[a.length - 1 - suffix] === b[b.length - 1 - suffix]) suffix++;
  const n = a.length - prefix - suffix;
  const m = b.length - prefix - suffix;
  if (n === 0 && m === 0) return [];
  if (n === 0 || m === 0) return [{ beforeStart: prefix, beforeEnd: prefix + n, afterStart: prefix, afterEnd: prefix + m }];
  const matches = middleSnakes(a, b, prefix, n, m);
  if (matches === undefined) return [{ beforeStart: prefix, beforeEnd: prefix + n, afterStart: prefix, afterEnd: prefix + m }];
  // Matched line pairs (in order) become the gaps between hunks.
  const hunks: Hunk[] = [];
  let i = 0;
  let j = 0;
  for (const [x, y] of [...matches, [n, m] as [number, number]]) {
    if (x > i || y > j) hunks.push({ beforeStart: prefix + i, beforeEnd: prefix + x, afterStart: prefix + j, afterEnd: prefix + y });
    i = x + 1;
    j = y + 1;
  }
  return hunks;
}

/** The matching line pairs (x in a, y in b, relative to `offset`) of a shortest edit script, or undefined past the limit. */
function middleSnakes(a: readonly string[], b: readonly string[], offset: number, n: number, m: number): Array<[number, number]> | undefined {
  const max = Math.min(n + m, MAX_EDIT_DISTANCE);
  const size = 2 * max + 1;
  let v = new Int32Array(size);
  const trace: Int32Array[] = [];
  let found = -1;
  for (let d = 0; d <= max && found === -1; d++) {
    trace.push(v.slice());
    const next = v;
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[k - 1 + max]! < v[k + 1 + max]!) ? v[k + 1 + max]! : v[k - 1 + max]! + 1;
      let y = x - k;
      while (x < n && y < m && a[offset + x] === b[offset + y]) {
        x++;
        y++;
      }
      next[k + max] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
    v = next;
  }
  if (found === -1) return undefined;
  // Walk back through the saved frontiers, collecting the diagonal (matching) moves.
  const pairs: Array<[number, number]> = [];
  let x = n;
  let y = m;
  for (let d = found; d > 0; d--) {
    const previous = trace[d]!;
    const k = x - y;
    const down = k === -d || (k !== d && previous[k - 1 + max]! < previous[k + 1 + max]!);
    const prevK = down ? k + 1 : k - 1;
    const prevX = previous[prevK + max]!;
    const prevY = prevX - prevK;
    const startX = down ? prevX : prevX + 1;
    const startY = startX - k;
    while (x > startX && y > startY) {
      x--;
      y--;
      pairs.push([x, y]);
    }
    x = prevX;
    y = prevY;
  }
  while (x > 0 && y > 0) {
    x--;
    y--;
    pairs.push([x, y]);
  }
  return pairs.reverse();
}

/** `before` with only the chosen hunks (by index) of `hunks` (from before to after) applied. */
export function applyHunks<T>(before: readonly T[], after: readonly T[], hunks: readonly Hunk[], chosen: ReadonlySet<number>): T[] {
  const out: T[] = [];
  let at = 0;
  hunks.forEach((hunk, index) => {
    for (; at < hunk.beforeStart; at++) out.push(before[at]!);
    if (chosen.has(index)) for (let j = hunk.afterStart; j < hunk.afterEnd; j++) out.push(after[j]!);
    else for (let j = hunk.beforeStart; j < hunk.beforeEnd; j++) out.push(before[j]!);
    at = hunk.beforeEnd;
  });
  for (; at < before.length; at++) out.push(before[at]!);
  return out;
}

/** Where a range of the base's lines lies now, or the changes that touch it. */
export type Relocation =
  | { kind: 'same'; start: number; end: number }
  | { kind: 'moved'; start: number; end: number }
  | { kind: 'conflict'; hunks: Hunk[] };

/**
 * Lines [start, end] (1-based, inclusive) of `base`, found in `current` (the base changed since):
 * shifted by the changes before them when no change touches them; a conflict with the changes
 * that do. A change that only inserts lines right before or right after the range leaves it whole;
 * one that inserts inside it (or changes any of its lines) is a conflict.
 */
export function relocateRange(base: readonly string[], current: readonly string[], start: number, end: number): Relocation {
  return relocateThrough(diffLines(base, current), start, end);
}

/** relocateRange, given the hunks from the base to the current text. */
export function relocateThrough(hunks: readonly Hunk[], start: number, end: number): Relocation {
  const first = start - 1;
  const last = end; // exclusive, 0-based
  let shift = 0;
  const touching: Hunk[] = [];
  for (const hunk of hunks) {
    const removed = hunk.beforeEnd - hunk.beforeStart;
    const added = hunk.afterEnd - hunk.afterStart;
    if (removed === 0) {
      // A pure insertion before base line `beforeStart`.
      if (hunk.beforeStart <= first) shift += added;
      else if (hunk.beforeStart < last) touching.push(hunk);
      continue;
    }
    if (hunk.beforeEnd <= first) shift += added - removed;
    else if (hunk.beforeStart < last) touching.push(hunk);
  }
  if (touching.length > 0) return { kind: 'conflict', hunks: touching };
  return shift === 0 && hunks.length === 0 ? { kind: 'same', start, end } : { kind: 'moved', start: start + shift, end: end + shift };
}
