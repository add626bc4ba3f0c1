// What an answer's blocks would do, touching nothing: each block is *planned* (its target resolved
// through the sandbox, the file's text before and after, or why it fails, as a code and a summary)
// against the files as the blocks before it leave them. `planAnswer` is the one loop over a whole
// answer: the language server's diagnostics, the editor's Apply, Apply All and Preview All, and
// `belay blocks apply` (through executor.ts, which carries each plan out) all go through it.
import { promises as fs } from 'node:fs';
import type { AppliedEdit, Replay } from '../../contracts/languageServer.ts';
import { repliedOutbox, type AnswerTarget } from './answerTarget.ts';
import { diffLines, relocateThrough, type Hunk } from './diff.ts';
import { entryAt, formatBytes, MAX_TEXT_BYTES, notRegularSummary, readFailureCode, readFileState as readFileOnDisk, type FileState } from './files.ts';
import { countFileLines, joinFileLines, replaceLines, splitFileLines } from './lines.ts';
import { parseAnswer } from './parser.ts';
import { failed, ok, parseErrorOutcome, type CommandResult, type FailureCode, type Outcome } from './results.ts';
import { errorText, resolveInWorkspace, type FolderCache, type ResolvedPath, type Workspace } from './sandbox.ts';
import { readSeen, textDigest, type SeenFiles } from './seen.ts';
import {
  inOrder,
  type Command,
  type CreateFileCommand,
  type EditFileCommand,
  type ParseError,
  type ParseResult,
  type PathOnlyCommand,
  type TextCommand,
} from './syntax.ts';

// An EDIT_FILE already applied in this answer, and what a carried-out block leaves for the blocks
// after it: declared with their schemas, where the language server's notification carries them.
export type { AppliedEdit, Replay };

interface FileHistory {
  /** Lines the file had when this answer first edited it (or when this answer created it). */
  originalLineCount: number;
  edits: AppliedEdit[];
  /** The file changed since the LLM read it: how its lines moved (see Relocating). */
  relocation?: Relocating;
  /**
   * An edit of this answer was carried over such a change in an earlier action (replayed): the
   * changes are not known here, so later edits are carried from what the LLM read to the file as
   * it is now, this answer's own edits included.
   */
  relocatedEarlier?: boolean;
}

/**
 * An edited file whose text changed since the LLM read it in full: the changes from what it read
 * to what the file held when this answer first edited it. Its line numbers refer to what it read
 * and are carried through these changes.
 */
export interface Relocating {
  outbox: string;
  hunks: Hunk[];
  /** Lines of the text the LLM read. */
  baseLineCount: number;
  /** The file's lines when this answer first edited it (what the hunks lead to). */
  lines: readonly string[];
}

export type Plan =
  | {
      kind: 'write';
      command: CreateFileCommand | EditFileCommand;
      target: ResolvedPath;
      /** The file's text before (undefined when it does not exist, or is not UTF-8 text). */
      before: string | undefined;
      /** The file's full new text; a leading U+FEFF is the file's byte order mark. */
      after: string;
      /** The permissions to keep when replacing an existing file. */
      mode: number | undefined;
      /** For EDIT_FILE: how the edit is remembered, so later edits in the answer can be shifted. */
      edit?: { originalLineCount: number; applied: AppliedEdit };
      /** The result once written. */
      result: CommandResult;
      /** EDIT_FILE whose end_line is past the end of the file: the edit stops at the last line. */
      warning?: 'end-line-cut';
      /**
       * EDIT_FILE of a file that changed since the LLM read it: the lines it was written for (in
       * what the LLM read) and where they are now; the edit goes there.
       */
      relocated?: { outbox: string; from: [number, number]; to: [number, number] };
      /** The file's changes since the LLM read it, kept for the answer's later edits of it. */
      relocation?: Relocating;
      /**
       * EDIT_FILE of a file whose text changed since the outbox listed it, without the text the
       * LLM saw to carry the edit over: that outbox (its line numbers may point at other lines).
       */
      stale?: string;
    }
  | { kind: 'delete'; command: PathOnlyCommand; target: ResolvedPath; before: string | undefined; result: CommandResult }
  | { kind: 'read'; command: PathOnlyCommand; target: ResolvedPath; result: CommandResult }
  | { kind: 'run'; command: TextCommand }
  | { kind: 'message' | 'done'; command: TextCommand; result: CommandResult }
  | { kind: 'fail'; command: Command; code: FailureCode; result: CommandResult };

