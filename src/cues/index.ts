import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { registerCommandLines } from './commandLines.ts';
import { registerCueCommands } from './commands.ts';
import { registerNotifications } from './notify.ts';
import { registerMcpServer } from './mcp.ts';
import { CuesViewProvider } from './provider.ts';
import { CuesService } from './service.ts';
import { registerTerminalPath } from './terminal.ts';
import { registerCueTools } from './tools.ts';

/**
 * Cues in the editor: one mailbox service (one connection, one watch) feeding the Cues panel, its
 * badge, the status bar, notifications, the quick-pick commands and the language-model tools;
 * Belay's cueme on integrated terminals' PATH, and `belay` and `cueme` on the person's own PATH on
 * request. Activation registers light parts only: the mailbox (zod, node:sqlite) opens just after
 * it, the panel's page code when the panel is first shown, the tools' calls on the first call.
 */
export function registerCues(ctx: BelayContext): void {
  const service = ctx.own(new CuesService(ctx));
  const view = ctx.own(new CuesViewProvider(ctx, service));
  ctx.own(vscode.window.registerWebviewViewProvider(CuesViewProvider.viewId, view));
  registerNotifications(ctx, service, view);
  registerCueCommands(ctx, service);
  registerTerminalPath(ctx);
  registerCommandLines(ctx);
  registerCueTools(ctx, service);
  registerMcpServer(ctx);
}
