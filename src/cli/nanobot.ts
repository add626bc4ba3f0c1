// `belay nanobot`: runs a nanobot terminal micro-agent once and prints what a chat user would see.
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { parseCommandLine } from '../shared/args.ts';
import { errorMessage } from '../shared/errors.ts';
import { UsageError, type CliIO } from './io.ts';
import { existingFile, existingFolder } from './paths.ts';
import { startNanobot, TerminalConfigSchema, type NanobotEvent, type NanobotSession, type TerminalConfig } from '../runner/core/protocols/nanobot.ts';
import { BackendUnavailableError } from '../runner/core/backends/backend.ts';
import { BACKEND_NAMES, isBackendName, isolates } from '../runner/core/backends/choose.ts';
import { microAgentLauncher } from '../runner/core/backends/nanobot-launch.ts';
import { BASE_IMAGE } from '../runner/core/backends/image-base.ts';
import { AgentFolderError, resolveMicroAgentFolder } from '../runner/core/agents/agentFolder.ts';

/** Printed by `belay nanobot --help` (and when no action is given). */
export const usage = `Usage: belay nanobot --command "COMMAND" --text TEXT [options]

Runs a nanobot terminal micro-agent (terminal protocol v1) once: the envelope goes to its
stdin, and what a chat user would see is printed: progress (⏳), each message, errors.

Options:
  --command "COMMAND"    shell command; {message} is replaced by the shell-quoted text
  --text TEXT            the user's message
  --protocol rich|plain  rich: JSONL frames; plain: output scanned for media (default plain)
  --timeout S            seconds before the agent's process group is killed (default 120)
  --workspace DIR        the bot's workspace (default: the current folder); users/<chat>/ is created
  --agent-dir DIR        the bot's folder, shown read-only when isolated (default: the folder of
                         the program its command names, from the workspace: a path as the
                         first word or the script of python3, node, bash, …; else the current
                         folder; never the home folder or /)
  --media FILE           a file the user attached (repeatable)
  --allow-injection      rich mode: keep the agent's stdin open; each line read on this command's
                         stdin goes to it as an inject frame, and the end of this stdin ends its input
  --config FILE          a nanobot config.json; its "terminal" section (env, providers, ...) is used,
                         the options above override it
  --backend auto|${BACKEND_NAMES.join('|')}
                         where the micro-agent runs (default auto: a fresh container of
                         ${BASE_IMAGE} per message where podman or docker works, else the
                         bubblewrap sandbox); isolated, it sees its workspace (writable) and its
                         program's folder (read-only, see --agent-dir), has no network (a bot that calls its LLM
                         itself cannot reach it) and none of your environment; local: a child
                         process, no isolation, chosen by name only
  --engine podman|docker the container's engine (default: podman, else docker)
  --json                 print the whole result as JSON
  -h, --help             show this help

Exit status: 0 unless the agent reported an error, exited non-zero or timed out; 2 for usage errors.
Example:
  belay nanobot --command "python3 bot.py" --protocol rich --text "draw a cat"
`;