/** How a carried-out plan is remembered (none for a failure or a message). */
export function replayOf(plan: Plan): Replay | undefined {
  switch (plan.kind) {
    case 'write':
      if (!plan.edit) return { kind: 'write', real: plan.target.real, lineCount: countFileLines(plan.after) };
      return { kind: 'edit', real: plan.target.real, originalLineCount: plan.edit.originalLineCount, applied: plan.edit.applied, ...(plan.relocated ? { relocated: true } : {}) };
    case 'delete':
      return { kind: 'delete', real: plan.target.real };
    case 'read':
      return { kind: 'read', relative: plan.target.relative };
    case 'run':
      return { kind: 'run' };
    case 'done':
      return { kind: 'done' };
    default:
      return undefined;
  }
}

/**
 * What one answer has done so far: the edits per file (to shift later line numbers), the files
 * queued for the next outbox, whether DONE was seen. A simulated state also remembers the planned
 * contents, so a whole answer can be previewed without writing anything.
 */
export class AnswerState {
  readonly readFileRequests: string[] = [];
  done = false;
  private readonly histories = new Map<string, FileHistory>();
  private readonly overlay: Map<string, string | null> | undefined;
  /**
   * Folders resolved during one uninterrupted run of commands (see `FolderCache`); emptied
   * whenever a shell command or a delete may have changed them. Off unless asked for: a state the
   * editor keeps between user actions must resolve afresh every time.
   */
  readonly folders: FolderCache | undefined;

  /**
   * `texts`: files whose text is not what the disk holds (the editor's unsaved documents, by real
   * path; null for a file the editor has deleted): planned from that text. Implies `simulate`.
   */
  constructor(options: { simulate?: boolean; cacheFolders?: boolean; texts?: ReadonlyMap<string, string | null> } = {}) {
    this.overlay = options.simulate || options.texts ? new Map(options.texts ?? []) : undefined;
    this.folders = options.cacheFolders ? new Map() : undefined;
  }

  /**
   * A simulating copy that starts where this state is: what the editor previews (or applies as one
   * edit) for the blocks not applied yet, without touching this state.
   */
  fork(): AnswerState {
    const copy = new AnswerState({ simulate: true, cacheFolders: this.folders !== undefined });
    for (const [real, history] of this.histories) copy.histories.set(real, { originalLineCount: history.originalLineCount, edits: [...history.edits] });
    copy.readFileRequests.push(...this.readFileRequests);
    copy.done = this.done;
    if (this.overlay) for (const [real, text] of this.overlay) copy.overlay!.set(real, text);
    return copy;
  }

  history(real: string): FileHistory | undefined {
    return this.histories.get(real);
  }

  /** The planned content of a file in a simulation: a string, null when deleted, undefined when untouched. */
  simulated(real: string): string | null | undefined {
    return this.overlay?.get(real);
  }

  /** Records a plan as applied, whoever applied it (Belay here, or the editor through its own edit). */
  record(plan: Plan): void {
    if (plan.kind === 'write') this.overlay?.set(plan.target.real, plan.after);
    if (plan.kind === 'delete') this.overlay?.set(plan.target.real, null);
    const replay = replayOf(plan);
    if (replay) this.replay(replay);
    if (plan.kind === 'write' && plan.relocation) {
      const history = this.histories.get(plan.target.real);
      if (history) history.relocation = plan.relocation;
    }
  }

