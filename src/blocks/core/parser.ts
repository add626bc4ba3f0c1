// The command-block parser: one pass over the answer, line by line, without splitting it into
// strings. Lines that do not start with `[` (after blanks) are looked at once and skipped, so a
// large answer costs little more than finding its line breaks. It never throws: whatever the
// input, the result is a list of commands and a list of errors, each with exact ranges.
import { errorMessage } from '../../shared/errors.ts';
import {
  COMMAND_TYPES,
  REQUIRED_ATTRIBUTES,
  SELF_CLOSING,
  TRIMMED_BODY,
  type Attribute,
  type Body,
  type Command,
  type CommandType,
  type ParseError,
  type ParseResult,
  type Position,
  type Range,
  type Tag,
} from './syntax.ts';

const COMMAND_BY_NAME: ReadonlyMap<string, CommandType> = new Map(COMMAND_TYPES.map((t) => [t, t]));
const CLOSER: Readonly<Record<CommandType, string>> = Object.fromEntries(COMMAND_TYPES.map((t) => [t, `[/${t}]`])) as Record<
  CommandType,
  string
>;

/** Names LLMs use for the protocol's commands: an opening tag with one of these gets a suggestion. */
const SYNONYMS: ReadonlyMap<string, CommandType> = new Map([
  ['WRITE_FILE', 'CREATE_FILE'],
  ['NEW_FILE', 'CREATE_FILE'],
  ['ADD_FILE', 'CREATE_FILE'],
  ['SAVE_FILE', 'CREATE_FILE'],
  ['CREATE', 'CREATE_FILE'],
  ['UPDATE_FILE', 'EDIT_FILE'],
  ['MODIFY_FILE', 'EDIT_FILE'],
  ['REPLACE_FILE', 'EDIT_FILE'],
  ['REPLACE_LINES', 'EDIT_FILE'],
  ['PATCH_FILE', 'EDIT_FILE'],
  ['EDIT', 'EDIT_FILE'],
  ['REMOVE_FILE', 'DELETE_FILE'],
  ['DELETE', 'DELETE_FILE'],
  ['VIEW_FILE', 'READ_FILE'],
  ['OPEN_FILE', 'READ_FILE'],
  ['CAT_FILE', 'READ_FILE'],
  ['SHOW_FILE', 'READ_FILE'],
  ['READ', 'READ_FILE'],
  ['RUN', 'RUN_COMMAND'],
  ['RUN_CMD', 'RUN_COMMAND'],
  ['RUN_SHELL', 'RUN_COMMAND'],
  ['SHELL_COMMAND', 'RUN_COMMAND'],
  ['EXEC', 'RUN_COMMAND'],
  ['EXECUTE', 'RUN_COMMAND'],
  ['EXECUTE_COMMAND', 'RUN_COMMAND'],
  ['MSG', 'MESSAGE'],
  ['FINISH', 'DONE'],
  ['FINISHED', 'DONE'],
  ['COMPLETE', 'DONE'],
  ['TASK_COMPLETE', 'DONE'],
  ['TASK_DONE', 'DONE'],
]);

/** Targets whose content may legitimately start and end with a Markdown fence: kept verbatim. */
const FENCE_KEEPING_EXTENSIONS: ReadonlySet<string> = new Set([
  'md',
  'markdown',
  'mdx',
  'mdown',
  'mkd',
  'txt',
  'text',
  'rst',
  'adoc',
  'asciidoc',
  'org',
]);

