// Carries out planned blocks (plan.ts): one atomic write, a delete, a shell command. The editor
// carries plans out through its own edits instead; `belay blocks apply` and the session loop
// execute a whole answer here. Both report the same result lines.
// Writes and deletes go through a confined root (src/shared/confined.ts): whatever a command left
// running does to the folders meanwhile, nothing is written, replaced or deleted outside the
// workspace, and nothing but a regular file (or a link, for a delete) is replaced or deleted.
import { randomBytes } from 'node:crypto';
import { ConfinedError, ConfinedRoot } from '../../shared/confined.ts';
import { detectSandbox, EXECUTOR_IN_SANDBOX, prepareSandbox, shellDescription, type PreparedSandbox, type SandboxSupport, type ShellPolicy } from '../../shared/commandSandbox.ts';
import { executorBinary } from '../../shared/executor/binary.ts';
import { startExecutor, type ChannelExecutor } from '../../shared/executor/client.ts';
import { containedArgv, detectContainment, RUN_MARK_VARIABLE, sweepMarked, type Containment } from '../../shared/containment.ts';
import { runBounded, shellCommand, type BoundedRunOptions, type ChildOptions } from '../../shared/process.ts';
import { notRegularSummary } from './files.ts';
import { AnswerState, planAnswer, type AnswerItem, type Plan, type StaleCheck } from './plan.ts';
import { DEFAULT_MAX_OUTPUT_CHARS, DEFAULT_RUN_TIMEOUT_SECONDS } from './protocol.ts';
import { failure, ok, OUTPUT_TRUNCATED_MARKER, type CommandResult, type Outcome } from './results.ts';
import { errorText, type Workspace } from './sandbox.ts';
import type { Command, ParseError, ParseResult } from './syntax.ts';

export const DEFAULT_RUN_TIMEOUT_MS = DEFAULT_RUN_TIMEOUT_SECONDS * 1000;

export interface ApplyOptions {
  /**
   * The workspace opened for confined writes, shared by the blocks of one answer (executeAnswer
   * opens one); without it, each write or delete opens its own.
   */
  confined?: ConfinedRoot;
  /** RUN_COMMAND timeout (default 30 s): the command's whole process tree is killed after it. */
  runTimeoutMs?: number;
  /** RUN_COMMAND output kept, stdout then stderr (default 4000 characters). */
  maxOutputChars?: number;
  env?: NodeJS.ProcessEnv;
  /** Stops a running command (its process tree is killed). */
  signal?: AbortSignal;
  /**
   * How RUN_COMMAND is kept from leaving processes behind (src/shared/containment.ts); detected
   * when absent (a few milliseconds: executeAnswer detects it once per answer).
   */
  containment?: Containment | Promise<Containment>;
  /**
   * How RUN_COMMAND runs (src/shared/commandSandbox.ts): sandboxed with the network off unless
   * said otherwise; `unsandboxed` only when the person chose it.
   */
  shell?: ShellPolicy;
  /** Whether the sandbox works here; detected when absent (executeAnswer detects it once per answer). */
  sandbox?: SandboxSupport | Promise<SandboxSupport>;
  /**
   * One sandbox and executor shared by several commands (executeAnswer: one per answer, as the
   * issue's one executor per session and phase); without it, each command starts its own.
   */
  sharedSandbox?: SharedSandbox;
}

/** A sandbox with its executor running, for the commands of one answer. */
interface RunningSandbox {
  sandbox: PreparedSandbox;
  executor: ChannelExecutor;
  /** Its channel has ended (the executor exited or was killed from inside). */
  ended: boolean;
}

/**
 * The sandbox of an answer's commands: started with the first, reused by the next ones (their
 * /tmp is the answer's own), started again should a command have ended its executor, closed with
 * the answer (every process in it killed, its empty file removed).
 */
export class SharedSandbox {
  private running: Promise<RunningSandbox> | undefined;
  private readonly start: () => Promise<RunningSandbox>;

  constructor(support: Extract<SandboxSupport, { ok: true }>, workspace: string, policy: ShellPolicy, env: NodeJS.ProcessEnv, executor: string) {
    this.start = async () => {
      const sandbox = await prepareSandbox(support, workspace, policy, env, executor);
      try {
        const running: RunningSandbox = { sandbox, executor: await startExecutor({ argv: [...sandbox.prefix, EXECUTOR_IN_SANDBOX], cwd: workspace, env: sandbox.env }), ended: false };
        void running.executor.closed.then(() => (running.ended = true));
        return running;
      } catch (error) {
        await sandbox.dispose();
        throw error;
      }
    };
  }

