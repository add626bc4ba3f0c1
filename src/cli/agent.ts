// `belay agent doctor`: which protocol an agent speaks and what it does wrong, probed in the sandbox.
import * as path from 'node:path';
import { parseCommandLine, splitAction } from '../shared/args.ts';
import { shellQuote } from '../shared/shell.ts';
import { neutraliseControls } from '../shared/terminalText.ts';
import { UsageError, type CliIO } from './io.ts';
import { existingFolder, folderToMake } from './paths.ts';
import { BackendUnavailableError, type Backend } from '../runner/core/backends/backend.ts';
import { localBackend } from '../runner/core/backends/local.ts';
import { sandboxBackend } from '../runner/core/backends/sandbox.ts';
import { diagnoseAgent, PROTOCOL_TITLES, type DoctorReport, type ProbeName } from '../runner/core/protocols/doctor.ts';
import { protocolDescriptors } from '../runner/core/protocols/descriptors.ts';
import { AgentFolderError, resolveAgentFolder } from '../runner/core/agents/agentFolder.ts';
import { INSTALLED_AGENTS, installedAgent } from '../runner/core/protocols/installed/installedAgents.ts';
import { defaultAgentCache, ensureInstalled, findInstalled, InstallError, launchCommand } from '../runner/core/protocols/installed/install.ts';
import { doctorInstalled } from '../runner/core/run/installedDoctor.ts';
import { checkLlmKey, LLM_FLAGS, parseLlmFlags, startLlm } from './llm.ts';

/** Printed by `belay agent --help` (and when no action is given). */
export const usage = `Usage: belay agent doctor --agent "COMMAND" [--cwd DIR] [--timeout S] [--unsafe-local] [--json]
       belay agent doctor --protocol ${Object.keys(INSTALLED_AGENTS).join('|')} [--agent PROGRAM] [--llm-upstream URL ...]
       belay agent install ${Object.keys(INSTALLED_AGENTS).join('|')}|all [--cache DIR]

Starts the agent once per protocol, each time in a fresh sandbox (bubblewrap: no network, only
its own folder readable, a scratch /app), and says which protocol it speaks and what it does wrong:
${protocolDescriptors().map((d) => `  ${d.title.padEnd(10)}${d.probeUsage}\n`).join('')}  nanobot   an envelope on its stdin; JSON frames with a type mean rich, plain text plain
Each probe is bounded in time and everything it started is killed when it ends. No model can
be reached from a probe: an agent that needs one may fail its task, which is not held against it.

With --protocol, the doctor checks an installed coding CLI instead: whether it is installed (Belay's
pinned version in ~/.cache/belay/agents, or the PROGRAM named), its version, and whether one step
through Belay's gateway works: the CLI on a scratch task in the sandbox, its model the --llm-upstream
given (a few tokens) or else Belay's probe model on loopback, which asks for one shell command.
\`belay agent install\` puts the pinned CLIs into that cache (--cache DIR: elsewhere).

Options:
  --agent "COMMAND"  the shell command that starts the agent (as in belay run --agent)
  --cwd DIR          where the command runs (default: the folder of the program it names,
                     else the current folder; never the home folder or /); shown read-only
  --timeout S        seconds each probe waits for the agent (default 10)
  --unsafe-local     where the sandbox cannot run, probe with plain child processes: the agent
                     can then read and write whatever you can, and reach the network
  --json             print the report as JSON
  -h, --help         show this help

Exit status: 0 when one protocol clearly matched, 1 otherwise (none, several, or no sandbox), 2
for usage errors.
Example:
  belay agent doctor --agent "python3 agent.py" --cwd my-agent
`;

