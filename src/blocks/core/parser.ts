// The command-block parser: one pass over the answer, line by line, without splitting it into
// strings. Lines that do not start with `[` and a tag name's worth of name characters (after
// blanks) are looked at once and skipped, so a large answer costs little more than finding its
// line breaks; tag names are known by their characters' codes, not sliced per tag. Once the error
// list is full, runs of lines that start with tags no block follows are counted in one loop. It
// never throws: whatever the input, the result is a list of commands and a list of errors, each
// with exact ranges.
// Every step is linear in the text, whatever the text: each character is looked at a bounded
// number of times (no search runs past the line it is about, none starts over), and a hostile
// answer cannot make it build more than a bounded number of errors or attributes per tag.
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
/** What the parser needs of a command, in one place (looked up once per tag name, not per tag). */
interface CommandInfo {
  type: CommandType;
  closer: string;
  selfClosing: boolean;
  required: readonly string[];
  requiresPath: boolean;
}
const COMMAND_INFO: ReadonlyMap<string, CommandInfo> = new Map(
  COMMAND_TYPES.map((type) => [
    type,
    { type, closer: `[/${type}]`, selfClosing: SELF_CLOSING.has(type), required: REQUIRED_ATTRIBUTES[type], requiresPath: REQUIRED_ATTRIBUTES[type].includes('path') },
  ]),
);

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

/**
 * Errors listed per answer; the rest are counted in one last error. An answer with more is not an
 * answer to the protocol, and thousands of diagnostics help nobody (each block with an error is
 * left out whether or not its error is listed).
 */
export const MAX_LISTED_ERRORS = 1000;
/**
 * Attributes and problems kept per tag: a command takes at most three attributes, so a tag with
 * more is one parse error (and its block is left out), not thousands.
 */
export const MAX_TAG_ATTRIBUTES = 32;
/** Stands for a problem found once the error list is full: counted, never shown. */
const UNLISTED: ParseError = Object.freeze({
  code: 'too-many-errors',
  message: '',
  range: Object.freeze({ start: Object.freeze({ line: 0, character: 0 }), end: Object.freeze({ line: 0, character: 0 }) }),
}) as ParseError;
/** Names of unknown tags searched for one by one; past this many, every closing tag is indexed at once. */
const MAX_SEARCHED_NAMES = 2;
const UNLISTED_TAG: Tag = Object.freeze({ range: UNLISTED.range, nameRange: UNLISTED.range });
/** Name characters (A–Z, a–z, 0–9, `_`) as codes 1–63 (see readName); 0 for any other character below 128. */
const NAME_CODES = new Uint8Array(128);
for (let c = 0, code = 1; c < 128; c++) if (isNameChar(c)) NAME_CODES[c] = code++;
/** Characters below 128 by class, for the loops a pathological tag makes long (see countWords). */
const BLANK = 1;
const ATTRIBUTE = 2;
const ASCII_CLASS = new Uint8Array(128);
for (let c = 0; c < 128; c++) ASCII_CLASS[c] = isBlank(c) ? BLANK : isAttributeChar(c) ? ATTRIBUTE : 0;
/** Tag names up to this long are told apart by their codes alone: two numbers of 8 codes of 6 bits, exact below 2^53. */
const CODED_NAME = 16;
/** Tag names remembered per parse (a power of two). */
const NAME_SLOTS = 256;
/** Lines up to this long are measured character by character, longer ones with a search. */
const SHORT_LINE = 16;
/**
 * Characters looked at in place for the next `[` before searching for it: a search costs more
 * than a few comparisons, and floods of short lines would pay one each.
 */
