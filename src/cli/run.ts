// `belay run`: runs an agent on tasks, live progress on stderr, a summary table at the end.
import { existsSync, statSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseCommandLine } from '../shared/args.ts';
import { onSignals, UsageError, type CliIO } from './io.ts';
import { errorMessage } from '../shared/errors.ts';
import { parseEnvOptions } from '../runner/core/agents/agents.ts';
import { BackendUnavailableError, type Backend } from '../runner/core/backends/backend.ts';
import { BACKEND_NAMES, BACKENDS, isBackendName, pickBackend } from '../runner/core/backends/choose.ts';
import { protocolDescriptors } from '../runner/core/protocols/descriptors.ts';
import { helpLines } from './help.ts';
import type { Protocol, RunEvent } from '../runner/core/records/events.ts';
import { isProtocol, protocolNamed } from '../runner/core/protocols/index.ts';
import type { RunLimits } from '../runner/core/protocols/agentProtocol.ts';
import { formatTokens, formatUsd, llmLine, rewardWords } from '../runner/core/records/format.ts';
import { neutraliseControls } from '../shared/terminalText.ts';
import { budgetWords } from '../runner/core/run/runLlm.ts';
import { defaultAgentCache, ensureInstalled, InstallError, launchCommand } from '../runner/core/protocols/installed/install.ts';
import { installedAgent } from '../runner/core/protocols/installed/installedAgents.ts';
import { checkLlmKey, LLM_FLAGS, LLM_USAGE, parseLlmFlags, startLlm, type LlmFlags } from './llm.ts';
import { addLlmUsage, type RunResult } from '../runner/core/records/records.ts';
import { runTask } from '../runner/core/run/run.ts';
import { signalLines } from '../runner/core/records/signals.ts';
import { discoverTasks } from '../runner/core/tasks/task.ts';
import { AgentFolderError, resolveAgentFolder } from '../runner/core/agents/agentFolder.ts';
import { existingFile, existingFolder, folderToMake } from './paths.ts';
import { parseEngineHosts } from '../runner/core/backends/engine-remote.ts';

const PROTOCOL_NAMES = protocolDescriptors().map((d) => d.name);

