// What the language server knows about one answer document: its blocks, the problems it would
// meet if applied now (the core's own planning, so the editor, `belay blocks apply` and these
// diagnostics agree), its outline, folds and CodeLenses. No LSP connection here: plain data in
// LSP shapes, so it is tested and benchmarked without any editor.
import * as path from 'node:path';
import type { CodeLens, Diagnostic, DocumentSymbol, FoldingRange, Range } from 'vscode-languageserver';
import { answerTarget, isOutboxDocument, type AnswerTarget } from '../blocks/core/answerTarget.ts';
import { blockKeys, changesWorkspace } from '../blocks/core/blockKey.ts';
import { LENS_COMMANDS } from '../blocks/core/lenses.ts';
import type { ServerSettings } from '../contracts/languageServer.ts';
import { parseAnswer } from '../blocks/core/parser.ts';
import { AnswerState, planAnswer, type Replay } from '../blocks/core/plan.ts';
import { SECTION } from '../blocks/core/protocol.ts';
import { openWorkspace, type Workspace } from '../blocks/core/sandbox.ts';
import { BLOCK_TYPES, type Command, type ParseResult } from '../blocks/core/syntax.ts';

// LSP enumerations as numbers: this module stays free of the server library's runtime.
const ERROR = 1 as const;
const WARNING = 2 as const;
const INFORMATION = 3 as const;
const SYMBOL_FILE = 1;
const SYMBOL_EVENT = 24;
const SYMBOL_STRING = 15;
const SYMBOL_NAMESPACE = 3;

export interface Analysis {
  uri: string;
  /** An outbox: its blocks are the protocol's examples, shown and never applied. */
  outbox: boolean;
  parsed: ParseResult;
  keys: string[];
  target: AnswerTarget | undefined;
  workspace: Workspace | undefined;
  diagnostics: Diagnostic[];
  lenses: CodeLens[];
}

export interface AnalyzeInput {
  uri: string;
  text: string;
  /** The file behind the document, when it is one. */
  documentPath: string | undefined;
  settings: ServerSettings;
  /** Plans reused while neither the blocks' effects nor the files change (see PlanCache). */
  plans?: PlanCache;
  /**
   * Blocks the editor has applied already, by key, with what they left for the blocks after them
   * (null: nothing): not planned again.
   */
  handled?: ReadonlyMap<string, Replay | null>;
}

/** A planning problem, anchored to its command by index so it survives edits that move lines. */
interface PlanProblem {
  index: number;
  anchor: 'path' | 'lines' | 'end_line' | 'tag';
  severity: typeof ERROR | typeof WARNING | typeof INFORMATION;
  message: string;
  code?: string;
  /** The block cannot be applied as it stands (its Apply lens says why instead). */
  blocks?: 'failed' | 'rejected';
  /** The edit is carried to other lines than written (its Apply lens says where). */
  moved?: string;
}

/** The planning problems of one answer, and what each block's plan looked at. */
interface PlannedAnswer {
  problems: PlanProblem[];
  /** Per block (by index): the path its plan depends on (its target, or where its path leads), if any. */
  paths: Array<string | undefined>;
  workspace: Workspace;
  sessionRoot: string | undefined;
  /** Blocks to plan again: a file their plans depend on changed. */
  dirty: Set<number>;
}

/**
 * The planning problems of the last answers analysed, keyed by what planning depends on: each
 * block's type, path, line numbers and body line count, the target folder and the answer's file.
 * Typing inside a body or in prose changes none of these, so the file system is not asked again.
 * When files change, only the blocks whose paths they touch (and the blocks whose paths touch
 * those) are planned again; a change of what the LLM saw (outboxes, session files) plans all.
 */
