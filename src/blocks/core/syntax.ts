// The shapes the parser produces. Positions follow the Language Server Protocol: 0-based lines,
// and characters counted in UTF-16 code units from the start of the line, so the language server
// can hand them to the editor unchanged.

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export const COMMAND_TYPES = ['CREATE_FILE', 'EDIT_FILE', 'DELETE_FILE', 'READ_FILE', 'RUN_COMMAND', 'MESSAGE', 'DONE'] as const;
export type CommandType = (typeof COMMAND_TYPES)[number];

/** Commands written as one opening tag, without body or closing tag. */
export const SELF_CLOSING: ReadonlySet<CommandType> = new Set(['DELETE_FILE', 'READ_FILE']);

/** Commands whose body is trimmed (the others keep their body verbatim). */
export const TRIMMED_BODY: ReadonlySet<CommandType> = new Set(['RUN_COMMAND', 'MESSAGE', 'DONE']);

/** The attributes each command requires, in the order the protocol lists them. */
export const REQUIRED_ATTRIBUTES: Readonly<Record<CommandType, readonly string[]>> = {
  CREATE_FILE: ['path'],
  EDIT_FILE: ['path', 'start_line', 'end_line'],
  DELETE_FILE: ['path'],
  READ_FILE: ['path'],
  RUN_COMMAND: [],
  MESSAGE: [],
  DONE: [],
};

export interface Attribute {
  /** The name as written. Names are matched without regard to case. */
  name: string;
  /** The value with its escapes (`\"`, `\'`, `\\`) resolved. */
  value: string;
  /** `name="value"` as a whole. */
  range: Range;
  nameRange: Range;
  /** The value between its quotes (empty for an empty value). */
  valueRange: Range;
}

export interface Tag {
  /** From `[` to `]` inclusive (to the end of the line when `]` is missing). */
  range: Range;
  /** The command name after `[` or `[/`. */
  nameRange: Range;
}

export interface Body {
  /** The content: lines joined with `\n` (whatever the answer's line endings were). */
  text: string;
  /** How many lines the content has: 0 for an empty body, 1 for a single blank line. */
  lineCount: number;
  /** Where the content sits in the answer (zero-width where an empty body would be). */
  range: Range;
  /** Markdown fence lines wrapped around the content that were left out of `text`. */
  removedFences: Range[];
}

interface BlockBase {
  /** The whole block: opening tag to closing tag. */
  range: Range;
  openTag: Tag;
  /** Absent for DELETE_FILE and READ_FILE written without one. */
  closeTag?: Tag;
  attributes: Attribute[];
}

export interface CreateFileCommand extends BlockBase {
  type: 'CREATE_FILE';
  path: string;
  body: Body;
}

export interface EditFileCommand extends BlockBase {
  type: 'EDIT_FILE';
  path: string;
  startLine: number;
  endLine: number;
  body: Body;
}

export interface PathOnlyCommand extends BlockBase {
  type: 'DELETE_FILE' | 'READ_FILE';
  path: string;
}

export interface TextCommand extends BlockBase {
  type: 'RUN_COMMAND' | 'MESSAGE' | 'DONE';
  body: Body;
}

export type Command = CreateFileCommand | EditFileCommand | PathOnlyCommand | TextCommand;

export type ParseErrorCode =
  | 'missing-attribute'
  | 'empty-path'
  | 'invalid-line-number'
  | 'line-range-reversed'
  | 'malformed-attribute'
  | 'unterminated-tag'
  | 'unclosed-block'
  | 'stray-closing-tag'
  | 'unknown-command'
  /** An opening tag with more attributes or words than any command takes: one error for all of it. */
  | 'oversized-tag'
  /** Stands for the errors past the listed ones (an answer cannot make Belay build thousands). */
  | 'too-many-errors'
  /** A defect in Belay's parser: the rest of the answer was not parsed. */
  | 'internal';

export interface ParseError {
  code: ParseErrorCode;
  /** Names the command and what is wrong, e.g. `EDIT_FILE start_line must be an integer, got 'x'`. */
  message: string;
  /** The exact spot: an attribute value, a tag, a tag name. */
  range: Range;
  /** The command concerned, when there is one. */
  command?: CommandType;
  /** For an unknown command: the command it probably meant. */
  suggestion?: CommandType;
  /** The block this error discards: nothing inside it is executed. */
  blockRange?: Range;
}

export interface ParseResult {
  /** Well-formed commands, in order of appearance. */
  commands: Command[];
  /** Problems, in order of appearance. */
  errors: ParseError[];
}

/** Whether `a` comes before `b` in the text. */
function positionBefore(a: Position, b: Position): boolean {
  return a.line < b.line || (a.line === b.line && a.character < b.character);
}

/** Commands and errors merged into one list in the order they appear: the order of execution. */
export function inOrder(result: ParseResult): Array<{ command: Command } | { error: ParseError }> {
  const items: Array<{ command: Command } | { error: ParseError }> = [];
  let e = 0;
  for (const command of result.commands) {
    while (e < result.errors.length && positionBefore(result.errors[e]!.range.start, command.range.start)) {
      items.push({ error: result.errors[e++]! });
    }
    items.push({ command });
  }
  while (e < result.errors.length) items.push({ error: result.errors[e++]! });
  return items;
}