  /** Takes in what an applied block left (see Replay), as if it had just been recorded. */
  replay(replay: Replay): void {
    switch (replay.kind) {
      case 'write':
        this.histories.set(replay.real, { originalLineCount: replay.lineCount, edits: [] });
        return;
      case 'edit': {
        const history = this.histories.get(replay.real) ?? { originalLineCount: replay.originalLineCount, edits: [] };
        history.edits.push(replay.applied);
        if (replay.relocated) history.relocatedEarlier = true;
        this.histories.set(replay.real, history);
        return;
      }
      case 'delete':
        this.histories.delete(replay.real);
        this.folders?.clear();
        return;
      case 'read':
        if (!this.readFileRequests.includes(replay.relative)) this.readFileRequests.push(replay.relative);
        return;
      case 'done':
        this.done = true;
        return;
      case 'run':
        this.folders?.clear();
        return;
    }
  }
}

/** The file as the blocks before this one leave it: planned in a simulation, else on disk. */
async function readFileState(workspace: Workspace, state: AnswerState, real: string): Promise<FileState> {
  const planned = state.simulated(real);
  if (planned === null) return { kind: 'missing' };
  if (planned !== undefined) return { kind: 'file', text: planned, mode: undefined, size: planned.length, tooLarge: false };
  return readFileOnDisk(workspace, real);
}

/** What planning may consult besides the files: what the LLM saw (for EDIT_FILE). */
interface PlanContext {
  seen?: () => Promise<SeenFiles | undefined>;
}

/** Computes what a command would do, touching nothing. */
async function planCommand(workspace: Workspace, command: Command, state: AnswerState, context: PlanContext = {}): Promise<Plan> {
  try {
    switch (command.type) {
      case 'CREATE_FILE':
        return await planCreate(workspace, command, state);
      case 'EDIT_FILE':
        return await planEdit(workspace, command, state, context);
      case 'DELETE_FILE':
        return await planDelete(workspace, command, state);
      case 'READ_FILE':
        return await planRead(workspace, command, state);
      case 'RUN_COMMAND':
        return { kind: 'run', command };
      case 'MESSAGE':
        return { kind: 'message', command, result: ok('MESSAGE', command.body.text || '(empty message)') };
      case 'DONE':
        return { kind: 'done', command, result: ok('DONE', command.body.text || 'Task complete') };
    }
  } catch (error) {
    return failPlan(command, readFailureCode(error), `Could not use '${'path' in command ? command.path : ''}': ${errorText(error)}`);
  }
}

async function resolveOrFail(workspace: Workspace, command: Command & { path: string }, state: AnswerState, final: 'follow' | 'entry' = 'follow') {
  const resolution = await resolveInWorkspace(workspace, command.path, state.folders ? { final, folders: state.folders } : { final });
  if (resolution.ok) return resolution.path;
  return failPlan(command, resolution.code, resolution.summary);
}

function failPlan(command: Command, code: FailureCode, summary: string): Plan {
  return { kind: 'fail', command, code, result: failed(command.type, summary) };
}

async function planCreate(workspace: Workspace, command: CreateFileCommand, state: AnswerState): Promise<Plan> {
  const target = await resolveOrFail(workspace, command, state);
  if ('kind' in target) return target;
  const file: FileState = target.exists || state.simulated(target.real) !== undefined ? await readFileState(workspace, state, target.real) : { kind: 'missing' };
  if (file.kind === 'directory') return failPlan(command, 'is-folder', `'${command.path}' is a folder`);
  if (file.kind === 'special') return failPlan(command, 'not-regular', notRegularSummary(command.path, file.what));
  return {
    kind: 'write',
    command,
    target,
    before: file.kind === 'file' ? file.text : undefined,
    after: command.body.text,
    mode: file.kind === 'file' ? file.mode : undefined,
    result: ok(command.type, `Created '${command.path}'`),
  };
}

