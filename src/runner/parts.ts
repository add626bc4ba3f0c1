// The runner itself, made on first use (index.ts registers at activation only what VS Code must
// know at once): the state of tasks, agents and runs, the Tasks view's data, Test Explorer's items
// and profiles, the trajectory panels. Loading it loads the task parsers and the schemas.
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { openAgentSetting } from './agentSettings.ts';
import { compareRunFolders, repeatRun, resultsCommands, type RunnerParts } from './commands.ts';
import { Prompts } from './prompts.ts';
import { RunnerService } from './service.ts';
import type { Terminals } from './terminal.ts';
import { TaskTests } from './testing.ts';
import { ResultsPanel } from './resultsPanel.ts';
import { TrajectoryPanels } from './trajectoryPanel.ts';
import { TasksTree } from './tree.ts';
import { openRunFile, type TasksView } from './views.ts';

/** What activation made for the runner before the runner itself exists. */
export interface RunnerShell {
  readonly terminals: Terminals;
  readonly controller: vscode.TestController;
  readonly view: TasksView;
}

export function createRunnerParts(ctx: BelayContext, shell: RunnerShell): RunnerParts {
  const service = ctx.own(new RunnerService(ctx));
  const tree = new TasksTree(service, ctx.trust, () => ctx.markViewResolved('belay.tasks'));
  const tests = ctx.own(new TaskTests(shell.controller, service, ctx));
  const trajectories = ctx.own(
    new TrajectoryPanels(
      ctx.extension.extensionUri,
      {
        openOutput: openRunFile,
        repeat: async (run) => {
          await repeatRun(parts, run);
        },
        openAgentSettings: openAgentSetting,
      },
      ctx.log,
    ),
  );
  const results = ctx.own(
    // Belay's jobs folders, and `jobs/` where Harbor writes its jobs by default.
    new ResultsPanel(ctx.extension.extensionUri, ctx.log, () => [...service.jobsDirs, ...(vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => vscode.Uri.joinPath(f.uri, 'jobs').fsPath)], {
      // The same functions the palette's commands run, called directly: the panel's errors reach
      // the person through its webview host.
      openRun: async (runDir) => {
        await parts.trajectories.show(runDir);
      },
      openFile: openRunFile,
      compareRuns: (a, b) => compareRunFolders(parts, a, b),
      command: async (name) => {
        await resultsCommands[name](parts);
      },
    }),
  );
  const parts: RunnerParts = { ctx, service, terminals: shell.terminals, tree, tests, trajectories, results, prompts: new Prompts() };
  ctx.own(
    service.onDidChange(() => {
      shell.view.refresh();
      void vscode.commands.executeCommand('setContext', 'belay.runner.running', service.activeRuns.length > 0);
    }),
  );
  void service.refresh();
  return parts;
}
