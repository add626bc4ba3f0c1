import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { errorMessage } from '../shared/errors.ts';
import { folderOnPath, installCommandLines, installedIn, pathLine, uninstallCommandLines } from './core/commandLines.ts';

/** Where the launchers were last installed (globalState), to refresh them after an update and to uninstall. */
const FOLDER_KEY = 'belay.commandLines.folder';

/** What the install command resolves to (for tests and other callers): the files written and whether the folder is on PATH. */
export interface InstallResult {
  folder: string;
  written: string[];
  onPath: boolean;
}

/** A folder passed by a caller instead of asking: `{ folder: '/abs/dir' }`. */
function folderArgument(arg: unknown): string | undefined {
  const folder = typeof arg === 'object' && arg !== null ? (arg as { folder?: unknown }).folder : undefined;
  return typeof folder === 'string' && path.isAbsolute(folder) ? folder : undefined;
}

async function pickFolder(defaultFolder: string): Promise<string | undefined> {
  const choose = '$(folder-opened) Choose a folder…';
  const onPath = folderOnPath(defaultFolder, process.env.PATH);
  const picked = await vscode.window.showQuickPick(
    [
      { label: defaultFolder, description: onPath ? 'on your PATH' : 'not on your PATH yet' },
      { label: choose, description: 'a folder of your own' },
    ],
    { title: "Install 'belay' and 'cueme' Commands in PATH", placeHolder: 'Where the two launchers go', ignoreFocusOut: true },
  );
  if (!picked) return undefined;
  if (picked.label !== choose) return picked.label;
  const uris = await vscode.window.showOpenDialog({ canSelectFolders: true, canSelectFiles: false, canSelectMany: false, openLabel: 'Install Here', defaultUri: vscode.Uri.file(os.homedir()) });
  return uris?.[0]?.fsPath;
}

/**
 * The editor's side of "Install 'belay' and 'cueme' Commands in PATH" and its uninstall: launchers
 * that run this extension's own dist/cli.js and dist/cueme.js on the editor's runtime
 * (`process.execPath`: VS Code's Electron as Node, or code-server's Node). Installed launchers are
 * rewritten at each start, so they follow the extension's folder across updates.
 */
export function registerCommandLines(ctx: BelayContext): void {
  const distDir = () => vscode.Uri.joinPath(ctx.extension.extensionUri, 'dist').fsPath;
  const defaultFolder = () => path.join(os.homedir(), '.local', 'bin');

  ctx.registerCommands({
    'belay.installCommandLines': async (arg?: unknown): Promise<InstallResult | undefined> => {
      if (!ctx.trust.require('installCommands')) return undefined;
      const folder = folderArgument(arg) ?? (await pickFolder(defaultFolder()));
      if (!folder) return undefined;
      let written: string[];
      try {
        written = installCommandLines(folder, process.execPath, distDir());
      } catch (error) {
        void vscode.window.showErrorMessage(`Belay could not install 'belay' and 'cueme' into ${folder}: ${errorMessage(error)}`);
        return undefined;
      }
      await ctx.extension.globalState.update(FOLDER_KEY, folder);
      ctx.log.info(`command lines: installed ${written.join(', ')} (runtime ${process.execPath})`);
      const onPath = folderOnPath(folder, process.env.PATH);
      if (onPath) {
        void vscode.window.showInformationMessage(`Installed 'belay' and 'cueme' in ${folder}. In a new terminal: cueme --help; for Claude Code, Codex or Cursor: belay mcp.`);
      } else {
        const line = pathLine(folder, os.homedir());
        void vscode.window.showWarningMessage(`Installed 'belay' and 'cueme' in ${folder}, which is not on your PATH. Add this line to your shell's profile: ${line}`, 'Copy Line').then((choice) => {
          if (choice) void vscode.env.clipboard.writeText(line);
        });
      }
      return { folder, written, onPath };
    },

    'belay.uninstallCommandLines': async (arg?: unknown) => {
      const folder = folderArgument(arg) ?? ctx.extension.globalState.get<string>(FOLDER_KEY) ?? defaultFolder();
      let result: { removed: string[]; kept: string[] };
      try {
        result = uninstallCommandLines(folder);
      } catch (error) {
        void vscode.window.showErrorMessage(`Belay could not remove 'belay' and 'cueme' from ${folder}: ${errorMessage(error)}`);
        return undefined;
      }
      if (ctx.extension.globalState.get<string>(FOLDER_KEY) === folder) await ctx.extension.globalState.update(FOLDER_KEY, undefined);
      const kept = result.kept.length > 0 ? ` Left ${result.kept.join(', ')}: not Belay's.` : '';
      const message = result.removed.length > 0 ? `Removed Belay's 'belay' and 'cueme' from ${folder}.${kept}` : `Belay's 'belay' and 'cueme' are not in ${folder}.${kept}`;
      void vscode.window.showInformationMessage(message);
      return result;
    },
  });

  // After an update the extension's folder moves: rewrite launchers installed earlier (only Belay's own).
  const refresh = setImmediate(() => {
    const folder = ctx.extension.globalState.get<string>(FOLDER_KEY);
    if (!folder || !ctx.trust.trusted || !installedIn(folder)) return;
    try {
      installCommandLines(folder, process.execPath, distDir());
    } catch (error) {
      ctx.log.warn(`command lines: could not refresh the launchers in ${folder}: ${errorMessage(error)}`);
    }
  });
  ctx.own({ dispose: () => clearImmediate(refresh) });
}