const FENCE_OPEN = /^\s*(?:(`{3,})[^`]*|(~{3,}).*)$/;
const FENCE_CLOSE = /^\s*(`{3,}|~{3,})\s*$/;
const INTEGER = /^[+-]?\d+$/;

/** Blanks inside a line: what `String.prototype.trim` removes, line breaks aside (a BOM is one). */
function isBlank(c: number): boolean {
  return (
    c === 32 ||
    c === 9 ||
    c === 11 ||
    c === 12 ||
    (c > 127 &&
      (c === 0xa0 || c === 0xfeff || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000))
  );
}

/** A–Z, a–z, 0–9, `_`: the characters of a command name. */
function isNameChar(c: number): boolean {
  return (c >= 65 && c <= 90) || c === 95 || (c >= 97 && c <= 122) || (c >= 48 && c <= 57);
}

function isAttributeChar(c: number): boolean {
  return isNameChar(c) || c === 45;
}

/** Parses a whole LLM answer into commands and errors. Never throws. */
export function parseAnswer(text: string): ParseResult {
  const parser = new Parser(typeof text === 'string' ? text : String(text));
  try {
    parser.run();
  } catch (error) {
    parser.fail(error);
  }
  return parser.result();
}

class Parser {
  private readonly text: string;
  private readonly len: number;
  private readonly commands: Command[] = [];
  private readonly errors: ParseError[] = [];
  /** Position of the next `\r` at or after the current line; -1 once there is none. */
  private cr: number;
  private readonly hasCR: boolean;
  /** The current line: its number, where it starts, where its content ends, where the next starts. */
  private ln = 0;
  private ls = 0;
  private le = 0;
  private nx = 0;
  /** The line before the current one at the top level (for a fence just above an opening tag). */
  private prevLs = -1;
  private prevLe = -1;
  /** Content lines of the block being read, reused from block to block. */
  private readonly contentStarts: number[] = [];
  private readonly contentEnds: number[] = [];
  /** Standalone closing tags by name, built on first need (only for unknown commands). */
  private closerIndex: Map<string, number[]> | undefined;

  constructor(text: string) {
    this.text = text;
    this.len = text.length;
    this.cr = text.indexOf('\r');
    this.hasCR = this.cr !== -1;
    this.measure();
  }

  result(): ParseResult {
    const errors = this.errors.length > 1 ? stableSortByStart(this.errors) : this.errors;
    return { commands: this.commands, errors };
  }

  fail(error: unknown): void {
    const position = { line: this.ln, character: 0 };
    this.errors.push({
      code: 'internal',
      message: `Belay could not parse the answer from here on (${errorMessage(error)}); nothing after this point was executed`,
      range: { start: position, end: position },
    });
  }

  run(): void {
    while (this.ls <= this.len) {
      this.topLevelLine();
      this.prevLs = this.ls;
      this.prevLe = this.le;
      this.advance();
    }
  }

  // --- lines ---------------------------------------------------------------------------------

  /** Finds where the current line's content ends and where the next line starts (\n, \r\n, \r). */
  private measure(): void {
    const start = this.ls;
    if (start > this.len) return;
    const text = this.text;
    let nl = text.indexOf('\n', start);
    if (nl === -1) nl = this.len;
    let cr = this.cr;
    if (cr !== -1 && cr < start) cr = this.cr = text.indexOf('\r', start);
    if (cr !== -1 && cr < nl) {
      this.le = cr;
      this.nx = cr + 1 === nl && nl < this.len ? nl + 1 : cr + 1;
    } else {
      this.le = nl;
      this.nx = nl + 1;
    }
  }

  private advance(): void {
    this.ls = this.nx;
    this.ln++;
    this.measure();
  }

  private firstNonBlank(from: number, to: number): number {
    const text = this.text;
    while (from < to && isBlank(text.charCodeAt(from))) from++;
    return from;
  }

  private trimmedEnd(from: number, to: number): number {
    const text = this.text;
    while (to > from && isBlank(text.charCodeAt(to - 1))) to--;
    return to;
  }

  private at(line: number, lineStart: number, offset: number): Position {
    return { line, character: offset - lineStart };
  }

  private span(line: number, lineStart: number, from: number, to: number): Range {
    return { start: { line, character: from - lineStart }, end: { line, character: to - lineStart } };
  }

  // --- top level -----------------------------------------------------------------------------

  private topLevelLine(): void {
    const text = this.text;
    const le = this.le;
    const s = this.firstNonBlank(this.ls, le);
    if (s === le || text.charCodeAt(s) !== 91 /* [ */) return;
    const e = this.trimmedEnd(s, le);
    if (text.charCodeAt(s + 1) === 47 /* / */) {
      this.closingTagAtTopLevel(s, e);
      return;
    }
    const nameStart = s + 1;
    let nameEnd = nameStart;
    while (nameEnd < e && isNameChar(text.charCodeAt(nameEnd))) nameEnd++;
    if (nameEnd === nameStart) return;
    if (nameEnd < e) {
      const c = text.charCodeAt(nameEnd);
      if (c !== 93 /* ] */ && !isBlank(c)) return;
    }
    const name = text.slice(nameStart, nameEnd);
    const type = COMMAND_BY_NAME.get(name);
    if (type !== undefined) this.block(type, s, nameEnd, e);
    else this.unknownTag(name, s, nameEnd, e);
  }

  private closingTagAtTopLevel(s: number, e: number): void {
    const text = this.text;
    const nameStart = s + 2;
    let nameEnd = nameStart;
    while (nameEnd < e && isNameChar(text.charCodeAt(nameEnd))) nameEnd++;
    if (nameEnd === nameStart || nameEnd + 1 !== e || text.charCodeAt(nameEnd) !== 93) return;
    const name = text.slice(nameStart, nameEnd);
    const type = COMMAND_BY_NAME.get(name);
    const range = this.span(this.ln, this.ls, s, e);
    if (type !== undefined) {
      const message = SELF_CLOSING.has(type)
        ? `Stray closing tag [/${type}]: ${type} is a single line and takes no closing tag except right after it`
        : `Stray closing tag [/${type}] with no [${type}] block open`;
      this.errors.push({ code: 'stray-closing-tag', message, range, command: type });
      return;
    }
    const suggestion = lookalike(name);
    if (suggestion === undefined) return;
    this.errors.push({
      code: 'unknown-command',
      message: `Unknown closing tag [/${name}]; did you mean [/${suggestion}]?`,
      range,
      suggestion,
    });
  }

  private unknownTag(name: string, s: number, nameEnd: number, e: number): void {
    const suggestion = lookalike(name);
    if (suggestion === undefined) return;
    const line = this.ln;
    const ls = this.ls;
    const nameRange = this.span(line, ls, s + 1, nameEnd);
    // Its body (up to a matching closing tag on a line of its own) is not Belay's to execute.
    let end = this.at(line, ls, e);
    const closer = this.standaloneCloserAfter(name, this.nx);
    if (closer !== -1) {
      while (this.nx <= closer && this.ls <= this.len) this.advance();
      end = this.at(this.ln, this.ls, closer + name.length + 3);
    }
    this.errors.push({
      code: 'unknown-command',
      message: `Unknown command ${name}; did you mean ${suggestion}?`,
      range: nameRange,
      suggestion,
      blockRange: { start: this.at(line, ls, s), end },
    });
  }

  /** Where the next line that is exactly `[/name]` (blanks aside) starts its tag, or -1. */
  private standaloneCloserAfter(name: string, from: number): number {
    if (this.closerIndex === undefined) this.closerIndex = this.indexStandaloneClosers(from);
    const offsets = this.closerIndex.get(name);
    if (offsets === undefined) return -1;
    for (const offset of offsets) if (offset >= from) return offset;
    return -1;
  }

  private indexStandaloneClosers(from: number): Map<string, number[]> {
    const text = this.text;
    const index = new Map<string, number[]>();
    let k = text.indexOf('[/', from);
    while (k !== -1) {
      let before = k - 1;
      while (before >= 0 && isBlank(text.charCodeAt(before))) before--;
      const startsLine = before < 0 || text.charCodeAt(before) === 10 || text.charCodeAt(before) === 13;
      let nameEnd = k + 2;
      while (nameEnd < this.len && isNameChar(text.charCodeAt(nameEnd))) nameEnd++;
      if (startsLine && nameEnd > k + 2 && text.charCodeAt(nameEnd) === 93) {
        let after = nameEnd + 1;
        while (after < this.len && isBlank(text.charCodeAt(after))) after++;
        const c = text.charCodeAt(after);
        if (after === this.len || c === 10 || c === 13) {
          const name = text.slice(k + 2, nameEnd);
          const list = index.get(name);
          if (list) list.push(k);
          else index.set(name, [k]);
        }
      }
      k = text.indexOf('[/', k + 2);
    }
    return index;
  }

  // --- blocks --------------------------------------------------------------------------------

  private block(type: CommandType, s: number, nameEnd: number, e: number): void {
    const text = this.text;
    const line = this.ln;
    const ls = this.ls;
    const problems: ParseError[] = [];
    const attributes: Attribute[] = [];
    /** Attributes written but unreadable: reported as such, not also as missing. */
    const broken = new Set<string>();
    let tagEnd = -1;
    let p = nameEnd;
    while (p < e) {
      p = this.firstNonBlank(p, e);
      if (p >= e) break;
      const c = text.charCodeAt(p);
      if (c === 93) {
        tagEnd = p + 1;
        break;
      }
      if (!isNameChar(c)) {
        const junkEnd = this.skipWord(p, e);
        problems.push({
          code: 'malformed-attribute',
          message: `${type} tag has unexpected text '${text.slice(p, junkEnd)}'`,
          range: this.span(line, ls, p, junkEnd),
          command: type,
        });
        p = junkEnd;
        continue;
      }
      const keyStart = p;
      while (p < e && isAttributeChar(text.charCodeAt(p))) p++;
      const keyEnd = p;
      const key = text.slice(keyStart, keyEnd);
      let q = this.firstNonBlank(p, e);
      if (text.charCodeAt(q) !== 61 /* = */ || q >= e) {
        broken.add(key.toLowerCase());
        problems.push({
          code: 'malformed-attribute',
          message: `${type} attribute ${key} has no value; write ${key}="…"`,
          range: this.span(line, ls, keyStart, keyEnd),
          command: type,
        });
        continue;
      }
      q = this.firstNonBlank(q + 1, e);
      const quote = text.charCodeAt(q);
      if (q >= e || (quote !== 34 && quote !== 39)) {
        const valueEnd = q >= e ? q : this.skipWord(q, e);
        broken.add(key.toLowerCase());
        problems.push({
          code: 'malformed-attribute',
          message: `${type} attribute ${key} must have its value in quotes: ${key}="${text.slice(q, valueEnd)}"`,
          range: this.span(line, ls, keyStart, valueEnd),
          command: type,
        });
        p = valueEnd;
        continue;
      }
      const valueStart = q + 1;
      let v = valueStart;
      let value = '';
      let chunk = valueStart;
      let closed = -1;
      while (v < e) {
        const ch = text.charCodeAt(v);
        if (ch === 92 /* \ */ && v + 1 < e) {
          const escaped = text.charCodeAt(v + 1);
          if (escaped === quote || escaped === 92) {
            value += text.slice(chunk, v);
            chunk = v + 1;
            v += 2;
            continue;
          }
        }
        if (ch === quote) {
          closed = v;
          break;
        }
        v++;
      }
      if (closed === -1) {
        broken.add(key.toLowerCase());
        problems.push({
          code: 'malformed-attribute',
          message: `${type} attribute ${key} has no closing quote`,
          range: this.span(line, ls, keyStart, e),
          command: type,
        });
        tagEnd = e;
        break;
      }
      value += text.slice(chunk, closed);
      attributes.push({
        name: key,
        value,
        range: this.span(line, ls, keyStart, closed + 1),
        nameRange: this.span(line, ls, keyStart, keyEnd),
        valueRange: this.span(line, ls, valueStart, closed),
      });
      p = closed + 1;
    }
    if (tagEnd === -1) {
      tagEnd = e;
      problems.push({
        code: 'unterminated-tag',
        message: `${type} opening tag has no closing ']'`,
        range: this.span(line, ls, s, e),
        command: type,
      });
    }
    const openTag: Tag = { range: this.span(line, ls, s, tagEnd), nameRange: this.span(line, ls, s + 1, nameEnd) };
    const byName = new Map<string, Attribute>();
    for (const attribute of attributes) byName.set(attribute.name.toLowerCase(), attribute);
    const values = this.validate(type, openTag, byName, broken, problems);

    if (SELF_CLOSING.has(type)) {
      const closeTag = this.selfClosingCloser(type, tagEnd, e);
      const range = { start: openTag.range.start, end: (closeTag ?? openTag).range.end };
      this.emit(type, problems, closeTag ? { range, openTag, closeTag, attributes } : { range, openTag, attributes }, values, undefined);
      return;
    }

    const closer = CLOSER[type];
    const starts = this.contentStarts;
    const ends = this.contentEnds;
    starts.length = 0;
    ends.length = 0;
    let closeTag: Tag | undefined;
    const r = this.firstNonBlank(tagEnd, e);
    if (r < e) {
      const k = text.indexOf(closer, r);
      if (k !== -1 && k + closer.length <= e) {
        // One-line form: [DONE]All good[/DONE]
        const contentEnd = this.trimmedEnd(r, k);
        if (contentEnd > r) {
          starts.push(r);
          ends.push(contentEnd);
        }
        closeTag = { range: this.span(line, ls, k, k + closer.length), nameRange: this.span(line, ls, k + 2, k + closer.length - 1) };
      } else {
        // Content right after the opening tag is the body's first line.
        starts.push(r);
        ends.push(this.le);
      }
    }
    const contentOnTagLine = starts.length > 0;
    const firstLine = contentOnTagLine ? line : line + 1;
    const firstLineStart = contentOnTagLine ? ls : this.nx;
    closeTag ??= this.scanToCloser(closer);
    if (closeTag === undefined) {
      const what = values.path ? `${type} for '${values.path}'` : type;
      problems.push({
        code: 'unclosed-block',
        message: `${what} missing closing tag ${closer}; it and everything after it were not executed`,
        range: openTag.range,
        command: type,
      });
      this.emit(type, problems, { range: { start: openTag.range.start, end: this.endOfText() }, openTag, attributes }, values, undefined);
      return;
    }
    const body = this.body(type, values.path, firstLine, firstLineStart, closeTag);
    this.emit(type, problems, { range: { start: openTag.range.start, end: closeTag.range.end }, openTag, closeTag, attributes }, values, body);
  }

  private skipWord(from: number, to: number): number {
    const text = this.text;
    while (from < to) {
      const c = text.charCodeAt(from);
      if (c === 93 || isBlank(c)) break;
      from++;
    }
    return from;
  }

  private endOfText(): Position {
    // Called when the scan has reached the last line.
    return { line: this.ln, character: this.le - this.ls };
  }

  /** `[/DELETE_FILE]` right after a DELETE_FILE tag (same line, or the next non-blank line) belongs to it. */
  private selfClosingCloser(type: CommandType, tagEnd: number, e: number): Tag | undefined {
    const text = this.text;
    const closer = CLOSER[type];
    const r = this.firstNonBlank(tagEnd, e);
    if (r < e && text.startsWith(closer, r)) {
      return { range: this.span(this.ln, this.ls, r, r + closer.length), nameRange: this.span(this.ln, this.ls, r + 2, r + closer.length - 1) };
    }
    if (r < e) return undefined;
    const saved = [this.ln, this.ls, this.le, this.nx, this.cr, this.prevLs, this.prevLe] as const;
    this.prevLs = this.ls;
    this.prevLe = this.le;
    this.advance();
    while (this.ls <= this.len) {
      const s = this.firstNonBlank(this.ls, this.le);
      if (s < this.le) {
        const end = this.trimmedEnd(s, this.le);
        if (end - s === closer.length && text.startsWith(closer, s)) {
          return { range: this.span(this.ln, this.ls, s, end), nameRange: this.span(this.ln, this.ls, s + 2, end - 1) };
        }
        break;
      }
      this.prevLs = this.ls;
      this.prevLe = this.le;
      this.advance();
    }
    [this.ln, this.ls, this.le, this.nx, this.cr, this.prevLs, this.prevLe] = saved;
    return undefined;
  }

  /**
   * Reads content lines until a line that is the closing tag (blanks aside) or that ends with it.
   * Leaves the cursor on the closing tag's line; at the last line when there is none.
   */
  private scanToCloser(closer: string): Tag | undefined {
    const text = this.text;
    const starts = this.contentStarts;
    const ends = this.contentEnds;
    const closerLength = closer.length;
    while (this.nx <= this.len) {
      this.advance();
      const ls = this.ls;
      const le = this.le;
      const s = this.firstNonBlank(ls, le);
      if (s < le && text.charCodeAt(le - 1) !== 93 && !isBlank(text.charCodeAt(le - 1))) {
        starts.push(ls);
        ends.push(le);
        continue;
      }
      const e = this.trimmedEnd(s, le);
      if (e - s >= closerLength && text.charCodeAt(e - 1) === 93 && text.startsWith(closer, e - closerLength)) {
        const k = e - closerLength;
        if (k > s) {
          starts.push(ls);
          ends.push(this.trimmedEnd(ls, k));
        }
        return { range: this.span(this.ln, ls, k, e), nameRange: this.span(this.ln, ls, k + 2, e - 1) };
      }
      starts.push(ls);
      ends.push(le);
    }
    return undefined;
  }

  /** The body from the content lines collected: fences around it removed where they cannot be meant, trimmed where the protocol trims. */
  private body(type: CommandType, path: string, firstLine: number, firstLineStart: number, closeTag: Tag): Body {
    const text = this.text;
    const starts = this.contentStarts;
    const ends = this.contentEnds;
    const trimmed = TRIMMED_BODY.has(type);
    const isBlankLine = (i: number) => this.firstNonBlank(starts[i]!, ends[i]!) === ends[i];
    const lineStartOf = (i: number) => (i === 0 ? firstLineStart : starts[i]!);
    const rangeOfLine = (i: number): Range => this.span(firstLine + i, lineStartOf(i), starts[i]!, ends[i]!);
    let first = 0;
    let last = starts.length - 1;
    const skipBlankLines = () => {
      while (first <= last && isBlankLine(first)) first++;
      while (last >= first && isBlankLine(last)) last--;
    };
    if (trimmed) skipBlankLines();
    const removedFences: Range[] = [];
    if (last >= first && removesFences(type, path)) {
      const open = FENCE_OPEN.exec(text.slice(starts[first]!, ends[first]!));
      // A fence just above the opening tag whose closing fence landed inside the body.
      const above = open === null && this.prevLs >= 0 ? FENCE_OPEN.exec(text.slice(this.prevLs, this.prevLe)) : null;
      if (open) {
        removedFences.push(rangeOfLine(first));
        first++;
      }
      const fence = open ? (open[1] ?? open[2]!) : above ? (above[1] ?? above[2]!) : undefined;
      if (fence !== undefined && last >= first && closesFence(text.slice(starts[last]!, ends[last]!), fence)) {
        removedFences.push(rangeOfLine(last));
        last--;
      }
      if (trimmed) skipBlankLines();
    }
    if (first > last) {
      const at = closeTag.range.start;
      return { text: '', lineCount: 0, range: { start: at, end: at }, removedFences };
    }
    const from = trimmed ? this.firstNonBlank(starts[first]!, ends[first]!) : starts[first]!;
    const to = trimmed ? this.trimmedEnd(starts[last]!, ends[last]!) : ends[last]!;
    let content = text.slice(from, to);
    if (this.hasCR && content.includes('\r')) content = content.replace(/\r\n?/g, '\n');
    return {
      text: content,
      lineCount: last - first + 1,
      range: { start: this.at(firstLine + first, lineStartOf(first), from), end: this.at(firstLine + last, lineStartOf(last), to) },
      removedFences,
    };
  }

  /** Checks the attributes a command requires; what is wrong goes into `problems`. */
  private validate(type: CommandType, openTag: Tag, byName: Map<string, Attribute>, broken: ReadonlySet<string>, problems: ParseError[]): CommandValues {
    const required = REQUIRED_ATTRIBUTES[type];
    const missing = required.filter((name) => !byName.has(name) && !broken.has(name));
    if (missing.length > 0) {
      const message =
        required.length === 1
          ? `${type} missing ${missing[0]} attribute`
          : missing.length === required.length
            ? `${type} missing required attributes (${required.join(', ')})`
            : `${type} missing required attribute${missing.length > 1 ? 's' : ''} ${missing.join(', ')} (needs ${required.join(', ')})`;
      problems.push({ code: 'missing-attribute', message, range: openTag.range, command: type });
    }
    const pathAttribute = required.includes('path') ? byName.get('path') : undefined;
    const path = pathAttribute?.value.trim() ?? '';
    if (pathAttribute && path === '') {
      problems.push({ code: 'empty-path', message: `${type} path is empty`, range: pathAttribute.range, command: type });
    }
    if (type !== 'EDIT_FILE') return { path, startLine: 0, endLine: 0 };
    const start = byName.get('start_line');
    const end = byName.get('end_line');
    const startLine = start ? this.lineNumber(type, start, problems) : Number.NaN;
    const endLine = end ? this.lineNumber(type, end, problems) : Number.NaN;
    if (end && endLine < startLine) {
      problems.push({
        code: 'line-range-reversed',
        message: `${type} end_line ${endLine} is before start_line ${startLine}`,
        range: end.valueRange,
        command: type,
      });
    }
    return { path, startLine, endLine };
  }

  /** Records the block: as a command when nothing is wrong with it, otherwise as its errors (and nothing of it runs). */
  private emit(type: CommandType, problems: ParseError[], common: Omit<Command, 'type'>, values: CommandValues, body: Body | undefined): void {
    if (problems.length > 0) {
      for (const problem of problems) problem.blockRange = common.range;
      this.errors.push(...problems);
      return;
    }
    const { path, startLine, endLine } = values;
    switch (type) {
      case 'CREATE_FILE':
        this.commands.push({ type, ...common, path, body: body! });
        return;
      case 'EDIT_FILE':
        this.commands.push({ type, ...common, path, startLine, endLine, body: body! });
        return;
      case 'DELETE_FILE':
      case 'READ_FILE':
        this.commands.push({ type, ...common, path });
        return;
      case 'RUN_COMMAND':
      case 'MESSAGE':
      case 'DONE':
        this.commands.push({ type, ...common, body: body! });
        return;
    }
  }

  /** A 1-based line number, or NaN after recording why the value is not one. */
  private lineNumber(type: CommandType, attribute: Attribute, problems: ParseError[]): number {
    const raw = attribute.value.trim();
    const name = attribute.name.toLowerCase();
    if (!INTEGER.test(raw)) {
      problems.push({
        code: 'invalid-line-number',
        message: `${type} ${name} must be an integer, got '${attribute.value}'`,
        range: attribute.valueRange,
        command: type,
      });
      return Number.NaN;
    }
    const value = Number(raw);
    if (!Number.isSafeInteger(value)) {
      problems.push({ code: 'invalid-line-number', message: `${type} ${name} is too large: '${raw}'`, range: attribute.valueRange, command: type });
      return Number.NaN;
    }
    if (value < 1) {
      problems.push({
        code: 'invalid-line-number',
        message: `${type} ${name} must be 1 or more (lines count from 1), got '${raw}'`,
        range: attribute.valueRange,
        command: type,
      });
      return Number.NaN;
    }
    return value;
  }
}

interface CommandValues {
  path: string;
  startLine: number;
  endLine: number;
}

function removesFences(type: CommandType, path: string): boolean {
  if (type === 'RUN_COMMAND') return true;
  if (type !== 'CREATE_FILE' && type !== 'EDIT_FILE') return false;
  const name = path.slice(path.lastIndexOf('/') + 1);
  const dot = name.lastIndexOf('.');
  return dot <= 0 || !FENCE_KEEPING_EXTENSIONS.has(name.slice(dot + 1).toLowerCase());
}

function closesFence(line: string, fence: string): boolean {
  const close = FENCE_CLOSE.exec(line);
  return close !== null && close[1]![0] === fence[0] && close[1]!.length >= fence.length;
}

/** The command an unknown tag name probably meant, or undefined when it does not look like one. */
function lookalike(name: string): CommandType | undefined {
  if (name.length < 3 || name.length > 40) return undefined;
  const upper = name.toUpperCase();
  const exact = COMMAND_BY_NAME.get(upper);
  if (exact !== undefined) return exact;
  const synonym = SYNONYMS.get(upper);
  if (synonym !== undefined && (name === upper || name.includes('_'))) return synonym;
  if (name !== upper) return undefined;
  const allowed = name.length <= 5 ? 1 : 2;
  let best: CommandType | undefined;
  let bestDistance = allowed + 1;
  for (const type of COMMAND_TYPES) {
    const d = editDistance(upper, type, allowed);
    if (d < bestDistance) {
      best = type;
      bestDistance = d;
    }
  }
  return best;
}

/** Optimal string alignment distance (transpositions count as one), capped at `limit + 1`. */
function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let previous2: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, previous2[j - 2]! + 1);
      current.push(d);
      if (d < rowMin) rowMin = d;
    }
    if (rowMin > limit) return limit + 1;
    previous2 = previous;
    previous = current;
  }
  return previous[b.length]!;
}

function stableSortByStart(errors: ParseError[]): ParseError[] {
  return errors
    .map((error, index) => ({ error, index }))
    .sort((x, y) => x.error.range.start.line - y.error.range.start.line || x.error.range.start.character - y.error.range.start.character || x.index - y.index)
    .map((entry) => entry.error);
}