export async function run(args: string[], io: CliIO): Promise<number> {
  const { action, rest } = splitAction(args, ['doctor', 'install']);
  if (action === undefined) {
    io.stdout.write(usage);
    return 2;
  }
  if (action === 'install') return install(rest, io);
  const { values } = parseCommandLine(
    rest,
    { agent: { type: 'string' }, cwd: { type: 'string' }, timeout: { type: 'string' }, 'unsafe-local': { type: 'boolean' }, json: { type: 'boolean' }, protocol: { type: 'string' }, ...LLM_FLAGS },
    { positionals: false },
  );
  if (values.protocol !== undefined) return doctorInstalledCli(values, io);
  const command = values.agent?.trim();
  if (!command) throw new UsageError('--agent "COMMAND" is required');
  const timeout = values.timeout === undefined ? 10 : Number(values.timeout);
  if (!Number.isFinite(timeout) || timeout <= 0) throw new UsageError(`--timeout wants a number of seconds above 0, got '${values.timeout}'`);
  // A --cwd that is no folder is one usage line before anything starts.
  if (values.cwd !== undefined) existingFolder(values.cwd, '--cwd', io.cwd);

  const backend = await sandboxOrLocal(values['unsafe-local'] === true, io, 'The agent would run unisolated here. Give --unsafe-local to probe it anyway (it can then read and write whatever you can).');
  if (!backend) return 1;
  // The agent's folder as belay run finds it: --cwd, else its program's folder, never the home folder or /.
  let folder;
  try {
    folder = resolveAgentFolder({ command, base: io.cwd, given: values.cwd, option: '--cwd DIR', isolated: backend.isolated });
  } catch (error) {
    if (error instanceof AgentFolderError) throw new UsageError(error.message);
    throw error;
  }
  if (!values.json) io.stderr.write(`belay agent doctor: probing with ${backend.label}, ${timeout} s per probe…\n`);
  const report = await diagnoseAgent({
    agentCommand: folder.command,
    agentCwd: folder.dir,
    // The Node that runs Belay: a command may name it.
    agentFolders: [path.dirname(process.execPath)],
    backend,
    timeoutMs: timeout * 1000,
  });
  io.stdout.write(values.json ? `${JSON.stringify(report, null, 2)}\n` : describeReport(report, command));
  return report.clear ? 0 : 1;
}

const INSTALLED_NAMES = Object.keys(INSTALLED_AGENTS);

/** The sandbox; where it cannot run, the local backend if the person said --unsafe-local, else nothing (and why, on stderr). */
async function sandboxOrLocal(unsafeLocal: boolean, io: CliIO, advice: string): Promise<Backend | undefined> {
  try {
    return await sandboxBackend();
  } catch (error) {
    if (!(error instanceof BackendUnavailableError)) throw error;
    if (!unsafeLocal) {
      io.stderr.write(`belay agent doctor: ${error.message}\n${advice}\n`);
      return undefined;
    }
    return localBackend();
  }
}

/** `belay agent install NAME...`: the pinned CLIs into the per-user cache (or --cache DIR). */
async function install(args: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseCommandLine(args, { cache: { type: 'string' } });
  if (positionals.length === 0) throw new UsageError(`name the CLIs to install: ${INSTALLED_NAMES.join(', ')} (or all)`);
  const names = positionals.includes('all') ? INSTALLED_NAMES : positionals;
  const agents = names.map((name) => {
    const agent = installedAgent(name);
    if (!agent) throw new UsageError(`'${name}' is not a CLI Belay installs (${INSTALLED_NAMES.join(', ')})`);
    return agent;
  });
  const cache = values.cache !== undefined ? folderToMake(values.cache, '--cache', io.cwd) : defaultAgentCache(io.env);
  let failed = 0;
  for (const agent of agents) {
    try {
      const cli = await ensureInstalled(agent, { cache, onProgress: (message) => io.stderr.write(`belay agent install: ${message}\n`) });
      io.stdout.write(`${agent.name} ${agent.version} ${cli.bin}\n`);
    } catch (error) {
      if (!(error instanceof InstallError)) throw error;
      io.stderr.write(`belay agent install: ${error.message}\n`);
      failed++;
    }
  }
  return failed > 0 ? 1 : 0;
}

