// How a block is recognised across edits of the answer and across processes (language server and
// extension host): by what it does, not by where it sits. No `vscode` import.
import { CHANGES_WORKSPACE, type Command } from './syntax.ts';

/** What the block does, in a few fields; equal blocks get an occurrence number to stay distinct. */
function signature(command: Command): string {
  switch (command.type) {
    case 'CREATE_FILE':
      return `${command.type}|${command.path}|${command.body.text.length}|${command.body.lineCount}`;
    case 'EDIT_FILE':
      return `${command.type}|${command.path}|${command.startLine}|${command.endLine}|${command.body.text.length}`;
    case 'DELETE_FILE':
    case 'READ_FILE':
      return `${command.type}|${command.path}`;
    default:
      return `${command.type}|${command.body.text.length}|${command.body.text.slice(0, 80)}`;
  }
}

/** One key per command, in order: `signature#occurrence`. */
export function blockKeys(commands: readonly Command[]): string[] {
  const seen = new Map<string, number>();
  return commands.map((command) => {
    const s = signature(command);
    const n = (seen.get(s) ?? 0) + 1;
    seen.set(s, n);
    return `${s}#${n}`;
  });
}

/** The commands whose effects the editor applies (READ_FILE, MESSAGE and DONE only report). */
export function changesWorkspace(command: Command): boolean {
  return CHANGES_WORKSPACE.has(command.type);
}
