// The task runner in the editor: the Tasks view (tasks, their runs and steps), the live agent
// terminal, Test Explorer, the `belay` task type, the trajectory view and the micro-agent chat.
// Activation registers only what VS Code must know at once (the commands, the view, the task
// type, run documents, chat links), each loading the runner (parts.ts: its state and views, with
// the task parsers and schemas under them, and the test controller) when first used. Everything
// starts runs through the one RunnerService there.
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { errorMessage } from '../shared/errors.ts';
import { lazy } from '../shared/lazy.ts';
import type { RunnerParts, runnerCommands } from './commands.ts';
import { belayTaskProvider, TASK_TYPE } from './taskProvider.ts';
import { mediaLinkProvider, Terminals } from './terminal.ts';
import { registerRunnerViews } from './views.ts';

/** The runner's test seams: `api.test.runner`, present only when the extension runs under its tests. */
export type RunnerTestApi = Omit<RunnerParts, 'ctx'>;

type RunnerCommand = keyof typeof runnerCommands;

/** Every `belay.runner.<name>` command (its type keeps this list and commands.ts's the same). */
const COMMANDS: Record<RunnerCommand, true> = {
  refresh: true,
  runTask: true,
  stopRun: true,
  repeatRun: true,
  openTrajectory: true,
  compareRuns: true,
  compareWith: true,
  openAgentSettings: true,
  openStepOutput: true,
  openTask: true,
  addAgent: true,
  setSecret: true,
  chat: true,
  openResults: true,
  openJobFolder: true,
  runJob: true,
  resumeJob: true,
  regradeJob: true,
  chooseVscodeModel: true,
};

export function registerRunner(ctx: BelayContext): void {
  const terminals = ctx.own(new Terminals());
  const view = registerRunnerViews(ctx, () => parts());
  // The test controller (the dearest registration here) comes with the runner, which loads just
  // after activation anyway: Test Explorer has nothing to list before then.
  const testController = lazy(() => {
    const controller = ctx.own(vscode.tests.createTestController('belay.tasks', 'Belay Tasks'));
    controller.refreshHandler = () => parts().service.refresh();
    controller.resolveHandler = async (item) => {
      const { service } = parts();
      if (!item && !service.loaded) await service.refresh();
    };
    return controller;
  });
  const parts = lazy(() => (require('./parts.ts') as typeof import('./parts.ts')).createRunnerParts(ctx, { terminals, controller: testController(), view }));
  const commands = lazy(() => (require('./commands.ts') as typeof import('./commands.ts')).runnerCommands);
  ctx.registerCommands(
    Object.fromEntries(
      (Object.keys(COMMANDS) as RunnerCommand[]).map((name) => [
        `belay.runner.${name}`,
        (...args: unknown[]) => {
          const command: (parts: RunnerParts, ...args: unknown[]) => unknown = commands()[name];
          return command(parts(), ...args);
        },
      ]),
    ),
  );
  ctx.own(vscode.tasks.registerTaskProvider(TASK_TYPE, belayTaskProvider(() => parts().service)));
  ctx.own(vscode.window.registerTerminalLinkProvider(mediaLinkProvider((terminal) => terminals.isChat(terminal))));
  ctx.exposeForTests('runner', {
    terminals,
    get service() {
      return parts().service;
    },
    get tree() {
      return parts().tree;
    },
    get tests() {
      return parts().tests;
    },
    get trajectories() {
      return parts().trajectories;
    },
    get prompts() {
      return parts().prompts;
    },
    get results() {
      return parts().results;
    },
  } satisfies RunnerTestApi);
  // Test Explorer lists the tasks, with a run profile per agent, without anyone opening a view:
  // reading them needs the runner, which so loads right after activation rather than during it.
  const soon = setTimeout(() => {
    try {
      parts();
    } catch (error) {
      ctx.log.error(`runner: could not start: ${errorMessage(error)}`);
    }
  }, 0);
  ctx.own({ dispose: () => clearTimeout(soon) });
}
