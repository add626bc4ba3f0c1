// The VS Code task type `belay`, so runs can be started from tasks.json:
//   { "type": "belay", "task": "tasks/hello-world", "agent": "Demo SDK 1.x agent" }
// The task's terminal shows the run live and closes with exit code 0 (passed) or 1.
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { RunnerService } from './service.ts';
import { OutputTerminal } from './terminal.ts';
import { EventFormatter } from './format.ts';

export const TASK_TYPE = 'belay';

interface BelayTaskDefinition extends vscode.TaskDefinition {
  task: string;
  agent: string;
}

function isDefinition(value: vscode.TaskDefinition): value is BelayTaskDefinition {
  return typeof value.task === 'string' && typeof value.agent === 'string';
}

export function belayTaskProvider(service: RunnerService): vscode.TaskProvider {
  const build = (definition: BelayTaskDefinition, scope: vscode.WorkspaceFolder | vscode.TaskScope = vscode.TaskScope.Workspace) => {
    const task = new vscode.Task(
      definition,
      scope,
      `${definition.task} with ${definition.agent}`,
      TASK_TYPE,
      new vscode.CustomExecution(async () => {
        const stop = new AbortController();
        const pty = new OutputTerminal({ closeWhenDone: true, onStop: () => stop.abort() });
        const found = service.findTask(definition.task);
        const agent = service.findAgent(definition.agent);
        const formatter = new EventFormatter();
        void (async () => {
          try {
            if (!found) throw new Error(`no task '${definition.task}' in this workspace (a folder with task.toml or task.yaml)`);
            if (!agent) throw new Error(`no agent named '${definition.agent}' (see the belay.agents setting)`);
            const result = await service.start(found, agent, { startedBy: 'task', signal: stop.signal, onEvent: (e) => pty.write(formatter.format(e)) });
            pty.end(result.passed ? 0 : 1);
          } catch (error) {
            pty.write(`\x1b[31mBelay: ${(error as Error).message}\x1b[0m\n`);
            pty.end(2);
          }
        })();
        return pty;
      }),
    );
    task.detail = 'Belay: run an agent on a task';
    return task;
  };
  return {
    provideTasks() {
      const folders = vscode.workspace.workspaceFolders ?? [];
      const tasks: vscode.Task[] = [];
      for (const t of service.tasks) {
        const folder = folders.find((f) => t.dir.startsWith(f.uri.fsPath + path.sep));
        const ref = folder ? path.relative(folder.uri.fsPath, t.dir) : t.dir;
        for (const agent of service.agents) tasks.push(build({ type: TASK_TYPE, task: ref, agent: agent.name }, folder ?? vscode.TaskScope.Workspace));
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