  /** The running executor; a new one when the last ended (a command may kill it: it runs inside). */
  async get(): Promise<RunningSandbox> {
    const current = await this.running?.catch(() => undefined);
    if (current && !current.ended) return current;
    if (current) await current.sandbox.dispose();
    this.running = this.start();
    return this.running;
  }

  async close(): Promise<void> {
    const current = await this.running?.catch(() => undefined);
    this.running = undefined;
    if (!current) return;
    await current.executor.close();
    await current.sandbox.dispose();
  }
}

/** The shell RUN_COMMAND gets when nobody said: sandboxed, no network. */
export const DEFAULT_SHELL: ShellPolicy = { mode: 'sandboxed', network: false };

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
        // Not flushed per file (`durable: false`): an answer may create hundreds of files, and the
        // editor's own saves promise no more. A crash still never leaves a half-written file.
        await confinedTo(workspace, options, (confined) => confined.writeAtomic(plan.target.real, plan.after, { mode: plan.mode, durable: false, createFolders: true }));
      } catch (error) {
        return fileFailure(error, plan.command.type, plan.command.path, 'write-failed', `Could not write '${plan.command.path}'`);
      }
      state.record(plan);
      return { result: plan.result };
    }
    case 'delete':
      try {
        await confinedTo(workspace, options, (confined) => confined.unlink(plan.target.real));
      } catch (error) {
        return fileFailure(error, plan.command.type, plan.command.path, 'delete-failed', `Could not delete '${plan.command.path}'`);
      }
      state.record(plan);
      return { result: plan.result };
    default:
      state.record(plan);
      return { result: plan.result };
  }
}

function confinedTo<T>(workspace: Workspace, options: ApplyOptions, work: (confined: ConfinedRoot) => Promise<T>): Promise<T> {
  return options.confined ? work(options.confined) : ConfinedRoot.with(workspace.realRoot, work);
}

/** A write or delete that failed, as the protocol reports it: what was refused, and why. */
function fileFailure(error: unknown, type: Plan['command']['type'], given: string, otherwise: 'write-failed' | 'delete-failed', doing: string): Outcome {
  if (error instanceof ConfinedError) {
    switch (error.code) {
      case 'ENOENT':
        return failure('not-found', type, `File '${given}' not found`);
      case 'EISDIR':
        return failure('is-folder', type, `'${given}' is a folder`);
      case 'ENOTDIR':
        return failure('through-file', type, `Path '${given}' goes through a file as if it were a folder`);
      case 'ENOTREG':
        return failure('not-regular', type, notRegularSummary(given, error.kind ?? 'device'));
      case 'ECHANGED':
        return failure('changed', type, `${doing}: a folder on its path was replaced or moved while the answer was applied (another process is changing the workspace); nothing was written there`);
      default:
        break;
    }
  }
  return failure(otherwise, type, `${doing}: ${errorText(error)}`);
}

/** How a shell command is shown in a result line: its first line, shortened. */
function commandLabel(command: string): string {
  const firstLine = command.split('\n', 1)[0]!;
  const more = firstLine.length < command.length;
  const label = firstLine.length > 120 ? `${firstLine.slice(0, 117)}...` : firstLine;
  return more ? `${label} …` : label;
}

/**
 * RUN_COMMAND: `/bin/sh -c` (`cmd.exe /c` on Windows) in the workspace, bounded in time and memory.
 * By default in the sandbox (src/shared/commandSandbox.ts): the workspace and a private /tmp
 * writable, credentials hidden, the network as the policy says, an allowlisted environment.
 * Unsandboxed (chosen, or no sandbox here) it runs as the person, its summary says so. Nothing it
 * starts outlives it: on Linux it runs in its own PID namespace, elsewhere its process tree is
 * killed when it ends (see src/shared/containment.ts).
 */