export class PlanCache {
  private readonly entries = new Map<string, PlannedAnswer>();
  private readonly parses = new Map<string, { text: string; parsed: ParseResult; keys: string[] }>();
  /** The document's text parsed, reused while the text is the same. */
  parse(uri: string, text: string): { parsed: ParseResult; keys: string[] } {
    const known = this.parses.get(uri);
    if (known && known.text === text) return known;
    const fresh = { text, ...parseWithKeys(text) };
    this.parses.delete(uri);
    if (this.parses.size >= 8) this.parses.delete(this.parses.keys().next().value!);
    this.parses.set(uri, fresh);
    return fresh;
  }
  /** Each document's target folder, resolved once until a file or a setting changes. */
  readonly targets = new Map<string, { target: AnswerTarget | undefined; workspace: Workspace | undefined }>();
  get(key: string): PlannedAnswer | undefined {
    return this.entries.get(key);
  }
  set(key: string, planned: PlannedAnswer): void {
    this.entries.delete(key);
    if (this.entries.size >= 32) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, planned);
  }
  clear(): void {
    this.entries.clear();
    this.targets.clear();
    this.parses.clear();
  }
  /** These files (absolute paths, as the editor names them) changed, appeared or went away. */
  invalidate(changed: readonly string[]): void {
    // A target folder depends on where `workspace/` and `sessions/` folders are, and on its own existence.
    const movesTargets = changed.some(
      (file) => ['workspace', 'sessions'].includes(path.basename(file)) || [...this.targets.values()].some(({ workspace }) => workspace !== undefined && within(file, workspace.root)),
    );
    if (movesTargets) this.targets.clear();
    for (const [key, entry] of this.entries) {
      const { root, realRoot } = entry.workspace;
      const paths = changed.flatMap((file) => {
        const relative = path.relative(root, file);
        return root !== realRoot && !relative.startsWith('..') && !path.isAbsolute(relative) ? [file, path.join(realRoot, relative)] : [file];
      });
      if (entry.sessionRoot !== undefined && paths.some((file) => within(path.join(entry.sessionRoot!, 'outbox'), file) || within(path.join(entry.sessionRoot!, 'sessions'), file))) {
        this.entries.delete(key);
        continue;
      }
      const hit = new Set<number>();
      entry.paths.forEach((p, i) => {
        if (p !== undefined && paths.some((file) => related(p, file))) hit.add(i);
      });
      // Blocks on related paths (a file and a folder above it) plan against each other.
      for (let grown = hit.size > 0; grown; ) {
        grown = false;
        const hitPaths = [...hit].map((i) => entry.paths[i]!);
        entry.paths.forEach((p, i) => {
          if (p !== undefined && !hit.has(i) && hitPaths.some((h) => related(p, h))) {
            hit.add(i);
            grown = true;
          }
        });
      }
      for (const i of hit) entry.dirty.add(i);
    }
  }
}

function parseWithKeys(text: string): { parsed: ParseResult; keys: string[] } {
  const parsed = parseAnswer(text);
  return { parsed, keys: blockKeys(parsed.commands) };
}

/** Whether `file` is `folder` or inside it. */
function within(folder: string, file: string): boolean {
  return file === folder || file.startsWith(folder.endsWith(path.sep) ? folder : folder + path.sep);
}

/** The same path, or one inside the other. */
function related(a: string, b: string): boolean {
  return within(a, b) || within(b, a);
}

async function resolveTarget(documentPath: string | undefined, settings: ServerSettings, cache: PlanCache | undefined): Promise<{ target: AnswerTarget | undefined; workspace: Workspace | undefined }> {
  const key = `${documentPath ?? ''}\0${settings.sessionRoot}\0${settings.workspaceFolders.join('\0')}`;
  const cached = cache?.targets.get(key);
  if (cached) return cached;
  const target = await answerTarget(documentPath, settings.workspaceFolders, settings.sessionRoot);
  let workspace: Workspace | undefined;
  try {
    workspace = target ? await openWorkspace(target.workspace) : undefined;
  } catch {
    workspace = undefined;
  }
  cache?.targets.set(key, { target, workspace });
  return { target, workspace };
}

function planKey(workspace: Workspace, documentPath: string | undefined, commands: readonly Command[], handled: ReadonlyMap<string, Replay | null> | undefined): string {
  const parts: string[] = [workspace.realRoot, documentPath ?? '', JSON.stringify([...(handled ?? [])])];
  for (const c of commands) {
    switch (c.type) {
      case 'CREATE_FILE':
        parts.push(`C${c.path}\0${c.body.lineCount}${c.body.text.endsWith('\n') ? '+' : ''}`);
        break;
      case 'EDIT_FILE':
        parts.push(`E${c.path}\0${c.startLine}\0${c.endLine}\0${c.body.lineCount}`);
        break;
      case 'DELETE_FILE':
      case 'READ_FILE':
        parts.push(`${c.type[0]}${c.path}`);
        break;
      default:
        parts.push(c.type[0]!);
    }
  }
  return parts.join('\n');
}

const EMPTY: ParseResult = { commands: [], errors: [] };

