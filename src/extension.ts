import type * as vscode from 'vscode';
import { registerBlocks } from './blocks/index.ts';
import { BelayContext, type BelayApi } from './context.ts';
import { registerCommands } from './commands.ts';
import { registerCues } from './cues/index.ts';
import { registerRunner } from './runner/index.ts';

export function activate(extension: vscode.ExtensionContext): BelayApi {
  const ctx = new BelayContext(extension);
  extension.subscriptions.push(ctx);
  registerCommands(ctx);
  registerCues(ctx);
  registerBlocks(ctx);
  registerRunner(ctx);
  ctx.log.info(`Belay ${extension.extension.packageJSON.version as string} activated`);
  return ctx.api;
}

export function deactivate(): void {
  // Everything is owned by the BelayContext, which VS Code disposes through subscriptions.
}
