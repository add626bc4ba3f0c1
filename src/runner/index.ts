// The task runner in the editor: the Tasks view (tasks, their runs and steps), the live agent
// terminal, Test Explorer, the `belay` task type, the trajectory view and the micro-agent chat.
// Everything starts runs through one RunnerService; the parts are wired here and nothing runs
// at activation beyond that (task files are read, and their parsers loaded, right after).
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { repeatRun, registerRunnerCommands } from './commands.ts';
import { mediaLinkProvider } from './chat.ts';
import type { RunnerParts, RunnerTestApi } from './runner.ts';
import { RunnerService } from './service.ts';
import { belayTaskProvider, TASK_TYPE } from './taskProvider.ts';
import { Terminals } from './terminal.ts';
import { TaskTests } from './testing.ts';
import { TrajectoryPanels } from './trajectoryPanel.ts';
import { openRunFile, registerRunnerViews } from './views.ts';

export function registerRunner(ctx: BelayContext): void {
  const service = ctx.own(new RunnerService(ctx));
  const terminals = new Terminals();
  const tree = registerRunnerViews(ctx, service);
  const tests = ctx.own(new TaskTests(service, ctx));
  const trajectories = ctx.own(
    new TrajectoryPanels(ctx.extension.extensionUri, { openOutput: openRunFile, repeat: async (run) => void (await repeatRun(parts, run)) }, ctx.log),
  );
  const parts: RunnerParts = { ctx, service, terminals, tree, tests, trajectories };
  registerRunnerCommands(parts);
  ctx.own(vscode.tasks.registerTaskProvider(TASK_TYPE, belayTaskProvider(service)));
  ctx.own(vscode.window.registerTerminalLinkProvider(mediaLinkProvider((terminal) => terminals.isChat(terminal))));
  ctx.exposeForTests('runner', { service, terminals, tree, tests, trajectories } satisfies RunnerTestApi);
  void service.refresh();
}
