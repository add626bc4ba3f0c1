// Every path option of every `belay` and `cueme` command line, given a bad path: a missing one, a
// file where a folder goes (and the reverse), a path through a file, a link to nothing, a link
// loop, a name with escape sequences. Each is one line naming the option and the path, exit 2,
// from a real process, and nothing is made or changed on disk. A mailbox whose cue.db is a folder
// (or whose folder is a file) is one clear line too.
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, lstatSync, symlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { repoRoot } from '../../../scripts/lib/paths.ts';
import { ensureBuilt } from '../../support/build.ts';
import { runCli } from '../../support/cli-process.ts';
import { tempDir } from '../../support/runner/helpers.ts';

const belay = path.join(repoRoot, 'dist', 'cli.js');
const cueme = path.join(repoRoot, 'dist', 'cueme.js');
const tmp = tempDir('belay-cli-paths-');
const task = path.join(repoRoot, 'demo', 'tasks', 'hello-world');

/** The scene each case runs in: a file, a folder, a link to nothing, a link loop. */
const at = (name: string) => path.join(tmp.dir, name);
const missing = at('missing');
const aFile = at('a-file.txt');
const aFolder = at('a-folder');
const dangling = at('dangling');
const loop = at('loop');
const escape = at('evil-\x1b]0;owned\x07-\x1b[31mred');

before(() => {
  ensureBuilt();
  writeFileSync(aFile, 'not a folder\n');
  mkdirSync(aFolder);
  symlinkSync(at('nothing-here'), dangling);
  symlinkSync(loop, loop);
});
after(() => tmp.remove());

/** Every entry under the scene, with its kind: what a case may not change. */
function snapshot(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const full = path.join(dir, name);
      const stats = lstatSync(full);
      out.push(`${path.relative(tmp.dir, full)} ${stats.isSymbolicLink() ? 'link' : stats.isDirectory() ? 'dir' : 'file'} ${stats.size}`);
      if (stats.isDirectory() && !stats.isSymbolicLink()) walk(full);
    }
  };
  walk(tmp.dir);
  return out;
}

interface Case {
  /** The option (or argument) and which bad path. */
  name: string;
  program: string;
  args: string[];
  /** The line says this (after `belay <command>: `). */
  says: RegExp;
}

const agent = ['--agent', 'true', '--protocol', 'sdk1', '--backend', 'local'];

/** Every path option, each with the bad paths that fit it. */
const folderOptions: { name: string; args: (bad: string) => string[]; makes?: boolean }[] = [
  { name: 'belay run TASK_DIR', args: (bad) => ['run', bad, ...agent] },
  { name: 'belay run --agent-dir', args: (bad) => ['run', task, ...agent, '--agent-dir', bad] },
  { name: 'belay run --wheelhouse', args: (bad) => ['run', task, ...agent, '--wheelhouse', bad] },
  { name: 'belay run --out', args: (bad) => ['run', task, ...agent, '--out', bad], makes: true },
  { name: 'belay run --attempts --out', args: (bad) => ['run', task, ...agent, '--attempts', '2', '--out', bad], makes: true },
  { name: 'belay run --resume', args: (bad) => ['run', '--resume', bad] },
  { name: 'belay run --regrade', args: (bad) => ['run', '--regrade', bad] },
  { name: 'belay blocks apply --workspace', args: (bad) => ['blocks', 'apply', '--workspace', bad, aFile] },
  { name: 'belay session start --root', args: (bad) => ['session', 'start', '--root', bad, '--task', 'x'], makes: true },
  { name: 'belay session list --root', args: (bad) => ['session', 'list', '--root', bad] },
  { name: 'belay session step --root', args: (bad) => ['session', 'step', '--root', bad, aFile] },
  { name: 'belay session watch --root', args: (bad) => ['session', 'watch', '--root', bad] },
  { name: 'belay agent doctor --cwd', args: (bad) => ['agent', 'doctor', '--agent', 'true', '--cwd', bad] },
  { name: 'belay nanobot --workspace', args: (bad) => ['nanobot', '--command', 'true', '--text', 'hi', '--workspace', bad] },
  { name: 'belay image build-base --cache', args: (bad) => ['image', 'build-base', '--cache', bad], makes: true },
];
const fileOptions: { name: string; args: (bad: string) => string[] }[] = [
  { name: 'belay blocks parse FILE', args: (bad) => ['blocks', 'parse', bad] },
  { name: 'belay blocks apply FILE', args: (bad) => ['blocks', 'apply', '--workspace', aFolder, bad] },
  { name: 'belay session step FILE', args: (bad) => ['session', 'step', '--root', aFolder, bad] },
  { name: 'belay nanobot --config', args: (bad) => ['nanobot', '--command', 'true', '--text', 'hi', '--config', bad] },
  { name: 'belay nanobot --media', args: (bad) => ['nanobot', '--command', 'true', '--text', 'hi', '--media', bad] },
  { name: 'belay cues answer --attach', args: (bad) => ['cues', 'answer', '1', '--text', 'x', '--attach', bad] },
  { name: 'belay run --resume …/job.json', args: (bad) => ['run', '--resume', path.join(bad, 'job.json')] },
];

