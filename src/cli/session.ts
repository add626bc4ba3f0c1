// `belay session start|step|watch|list`: the outbox/inbox loop on the command line. Standard
// output carries only what scripts need (outbox paths); results and notes go to standard error.
// What comes from an answer, a command's output or a task is neutralised before it is printed.
import * as path from 'node:path';
import { formatResults } from '../blocks/core/results.ts';
import { listSessions, SessionError, startSession, stepSession, watchSession, type StepOutcome } from '../blocks/core/session.ts';
import { parseCommandLine, splitAction } from '../shared/args.ts';
import { neutraliseControls, neutraliseJson } from '../shared/terminalText.ts';
import { printableResult, readAnswer, SHELL_OPTIONS_USAGE, shellPolicy, timeoutMs } from './blocks.ts';
import { onSignals, readAll, UsageError, type CliIO } from './io.ts';
import { existingFolder, folderToMake } from './paths.ts';

/** Printed by `belay session --help` (and when no action is given). */
export const usage = `Usage:
  belay session start --root DIR --task TEXT [--timeout SECONDS]
  belay session step  --root DIR [--session ID] [--network] [--unsandboxed] FILE|-
  belay session watch --root DIR [--session ID] [--network] [--unsandboxed]
  belay session list  --root DIR [--json]

DIR holds workspace/, inbox/ (and inbox/processed/), outbox/ and sessions/.

start   Creates the folders and a session, writes the first outbox and prints its path.
        --task - reads the task from standard input. --timeout: RUN_COMMAND timeout (default 30).
step    Applies one LLM answer (FILE, or standard input with '-') to the workspace and prints
        the path of the next outbox; prints nothing once the answer said DONE. Results go to
        standard error. An answer applied before is not applied again. A FILE inside inbox/
        is moved to inbox/processed/.
watch   Processes the .txt files dropped into inbox/, oldest first, printing each next outbox
        path, until the session is done (exit 0) or interrupted (exit 130).
list    The sessions under DIR, most recent first.
--session ID: the session (8 hex characters); default: the most recently updated open one.
step and watch run the answers' RUN_COMMAND blocks:
${SHELL_OPTIONS_USAGE}
Exit 1: the session cannot go on (unknown, complete, unreadable). Exit 2: a usage mistake.
`;

export async function run(args: string[], io: CliIO): Promise<number> {
  const { action, rest } = splitAction(args, ['start', 'step', 'watch', 'list']);
  if (action === undefined) {
    io.stdout.write(usage);
    return 2;
  }
  const { values, positionals } = parseCommandLine(rest, {
    root: { type: 'string' },
    task: { type: 'string' },
    session: { type: 'string' },
    timeout: { type: 'string' },
    json: { type: 'boolean' },
    network: { type: 'boolean' },
    unsandboxed: { type: 'boolean' },
  });
  if ((values.network !== undefined || values.unsandboxed !== undefined) && action !== 'step' && action !== 'watch') {
    throw new UsageError('--network and --unsandboxed belong to step and watch (they run the commands)');
  }
  const shell = shellPolicy(values);
  if (values.root === undefined) throw new UsageError(`${action} needs --root DIR`);
  // start makes the folders; the others need a session root that is there.
  const root = action === 'start' ? folderToMake(values.root, '--root', io.cwd) : existingFolder(values.root, '--root', io.cwd);
  try {
    switch (action) {
      case 'start': {
        expectPositionals(positionals, 0, action);
        if (values.task === undefined) throw new UsageError('start needs --task TEXT (or --task - to read it from standard input)');
        const seconds = values.timeout === undefined ? undefined : timeoutMs(values.timeout) / 1000;
        const task = values.task === '-' ? await readAll(io.stdin) : values.task;
        const started = await startSession(root, task, seconds === undefined ? {} : { runTimeoutSeconds: seconds });
        io.stderr.write(`session ${started.state.sessionId} started; paste the outbox into the LLM and save its answer\n`);
        io.stdout.write(`${started.outboxPath}\n`);
        return 0;
      }
      case 'step': {
        expectPositionals(positionals, 1, action);
        const file = positionals[0]!;
        const answer = await readAnswer(file, io);
        const outcome = await stepSession(root, answer, {
          env: io.env,
          shell,
          ...(values.session !== undefined ? { sessionId: values.session } : {}),
          ...(file !== '-' ? { source: path.resolve(io.cwd, file) } : {}),
        });
        report(outcome, io);
        return 0;
      }
      case 'watch': {
        expectPositionals(positionals, 0, action);
        const controller = new AbortController();
        const stop = () => controller.abort();
        const offSignals = onSignals(['SIGINT', 'SIGTERM'], stop);
        try {
          io.stderr.write(`watching ${path.join(root, 'inbox')} for answers (.txt); Ctrl-C stops\n`);
          const state = await watchSession(root, {
            env: io.env,
            shell,
            signal: controller.signal,
            ...(values.session !== undefined ? { sessionId: values.session } : {}),
            onStep: (outcome, file) => {
              io.stderr.write(`processed ${neutraliseControls(file)}\n`);
              report(outcome, io);
            },
          });
          return state.isComplete ? 0 : 130;
        } finally {
          offSignals();
        }
      }
      case 'list': {
        expectPositionals(positionals, 0, action);
        const sessions = await listSessions(root);
        if (values.json) {
          io.stdout.write(`${neutraliseJson(JSON.stringify(sessions))}\n`);
        } else {
          for (const s of sessions) {
            io.stdout.write(`${s.sessionId}  seq ${s.sequenceNumber}  ${s.isComplete ? 'complete' : 'open    '}  ${neutraliseControls(s.task.split(/\r?\n|\r/, 1)[0]!)}\n`);
          }
        }
        return 0;
      }
    }
  } catch (error) {
    if (error instanceof SessionError) {
      io.stderr.write(`belay session ${action}: ${neutraliseControls(error.message)}\n`);
      return 1;
    }
    throw error;
  }
}

function report(outcome: StepOutcome, io: CliIO): void {
  if (outcome.kind === 'duplicate') {
    io.stderr.write('this answer was applied before; it was not applied again\n');
  } else if (outcome.report) {
    if (outcome.report.shell) io.stderr.write(`RUN_COMMAND: ${outcome.report.shell}\n`);
    io.stderr.write(`${formatResults(outcome.report.results.map(printableResult)) || '(no command blocks in the answer)'}\n`);
  }
  if (outcome.outboxPath !== undefined) io.stdout.write(`${outcome.outboxPath}\n`);
  else io.stderr.write(`session ${outcome.state.sessionId} is complete\n`);
}

function expectPositionals(positionals: string[], count: number, action: string): void {
  if (positionals.length !== count) {
    throw new UsageError(count === 0 ? `${action} takes no file argument` : `${action} needs exactly one answer file (or - for standard input)`);
  }
}
