// The VS Code task type `belay`, so runs can be started from tasks.json:
//   { "type": "belay", "task": "tasks/hello-world", "agent": "Demo SDK 1.x agent" }
// The task's terminal shows the run live and closes with exit code 0 (passed) or 1.
import * as path from 'node:path';
import * as vscode from 'vscode';
import { TASK_FOLDER } from './core/tasks/layout.ts';
import { failedTerminal, runInTerminal } from './terminal.ts';
import type { RunnerService } from './service.ts';

export const TASK_TYPE = 'belay';

interface BelayTaskDefinition extends vscode.TaskDefinition {
  task: string;
  agent: string;
}

function isDefinition(value: vscode.TaskDefinition): value is BelayTaskDefinition {
  return typeof value.task === 'string' && typeof value.agent === 'string';
}

/**
 * The provider, registered at activation; `service` loads the runner when tasks are first asked
 * for, which may be before it has read the workspace (`onTaskType:belay` activates Belay for them).
 */
export function belayTaskProvider(service: () => RunnerService): vscode.TaskProvider {
  const build = (definition: BelayTaskDefinition, scope: vscode.WorkspaceFolder | vscode.TaskScope = vscode.TaskScope.Workspace) => {
    const task = new vscode.Task(
      definition,
      scope,
      `${definition.task} with ${definition.agent}`,
      TASK_TYPE,
      new vscode.CustomExecution(async () => {
        const runner = service();
        if (!runner.loaded) await runner.refresh();
        const found = runner.findTask(definition.task);
        if (!found) return failedTerminal(`no task '${definition.task}' in this workspace (${TASK_FOLDER})`);
        const agent = runner.findAgent(definition.agent);
        if (!agent) return failedTerminal(`no agent named '${definition.agent}' (see the belay.agents setting)`);
        const run = runInTerminal(runner, found, agent, { closeWhenDone: true });
        // A run that could not start says why in its terminal, which closes with exit code 2.
        run.result.catch(() => undefined);
        return run.pty;
      }),
    );
    task.detail = 'Belay: run an agent on a task';
    return task;
  };
  return {
    async provideTasks() {
      const runner = service();
      if (!runner.loaded) await runner.refresh();
      const folders = vscode.workspace.workspaceFolders ?? [];
      const tasks: vscode.Task[] = [];
      const agents = runner.agents;
      for (const t of runner.tasks) {
        const folder = folders.find((f) => t.dir.startsWith(f.uri.fsPath + path.sep));
        const ref = folder ? path.relative(folder.uri.fsPath, t.dir) : t.dir;
        for (const agent of agents) tasks.push(build({ type: TASK_TYPE, task: ref, agent: agent.name }, folder ?? vscode.TaskScope.Workspace));
      }
      return tasks;
    },
    resolveTask(task) {
      const definition = task.definition;
      if (!isDefinition(definition)) return undefined;
      const scope = task.scope ?? vscode.TaskScope.Workspace;
      return build(definition, scope);
    },
  };
}