const cases: Case[] = [
  ...folderOptions.flatMap((o) => [
    // A folder the command makes may be missing: only the others are refused for it.
    ...(o.makes ? [] : [{ name: `${o.name}: missing`, program: belay, args: o.args(missing), says: /: no such folder/ }]),
    { name: `${o.name}: a file`, program: belay, args: o.args(aFile), says: /a-file\.txt: is a file, not a folder$/ },
    { name: `${o.name}: through a file`, program: belay, args: o.args(path.join(aFile, 'x')), says: /a-file\.txt\/x: a part of the path is a file, not a folder$/ },
    { name: `${o.name}: a link to nothing`, program: belay, args: o.args(dangling), says: /dangling: a symbolic link to a path that does not exist$/ },
    { name: `${o.name}: a link loop`, program: belay, args: o.args(loop), says: /loop: the path loops through symbolic links$/ },
    ...(o.makes ? [] : [{ name: `${o.name}: escape sequences in the name`, program: belay, args: o.args(escape), says: /evil-.*: no such folder/ }]),
  ]),
  ...fileOptions.flatMap((o) => [
    { name: `${o.name}: missing`, program: belay, args: o.args(missing), says: /: no such (file|folder)/ },
    { name: `${o.name}: a folder`, program: belay, args: o.args(aFolder), says: /a-folder(\/job\.json)?: (is a folder, not a file|no such file)/ },
    { name: `${o.name}: through a file`, program: belay, args: o.args(path.join(aFile, 'x')), says: /a part of the path is a file, not a folder$/ },
    { name: `${o.name}: a link to nothing`, program: belay, args: o.args(dangling), says: /(dangling|job\.json): (a symbolic link to a path that does not exist|no such file)/ },
    { name: `${o.name}: escape sequences in the name`, program: belay, args: o.args(escape), says: /evil-.*: no such (file|folder)/ },
  ]),
];

describe('a bad path on a command line is one line, exit 2, and nothing is made', () => {
  for (const c of cases) {
    it(c.name, async () => {
      const before = snapshot();
      const { code, stdout, stderr } = await runCli(c.program, c.args, { cwd: tmp.dir, env: { CUE_HOME: at('cue-home') } });
      const command = `belay ${c.args[0]}`;
      assert.equal(code, 2, `${c.args.join(' ')}\n${stderr}`);
      assert.equal(stdout, '');
      assert.equal(stderr.split('\n').length, 2, `one line:\n${stderr}`);
      assert.ok(stderr.startsWith(`${command}: `), stderr);
      assert.match(stderr.trimEnd(), c.says);
      assert.doesNotMatch(stderr, /ENOENT|ENOTDIR|EISDIR|ELOOP|EEXIST|scandir|mkdir|\bat .*:\d+:\d+/, 'no system error codes or stack frames');
      assert.doesNotMatch(stderr, /[\x00-\x08\x0b-\x1f\x7f]/, 'no control characters reach the terminal');
      assert.deepEqual(snapshot(), before, 'nothing was made or changed');
    });
  }

  it('covers every path option the usage texts name', async () => {
    // The options that take a DIR or FILE in each usage text, against the table above.
    const named = cases.map((c) => c.name.split(':')[0]!);
    for (const option of ['--agent-dir', '--wheelhouse', '--out', '--resume', '--regrade', '--workspace', '--root', '--cwd', '--config', '--media', '--cache', '--attach', 'TASK_DIR', 'FILE']) {
      assert.ok(named.some((n) => n.includes(option)), `no case for ${option}`);
    }
    const usages = await Promise.all(['run', 'blocks', 'session', 'agent', 'nanobot', 'image', 'cues'].map((command) => runCli(belay, [command, '--help'], { cwd: tmp.dir })));
    const taken = new Set(usages.flatMap((u) => [...u.stdout.matchAll(/(--[a-z-]+)[ =](DIR|FILE)\b/g)].map((m) => m[1]!)));
    for (const option of taken) assert.ok(named.some((n) => n.includes(option)), `the usage names ${option} DIR|FILE but the table has no case for it`);
  });
});

describe('a mailbox path of the wrong kind is one clear line', () => {
  const cueDbFolder = at('home-with-folder');
  const homeFile = at('home-is-a-file');
  before(() => {
    mkdirSync(path.join(cueDbFolder, 'cue.db'), { recursive: true });
    writeFileSync(homeFile, '');
  });
  const commands: { name: string; program: string; args: string[]; prefix: string }[] = [
    { name: 'cueme join', program: cueme, args: ['join', 'test_runtime'], prefix: 'cueme: ' },
    { name: 'belay cues list', program: belay, args: ['cues', 'list'], prefix: 'belay cues: ' },
    { name: 'belay cues answer', program: belay, args: ['cues', 'answer', '1', '--text', 'x'], prefix: 'belay cues: ' },
  ];
  for (const c of commands) {
    it(`${c.name}: cue.db is a folder`, async () => {
      const before = snapshot();
      const { code, stderr } = await runCli(c.program, c.args, { cwd: tmp.dir, env: { CUE_HOME: cueDbFolder } });
      assert.equal(code, 1, stderr);
      assert.equal(stderr, `${c.prefix}the mailbox ${path.join(cueDbFolder, 'cue.db')} is a folder, not a mailbox file: move the folder aside (a new mailbox is then made there), or point CUE_HOME at another folder\n`);
      assert.deepEqual(snapshot(), before, 'nothing was made beside it');
    });
    it(`${c.name}: the mailbox folder is a file`, async () => {
      const { code, stderr } = await runCli(c.program, c.args, { cwd: tmp.dir, env: { CUE_HOME: homeFile } });
      assert.equal(code, 1, stderr);
      assert.equal(stderr, `${c.prefix}the mailbox folder ${homeFile} is a file, not a folder: move it aside, or point CUE_HOME at the folder that holds cue.db\n`);
    });
  }
});
