// `belay blocks parse|apply`: the command-block parser and executor on the command line. The
// output formats are a contract: scripts and checks read them. Everything printed that comes from
// the answer or from the commands it ran is neutralised (src/shared/terminalText.ts): an escape
// sequence in a path or in a command's output prints as text and does nothing to the terminal.
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { DEFAULT_RUN_TIMEOUT_MS, executeAnswer, type ExecutedItem } from '../blocks/core/executor.ts';
import { parseAnswer } from '../blocks/core/parser.ts';
import { formatResult, type CommandResult } from '../blocks/core/results.ts';
import { openWorkspace } from '../blocks/core/sandbox.ts';
import { inOrder, type Command, type ParseError } from '../blocks/core/syntax.ts';
import { parseCommandLine, splitAction } from '../shared/args.ts';
import type { ShellPolicy } from '../shared/commandSandbox.ts';
import { neutraliseControls, neutraliseJson } from '../shared/terminalText.ts';
import { readAll, UsageError, type CliIO } from './io.ts';
import { existingFile, existingFolder } from './paths.ts';

/** The shell options of `blocks apply` and `session step|watch`, as their usage shows them. */
export const SHELL_OPTIONS_USAGE = `        RUN_COMMAND runs sandboxed (Linux with bubblewrap): the workspace and a private /tmp
        writable, the system read-only, credential places (~/.ssh, ~/.aws, ...) hidden, no
        network, an allowlisted environment. How the commands ran is said on standard error.
        --network: the sandboxed commands may reach the network.
        --unsandboxed: the unsandboxed shell: commands run as you, with every file you can
        read, your environment and the network (each result line says "unsandboxed").`;

/** The shell policy the options ask for. */
export function shellPolicy(values: { network?: boolean | undefined; unsandboxed?: boolean | undefined }): ShellPolicy {
  return values.unsandboxed === true ? { mode: 'unsandboxed', network: true, chosenBy: '--unsandboxed' } : { mode: 'sandboxed', network: values.network === true };
}

/** Printed by `belay blocks --help` (and when no action is given). */
export const usage = `Usage:
  belay blocks parse [FILE|-] [--json]
  belay blocks apply --workspace DIR [FILE|-] [--json] [--timeout SECONDS] [--network] [--unsandboxed]

Reads an LLM answer from FILE, or from standard input when FILE is '-' or absent.

parse   Lists the answer's command blocks and parse errors, in order.
        --json prints {"commands":[…],"errors":[…]}: each command has "type", "line" (1-based
        line of its opening tag), then "path", "startLine", "endLine" and "body" when it has
        them; each error has "line" and "message".
        Exit 0 when there is no parse error, 1 when there is.
apply   Executes the blocks in DIR and prints one result line per command and parse error, in
        order: "[OK] TYPE: summary" or "[FAILED] TYPE: summary", RUN_COMMAND output indented
        below. --json prints {"results":[{"line","commandType","success","summary","output"}],
        "done","readFileRequests"} instead.
        --timeout SECONDS: RUN_COMMAND timeout (default ${DEFAULT_RUN_TIMEOUT_MS / 1000}).
${SHELL_OPTIONS_USAGE}
        Exit 0 when every command succeeded, 1 otherwise.
Exit 2: a usage mistake.
`;

export async function run(args: string[], io: CliIO): Promise<number> {
  const { action, rest } = splitAction(args, ['parse', 'apply']);
  if (action === undefined) {
    io.stdout.write(usage);
    return 2;
  }
  const { values, positionals } = parseCommandLine(rest, {
    json: { type: 'boolean' },
    workspace: { type: 'string' },
    timeout: { type: 'string' },
    network: { type: 'boolean' },
    unsandboxed: { type: 'boolean' },
  });
  if (positionals.length > 1) throw new UsageError(`one answer at a time; got ${positionals.length} files`);
  if (action === 'parse') {
    if (values.workspace !== undefined || values.timeout !== undefined || values.network !== undefined || values.unsandboxed !== undefined) {
      throw new UsageError('--workspace, --timeout, --network and --unsandboxed belong to apply');
    }
    return parse(await readAnswer(positionals[0], io), values.json === true, io);
  }
  if (values.workspace === undefined) throw new UsageError('apply needs --workspace DIR');
  // Every option is checked before the answer is read: a mistake must not wait for standard input.
  existingFolder(values.workspace, '--workspace', io.cwd);
  const runTimeoutMs = timeoutMs(values.timeout);
  return apply(await readAnswer(positionals[0], io), values.workspace, values.json === true, runTimeoutMs, shellPolicy(values), io);
}