const NEAR = 24;
/** Tag names shorter or longer than these are neither a command nor taken for a misspelt one. */
const MIN_TAG_NAME = 3;
const MAX_TAG_NAME = 40;

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
  /** Position of the next `\n` at or after the current line; -1 once there is none. */
  private lf: number;
  private readonly hasCR: boolean;
  /** Errors found beyond MAX_LISTED_ERRORS, and where the first of them was. */
  private unlisted = 0;
  private firstUnlisted: Position | undefined;
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
  /** The last line measured was short (see measure). */
  private shortLines = true;
  /** Where the last line measured that starts with `[` starts, and its tag name as measure read it. */
  private tagLine = -1;
  private tagNameStart = 0;
  private tagNameEnd = 0;
  private tagCodeA = 0;
  private tagCodeB = 0;
  /** What readName last read. */
  private codeA = 0;
  private codeB = 0;
  private readonly lookalikes = new Lookalikes();
  /** Tag names read, by their characters' codes (see nameAt). */
  private readonly names: (TagName | undefined)[] = new Array(NAME_SLOTS);
  /** Standalone closing tags found by name (only for unknown commands); `indexed` once all are. */
  private readonly closers = new Map<string, Closers>();
  private indexed = false;
  /** A search by name went to the end of the text in vain: the next name is not searched, all are indexed. */
  private searchedToEnd = false;

  constructor(text: string) {
    this.text = text;
    this.len = text.length;
    this.cr = text.indexOf('\r');
    this.lf = text.indexOf('\n');
    this.hasCR = this.cr !== -1;
    this.measure();
  }

  result(): ParseResult {
    if (this.unlisted > 0) {
      const at = this.firstUnlisted!;
      this.errors.push({
        code: 'too-many-errors',
        message: `${this.unlisted} more parse error${this.unlisted === 1 ? '' : 's'} from line ${at.line + 1} on ${this.unlisted === 1 ? 'is' : 'are'} not listed (only the first ${MAX_LISTED_ERRORS} are); blocks with errors are not executed`,
        range: { start: at, end: at },
      });
    }
    const errors = this.errors.length > 1 ? sortByStart(this.errors) : this.errors;
    return { commands: this.commands, errors };
  }

  /** Whether the list of errors is full: what comes now is only counted (see MAX_LISTED_ERRORS). */
  private get full(): boolean {
    return this.errors.length >= MAX_LISTED_ERRORS;
  }

  /** Lists an error, or once the list is full, counts it. */
  private report(error: ParseError): void {
    if (this.full) this.countUnlisted(error.range.start);
    else this.errors.push(error);
  }

  private countUnlisted(at: Position): void {
    if (this.unlisted++ === 0) this.firstUnlisted = at;
  }

  private countUnlistedAt(line: number, lineStart: number, offset: number): void {
    if (this.unlisted++ === 0) this.firstUnlisted = this.at(line, lineStart, offset);
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
      if (!this.skipToBracketLine()) return;
      if (this.full && this.countedTagLines()) continue;
      this.topLevelLine();
      this.prevLs = this.ls;
      this.prevLe = this.le;
      this.advance();
    }
  }

  /**
   * Once the error list is full: the lines from the current one on that start with a tag no
   * command opens (`[NAME…`, `[/NAME]`, a closing tag of a command, a bare DELETE_FILE or
   * READ_FILE tag), read in one loop with the cursor in locals, as topLevelLine would read them
   * one by one: each is only counted (or ignored), an unknown tag's body skipped up to its
   * standalone closing tag. A hostile answer of such lines costs a short loop a line. Stops at
   * the first line it does not handle (leading blanks, any other command's opening tag, no tag),
   * measured, with the line before it as the previous one; false when it handled none (nothing
   * moved).
   */
  private countedTagLines(): boolean {
    const text = this.text;
    const len = this.len;
    let ln = this.ln;
    let ls = this.ls;
    let prevLs = this.prevLs;
    let prevLe = this.prevLe;
    let handled = false;
    while (text.charCodeAt(ls) === 91 /* [ */) {
      const closing = text.charCodeAt(ls + 1) === 47; /* / */
      const nameStart = closing ? ls + 2 : ls + 1;
      let a = 0;
      let b = 0;
      let n = nameStart;
      for (;;) {
        const c = text.charCodeAt(n);
        const code = c < 128 ? NAME_CODES[c]! : 0;
        if (code === 0) break;
        const i = n - nameStart;
        if (i < 8) a = a * 64 + code;
        else if (i < CODED_NAME) b = b * 64 + code;
        n++;
      }
      const nameLength = n - nameStart;
      const named = nameLength >= MIN_TAG_NAME && nameLength <= MAX_TAG_NAME;
      const tagName = named ? this.nameAt(nameStart, n, a, b) : undefined;
      // The line's end, and where the next starts (as measure finds them).
      let le = n;
      let c = text.charCodeAt(le);
      while (le < len && c !== 10 && c !== 13) c = text.charCodeAt(++le);
      let nx = le >= len ? len + 1 : c === 13 && text.charCodeAt(le + 1) === 10 ? le + 2 : le + 1;
      if (tagName !== undefined) {
        const after = text.charCodeAt(n);
        const command = closing ? undefined : tagName.command;
        if (command !== undefined) {
          // A command's opening tag is a block, read as usual; but a bare DELETE_FILE or
          // READ_FILE tag (no path) is only counted (see block and skipCounted), unless its
          // closing tag may be on a later line.
          let read = command.selfClosing && after === 93 && command.required.length > 0;
          if (read && this.trimmedEnd(n + 1, le) === n + 1) {
            let p = nx;
            while (p < len && isBlank(text.charCodeAt(p))) p++;
            const next = text.charCodeAt(p);
            read = p < len && next !== 10 && next !== 13 && (next !== 91 || !text.startsWith(command.closer, p));
          }
          if (!read) {
            // Its name as read, for topLevelLine (see tagLine).
            this.tagLine = ls;
            this.tagNameStart = nameStart;
            this.tagNameEnd = n;
            this.tagCodeA = a;
            this.tagCodeB = b;
            break;
          }
          if (this.unlisted++ === 0) this.firstUnlisted = { line: ln, character: 0 };
        } else if (closing) {
          // `[/NAME]` alone on its line (blanks aside): see closingTagAtTopLevel.
          if (after === 93 && (le === n + 1 || this.trimmedEnd(n + 1, le) === n + 1) && (tagName.type !== undefined || this.suggestionFor(tagName) !== undefined)) {
            if (this.unlisted++ === 0) this.firstUnlisted = { line: ln, character: 0 };
          }
        } else if ((after === 93 || n === le || isBlank(after)) && this.suggestionFor(tagName) !== undefined) {
          // An unknown tag: see unknownTag.
          const closer = this.standaloneCloserAfter(tagName, nx);
          if (this.unlisted++ === 0) this.firstUnlisted = { line: ln, character: 1 };
          if (closer !== -1) {
            // To the closing tag's line (see moveToLineOf); it is alone on it, blanks aside.
            ln++;
            ls = nx;
            for (let i = nx; i < closer; i++) {
              const d = text.charCodeAt(i);
              if (d === 10 || d === 13) {
                if (d === 13 && text.charCodeAt(i + 1) === 10) i++;
                ls = i + 1;
                ln++;
              }
            }
            le = closer + tagName.name.length + 3;
            c = text.charCodeAt(le);
            while (le < len && c !== 10 && c !== 13) c = text.charCodeAt(++le);
            nx = le >= len ? len + 1 : c === 13 && text.charCodeAt(le + 1) === 10 ? le + 2 : le + 1;
          }
        }
      }
      handled = true;
      prevLs = ls;
      prevLe = le;
      ls = nx;
      ln++;
    }
    if (!handled) return false;
    this.ln = ln;
    this.ls = ls;
    this.prevLs = prevLs;
    this.prevLe = prevLe;
    this.measure();
    return true;
  }

  /**
   * Moves to the next line that may hold a tag: its first character (blanks aside) is a `[`,
   * followed by a name of a tag's length (after a `/` for a closing tag). The lines in between
   * are counted in one pass over their characters; false when no line is left. Prose, and lines
   * of brackets that are no tags, cost a scan, not a step per line, whatever their line breaks.
   */
  private skipToBracketLine(): boolean {
    const text = this.text;
    // The line starts with one (tag after tag): it is read as it is.
    if (text.charCodeAt(this.ls) === 91 && this.ls < this.le && this.mayBeTag(this.ls)) return true;
    let line = this.ln;
    let start = this.ls;
    let prevStart = this.prevLs;
    let prevEnd = this.prevLe;
    /** Only blanks since the start of the line. */
    let blank = true;
    const len = this.len;
    // Characters are looked at in place while brackets come close to each other (a flood of
    // short bracketed lines would cost a search each); past NEAR characters without one, the next
    // is searched for. The lines on the way are counted.
    let i = this.ls;
    let end = Math.min(i + NEAR, len);
    for (;;) {
      let k = -1;
      for (; i < end; i++) {
        const c = text.charCodeAt(i);
        if (c === 91 /* [ */) {
          // A tag's name has at least MIN_TAG_NAME characters: a `[` without a third one is
          // passed over without reading its name.
          if (blank) {
            const third = text.charCodeAt(text.charCodeAt(i + 1) === 47 ? i + 4 : i + 3);
            if (third < 128 && NAME_CODES[third] !== 0 && this.mayBeTag(i)) {
              k = i;
              break;
            }
          }
          blank = false;
          end = Math.min(i + 1 + NEAR, len);
        } else if (c === 10 || c === 13) {
          prevStart = start;
          prevEnd = i;
          if (c === 13 && text.charCodeAt(i + 1) === 10) i++;
          start = i + 1;
          line++;
          blank = true;
        } else if (blank && !isBlank(c)) blank = false;
      }
      if (k !== -1) break;
      const next = i < len ? text.indexOf('[', i) : -1;
      if (next === -1) return false;
      end = next + 1;
    }
    this.ln = line;
    this.ls = start;
    this.prevLs = prevStart;
    this.prevLe = prevEnd;
    this.measure();
    return true;
  }

  /** Whether the `[` at `k` is followed by a name of a tag's length (see topLevelLine), after a `/` for a closing tag. */
  private mayBeTag(k: number): boolean {
    if (this.tagLine === k) {
      const length = this.tagNameEnd - this.tagNameStart;
      return length >= MIN_TAG_NAME && length <= MAX_TAG_NAME;
    }
    const text = this.text;
    const nameStart = text.charCodeAt(k + 1) === 47 /* / */ ? k + 2 : k + 1;
    let n = nameStart;
    while (n - nameStart <= MAX_TAG_NAME && isNameChar(text.charCodeAt(n))) n++;
    return n - nameStart >= MIN_TAG_NAME && n - nameStart <= MAX_TAG_NAME;
  }

  // --- lines ---------------------------------------------------------------------------------

  /** Finds where the current line's content ends and where the next line starts (\n, \r\n, \r). */
  private measure(): void {
    const start = this.ls;
    if (start > this.len) return;
    const text = this.text;
    // After a short line, the next is looked for in place: a search per line costs more than a
    // few characters (a flood of tiny lines); after a long one, the search is cheaper.
    if (this.shortLines) {
      const near = Math.min(start + SHORT_LINE, this.len);
      let i = start;
      if (text.charCodeAt(i) === 91 /* [ */) {
        // A tag's name is read once, here, for topLevelLine (see tagLine).
        const nameStart = text.charCodeAt(i + 1) === 47 /* / */ ? i + 2 : i + 1;
        const n = this.readName(nameStart);
        this.tagLine = start;
        this.tagNameStart = nameStart;
        this.tagNameEnd = n;
        this.tagCodeA = this.codeA;
        this.tagCodeB = this.codeB;
        // Name characters are no line breaks: the line goes on at least to here.
        i = n;
      }
      for (; i < near; i++) {
        const c = text.charCodeAt(i);
        if (c === 10) {
          this.le = i;
          this.nx = i + 1;
          return;
        }
        if (c === 13) {
          this.le = i;
          this.nx = i + 1 < this.len && text.charCodeAt(i + 1) === 10 ? i + 2 : i + 1;
          return;
        }
      }
      if (near === this.len) {
        this.le = this.len;
        this.nx = this.len + 1;
        return;
      }
      this.shortLines = false;
    }
    // Both searches resume where they stopped: text with only \r (or only \n) stays linear.
    let nl = this.lf;
    if (nl !== -1 && nl < start) nl = this.lf = text.indexOf('\n', start);
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
    this.shortLines = this.le - start < SHORT_LINE;
  }

  /** Moves to the line holding `offset` (at or after the next line), counting the lines on the way in one pass. */
  private moveToLineOf(offset: number): void {
    const text = this.text;
    let line = this.ln + 1;
    let start = this.nx;
    for (let i = start; i < offset; i++) {
      const c = text.charCodeAt(i);
      if (c === 10 || c === 13) {
        if (c === 13 && text.charCodeAt(i + 1) === 10) i++;
        start = i + 1;
        line++;
      }
    }
    this.ln = line;
    this.ls = start;
    this.measure();
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
    let s = this.ls;
    if (text.charCodeAt(s) !== 91 /* [ */) {
      s = this.firstNonBlank(s, le);
      if (s === le || text.charCodeAt(s) !== 91) return;
    }
    const closing = text.charCodeAt(s + 1) === 47; /* / */
    let nameStart: number;
    let nameEnd: number;
    let a: number;
    let b: number;
    if (this.tagLine === s) {
      // Read already while the line was measured.
      nameStart = this.tagNameStart;
      nameEnd = this.tagNameEnd;
      a = this.tagCodeA;
      b = this.tagCodeB;
    } else {
      nameStart = closing ? s + 2 : s + 1;
      // Name characters are no blanks or line breaks: the name ends where it would in the trimmed line.
      nameEnd = this.readName(nameStart);
      a = this.codeA;
      b = this.codeB;
    }
    // Neither a command nor like one (see Lookalikes): nothing to build.
    if (nameEnd - nameStart < MIN_TAG_NAME || nameEnd - nameStart > MAX_TAG_NAME) return;
    const e = this.trimmedEnd(s, le);
    if (closing) {
      if (nameEnd + 1 === e && text.charCodeAt(nameEnd) === 93) this.closingTagAtTopLevel(s, e, this.nameAt(nameStart, nameEnd, a, b));
      return;
    }
    if (nameEnd < e) {
      const c = text.charCodeAt(nameEnd);
      if (c !== 93 /* ] */ && !isBlank(c)) return;
    }
    const name = this.nameAt(nameStart, nameEnd, a, b);
    if (name.command !== undefined) this.block(name.command, s, nameEnd, e);
    else this.unknownTag(name, s, nameEnd, e);
  }

  /**
   * Reads the name characters from `from` on; returns where they end, with their codes in
   * `codeA` (the first 8) and `codeB` (the next 8): 6 bits a character, exact in a number, so
   * that a name of up to CODED_NAME characters is told by its codes and length alone.
   */
  private readName(from: number): number {
    const text = this.text;
    let a = 0;
    let b = 0;
    let n = from;
    for (;;) {
      const c = text.charCodeAt(n);
      // Past the end, NaN: no name character.
      const code = c < 128 ? NAME_CODES[c]! : 0;
      if (code === 0) break;
      const i = n - from;
      if (i < 8) a = a * 64 + code;
      else if (i < CODED_NAME) b = b * 64 + code;
      n++;
    }
    this.codeA = a;
    this.codeB = b;
    return n;
  }

  /**
   * The tag name text[from, to), whose codes readName gave: answers repeat their tag names, so a
   * name seen recently is recognised by its codes (compared in place when longer than
   * CODED_NAME), not sliced and looked up.
   */
  private nameAt(from: number, to: number, a: number, b: number): TagName {
    const length = to - from;
    const slot = ((a | 0) * 31 + (b | 0) + length) & (NAME_SLOTS - 1);
    const known = this.names[slot];
    if (known !== undefined && known.a === a && known.b === b && known.name.length === length && (length <= CODED_NAME || sameAt(this.text, from, to, known.name))) return known;
    const name = this.text.slice(from, to);
    const command = COMMAND_INFO.get(name);
    const found: TagName = { name, a, b, type: command?.type, command, suggestion: undefined, closers: undefined };
    this.names[slot] = found;
    return found;
  }

  /** The command an unknown tag name probably meant (see Lookalikes), or undefined. */
  private suggestionFor(name: TagName): CommandType | undefined {
    if (name.suggestion === undefined) name.suggestion = this.lookalikes.get(name.name) ?? null;
    return name.suggestion ?? undefined;
  }

  /** `[/name]` alone on its line (blanks aside), from `s` to `e`. */
  private closingTagAtTopLevel(s: number, e: number, tagName: TagName): void {
    const { name, type } = tagName;
    if (this.full) {
      if (type !== undefined || this.suggestionFor(tagName) !== undefined) this.countUnlistedAt(this.ln, this.ls, s);
      return;
    }
    const range = this.span(this.ln, this.ls, s, e);
    if (type !== undefined) {
      const message = SELF_CLOSING.has(type)
        ? `Stray closing tag [/${type}]: ${type} is a single line and takes no closing tag except right after it`
        : `Stray closing tag [/${type}] with no [${type}] block open`;
      this.report({ code: 'stray-closing-tag', message, range, command: type });
      return;
    }
    const suggestion = this.suggestionFor(tagName);
    if (suggestion === undefined) return;
    this.report({
      code: 'unknown-command',
      message: `Unknown closing tag [/${name}]; did you mean [/${suggestion}]?`,
      range,
      suggestion,
    });
  }

  private unknownTag(tagName: TagName, s: number, nameEnd: number, e: number): void {
    const suggestion = this.suggestionFor(tagName);
    if (suggestion === undefined) return;
    const { name } = tagName;
    const line = this.ln;
    const ls = this.ls;
    // Its body (up to a matching closing tag on a line of its own) is not Belay's to execute.
    const closer = this.standaloneCloserAfter(tagName, this.nx);
    if (closer !== -1) this.moveToLineOf(closer);
    if (this.full) {
      this.countUnlistedAt(line, ls, s + 1);
      return;
    }
    const nameRange = this.span(line, ls, s + 1, nameEnd);
    const end = closer !== -1 ? this.at(this.ln, this.ls, closer + name.length + 3) : this.at(line, ls, e);
    this.report({
      code: 'unknown-command',
      message: `Unknown command ${name}; did you mean ${suggestion}?`,
      range: nameRange,
      suggestion,
      blockRange: { start: this.at(line, ls, s), end },
    });
  }

  /**
   * Where the next line that is exactly `[/name]` (blanks aside) starts its tag, or -1. `from` only
   * grows during a parse. The first few names are each searched for with indexOf, resuming where
   * the last search for that name stopped (a lookalike tag per line costs a short search each);
   * past MAX_SEARCHED_NAMES names (or once a search went to the end in vain), one pass indexes
   * every standalone closing tag, so that many names cannot make the searches quadratic.
   */
  private standaloneCloserAfter(tagName: TagName, from: number): number {
    const { name } = tagName;
    // Kept with the name as read, so that a name read again finds them without a lookup.
    let closers = tagName.closers;
    if (closers === null) return -1;
    if (closers === undefined) {
      closers = this.closers.get(name);
      if (closers === undefined) {
        if ((this.closers.size >= MAX_SEARCHED_NAMES || this.searchedToEnd) && !this.indexed) {
          this.indexStandaloneClosers(from);
          closers = this.closers.get(name);
        }
        if (closers === undefined) {
          if (this.indexed) {
            tagName.closers = null;
            return -1;
          }
          closers = { offsets: [], next: 0, searchedTo: from };
          this.closers.set(name, closers);
        }
      }
      tagName.closers = closers;
    }
    const { offsets } = closers;
    while (closers.next < offsets.length && offsets[closers.next]! < from) closers.next++;
    if (closers.next < offsets.length || closers.searchedTo === -1) return closers.next < offsets.length ? offsets[closers.next]! : -1;
    // Searched by name: find the next standalone one from where the last search stopped.
    const needle = (closers.needle ??= `[/${name}]`);
    let k = this.text.indexOf(needle, Math.max(from, closers.searchedTo));
    while (k !== -1 && !this.isStandalone(k, k + needle.length)) k = this.text.indexOf(needle, k + 1);
    if (k === -1) {
      closers.searchedTo = -1;
      this.searchedToEnd = true;
      return -1;
    }
    // Only the next one is kept: `from` only grows, the ones before it are not asked for again.
    offsets[0] = k;
    closers.next = 0;
    closers.searchedTo = k + 1;
    return k;
  }

  /** Whether text[from, to) is alone on its line, blanks aside. */
  private isStandalone(from: number, to: number): boolean {
    const text = this.text;
    // The usual case at a glance: line breaks right on both sides.
    const left = from === 0 ? 10 : text.charCodeAt(from - 1);
    const right = to === this.len ? 10 : text.charCodeAt(to);
    if ((left === 10 || left === 13) && (right === 10 || right === 13)) return true;
    let before = from - 1;
    while (before >= 0 && isBlank(text.charCodeAt(before))) before--;
    if (before >= 0 && text.charCodeAt(before) !== 10 && text.charCodeAt(before) !== 13) return false;
    let after = to;
    while (after < this.len && isBlank(text.charCodeAt(after))) after++;
    return after === this.len || text.charCodeAt(after) === 10 || text.charCodeAt(after) === 13;
  }

  /** Indexes every standalone closing tag from `from` on, by name (replacing what the searches found). */
  private indexStandaloneClosers(from: number): void {
    const text = this.text;
    const index = this.closers;
    index.clear();
    this.indexed = true;
    for (const known of this.names) if (known !== undefined) known.closers = undefined;
    let k = text.indexOf('[/', from);
    while (k !== -1) {
      const nameEnd = this.readName(k + 2);
      const nameLength = nameEnd - k - 2;
      if (nameLength >= MIN_TAG_NAME && nameLength <= MAX_TAG_NAME && text.charCodeAt(nameEnd) === 93 && this.isStandalone(k, nameEnd + 1)) {
        const tagName = this.nameAt(k + 2, nameEnd, this.codeA, this.codeB);
        let closers = tagName.closers ?? index.get(tagName.name);
        if (closers === undefined || closers === null) {
          closers = { offsets: [], next: 0, searchedTo: -1 };
          index.set(tagName.name, closers);
        }
        tagName.closers = closers;
        closers.offsets.push(k);
      }
      k = text.indexOf('[/', k + 2);
    }
  }

  // --- blocks --------------------------------------------------------------------------------

  private block(info: CommandInfo, s: number, nameEnd: number, e: number): void {
    const { type, closer } = info;
    const text = this.text;
    const line = this.ln;
    const ls = this.ls;
    if (nameEnd < e && text.charCodeAt(nameEnd) === 93 && info.required.length > 0 && this.full) {
      // A bare tag of a command that takes attributes, past the listed errors: one problem
      // (they are missing), only counted; nothing to read or build.
      this.skipCounted(info, 1, s, nameEnd + 1, e);
      return;
    }
    let problems: ParseError[] = [];
    const attributes: Attribute[] = [];
    /** The error list is full: a problem is only counted, so none is described (see UNLISTED). */
    const dry = this.full;
    /** Names (lower case) of attributes written but unreadable: reported as such, not also as missing. */
    const broken: string[] = [];
    /** Attributes and problems past MAX_TAG_ATTRIBUTES: counted, not built. */
    let excess = 0;
    let tagEnd = -1;
    let p = nameEnd;
    while (p < e) {
      if (attributes.length + problems.length >= MAX_TAG_ATTRIBUTES) {
        // A pathological tag: what is left is only counted (see countWords).
        const counted = this.countWords(p, e);
        excess += counted.count;
        tagEnd = counted.tagEnd;
        break;
      }
      p = this.firstNonBlank(p, e);
      if (p >= e) break;
      const c = text.charCodeAt(p);
      if (c === 93) {
        tagEnd = p + 1;
        break;
      }
      if (!isNameChar(c)) {
        const junkEnd = this.skipWord(p, e);
        if (attributes.length + problems.length < MAX_TAG_ATTRIBUTES) {
          problems.push(dry ? UNLISTED : {
            code: 'malformed-attribute',
            message: `${type} tag has unexpected text '${text.slice(p, junkEnd)}'`,
            range: this.span(line, ls, p, junkEnd),
            command: type,
          });
        } else excess++;
        p = junkEnd;
        continue;
      }
      const keyStart = p;
      while (p < e && isAttributeChar(text.charCodeAt(p))) p++;
      const keyEnd = p;
      let q = this.firstNonBlank(p, e);
      if (text.charCodeAt(q) !== 61 /* = */ || q >= e) {
        if (attributes.length + problems.length < MAX_TAG_ATTRIBUTES) {
          const key = text.slice(keyStart, keyEnd);
          broken.push(key.toLowerCase());
          problems.push(dry ? UNLISTED : {
            code: 'malformed-attribute',
            message: `${type} attribute ${key} has no value; write ${key}="…"`,
            range: this.span(line, ls, keyStart, keyEnd),
            command: type,
          });
        } else excess++;
        continue;
      }
      const key = text.slice(keyStart, keyEnd);
      q = this.firstNonBlank(q + 1, e);
      const quote = text.charCodeAt(q);
      if (q >= e || (quote !== 34 && quote !== 39)) {
        const valueEnd = q >= e ? q : this.skipWord(q, e);
        if (attributes.length + problems.length < MAX_TAG_ATTRIBUTES) {
          broken.push(key.toLowerCase());
          problems.push(dry ? UNLISTED : {
            code: 'malformed-attribute',
            message: `${type} attribute ${key} must have its value in quotes: ${key}="${text.slice(q, valueEnd)}"`,
            range: this.span(line, ls, keyStart, valueEnd),
            command: type,
          });
        } else excess++;
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
        broken.push(key.toLowerCase());
        if (attributes.length + problems.length < MAX_TAG_ATTRIBUTES) {
          problems.push(dry ? UNLISTED : {
            code: 'malformed-attribute',
            message: `${type} attribute ${key} has no closing quote`,
            range: this.span(line, ls, keyStart, e),
            command: type,
          });
        } else excess++;
        tagEnd = e;
        break;
      }
      if (attributes.length + problems.length < MAX_TAG_ATTRIBUTES) {
        value += text.slice(chunk, closed);
        attributes.push({
          name: key,
          value,
          range: this.span(line, ls, keyStart, closed + 1),
          nameRange: this.span(line, ls, keyStart, keyEnd),
          valueRange: this.span(line, ls, valueStart, closed),
        });
      } else excess++;
      p = closed + 1;
    }
    if (tagEnd === -1) {
      tagEnd = e;
      problems.push(dry ? UNLISTED : {
        code: 'unterminated-tag',
        message: `${type} opening tag has no closing ']'`,
        range: this.span(line, ls, s, e),
        command: type,
      });
    }
    // Past the listed errors an erroneous block needs no ranges: a stand-in until it proves valid.
    let openTag: Tag = dry ? UNLISTED_TAG : { range: this.span(line, ls, s, tagEnd), nameRange: this.span(line, ls, s + 1, nameEnd) };
    let values: CommandValues;
    if (excess > 0) {
      // A pathological tag: one error for all of it, and its block (body included) is left out.
      const count = attributes.length + problems.length + excess;
      problems = [
        dry ? UNLISTED : {
          code: 'oversized-tag',
          message: `${type} tag has ${count} attributes or words where it takes ${describeAttributes(type)}; this block was not executed`,
          range: openTag.range,
          command: type,
        },
      ];
      values = { path: attributeNamed(attributes, 'path')?.value.trim() ?? '', startLine: Number.NaN, endLine: Number.NaN };
    } else {
      values = this.validate(info, openTag, attributes, broken, problems, dry);
    }

    if (dry && problems.length > 0) {
      this.skipCounted(info, problems.length, s, tagEnd, e);
      return;
    }
    if (openTag === UNLISTED_TAG) {
      // A valid block after all: it gets its real ranges.
      openTag = { range: this.span(line, ls, s, tagEnd), nameRange: this.span(line, ls, s + 1, nameEnd) };
    }

    if (info.selfClosing) {
      const closeTag = this.selfClosingCloser(closer, tagEnd, e);
      const range = { start: openTag.range.start, end: (closeTag ?? openTag).range.end };
      this.emit(type, problems, closeTag ? { range, openTag, closeTag, attributes } : { range, openTag, attributes }, values, undefined);
      return;
    }

    const starts = this.contentStarts;
    const ends = this.contentEnds;
    if (starts.length > 0) starts.length = 0;
    if (ends.length > 0) ends.length = 0;
    let closeTag: Tag | undefined;
    const r = this.firstNonBlank(tagEnd, e);
    if (r < e) {
      const k = indexWithin(text, closer, r, e);
      if (k !== -1) {
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
      problems.push(dry ? UNLISTED : {
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

  /**
   * The attributes and stray words of text[from, to) in a tag, counted as the loop in `block`
   * reads them (an attribute with its value, a word, a value without quotes: one each), and where
   * the tag ends (-1 when it does not). Nothing is built: past MAX_TAG_ATTRIBUTES only the number
   * is told.
   */
  private countWords(from: number, to: number): { count: number; tagEnd: number } {
    const text = this.text;
    let count = 0;
    let p = from;
    while (p < to) {
      let c = text.charCodeAt(p);
      while (isBlank(c) && p < to) c = text.charCodeAt(++p);
      if (p >= to) break;
      if (c === 93) return { count, tagEnd: p + 1 };
      count++;
      if (!isNameChar(c)) {
        p = this.skipWord(p, to);
        continue;
      }
      // By table: a tag of hundreds of thousands of words spends its time here.
      for (p++; p < to; p++) {
        const d = text.charCodeAt(p);
        if (d > 127 || ASCII_CLASS[d] !== ATTRIBUTE) break;
      }
      let q = p;
      for (; q < to; q++) {
        const d = text.charCodeAt(q);
        if (d > 127 ? !isBlank(d) : ASCII_CLASS[d] !== BLANK) break;
      }
      if (q >= to || text.charCodeAt(q) !== 61) {
        // A word without a value: the next one starts here.
        p = q;
        continue;
      }
      q++;
      while (q < to && isBlank(text.charCodeAt(q))) q++;
      const quote = text.charCodeAt(q);
      if (q >= to || (quote !== 34 && quote !== 39)) {
        p = q >= to ? q : this.skipWord(q, to);
        continue;
      }
      let v = q + 1;
      while (v < to) {
        const ch = text.charCodeAt(v);
        if (ch === 92 && v + 1 < to) {
          const escaped = text.charCodeAt(v + 1);
          if (escaped === quote || escaped === 92) {
            v += 2;
            continue;
          }
        }
        if (ch === quote) break;
        v++;
      }
      if (v >= to) return { count, tagEnd: to };
      p = v + 1;
    }
    return { count, tagEnd: -1 };
  }

  /**
   * Past the listed errors, a block with `count` problems: skipped as any block with errors (up to
   * its closing tag), its problems only counted (one more when it has no closing tag).
   */
  private skipCounted(info: CommandInfo, count: number, s: number, tagEnd: number, e: number): void {
    const line = this.ln;
    const ls = this.ls;
    const { closer } = info;
    if (info.selfClosing) this.selfClosingCloser(closer, tagEnd, e);
    else if (indexWithin(this.text, closer, this.firstNonBlank(tagEnd, e), e) === -1 && this.scanToCloser(closer) === undefined) count++;
    for (let i = 0; i < count; i++) this.countUnlistedAt(line, ls, s);
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
  private selfClosingCloser(closer: string, tagEnd: number, e: number): Tag | undefined {
    const text = this.text;
    const r = this.firstNonBlank(tagEnd, e);
    if (r < e && text.startsWith(closer, r)) {
      return { range: this.span(this.ln, this.ls, r, r + closer.length), nameRange: this.span(this.ln, this.ls, r + 2, r + closer.length - 1) };
    }
    if (r < e) return undefined;
    // Most often the next line is something else: seen without moving there.
    let p = this.nx;
    while (p < this.len && isBlank(text.charCodeAt(p))) p++;
    if (p < this.len) {
      const c = text.charCodeAt(p);
      if (c !== 10 && c !== 13 && (c !== 91 || !text.startsWith(closer, p))) return undefined;
    }
    // Saved one by one: this runs once per self-closing tag, and a hostile answer has 100k of them.
    const { ln, ls, le, nx, cr, lf, prevLs, prevLe } = this;
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
    this.ln = ln;
    this.ls = ls;
    this.le = le;
    this.nx = nx;
    this.cr = cr;
    this.lf = lf;
    this.prevLs = prevLs;
    this.prevLe = prevLe;
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
    // No closing tag anywhere after: the block is unclosed, its lines are only counted (nothing
    // in them is read or kept), and the cursor ends on the last line as the loop would leave it.
    if (this.nx <= this.len && text.indexOf(closer, this.nx) === -1) {
      this.moveToLineOf(this.len);
      return undefined;
    }
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
    const content = text.slice(from, to);
    const body: Body = {
      text: content,
      lineCount: last - first + 1,
      range: { start: this.at(firstLine + first, lineStartOf(first), from), end: this.at(firstLine + last, lineStartOf(last), to) },
      removedFences,
    };
    if (this.hasCR && content.includes('\r')) normalizeWhenRead(body, content);
    return body;
  }

  /** Checks the attributes a command requires; what is wrong goes into `problems`. */
  private validate(info: CommandInfo, openTag: Tag, attributes: readonly Attribute[], broken: readonly string[], problems: ParseError[], dry: boolean): CommandValues {
    const { type, required } = info;
    if (required.length === 0) return NO_VALUES;
    let missing: string[] | undefined;
    for (const name of required) {
      if (attributeNamed(attributes, name) !== undefined || broken.includes(name)) continue;
      if (dry) {
        // Only counted: which ones does not matter.
        problems.push(UNLISTED);
        break;
      }
      (missing ??= []).push(name);
    }
    if (missing !== undefined) {
      const message =
        required.length === 1
          ? `${type} missing ${missing[0]} attribute`
          : missing.length === required.length
            ? `${type} missing required attributes (${required.join(', ')})`
            : `${type} missing required attribute${missing.length > 1 ? 's' : ''} ${missing.join(', ')} (needs ${required.join(', ')})`;
      problems.push({ code: 'missing-attribute', message, range: openTag.range, command: type });
    }
    const pathAttribute = info.requiresPath ? attributeNamed(attributes, 'path') : undefined;
    const path = pathAttribute?.value.trim() ?? '';
    if (pathAttribute && path === '') {
      problems.push(dry ? UNLISTED : { code: 'empty-path', message: `${type} path is empty`, range: pathAttribute.range, command: type });
    }
    if (type !== 'EDIT_FILE') return { path, startLine: 0, endLine: 0 };
    const start = attributeNamed(attributes, 'start_line');
    const end = attributeNamed(attributes, 'end_line');
    const startLine = start ? this.lineNumber(type, start, problems, dry) : Number.NaN;
    const endLine = end ? this.lineNumber(type, end, problems, dry) : Number.NaN;
    if (end && endLine < startLine) {
      problems.push(dry ? UNLISTED : {
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
      for (const problem of problems) {
        if (problem === UNLISTED) {
          this.countUnlisted(common.range.start);
          continue;
        }
        problem.blockRange = common.range;
        this.report(problem);
      }
      return;
    }
    const { path, startLine, endLine } = values;
    const { range, openTag, attributes } = common;
    // Built field by field (no spread): these objects are what a large answer is made of.
    const command =
      type === 'CREATE_FILE'
        ? { type, range, openTag, attributes, path, body: body! }
        : type === 'EDIT_FILE'
          ? { type, range, openTag, attributes, path, startLine, endLine, body: body! }
          : type === 'DELETE_FILE' || type === 'READ_FILE'
            ? { type, range, openTag, attributes, path }
            : { type, range, openTag, attributes, body: body! };
    if (common.closeTag !== undefined) (command as Command).closeTag = common.closeTag;
    this.commands.push(command);
  }

  /** A 1-based line number, or NaN after recording why the value is not one. */
  private lineNumber(type: CommandType, attribute: Attribute, problems: ParseError[], dry: boolean): number {
    const raw = attribute.value.trim();
    const name = attribute.name.toLowerCase();
    if (!INTEGER.test(raw)) {
      problems.push(dry ? UNLISTED : {
        code: 'invalid-line-number',
        message: `${type} ${name} must be an integer, got '${attribute.value}'`,
        range: attribute.valueRange,
        command: type,
      });
      return Number.NaN;
    }
    const value = Number(raw);
    if (!Number.isSafeInteger(value)) {
      problems.push(dry ? UNLISTED : { code: 'invalid-line-number', message: `${type} ${name} is too large: '${raw}'`, range: attribute.valueRange, command: type });
      return Number.NaN;
    }
    if (value < 1) {
      problems.push(dry ? UNLISTED : {
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

/** Where the standalone closing tags of one name are, the first not passed yet, and where to search on (-1: all found). */
interface Closers {
  offsets: number[];
  next: number;
  searchedTo: number;
  needle?: string;
}

/** A tag name as read: the command it is, or (computed once) the one it probably means. */
interface TagName {
  name: string;
  /** Its characters' codes (see readName). */
  a: number;
  b: number;
  type: CommandType | undefined;
  command: CommandInfo | undefined;
  /** undefined: not computed yet; null: none. */
  suggestion: CommandType | null | undefined;
  /** Its standalone closing tags (see standaloneCloserAfter): undefined until looked up, null when it has none. */
  closers?: Closers | null;
}

interface CommandValues {
  path: string;
  startLine: number;
  endLine: number;
}
const NO_VALUES: CommandValues = Object.freeze({ path: '', startLine: 0, endLine: 0 });

function describeAttributes(type: CommandType): string {
  const required = REQUIRED_ATTRIBUTES[type];
  return required.length === 0 ? 'none' : required.join(', ');
}

/** Whether text[from, to) is `name`, compared in place. */
function sameAt(text: string, from: number, to: number, name: string): boolean {
  return to - from === name.length && text.startsWith(name, from);
}

/** The attribute of that name (lower case; names are matched without regard to case): the last one written wins. */
function attributeNamed(attributes: readonly Attribute[], name: string): Attribute | undefined {
  for (let i = attributes.length - 1; i >= 0; i--) {
    const candidate = attributes[i]!.name;
    if (candidate.length === name.length && (candidate === name || candidate.toLowerCase() === name)) return attributes[i];
  }
  return undefined;
}

/** The first `needle` entirely within text[from, to), or -1; never looks past `to`. */
function indexWithin(text: string, needle: string, from: number, to: number): number {
  if (to - from < needle.length) return -1;
  const k = text.slice(from, to).indexOf(needle);
  return k === -1 ? -1 : from + k;
}

/**
 * A body whose lines end in \r gets its text with \n when the text is first read: a parse (the
 * language server's, on every change) reads ranges, and copying every body of a large answer
 * only to drop it cost more than the parse itself.
 */
function normalizeWhenRead(body: Body, content: string): void {
  Object.defineProperty(body, 'text', {
    configurable: true,
    enumerable: true,
    get(): string {
      const value = normalizeBreaks(content);
      Object.defineProperty(body, 'text', { value, writable: true, enumerable: true, configurable: true });
      return value;
    },
  });
}

/** \r\n and lone \r as \n: without a pattern when the text has only one kind (the usual case). */
function normalizeBreaks(text: string): string {
  if (!text.includes('\n')) return text.replaceAll('\r', '\n');
  return text.replace(/\r\n?/g, '\n');
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

/**
 * The command an unknown tag name probably meant, or undefined when it does not look like one.
 * One per parse: names already seen are remembered, and the distances reuse their rows, so a
 * hostile answer of one near-miss tag per line costs a few hundred nanoseconds a line.
 */
class Lookalikes {
  private readonly known = new Map<string, CommandType | null>();
  private readonly rows = [new Int32Array(48), new Int32Array(48), new Int32Array(48)];

  get(name: string): CommandType | undefined {
    const known = this.known.get(name);
    if (known !== undefined) return known ?? undefined;
    const found = this.compute(name);
    // Bounded: distinct names past this many are computed each time (still a bounded cost each).
    if (this.known.size < 4096) this.known.set(name, found ?? null);
    return found;
  }

  private compute(name: string): CommandType | undefined {
    if (name.length < MIN_TAG_NAME || name.length > MAX_TAG_NAME) return undefined;
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
      const d = this.distance(upper, type, bestDistance - 1);
      if (d < bestDistance) {
        best = type;
        bestDistance = d;
      }
    }
    return best;
  }

  /**
   * Optimal string alignment distance (transpositions count as one), or `limit + 1` when it is
   * more: only the cells within `limit` of the diagonal are computed, and a row past the limit ends it.
   */
  private distance(a: string, b: string, limit: number): number {
    const n = a.length;
    const m = b.length;
    const over = limit + 1;
    if (limit < 0 || Math.abs(n - m) > limit) return over;
    let [before, previous, current] = this.rows as [Int32Array, Int32Array, Int32Array];
    for (let j = 0; j <= m; j++) previous[j] = j <= limit ? j : over;
    for (let i = 1; i <= n; i++) {
      const low = Math.max(1, i - limit);
      const high = Math.min(m, i + limit);
      current[low - 1] = low === 1 ? Math.min(i, over) : over;
      let rowMin = current[low - 1]!;
      const ca = a.charCodeAt(i - 1);
      for (let j = low; j <= high; j++) {
        const cb = b.charCodeAt(j - 1);
        let d = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (ca === cb ? 0 : 1));
        if (i > 1 && j > 1 && ca === b.charCodeAt(j - 2) && a.charCodeAt(i - 2) === cb) d = Math.min(d, before[j - 2]! + 1);
        if (d > over) d = over;
        current[j] = d;
        if (d < rowMin) rowMin = d;
      }
      if (high < m) current[high + 1] = over;
      if (rowMin > limit) return over;
      [before, previous, current] = [previous, current, before];
    }
    return previous[m]!;
  }
}

/** Errors in the order they appear; `sort` is stable, and fast on a list found nearly in order. */
function sortByStart(errors: ParseError[]): ParseError[] {
  return errors.sort((x, y) => x.range.start.line - y.range.start.line || x.range.start.character - y.range.start.character);
}
