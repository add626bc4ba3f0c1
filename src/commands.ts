import * as vscode from 'vscode';
import type { BelayContext } from './context.ts';

/** Commands that belong to no single feature. */
export function registerCommands(ctx: BelayContext): void {
  ctx.registerCommand('belay.showLog', () => ctx.log.show());
  ctx.registerCommand('belay.openSettings', () =>
    vscode.commands.executeCommand('workbench.action.openSettings', `@ext:${ctx.extension.extension.id}`),
  );
}
