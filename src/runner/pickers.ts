// Which task, agent or run a command is about: read from the command's argument (a Tasks view
// node, a file in a task, `{ task, agent }` from tasks.json, keybindings or tests) or asked for.
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Agent } from './core/agents/agents.ts';
import { PROTOCOL_DESCRIPTORS } from './core/protocols/descriptors.ts';
import { formatDuration, rewardWords } from './core/records/format.ts';
import type { PastRun } from './core/records/history.ts';
import { trialWords, type RunOrTrial } from './core/results/jobRuns.ts';
import { TASK_FOLDER } from './core/tasks/layout.ts';
import type { Task } from './core/tasks/task.ts';
import type { RunnerService } from './service.ts';

async function pickTask(service: RunnerService): Promise<Task | undefined> {
  await service.refresh();
  if (service.tasks.length === 0) throw new Error(`there is no task in this workspace (${TASK_FOLDER})`);
  const picked = await vscode.window.showQuickPick(
    service.tasks.map((task) => ({ label: task.name, description: vscode.workspace.asRelativePath(task.dir), detail: task.instruction.replace(/\s+/g, ' ').slice(0, 120), task })),
    { title: 'Belay: Run Task with Agent', placeHolder: 'Which task?' },
  );
  return picked?.task;
}

/** The task a command's argument names (a node, a file in a task folder, a path or name), else a pick. */
export async function taskFromArg(service: RunnerService, arg: unknown): Promise<Task | undefined> {
  if (arg instanceof vscode.Uri) {
    await service.refresh();
    const found = service.tasks.find((t) => arg.fsPath === t.dir || arg.fsPath.startsWith(t.dir + path.sep));
    if (!found) throw new Error(`${vscode.workspace.asRelativePath(arg)} is not inside a task folder`);
    return found;
  }
  const ref = typeof arg === 'object' && arg !== null ? (arg as { task?: unknown }).task : undefined;
  // A Tasks view node carries the task itself.
  if (typeof ref === 'object' && ref !== null) return ref as Task;
  if (typeof ref === 'string') {
    await service.refresh();
    const found = service.findTask(ref);
    if (!found) throw new Error(`no task '${ref}' in this workspace`);
    return found;
  }
  return pickTask(service);
}

/** "last run: passed" / "last run: failed (tests_failed)": how the agent's last run of the task ended. */
function lastRunOf(service: RunnerService, task: Task | undefined, agent: Agent): string | undefined {
  const last = task ? service.runsOf(task).find((run) => run.result.agent === agent.name)?.result : undefined;
  if (!last) return undefined;
  return `last run: ${last.passed ? 'passed' : `failed (${last.failure_cause ?? 'unknown'})`}`;
}

/** "SDK 1.x (JSON lines)": an agent's protocol in a pick. */
function protocolWords(agent: Agent): string {
  const descriptor = PROTOCOL_DESCRIPTORS[agent.protocol];
  return descriptor ? `${descriptor.title} (${descriptor.manner})` : agent.protocol;
}

/** Asks for an agent (with how its last run of `task` ended); the last entry adds one (`addAgent` returns its name). */
export async function pickAgent(service: RunnerService, title: string, addAgent: () => Promise<string | undefined>, task?: Task): Promise<Agent | undefined> {
  const agents = service.agents;
  const add = { label: '$(add) Add Agent…', description: 'configure a command and its protocol', agent: undefined };
  const items = [
    ...agents.map((agent) => ({
      label: agent.name,
      description: [protocolWords(agent), lastRunOf(service, task, agent)].filter(Boolean).join(' · '),
      detail: agent.command,
      agent,
    })),
    add,
  ];
  const picked = await vscode.window.showQuickPick(items, { title, placeHolder: agents.length > 0 ? 'Which agent?' : 'No agent is configured yet' });
  if (!picked) return undefined;
  if (picked.agent) return picked.agent;
  const name = await addAgent();
  return name ? service.findAgent(name) : undefined;
}

/** A run as pickers show it: result and task, then agent and when, then what it took. */
function runPickItem(run: RunOrTrial): vscode.QuickPickItem & { runDir: string } {
  const r = run.result;
  const icon = r.passed ? 'pass' : r.failure_cause === 'aborted' ? 'circle-slash' : 'error';
  const result = r.passed ? 'passed' : `failed: ${r.failure_cause ?? 'unknown'}`;
  const when = new Date(r.started_at);
  return {
    label: `$(${icon}) ${r.task_name}`,
    // A job's trial says which: "attempt 2 of 6 in job 20261127T…".
    description: [result, r.agent ?? `${r.protocol} (belay run)`, ...(run.job ? [trialWords(run.job)] : []), Number.isNaN(when.getTime()) ? r.started_at : when.toLocaleString()].join(' · '),
    detail: `${rewardWords(r.reward, r.metrics)} · ${r.steps} step${r.steps === 1 ? '' : 's'} · ${formatDuration(r.duration_sec * 1000)}`,
    runDir: r.run_dir,
  };
}

/** Asks for one of the workspace's past runs; its folder, or undefined when none was chosen. */
export async function pickRun(service: RunnerService, runsDirSetting: string, options: { title?: string; placeHolder?: string; besides?: PastRun } = {}): Promise<string | undefined> {
  await service.refresh();
  const { besides } = options;
  const runs = service.allRuns.filter((run) => run.result.run_dir !== besides?.result.run_dir);
  if (runs.length === 0) throw new Error(besides ? 'there is no other run to compare with' : `no run yet: runs are kept in ${runsDirSetting} of the workspace folder`);
  type Item = vscode.QuickPickItem & { runDir?: string };
  let items: Item[] = runs.map(runPickItem);
  if (besides) {
    // To compare a run, the runs of the same task come first.
    const same = runs.filter((run) => run.result.task_dir === besides.result.task_dir);
    const others = runs.filter((run) => run.result.task_dir !== besides.result.task_dir);
    items = [
      ...(same.length > 0 ? [{ kind: vscode.QuickPickItemKind.Separator, label: `runs of ${besides.result.task_name}` }, ...same.map(runPickItem)] : []),
      ...(others.length > 0 ? [{ kind: vscode.QuickPickItemKind.Separator, label: 'other tasks' }, ...others.map(runPickItem)] : []),
    ];
  }
  const picked = await vscode.window.showQuickPick(items, { title: options.title ?? 'Belay: Open Run Trajectory', placeHolder: options.placeHolder ?? 'Which run?', matchOnDescription: true });
  return picked?.runDir;
}
