import type * as vscode from 'vscode';
import { registerBlocks } from './blocks/index.ts';
import { BelayContext, type BelayApi } from './context.ts';
import { registerCommands } from './commands.ts';
import { registerCues } from './cues/index.ts';
import { registerRunner } from './runner/index.ts';
import { registerWalkthrough } from './walkthrough/index.ts';

export function activate(extension: vscode.ExtensionContext): BelayApi {
  const started = performance.now();
  const ctx = new BelayContext(extension);
  extension.subscriptions.push(ctx);
  const timings: string[] = [];
  const timed = (name: string, register: (ctx: BelayContext) => void) => {
    const t0 = performance.now();
    register(ctx);
    timings.push(`${name} ${Math.round(performance.now() - t0)} ms`);
  };
  timed('commands', registerCommands);
  timed('cues', registerCues);
  timed('blocks', registerBlocks);
  timed('runner', registerRunner);
  timed('walkthrough', registerWalkthrough);
  const { __belayLoadStart: loadStart, __belayLoadEnd: loadEnd } = globalThis as { __belayLoadStart?: number; __belayLoadEnd?: number };
  const loading = loadStart === undefined || loadEnd === undefined ? '' : `; its code ran in ${Math.round(loadEnd - loadStart)} ms, ${Math.round(started - loadEnd)} ms before activate`;
  ctx.log.info(`Belay ${extension.extension.packageJSON.version as string} activated in ${Math.round(performance.now() - started)} ms (${timings.join(', ')})${loading}`);
  return ctx.api;
}

export function deactivate(): void {
  // Everything is owned by the BelayContext, which VS Code disposes through subscriptions.
}
