// The runner's commands (package.json `belay.runner.*`): each is a small function of the runner's
// parts; errors reach the person through ctx.registerCommands' boundary.
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { errorMessage } from '../shared/errors.ts';
import { addAgent, openAgentSetting, setSecret } from './agentSettings.ts';
import { ChatTerminal } from './chat.ts';
import { microAgentSecretTexts, type Agent, type MicroAgent } from './core/agents/agents.ts';
import { CAUSE_WORDS } from './core/records/format.ts';
import type { PastRun } from './core/records/history.ts';
import { editorFix, suggestedProtocol } from './core/protocols/mismatch.ts';
import { instructionFile } from './core/tasks/layout.ts';
import type { RunResult } from './core/records/records.ts';
import type { Task } from './core/tasks/task.ts';
import { runInTerminal } from './terminal.ts';
import { pickAgent, pickRun, taskFromArg } from './pickers.ts';
import type { Prompts } from './prompts.ts';
import type { RunnerService } from './service.ts';
import type { Terminals } from './terminal.ts';
import type { TaskTests } from './testing.ts';
import { resumeJobCommand, runJobCommand } from './jobs.ts';
import { regradeJobCommand } from './regradeJob.ts';
import type { ResultsActions, ResultsPanel } from './resultsPanel.ts';
import type { TrajectoryPanels } from './trajectoryPanel.ts';
import type { TaskNode, TasksTree } from './tree.ts';
import { openRunFile } from './views.ts';
import { chooseVscodeModel } from './vscodeModels.ts';

/** The runner's editor parts, built once on first use (parts.ts); each command is a function of them. */
export interface RunnerParts {
  readonly ctx: BelayContext;
  readonly service: RunnerService;
  /** How terminals are made: tests replace `terminals.create` to read what runs write. */
  readonly terminals: Terminals;
  readonly tree: TasksTree;
  readonly tests: TaskTests;
  readonly trajectories: TrajectoryPanels;
  readonly results: ResultsPanel;
  /** The questions commands ask: tests replace its methods to answer them. */
  readonly prompts: Prompts;
}

type CommandHandler = (parts: RunnerParts, ...args: unknown[]) => unknown;

/**
 * The `belay.runner.<name>` commands. index.ts registers each name at activation; this module
 * (and what it imports) loads when one is first called.
 */
export const runnerCommands = {
  refresh: (parts) => parts.service.refresh(),
  runTask: (parts, arg?: unknown) => runTask(parts, arg),
  stopRun: (parts, arg?: unknown) => stopRun(parts, arg),
  repeatRun: (parts, arg?: unknown) => {
    const node = arg as TaskNode | undefined;
    if (node?.kind !== 'run') throw new Error('choose a run in the Tasks view to repeat');
    return repeatRun(parts, node.run);
  },
  openTrajectory: (parts, arg?: unknown) => openTrajectory(parts, arg),
  compareRuns: (parts, first?: unknown, second?: unknown) => compareRuns(parts, first, second),
  /** The Tasks view's "Compare with…" on a run: the same, with that run as A. */
  compareWith: (parts, first?: unknown, second?: unknown) => compareRuns(parts, first, second),
  openAgentSettings: async (parts, name?: unknown) => {
    const agent = typeof name === 'string' ? name : (await pickAgent(parts.service, 'Belay: Open Agent Settings', () => addAgent(parts.ctx, parts.service, parts.prompts)))?.name;
    if (agent) await openAgentSetting(agent);
  },
  openStepOutput: async (_parts, arg?: unknown) => {
    const node = arg as TaskNode | undefined;
    const file = typeof arg === 'string' ? arg : node?.kind === 'step' ? node.step.outputFile : undefined;
    if (!file) throw new Error('this step kept no output');
    await openRunFile(file);
  },
  openTask: async (parts, arg?: unknown) => {
    const task = await taskFromArg(parts.service, arg);
    if (task) await vscode.window.showTextDocument(vscode.Uri.file(instructionFile(task)), { preview: true });
  },
  addAgent: (parts) => addAgent(parts.ctx, parts.service, parts.prompts),
  setSecret: (parts, name?: unknown, value?: unknown) => setSecret(parts.service, name, value),
  chat: (parts, name?: unknown) => openChat(parts, name),
  openResults: (parts, jobDir?: unknown) => parts.results.show(typeof jobDir === 'string' ? jobDir : undefined),
  openJobFolder: (parts, dir?: unknown) => openJobFolder(parts, dir),
  runJob: (parts, arg?: unknown) => runJobCommand(parts, arg),
  resumeJob: (parts, jobDir?: unknown) => resumeJobCommand(parts, jobDir),
  regradeJob: (parts, jobDir?: unknown) => regradeJobCommand(parts, jobDir),
  chooseVscodeModel: (parts) => chooseVscodeModel(parts.ctx, parts.prompts),
} satisfies Record<string, CommandHandler>;

