// Shared by the command-block tests (not a test file itself).
import { mkdtemp, readFile, realpath, rm } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Range } from '../../../src/blocks/core/syntax.ts';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const fixtures = path.join(repoRoot, 'test', 'fixtures', 'blocks');

export function fixture(name: string): Promise<string> {
  return readFile(path.join(fixtures, name), 'utf8');
}

/** A fresh temporary folder (its real path) and a function that removes it. */
export async function tempDir(prefix = 'belay-blocks-'): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), prefix)));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
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
