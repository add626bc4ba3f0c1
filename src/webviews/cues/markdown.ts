// A small Markdown subset for agents' prompts, parsed into a plain tree (no DOM, no HTML): the app
// turns it into elements with createElement/textContent, so any HTML in a prompt stays text.
// Supported: paragraphs (line breaks kept), headings, fenced code, bullet and numbered lists,
// block quotes, pipe tables (GitHub's), **strong**, *em*/_em_, `code`, [links](https://…) and bare
// http(s) URLs.
import { safeHref } from '../../contracts/cuesPage.ts';

export type Inline =
  | { t: 'text'; text: string }
  | { t: 'strong'; children: Inline[] }
  | { t: 'em'; children: Inline[] }
  | { t: 'code'; text: string }
  | { t: 'link'; href: string; children: Inline[] }
  | { t: 'br' };

export type Block =
  | { t: 'p'; children: Inline[] }
  | { t: 'h'; level: 1 | 2 | 3; children: Inline[] }
  | { t: 'pre'; text: string }
  | { t: 'list'; ordered: boolean; items: Inline[][] }
  | { t: 'quote'; children: Inline[] }
  /** A pipe table: every row has as many cells as the header. */
  | { t: 'table'; align: Array<'left' | 'center' | 'right' | undefined>; header: Inline[][]; rows: Inline[][][] };

const LINK = /^\[([^\]\n]*)\]\(([^()\s]+)\)/;
const BARE_URL = /^https?:\/\/[^\s<>()"'`]+[^\s<>()"'`.,;:!?]/;

function pushText(out: Inline[], text: string): void {
  if (!text) return;
  const last = out[out.length - 1];
  if (last?.t === 'text') last.text += text;
  else out.push({ t: 'text', text });
}

/** Inline spans of one paragraph; `\n` becomes a line break. */
export function parseInline(src: string, depth = 0): Inline[] {
  const out: Inline[] = [];
  let i = 0;
  while (i < src.length) {
    const rest = src.slice(i);
    const ch = src[i]!;
    if (ch === '\n') {
      out.push({ t: 'br' });
      i++;
      continue;
    }
    if (ch === '\\' && i + 1 < src.length && /[\\`*_[\]()#>-]/.test(src[i + 1]!)) {
      pushText(out, src[i + 1]!);
      i += 2;
      continue;
    }
    if (ch === '`') {
      const end = src.indexOf('`', i + 1);
      if (end > i + 1) {
        out.push({ t: 'code', text: src.slice(i + 1, end) });
        i = end + 1;
        continue;
      }
    }
    if (depth < 4 && rest.startsWith('**')) {
      const end = src.indexOf('**', i + 2);
      if (end > i + 2) {
        out.push({ t: 'strong', children: parseInline(src.slice(i + 2, end), depth + 1) });
        i = end + 2;
        continue;
      }
    }
    if (depth < 4 && (ch === '*' || ch === '_') && src[i + 1] !== ch && src[i + 1] !== ' ' && src[i + 1] !== undefined) {
      // `_` inside a word (snake_case) is not emphasis.
      const wordBefore = ch === '_' && i > 0 && /\w/.test(src[i - 1]!);
      const end = src.indexOf(ch, i + 1);
      if (!wordBefore && end > i + 1 && src[end - 1] !== ' ' && !(ch === '_' && /\w/.test(src[end + 1] ?? ''))) {
        out.push({ t: 'em', children: parseInline(src.slice(i + 1, end), depth + 1) });
        i = end + 1;
        continue;
      }
    }
    if (ch === '[') {
      const m = LINK.exec(rest);
      if (m) {
        const href = safeHref(m[2]!);
        const label = parseInline(m[1] || m[2]!, depth + 1);
        if (href) out.push({ t: 'link', href, children: label });
        else pushText(out, m[0]); // not a web link: shown exactly as written
        i += m[0].length;
        continue;
      }
    }
    if (ch === 'h' && (i === 0 || !/\w/.test(src[i - 1]!))) {
      const m = BARE_URL.exec(rest);
      const href = m ? safeHref(m[0]) : undefined;
      if (m && href) {
        out.push({ t: 'link', href, children: [{ t: 'text', text: m[0] }] });
        i += m[0].length;
        continue;
      }
    }
    pushText(out, ch);
    i++;
  }
  return out;
}

const FENCE = /^\s{0,3}(```|~~~)/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const BULLET = /^\s{0,3}[-*+]\s+(.*)$/;
const ORDERED = /^\s{0,3}\d{1,9}[.)]\s+(.*)$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;
const TABLE_DELIMITER = /^\s{0,3}\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
/** Larger tables than this stay text: a prompt cannot make the page build millions of cells. */
const MAX_TABLE_CELLS = 5000;

/** The cells of a table row: split on `|` not escaped and not inside a code span; outer pipes dropped. */
export function splitTableRow(line: string): string[] {
  const cells: string[] = [];
  let cell = '';
  let inCode = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (ch === '\\' && line[i + 1] === '|') {
      cell += '|';
      i++;
    } else if (ch === '`') {
      inCode = !inCode;
      cell += ch;
    } else if (ch === '|' && !inCode) {
      cells.push(cell);
      cell = '';
    } else {
      cell += ch;
    }
  }
  cells.push(cell);
  const trimmed = line.trim();
  if (trimmed.startsWith('|') && cells[0]?.trim() === '') cells.shift();
  if (trimmed.endsWith('|') && cells.length > 0 && cells[cells.length - 1]!.trim() === '') cells.pop();
  return cells.map((c) => c.trim());
}

