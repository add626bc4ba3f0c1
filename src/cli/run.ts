// `belay run`: runs an agent on tasks, live progress on stderr, a summary table at the end.
import * as os from 'node:os';
import * as path from 'node:path';
import { parseCommandLine } from '../shared/args.ts';
import { UsageError, type CliIO } from './io.ts';
import { localBackend, sandboxBackend, SandboxUnavailableError, type Backend } from '../runner/core/backend.ts';
import type { Protocol, RunEvent } from '../runner/core/events.ts';
import type { RunLimits } from '../runner/core/protocol.ts';
import type { RunResult } from '../runner/core/records.ts';
import { runTask } from '../runner/core/run.ts';
import { discoverTasks } from '../runner/core/task.ts';

/** Printed by `belay run --help` (and when no action is given). */
export const usage = `Usage: belay run TASK_DIR... --agent "COMMAND" --protocol sdk1|sdk2 [options]

Runs an agent on each task found under the TASK_DIRs (task.toml or task.yaml layouts), then
the task's tests. Live progress goes to stderr; a summary table (or JSON) to stdout.

Options:
  --agent "COMMAND"        the agent's shell command (run from the current folder)
  --protocol sdk1|sdk2     sdk1: JSON lines on stdin/stdout; sdk2: HTTP server on AGENT_PORT
  --backend sandbox|local  sandbox (default on Linux): bubblewrap, /app writable, no network;
                           local: a plain child process, no isolation
  --max-steps N            step limit (default 200)
  --agent-timeout S        the agent's time in seconds (default: the task's)
  --command-timeout S      one command's time in seconds, SDK 1.x (default 120)
  --silence-timeout S      longest wait for one SDK 1.x response (default 300)
  --out DIR                where run folders go (default .belay/runs)
  --concurrency N          tasks run at once (default 1)
  --json                   print the results as JSON instead of the table
  -h, --help               show this help

Exit status: 0 when every task passed, 1 when any failed, 2 for usage errors.
Example:
  belay run tasks/hello --agent "python3 agent.py" --protocol sdk1 --max-steps 50
`;

function positiveNumber(value: string | undefined, flag: string, integer = false): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new UsageError(`${flag} needs a positive ${integer ? 'whole ' : ''}number, got '${value}'`);
  }
  return n;
}

