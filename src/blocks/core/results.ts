// Command results and the protocol's result lines:
//   [OK] CREATE_FILE: Created 'a.txt'
//   [FAILED] RUN_COMMAND: Ran 'npm test' (exit code 1)
//     Output: …
import { neutraliseControls } from '../../shared/terminalText.ts';
import { COMMAND_TYPES, type CommandType, type ParseError } from './syntax.ts';

export const RESULT_TYPES = [...COMMAND_TYPES, 'PARSE_ERROR'] as const;
export type ResultType = CommandType | 'PARSE_ERROR';

/**
 * One command's outcome as the protocol reports it (and the session file stores it, checked by its
 * schema in session.ts: zod stays out of what the editor loads at activation).
 */
export interface CommandResult {
  commandType: ResultType;
  summary: string;
  success: boolean;
  output?: string;
}

/**
 * Why a command failed, for code to act on. The summary says it to people and to the LLM; nothing
 * reads structure back out of it.
 */
export type FailureCode =
  /** The sandbox refused the path: the summary is the protocol's `REJECTED: …`. */
  | 'outside-workspace'
  | 'empty-path'
  /** DELETE_FILE of the workspace folder itself. */
  | 'workspace-folder'
  /** A path that goes through a file as if it were a folder. */
  | 'through-file'
  /** The path could not be resolved (permissions, I/O). */
  | 'unresolvable'
  | 'not-found'
  | 'is-folder'
  /** A FIFO, socket or device where a file was expected: never opened, replaced or deleted. */
  | 'not-regular'
  /** EDIT_FILE of a file larger than Belay edits as text (the summary names the limit). */
  | 'too-large'
  /** A folder on the way (or the target) was replaced or moved while the block was carried out: nothing written. */
  | 'changed'
  /** EDIT_FILE of a file that is not UTF-8 text. */
  | 'not-text'
  /** EDIT_FILE from a line past the end of the file. */
  | 'line-range'
  /** EDIT_FILE of lines an earlier block of the answer edited. */
  | 'overlap'
  /** EDIT_FILE of lines that changed since the LLM read the file (what it saw and what is there now differ there). */
  | 'conflict'
  /** The target could not be read. */
  | 'unreadable'
  | 'write-failed'
  | 'delete-failed'
  /** RUN_COMMAND: a non-zero exit code, the timeout, a stop, a signal, or no start at all. */
  | 'exit-code'
  | 'timeout'
  | 'stopped'
  | 'killed'
  | 'spawn-failed'
  | 'parse-error'
  /** The editor refused the change (its WorkspaceEdit failed). */
  | 'editor-refused'
  /** The editor left the change out (a file unchecked in the refactor preview, a file changed meanwhile). */
  | 'not-applied';

/** A result, and when it failed, its code. */
export interface Outcome {
  result: CommandResult;
  code?: FailureCode;
}

/** How the editor shows a handled block. */
export type OutcomeStatus = 'applied' | 'failed' | 'rejected';

export function outcomeStatus(outcome: Outcome): OutcomeStatus {
  if (outcome.result.success) return 'applied';
  return outcome.code === 'outside-workspace' ? 'rejected' : 'failed';
}

export const OUTPUT_TRUNCATED_MARKER = '... (output truncated)';

export function ok(commandType: ResultType, summary: string, output?: string): CommandResult {
  return output === undefined ? { commandType, summary, success: true } : { commandType, summary, success: true, output };
}

export function failed(commandType: ResultType, summary: string, output?: string): CommandResult {
  return output === undefined ? { commandType, summary, success: false } : { commandType, summary, success: false, output };
}

/** A failed outcome: its code and its result. */
export function failure(code: FailureCode, commandType: ResultType, summary: string, output?: string): Outcome {
  return { result: failed(commandType, summary, output), code };
}

/** A parse error as an outcome: the LLM sees where its block went wrong. */
export function parseErrorOutcome(error: ParseError): Outcome {
  return failure('parse-error', 'PARSE_ERROR', `Line ${error.range.start.line + 1}: ${error.message}`);
}

/**
 * The result as text: `[OK] TYPE: summary`, continuation lines of a summary indented by two
 * spaces, and for RUN_COMMAND the output under `  Output:` (indented, so that no output line can
 * pass for a result line: a lone CR ends a line too, as editors show it). Control characters are
 * left as they are: a terminal gets the result through `neutraliseControls` (src/shared/terminalText.ts).
 */
export function formatResult(result: CommandResult): string {
  const head = `[${result.success ? 'OK' : 'FAILED'}] ${result.commandType}: ${indentContinuation(result.summary, '  ')}`;
  if (result.output === undefined || result.output === '') return head;
  const lines = result.output.split(LINE_BREAK);
  if (lines.length === 1) return `${head}\n  Output: ${lines[0]}`;
  return `${head}\n  Output:\n${lines.map((line) => `    ${line}`.trimEnd()).join('\n')}`;
}

// What RUN_COMMAND's terminal shows: the command as the answer wrote it, then (once it ended)
// its output and its result line. Both come from an LLM's answer and the program it ran, so every
// control character is shown as a stand-in (colours kept in the output): no escape sequence from
// them can set the title, clear the screen, move over the result line or write the clipboard.

/** The terminal's first line: the command about to run. */
export function commandEcho(command: string): string {
  return `$ ${neutraliseControls(command)}\n`;
}

/** The terminal's last lines: the command's output and its result. */
export function commandEnding(result: CommandResult): string {
  const output = result.output ? `${neutraliseControls(result.output, { keepColours: true })}\n` : '';
  return `${output}\n${neutraliseControls(formatResult({ ...result, output: undefined }))}\n\nPress any key to close.\n`;
}

export function formatResults(results: readonly CommandResult[]): string {
  return results.map(formatResult).join('\n');
}

const LINE_BREAK = /\r\n|\r|\n/;

function indentContinuation(text: string, indent: string): string {
  return /[\r\n]/.test(text) ? text.replace(/\r\n|\r|\n/g, `\n${indent}`) : text;
}
