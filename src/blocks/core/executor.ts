// Carries out planned blocks (plan.ts): one atomic write, a delete, a shell command. The editor
// carries plans out through its own edits instead; `belay blocks apply` and the session loop
// execute a whole answer here. Both report the same result lines.
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { writeFileAtomic } from '../../shared/atomic.ts';
import { runBounded, shellCommand } from '../../shared/process.ts';
import { AnswerState, planAnswer, type AnswerItem, type Plan, type StaleCheck } from './plan.ts';
import { DEFAULT_MAX_OUTPUT_CHARS, DEFAULT_RUN_TIMEOUT_SECONDS } from './protocol.ts';
import { failure, ok, OUTPUT_TRUNCATED_MARKER, type CommandResult, type Outcome } from './results.ts';
import { errorText, type Workspace } from './sandbox.ts';
import type { Command, ParseError, ParseResult } from './syntax.ts';

export const DEFAULT_RUN_TIMEOUT_MS = DEFAULT_RUN_TIMEOUT_SECONDS * 1000;

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
export async function applyPlan(workspace: Workspace, plan: Plan, state: AnswerState, options: ApplyOptions = {}): Promise<Outcome> {
  switch (plan.kind) {
    case 'fail':
      return { result: plan.result, code: plan.code };
    case 'run':
      state.record(plan);
      return runCommand(workspace, plan.command.body.text, options);
    case 'write': {
      try {
        await writeCreatingFolders(plan.target.real, plan.after, plan.mode);
      } catch (error) {
        return failure('write-failed', plan.command.type, `Could not write '${plan.command.path}': ${errorText(error)}`);
      }
      state.record(plan);
      return { result: plan.result };
    }
    case 'delete':
      try {
        await fs.unlink(plan.target.real);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return failure('not-found', plan.command.type, `File '${plan.command.path}' not found`);
        return failure('delete-failed', plan.command.type, `Could not delete '${plan.command.path}': ${errorText(error)}`);
      }
      state.record(plan);
      return { result: plan.result };
    default:
      state.record(plan);
      return { result: plan.result };
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
function commandLabel(command: string): string {
  const firstLine = command.split('\n', 1)[0]!;
  const more = firstLine.length < command.length;
  const label = firstLine.length > 120 ? `${firstLine.slice(0, 117)}...` : firstLine;
  return more ? `${label} …` : label;
}

/** RUN_COMMAND: `/bin/sh -c` (`cmd.exe /c` on Windows) in the workspace, in its own process group, bounded in time and memory. */
export async function runCommand(workspace: Workspace, command: string, options: ApplyOptions = {}): Promise<Outcome> {
  const timeoutMs = options.runTimeoutMs ?? DEFAULT_RUN_TIMEOUT_MS;
  const limit = options.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
  const label = commandLabel(command);
  let stdout = '';
  let stderr = '';
  let total = 0;
  const run = await runBounded({
    ...shellCommand(command),
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
  if (run.spawnError) return failure('spawn-failed', 'RUN_COMMAND', `Could not run '${label}': ${errorText(run.spawnError)}`, withOutput);
  if (run.timedOut) {
    return failure('timeout', 'RUN_COMMAND', `Ran '${label}': timed out after ${formatSeconds(timeoutMs)}, process tree killed`, withOutput);
  }
  if (run.aborted) return failure('stopped', 'RUN_COMMAND', `Ran '${label}': stopped before it finished`, withOutput);
  if (run.exitCode === null) return failure('killed', 'RUN_COMMAND', `Ran '${label}' (killed by ${run.signal ?? 'a signal'})`, withOutput);
  const summary = `Ran '${label}' (exit code ${run.exitCode})`;
  return run.exitCode === 0 ? { result: ok('RUN_COMMAND', summary, withOutput) } : failure('exit-code', 'RUN_COMMAND', summary, withOutput);
}

function formatSeconds(ms: number): string {
  const seconds = ms / 1000;
  return `${Number.isInteger(seconds) ? seconds : seconds.toFixed(1)} s`;
}

/** One executed item: a command or a parse error, with its result (and code, when it failed). */
export type ExecutedItem = ({ command: Command } | { error: ParseError }) & Outcome;

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
  /** Judge edits against what the LLM saw (the session loop): see PlanAnswerOptions.stale. */
  stale?: StaleCheck;
}

/** Executes an answer (text or parse result) in order: each parse error is a PARSE_ERROR result, each command planned and carried out. */
export async function executeAnswer(workspace: Workspace, answer: string | ParseResult, options: ExecuteOptions = {}): Promise<ExecutionReport> {
  const state = new AnswerState({ cacheFolders: true });
  const items: ExecutedItem[] = [];
  const executed = (item: AnswerItem): ExecutedItem => ('error' in item ? { error: item.error, ...item.outcome } : { command: item.command, ...item.outcome! });
  await planAnswer(workspace, answer, {
    state,
    ...(options.stale ? { stale: options.stale } : {}),
    carryOut: (block) => applyPlan(workspace, block.plan, state, options),
    onItem: (item) => {
      items.push(executed(item));
      options.onResult?.(items.at(-1)!);
    },
  });
  const results = items.map((item) => item.result);
  return { items, results, done: state.done, readFileRequests: state.readFileRequests, success: results.every((r) => r.success) };
}