/** Runs a task (from the argument or a pick) with an agent (named by `arg.agent`, or picked). */
async function runTask(parts: RunnerParts, arg: unknown): Promise<RunResult | undefined> {
  const task = await taskFromArg(parts.service, arg);
  if (!task) return undefined;
  const agentName = typeof (arg as { agent?: unknown } | undefined)?.agent === 'string' ? (arg as { agent: string }).agent : undefined;
  const agent = agentName ? parts.service.findAgent(agentName) : await pickAgent(parts.service, `Belay: Run ${task.name} with…`, () => addAgent(parts.ctx, parts.service, parts.prompts), task);
  if (agentName && !agent) throw new Error(`no agent named '${agentName}'`);
  return agent ? runAndReport(parts, task, agent) : undefined;
}

/** Runs again a past run's task with the same agent (asks for one when the run names none). */
export async function repeatRun(parts: RunnerParts, run: PastRun): Promise<RunResult | undefined> {
  const { service } = parts;
  await service.refresh();
  const task = service.tasks.find((t) => t.dir === run.result.task_dir) ?? service.findTask(run.result.task_name);
  if (!task) throw new Error(`the task ${run.result.task_name} is no longer in this workspace`);
  const named = run.result.agent !== undefined ? service.findAgent(run.result.agent) : undefined;
  const agent = named ?? (await pickAgent(service, `Belay: Repeat ${task.name}`, () => addAgent(parts.ctx, service, parts.prompts), task));
  return agent ? runAndReport(parts, task, agent) : undefined;
}

/** Runs in a live terminal and says how it ended, with a way to the trajectory. */
async function runAndReport(parts: RunnerParts, task: Task, agent: Agent): Promise<RunResult> {
  const { ctx } = parts;
  ctx.trust.assert('runAgents');
  // Runs of the same task share one terminal (whatever the agent), once its last run has ended.
  const pty = parts.terminals.runTerminal(task.dir, `Belay: ${task.name}`, `with ${agent.name}`);
  const run = runInTerminal(parts.service, task, agent, { closeWhenDone: false, pty });
  const result = await run.result;
  const words = result.passed ? 'passed' : `failed: ${CAUSE_WORDS[result.failure_cause ?? ''] ?? result.failure_cause}`;
  const show = result.passed ? vscode.window.showInformationMessage : vscode.window.showWarningMessage;
  // A protocol mismatch is fixed in the agent's setting: the message says how, with the way there.
  const protocol = suggestedProtocol(result.error);
  const fix = protocol && result.error ? ` ${editorFix(result.error, agent.name)}.` : '';
  const actions = protocol ? ['Open Agent Settings', 'Open Trajectory'] : ['Open Trajectory'];
  void show(`Belay: ${task.name} with ${agent.name} ${words}.${fix}`, ...actions).then((choice) => {
    if (choice === 'Open Agent Settings') void openAgentSetting(agent.name).catch((error: unknown) => ctx.log.error(errorMessage(error)));
    else if (choice) void parts.trajectories.show(result.run_dir).catch((error: unknown) => ctx.log.error(errorMessage(error)));
  });
  return result;
}

/** Stops the run of a task node, the only run, or the runs picked. */
async function stopRun(parts: RunnerParts, arg: unknown): Promise<number> {
  const { service } = parts;
  const node = arg as TaskNode | undefined;
  if (node?.kind === 'task') return service.stop(service.activeRunOf(node.task)?.id ?? '\0');
  const active = service.activeRuns;
  if (active.length <= 1) return service.stop();
  const picked = await vscode.window.showQuickPick(
    [{ label: 'All runs', id: undefined as string | undefined }, ...active.map((r) => ({ label: `${r.task.name} · ${r.agent.name}`, id: r.id as string | undefined }))],
    { title: 'Belay: Stop Run' },
  );
  return picked ? service.stop(picked.id) : 0;
}

/** Opens a run's trajectory: a run folder, a run or step node (focusing the step), or a pick. */
async function openTrajectory(parts: RunnerParts, arg: unknown): Promise<void> {
  const node = arg as TaskNode | undefined;
  let runDir: string | undefined;
  if (typeof arg === 'string') runDir = arg;
  else if (node?.kind === 'run') runDir = node.run.result.run_dir;
  else if (node?.kind === 'step') runDir = node.run.run_dir;
  else runDir = await pickRun(parts.service, parts.ctx.config.get('runner.runsDir', vscode.workspace.workspaceFolders?.[0]));
  if (runDir) await parts.trajectories.show(runDir, node?.kind === 'step' ? node.step.step : undefined);
}

/** Opens a job folder (a Belay job elsewhere, or a Harbor job) in the Results view. */
async function openJobFolder(parts: RunnerParts, arg: unknown): Promise<void> {
  const dir =
    typeof arg === 'string'
      ? arg
      : (await vscode.window.showOpenDialog({ canSelectFolders: true, canSelectFiles: false, canSelectMany: false, openLabel: 'Open in Results', title: 'Belay: a job folder (Belay or Harbor)' }))?.[0]?.fsPath;
  if (dir) await parts.results.show(dir);
}

