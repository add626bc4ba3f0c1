import * as path from 'node:path';
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { errorMessage } from '../shared/errors.ts';
import { DEMO_STEPS, demoStep, isDemoFolder, WALKTHROUGH_ID } from './core/demo.ts';
import { isWelcomeLabel, openWhileUntouched } from './core/firstOpen.ts';

// A way in: the Get Started walkthrough (package.json `contributes.walkthroughs`), one step per
// feature, each step's button opening the demo workspace's example of it (`belay.walkthrough.try`).
// It opens by itself once, the first time the demo workspace starts (remembered per workspace),
// unless `belay.walkthrough.openInDemo` says not to (the UI tests say so unless they want it).

/** Remembers, per workspace, that the walkthrough was shown on its first start. */
const SHOWN_KEY = 'belay.walkthrough.shown';

export function registerWalkthrough(ctx: BelayContext): void {
  ctx.registerCommands({
    'belay.walkthrough.open': () => openWalkthrough(ctx),
    'belay.walkthrough.try': (step) => tryStep(ctx, step),
  });
  // After activation, not during it: reading the folder and opening an editor can wait a tick.
  const soon = setTimeout(() => {
    void firstStart(ctx).catch((error: unknown) => ctx.log.error(`walkthrough: ${errorMessage(error)}`));
  }, 0);
  ctx.own({ dispose: () => clearTimeout(soon) });
}

function openWalkthrough(ctx: BelayContext): Thenable<unknown> {
  return vscode.commands.executeCommand('workbench.action.openWalkthrough', `${ctx.extension.extension.id}#${WALKTHROUGH_ID}`, false);
}

/** The demo workspace's folder, when one of the open folders is it. */
function demoFolder(): string | undefined {
  return (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri).find((uri) => uri.scheme === 'file' && isDemoFolder(uri.fsPath))?.fsPath;
}

async function firstStart(ctx: BelayContext): Promise<void> {
  // Extension tests start VS Code over and over: never there.
  if (ctx.extension.extensionMode === vscode.ExtensionMode.Test) return;
  if (ctx.extension.workspaceState.get<boolean>(SHOWN_KEY)) return;
  const folder = demoFolder();
  if (!folder || !ctx.config.get('walkthrough.openInDemo', vscode.Uri.file(folder))) return;
  await ctx.extension.workspaceState.update(SHOWN_KEY, true);
  ctx.log.info('the demo workspace starts for the first time: opening the Get Started walkthrough');
  let disposed = false;
  ctx.own({ dispose: () => (disposed = true) });
  // The person doing something else (an editor, a terminal) counts as turning away from the page:
  // it is not brought back over what they turned to.
  let turnedAway = false;
  // (The walkthrough's own page is no text editor: opening it makes the active editor undefined.)
  const turned = [
    vscode.window.onDidChangeActiveTextEditor((editor) => editor && (turnedAway = true)),
    vscode.window.onDidOpenTerminal(() => (turnedAway = true)),
  ];
  const outcome = await openWhileUntouched(
    {
      open: async () => {
        if (!disposed) await openWalkthrough(ctx);
      },
      welcome: () => {
        const groups = vscode.window.tabGroups;
        if (turnedAway) return 'behind';
        if (groups.activeTabGroup.activeTab && isWelcomeLabel(groups.activeTabGroup.activeTab.label)) return 'active';
        return groups.all.some((group) => group.tabs.some((tab) => isWelcomeLabel(tab.label))) ? 'behind' : 'none';
      },
      settle: (ms) =>
        new Promise<void>((resolve) => {
          const done = (): void => {
            clearTimeout(timer);
            changed.dispose();
            resolve();
          };
          const timer = setTimeout(done, ms);
          const changed = vscode.window.tabGroups.onDidChangeTabs(done);
        }),
      now: () => (disposed ? Number.POSITIVE_INFINITY : Date.now()),
    },
    { retryMs: 4000, withinMs: 60_000 },
  );
  turned.forEach((subscription) => subscription.dispose());
  ctx.log.info(`the Get Started walkthrough: ${outcome.kind === 'left' ? `the person ${outcome.how === 'closed' ? 'closed it' : 'turned to another tab'}` : outcome.kind === 'no-tab' ? 'the workbench opened no Welcome tab' : 'asked while its tab stood untouched'} (${outcome.attempts} asks)`);
}

/** A walkthrough step's button: opens (or runs) the demo's example of that feature. */
async function tryStep(ctx: BelayContext, value: unknown): Promise<void> {
  const step = demoStep(value);
  if (!step) throw new Error(`no walkthrough step '${String(value)}'; the steps are ${Object.keys(DEMO_STEPS).join(', ')}`);
  const folder = demoFolder();
  if (!folder) {
    const choice = await vscode.window.showInformationMessage(
      "This example is in Belay's demo workspace: the demo/ folder of Belay's repository, which `npm start` opens.",
      'Open the Walkthrough Anyway',
    );
    if (choice) await openWalkthrough(ctx);
    return;
  }
  // Running the agent, the task or the job runs programs: only in a trusted workspace.
  if (DEMO_STEPS[step].runs && !ctx.trust.require('runAgents')) return;
  switch (step) {
    case 'cues': {
      // The panel first (where the questions appear), then the agent in a terminal beside it.
      await vscode.commands.executeCommand('belay.cues.focus');
      const terminal = vscode.window.createTerminal({ name: 'Belay: demo cue agent', cwd: folder });
      terminal.show(true);
      terminal.sendText(DEMO_STEPS.cues.shellLine);
      return;
    }
    case 'blocks': {
      const document = await vscode.workspace.openTextDocument(vscode.Uri.file(path.join(folder, DEMO_STEPS.blocks.file)));
      await vscode.window.showTextDocument(document, { preview: false });
      return;
    }
    case 'tasks':
      await vscode.commands.executeCommand('belay.runner.runTask', { task: DEMO_STEPS.tasks.task, agent: DEMO_STEPS.tasks.agent });
      return;
    case 'jobs': {
      const { tasks, agent, attempts, concurrency } = DEMO_STEPS.jobs;
      const jobDir = await vscode.commands.executeCommand<string | undefined>('belay.runner.runJob', { tasks: [...tasks], agent, attempts, concurrency });
      if (jobDir) await vscode.commands.executeCommand('belay.runner.openResults', jobDir);
      return;
    }
  }
}