export async function analyze(input: AnalyzeInput): Promise<Analysis> {
  const { uri, text, documentPath, settings } = input;
  if (isOutboxDocument(text, documentPath)) {
    return { uri, outbox: true, parsed: EMPTY, keys: [], target: undefined, workspace: undefined, diagnostics: [], lenses: [] };
  }
  // A file change leaves the answer's text as it was: its parse is reused.
  const { parsed, keys } = input.plans?.parse(uri, text) ?? parseWithKeys(text);
  const { target, workspace } = await resolveTarget(documentPath, settings, input.plans);
  let lines: string[] | undefined;
  const diagnostics: Diagnostic[] = parsed.errors.map((error) => {
    const diagnostic: Diagnostic = { range: error.range, severity: ERROR, source: 'belay', code: error.code, message: error.message };
    if (error.suggestion !== undefined) {
      lines ??= text.split(/\r\n|\r|\n/);
      const fix = renameFix(lines, error.range, error.blockRange, error.suggestion);
      if (fix) diagnostic.data = fix;
    }
    return diagnostic;
  });
  const failing = new Map<number, Failing>();
  const moved = new Map<number, string>();
  if (workspace) {
    const handled = input.handled;
    const key = input.plans ? planKey(workspace, documentPath, parsed.commands, handled) : '';
    const settled = handled && handled.size > 0 ? handled : undefined;
    const settledOf = settled && ((index: number) => settled.get(keys[index]!));
    let planned = input.plans?.get(key);
    if (!planned) {
      planned = { ...(await planProblems(workspace, parsed, target!, documentPath, settledOf)), workspace, sessionRoot: target!.sessionRoot, dirty: new Set() };
      input.plans?.set(key, planned);
    } else if (planned.dirty.size > 0) {
      // Only what the changed files touch is planned again.
      const dirty = planned.dirty;
      const again = await planProblems(workspace, parsed, target!, documentPath, settledOf, dirty);
      const problems = [...planned.problems.filter((p) => !dirty.has(p.index)), ...again.problems].sort((a, b) => problemGroup(a) - problemGroup(b) || a.index - b.index);
      const paths = planned.paths.map((p, i) => (dirty.has(i) ? again.paths[i] : p));
      planned = { ...planned, problems, paths, dirty: new Set() };
      input.plans?.set(key, planned);
    }
    const problems = planned.problems;
    for (const problem of problems) {
      diagnostics.push(toDiagnostic(parsed.commands[problem.index]!, problem));
      if (problem.blocks) failing.set(problem.index, { summary: problem.message, kind: problem.blocks });
      if (problem.moved) moved.set(problem.index, problem.moved);
    }
  }
  else if (parsed.commands.length > 0) {
    const first = parsed.commands[0]!;
    diagnostics.push({
      range: first.openTag.range,
      severity: WARNING,
      source: 'belay',
      message: target ? `The folder these blocks act on, ${target.workspace}, does not exist` : 'Open a folder: command blocks act on the workspace folder',
    });
  }
  const lenses = codeLenses(uri, parsed.commands, keys, failing, moved);
  for (const error of parsed.errors) {
    if (!error.blockRange) continue;
    const line = error.blockRange.start.line;
    if (lenses.some((l) => l.range.start.line === line)) continue;
    const range = { start: { line, character: 0 }, end: { line, character: 0 } };
    lenses.push({ range, command: { title: `$(warning) Not executable: ${error.message}`, command: 'workbench.actions.view.problems' } });
  }
  return { uri, outbox: false, parsed, keys, target, workspace, diagnostics, lenses };
}

/** The quick fix a "did you mean" diagnostic carries: the tag names to change (opening and closing). */
export interface RenameFix {
  suggestion: string;
  edits: Array<{ range: Range; newText: string }>;
}

/**
 * The edits that rename an unknown tag to the suggested one: the name in the opening tag and in
 * its closing tag when the block has one, or the whole stray closing tag.
 */
function renameFix(lines: readonly string[], range: Range, blockRange: Range | undefined, suggestion: string): RenameFix | undefined {
  if (range.start.line !== range.end.line) return undefined;
  const line = lines[range.start.line] ?? '';
  const written = line.slice(range.start.character, range.end.character);
  const closing = /^\[\/([A-Za-z_]+)\]$/.exec(written);
  if (closing) return { suggestion, edits: [{ range, newText: `[/${suggestion}]` }] };
  if (!/^[A-Za-z_]+$/.test(written)) return undefined;
  const edits = [{ range, newText: suggestion }];
  if (blockRange && blockRange.end.line > range.start.line) {
    const end = blockRange.end;
    const closer = `[/${written}]`;
    const closeLine = lines[end.line] ?? '';
    if (closeLine.slice(end.character - closer.length, end.character) === closer) {
      edits.push({ range: { start: { line: end.line, character: end.character - closer.length + 2 }, end: { line: end.line, character: end.character - 1 } }, newText: suggestion });
    }
  }
  return { suggestion, edits };
}