/** Printed by `belay run --help` (and when no action is given). */
export const usage = `Usage: belay run TASK_DIR... --agent "COMMAND" --protocol ${PROTOCOL_NAMES.join('|')} [options]

Runs an agent on each task found under the TASK_DIRs (task.toml or task.yaml layouts), then
the task's tests. Live progress goes to stderr; a summary table (or JSON) to stdout.

Options:
  --agent "COMMAND"        the agent's shell command, run in the agent's folder; its program
                           (a path as the first word, or the script of python3, node, bash,
                           sh, uv run, npx tsx, …) is named absolutely or from this folder;
                           with an installed CLI's protocol (claude-code, …) it may be left
                           out: Belay installs the pinned CLI into ~/.cache/belay/agents
  --agent-dir DIR          the agent's folder (default: the folder of the program the command
                           names, else the current folder; never the home folder or /); an
                           isolating backend shows it read-only, without the task folders or
                           run records
  --protocol ${PROTOCOL_NAMES.join('|')}
${helpLines(protocolDescriptors().map((d) => `${d.name}: ${d.usage}`).join('; '))}
  --backend ${BACKEND_NAMES.join('|')}
${BACKENDS.map((b) => helpLines(`${b.name}: ${b.usage};`)).join('\n')}
${helpLines(`default: the best isolating backend that works here (${BACKENDS.filter((b) => b.automatic).map((b) => b.name).join(', else ')})`)}
  --engine podman|docker   the container backend's engine (default: podman, else docker)
  --engine-host ssh://USER@HOST[:PORT][/SOCKET]
                           run the containers on another machine's engine over SSH (repeat for
                           several: trials spread by each host's free CPUs); your SSH key and
                           known hosts (CONTAINER_SSHKEY for podman), no port opened there
  --env KEY=VALUE          a variable for the agent (repeatable); KEY alone passes it on from
                           this shell. The agent gets these and PATH, HOME, LANG, TERM: nothing
                           else of this environment
${LLM_USAGE}  --max-steps N            step limit (default 200)
  --agent-timeout S        the agent's time in seconds (default: the task's)
  --command-timeout S      one command's time in seconds, SDK 1.x (default 120)
  --silence-timeout S      longest wait for one SDK 1.x response (default 300)
  --log-limit MB           each log on disk keeps its first and last MB/2 (default 16)
  --disk-budget MB         the most a run folder may grow to (default 4096)
  --out DIR                where run folders go (default .belay/runs)
  --allow-public-network   let a task whose network_mode is "public" run (through Belay's
                           proxy, public hosts only); without it such a task does not start
  --wheelhouse DIR         a folder of wheels a Python agent's requirements.txt (beside its
                           program) is installed from before it starts, with no network;
                           without it, only from the package index where the agent phase's
                           network reaches pypi.org and files.pythonhosted.org
  --concurrency N          tasks run at once (default 1; in a job: the machine's cores)
  --json                   print the results as JSON instead of the table

Jobs (several attempts per task, pass@k):
  --attempts K             run every task K times as one job: DIR/<job-id>/job.json (per task
                           attempts, passed, pass@1, pass@k, mean reward, time, tokens, cost)
                           and one run folder per trial; DIR is --out (default .belay/jobs)
  --resume DIR/<job-id>    go on with a job that was stopped or killed: finished trials are
                           kept, the others run (the job's own settings; --concurrency and
                           --env may be given again)
  --regrade DIR/<job-id>   grade the job's trials again with each task's current verifier, on
                           the final working folder each run kept, in a fresh environment: no
                           agent, no key, no gateway (--backend, --engine, --json and
                           --allow-public-network may be given); the verifier has the task's
                           current [verifier] network, its attempts in <run>/regrade/<time>/
                           network.jsonl; the new verification goes beside the old one
                           (<run>/regrade/<time>/verification.json), result.json is untouched;
                           prints per task what went up or down and a summary line
  -h, --help               show this help

Exit status: 0 when every task passed, 1 when any failed, 2 for usage errors.
Examples:
  belay run tasks/hello --agent "python3 agent.py" --protocol sdk1 --max-steps 50
  belay run tasks --agent "python3 agent.py" --protocol sdk1 --attempts 5 --concurrency 4
  belay run tasks/hello --protocol claude-code --llm-upstream https://api.anthropic.com \\
    --llm-key-env ANTHROPIC_API_KEY --llm-model claude-sonnet-4-5
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
    'agent-dir': { type: 'string' },
    engine: { type: 'string' },
    'engine-host': { type: 'string', multiple: true, default: [] },
    protocol: { type: 'string' },
    backend: { type: 'string' },
    env: { type: 'string', multiple: true, default: [] },
    'log-limit': { type: 'string' },
    'disk-budget': { type: 'string' },
    'max-steps': { type: 'string' },
    'agent-timeout': { type: 'string' },
    'command-timeout': { type: 'string' },
    'silence-timeout': { type: 'string' },
    out: { type: 'string' },
    concurrency: { type: 'string' },
    json: { type: 'boolean' },
    'allow-public-network': { type: 'boolean' },
    wheelhouse: { type: 'string' },
    attempts: { type: 'string' },
    resume: { type: 'string' },
    regrade: { type: 'string' },
    ...LLM_FLAGS,
  });
  if (values.regrade !== undefined) {
    const given = Object.entries(values).filter(([key, value]) => !REGRADE_FLAGS.includes(key) && value !== undefined && !(Array.isArray(value) && value.length === 0)).map(([key]) => key);
    if (positionals.length > 0) throw new UsageError(`no TASK_DIR with --regrade: the job's tasks are in its job.json`);
    if (given.length > 0) throw new UsageError(`--${given[0]} cannot be given with --regrade: no agent runs and no model is called`);
    if (values.backend !== undefined && !isBackendName(values.backend)) throw new UsageError(`--backend must be ${BACKEND_NAMES.join(' or ')} (got '${values.backend}')`);
    if (values.engine !== undefined && values.engine !== 'podman' && values.engine !== 'docker') throw new UsageError(`--engine must be podman or docker (got '${values.engine}')`);
    const { regradeCli } = await import('./runRegrade.ts');
    const jobDir = path.basename(values.regrade) === 'job.json' ? path.dirname(existingFile(values.regrade, '--regrade', io.cwd)) : existingFolder(values.regrade, '--regrade', io.cwd);
    return regradeCli({ jobDir, ...(values.backend !== undefined ? { backend: values.backend } : {}), ...(values.engine !== undefined ? { engine: values.engine } : {}), json: values.json === true, allowPublicNetwork: values['allow-public-network'] === true }, io);
  }
  if (values.resume !== undefined) {
    const given = Object.entries(values).filter(([key, value]) => !RESUME_FLAGS.includes(key) && value !== undefined && !(Array.isArray(value) && value.length === 0)).map(([key]) => key);
    if (positionals.length > 0) throw new UsageError(`no TASK_DIR with --resume: the job's tasks are in its job.json`);
    if (given.length > 0) throw new UsageError(`--${given[0]} cannot be given with --resume: the job's settings are in its job.json`);
    const { resumeJob } = await import('./runJob.ts');
    // The job's folder, or its job.json.
    const jobDir = path.basename(values.resume) === 'job.json' ? path.dirname(existingFile(values.resume, '--resume', io.cwd)) : existingFolder(values.resume, '--resume', io.cwd);
    return resumeJob({ jobDir, concurrency: positiveNumber(values.concurrency, '--concurrency', true), envOptions: values.env, json: values.json === true }, io);
  }
  const llmFlags = parseLlmFlags(values);
  // The key's variable is checked before anything runs: a run without its key would fail only at its first model call.
  if (llmFlags) checkLlmKey(llmFlags, io.env);
  if (positionals.length === 0) throw new UsageError('no TASK_DIR given: name at least one folder holding tasks');
  if (!isProtocol(values.protocol)) {
    throw new UsageError(`--protocol must be ${PROTOCOL_NAMES.join(', ').replace(/, (?=[^,]*$)/, ' or ')} (got ${values.protocol === undefined ? 'nothing' : `'${values.protocol}'`}): the protocol is never guessed (belay agent doctor finds it)`);
  }
  const protocol: Protocol = values.protocol;
  const installed = installedAgent(protocol);
  if (!values.agent?.trim() && !installed) throw new UsageError('--agent "COMMAND" is required');
  if (installed && !llmFlags) throw new UsageError(`--protocol ${protocol} needs --llm-upstream URL: ${installed.title} reaches its model only through Belay's gateway`);
  const backendName = values.backend;
  if (backendName !== undefined && !isBackendName(backendName)) throw new UsageError(`--backend must be ${BACKEND_NAMES.join(' or ')} (got '${backendName}')`);
  if (values.engine !== undefined && values.engine !== 'podman' && values.engine !== 'docker') throw new UsageError(`--engine must be podman or docker (got '${values.engine}')`);
  const engineHosts = values['engine-host'];
  try {
    parseEngineHosts(engineHosts);
  } catch (error) {
    throw new UsageError(`--engine-host: ${errorMessage(error)}`);
  }
  if (engineHosts.length > 0 && backendName !== undefined && backendName !== 'container') throw new UsageError(`--engine-host runs containers on other machines: it needs --backend container (got '${backendName}')`);
  let env: Record<string, string>;
  try {
    env = parseEnvOptions(values.env);
  } catch (error) {
    throw new UsageError(`--env: ${errorMessage(error)}`);
  }
  const limits: Partial<RunLimits> = {};
  const maxSteps = positiveNumber(values['max-steps'], '--max-steps', true);
  if (maxSteps !== undefined) limits.maxSteps = maxSteps;
  const agentTimeout = positiveNumber(values['agent-timeout'], '--agent-timeout');
  if (agentTimeout !== undefined) limits.agentTimeoutMs = agentTimeout * 1000;
  const commandTimeout = positiveNumber(values['command-timeout'], '--command-timeout');
  if (commandTimeout !== undefined) limits.commandTimeoutMs = commandTimeout * 1000;
  const silenceTimeout = positiveNumber(values['silence-timeout'], '--silence-timeout');
  if (silenceTimeout !== undefined) limits.silenceTimeoutMs = silenceTimeout * 1000;
  const logLimit = positiveNumber(values['log-limit'], '--log-limit');
  if (logLimit !== undefined) limits.maxLogBytes = Math.round(logLimit * 1024 * 1024);
  const diskBudget = positiveNumber(values['disk-budget'], '--disk-budget');
  if (diskBudget !== undefined) limits.diskBudgetBytes = Math.round(diskBudget * 1024 * 1024);
  const attempts = positiveNumber(values.attempts, '--attempts', true);
  const concurrency = positiveNumber(values.concurrency, '--concurrency', true) ?? 1;
  // Every path is checked before anything runs: one line naming it, exit 2.
  const runsDir = folderToMake(values.out ?? path.join('.belay', attempts === undefined ? 'runs' : 'jobs'), '--out', io.cwd);
  if (values['agent-dir'] !== undefined) existingFolder(values['agent-dir'], '--agent-dir', io.cwd);
  const wheelhouse = values.wheelhouse !== undefined ? existingFolder(values.wheelhouse, '--wheelhouse', io.cwd) : undefined;
  for (const given of positionals) existingFolder(given, 'task folder', io.cwd);

  const { tasks, errors } = await discoverTasks(positionals.map((p) => path.resolve(io.cwd, p)));
  for (const error of errors) io.stderr.write(`belay run: broken task: ${error.message}\n`);
  if (tasks.length === 0 && errors.length === 0) throw new UsageError(`no task (task.toml or task.yaml) under ${positionals.join(', ')}`);

  let backend: Backend;
  try {
    backend = await pickBackend(engineHosts.length > 0 ? 'container' : backendName, { container: { ...(values.engine !== undefined ? { engine: values.engine } : {}), ...(engineHosts.length > 0 ? { engineHosts } : {}) } });
  } catch (error) {
    if (!(error instanceof BackendUnavailableError)) throw error;
    io.stderr.write(`belay run: ${error.message}\nRun with --backend local to run without isolation.\n`);
    return 1;
  }
  if (attempts === undefined) io.stderr.write(`belay run: ${tasks.length} task(s), protocol ${protocol}, backend ${backend.label}\n`);
  // An installed CLI the command line does not name: Belay's pinned version, installed once.
  let values_agent = values.agent;
  let agentDirGiven = values['agent-dir'];
  if (installed && !values.agent?.trim()) {
    try {
      const cli = await ensureInstalled(installed, { cache: defaultAgentCache(io.env), onProgress: (message) => io.stderr.write(`belay run: ${message}\n`) });
      values_agent = launchCommand(installed, cli);
      agentDirGiven = cli.folder;
    } catch (error) {
      if (!(error instanceof InstallError)) throw error;
      io.stderr.write(`belay run: ${error.message}\n`);
      return 1;
    }
  }
  // The agent's folder: the one given, else its program's; its program must be visible in it.
  let agentFolder;
  try {
    agentFolder = resolveAgentFolder({
      command: values_agent!,
      base: io.cwd,
      given: agentDirGiven,
      hidden: [...tasks.map((t) => t.dir), runsDir],
      option: '--agent-dir DIR',
      isolated: backend.isolated,
    });
  } catch (error) {
    if (error instanceof AgentFolderError) throw new UsageError(error.message);
    throw error;
  }
  const agentCwd = agentFolder.dir;
  const agentCommand = agentFolder.command;
  if (agentFolder.notice) io.stderr.write(`belay run: ${agentFolder.notice}\n`);

  // Every task of this run stays out of the agent's sight, not only the one being run: the
  // folders named on the command line too, unless the agent's own folder is inside one.
  const roots = positionals.map((p) => path.resolve(io.cwd, p)).filter((root) => !isInside(agentCwd, root));
  const hidden = [...tasks.map((t) => t.dir), ...errors.map((e) => taskFolderOf(e.file)), ...roots];
  if (attempts !== undefined) {
    const { newJob } = await import('./runJob.ts');
    const code = await newJob(
      {
        jobsDir: runsDir,
        tasks,
        attempts,
        concurrency: positiveNumber(values.concurrency, '--concurrency', true),
        agent: agentCommand,
        agentCwd,
        protocol,
        backend,
        engine: values.engine,
        engineHosts,
        limits,
        envOptions: values.env,
        env,
        hidden,
        llm: llmFlags,
        allowPublicNetwork: values['allow-public-network'] === true,
        ...(wheelhouse !== undefined ? { wheelhouse } : {}),
        json: values.json === true,
      },
      io,
    );
    return errors.length > 0 ? Math.max(code, 1) : code;
  }

  const llm = llmFlags ? await startLlm(llmFlags, io.env) : undefined;
  if (llm) io.stderr.write(`belay run: the agent may call ${llmFlags!.upstream} through Belay's gateway${budgetNote(llmFlags!)}\n`);
  const controller = new AbortController();
  const onSigint = () => {
    io.stderr.write('\nbelay run: stopping (killing every agent and command)...\n');
    controller.abort();
  };
  const offSigint = onSignals(['SIGINT'], onSigint);
  const results: RunResult[] = [];
  try {
    let next = 0;
    const worker = async () => {
      while (next < tasks.length && !controller.signal.aborted) {
        const task = tasks[next++]!;
        results.push(
          await runTask({
            task,
            agentCommand,
            agentCwd,
            // The agent's command may name Belay's own runtime.
            agentFolders: [path.dirname(process.execPath)],
            hidden,
            protocol: protocolNamed(protocol),
            backend,
            runsDir,
            limits,
            env,
            ...(llm ? { llm: llm.options } : {}),
            allowPublicNetwork: values['allow-public-network'] === true,
            ...(wheelhouse !== undefined ? { wheelhouse } : {}),
            onEvent: (event) => io.stderr.write(progressLine(task.name, event)),
            signal: controller.signal,
          }),
        );
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, tasks.length) }, worker));
  } finally {
    offSigint();
    await llm?.host.close();
  }
  results.sort((a, b) => a.task_name.localeCompare(b.task_name));
  if (values.json) io.stdout.write(JSON.stringify({ results, broken_tasks: errors.map((e) => e.message) }, null, 2) + '\n');
  else io.stdout.write(summaryTable(results, errors.map((e) => path.relative(io.cwd, e.file) || e.file)));
  return results.every((r) => r.passed) && errors.length === 0 && results.length === tasks.length ? 0 : 1;
}