async function planEdit(workspace: Workspace, command: EditFileCommand, state: AnswerState, context: PlanContext): Promise<Plan> {
  const target = await resolveOrFail(workspace, command, state);
  if ('kind' in target) return target;
  const fail = (code: FailureCode, summary: string) => failPlan(command, code, summary);
  const file = await readFileState(workspace, state, target.real);
  if (file.kind === 'missing') return fail('not-found', `File '${command.path}' not found`);
  if (file.kind === 'directory') return fail('is-folder', `'${command.path}' is a folder`);
  if (file.kind === 'special') return fail('not-regular', notRegularSummary(command.path, file.what));
  if (file.tooLarge) {
    return fail(
      'too-large',
      `File '${command.path}' is ${formatBytes(file.size)}, larger than the ${formatBytes(MAX_TEXT_BYTES)} EDIT_FILE edits; replace it with CREATE_FILE or change it with RUN_COMMAND`,
    );
  }
  if (file.text === undefined) return fail('not-text', `File '${command.path}' is not UTF-8 text; replace it with CREATE_FILE instead`);
  const lines = splitFileLines(file.text);
  const history = state.history(target.real);
  // The first edit of a file in this answer: has it changed since the LLM saw it?
  let relocation = history?.relocation;
  let stale: string | undefined;
  if (!history && state.simulated(target.real) === undefined && context.seen) {
    const seen = await context.seen();
    const was = seen?.digests.get(target.relative);
    if (seen && was !== undefined && was !== textDigest(file.text)) {
      const base = seen.texts.get(target.relative);
      if (base === undefined) stale = seen.outbox;
      else {
        const baseLines = splitFileLines(base).lines;
        relocation = { outbox: seen.outbox, hunks: diffLines(baseLines, lines.lines), baseLineCount: baseLines.length, lines: lines.lines };
      }
    }
  }
  // Edits of this answer applied in earlier actions were carried over a change: carry this one from
  // what the LLM read to the file as it is now (both the change and those edits).
  let throughAll: Hunk[] | undefined;
  let throughOutbox = '';
  if (history?.relocatedEarlier && !relocation && context.seen) {
    const seen = await context.seen();
    const base = seen?.texts.get(target.relative);
    if (seen && base !== undefined) {
      throughAll = diffLines(splitFileLines(base).lines, lines.lines);
      throughOutbox = seen.outbox;
    }
  }
  const total = history?.originalLineCount ?? relocation?.baseLineCount ?? lines.lines.length;
  const { startLine, endLine } = command;
  if (startLine > total) return fail('line-range', `Invalid line range ${startLine}-${endLine} for file with ${total} lines`);
  const end = Math.min(endLine, total);
  const earlier = history?.edits ?? [];
  const overlap = earlier.find((edit) => startLine <= edit.end && end >= edit.start);
  if (overlap) {
    return fail('overlap', `Lines ${startLine}-${end} overlap lines ${overlap.start}-${overlap.end} edited earlier in this answer`);
  }
  // Lines the file gained or lost since the LLM read it, before these lines; a change among them stops the edit.
  let moved = 0;
  if (relocation) {
    const where = relocateThrough(relocation.hunks, startLine, end);
    if (where.kind === 'conflict') return fail('conflict', conflictSummary(command.path, startLine, end, where.hunks, relocation.lines));
    if (where.kind === 'moved') moved = where.start - startLine;
  }
  const answerShift = earlier.reduce((sum, edit) => (edit.end < startLine ? sum + edit.delta : sum), 0);
  if (throughAll) {
    const where = relocateThrough(throughAll, startLine, end);
    if (where.kind === 'conflict') return fail('conflict', conflictSummary(command.path, startLine, end, where.hunks, lines.lines));
    // The hunks hold this answer's earlier edits as well: what is left is the change since the LLM read the file.
    if (where.kind === 'moved') moved = where.start - startLine - answerShift;
  }
  const shift = answerShift + moved;
  const currentStart = startLine + shift;
  const currentEnd = Math.min(end + shift, lines.lines.length);
  if (currentStart > lines.lines.length) {
    return fail('line-range', `Invalid line range ${startLine}-${endLine}: the file has ${lines.lines.length} lines now (it changed during this answer)`);
  }
  const replacement = command.body.lineCount === 0 ? [] : command.body.text.split('\n');
  const after = joinFileLines(replaceLines(lines, currentStart - 1, currentEnd, replacement));
  let summary = `Edited '${command.path}' lines ${startLine}-${end}`;
  if (end !== endLine) summary += ` (end_line ${endLine} is past the end of the file, cut to ${total})`;
  const relocated = relocation !== undefined || throughAll !== undefined;
  if (relocated && moved !== 0) summary += ` (now lines ${startLine + moved}-${end + moved}: the file changed since you read it)`;
  if (shift - moved !== 0) summary += ` (at line ${currentStart} after earlier edits in this answer)`;
  return {
    kind: 'write',
    command,
    target,
    before: file.text,
    after,
    mode: file.mode,
    edit: { originalLineCount: total, applied: { start: startLine, end, delta: replacement.length - (end - startLine + 1) } },
    result: ok(command.type, summary),
    ...(end !== endLine ? { warning: 'end-line-cut' as const } : {}),
    ...(relocation && !history ? { relocation } : {}),
    ...(relocated ? { relocated: { outbox: relocation?.outbox ?? throughOutbox, from: [startLine, end] as [number, number], to: [startLine + moved, end + moved] as [number, number] } } : {}),
    ...(stale !== undefined ? { stale } : {}),
  };
}

