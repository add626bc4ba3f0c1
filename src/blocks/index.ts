import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';

/**
 * Command blocks in the editor. For now: the Sessions view, empty until sessions exist, so its
 * welcome content explains what will appear.
 */
export function registerBlocks(ctx: BelayContext): void {
  const provider: vscode.TreeDataProvider<never> = {
    getTreeItem: (item) => item,
    getChildren: () => {
      ctx.markViewResolved('belay.sessions');
      return [];
    },
  };
  ctx.own(vscode.window.createTreeView('belay.sessions', { treeDataProvider: provider }));
}
