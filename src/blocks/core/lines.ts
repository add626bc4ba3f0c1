// A text file as lines that remember their own line endings, so that replacing some lines leaves
// every other byte of the file as it was (CRLF, LF, a missing final newline, a BOM).

export interface FileLines {
  bom: boolean;
  lines: string[];
  /** The terminator of each line: '\r\n', '\n', '\r', or '' for a last line without one. */
  eols: string[];
}

/** Splits text into lines. '' has no lines; 'a\n' has one; a final newline adds no empty line. */
export function splitFileLines(text: string): FileLines {
  const bom = text.charCodeAt(0) === 0xfeff;
  const lines: string[] = [];
  const eols: string[] = [];
  let start = bom ? 1 : 0;
  const length = text.length;
  while (start < length) {
    let i = start;
    while (i < length) {
      const c = text.charCodeAt(i);
      if (c === 10 || c === 13) break;
      i++;
    }
    lines.push(text.slice(start, i));
    if (i === length) {
      eols.push('');
      break;
    }
    const eol = text.charCodeAt(i) === 13 && text.charCodeAt(i + 1) === 10 ? '\r\n' : text[i]!;
    eols.push(eol);
    start = i + eol.length;
  }
  return { bom, lines, eols };
}

/** The line ending most lines use ('\n' when there is none). */
function dominantEol(file: FileLines): string {
  let crlf = 0;
  let lf = 0;
  let cr = 0;
  for (const eol of file.eols) {
    if (eol === '\r\n') crlf++;
    else if (eol === '\n') lf++;
    else if (eol === '\r') cr++;
  }
  if (crlf > lf && crlf >= cr) return '\r\n';
  if (cr > lf && cr > crlf) return '\r';
  return '\n';
}

/**
 * Replaces lines [start, end) (0-based) with `replacement`. New lines take the file's dominant
 * ending; the last one takes the ending of the last line replaced, so a file without a final
 * newline still has none; deleting the last lines of such a file leaves the new last line without one.
 */
export function replaceLines(file: FileLines, start: number, end: number, replacement: readonly string[]): FileLines {
  const eol = dominantEol(file);
  const lastEol = end > start ? file.eols[end - 1]! : eol;
  const insertedEols = replacement.map((_, i) => (i === replacement.length - 1 ? lastEol : eol));
  const lines = [...file.lines.slice(0, start), ...replacement, ...file.lines.slice(end)];
  const eols = [...file.eols.slice(0, start), ...insertedEols, ...file.eols.slice(end)];
  if (replacement.length === 0 && end === file.lines.length && start > 0 && lastEol === '') eols[start - 1] = '';
  return { bom: file.bom, lines, eols };
}

export function joinFileLines(file: FileLines): string {
  let text = file.bom ? '\ufeff' : '';
  for (let i = 0; i < file.lines.length; i++) text += file.lines[i]! + file.eols[i]!;
  return text;
}

/** How many lines `splitFileLines` would find, without building them. */
export function countFileLines(text: string): number {
  let start = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  if (start >= text.length) return 0;
  let count = 0;
  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10 || (c === 13 && text.charCodeAt(i + 1) !== 10)) {
      count++;
      start = i + 1;
    }
  }
  return start < text.length ? count + 1 : count;
}