export async function runCommand(workspace: Workspace, command: string, options: ApplyOptions = {}): Promise<Outcome> {
  const timeoutMs = options.runTimeoutMs ?? DEFAULT_RUN_TIMEOUT_MS;
  const limit = options.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
  const label = commandLabel(command);
  const policy = options.shell ?? DEFAULT_SHELL;
  const support = policy.mode === 'sandboxed' ? await (options.sandbox ?? detectSandbox()) : undefined;
  const shell = shellCommand(command);
  // Every process of the run carries a mark the sweep below looks for: without a namespace, to
  // find what escaped the tree; with one, to wait until the kernel has finished killing it.
  const mark = randomBytes(8).toString('hex');
  const env = options.env ?? process.env;
  let argv: [string, ...string[]];
  let childEnv: NodeJS.ProcessEnv;
  let namespaced: boolean;
  let sandbox: PreparedSandbox | undefined;
  // In the sandbox, its one program is the executor (src/shared/executor/), which runs the shell
  // as one of its commands; where the executor is not built, bubblewrap runs the shell itself.
  let executor: string | undefined;
  let shared: RunningSandbox | undefined;
  if (support?.ok && options.sharedSandbox) {
    try {
      shared = await options.sharedSandbox.get();
    } catch (error) {
      return failure('spawn-failed', 'RUN_COMMAND', `Could not run '${label}': the sandbox could not be started: ${errorText(error)}`);
    }
    // The shell goes to the running executor (runThroughExecutor); no program of its own starts.
    argv = [EXECUTOR_IN_SANDBOX];
    childEnv = { ...shared.sandbox.env, [RUN_MARK_VARIABLE]: mark };
    namespaced = true;
  } else if (support?.ok) {
    executor = builtExecutor();
    try {
      sandbox = await prepareSandbox(support, workspace.realRoot, policy, env, executor);
    } catch (error) {
      return failure('spawn-failed', 'RUN_COMMAND', `Could not run '${label}': the sandbox could not be prepared: ${errorText(error)}`);
    }
    argv = [...sandbox.prefix, ...shell.argv];
    childEnv = { ...sandbox.env, [RUN_MARK_VARIABLE]: mark };
    namespaced = true;
  } else {
    const containment = await (options.containment ?? detectContainment());
    argv = containedArgv(containment, shell.argv);
    childEnv = { ...env, [RUN_MARK_VARIABLE]: mark };
    namespaced = containment.kind === 'namespace';
  }
  let stdout = '';
  let stderr = '';
  let total = 0;
  const bounded: BoundedRunOptions & ChildOptions = {
    argv,
    windowsVerbatimArguments: shell.windowsVerbatimArguments,
    cwd: workspace.realRoot,
    env: childEnv,
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
  };
  let run: CommandEnd;
  try {
    if (shared) run = await runThroughExecutor(shared.executor, shell.argv, bounded);
    else if (sandbox && executor) run = await runInNewExecutor(sandbox, shell.argv, bounded);
    else run = await runBounded(bounded);
    await sweepMarked(mark, { quietRounds: namespaced ? 1 : 3 });
  } finally {
    // The sandbox's empty file and its folder go, whatever happened.
    await sandbox?.dispose();
  }
  // Named in the result line wherever it shows (the terminal, the session loop, the next outbox).
  const how = sandbox || shared ? '' : ', unsandboxed';
  let output = stdout + stderr;
  if (total > limit) output = `${output.slice(0, limit)}\n${OUTPUT_TRUNCATED_MARKER}`;
  output = output.trimEnd();
  const withOutput = output === '' ? undefined : output;
  if (run.spawnError) return failure('spawn-failed', 'RUN_COMMAND', `Could not run '${label}': ${errorText(run.spawnError)}`, withOutput);
  if (run.timedOut) {
    return failure('timeout', 'RUN_COMMAND', `Ran '${label}'${how ? ' unsandboxed' : ''}: timed out after ${formatSeconds(timeoutMs)}, process tree killed`, withOutput);
  }
  if (run.aborted) return failure('stopped', 'RUN_COMMAND', `Ran '${label}'${how ? ' unsandboxed' : ''}: stopped before it finished`, withOutput);
  if (run.exitCode === null) return failure('killed', 'RUN_COMMAND', `Ran '${label}' (killed by ${run.signal ?? 'a signal'}${how})`, withOutput);
  const summary = `Ran '${label}' (exit code ${run.exitCode}${how})`;
  return run.exitCode === 0 ? { result: ok('RUN_COMMAND', summary, withOutput) } : failure('exit-code', 'RUN_COMMAND', summary, withOutput);
}

/** How a command ended, as runCommand reads it (the fields of runBounded's result it uses). */
interface CommandEnd {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  spawnError?: Error;
  timedOut: boolean;
  aborted: boolean;
}

/** The executor's program on this machine, when it is built (else bubblewrap runs the shell itself). */
function builtExecutor(): string | undefined {
  try {
    return executorBinary();
  } catch {
    return undefined;
  }
}

