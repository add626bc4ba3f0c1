import * as path from 'node:path';

// Where cues differ between Windows, macOS and Linux, all in this one module. Every function takes
// the platform as an argument (default: this machine's), so each branch is unit-tested anywhere;
// callers never look at `process.platform` themselves.

/** Whether `platform` is Windows (`win32`); macOS and Linux are both POSIX here. */
export function isWindows(platform: NodeJS.Platform = process.platform): boolean {
  return platform === 'win32';
}

/** The path functions of `platform`: Windows paths are built with path.win32 even when tested on Linux. */
export function pathsOf(platform: NodeJS.Platform = process.platform): path.PlatformPath {
  return isWindows(platform) ? path.win32 : path.posix;
}

/** The user's home folder, or where it would come from when it cannot be found. */
export type UserHome = { home: string } | { home: undefined; missing: string };

/**
 * The home folder the public tools use (`os.homedir()` in Node, `Path.home()` in Python), read from
 * the environment so a test or a child can move it. Windows: USERPROFILE, else HOMEDRIVE+HOMEPATH,
 * else HOME (Git Bash and some users set HOME, but Node and Python ignore it on Windows, so it
 * comes last). macOS and Linux: HOME (USERPROFILE only as a last resort). No guess beyond these:
 * another home would give a mailbox no other tool reads.
 */
export function userHomeOf(env: NodeJS.ProcessEnv, platform: NodeJS.Platform = process.platform): UserHome {
  const value = (name: string) => env[name]?.trim() || undefined;
  if (isWindows(platform)) {
    const drive = value('HOMEDRIVE');
    const homePath = value('HOMEPATH');
    const home = value('USERPROFILE') ?? (drive && homePath ? path.win32.join(drive, homePath) : undefined) ?? value('HOME');
    return home ? { home } : { home: undefined, missing: 'USERPROFILE' };
  }
  const home = value('HOME') ?? value('USERPROFILE');
  return home ? { home } : { home: undefined, missing: 'HOME' };
}

/** `~/.cue` as the platform's people write it, for messages. */
export function defaultMailboxHint(platform: NodeJS.Platform = process.platform): string {
  return isWindows(platform) ? '%USERPROFILE%\\.cue' : '~/.cue';
}

/**
 * The agent's shell, for `agent_terminal`: SHELL when set (also Git Bash and MSYS on Windows);
 * on Windows, PowerShell when its per-user module folder is on PSModulePath (PowerShell adds it
 * for itself and its children; cmd.exe alone never has it), else ComSpec (cmd).
 */
export function detectTerminal(env: NodeJS.ProcessEnv, platform: NodeJS.Platform = process.platform): string {
  let shell = env.SHELL || '';
  if (!shell && isWindows(platform) && /[\\/]Documents[\\/](Windows)?PowerShell[\\/]Modules/i.test(env.PSModulePath ?? '')) return 'powershell';
  if (!shell) shell = env.ComSpec || env.COMSPEC || '';
  const name = path.win32.basename(shell).toLowerCase().replace(/\.exe$/, '');
  if (['zsh', 'bash', 'fish', 'cmd'].includes(name)) return name;
  if (name === 'nu' || name === 'nushell') return 'nushell';
  if (name === 'pwsh' || name === 'powershell') return 'powershell';
  return 'unknown';
}

/** A launcher file: its name in the launcher folder, its text, and whether it must be executable. */
export interface LauncherFile {
  name: string;
  text: string;
  executable: boolean;
}

/** POSIX shell quoting: one word for `sh`, whatever the text holds. */
function shWord(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * One word for a line of a .cmd script: double quotes (inside them cmd takes `&`, `^`, `|`, `<`,
 * `>` and spaces literally) and `%` doubled (cmd expands it even inside quotes). A double quote or
 * a line break cannot be written at all; Windows paths never hold either.
 */
export function cmdWord(text: string): string {
  if (/["\r\n\0]/.test(text)) throw new Error(`cannot be written into a .cmd script (it holds a double quote or a line break): ${JSON.stringify(text)}`);
  return `"${text.replace(/%/g, '%%')}"`;
}

/**
 * The launchers of a command that runs `script` on `runtime` as plain Node (ELECTRON_RUN_AS_NODE
 * makes VS Code's Electron a Node; plain Node ignores it): `name` for POSIX shells (also Git Bash
 * on Windows), `name.cmd` for cmd and PowerShell (which finds it through PATHEXT and runs it in
 * cmd). The .cmd keeps the variable to itself (setlocal), leaves delayed expansion off so `!` in
 * arguments stays, and exits with the program's exit code. Both are written on every platform.
 */
export function launcherFiles(name: string, runtime: string, script: string, purpose: string): LauncherFile[] {
  return [posixLauncher(name, runtime, script, purpose), windowsLauncher(name, runtime, script, purpose)];
}

/** The POSIX shell launcher of launcherFiles alone. */
export function posixLauncher(name: string, runtime: string, script: string, purpose: string): LauncherFile {
  return { name, text: `#!/bin/sh\n# ${purpose}\nELECTRON_RUN_AS_NODE=1 exec ${shWord(runtime)} ${shWord(script)} "$@"\n`, executable: true };
}

/** The .cmd launcher of launcherFiles alone (throws for a path cmd cannot hold). */
export function windowsLauncher(name: string, runtime: string, script: string, purpose: string): LauncherFile {
  const text = [
    '@echo off',
    `rem ${purpose}`,
    'setlocal DisableDelayedExpansion',
    'set ELECTRON_RUN_AS_NODE=1',
    `${cmdWord(runtime)} ${cmdWord(script)} %*`,
    'exit /b %ERRORLEVEL%',
    '',
  ].join('\r\n');
  return { name: `${name}.cmd`, text, executable: false };
}
