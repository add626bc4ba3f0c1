import * as vscode from 'vscode';
import type { BelayContext } from './context.ts';

/** Commands that belong to no single feature. */
export function registerCommands(ctx: BelayContext): void {
  ctx.registerCommands({
    'belay.showLog': () => ctx.log.show(),
    'belay.openSettings': () => vscode.commands.executeCommand('workbench.action.openSettings', `@ext:${ctx.extension.extension.id}`),
  });
}
