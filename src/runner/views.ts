// The Tasks view and the read-only documents of run files (a step's full output, result.json, logs).
// Both are registered at activation and load what they show when they first show it.
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { lazy } from '../shared/lazy.ts';
import type { RunnerService } from './service.ts';
import type { TaskNode, TasksTree } from './tree.ts';

/** Read-only documents for step outputs and run files. */
const OUTPUT_SCHEME = 'belay-run-output';

/** Opens a file of a run as a read-only document (bounded: outputs can be huge). */
export async function openRunFile(file: string): Promise<void> {
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.from({ scheme: OUTPUT_SCHEME, path: file }));
  await vscode.window.showTextDocument(doc, { preview: true });
}

/** The Tasks view as the runner sees it: told to show its data anew when the runner's state changed. */
export interface TasksView {
  refresh(): void;
}

/**
 * The Tasks view (empty in an untrusted workspace, so its welcome content says why) and run
 * documents. The view's data, tree.ts with the runner under it, loads with its first getChildren.
 */
export function registerRunnerViews(ctx: BelayContext, runner: () => { readonly tree: TasksTree; readonly service: RunnerService }): TasksView {
  const changed = ctx.own(new vscode.EventEmitter<void>());
  const view = ctx.own(
    vscode.window.createTreeView<TaskNode>('belay.tasks', {
      treeDataProvider: {
        onDidChangeTreeData: changed.event,
        getChildren: (node) => runner().tree.getChildren(node),
        getTreeItem: (node) => runner().tree.getTreeItem(node),
        getParent: () => undefined,
      },
      showCollapseAll: true,
      // Two runs selected compare with "Compare with…".
      canSelectMany: true,
    }),
  );
  // The reader of run files comes with the run records' schemas: it loads with the first document.
  const history = lazy(() => require('./core/records/history.ts') as typeof import('./core/records/history.ts'));
  ctx.own(
    vscode.workspace.registerTextDocumentContentProvider(OUTPUT_SCHEME, {
      provideTextDocumentContent: async (uri) => (await history().readBounded(uri.path, 5_000_000)) || '(empty output)',
    }),
  );
  // Runs made outside the editor (`belay run` in a terminal) show up at the latest when the view is looked at.
  ctx.own(view.onDidChangeVisibility((e) => e.visible && runner().service.refreshSoon()));
  return { refresh: () => changed.fire() };
}