/** Why an edit written for lines that changed since the LLM read them is refused, with those lines as they are now. */
function conflictSummary(file: string, start: number, end: number, hunks: readonly Hunk[], current: readonly string[]): string {
  const shown: string[] = [];
  for (const hunk of hunks) {
    if (hunk.afterEnd === hunk.afterStart) shown.push(`  (lines ${hunk.beforeStart + 1}-${hunk.beforeEnd} you read are gone)`);
    for (let i = hunk.afterStart; i < hunk.afterEnd && shown.length < 12; i++) shown.push(`  ${i + 1}: ${current[i]}`);
  }
  return [`Lines ${start}-${end} of '${file}' changed since you read the file; not edited. They are now:`, ...shown.slice(0, 12), 'Read the file again and send the edit for its current lines.'].join('\n');
}

async function planDelete(workspace: Workspace, command: PathOnlyCommand, state: AnswerState): Promise<Plan> {
  const target = await resolveOrFail(workspace, command, state, 'entry');
  if ('kind' in target) return target;
  const planned = state.simulated(target.real);
  if (planned === null) return failPlan(command, 'not-found', `File '${command.path}' not found`);
  if (planned === undefined) {
    const entry = await entryAt(workspace, target.real);
    if (entry === 'missing') return failPlan(command, 'not-found', `File '${command.path}' not found`);
    if (entry === 'directory') return failPlan(command, 'is-folder', `'${command.path}' is a folder; DELETE_FILE deletes files only`);
    if (entry === 'symlink') {
      // Deleting removes the link itself, never what it points to.
      return { kind: 'delete', command, target, before: undefined, result: ok(command.type, `Deleted '${command.path}'`) };
    }
    if (entry !== 'file') return failPlan(command, 'not-regular', notRegularSummary(command.path, entry));
  }
  const file = await readFileState(workspace, state, target.real);
  return {
    kind: 'delete',
    command,
    target,
    before: file.kind === 'file' ? file.text : undefined,
    result: ok(command.type, `Deleted '${command.path}'`),
  };
}

async function planRead(workspace: Workspace, command: PathOnlyCommand, state: AnswerState): Promise<Plan> {
  const target = await resolveOrFail(workspace, command, state);
  if ('kind' in target) return target;
  const planned = state.simulated(target.real);
  if (planned === null) return failPlan(command, 'not-found', `File '${command.path}' not found`);
  if (planned === undefined) {
    const entry = await entryAt(workspace, target.real);
    if (entry === 'missing') return failPlan(command, 'not-found', `File '${command.path}' not found`);
    if (entry === 'directory') return failPlan(command, 'is-folder', `'${command.path}' is a folder`);
    if (entry !== 'file') return failPlan(command, 'not-regular', notRegularSummary(command.path, entry));
  }
  return { kind: 'read', command, target, result: ok(command.type, `Queued '${command.path}' for next outbox`) };
}

/** A block of the answer and its plan. */
export interface PlannedBlock {
  /** Its position among the parse result's commands (and among their block keys). */
  index: number;
  command: Command;
  plan: Plan;
  /**
   * An EDIT_FILE, the first block of the answer to touch its file, whose file changed after the
   * outbox the answer replies to was written: that outbox (its line numbers may point at other
   * lines now). Only with the `stale` option.
   */
  staleSince?: string;
  /** What carrying it out gave (only with `carryOut`). */
  outcome?: Outcome;
}

