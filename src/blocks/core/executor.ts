// Executes parsed commands against a workspace. Each command is first *planned* (what it would do:
// the target resolved through the sandbox, the file's text before and after, or why it fails)
// and then *applied* (one atomic write, a delete, a shell command). The editor previews plans as
// diffs and applies them through its own edits; `belay blocks apply` applies them here. Both then
// report the same result lines.
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { writeFileAtomic } from '../../shared/atomic.ts';
import { runBounded } from '../../shared/process.ts';
import { countFileLines, joinFileLines, replaceLines, splitFileLines } from './lines.ts';
import { parseAnswer } from './parser.ts';
import { failed, ok, OUTPUT_TRUNCATED_MARKER, parseErrorResult, type CommandResult } from './results.ts';
import { errorText, resolveInWorkspace, type FolderCache, type ResolvedPath, type Workspace } from './sandbox.ts';
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

export const DEFAULT_RUN_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_OUTPUT_CHARS = 4000;

/** An EDIT_FILE already applied in this answer, in the file's line numbers from before the answer. */
interface AppliedEdit {
  start: number;
  end: number;
  /** Lines added (positive) or removed (negative). */
  delta: number;
}

interface FileHistory {
  /** Lines the file had when this answer first edited it (or when this answer created it). */
  originalLineCount: number;
  edits: AppliedEdit[];
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
    }
  | { kind: 'delete'; command: PathOnlyCommand; target: ResolvedPath; before: string | undefined; result: CommandResult }
  | { kind: 'read'; command: PathOnlyCommand; target: ResolvedPath; result: CommandResult }
  | { kind: 'run'; command: TextCommand }
  | { kind: 'message' | 'done'; command: TextCommand; result: CommandResult }
  | { kind: 'fail'; command: Command; result: CommandResult };

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

  constructor(options: { simulate?: boolean; cacheFolders?: boolean } = {}) {
    this.overlay = options.simulate ? new Map() : undefined;
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
    switch (plan.kind) {
      case 'write': {
        const real = plan.target.real;
        if (plan.edit) {
          const history = this.histories.get(real) ?? { originalLineCount: plan.edit.originalLineCount, edits: [] };
          history.edits.push(plan.edit.applied);
          this.histories.set(real, history);
        } else {
          this.histories.set(real, { originalLineCount: countFileLines(plan.after), edits: [] });
        }
        this.overlay?.set(real, plan.after);
        return;
      }
      case 'delete':
        this.histories.delete(plan.target.real);
        this.overlay?.set(plan.target.real, null);
        this.folders?.clear();
        return;
      case 'read':
        if (!this.readFileRequests.includes(plan.target.relative)) this.readFileRequests.push(plan.target.relative);
        return;
      case 'done':
        this.done = true;
        return;
      case 'run':
        this.folders?.clear();
        return;
      default:
        return;
    }
  }
}

type FileState =
  | { kind: 'missing' }
  | { kind: 'directory' }
  /** `text` is undefined for a file that is not UTF-8 text. */
  | { kind: 'file'; text: string | undefined; mode: number | undefined };

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

async function readFileState(state: AnswerState, real: string): Promise<FileState> {
  const planned = state.simulated(real);
  if (planned === null) return { kind: 'missing' };
  if (planned !== undefined) return { kind: 'file', text: planned, mode: undefined };
  let data: Buffer;
  try {
    data = await fs.readFile(real);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { kind: 'missing' };
    if (code === 'EISDIR') return { kind: 'directory' };
    throw error;
  }
  const mode = (await fs.stat(real)).mode & 0o7777;
  if (data.includes(0)) return { kind: 'file', text: undefined, mode };
  try {
    return { kind: 'file', text: utf8.decode(data), mode };
  } catch {
    return { kind: 'file', text: undefined, mode };
  }
}