/** Plans the whole answer as `belay blocks apply` would run it, touching nothing, and lists what would fail. */
async function planProblems(
  workspace: Workspace,
  parsed: ParseResult,
  target: AnswerTarget,
  documentPath: string | undefined,
  settled?: (index: number) => Replay | null | undefined,
  only?: ReadonlySet<number>,
): Promise<{ problems: PlanProblem[]; paths: Array<string | undefined> }> {
  const skip = (index: number) => (settled?.(index) === null) || (only !== undefined && !only.has(index));
  const plan = await planAnswer(workspace, parsed, {
    state: new AnswerState({ cacheFolders: true }),
    ...(settled ? { settled: (index: number) => settled(index) ?? undefined } : {}),
    skip,
    stale: { target, answerPath: documentPath },
  });
  const problems: PlanProblem[] = [];
  const stale: PlanProblem[] = [];
  const paths: Array<string | undefined> = new Array(parsed.commands.length);
  parsed.commands.forEach((command, index) => {
    if ('path' in command && (only === undefined || only.has(index))) paths[index] = path.join(workspace.realRoot, command.path);
  });
  for (const { index, command, plan: planned, staleSince } of plan.blocks) {
    if ('target' in planned) paths[index] = planned.target.real;
    if (planned.kind === 'fail') {
      const anchor = planned.code === 'line-range' || planned.code === 'overlap' ? 'lines' : 'path';
      problems.push({ index, anchor, severity: ERROR, message: planned.result.summary, blocks: planned.code === 'outside-workspace' ? 'rejected' : 'failed' });
    } else if (planned.kind === 'write' && planned.warning === 'end-line-cut') {
      problems.push({ index, anchor: 'end_line', severity: WARNING, message: planned.result.summary });
    }
    if (staleSince !== undefined) {
      stale.push({
        index,
        anchor: 'tag',
        severity: WARNING,
        code: 'stale',
        message: `'${(command as { path: string }).path}' changed since the LLM saw it (${path.basename(staleSince)}): these line numbers may no longer point at the lines it meant`,
      });
    }
    if (planned.kind === 'write' && planned.relocated && planned.relocated.from[0] !== planned.relocated.to[0]) {
      const { from, to, outbox } = planned.relocated;
      stale.push({
        index,
        anchor: 'lines',
        severity: INFORMATION,
        code: 'relocated',
        message: `'${(command as { path: string }).path}' changed since the LLM read it (${path.basename(outbox)}): lines ${from[0]}-${from[1]} it wrote this edit for are lines ${to[0]}-${to[1]} now, where it applies`,
        moved: `lines ${to[0]}-${to[1]}`,
      });
    }
  }
  return { problems: [...problems, ...stale], paths };
}

/** Errors and warnings first, then what only informs about staleness, as a full plan lists them. */
function problemGroup(problem: PlanProblem): number {
  return problem.code === 'stale' || problem.code === 'relocated' ? 1 : 0;
}

function toDiagnostic(command: Command, problem: PlanProblem): Diagnostic {
  let range: Range | undefined;
  if (problem.anchor === 'lines') {
    const start = attributeRange(command, 'start_line');
    const end = attributeRange(command, 'end_line');
    if (start && end) range = { start: start.start, end: end.end };
  } else if (problem.anchor === 'end_line') {
    range = attributeRange(command, 'end_line');
  } else if (problem.anchor === 'path') {
    range = attributeRange(command, 'path');
  }
  return { range: range ?? command.openTag.range, severity: problem.severity, source: 'belay', message: problem.message, ...(problem.code ? { code: problem.code } : {}) };
}

function attributeRange(command: Command, name: string): Range | undefined {
  return command.attributes.find((a) => a.name.toLowerCase() === name)?.valueRange;
}

/** Why a block cannot be applied as it stands. */
export interface Failing {
  summary: string;
  kind: 'failed' | 'rejected';
}

/**
 * Apply / Preview / Run above each block, or what stops it; Apply All (of the blocks that can be
 * applied) and Preview All above the first.
 */
