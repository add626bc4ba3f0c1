// The cueme launcher Belay puts on integrated terminals' PATH, run for real by sh: it starts the
// given runtime as plain Node on the given script, whatever the paths hold.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { writeLaunchers } from '../../../src/cues/core/launcher.ts';

test("the launcher runs the script with the editor's runtime as plain Node, passing every argument", () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'belay-launcher-'));
  try {
    // A folder name a shell would split or expand if it were not quoted.
    const odd = path.join(dir, "it's a $HOME folder");
    mkdirSync(odd);
    const script = path.join(odd, 'cueme.js');
    writeFileSync(script, 'console.log(JSON.stringify({ args: process.argv.slice(2), asNode: process.env.ELECTRON_RUN_AS_NODE }));\n');
    const bin = writeLaunchers(path.join(dir, 'bin'), process.execPath, script);
    const out = execFileSync(path.join(bin, 'cueme'), ['cue', 'agent one', '-'], { encoding: 'utf8' });
    assert.deepEqual(JSON.parse(out), { args: ['cue', 'agent one', '-'], asNode: '1' });
    assert.match(readFileSync(path.join(bin, 'cueme.cmd'), 'utf8'), /^@echo off\r\n[\s\S]*set ELECTRON_RUN_AS_NODE=1\r\n/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("both launchers are written: the POSIX one passes the program's exit code, the .cmd quotes what cmd would expand", () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'belay-launcher-'));
  try {
    const odd = path.join(dir, '100% sure');
    mkdirSync(odd);
    const script = path.join(odd, 'cueme.js');
    writeFileSync(script, 'process.exitCode = Number(process.argv[2]);\n');
    const bin = writeLaunchers(path.join(dir, 'bin'), process.execPath, script);
    assert.equal(spawnSync(path.join(bin, 'cueme'), ['3']).status, 3);
    const cmd = readFileSync(path.join(bin, 'cueme.cmd'), 'utf8');
    assert.ok(cmd.includes(`"${script.replace(/%/g, '%%')}" %*\r\n`), cmd);
    assert.match(cmd, /\r\nsetlocal DisableDelayedExpansion\r\n[\s\S]*\r\nexit \/b %ERRORLEVEL%\r\n$/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