function alignOf(delimiter: string): 'left' | 'center' | 'right' | undefined {
  const d = delimiter.trim();
  const left = d.startsWith(':');
  const right = d.endsWith(':');
  return left && right ? 'center' : right ? 'right' : left ? 'left' : undefined;
}

/** A table starting at `lines[i]` (its header row, then the delimiter row), and where it ends. */
function parseTable(lines: readonly string[], i: number): { block: Block; next: number } | undefined {
  const headerLine = lines[i]!;
  const delimiterLine = lines[i + 1];
  if (delimiterLine === undefined || !headerLine.includes('|') || !TABLE_DELIMITER.test(delimiterLine) || !delimiterLine.includes('-')) return undefined;
  const header = splitTableRow(headerLine);
  const delimiters = splitTableRow(delimiterLine);
  if (header.length === 0 || header.length !== delimiters.length) return undefined;
  const width = header.length;
  const rows: string[][] = [];
  let j = i + 2;
  while (j < lines.length && lines[j]!.trim() !== '' && lines[j]!.includes('|')) {
    const cells = splitTableRow(lines[j]!).slice(0, width);
    while (cells.length < width) cells.push('');
    rows.push(cells);
    j++;
  }
  if ((rows.length + 1) * width > MAX_TABLE_CELLS) return undefined;
  return {
    block: {
      t: 'table',
      align: delimiters.map(alignOf),
      header: header.map((c) => parseInline(c)),
      rows: rows.map((row) => row.map((c) => parseInline(c))),
    },
    next: j,
  };
}

/** The blocks of a prompt. Never throws; anything unrecognised is paragraph text. */
export function parseMarkdown(src: string): Block[] {
  const lines = src.replace(/\r\n?/g, '\n').split('\n');
  const blocks: Block[] = [];
  let para: string[] = [];
  const flush = () => {
    if (para.length > 0) blocks.push({ t: 'p', children: parseInline(para.join('\n')) });
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const fence = FENCE.exec(line);
    if (fence) {
      flush();
      const code: string[] = [];
      i++;
      while (i < lines.length && !lines[i]!.trimStart().startsWith(fence[1]!)) code.push(lines[i++]!);
      blocks.push({ t: 'pre', text: code.join('\n') });
      continue;
    }
    if (line.trim() === '') {
      flush();
      continue;
    }
    const table = parseTable(lines, i);
    if (table) {
      flush();
      blocks.push(table.block);
      i = table.next - 1;
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      flush();
      blocks.push({ t: 'h', level: Math.min(3, heading[1]!.length) as 1 | 2 | 3, children: parseInline(heading[2]!) });
      continue;
    }
    const bullet = BULLET.exec(line);
    const ordered = bullet ? undefined : ORDERED.exec(line);
    if (bullet || ordered) {
      flush();
      const isOrdered = ordered !== undefined && ordered !== null;
      const items: Inline[][] = [];
      let j = i;
      while (j < lines.length) {
        const m = isOrdered ? ORDERED.exec(lines[j]!) : BULLET.exec(lines[j]!);
        if (!m) break;
        items.push(parseInline(m[1]!));
        j++;
      }
      blocks.push({ t: 'list', ordered: isOrdered, items });
      i = j - 1;
      continue;
    }
    const quote = QUOTE.exec(line);
    if (quote) {
      flush();
      const quoted: string[] = [];
      let j = i;
      while (j < lines.length) {
        const m = QUOTE.exec(lines[j]!);
        if (!m) break;
        quoted.push(m[1]!);
        j++;
      }
      blocks.push({ t: 'quote', children: parseInline(quoted.join('\n')) });
      i = j - 1;
      continue;
    }
    para.push(line);
  }
  flush();
  return blocks;
}
