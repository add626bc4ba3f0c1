// The task runner in the editor: the Tasks view (tasks, their runs and steps), the live agent
// terminal, Test Explorer, the `belay` task type, the trajectory view and the micro-agent chat.
// Everything starts runs through one RunnerService; the parts are wired here and nothing runs
// at activation beyond that (task files are read, and their parsers loaded, right after).
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { mediaLinkProvider } from './chat.ts';
import { repeatRun, registerRunnerCommands, type RunnerParts } from './commands.ts';
import { RunnerService } from './service.ts';
import { belayTaskProvider, TASK_TYPE } from './taskProvider.ts';
import { Terminals } from './terminal.ts';
import { TaskTests } from './testing.ts';
import { TrajectoryPanels, type TrajectoryActions } from './trajectoryPanel.ts';
import { openRunFile, registerRunnerViews } from './views.ts';

/** The runner's test seams: `api.test.runner`, present only when the extension runs under its tests. */
export type RunnerTestApi = Omit<RunnerParts, 'ctx'>;

export function registerRunner(ctx: BelayContext): void {
  const service = ctx.own(new RunnerService(ctx));
  const terminals = new Terminals();
  const tree = registerRunnerViews(ctx, service);
  const tests = ctx.own(new TaskTests(service, ctx));
  const actions: TrajectoryActions = {
    openOutput: openRunFile,
    repeat: async (run) => {
      await repeatRun(parts, run);
    },
  };
  const trajectories = ctx.own(new TrajectoryPanels(ctx.extension.extensionUri, actions, ctx.log));
  const parts: RunnerParts = { ctx, service, terminals, tree, tests, trajectories };
  registerRunnerCommands(parts);
  ctx.own(vscode.tasks.registerTaskProvider(TASK_TYPE, belayTaskProvider(service)));
  ctx.own(vscode.window.registerTerminalLinkProvider(mediaLinkProvider((terminal) => terminals.isChat(terminal))));
  ctx.exposeForTests('runner', { service, terminals, tree, tests, trajectories } satisfies RunnerTestApi);
  void service.refresh();
}