/** `belay agent doctor --protocol claude-code`: installed? which version? one step through the gateway. */
async function doctorInstalledCli(values: Record<string, unknown>, io: CliIO): Promise<number> {
  const agent = installedAgent(String(values.protocol));
  if (!agent) throw new UsageError(`--protocol for the doctor names an installed CLI (${INSTALLED_NAMES.join(', ')}); leave it out to find an agent's protocol`);
  const timeout = values.timeout === undefined ? 300 : Number(values.timeout);
  if (!Number.isFinite(timeout) || timeout <= 0) throw new UsageError(`--timeout wants a number of seconds above 0, got '${String(values.timeout)}'`);
  const llmFlags = parseLlmFlags(values as Parameters<typeof parseLlmFlags>[0]);
  if (llmFlags) checkLlmKey(llmFlags, io.env);
  let cli: { command: string; folder: string; bin: string } | undefined;
  const given = typeof values.agent === 'string' ? values.agent.trim() : '';
  if (given) {
    try {
      const folder = resolveAgentFolder({ command: given, base: io.cwd, given: typeof values.cwd === 'string' ? values.cwd : undefined, option: '--cwd DIR', isolated: true });
      cli = { command: folder.command, folder: folder.dir, bin: given };
    } catch (error) {
      if (error instanceof AgentFolderError) throw new UsageError(error.message);
      throw error;
    }
  } else {
    const found = findInstalled(agent, defaultAgentCache(io.env));
    if (found) cli = { command: launchCommand(agent, found), folder: found.folder, bin: found.bin };
  }
  const backend = await sandboxOrLocal(values['unsafe-local'] === true, io, `Give --unsafe-local to check ${agent.title} unisolated.`);
  if (!backend) return 1;
  if (!values.json) io.stderr.write(`belay agent doctor: checking ${agent.title} with ${backend.label}${llmFlags ? `, its model ${llmFlags.upstream}` : ", its model Belay's probe model"}…\n`);
  const upstream = llmFlags ? (await startLlm(llmFlags, io.env)) : undefined;
  try {
    const report = await doctorInstalled({
      agent,
      cli,
      backend,
      ...(upstream ? { upstream: upstream.options.upstream } : {}),
      ...(llmFlags?.model ? { model: llmFlags.model } : {}),
      timeoutMs: timeout * 1000,
      agentFolders: [path.dirname(process.execPath)],
    });
    if (values.json) io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    else {
      const clean = (text: string) => neutraliseControls(text);
      const lines = [
        `  installed  ${report.installed ? `yes  ${clean(report.program ?? '')}` : 'no'}`,
        `  version    ${report.version ? clean(report.version) : '-'} (Belay pins ${report.pinned})`,
        `  exchange   ${report.exchange ? `${report.exchange.ok ? 'yes' : 'no '}  ${clean(report.exchange.summary)}${report.exchange.model === 'probe' ? " (Belay's probe model)" : ''}` : '-'}`,
        '',
        ...(report.problems.length > 0 ? ['Problems:', ...report.problems.map((p) => `  - ${clean(p)}`)] : [`${agent.title} works through Belay's gateway.`]),
      ];
      io.stdout.write(`${lines.join('\n')}\n`);
    }
    return report.ok ? 0 : 1;
  } finally {
    await upstream?.host.close();
  }
}

/** Each probe's title: a protocol's (its descriptor), and nanobot's. */
const PROBE_TITLES: Record<ProbeName, string> = { ...Object.fromEntries(protocolDescriptors().flatMap((d) => (d.probe ? [[d.probe, d.title]] : []))), nanobot: 'nanobot' } as Record<ProbeName, string>;

/** The report as a person reads it; the agent's words are neutralised (no control sequences). */
export function describeReport(report: DoctorReport, command: string): string {
  const clean = (text: string) => neutraliseControls(text);
  const lines: string[] = [];
  for (const probe of report.probes) lines.push(`  ${PROBE_TITLES[probe.probe].padEnd(8)} ${probe.matched ? 'yes' : 'no '}  ${clean(probe.summary)}`);
  lines.push('');
  if (report.protocol === 'none') lines.push('Protocol: none of them');
  else lines.push(`Protocol: ${report.protocol}: ${PROTOCOL_TITLES[report.protocol]}${report.clear ? '' : `; but it also answered as ${report.alsoMatched.join(', ')}`}`);
  if (!report.isolated) lines.push('Probed without isolation (--unsafe-local).');
  if (report.problems.length > 0) {
    lines.push('What it does wrong:');
    for (const problem of report.problems) lines.push(`  - ${clean(problem)}`);
  } else if (report.protocol !== 'none') lines.push('Nothing wrong seen.');
  if (report.clear && report.protocol !== 'none') {
    const agent = shellQuote(command);
    const how = report.protocol.startsWith('nanobot')
      ? `belay nanobot --command ${agent} --protocol ${report.protocol.slice('nanobot-'.length)} --text "hello"`
      : `belay run TASK_DIR --agent ${agent} --protocol ${report.protocol}`;
    lines.push(`Run it with: ${clean(how)}`);
  }
  return `${lines.join('\n')}\n`;
}
