import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';

/**
 * The task runner in the editor. For now: the Tasks view, empty until tasks are discovered, so
 * its welcome content explains what will appear.
 */
export function registerRunner(ctx: BelayContext): void {
  const provider: vscode.TreeDataProvider<never> = {
    getTreeItem: (item) => item,
    getChildren: () => {
      ctx.markViewResolved('belay.tasks');
      return [];
    },
  };
  ctx.own(vscode.window.createTreeView('belay.tasks', { treeDataProvider: provider }));
}