/** " (budget $0.5 a run)" when the flags set one. */
function budgetNote(flags: LlmFlags): string {
  return flags.budgetUsd !== undefined || flags.budgetTokens !== undefined ? ` (budget ${budgetWords({ usd: flags.budgetUsd, tokens: flags.budgetTokens })} a run)` : '';
}

/** The flags a regrade takes: where the verifiers run, and how the result is printed. */
const REGRADE_FLAGS = ['regrade', 'backend', 'engine', 'json', 'allow-public-network'];

/** The flags a resumed job takes; every other setting is the job's own. */
const RESUME_FLAGS = ['resume', 'concurrency', 'env', 'json'];

function isInside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** The folder a broken task's error names: the file's folder, or the folder itself. */
function taskFolderOf(file: string): string {
  return existsSync(file) && statSync(file).isDirectory() ? file : path.dirname(file);
}

/** The reward column of a run with no single reward: its metrics, one by one. */
function metricCell(metrics: Readonly<Record<string, number>> | undefined): string {
  return neutraliseControls(rewardWords(null, metrics));
}

function oneLine(text: string, max = 160): string {
  // Text from the agent or its tests (metric names, errors) never reaches the terminal as controls.
  const flat = neutraliseControls(text.replace(/\s+/g, ' ').trim());
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
      return `${p} tests: ${neutraliseControls(rewardWords(event.verification.reward, event.verification.metrics))}${event.verification.error ? ` (${oneLine(event.verification.error)})` : ''}\n`;
    case 'run-ended': {
      const flagged = (event.result.signals ?? []).length;
      const signals = flagged > 0 ? ` · ${flagged} reward-hacking signal${flagged === 1 ? '' : 's'}` : '';
      return `${p} ${event.result.passed ? 'PASSED' : `FAILED: ${event.result.failure_cause}: ${oneLine(event.result.error ?? '')}`}${signals}\n`;
    }
    default:
      return '';
  }
}