/** Runs the shell as the one command of an executor started for it in the sandbox, then ends that executor. */
async function runInNewExecutor(sandbox: PreparedSandbox, shellArgv: readonly [string, ...string[]], options: BoundedRunOptions & ChildOptions): Promise<CommandEnd> {
  if (options.signal?.aborted) return { exitCode: null, signal: null, timedOut: false, aborted: true };
  let executor: ChannelExecutor;
  try {
    executor = await startExecutor({ argv: [...sandbox.prefix, EXECUTOR_IN_SANDBOX], cwd: options.cwd, env: sandbox.env });
  } catch (error) {
    return { exitCode: null, signal: null, spawnError: error as Error, timedOut: false, aborted: false };
  }
  try {
    return await runThroughExecutor(executor, shellArgv, options);
  } finally {
    await executor.close();
  }
}

/**
 * Runs the shell as a command of an executor in the sandbox (bubblewrap's program): the executor
 * keeps the command in its own process group and kills its whole tree when it ends, at the
 * timeout (enforced inside too, a little later, should Belay's side stall) or when stopped.
 * Output flows with the executor's windows, kept as `options` says.
 */
function runThroughExecutor(executor: ChannelExecutor, shellArgv: readonly [string, ...string[]], options: BoundedRunOptions & ChildOptions): Promise<CommandEnd> {
  const { argv: _argv, cwd, env, windowsVerbatimArguments: _verbatim, ...bounds } = options;
  const defined = Object.fromEntries(Object.entries(env ?? {}).filter((entry): entry is [string, string] => entry[1] !== undefined));
  return runBounded({ ...bounds, start: (output) => executor.spawn({ argv: shellArgv, cwd, env: defined, timeoutMs: options.timeoutMs + 5000, ...output }) });
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
  /** How the answer's commands ran, in one line (shellDescription); absent when none ran. */
  shell?: string;
}

export interface ExecuteOptions extends ApplyOptions {
  /** Called after each item, in order (for output as it happens). */
  onResult?: (item: ExecutedItem) => void;
  /** Judge edits against what the LLM saw (the session loop): see PlanAnswerOptions.stale. */
  stale?: StaleCheck;
}

/** Executes an answer (text or parse result) in order: each parse error is a PARSE_ERROR result, each command planned and carried out. */
export async function executeAnswer(workspace: Workspace, answer: string | ParseResult, options: ExecuteOptions = {}): Promise<ExecutionReport> {
  // No folder cache: between two blocks, a process the answer started may change any folder.
  const state = new AnswerState();
  const items: ExecutedItem[] = [];
  const executed = (item: AnswerItem): ExecutedItem => ('error' in item ? { error: item.error, ...item.outcome } : { command: item.command, ...item.outcome! });
  // Detected on the first RUN_COMMAND, once for the answer (the containment only without the sandbox).
  let containment: Promise<Containment> | undefined;
  const contained = () => (containment ??= options.containment ? Promise.resolve(options.containment) : detectContainment());
  const policy = options.shell ?? DEFAULT_SHELL;
  let sandbox: Promise<SandboxSupport> | undefined;
  const sandboxed = () => (sandbox ??= options.sandbox ? Promise.resolve(options.sandbox) : policy.mode === 'sandboxed' ? detectSandbox() : Promise.resolve({ ok: false, reason: 'unsandboxed' }));
  // One sandbox and executor for the answer's commands, started with the first (where the executor is built).
  let shared: SharedSandbox | undefined;
  const sharedSandbox = async (): Promise<SharedSandbox | undefined> => {
    if (options.sharedSandbox) return options.sharedSandbox;
    const support = await sandboxed();
    const executor = support.ok ? builtExecutor() : undefined;
    if (!support.ok || !executor) return undefined;
    return (shared ??= new SharedSandbox(support, workspace.realRoot, policy, options.env ?? process.env, executor));
  };
  try {
    await ConfinedRoot.with(workspace.realRoot, (confined) =>
      planAnswer(workspace, answer, {
        state,
        ...(options.stale ? { stale: options.stale } : {}),
        carryOut: async (block) => {
          if (block.plan.kind !== 'run') return applyPlan(workspace, block.plan, state, { ...options, confined });
          const reused = await sharedSandbox();
          const containment = sandboxed().then((support) => (support.ok ? { kind: 'tree' as const } : contained()));
          return applyPlan(workspace, block.plan, state, { ...options, confined, containment, sandbox: sandboxed(), ...(reused ? { sharedSandbox: reused } : {}) });
        },
        onItem: (item) => {
          items.push(executed(item));
          options.onResult?.(items.at(-1)!);
        },
      }),
    );
  } finally {
    await shared?.close();
  }
  const results = items.map((item) => item.result);
  const shell = sandbox ? shellDescription(policy, await sandbox) : undefined;
  return { items, results, done: state.done, readFileRequests: state.readFileRequests, success: results.every((r) => r.success), ...(shell ? { shell } : {}) };
}
