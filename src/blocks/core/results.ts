// Command results and the protocol's result lines:
//   [OK] CREATE_FILE: Created 'a.txt'
//   [FAILED] RUN_COMMAND: Ran 'npm test' (exit code 1)
//     Output: …
import * as z from 'zod';
import { COMMAND_TYPES, type CommandType, type ParseError } from './syntax.ts';

export const RESULT_TYPES = [...COMMAND_TYPES, 'PARSE_ERROR'] as const;
export type ResultType = CommandType | 'PARSE_ERROR';

/** One command's outcome, as the session file stores it (`lastResults`). */
export const commandResultSchema = z.object({
  commandType: z.enum(RESULT_TYPES),
  summary: z.string(),
  success: z.boolean(),
  output: z.string().optional(),
});
export type CommandResult = z.infer<typeof commandResultSchema>;

export const OUTPUT_TRUNCATED_MARKER = '... (output truncated)';

export function ok(commandType: ResultType, summary: string, output?: string): CommandResult {
  return output === undefined ? { commandType, summary, success: true } : { commandType, summary, success: true, output };
}

export function failed(commandType: ResultType, summary: string, output?: string): CommandResult {
  return output === undefined ? { commandType, summary, success: false } : { commandType, summary, success: false, output };
}

/** A parse error as a result: the LLM sees where its block went wrong. */
export function parseErrorResult(error: ParseError): CommandResult {
  return failed('PARSE_ERROR', `Line ${error.range.start.line + 1}: ${error.message}`);
}

/**
 * The result as text: `[OK] TYPE: summary`, continuation lines of a summary indented by two
 * spaces, and for RUN_COMMAND the output under `  Output:` (indented, so that no output line can
 * pass for a result line).
 */
export function formatResult(result: CommandResult): string {
  const head = `[${result.success ? 'OK' : 'FAILED'}] ${result.commandType}: ${indentContinuation(result.summary, '  ')}`;
  if (result.output === undefined || result.output === '') return head;
  const lines = result.output.split('\n');
  if (lines.length === 1) return `${head}\n  Output: ${lines[0]}`;
  return `${head}\n  Output:\n${lines.map((line) => `    ${line}`.trimEnd()).join('\n')}`;
}

export function formatResults(results: readonly CommandResult[]): string {
  return results.map(formatResult).join('\n');
}

function indentContinuation(text: string, indent: string): string {
  return text.includes('\n') ? text.replace(/\r?\n/g, `\n${indent}`) : text;
}