export function summaryTable(results: readonly RunResult[], broken: readonly string[] = []): string {
  // Tokens and cost only when a run called a model through the gateway.
  const llm = results.some((r) => r.llm !== undefined);
  const usage = (r: RunResult) => (llm ? [r.llm ? formatTokens(r.llm.input_tokens + r.llm.output_tokens) : '-', r.llm ? formatUsd(r.llm.cost_usd) : '-'] : []);
  const rows = [
    ['task', 'result', 'reward', 'steps', 'time', ...(llm ? ['tokens', 'cost'] : []), 'backend', 'cause'],
    ...results.map((r) => [
      r.task_name,
      r.passed ? 'passed' : 'failed',
      r.reward === null ? metricCell(r.metrics) : String(Math.round(r.reward * 100) / 100),
      String(r.steps),
      `${r.duration_sec.toFixed(1)}s`,
      ...usage(r),
      r.backend,
      r.failure_cause ?? '',
    ]),
    ...broken.map((file) => [file, 'failed', '0', '0', '-', ...(llm ? ['-', '-'] : []), '-', 'setup_error']),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const lines = rows.map((row) => row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd());
  lines.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '));
  const passed = results.filter((r) => r.passed).length;
  const spent = results.flatMap((r) => (r.llm ? [r.llm] : []));
  const total = spent.length === 0 ? '' : `; model calls: ${llmLine(spent.reduce(addLlmUsage))}`;
  // What the agents did that a grader should look at twice (reading the tests, a refused host…), one line a run.
  const flagged = results.filter((r) => (r.signals ?? []).length > 0);
  const signals = flagged.map((r) => `${os.EOL}reward-hacking signals: ${neutraliseControls(r.task_name)}: ${neutraliseControls(signalLines(r.signals!).join('; '))}`).join('');
  const flaggedWords = flagged.length > 0 ? `; ${flagged.length} flagged for reward hacking` : '';
  return `${lines.join(os.EOL)}${os.EOL}${passed}/${results.length + broken.length} passed${total}${flaggedWords}${signals}${os.EOL}`;
}
