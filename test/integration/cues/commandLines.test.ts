// The launchers of "Install 'belay' and 'cueme' Commands in PATH", written into real folders and
// run by sh: odd folder names stay one word, only Belay's own files are ever replaced or removed.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { COMMAND_LINES, CommandLinesError, folderOnPath, installCommandLines, installedIn, pathLine, uninstallCommandLines } from '../../../src/cues/core/commandLines.ts';
import { ensureBuilt } from '../../support/build.ts';
import { repoRoot } from '../../support/cues/helpers.ts';

describe('installing the command lines', () => {
  let dir: string;
  let dist: string;
  before(() => {
    ensureBuilt();
    dir = mkdtempSync(path.join(tmpdir(), 'belay-commands-'));
    // The extension's folder, somewhere a shell would split or expand if the launcher did not quote it.
    dist = path.join(dir, `it's a "$HOME" \`x\` folder`, 'dist');
    mkdirSync(dist, { recursive: true });
    for (const file of ['cli.js', 'cueme.js', 'package.json']) copyFileSync(path.join(repoRoot, 'dist', file), path.join(dist, file));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const sh = (command: string, env: NodeJS.ProcessEnv = {}) => spawnSync('sh', ['-c', command], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin', ...env } });

  test('writes one executable launcher per command that runs the bundle on the given runtime, from any folder name', () => {
    const bin = path.join(dir, 'my bin; $(touch pwned)');
    const written = installCommandLines(bin, process.execPath, dist, 'linux');
    assert.deepEqual(written, COMMAND_LINES.map((c) => path.join(bin, c.name)));
    assert.deepEqual(readdirSync(bin).sort(), ['belay', 'cueme']);
    const cueHome = path.join(dir, 'mailbox');
    for (const [name, usage] of [['belay', /^Usage: belay <command>/], ['cueme', /^Usage:\n  cueme join/]] as const) {
      const r = spawnSync(path.join(bin, name), ['--help'], { encoding: 'utf8', cwd: dir, env: { PATH: '/usr/bin:/bin', HOME: dir } });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, usage);
    }
    // Found through PATH, as a person's shell finds it.
    const joined = sh('cd "$WORK" && PATH="$BIN:$PATH" cueme join bash', { CUE_HOME: cueHome, HOME: dir, BIN: bin, WORK: dir });
    assert.equal(joined.status, 0, joined.stderr);
    assert.match(joined.stdout, /^agent_id=[a-z]+\n/);
    assert.ok(existsSync(path.join(cueHome, 'cue.db')));
    assert.equal(existsSync(path.join(dir, 'pwned')), false, 'the folder name ran as a command');
    assert.ok(installedIn(bin, 'linux'));
  });

  test('installing again replaces its own launchers; Windows gets .cmd files only', () => {
    const bin = path.join(dir, 'again');
    installCommandLines(bin, '/old/runtime', dist, 'linux');
    installCommandLines(bin, process.execPath, dist, 'linux');
    assert.match(readFileSync(path.join(bin, 'cueme'), 'utf8'), new RegExp(process.execPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
    const win = path.join(dir, 'win');
    installCommandLines(win, 'C:\\Program Files\\Code\\Code.exe', 'C:\\Users\\a b\\.vscode\\extensions\\belay\\dist', 'win32');
    assert.deepEqual(readdirSync(win).sort(), ['belay.cmd', 'cueme.cmd']);
    assert.match(readFileSync(path.join(win, 'belay.cmd'), 'utf8'), /"C:\\Program Files\\Code\\Code\.exe" "C:\\Users\\a b\\\.vscode\\extensions\\belay\\dist\\cli\.js" %\*\r\n/);
  });

  test("refuses, writing nothing, when a file or a link of the same name is not Belay's", () => {
    const bin = path.join(dir, 'taken');
    mkdirSync(bin);
    writeFileSync(path.join(bin, 'belay'), '#!/bin/sh\necho a different belay\n', { mode: 0o755 });
    assert.throws(() => installCommandLines(bin, process.execPath, dist, 'linux'), (e: unknown) => e instanceof CommandLinesError && /taken\/belay already exists and is not Belay's launcher/.test(e.message));
    assert.deepEqual(readdirSync(bin), ['belay'], 'cueme was written although belay was refused');
    assert.equal(readFileSync(path.join(bin, 'belay'), 'utf8'), '#!/bin/sh\necho a different belay\n');

    const linked = path.join(dir, 'linked');
    mkdirSync(linked);
    const victim = path.join(dir, 'victim.txt');
    writeFileSync(victim, 'keep me');
    symlinkSync(victim, path.join(linked, 'cueme'));
    assert.throws(() => installCommandLines(linked, process.execPath, dist, 'linux'), /already exists and is not Belay's launcher/);
    assert.equal(readFileSync(victim, 'utf8'), 'keep me');
    assert.throws(() => installCommandLines('relative/bin', process.execPath, dist, 'linux'), /must be an absolute path/);
  });

  test("uninstall removes Belay's launchers only, and says what it left", () => {
    const bin = path.join(dir, 'mixed');
    installCommandLines(bin, process.execPath, dist, 'linux');
    writeFileSync(path.join(bin, 'cueme.cmd'), 'someone else\r\n');
    writeFileSync(path.join(bin, 'other'), 'x');
    const result = uninstallCommandLines(bin);
    assert.deepEqual(result, { removed: [path.join(bin, 'belay'), path.join(bin, 'cueme')], kept: [path.join(bin, 'cueme.cmd')] });
    assert.deepEqual(readdirSync(bin).sort(), ['cueme.cmd', 'other']);
    assert.equal(installedIn(bin, 'linux'), false);
    assert.deepEqual(uninstallCommandLines(path.join(dir, 'never made')), { removed: [], kept: [] });
  });

  test('tells whether a folder is on PATH, and the profile line puts it there for sh', () => {
    assert.equal(folderOnPath('/home/a/.local/bin', '/usr/bin:/home/a/.local/bin/:/bin', 'linux'), true);
    assert.equal(folderOnPath('/home/a/.local/bin', '/usr/bin:/home/a/.local/bin2', 'linux'), false);
    assert.equal(folderOnPath('/home/a/.local/bin', undefined, 'linux'), false);
    assert.equal(folderOnPath('C:\\Users\\A\\bin', 'C:\\Windows;c:\\users\\a\\BIN\\', 'win32'), true);
    for (const [folder, home] of [['/home/a/.local/bin', '/home/a'], [path.join(dir, 'odd "$x" `y` \\z'), '/nowhere']] as const) {
      assert.match(pathLine(folder, home), /^export PATH="[^\n]*:\$PATH"$/);
      const r = sh(`${pathLine(folder, home)}; printf %s "$PATH"`, { HOME: home });
      assert.equal(r.stdout.split(':')[0], folder);
    }
    assert.equal(pathLine('/home/a/.local/bin', '/home/a'), 'export PATH="$HOME/.local/bin:$PATH"');
  });
});