export function timeoutMs(value: string | undefined): number {
  if (value === undefined) return DEFAULT_RUN_TIMEOUT_MS;
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new UsageError(`--timeout wants a number of seconds above 0, got '${value}'`);
  return Math.round(seconds * 1000);
}

export async function readAnswer(file: string | undefined, io: CliIO): Promise<string> {
  if (file === undefined || file === '-') return readAll(io.stdin);
  const full = existingFile(file, 'answer file', io.cwd);
  try {
    return await readFile(full, 'utf8');
  } catch (error) {
    throw new UsageError(`answer file ${file}: cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
}

/** A command as `blocks parse --json` prints it. */
export function commandJson(command: Command): Record<string, unknown> {
  const line = command.openTag.range.start.line + 1;
  switch (command.type) {
    case 'CREATE_FILE':
      return { type: command.type, line, path: command.path, body: command.body.text };
    case 'EDIT_FILE':
      return { type: command.type, line, path: command.path, startLine: command.startLine, endLine: command.endLine, body: command.body.text };
    case 'DELETE_FILE':
    case 'READ_FILE':
      return { type: command.type, line, path: command.path };
    default:
      return { type: command.type, line, body: command.body.text };
  }
}

export function errorJson(error: ParseError): { line: number; message: string } {
  return { line: error.range.start.line + 1, message: error.message };
}

/** JSON for a terminal: `JSON.stringify`, with what it leaves raw of the control characters escaped too. */
export function printableJson(value: unknown): string {
  return neutraliseJson(JSON.stringify(value));
}

/** A result with its summary and output neutralised, so that its formatted lines are safe to print. */
export function printableResult(result: CommandResult): CommandResult {
  const printable = { ...result, summary: neutraliseControls(result.summary) };
  if (result.output !== undefined) printable.output = neutraliseControls(result.output);
  return printable;
}

function parse(answer: string, json: boolean, io: CliIO): number {
  const parsed = parseAnswer(answer);
  if (json) {
    io.stdout.write(`${printableJson({ commands: parsed.commands.map(commandJson), errors: parsed.errors.map(errorJson) })}\n`);
  } else {
    for (const item of inOrder(parsed)) {
      if ('error' in item) {
        io.stdout.write(`line ${item.error.range.start.line + 1}: error: ${neutraliseControls(item.error.message)}\n`);
        continue;
      }
      const c = item.command;
      const what = 'path' in c ? ` ${c.path}` : '';
      const lines = c.type === 'EDIT_FILE' ? ` lines ${c.startLine}-${c.endLine}` : '';
      const body = 'body' in c ? ` (${c.body.lineCount} line${c.body.lineCount === 1 ? '' : 's'})` : '';
      io.stdout.write(`line ${c.openTag.range.start.line + 1}: ${c.type}${neutraliseControls(what)}${lines}${body}\n`);
    }
    io.stdout.write(`${parsed.commands.length} command${parsed.commands.length === 1 ? '' : 's'}, ${parsed.errors.length} error${parsed.errors.length === 1 ? '' : 's'}\n`);
  }
  return parsed.errors.length === 0 ? 0 : 1;
}

function itemLine(item: ExecutedItem): number {
  return ('command' in item ? item.command.range.start.line : item.error.range.start.line) + 1;
}

async function apply(answer: string, workspaceDir: string, json: boolean, runTimeoutMs: number, shell: ShellPolicy, io: CliIO): Promise<number> {
  let workspace;
  try {
    workspace = await openWorkspace(path.resolve(io.cwd, workspaceDir));
  } catch (error) {
    throw new UsageError(`workspace '${workspaceDir}' cannot be used: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  const report = await executeAnswer(workspace, answer, {
    runTimeoutMs,
    env: io.env,
    shell,
    onResult: json ? undefined : (item) => io.stdout.write(`${formatResult(printableResult(item.result))}\n`),
  });
  if (report.shell) io.stderr.write(`RUN_COMMAND: ${report.shell}\n`);
  if (json) {
    const results = report.items.map((item) => ({ line: itemLine(item), ...item.result }));
    io.stdout.write(`${printableJson({ results, done: report.done, readFileRequests: report.readFileRequests })}\n`);
  }
  return report.success ? 0 : 1;
}
