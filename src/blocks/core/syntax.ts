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

/** What the editor does with a block of one type (the lenses above it). */
export type BlockAction = 'apply' | 'run' | 'open' | 'show';

/** One block type, described once: the parser, the planner, the language server and the grammar read this. */
export interface BlockTypeInfo {
  /** Written as one opening tag, without body or closing tag. */
  selfClosing: boolean;
  /** Its body is trimmed (the others keep their body verbatim). */
  trimmedBody: boolean;
  /** The attributes it requires, in the order the protocol lists them. */
  required: readonly string[];
  /** Its effects are applied to the workspace (the others only report). */
  changesWorkspace: boolean;
  /** The lenses above it. */
  action: BlockAction;
  /** What its body holds, for the grammar and the outline: a file's content, a shell command, text. */
  body: 'file' | 'shell' | 'text' | 'none';
  /** Its hover text: what it does. */
  doc: string;
  /** Its completion snippet, after the `[` already typed. */
  snippet: string;
}

export const BLOCK_TYPES: Readonly<Record<CommandType, BlockTypeInfo>> = {
  CREATE_FILE: {
    selfClosing: false,
    trimmedBody: false,
    required: ['path'],
    changesWorkspace: true,
    action: 'apply',
    body: 'file',
    doc: 'Creates or overwrites the file at `path` with the body, exactly as written (no final newline unless the body ends with an empty line). Missing folders are created.',
    snippet: 'CREATE_FILE path="${1:path}"]\n$0\n[/CREATE_FILE]',
  },
  EDIT_FILE: {
    selfClosing: false,
    trimmedBody: false,
    required: ['path', 'start_line', 'end_line'],
    changesWorkspace: true,
    action: 'apply',
    body: 'file',
    doc: 'Replaces lines `start_line` to `end_line` (from 1, both included) of an existing file with the body. Line numbers refer to the file before this answer; later edits are shifted for earlier ones.',
    snippet: 'EDIT_FILE path="${1:path}" start_line="${2:1}" end_line="${3:1}"]\n$0\n[/EDIT_FILE]',
  },
  DELETE_FILE: {
    selfClosing: true,
    trimmedBody: false,
    required: ['path'],
    changesWorkspace: true,
    action: 'apply',
    body: 'none',
    doc: 'Deletes the file at `path`. One line, no closing tag.',
    snippet: 'DELETE_FILE path="${1:path}"]',
  },
  READ_FILE: {
    selfClosing: true,
    trimmedBody: false,
    required: ['path'],
    changesWorkspace: false,
    action: 'open',
    body: 'none',
    doc: 'Asks for the file at `path`: its contents appear in the next outbox. One line, no closing tag.',
    snippet: 'READ_FILE path="${1:path}"]',
  },
  RUN_COMMAND: {
    selfClosing: false,
    trimmedBody: true,
    required: [],
    changesWorkspace: true,
    action: 'run',
    body: 'shell',
    doc: 'Runs the body with `/bin/sh -c` in the workspace folder, stopped after the session timeout with its whole process tree; stdout and stderr come back, cut.',
    snippet: 'RUN_COMMAND]\n${1:command}\n[/RUN_COMMAND]',
  },
  MESSAGE: {
    selfClosing: false,
    trimmedBody: true,
    required: [],
    changesWorkspace: false,
    action: 'show',
    body: 'text',
    doc: 'Shows the body to the user.',
    snippet: 'MESSAGE]\n${1:text}\n[/MESSAGE]',
  },
  DONE: {
    selfClosing: false,
    trimmedBody: true,
    required: [],
    changesWorkspace: false,
    action: 'show',
    body: 'text',
    doc: 'Ends the session: the body summarises what was done. Commands after it still run.',
    snippet: 'DONE]\n${1:summary}\n[/DONE]',
  },
};

/** The block types whose row says `key` is true. */
function typesWhere(key: 'selfClosing' | 'trimmedBody' | 'changesWorkspace'): ReadonlySet<CommandType> {
  return new Set(COMMAND_TYPES.filter((type) => BLOCK_TYPES[type][key]));
}

/** Commands written as one opening tag, without body or closing tag. */
export const SELF_CLOSING: ReadonlySet<CommandType> = typesWhere('selfClosing');

/** Commands whose body is trimmed (the others keep their body verbatim). */
export const TRIMMED_BODY: ReadonlySet<CommandType> = typesWhere('trimmedBody');

/** Commands whose effects the editor applies (READ_FILE, MESSAGE and DONE only report). */
export const CHANGES_WORKSPACE: ReadonlySet<CommandType> = typesWhere('changesWorkspace');

/** The attributes each command requires, in the order the protocol lists them. */
export const REQUIRED_ATTRIBUTES: Readonly<Record<CommandType, readonly string[]>> = Object.fromEntries(COMMAND_TYPES.map((type) => [type, BLOCK_TYPES[type].required])) as Record<CommandType, readonly string[]>;

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
