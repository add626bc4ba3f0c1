// Shared by the command-block tests (not a test file itself).
import { mkdir, readdir, readFile, utimes, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { textDigest, writeSeen } from '../../../src/blocks/core/seen.ts';
import type { Range } from '../../../src/blocks/core/syntax.ts';
import { repoRoot } from '../../../scripts/lib/paths.ts';

export { repoRoot } from '../../../scripts/lib/paths.ts';
export { tempDir } from '../temp.ts';

export const fixtures = path.join(repoRoot, 'test', 'fixtures', 'blocks');

export function fixture(name: string): Promise<string> {
  return readFile(path.join(fixtures, name), 'utf8');
}

/** Line starts as an editor counts them: \r\n, \n and a lone \r each end a line. */
export function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\n' || (c === '\r' && text[i + 1] !== '\n')) starts.push(i + 1);
  }
  return starts;
}

/** The text a range covers, computed independently of the parser. */
export function slice(text: string, range: Range): string {
  const starts = lineStarts(text);
  const offset = (p: { line: number; character: number }) => starts[p.line]! + p.character;
  return text.slice(offset(range.start), offset(range.end));
}

/**
 * A session root under `parent` whose outbox recorded what the LLM saw: its workspace holds
 * `old.txt`, unchanged since, and `new.txt`, whose text changed after it (the modification times
 * say the opposite: both are older than the outbox).
 */
export async function sessionWithChangedFile(parent: string): Promise<{ root: string; outbox: string }> {
  const root = path.join(parent, 'session');
  for (const folder of ['workspace', 'sessions', 'outbox', 'inbox']) await mkdir(path.join(root, folder), { recursive: true });
  const outbox = path.join(root, 'outbox', '0123abcd_seq0001.txt');
  await writeFile(path.join(root, 'workspace', 'old.txt'), 'a\nb\n');
  await writeFile(path.join(root, 'workspace', 'new.txt'), 'a\nb\n');
  await writeFile(outbox, '=== HEADER ===\n');
  await writeSeen(outbox, { files: { 'old.txt': textDigest('a\nb\n'), 'new.txt': textDigest('what the LLM saw\n') }, texts: {} });
  // By modification time neither file changed after the outbox: only their content tells.
  const past = new Date(Date.now() - 60_000);
  const older = new Date(Date.now() - 120_000);
  await utimes(outbox, past, past);
  for (const file of ['old.txt', 'new.txt']) await utimes(path.join(root, 'workspace', file), older, older);
  return { root, outbox };
}

/** The variable `markedEnv` adds, by which `processesMarked` finds every process a command started. */
const TEST_MARK = 'BELAY_TEST_MARK';

/** An environment whose processes `processesMarked(mark)` finds (a PID inside a namespace is not the host's). */
export function markedEnv(mark: string): NodeJS.ProcessEnv {
  return { ...process.env, [TEST_MARK]: mark };
}

/**
 * A shell line that marks every process the rest of the command starts, for `processesMarked`:
 * a sandboxed command gets an allowlisted environment, so `markedEnv`'s variable does not reach it.
 */
export function markLine(mark: string): string {
  return `export ${TEST_MARK}=${mark}`;
}

/** The live processes (not zombies) whose environment carries the mark; Linux only ([] elsewhere). */
export async function processesMarked(mark: string): Promise<number[]> {
  if (process.platform !== 'linux') return [];
  const needle = `${TEST_MARK}=${mark}`;
  const found: number[] = [];
  for (const name of await readdir('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const environ = (await readFile(`/proc/${pid}/environ`, 'latin1')).split('\0');
      if (!environ.includes(needle)) continue;
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      if (!stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) found.push(pid);
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}
