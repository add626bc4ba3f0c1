// The Tasks view and the read-only documents of run files (a step's full output, result.json, logs).
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { readBounded } from './core/history.ts';
import type { RunnerService } from './service.ts';
import { TasksTree } from './tree.ts';

/** Read-only documents for step outputs and run files. */
const OUTPUT_SCHEME = 'belay-run-output';

/** Opens a file of a run as a read-only document (bounded: outputs can be huge). */
export async function openRunFile(file: string): Promise<void> {
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.from({ scheme: OUTPUT_SCHEME, path: file }));
  await vscode.window.showTextDocument(doc, { preview: true });
}

/** The Tasks view (empty in an untrusted workspace, so its welcome content says why) and run documents. */
export function registerRunnerViews(ctx: BelayContext, service: RunnerService): TasksTree {
  const tree = ctx.own(new TasksTree(service, ctx.trust, () => ctx.markViewResolved('belay.tasks')));
  const view = ctx.own(vscode.window.createTreeView('belay.tasks', { treeDataProvider: tree, showCollapseAll: true }));
  ctx.own(
    vscode.workspace.registerTextDocumentContentProvider(OUTPUT_SCHEME, {
      provideTextDocumentContent: async (uri) => (await readBounded(uri.path, 5_000_000)) || '(empty output)',
    }),
  );
  ctx.own(
    service.onDidChange(() => {
      tree.refresh();
      void vscode.commands.executeCommand('setContext', 'belay.runner.running', service.activeRuns.length > 0);
    }),
  );
  // Runs made outside the editor (`belay run` in a terminal) show up at the latest when the view is looked at.
  ctx.own(view.onDidChangeVisibility((e) => e.visible && service.refreshSoon()));
  return tree;
}
