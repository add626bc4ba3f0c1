// `cueme`: Belay's command line for the Human Agent Protocol (../../../shared/specs/hap-cueme.md).
// It writes the same mailbox as the public cueme, so either console can answer it.
// Must stay the first import: on an old Node it hands the command to the project's Node 22 first.
import { runsHere } from './node-check.ts';
import { parseCommandLine, UsageError, wantsHelp } from '../shared/args.ts';
import { errorMessage } from '../shared/errors.ts';
import { cueTimeoutForCommandLine } from './cueTimeout.ts';
import { processIO, readAll, type CliIO } from './io.ts';
import { EnvelopeError, parseEnvelope } from '../cues/core/envelope.ts';
import { MailboxError } from '../cues/core/errors.ts';
import { cueAndWait, join, pauseRequest, recall } from '../cues/core/hap.ts';
import { viewPayload } from '../cues/core/payload.ts';
import { silenceSqliteExperimentalWarning } from '../cues/core/sqlite.ts';
import { Mailbox } from '../cues/core/store.ts';

declare const BELAY_VERSION: string;

const USAGE = `Usage:
  cueme join <agent_runtime>          register an agent; prints agent_id=...
  cueme recall <hints>                find the agent_id of an earlier conversation
  cueme cue <agent_id> -              ask the human; stdin holds the envelope below
  cueme pause <agent_id> [prompt|-]   wait until the human clicks Continue

stdin envelope (tags alone on their lines, only whitespace outside):
  <cueme_prompt>
  ...prompt text (required)...
  </cueme_prompt>
  <cueme_payload>
  ...a JSON object (choice, confirm or form) or null (optional)...
  </cueme_payload>

The mailbox is ~/.cue/cue.db, shared with the public cueme and cue-console; CUE_HOME moves it.
cue gives up after 600 s (CUEME_TIMEOUT_SECONDS changes that); pause waits without limit.
Exit codes: 0 done (also timeout and cancel), 1 mailbox error, 2 usage or envelope error,
130 interrupted (the request is marked cancelled).
`;

function requireAgentId(value: string | undefined, command: string): string {
  const agentId = value?.trim() ?? '';
  if (!agentId) throw new UsageError(`${command} needs an agent_id (run "cueme join <agent_runtime>" to get one)`);
  return agentId;
}

/**
 * Runs one cueme command. `interrupt` aborts on Ctrl-C; `onWaiting` is called once a request is in
 * the mailbox, from when an interruption must cancel it rather than just end the process.
 */
export async function main(argv: readonly string[], io: CliIO, interrupt: AbortSignal, onWaiting: () => void = () => undefined): Promise<number> {
  const [command, ...args] = argv;
  try {
    if (command === undefined) throw new UsageError('a command is required');
    // Help anywhere means help only: nothing is read, written or waited for.
    if (command === 'help' || wantsHelp(argv)) {
      io.stdout.write(USAGE);
      return 0;
    }
    if (command === '--version' || command === '-v') {
      io.stdout.write(`${typeof BELAY_VERSION === 'string' ? BELAY_VERSION : 'dev'}\n`);
      return 0;
    }
    if (command.startsWith('-')) throw new UsageError(`Unknown option '${command}'`);
    // Every command takes words only ('-' is stdin): anything else that looks like an option is a mistake.
    const rest = parseCommandLine(args, {}).positionals;
    switch (command) {
      case 'join': {
        const runtime = rest.join(' ').trim();
        if (!runtime) throw new UsageError('join needs the agent runtime, e.g. "cueme join claude_code"');
        return await withMailbox(io, (mailbox) => {
          io.stdout.write(join(mailbox, runtime, { env: io.env, cwd: io.cwd }).text);
          return 0;
        });
      }
      case 'recall': {
        const hints = rest.join(' ').trim();
        if (!hints) throw new UsageError('recall needs hints: words from an earlier prompt of the conversation');
        return await withMailbox(io, (mailbox) => {
          io.stdout.write(recall(mailbox, hints).text);
          return 0;
        });
      }
      case 'cue': {
        const agentId = requireAgentId(rest[0], 'cue');
        if (rest[1] !== '-' || rest.length !== 2) throw new UsageError('cue reads its prompt from stdin: cueme cue <agent_id> - (the prompt goes in a <cueme_prompt> block)');
        const timeoutMs = cueTimeoutForCommandLine(io.env);
        const envelope = parseEnvelope(await readAll(io.stdin), { allowPayload: true });
        const view = viewPayload(envelope.payload);
        if (view.kind === 'invalid') io.stderr.write(`cueme: warning: ${view.warning}; the human will see a plain prompt\n`);
        return await withMailbox(io, (mailbox) =>
          wait(mailbox, io, { mode: 'cue', agentId, prompt: envelope.prompt, payloadJson: envelope.payloadJson, timeoutMs, interrupt, onRequest: onWaiting }),
        );
      }
      case 'pause': {
        const agentId = requireAgentId(rest[0], 'pause');
        let prompt: string | undefined;
        if (rest[1] === '-') {
          if (rest.length > 2) throw new UsageError('pause with "-" reads its prompt from stdin and takes no further arguments');
          prompt = parseEnvelope(await readAll(io.stdin), { allowPayload: false }).prompt;
        } else if (rest.length > 1) {
          prompt = rest.slice(1).join(' ');
        }
        const request = pauseRequest(prompt);
        return await withMailbox(io, (mailbox) => wait(mailbox, io, { mode: 'pause', agentId, ...request, interrupt, onRequest: onWaiting }));
      }
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`cueme: ${error.message}. Run "cueme --help" for usage.\n`);
      return 2;
    }
    if (error instanceof EnvelopeError) {
      io.stderr.write(`cueme: ${error.message}\nRun "cueme --help" for usage.\n`);
      return 2;
    }
    if (error instanceof MailboxError) {
      io.stderr.write(`cueme: ${error.message}\n`);
      return 1;
    }
    io.stderr.write(`cueme: unexpected error: ${errorMessage(error)}\n`);
    return 1;
  }
}

async function withMailbox(io: CliIO, fn: (mailbox: Mailbox) => number | Promise<number>): Promise<number> {
  const mailbox = Mailbox.open({ env: io.env });
  try {
    return await fn(mailbox);
  } finally {
    mailbox.close();
  }
}

async function wait(mailbox: Mailbox, io: CliIO, options: Parameters<typeof cueAndWait>[1]): Promise<number> {
  const outcome = await cueAndWait(mailbox, options);
  if (outcome.kind === 'interrupted') {
    io.stderr.write(`cueme: interrupted; request ${outcome.requestId} is marked cancelled\n`);
    return 130;
  }
  io.stdout.write(outcome.text);
  return 0;
}

function start(): void {
  silenceSqliteExperimentalWarning();
  const interrupt = new AbortController();
  let waiting = false;
  // Ctrl-C, a closed terminal or a kill while waiting: cancel the request instead of leaving it
  // pending. Before a request is written (reading stdin) there is nothing to cancel: leave at once.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      if (!waiting || interrupt.signal.aborted) process.exit(130);
      interrupt.abort();
    });
  }
  main(process.argv.slice(2), processIO(), interrupt.signal, () => (waiting = true)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`cueme: ${errorMessage(error)}\n`);
      process.exitCode = 1;
    },
  );
}

if (runsHere) start();
