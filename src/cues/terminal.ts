import * as path from 'node:path';
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { errorMessage } from '../shared/errors.ts';
import { writeLaunchers } from './core/launcher.ts';
import { settingMailboxPaths } from './service.ts';

/**
 * Integrated terminals get Belay's `cueme` first on PATH (and CUE_HOME when `belay.cues.home` moves
 * the mailbox), only in a trusted workspace and while `belay.cues.terminalPath` is on.
 */
export function registerTerminalPath(ctx: BelayContext): void {
  const collection = ctx.extension.environmentVariableCollection;
  const binDir = path.join(ctx.extension.globalStorageUri.fsPath, 'bin');
  const cuemeJs = vscode.Uri.joinPath(ctx.extension.extensionUri, 'dist', 'cueme.js').fsPath;

  const apply = () => {
    collection.clear();
    if (!ctx.config.get('cues.terminalPath')) return;
    const refusal = ctx.trust.refusal('terminalPath');
    if (refusal) {
      ctx.log.info(`cues: ${refusal}`);
      return;
    }
    try {
      writeLaunchers(binDir, process.execPath, cuemeJs);
    } catch (error) {
      ctx.log.error(`cues: cannot write the cueme launcher into ${binDir}: ${errorMessage(error)}`);
      return;
    }
    collection.description = "Belay: puts Belay's cueme (Human Agent Protocol) on PATH";
    collection.prepend('PATH', binDir + path.delimiter);
    if (ctx.config.get('cues.home').trim()) {
      try {
        collection.replace('CUE_HOME', settingMailboxPaths(ctx).home);
      } catch {
        // No home to point at: the panel shows why.
      }
    }
  };
  // Writing the launchers waits until activation is done; VS Code keeps the last session's PATH
  // for the terminals it restores meanwhile.
  const first = setImmediate(apply);
  ctx.own({ dispose: () => clearImmediate(first) });
  ctx.own(ctx.config.onDidChange(['cues.terminalPath', 'cues.home'], apply));
  ctx.own(ctx.trust.onDidGrant(apply));
}
