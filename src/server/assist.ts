// Completion and hover for answer documents: command snippets, attribute names, workspace paths
// inside path="…", what a command does, and the lines an EDIT_FILE will replace.
import type { CompletionItem, Hover, Position } from 'vscode-languageserver';
import { readFileState } from '../blocks/core/files.ts';
import { splitFileLines } from '../blocks/core/lines.ts';
import { resolveInWorkspace } from '../blocks/core/sandbox.ts';
import { BLOCK_TYPES, COMMAND_TYPES, REQUIRED_ATTRIBUTES, type Command, type CommandType } from '../blocks/core/syntax.ts';
import { listWorkspace } from '../blocks/core/workspace.ts';
import type { Analysis } from './analysis.ts';

const KIND_PROPERTY = 10;
const KIND_FILE = 17;
const KIND_SNIPPET = 15;
const SNIPPET = 2;

/** Workspace listings reused for a few seconds: completion asks on every keystroke. */
export class ListingCache {
  private readonly entries = new Map<string, { at: number; files: Promise<string[]> }>();
  files(root: string): Promise<string[]> {
    const cached = this.entries.get(root);
    if (cached && Date.now() - cached.at < 3000) return cached.files;
    const files = listWorkspace(root).then((list) => list.map((f) => f.path), () => []);
    this.entries.set(root, { at: Date.now(), files });
    return files;
  }
  clear(): void {
    this.entries.clear();
  }
}

export async function complete(analysis: Analysis, text: string, position: Position, listings: ListingCache): Promise<CompletionItem[]> {
  if (analysis.outbox) return [];
  const line = lineAt(text, position.line);
  const before = line.slice(0, position.character);
  // Inside path="… : workspace paths.
  const pathValue = /\[(?:[A-Z_]+)\b[^\]]*\bpath\s*=\s*(["'])([^"']*)$/i.exec(before);
  if (pathValue) {
    if (!analysis.workspace) return [];
    const typed = pathValue[2]!;
    const start = { line: position.line, character: position.character - typed.length };
    const files = await listings.files(analysis.workspace.realRoot);
    const folders = new Set<string>();
    for (const file of files) {
      const parts = file.split('/');
      for (let i = 1; i < parts.length; i++) folders.add(parts.slice(0, i).join('/') + '/');
    }
    return [...folders, ...files]
      .filter((p) => p.startsWith(typed))
      .slice(0, 500)
      .map((p) => ({ label: p, kind: p.endsWith('/') ? 19 : KIND_FILE, textEdit: { range: { start, end: position }, newText: p } }));
  }
  // After the command name in an opening tag: the attributes it still needs.
  const tag = /^\s*\[([A-Z_]+)\b([^\]]*)$/.exec(before);
  if (tag && (COMMAND_TYPES as readonly string[]).includes(tag[1]!) && /\s$/.test(before)) {
    const type = tag[1] as CommandType;
    const written = new Set([...tag[2]!.matchAll(/([A-Za-z_-]+)\s*=/g)].map((m) => m[1]!.toLowerCase()));
    return REQUIRED_ATTRIBUTES[type]
      .filter((name) => !written.has(name))
      .map((name) => ({ label: name, kind: KIND_PROPERTY, insertText: `${name}="$1"`, insertTextFormat: SNIPPET, command: name === 'path' ? { title: 'paths', command: 'editor.action.triggerSuggest' } : undefined }));
  }
  // At the start of a line, after '[': whole blocks.
  const opening = /^\s*\[([A-Za-z_]*)$/.exec(before);
  if (opening) {
    const typed = opening[1]!;
    const start = { line: position.line, character: position.character - typed.length };
    const end = { line: position.line, character: position.character + (/^[A-Za-z_]*\]?/.exec(line.slice(position.character))?.[0].length ?? 0) };
    return COMMAND_TYPES.map((type, i) => ({
      label: type,
      kind: KIND_SNIPPET,
      detail: 'Belay command block',
      documentation: { kind: 'markdown', value: BLOCK_TYPES[type].doc },
      sortText: String(i),
      filterText: type,
      insertTextFormat: SNIPPET,
      textEdit: { range: { start, end }, newText: BLOCK_TYPES[type].snippet },
    }));
  }
  return [];
}

function lineAt(text: string, line: number): string {
  let start = 0;
  for (let i = 0; i < line; i++) {
    const next = text.indexOf('\n', start);
    if (next === -1) return '';
    start = next + 1;
  }
  const end = text.indexOf('\n', start);
  return text.slice(start, end === -1 ? text.length : end).replace(/\r$/, '');
}

function contains(range: { start: Position; end: Position }, p: Position): boolean {
  const after = p.line > range.start.line || (p.line === range.start.line && p.character >= range.start.character);
  const before = p.line < range.end.line || (p.line === range.end.line && p.character <= range.end.character);
  return after && before;
}

export async function hover(analysis: Analysis, position: Position): Promise<Hover | null> {
  if (analysis.outbox) return null;
  const command = analysis.parsed.commands.find((c) => contains(c.openTag.range, position) || (c.closeTag !== undefined && contains(c.closeTag.range, position)));
  if (!command) return null;
  const parts = [`**${command.type}**: ${BLOCK_TYPES[command.type].doc}`];
  if (command.type === 'EDIT_FILE' && analysis.workspace) parts.push(await currentLines(analysis, command));
  return { contents: { kind: 'markdown', value: parts.join('\n\n') }, range: command.openTag.range };
}

async function currentLines(analysis: Analysis, command: Command & { type: 'EDIT_FILE' }): Promise<string> {
  const resolution = await resolveInWorkspace(analysis.workspace!, command.path);
  if (!resolution.ok) return resolution.summary;
  // Through the confined reader: a FIFO is named, not opened (opening one waits for ever), and a
  // file too large to edit is not read.
  let file;
  try {
    file = await readFileState(analysis.workspace!, resolution.path.real);
  } catch {
    return `'${command.path}' could not be read.`;
  }
  if (file.kind === 'missing') return `'${command.path}' does not exist.`;
  if (file.kind !== 'file' || file.text === undefined) return `'${command.path}' is not a text file Belay edits.`;
  const text = file.text;
  const { lines } = splitFileLines(text);
  if (command.startLine > lines.length) return `'${command.path}' has only ${lines.length} lines now.`;
  const end = Math.min(command.endLine, lines.length);
  const shown = lines.slice(command.startLine - 1, end);
  const fence = '`'.repeat(Math.max(3, ...shown.map((l) => (/`+/.exec(l)?.[0].length ?? 0) + 1)));
  return `Replaces lines ${command.startLine}-${end} of \`${command.path}\`, now:\n${fence}\n${shown.join('\n')}\n${fence}`;
}
