import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { panelMailboxPaths } from './service.ts';

/** POSIX single quoting: safe for any path. */
function shQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * The `cueme` launcher put on integrated terminals' PATH: Belay's dist/cueme.js on the editor's own
 * runtime (the extension host's executable; ELECTRON_RUN_AS_NODE makes VS Code's Electron a plain
 * Node, and plain Node ignores it), so no separate Node install is needed.
 */
export function launcherScripts(runtime: string, cuemeJs: string): { posix: string; windows: string } {
  return {
    posix: `#!/bin/sh\n# Belay's cueme (Human Agent Protocol), run on VS Code's own runtime.\nELECTRON_RUN_AS_NODE=1 exec ${shQuote(runtime)} ${shQuote(cuemeJs)} "$@"\n`,
    windows: `@echo off\r\nrem Belay's cueme (Human Agent Protocol), run on VS Code's own runtime.\r\nset ELECTRON_RUN_AS_NODE=1\r\n"${runtime}" "${cuemeJs}" %*\r\n`,
  };
}

/** Writes the launchers into the extension's storage and returns their folder. */
export function writeLaunchers(binDir: string, runtime: string, cuemeJs: string): string {
  mkdirSync(binDir, { recursive: true });
  const scripts = launcherScripts(runtime, cuemeJs);
  const posix = path.join(binDir, 'cueme');
  writeFileSync(posix, scripts.posix);
  chmodSync(posix, 0o755);
  writeFileSync(path.join(binDir, 'cueme.cmd'), scripts.windows);
  return binDir;
}

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
    const cuesHome = ctx.config.get('cues.home');
    if (!vscode.workspace.isTrusted) {
      ctx.log.info('cues: the workspace is not trusted, so Belay does not put its cueme on the terminal PATH');
      return;
    }
    try {
      writeLaunchers(binDir, process.execPath, cuemeJs);
    } catch (error) {
      ctx.log.error(`cues: cannot write the cueme launcher into ${binDir}: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    collection.description = "Belay: puts Belay's cueme (Human Agent Protocol) on PATH";
    collection.prepend('PATH', binDir + path.delimiter);
    if (cuesHome.trim()) {
      try {
        collection.replace('CUE_HOME', panelMailboxPaths(cuesHome).home);
      } catch {
        // No home to point at: the panel shows why.
      }
    }
  };
  apply();
  ctx.own(ctx.config.onDidChange(['cues.terminalPath', 'cues.home'], apply));
  ctx.own(vscode.workspace.onDidGrantWorkspaceTrust(apply));
}
