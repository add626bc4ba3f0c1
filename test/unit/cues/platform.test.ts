// Every branch of the one module where cues differ between Windows, macOS and Linux (this machine
// runs none but Linux, so each branch is chosen by argument).
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { MailboxError } from '../../../src/cues/core/errors.ts';
import { mailboxPaths } from '../../../src/cues/core/home.ts';
import { cmdWord, detectTerminal, isWindows, launcherFiles, pathsOf, userHomeOf } from '../../../src/cues/core/platform.ts';

describe('the platform module', () => {
  it('tells Windows from the POSIX platforms', () => {
    assert.equal(isWindows('win32'), true);
    for (const p of ['linux', 'darwin', 'freebsd'] as const) assert.equal(isWindows(p), false, p);
    assert.equal(pathsOf('win32'), path.win32);
    assert.equal(pathsOf('darwin'), path.posix);
  });

  it('finds the home as Node and Python do: USERPROFILE first on Windows, HOME elsewhere', () => {
    const everything = { HOME: '/c/Users/ann', USERPROFILE: 'C:\\Users\\ann', HOMEDRIVE: 'D:', HOMEPATH: '\\Users\\ann' };
    assert.deepEqual(userHomeOf(everything, 'win32'), { home: 'C:\\Users\\ann' });
    assert.deepEqual(userHomeOf({ HOMEDRIVE: 'D:', HOMEPATH: '\\Users\\ann', HOME: '/c/x' }, 'win32'), { home: 'D:\\Users\\ann' });
    assert.deepEqual(userHomeOf({ HOME: 'C:\\msys\\home\\ann' }, 'win32'), { home: 'C:\\msys\\home\\ann' });
    assert.deepEqual(userHomeOf({ HOME: '  ' }, 'win32'), { home: undefined, missing: 'USERPROFILE' });
    for (const p of ['linux', 'darwin'] as const) {
      assert.deepEqual(userHomeOf(everything, p), { home: '/c/Users/ann' }, p);
      assert.deepEqual(userHomeOf({ USERPROFILE: '/u' }, p), { home: '/u' }, p);
      assert.deepEqual(userHomeOf({}, p), { home: undefined, missing: 'HOME' }, p);
    }
  });

  it('puts the mailbox in the platform\'s home, with its own separators, and says which variable is missing', () => {
    assert.equal(mailboxPaths({ env: { USERPROFILE: 'C:\\Users\\ann', HOME: '/c/Users/ann' }, platform: 'win32' }).dbPath, 'C:\\Users\\ann\\.cue\\cue.db');
    assert.equal(mailboxPaths({ env: { USERPROFILE: 'C:\\Users\\ann' }, platform: 'win32' }).filesDir, 'C:\\Users\\ann\\.cue\\files');
    assert.equal(mailboxPaths({ env: { HOME: '/Users/ann', USERPROFILE: 'x' }, platform: 'darwin' }).dbPath, '/Users/ann/.cue/cue.db');
    assert.equal(mailboxPaths({ env: { CUE_HOME: 'D:\\mail', USERPROFILE: 'C:\\Users\\ann' }, platform: 'win32' }).dbPath, 'D:\\mail\\cue.db');
    assert.throws(
      () => mailboxPaths({ env: { HOME: '' }, platform: 'win32' }),
      (e: unknown) => e instanceof MailboxError && e.kind === 'no-home' && /USERPROFILE is not set\. Set USERPROFILE, or set CUE_HOME .*%USERPROFILE%\\\.cue/.test(e.message),
    );
    assert.throws(() => mailboxPaths({ env: {}, platform: 'darwin' }), (e: unknown) => e instanceof MailboxError && /HOME is not set.*~\/\.cue/.test(e.message));
  });

  it('names the agent\'s terminal: SHELL, PowerShell by its module path, else ComSpec', () => {
    const comspec = { ComSpec: 'C:\\WINDOWS\\system32\\cmd.exe' };
    const pwshModules = 'C:\\Users\\ann\\Documents\\PowerShell\\Modules;C:\\Program Files\\PowerShell\\Modules';
    const winPsModules = 'C:\\Users\\ann\\Documents\\WindowsPowerShell\\Modules;C:\\WINDOWS\\system32\\WindowsPowerShell\\v1.0\\Modules';
    const systemOnly = 'C:\\Program Files\\WindowsPowerShell\\Modules;C:\\WINDOWS\\system32\\WindowsPowerShell\\v1.0\\Modules';
    assert.equal(detectTerminal({ ...comspec, PSModulePath: pwshModules }, 'win32'), 'powershell');
    assert.equal(detectTerminal({ ...comspec, PSModulePath: winPsModules }, 'win32'), 'powershell');
    assert.equal(detectTerminal({ ...comspec, PSModulePath: systemOnly }, 'win32'), 'cmd', 'the machine-wide module path is set for cmd too');
    assert.equal(detectTerminal({ ...comspec, SHELL: 'C:\\Program Files\\Git\\usr\\bin\\bash.exe', PSModulePath: pwshModules }, 'win32'), 'bash');
    assert.equal(detectTerminal({ SHELL: 'C:\\tools\\pwsh.exe' }, 'win32'), 'powershell');
    assert.equal(detectTerminal({ SHELL: '/bin/zsh', PSModulePath: pwshModules }, 'darwin'), 'zsh');
    assert.equal(detectTerminal({ PSModulePath: pwshModules }, 'linux'), 'unknown', 'only Windows reads the module path');
    assert.equal(detectTerminal({ SHELL: '/usr/local/bin/fish' }, 'linux'), 'fish');
    assert.equal(detectTerminal({}, 'win32'), 'unknown');
  });

  it('quotes words for a .cmd script: % doubled, quotes and line breaks refused', () => {
    assert.equal(cmdWord('C:\\Program Files\\Microsoft VS Code\\Code.exe'), '"C:\\Program Files\\Microsoft VS Code\\Code.exe"');
    assert.equal(cmdWord('C:\\100% & more ^ (x)'), '"C:\\100%% & more ^ (x)"');
    assert.throws(() => cmdWord('C:\\a"b'), /double quote or a line break/);
    assert.throws(() => cmdWord('C:\\a\r\nb'), /double quote or a line break/);
  });

  it('writes both launchers: a POSIX script and a .cmd that keeps its variable and passes the exit code', () => {
    const files = launcherFiles('cueme', 'C:\\Program Files\\Code\\Code.exe', 'C:\\Users\\ann\\.vscode\\ext\\dist\\cueme.js', 'test launcher');
    assert.deepEqual(files.map((f) => [f.name, f.executable]), [['cueme', true], ['cueme.cmd', false]]);
    const [posix, windows] = files.map((f) => f.text) as [string, string];
    assert.match(posix, /^#!\/bin\/sh\n/);
    assert.match(posix, /^ELECTRON_RUN_AS_NODE=1 exec 'C:\\Program Files\\Code\\Code\.exe' 'C:\\Users\\ann\\\.vscode\\ext\\dist\\cueme\.js' "\$@"$/m);
    assert.ok(windows.split('\r\n').every((line) => !line.includes('\n')), 'every line of the .cmd ends in CRLF');
    assert.deepEqual(windows.split('\r\n'), [
      '@echo off',
      'rem test launcher',
      'setlocal DisableDelayedExpansion',
      'set ELECTRON_RUN_AS_NODE=1',
      '"C:\\Program Files\\Code\\Code.exe" "C:\\Users\\ann\\.vscode\\ext\\dist\\cueme.js" %*',
      'exit /b %ERRORLEVEL%',
      '',
    ]);
  });
});
