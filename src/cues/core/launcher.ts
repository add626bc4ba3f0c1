import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { launcherFiles } from './platform.ts';

/**
 * Writes the `cueme` launchers put on integrated terminals' PATH into `binDir` and returns it:
 * Belay's dist/cueme.js on the editor's own runtime (the extension host's executable), so no
 * separate Node install is needed. `cueme` serves POSIX shells, `cueme.cmd` cmd and PowerShell
 * (platform.ts writes both).
 */
export function writeLaunchers(binDir: string, runtime: string, cuemeJs: string): string {
  mkdirSync(binDir, { recursive: true });
  for (const file of launcherFiles('cueme', runtime, cuemeJs, "Belay's cueme (Human Agent Protocol), run on VS Code's own runtime.")) {
    const target = path.join(binDir, file.name);
    writeFileSync(target, file.text);
    if (file.executable) chmodSync(target, 0o755);
  }
  return binDir;
}