export async function run(args: string[], io: CliIO): Promise<number> {
  const { values } = parseCommandLine(
    args,
    {
      command: { type: 'string' },
      text: { type: 'string' },
      protocol: { type: 'string' },
      timeout: { type: 'string' },
      workspace: { type: 'string' },
      'agent-dir': { type: 'string' },
      media: { type: 'string', multiple: true, default: [] },
      config: { type: 'string' },
      backend: { type: 'string' },
      engine: { type: 'string' },
      json: { type: 'boolean' },
      'allow-injection': { type: 'boolean' },
    },
    { positionals: false },
  );
  let fromFile: unknown = {};
  // Every path is checked before anything runs (a missing workspace is not made: it was a typo).
  const workspace = values.workspace === undefined ? io.cwd : existingFolder(values.workspace, '--workspace', io.cwd);
  const media = values.media.map((file) => existingFile(file, '--media', io.cwd));
  if (values.config !== undefined) {
    const file = existingFile(values.config, '--config', io.cwd);
    let raw: unknown;
    try {
      raw = JSON.parse(await readFile(file, 'utf8'));
    } catch (error) {
      throw new UsageError(`--config ${file}: ${errorMessage(error)}`);
    }
    fromFile = (raw as { terminal?: unknown } | null)?.terminal ?? {};
  }
  const merged = { ...(fromFile as object) } as Record<string, unknown>;
  if (values.command !== undefined) merged.command = values.command;
  if (values.protocol !== undefined) merged.protocol = values.protocol;
  if (values['allow-injection']) merged.allowInjection = true;
  if (values.timeout !== undefined) {
    merged.timeout = Number(values.timeout);
    if (!Number.isFinite(merged.timeout)) throw new UsageError(`--timeout wants a number of seconds, got '${values.timeout}'`);
  }
  const config = TerminalConfigSchema.safeParse(merged);
  if (!config.success) {
    const issue = config.error.issues[0]!;
    const where = issue.path.join('.');
    const flag = { protocol: '--protocol', timeout: '--timeout', command: '--command' }[where] ?? `terminal.${where} in --config`;
    throw new UsageError(`${flag}: ${issue.message}`);
  }
  const terminal: TerminalConfig = config.data;
  if (terminal.command.trim() === '') throw new UsageError('--command "COMMAND" is required');
  if (values.text === undefined) throw new UsageError('--text TEXT is required');
  const backend = values.backend ?? 'auto';
  if (backend !== 'auto' && !isBackendName(backend)) throw new UsageError(`--backend must be ${['auto', ...BACKEND_NAMES].join(', ').replace(/, (?=[^,]*$)/, ' or ')} (got '${backend}')`);
  if (values.engine !== undefined && values.engine !== 'podman' && values.engine !== 'docker') throw new UsageError(`--engine must be podman or docker (got '${values.engine}')`);
  let folder;
  try {
    // The bot runs in its workspace: a relative program is named from there.
    folder = resolveMicroAgentFolder({ command: terminal.command, workspace, cwd: io.cwd, given: values['agent-dir'], isolated: isolates(backend) });
  } catch (error) {
    if (error instanceof AgentFolderError) throw new UsageError(error.message);
    throw error;
  }
  let launcher;
  try {
    // Its program's folder and this Node (a command may name it), read-only.
    launcher = await microAgentLauncher({ backend, ...(values.engine ? { engine: values.engine } : {}), env: io.env, agentFolders: [folder, path.dirname(process.execPath)] });
  } catch (error) {
    if (!(error instanceof BackendUnavailableError)) throw error;
    io.stderr.write(`belay nanobot: ${error.message} (--backend local)\n`);
    return 1;
  }

  const show = (event: NanobotEvent) => {
    if (values.json) return;
    if (event.type === 'progress') io.stdout.write(`⏳ ${event.text}\n`);
    else if (event.type === 'message') {
      if (event.text !== '') io.stdout.write(`${event.text}\n`);
      for (const file of event.media) io.stdout.write(`[media] ${file}\n`);
    } else if (event.type === 'error') io.stdout.write(`Error: ${event.text}${event.code ? ` [${event.code}]` : ''}\n`);
    else io.stderr.write(`[${event.level}] ${event.text}\n`);
  };
  const session = await startNanobot({
    config: terminal,
    input: { text: values.text, media, workspace },
    onEvent: show,
    launcher,
  });
  const forwarding = session.accepting ? forwardLines(io, session) : undefined;
  const result = await session.result;
  forwarding?.close();
  // The bot's environment ends with this command.
  if (launcher !== 'local') await launcher.dispose();
  if (values.json) io.stdout.write(JSON.stringify(result, null, 2) + '\n');
  return result.ok ? 0 : 1;
}

/** Each line of this command's stdin goes to the running bot; a refused one is said on stderr. */
function forwardLines(io: CliIO, session: NanobotSession): readline.Interface {
  const lines = readline.createInterface({ input: io.stdin, crlfDelay: Infinity });
  lines.on('line', (line) => {
    if (line.trim() === '') return;
    const refusal = session.inject(line);
    if (refusal) io.stderr.write(`belay nanobot: not sent (${refusal.message}): ${line}\n`);
  });
  lines.on('close', () => session.endInput());
  return lines;
}