export function codeLenses(
  uri: string,
  commands: readonly Command[],
  keys: readonly string[],
  failing: ReadonlyMap<number, Failing> = new Map(),
  moved: ReadonlyMap<number, string> = new Map(),
): CodeLens[] {
  const lenses: CodeLens[] = [];
  const applicable = commands.filter((c, i) => changesWorkspace(c) && !failing.has(i)).length;
  if (commands.length > 0) {
    const top: Range = { start: { line: commands[0]!.range.start.line, character: 0 }, end: { line: commands[0]!.range.start.line, character: 0 } };
    lenses.push({ range: top, command: { title: `Apply All (${applicable})`, command: LENS_COMMANDS.applyAll, arguments: [uri] } });
    lenses.push({ range: top, command: { title: 'Preview All', command: LENS_COMMANDS.previewAll, arguments: [uri] } });
  }
  for (let i = 0; i < commands.length; i++) {
    const command = commands[i]!;
    const args = [uri, command.openTag.range.start.line, keys[i]!];
    const range = command.openTag.range;
    const failure = failing.get(i);
    if (failure && changesWorkspace(command)) {
      const title = failure.kind === 'rejected' ? `$(circle-slash) ${failure.summary}` : `$(error) Cannot apply: ${failure.summary}`;
      lenses.push({ range, command: { title: title.split('\n', 1)[0]!, command: LENS_COMMANDS.problem, arguments: args, tooltip: failure.summary } as CodeLens['command'] });
      continue;
    }
    switch (BLOCK_TYPES[command.type].action) {
      case 'apply':
        lenses.push({ range, command: { title: moved.has(i) ? `Apply (moved to ${moved.get(i)!}: the file changed)` : 'Apply', command: LENS_COMMANDS.apply, arguments: args } });
        lenses.push({ range, command: { title: 'Preview', command: LENS_COMMANDS.preview, arguments: args } });
        break;
      case 'run':
        lenses.push({ range, command: { title: 'Run', command: LENS_COMMANDS.run, arguments: args } });
        break;
      case 'open':
        lenses.push({ range, command: { title: failure ? `$(error) ${failure.summary}` : 'Open File', command: failure ? LENS_COMMANDS.problem : LENS_COMMANDS.open, arguments: args } });
        break;
      case 'show':
        lenses.push({ range, command: { title: command.type === 'DONE' ? 'Task Done' : 'Show Message', command: LENS_COMMANDS.show, arguments: args } });
        break;
    }
  }
  return lenses;
}

function describe(command: Command): string {
  switch (command.type) {
    case 'CREATE_FILE':
    case 'DELETE_FILE':
    case 'READ_FILE':
      return `${command.type} ${command.path}`;
    case 'EDIT_FILE':
      return `EDIT_FILE ${command.path} ${command.startLine}-${command.endLine}`;
    default: {
      const first = command.body.text.split('\n', 1)[0] ?? '';
      return `${command.type} ${first.length > 60 ? `${first.slice(0, 57)}...` : first}`.trimEnd();
    }
  }
}

/** The outline's symbol kind of a block, by what its body holds. */
const SYMBOL_KINDS = { file: SYMBOL_FILE, none: SYMBOL_FILE, shell: SYMBOL_EVENT, text: SYMBOL_STRING } as const;

/** The outline: one symbol per block, or per section for an outbox. */
export function documentSymbols(analysis: Analysis, text: string): DocumentSymbol[] {
  if (analysis.outbox) return sectionSymbols(text);
  return analysis.parsed.commands.map((command) => ({
    name: describe(command),
    kind: SYMBOL_KINDS[BLOCK_TYPES[command.type].body],
    range: command.range,
    selectionRange: command.openTag.range,
  }));
}

function sections(text: string): Array<{ name: string; start: number; end: number; width: number }> {
  const markers = new Set<string>(Object.values(SECTION));
  const lines = text.split(/\r\n|\r|\n/);
  const found: Array<{ name: string; start: number; end: number; width: number }> = [];
  lines.forEach((line, i) => {
    if (markers.has(line.trim())) {
      const last = found.at(-1);
      if (last) last.end = i - 1;
      found.push({ name: line.trim().replace(/=/g, '').trim(), start: i, end: lines.length - 1, width: line.length });
    }
  });
  return found;
}

function sectionSymbols(text: string): DocumentSymbol[] {
  return sections(text).map((s) => ({
    name: s.name,
    kind: SYMBOL_NAMESPACE,
    range: { start: { line: s.start, character: 0 }, end: { line: s.end, character: 0 } },
    selectionRange: { start: { line: s.start, character: 0 }, end: { line: s.start, character: s.width } },
  }));
}

/** One fold per block of more than one line (per section in an outbox). */
export function foldingRanges(analysis: Analysis, text: string): FoldingRange[] {
  if (analysis.outbox) return sections(text).filter((s) => s.end > s.start).map((s) => ({ startLine: s.start, endLine: s.end, kind: 'region' }));
  return analysis.parsed.commands
    .filter((c) => c.range.end.line > c.range.start.line)
    .map((c) => ({ startLine: c.range.start.line, endLine: c.range.end.line, kind: 'region' }));
}