export async function run(args: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseCommandLine(args, {
    agent: { type: 'string' },
    protocol: { type: 'string' },
    backend: { type: 'string' },
    'max-steps': { type: 'string' },
    'agent-timeout': { type: 'string' },
    'command-timeout': { type: 'string' },
    'silence-timeout': { type: 'string' },
    out: { type: 'string' },
    concurrency: { type: 'string' },
    json: { type: 'boolean' },
  });
  if (positionals.length === 0) throw new UsageError('no TASK_DIR given: name at least one folder holding tasks');
  if (!values.agent?.trim()) throw new UsageError('--agent "COMMAND" is required');
  if (values.protocol !== 'sdk1' && values.protocol !== 'sdk2') {
    throw new UsageError(`--protocol must be sdk1 or sdk2 (got ${values.protocol === undefined ? 'nothing' : `'${values.protocol}'`}): the protocol is never guessed`);
  }
  const protocol: Protocol = values.protocol;
  const backendName = values.backend ?? (process.platform === 'linux' ? 'sandbox' : 'local');
  if (backendName !== 'sandbox' && backendName !== 'local') throw new UsageError(`--backend must be sandbox or local (got '${backendName}')`);
  const limits: Partial<RunLimits> = {};
  const maxSteps = positiveNumber(values['max-steps'], '--max-steps', true);
  if (maxSteps !== undefined) limits.maxSteps = maxSteps;
  const agentTimeout = positiveNumber(values['agent-timeout'], '--agent-timeout');
  if (agentTimeout !== undefined) limits.agentTimeoutMs = agentTimeout * 1000;
  const commandTimeout = positiveNumber(values['command-timeout'], '--command-timeout');
  if (commandTimeout !== undefined) limits.commandTimeoutMs = commandTimeout * 1000;
  const silenceTimeout = positiveNumber(values['silence-timeout'], '--silence-timeout');
  if (silenceTimeout !== undefined) limits.silenceTimeoutMs = silenceTimeout * 1000;
  const concurrency = positiveNumber(values.concurrency, '--concurrency', true) ?? 1;
  const runsDir = path.resolve(io.cwd, values.out ?? path.join('.belay', 'runs'));

  const { tasks, errors } = await discoverTasks(positionals.map((p) => path.resolve(io.cwd, p)));
  for (const error of errors) io.stderr.write(`belay run: broken task: ${error.message}\n`);
  if (tasks.length === 0 && errors.length === 0) throw new UsageError(`no task (task.toml or task.yaml) under ${positionals.join(', ')}`);

  let backend: Backend;
  if (backendName === 'local') backend = localBackend();
  else {
    try {
      backend = await sandboxBackend({ readable: [io.cwd] });
    } catch (error) {
      if (!(error instanceof SandboxUnavailableError)) throw error;
      io.stderr.write(`belay run: ${error.message}\nRun with --backend local to run without isolation.\n`);
      return 1;
    }
  }
  io.stderr.write(`belay run: ${tasks.length} task(s), protocol ${protocol}, backend ${backend.label}\n`);

  const controller = new AbortController();
  const onSigint = () => {
    io.stderr.write('\nbelay run: stopping (killing every agent and command)...\n');
    controller.abort();
  };
  process.once('SIGINT', onSigint);
  const results: RunResult[] = [];
  try {
    let next = 0;
    const worker = async () => {
      while (next < tasks.length && !controller.signal.aborted) {
        const task = tasks[next++]!;
        results.push(
          await runTask({
            task,
            agentCommand: values.agent!,
            agentCwd: io.cwd,
            protocol,
            backend,
            runsDir,
            limits,
            onEvent: (event) => io.stderr.write(progressLine(task.name, event)),
            signal: controller.signal,
          }),
        );
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, tasks.length) }, worker));
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
  results.sort((a, b) => a.task_name.localeCompare(b.task_name));
  if (values.json) io.stdout.write(JSON.stringify({ results, broken_tasks: errors.map((e) => e.message) }, null, 2) + '\n');
  else io.stdout.write(summaryTable(results, errors.map((e) => path.relative(io.cwd, e.file) || e.file)));
  return results.every((r) => r.passed) && errors.length === 0 && results.length === tasks.length ? 0 : 1;
}

function oneLine(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** One event as a line of live progress ('' for events that are not shown). */
export function progressLine(task: string, event: RunEvent): string {
  const p = `[${task}]`;
  switch (event.type) {
    case 'run-started':
      return `${p} started (${event.protocol}, ${event.backend}) in ${event.runDir}\n`;
    case 'agent-text':
      return `${p} step ${event.step}: » ${oneLine(event.text)}\n`;
    case 'command':
      return `${p} step ${event.step}: $ ${oneLine(event.command)}\n`;
    case 'step-ended':
      if (event.exitCode === null && !event.timedOut) return '';
      return `${p} step ${event.step}: ${event.timedOut ? 'timed out' : `exit ${event.exitCode}`} (${Math.round(event.durationMs)} ms)\n`;
    case 'notice':
      return `${p} ${event.message}\n`;
    case 'verification-started':
      return `${p} running the tests\n`;
    case 'verification-ended':
      return `${p} tests: reward ${event.verification.reward}${event.verification.error ? ` (${oneLine(event.verification.error)})` : ''}\n`;
    case 'run-ended':
      return `${p} ${event.result.passed ? 'PASSED' : `FAILED: ${event.result.failure_cause}: ${oneLine(event.result.error ?? '')}`}\n`;
    default:
      return '';
  }
}

export function summaryTable(results: readonly RunResult[], broken: readonly string[] = []): string {
  const rows = [
    ['task', 'result', 'reward', 'steps', 'time', 'cause'],
    ...results.map((r) => [
      r.task_name,
      r.passed ? 'passed' : 'failed',
      String(Math.round(r.reward * 100) / 100),
      String(r.steps),
      `${r.duration_sec.toFixed(1)}s`,
      r.failure_cause ?? '',
    ]),
    ...broken.map((file) => [file, 'failed', '0', '0', '-', 'setup_error']),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const lines = rows.map((row) => row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd());
  lines.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '));
  const passed = results.filter((r) => r.passed).length;
  return `${lines.join(os.EOL)}${os.EOL}${passed}/${results.length + broken.length} passed${os.EOL}`;
}
