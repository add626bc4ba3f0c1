import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { shellQuote } from '../../shared/shell.ts';

/**
 * The `cueme` launcher put on integrated terminals' PATH: Belay's dist/cueme.js on the editor's own
 * runtime (the extension host's executable; ELECTRON_RUN_AS_NODE makes VS Code's Electron a plain
 * Node, and plain Node ignores it), so no separate Node install is needed.
 */
function launcherScripts(runtime: string, cuemeJs: string): { posix: string; windows: string } {
  return {
    posix: `#!/bin/sh\n# Belay's cueme (Human Agent Protocol), run on VS Code's own runtime.\nELECTRON_RUN_AS_NODE=1 exec ${shellQuote(runtime)} ${shellQuote(cuemeJs)} "$@"\n`,
    windows: `@echo off\r\nrem Belay's cueme (Human Agent Protocol), run on VS Code's own runtime.\r\nset ELECTRON_RUN_AS_NODE=1\r\n"${runtime}" "${cuemeJs}" %*\r\n`,
  };
}

/** Writes the launchers (`cueme` for POSIX shells, `cueme.cmd` for Windows) into `binDir` and returns it. */
export function writeLaunchers(binDir: string, runtime: string, cuemeJs: string): string {
  mkdirSync(binDir, { recursive: true });
  const scripts = launcherScripts(runtime, cuemeJs);
  const posix = path.join(binDir, 'cueme');
  writeFileSync(posix, scripts.posix);
  chmodSync(posix, 0o755);
  writeFileSync(path.join(binDir, 'cueme.cmd'), scripts.windows);
  return binDir;
}
