// The command lines as a person runs them with the machine's own Node (older than 22.13), by their
// shebang, from a home folder and from another folder: the bundles of a clone hand every command to
// the project's Node 22; copies outside a clone (no Node 22 to hand) still answer --help, and what
// needs Node 22 (the cue mailbox) says so in one line and leaves nothing behind.
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { repoRoot } from '../../../scripts/lib/paths.ts';
import { olderThanMinimum, onlyAsksForHelp } from '../../../src/cli/node-check.ts';
import { Mailbox } from '../../../src/cues/core/store.ts';
import { waitUntil } from '../../support/cues/helpers.ts';
import { ensureBuilt } from '../../support/build.ts';

/** A Node on this machine older than 22.13 (Debian's Node 20 here), or undefined. */
function oldNode(): string | undefined {
  const found = spawnSync('sh', ['-c', 'which -a node'], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
  for (const node of [...found, '/usr/bin/node']) {
    if (!existsSync(node)) continue;
    const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim().slice(1);
    if (version && olderThanMinimum(version)) return node;
  }
  return undefined;
}

const old = oldNode();
const oldVersion = old === undefined ? '' : spawnSync(old, ['--version'], { encoding: 'utf8' }).stdout.trim().slice(1);
const ONE_LINE = /^[^\n]+\n$/;

test('help and version are told apart from commands that may need Node 22', () => {
  for (const argv of [[], ['--help'], ['-h'], ['help'], ['--version'], ['-v'], ['cues', 'list', '--help'], ['blocks', 'parse', '-h']]) assert.equal(onlyAsksForHelp(argv), true, argv.join(' '));
  for (const argv of [['join', 'bash'], ['cues', 'list'], ['cue', 'a', '-'], ['blocks', 'parse', '--', '--help'], ['cues', 'answer', 'r', '--text=--help']]) assert.equal(onlyAsksForHelp(argv), false, argv.join(' '));
});

describe("the command lines on the machine's own Node", { skip: old === undefined && 'no Node older than 22.13 on this machine' }, () => {
  let dir: string;
  let home: string;
  let elsewhere: string;
  let copies: string;
  const clone = { belay: path.join(repoRoot, 'dist', 'cli.js'), cueme: path.join(repoRoot, 'dist', 'cueme.js') };

  before(() => {
    ensureBuilt();
    dir = mkdtempSync(path.join(os.tmpdir(), 'belay-any-node-'));
    home = path.join(dir, 'home');
    elsewhere = path.join(dir, 'some project');
    // The bundles alone, as `npm install -g ./belay-*.tgz` leaves them: no Node 22 beside them.
    copies = path.join(dir, 'installed', 'dist');
    for (const d of [home, elsewhere, copies]) mkdirSync(d, { recursive: true });
    for (const file of ['cli.js', 'cueme.js', 'package.json']) copyFileSync(path.join(repoRoot, 'dist', file), path.join(copies, file));
    execFileSync('chmod', ['+x', path.join(copies, 'cli.js'), path.join(copies, 'cueme.js')]);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** The environment of an ordinary shell whose `node` is the old one. */
  const shell = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({ PATH: `${path.dirname(old!)}:/usr/bin:/bin`, HOME: home, ...extra });
  const run = (script: string, args: string[], cwd: string, input = '', env = shell()) => spawnSync(script, args, { cwd, env, input, encoding: 'utf8' });

  test('--help and --version answer on the old Node, from the home folder and from another folder, clone or not', () => {
    const installed = { belay: path.join(copies, 'cli.js'), cueme: path.join(copies, 'cueme.js') };
    for (const scripts of [clone, installed]) {
      for (const cwd of [home, elsewhere]) {
        for (const [name, script] of Object.entries(scripts)) {
          const help = run(script, ['--help'], cwd);
          assert.equal(help.status, 0, `${script} --help in ${cwd}: ${help.stderr}`);
          assert.equal(help.stderr, '');
          assert.match(help.stdout, new RegExp(`Usage:[\\s\\S]*${name}`));
          const version = run(script, ['--version'], cwd);
          assert.equal(version.status, 0, version.stderr);
          assert.match(version.stdout, /^\d+\.\d+\.\d+\n$/);
        }
        const sub = run(scripts.belay, ['cues', 'list', '--help'], cwd);
        assert.equal(sub.status, 0, sub.stderr);
        assert.match(sub.stdout, /belay cues list/);
      }
    }
    assert.deepEqual(readdirSync(home), [], 'help wrote something');
  });

  test("in a clone, the mailbox commands run on the project's Node 22 and use ~/.cue of the shell's HOME", () => {
    for (const cwd of [home, elsewhere]) {
      const joined = run(clone.cueme, ['join', 'bash'], cwd);
      assert.equal(joined.status, 0, joined.stderr);
      assert.equal(joined.stderr, '');
      assert.match(joined.stdout, /^agent_id=[a-z]+\n/);
      assert.match(joined.stdout, new RegExp(`^project_dir=${cwd.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
      const listed = run(clone.belay, ['cues', 'list', '--json'], cwd);
      assert.equal(listed.status, 0, listed.stderr);
      assert.deepEqual(JSON.parse(listed.stdout), []);
    }
    assert.ok(existsSync(path.join(home, '.cue', 'cue.db')), 'the mailbox is not in the home folder');
  });

  test('outside a clone, the mailbox commands say in one line that they need Node 22.13, and create nothing; the rest runs', () => {
    const cueHome = path.join(dir, 'copies-mailbox');
    const env = shell({ CUE_HOME: cueHome });
    for (const [script, args, name] of [[path.join(copies, 'cueme.js'), ['join', 'bash'], 'cueme'], [path.join(copies, 'cli.js'), ['cues', 'list'], 'belay cues']] as const) {
      const r = run(script, [...args], elsewhere, '', env);
      assert.equal(r.status, 1, `${name}: ${r.stdout}${r.stderr}`);
      assert.equal(r.stdout, '');
      assert.match(r.stderr, ONE_LINE, name);
      assert.match(r.stderr, new RegExp(`^${name}: the cue mailbox needs the built-in SQLite of Node 22\\.13 or later \\(node:sqlite\\); this is Node ${oldVersion.replace(/\./g, '\\.')}\\.`));
    }
    assert.equal(existsSync(cueHome), false, 'a refused command created the mailbox folder');
    const parsed = run(path.join(copies, 'cli.js'), ['blocks', 'parse', '-'], elsewhere, '[DELETE_FILE path="old.txt"]\n', env);
    assert.equal(parsed.status, 0, parsed.stderr);
    assert.match(parsed.stdout, /DELETE_FILE old\.txt/);
  });

  test("a kill of the command handed to the project's Node reaches it: a waiting cue is marked cancelled", async () => {
    const cueHome = path.join(dir, 'kill-mailbox');
    const mailbox = Mailbox.open({ env: { CUE_HOME: cueHome } });
    try {
      const child = spawn(clone.cueme, ['cue', 'killed', '-'], { cwd: elsewhere, env: shell({ CUE_HOME: cueHome }), stdio: ['pipe', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
      const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
      child.stdin.end('<cueme_prompt>\nShip it?\n</cueme_prompt>\n');
      const entry = await waitUntil(mailbox, () => mailbox.listRequests({ pendingOnly: true }).find((e) => e.agentId === 'killed'), 'the cue request');
      child.kill('SIGTERM');
      assert.equal(await exited, 130, stderr);
      assert.match(stderr, new RegExp(`request ${entry.requestId} is marked cancelled`));
      assert.equal(mailbox.getRequest(entry.requestId)!.status, 'CANCELLED');
    } finally {
      mailbox.close();
    }
  });
});
