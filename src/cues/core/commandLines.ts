// "Install 'belay' and 'cueme' Commands in PATH": small launchers in a folder on the person's PATH
// that run the extension's own bundles (dist/cli.js, dist/cueme.js) on the editor's runtime, so
// `belay mcp` and `cueme` work with no separate Node and no clone. Only files Belay wrote (they
// carry its mark) are ever replaced or removed; anything else of the same name is left alone.
import { chmodSync, lstatSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { posixLauncher, windowsLauncher } from './platform.ts';

/** The command lines and the bundle each runs. */
export const COMMAND_LINES = [
  { name: 'belay', bundle: 'cli.js', purpose: "Belay's command line (belay mcp, belay cues, ...), installed by Belay's Install Commands in PATH." },
  { name: 'cueme', bundle: 'cueme.js', purpose: "Belay's cueme (Human Agent Protocol), installed by Belay's Install Commands in PATH." },
] as const;

/** Every launcher Belay installs says this in its comment line; nothing without it is touched. */
const MARK = "installed by Belay's Install Commands in PATH";

export class CommandLinesError extends Error {
  override name = 'CommandLinesError';
}

/** The launcher files for this platform: `name` for POSIX shells; `name.cmd` on Windows. */
function launchersFor(runtime: string, distDir: string, platform: NodeJS.Platform) {
  const [launcher, paths] = platform === 'win32' ? [windowsLauncher, path.win32] : [posixLauncher, path.posix];
  return COMMAND_LINES.map(({ name, bundle, purpose }) => launcher(name, runtime, paths.join(distDir, bundle), purpose));
}

/** What is at `file`: nothing, a launcher Belay wrote, or something else (a symlink counts as something else). */
function occupant(file: string): 'none' | 'ours' | 'other' {
  let stats;
  try {
    stats = lstatSync(file);
  } catch {
    return 'none';
  }
  if (!stats.isFile() || stats.size > 64 * 1024) return 'other';
  return readFileSync(file, 'utf8').includes(MARK) ? 'ours' : 'other';
}

/**
 * Writes the launchers into `binDir` (created when missing) and returns their paths. Refuses, before
 * writing any, when a file of the same name is there and is not one of Belay's launchers.
 */
export function installCommandLines(binDir: string, runtime: string, distDir: string, platform: NodeJS.Platform = process.platform): string[] {
  if (!path.isAbsolute(binDir)) throw new CommandLinesError(`the folder must be an absolute path, not '${binDir}'`);
  const files = launchersFor(runtime, distDir, platform);
  for (const file of files) {
    const target = path.join(binDir, file.name);
    if (occupant(target) === 'other') throw new CommandLinesError(`${target} already exists and is not Belay's launcher: remove it or choose another folder`);
  }
  mkdirSync(binDir, { recursive: true });
  const written: string[] = [];
  for (const file of files) {
    const target = path.join(binDir, file.name);
    // Written beside the target and renamed over it: a rename replaces a link planted meanwhile
    // instead of writing through it, and no one runs a half-written launcher.
    const temp = path.join(binDir, `.${file.name}.${randomBytes(6).toString('hex')}.tmp`);
    try {
      writeFileSync(temp, file.text, { flag: 'wx', mode: file.executable ? 0o755 : 0o644 });
      if (file.executable) chmodSync(temp, 0o755);
      renameSync(temp, target);
    } catch (error) {
      rmSync(temp, { force: true });
      throw error;
    }
    written.push(target);
  }
  return written;
}

/** Whether every launcher of this platform is in `binDir` and is Belay's (so it may be rewritten). */
export function installedIn(binDir: string, platform: NodeJS.Platform = process.platform): boolean {
  return launchersFor('runtime', 'dist', platform).every((file) => occupant(path.join(binDir, file.name)) === 'ours');
}

/** Removes Belay's launchers from `binDir`; returns what was removed and what was left (not Belay's). */
export function uninstallCommandLines(binDir: string): { removed: string[]; kept: string[] } {
  const removed: string[] = [];
  const kept: string[] = [];
  for (const { name } of COMMAND_LINES) {
    for (const file of [name, `${name}.cmd`]) {
      const target = path.join(binDir, file);
      const what = occupant(target);
      if (what === 'ours') {
        rmSync(target, { force: true });
        removed.push(target);
      } else if (what === 'other') {
        kept.push(target);
      }
    }
  }
  return { removed, kept };
}

/** Whether `binDir` is one of the folders of a PATH value (compared as resolved paths; case-insensitive on Windows). */
export function folderOnPath(binDir: string, pathValue: string | undefined, platform: NodeJS.Platform = process.platform): boolean {
  const paths = platform === 'win32' ? path.win32 : path.posix;
  const norm = (p: string) => {
    const resolved = paths.resolve(p).replace(/[\\/]+$/, '');
    return platform === 'win32' ? resolved.toLowerCase() : resolved;
  };
  const wanted = norm(binDir);
  return (pathValue ?? '').split(paths.delimiter).filter(Boolean).some((entry) => norm(entry) === wanted);
}

/** The line a person adds to their shell profile to put `binDir` on PATH (`~` kept when it is under `home`). */
export function pathLine(binDir: string, home: string): string {
  const quote = (text: string) => text.replace(/(["\\`$])/g, '\\$1');
  const underHome = binDir === home || binDir.startsWith(home + path.sep);
  const shown = underHome ? `$HOME${quote(binDir.slice(home.length))}` : quote(binDir);
  return `export PATH="${shown}:$PATH"`;
}
