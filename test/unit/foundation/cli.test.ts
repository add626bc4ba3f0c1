import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { before, test } from 'node:test';
import { repoRoot } from '../../../scripts/lib/paths.ts';

const cli = path.join(repoRoot, 'dist', 'cli.js');
const run = (...args: string[]) => spawnSync(cli, args, { encoding: 'utf8', env: { ...process.env, PATH: `${path.dirname(process.execPath)}:${process.env.PATH}` } });

before(() => {
  execFileSync(process.execPath, ['scripts/build.ts'], { cwd: repoRoot, stdio: 'ignore' });
});

test('both command lines are executable scripts with a node shebang', () => {
  for (const file of ['cli.js', 'cueme.js']) {
    const full = path.join(repoRoot, 'dist', file);
    assert.ok(statSync(full).mode & 0o111, `${file} is not executable`);
    assert.match(readFileSync(full, 'utf8').split('\n')[0]!, /^#!\/usr\/bin\/env node$/);
  }
  const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  assert.deepEqual(pkg.bin, { belay: 'dist/cli.js', cueme: 'dist/cueme.js' });
});

test('belay --version prints the package version', () => {
  const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string };
  const r = run('--version');
  assert.equal(r.status, 0);
  assert.equal(r.stdout, `${pkg.version}\n`);
});

test('belay --help lists every subcommand with a summary', () => {
  const r = run('--help');
  assert.equal(r.status, 0);
  assert.match(r.stdout, /^Usage: belay <command>/);
  for (const name of ['blocks', 'session', 'cues']) assert.match(r.stdout, new RegExp(`^  ${name} +\\S`, 'm'), `${name} missing from help`);
});

test('an unknown subcommand is a usage error on stderr, exit 2', () => {
  const r = run('frobnicate');
  assert.equal(r.status, 2);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /unknown command 'frobnicate'/);
});

test('no arguments prints the usage and exits 2', () => {
  const r = run();
  assert.equal(r.status, 2);
  assert.match(r.stdout, /^Usage: belay/);
});