/** An answer's blocks and parse errors, in the order they appear. */
export type AnswerItem = PlannedBlock | { error: ParseError; outcome: Outcome };

/** Where the answer is: whether an edited file is stale depends on the session it belongs to. */
export interface StaleCheck {
  /** Only an answer in a session root has outboxes (what the LLM saw) to compare with. */
  target: AnswerTarget;
  /** The answer's file: the outbox it replies to is the newest one not newer than it. */
  answerPath: string | undefined;
}

export interface PlanAnswerOptions {
  /** Where the answer stands: the blocks applied so far (a simulation plans on a copy). */
  state?: AnswerState;
  /** Commands not to plan (handled already, or not asked for), by index. */
  skip?: (index: number) => boolean;
  /**
   * Commands applied already, by index: not planned again, but what they left (line shifts,
   * reads, DONE) is taken into the state, so the blocks after them plan as they would have.
   */
  settled?: (index: number) => Replay | undefined;
  /** Report EDIT_FILE blocks whose file changed after the outbox the answer replies to. */
  stale?: StaleCheck;
  /**
   * Carries out each block before the next is planned, recording it in `state` (see applyPlan):
   * executing an answer. Without it, nothing is touched: each plan is recorded in a simulation.
   */
  carryOut?: (block: PlannedBlock) => Promise<Outcome>;
  /** Called after each item, in order (for output as it happens). */
  onItem?: (item: AnswerItem) => void;
}

export interface AnswerPlan {
  items: AnswerItem[];
  /** The blocks planned (the items that are not parse errors). */
  blocks: PlannedBlock[];
  /** The state after them: in a simulation, each touched file's planned text (`simulated`). */
  state: AnswerState;
}

/**
 * Plans an answer's blocks in order, each seeing the files as the blocks before it leave them. A
 * simulation cannot foresee RUN_COMMAND: its plan is only the command.
 */
export async function planAnswer(workspace: Workspace, answer: string | ParseResult, options: PlanAnswerOptions = {}): Promise<AnswerPlan> {
  const parsed = typeof answer === 'string' ? parseAnswer(answer) : answer;
  const start = options.state ?? new AnswerState();
  const state = options.carryOut ? start : start.fork();
  const sessionRoot = options.stale?.target.sessionRoot;
  let seen: Promise<SeenFiles | undefined> | undefined;
  const context: PlanContext = sessionRoot === undefined ? {} : { seen: () => (seen ??= seenFor(sessionRoot, options.stale!.answerPath)) };
  const indexes = new Map(parsed.commands.map((command, index) => [command, index]));
  const items: AnswerItem[] = [];
  const blocks: PlannedBlock[] = [];
  for (const entry of inOrder(parsed)) {
    let item: AnswerItem;
    if ('error' in entry) {
      item = { error: entry.error, outcome: parseErrorOutcome(entry.error) };
    } else {
      const index = indexes.get(entry.command)!;
      const settled = options.settled?.(index);
      if (settled) {
        state.replay(settled);
        continue;
      }
      if (options.skip?.(index)) continue;
      const plan = await planCommand(workspace, entry.command, state, context);
      const block: PlannedBlock = { index, command: entry.command, plan };
      if (plan.kind === 'write' && plan.stale !== undefined) block.staleSince = plan.stale;
      if (options.carryOut) block.outcome = await options.carryOut(block);
      // Recording a RUN_COMMAND only forgets resolved folders, since a command may change them;
      // nothing runs in a simulation, so they stay valid.
      else if (plan.kind !== 'run') state.record(plan);
      blocks.push(block);
      item = block;
    }
    items.push(item);
    options.onItem?.(item);
  }
  return { items, blocks, state };
}

/** What the LLM saw with the outbox the answer replies to, when Belay recorded it. */
async function seenFor(sessionRoot: string, answerPath: string | undefined): Promise<SeenFiles | undefined> {
  const outbox = await repliedOutbox(sessionRoot, answerPath);
  return outbox === undefined ? undefined : readSeen(outbox);
}