/** A run folder from a command's argument: a folder path, or a run node of the Tasks view. */
function runDirOf(arg: unknown): string | undefined {
  if (typeof arg === 'string') return arg;
  const node = arg as TaskNode | undefined;
  return node?.kind === 'run' ? node.run.result.run_dir : undefined;
}

/**
 * Opens two runs side by side: two run folders, two run nodes selected in the Tasks view (the
 * clicked one and the selection), one run node and a pick of the other, or two picks.
 */
async function compareRuns(parts: RunnerParts, first: unknown, second: unknown): Promise<void> {
  const runsDir = parts.ctx.config.get('runner.runsDir', vscode.workspace.workspaceFolders?.[0]);
  const selected = Array.isArray(second) ? second.map(runDirOf).filter((dir): dir is string => dir !== undefined) : [];
  let left = runDirOf(first);
  let right = Array.isArray(second) ? selected.find((dir) => dir !== left) : runDirOf(second);
  if (!left) {
    left = await pickRun(parts.service, runsDir, { title: 'Belay: Compare Runs (1/2)', placeHolder: 'The first run (A)' });
    if (!left) return;
  }
  if (!right) {
    const besides = parts.service.allRuns.find((run) => run.result.run_dir === left);
    right = await pickRun(parts.service, runsDir, { title: 'Belay: Compare Runs (2/2)', placeHolder: 'The run to compare it with (B)', ...(besides ? { besides } : {}) });
    if (!right) return;
  }
  await compareRunFolders(parts, left, right);
}

/** Two run folders side by side: the end of Compare Runs, and the Results panel's pair of runs. */
export async function compareRunFolders(parts: RunnerParts, left: string, right: string): Promise<void> {
  if (left === right) throw new Error('choose two different runs to compare');
  await parts.trajectories.compare(left, right);
}

/** The Results panel's buttons: the functions their commands run, called typed from the panel. */
export const resultsCommands: Record<Parameters<ResultsActions['command']>[0], (parts: RunnerParts) => Promise<unknown>> = {
  runJob: (parts) => runJobCommand(parts),
  resumeJob: (parts) => resumeJobCommand(parts),
  openJobFolder: (parts) => openJobFolder(parts, undefined),
  regradeJob: (parts) => regradeJobCommand(parts),
};

/** Opens a chat terminal with a micro-agent (named, or picked). */
async function openChat(parts: RunnerParts, arg: unknown): Promise<ChatTerminal | undefined> {
  const { ctx, service } = parts;
  ctx.trust.assert('runAgents');
  await service.refresh();
  const agents = service.microAgents;
  let agent: MicroAgent | undefined = typeof arg === 'string' ? agents.find((a) => a.name === arg) : undefined;
  if (!agent) {
    if (agents.length === 0) throw new Error('no micro-agent is configured: add one to the belay.microAgents setting (command, protocol rich or plain, timeout, env, providers)');
    agent = (await vscode.window.showQuickPick(agents.map((a) => ({ label: a.name, description: `${a.protocol}, timeout ${a.timeout} s`, detail: a.command, agent: a })), { title: 'Belay: Chat with Micro-agent' }))?.agent;
    if (!agent) return undefined;
  }
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? agent.baseDir;
  const chosen = agent;
  const chat = new ChatTerminal({
    agent: chosen,
    workspace: path.join(folder, '.belay', 'micro-agents', chosen.name.replace(/[^A-Za-z0-9._-]/g, '_')),
    secrets: () => service.secretsFor(microAgentSecretTexts(chosen)),
    refusal: () => ctx.trust.refusal('runAgents'),
    log: ctx.log,
    // Isolated like task agents: a container, else the sandbox; on the host only when chosen.
    launcher: async () => {
      const { microAgentLauncher } = await import('./core/backends/nanobot-launch.ts');
      const { isolates } = await import('./core/backends/choose.ts');
      const { AgentFolderError, resolveMicroAgentFolder } = await import('./core/agents/agentFolder.ts');
      const { expandCommand } = await import('./core/agents/agents.ts');
      const backend = ctx.config.get('runner.backend');
      let folder;
      try {
        // Its program's folder (the command named from where it was declared), else that folder; never the home folder or /.
        folder = resolveMicroAgentFolder({ command: expandCommand(chosen.command, process.execPath, chosen.baseDir), workspace: chosen.baseDir, cwd: chosen.baseDir, isolated: isolates(backend), option: `a folder of its own for micro-agent '${chosen.name}'` });
      } catch (error) {
        if (error instanceof AgentFolderError) throw new Error(error.message);
        throw error;
      }
      return microAgentLauncher({ backend, engine: ctx.config.get('runner.containerEngine'), agentFolders: [folder, path.dirname(process.execPath)] });
    },
  });
  parts.terminals.openChat(`Belay chat: ${chosen.name}`, chat);
  return chat;
}