/** Computes what a command would do, touching nothing. */
export async function planCommand(workspace: Workspace, command: Command, state: AnswerState): Promise<Plan> {
  try {
    switch (command.type) {
      case 'CREATE_FILE':
        return await planCreate(workspace, command, state);
      case 'EDIT_FILE':
        return await planEdit(workspace, command, state);
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
    return { kind: 'fail', command, result: failed(command.type, `Could not use '${'path' in command ? command.path : ''}': ${errorText(error)}`) };
  }
}

async function resolveOrFail(workspace: Workspace, command: Command & { path: string }, state: AnswerState, final: 'follow' | 'entry' = 'follow') {
  const resolution = await resolveInWorkspace(workspace, command.path, state.folders ? { final, folders: state.folders } : { final });
  if (resolution.ok) return resolution.path;
  const plan: Plan = { kind: 'fail', command, result: failed(command.type, resolution.summary) };
  return plan;
}

async function planCreate(workspace: Workspace, command: CreateFileCommand, state: AnswerState): Promise<Plan> {
  const target = await resolveOrFail(workspace, command, state);
  if ('kind' in target) return target;
  const file: FileState = target.exists || state.simulated(target.real) !== undefined ? await readFileState(state, target.real) : { kind: 'missing' };
  if (file.kind === 'directory') return { kind: 'fail', command, result: failed(command.type, `'${command.path}' is a folder`) };
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

async function planEdit(workspace: Workspace, command: EditFileCommand, state: AnswerState): Promise<Plan> {
  const target = await resolveOrFail(workspace, command, state);
  if ('kind' in target) return target;
  const fail = (summary: string): Plan => ({ kind: 'fail', command, result: failed(command.type, summary) });
  const file = await readFileState(state, target.real);
  if (file.kind === 'missing') return fail(`File '${command.path}' not found`);
  if (file.kind === 'directory') return fail(`'${command.path}' is a folder`);
  if (file.text === undefined) return fail(`File '${command.path}' is not UTF-8 text; replace it with CREATE_FILE instead`);
  const lines = splitFileLines(file.text);
  const history = state.history(target.real);
  const total = history?.originalLineCount ?? lines.lines.length;
  const { startLine, endLine } = command;
  if (startLine > total) return fail(`Invalid line range ${startLine}-${endLine} for file with ${total} lines`);
  const end = Math.min(endLine, total);
  const earlier = history?.edits ?? [];
  const overlap = earlier.find((edit) => startLine <= edit.end && end >= edit.start);
  if (overlap) {
    return fail(`Lines ${startLine}-${end} overlap lines ${overlap.start}-${overlap.end} edited earlier in this answer`);
  }
  const shift = earlier.reduce((sum, edit) => (edit.end < startLine ? sum + edit.delta : sum), 0);
  const currentStart = startLine + shift;
  const currentEnd = Math.min(end + shift, lines.lines.length);
  if (currentStart > lines.lines.length) {
    return fail(`Invalid line range ${startLine}-${endLine}: the file has ${lines.lines.length} lines now (it changed during this answer)`);
  }
  const replacement = command.body.lineCount === 0 ? [] : command.body.text.split('\n');
  const after = joinFileLines(replaceLines(lines, currentStart - 1, currentEnd, replacement));
  let summary = `Edited '${command.path}' lines ${startLine}-${end}`;
  if (end !== endLine) summary += ` (end_line ${endLine} is past the end of the file, cut to ${total})`;
  if (shift !== 0) summary += ` (at line ${currentStart} after earlier edits in this answer)`;
  return {
    kind: 'write',
    command,
    target,
    before: file.text,
    after,
    mode: file.mode,
    edit: { originalLineCount: total, applied: { start: startLine, end, delta: replacement.length - (end - startLine + 1) } },
    result: ok(command.type, summary),
  };
}

async function planDelete(workspace: Workspace, command: PathOnlyCommand, state: AnswerState): Promise<Plan> {
  const target = await resolveOrFail(workspace, command, state, 'entry');
  if ('kind' in target) return target;
  const fail = (summary: string): Plan => ({ kind: 'fail', command, result: failed(command.type, summary) });
  const planned = state.simulated(target.real);
  if (planned === null) return fail(`File '${command.path}' not found`);
  if (planned === undefined) {
    let stats;
    try {
      stats = await fs.lstat(target.real);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return fail(`File '${command.path}' not found`);
      throw error;
    }
    if (stats.isDirectory()) return fail(`'${command.path}' is a folder; DELETE_FILE deletes files only`);
    if (stats.isSymbolicLink()) {
      // Deleting removes the link itself, never what it points to.
      return { kind: 'delete', command, target, before: undefined, result: ok(command.type, `Deleted '${command.path}'`) };
    }
  }
  const file = await readFileState(state, target.real);
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
  if (planned === null) return { kind: 'fail', command, result: failed(command.type, `File '${command.path}' not found`) };
  if (planned === undefined) {
    try {
      const stats = await fs.stat(target.real);
      if (stats.isDirectory()) return { kind: 'fail', command, result: failed(command.type, `'${command.path}' is a folder`) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'fail', command, result: failed(command.type, `File '${command.path}' not found`) };
      throw error;
    }
  }
  return { kind: 'read', command, target, result: ok(command.type, `Queued '${command.path}' for next outbox`) };
}

export interface ApplyOptions {
  /** RUN_COMMAND timeout (default 30 s): the command's whole process tree is killed after it. */
  runTimeoutMs?: number;
  /** RUN_COMMAND output kept, stdout then stderr (default 4000 characters). */
  maxOutputChars?: number;
  env?: NodeJS.ProcessEnv;
  /** Stops a running command (its process tree is killed). */
  signal?: AbortSignal;
}

/** Carries out a plan: all or nothing, files written atomically. Records it in `state` when it succeeds. */
export async function applyPlan(workspace: Workspace, plan: Plan, state: AnswerState, options: ApplyOptions = {}): Promise<CommandResult> {
  switch (plan.kind) {
    case 'fail':
      return plan.result;
    case 'run':
      state.record(plan);
      return runCommand(workspace, plan.command.body.text, options);
    case 'write': {
      try {
        await writeCreatingFolders(plan.target.real, plan.after, plan.mode);
      } catch (error) {
        return failed(plan.command.type, `Could not write '${plan.command.path}': ${errorText(error)}`);
      }
      state.record(plan);
      return plan.result;
    }
    case 'delete':
      try {
        await fs.unlink(plan.target.real);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return failed(plan.command.type, `File '${plan.command.path}' not found`);
        return failed(plan.command.type, `Could not delete '${plan.command.path}': ${errorText(error)}`);
      }
      state.record(plan);
      return plan.result;
    default:
      state.record(plan);
      return plan.result;
  }
}

/**
 * Writes atomically; missing parent folders are created, and removed again if the write fails.
 * Not flushed per file (`durable: false`): an answer may create hundreds of files, and the editor's
 * own saves promise no more.
 */
async function writeCreatingFolders(real: string, text: string, mode: number | undefined): Promise<void> {
  try {
    await writeFileAtomic(real, text, { mode, durable: false });
    return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const created = await fs.mkdir(path.dirname(real), { recursive: true });
  try {
    await writeFileAtomic(real, text, { mode, durable: false });
  } catch (error) {
    if (created !== undefined) await fs.rm(created, { recursive: true, force: true });
    throw error;
  }
}

/** How a shell command is shown in a result line: its first line, shortened. */
export function commandLabel(command: string): string {
  const firstLine = command.split('\n', 1)[0]!;
  const more = firstLine.length < command.length;
  const label = firstLine.length > 120 ? `${firstLine.slice(0, 117)}...` : firstLine;
  return more ? `${label} …` : label;
}

/** RUN_COMMAND: `/bin/sh -c` in the workspace, in its own process group, bounded in time and memory. */
export async function runCommand(workspace: Workspace, command: string, options: ApplyOptions = {}): Promise<CommandResult> {
  const timeoutMs = options.runTimeoutMs ?? DEFAULT_RUN_TIMEOUT_MS;
  const limit = options.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
  const label = commandLabel(command);
  let stdout = '';
  let stderr = '';
  let total = 0;
  const run = await runBounded({
    argv: ['/bin/sh', '-c', command],
    cwd: workspace.realRoot,
    env: options.env ?? process.env,
    timeoutMs,
    maxOutputChars: limit,
    onStdout: (chunk) => {
      total += chunk.length;
      if (stdout.length <= limit) stdout += chunk.slice(0, limit + 1 - stdout.length);
    },
    onStderr: (chunk) => {
      total += chunk.length;
      if (stderr.length <= limit) stderr += chunk.slice(0, limit + 1 - stderr.length);
    },
    ...(options.signal ? { signal: options.signal } : {}),
  });
  let output = stdout + stderr;
  if (total > limit) output = `${output.slice(0, limit)}\n${OUTPUT_TRUNCATED_MARKER}`;
  output = output.trimEnd();
  const withOutput = output === '' ? undefined : output;
  if (run.spawnError) return failed('RUN_COMMAND', `Could not run '${label}': ${errorText(run.spawnError)}`, withOutput);
  if (run.timedOut) {
    return failed('RUN_COMMAND', `Ran '${label}': timed out after ${formatSeconds(timeoutMs)}, process tree killed`, withOutput);
  }
  if (run.aborted) return failed('RUN_COMMAND', `Ran '${label}': stopped before it finished`, withOutput);
  if (run.exitCode === null) return failed('RUN_COMMAND', `Ran '${label}' (killed by ${run.signal ?? 'a signal'})`, withOutput);
  const summary = `Ran '${label}' (exit code ${run.exitCode})`;
  return run.exitCode === 0 ? ok('RUN_COMMAND', summary, withOutput) : failed('RUN_COMMAND', summary, withOutput);
}

function formatSeconds(ms: number): string {
  const seconds = ms / 1000;
  return `${Number.isInteger(seconds) ? seconds : seconds.toFixed(1)} s`;
}

/** One executed item: a command or a parse error, with its result. */
export type ExecutedItem = { command: Command; result: CommandResult } | { error: ParseError; result: CommandResult };

export interface ExecutionReport {
  items: ExecutedItem[];
  results: CommandResult[];
  /** DONE was among the commands (later commands still ran). */
  done: boolean;
  /** Files READ_FILE queued for the next outbox, workspace-relative, in order, once each. */
  readFileRequests: string[];
  /** Every command succeeded and nothing failed to parse. */
  success: boolean;
}

export interface ExecuteOptions extends ApplyOptions {
  /** Called after each item, in order (for output as it happens). */
  onResult?: (item: ExecutedItem) => void;
}

/** Executes an answer (text or parse result) in order: each parse error is a PARSE_ERROR result, each command planned and applied. */
export async function executeAnswer(workspace: Workspace, answer: string | ParseResult, options: ExecuteOptions = {}): Promise<ExecutionReport> {
  const parsed = typeof answer === 'string' ? parseAnswer(answer) : answer;
  const state = new AnswerState({ cacheFolders: true });
  const items: ExecutedItem[] = [];
  for (const entry of inOrder(parsed)) {
    let item: ExecutedItem;
    if ('error' in entry) {
      item = { error: entry.error, result: parseErrorResult(entry.error) };
    } else {
      const plan = await planCommand(workspace, entry.command, state);
      item = { command: entry.command, result: await applyPlan(workspace, plan, state, options) };
    }
    items.push(item);
    options.onResult?.(item);
  }
  const results = items.map((item) => item.result);
  return { items, results, done: state.done, readFileRequests: state.readFileRequests, success: results.every((r) => r.success) };
}

/**
 * Plans a whole answer without touching anything: each command sees the files as the commands
 * before it would leave them. RUN_COMMAND cannot be foreseen; its plan is only the command.
 */
export async function planAnswer(workspace: Workspace, answer: string | ParseResult): Promise<Array<{ command: Command; plan: Plan } | { error: ParseError; result: CommandResult }>> {
  const parsed = typeof answer === 'string' ? parseAnswer(answer) : answer;
  const state = new AnswerState({ simulate: true });
  const planned: Array<{ command: Command; plan: Plan } | { error: ParseError; result: CommandResult }> = [];
  for (const entry of inOrder(parsed)) {
    if ('error' in entry) {
      planned.push({ error: entry.error, result: parseErrorResult(entry.error) });
      continue;
    }
    const plan = await planCommand(workspace, entry.command, state);
    state.record(plan);
    planned.push({ command: entry.command, plan });
  }
  return planned;
}
