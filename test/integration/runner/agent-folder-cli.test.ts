// The agent's program found and only it shown, through the real command lines: `belay run` and
// `belay nanobot` started from a home folder holding a key (a fake HOME in a temp folder), with
// programs named from other folders (absolutely and relatively), on the sandbox and on the default
// backend (the container where podman works). The agent itself tries to read the key.
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { randomBytes } from 'node:crypto';
import { agentFile, repoRoot, sandboxOrReason, tempDir } from '../../support/runner/helpers.ts';
import { engineWithBase } from '../../support/runner/container-helpers.ts';
import { runCli } from '../../support/cli-process.ts';
import { ensureBuilt } from '../../support/build.ts';

const tmp = tempDir('belay-agent-dir-');
after(() => tmp.remove());
const cli = path.join(repoRoot, 'dist', 'cli.js');
const secret = `BEGIN-KEY-${randomBytes(8).toString('hex')}`;
const home = path.join(tmp.dir, 'home');
const agents = path.join(tmp.dir, 'agents');
const elsewhere = path.join(tmp.dir, 'elsewhere');
mkdirSync(path.join(home, '.ssh'), { recursive: true });
writeFileSync(path.join(home, '.ssh', 'id_rsa'), `${secret}\n`);
mkdirSync(agents, { recursive: true });
mkdirSync(elsewhere, { recursive: true });
copyFileSync(agentFile('sdk1-lib.mjs'), path.join(agents, 'sdk1-lib.mjs'));
// An SDK 1.x agent that reads the key and lists the home, then says what it got as its one command.
const peek = `import { readFileSync, readdirSync } from 'node:fs';
import { serve } from './sdk1-lib.mjs';
const home = ${JSON.stringify(home)};
const attempt = (f) => { try { return 'READ:' + String(f()).replace(/\\s+/g, ' '); } catch (e) { return 'DENIED:' + e.code; } };
const key = attempt(() => readFileSync(home + '/.ssh/id_rsa', 'utf8'));
const list = attempt(() => readdirSync(home).join(','));
await serve((req) => (req.step === 1 ? { command: 'echo "key=' + key + ' home=' + list + '"' } : { task_complete: true }));
`;
writeFileSync(path.join(agents, 'peek.mjs'), peek);
writeFileSync(path.join(home, 'loose.mjs'), peek);
// A plain nanobot bot that prints what it could read.
writeFileSync(
  path.join(agents, 'bot.mjs'),
  `import { readFileSync } from 'node:fs';\nlet got;\ntry { got = 'READ:' + readFileSync(${JSON.stringify(path.join(home, '.ssh', 'id_rsa'))}, 'utf8').trim(); } catch (e) { got = 'DENIED:' + e.code; }\nconsole.log('bot ran; key ' + got);\n`,
);
const task = tmp.writeTask('tasks/peek', {
  'task.toml': '[verifier]\ntimeout_sec = 60\n[agent]\ntimeout_sec = 120\n',
  'instruction.md': 'Do nothing.',
  'tests/test.sh': '#!/bin/sh\nexit 0\n',
});
const node = `'${process.execPath}'`;

const belay = (args: string[], cwd: string) => runCli(cli, args, { cwd, env: { HOME: home } });

before(() => {
  ensureBuilt();
});

/** Every file of a run folder, as text (to find the key anywhere Belay recorded it). */
function allText(dir: string): string {
  let text = '';
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) text += readFileSync(path.join(entry.parentPath, entry.name), 'utf8');
  }
  return text;
}

const sandbox = await sandboxOrReason();
const engine = await engineWithBase();
const places: { name: string; args: string[]; skip: string | false }[] = [
  { name: 'sandbox', args: ['--backend', 'sandbox'], skip: sandbox instanceof Error ? sandbox.message : false },
  // The default backend: the container where podman works (with the base image), else the sandbox.
  { name: 'default', args: [], skip: engine instanceof Error && sandbox instanceof Error ? 'no isolating backend here' : false },
];

for (const place of places) {
  describe(`belay run from a home folder holding a key (${place.name} backend)`, { skip: place.skip }, () => {
    for (const [how, program] of [
      ['absolutely', path.join(agents, 'peek.mjs')],
      ['relatively', path.relative(home, path.join(agents, 'peek.mjs'))],
    ] as const) {
      it(`finds the program named ${how} from another folder and shows only its folder`, async () => {
        const out = path.join(tmp.dir, `runs-${place.name}-${how}`);
        const { code, stderr } = await belay(['run', task, '--agent', `${node} ${program}`, '--protocol', 'sdk1', '--out', out, ...place.args], home);
        assert.equal(code, 0, stderr);
        assert.match(stderr, new RegExp(`the agent's folder is ${agents}, its program's`));
        const [runId] = readdirSync(out);
        const trajectory = JSON.parse(readFileSync(path.join(out, runId!, 'trajectory.json'), 'utf8')) as { command: string | null }[];
        assert.match(trajectory[0]!.command ?? '', /key=DENIED:ENOENT home=DENIED:ENOENT/);
        assert.doesNotMatch(allText(path.join(out, runId!)), new RegExp(secret));
      });
    }

    it('refuses a program lying in the home folder itself, in one line naming --agent-dir, before anything runs', async () => {
      const out = path.join(tmp.dir, `runs-${place.name}-loose`);
      const { code, stderr } = await belay(['run', task, '--agent', `${node} loose.mjs`, '--protocol', 'sdk1', '--out', out, ...place.args], home);
      assert.equal(code, 2);
      assert.match(stderr, new RegExp(`^belay run: the agent's program ${home}/loose\\.mjs lies in ${home}, which is your home folder and is never shown whole to the agent: move the program into a folder of its own, or give --agent-dir DIR$`, 'm'));
      assert.equal(existsSync(out), false);
    });

    it('refuses the home folder as the agent folder when the command names no program in a folder', async () => {
      const { code, stderr } = await belay(['run', task, '--agent', 'my-agent-on-path', '--protocol', 'sdk1', '--out', path.join(tmp.dir, 'never'), ...place.args], home);
      assert.equal(code, 2);
      assert.match(stderr, /belay run: the agent's folder would be .*, which is your home folder and is never shown whole to the agent: give --agent-dir DIR/);
      const given = await belay(['run', task, '--agent', `${node} ${agents}/peek.mjs`, '--agent-dir', '~'.replace('~', home), '--protocol', 'sdk1', ...place.args], elsewhere);
      assert.equal(given.code, 2);
      assert.match(given.stderr, /is your home folder, which is never shown whole to the agent: give --agent-dir DIR/);
    });

    it('reports a program outside the given --agent-dir in one line instead of the interpreter’s error', async () => {
      const { code, stderr } = await belay(['run', task, '--agent', `${node} ${agents}/peek.mjs`, '--agent-dir', elsewhere, '--protocol', 'sdk1', ...place.args], elsewhere);
      assert.equal(code, 2);
      assert.match(stderr, new RegExp(`belay run: the agent's program ${agents}/peek\\.mjs is outside the agent's folder ${elsewhere}, so the agent would not find it: give --agent-dir DIR ${agents}`));
      assert.doesNotMatch(stderr, /Cannot find module|can't open file/);
      const missing = await belay(['run', task, '--agent', `${node} gone.mjs`, '--protocol', 'sdk1', ...place.args], elsewhere);
      assert.equal(missing.code, 2);
      assert.match(missing.stderr, new RegExp(`belay run: the agent's program ${elsewhere}/gone\\.mjs does not exist`));
    });
  });

  describe(`belay nanobot with its program outside its workspace (${place.name} backend)`, { skip: place.skip }, () => {
    const backend = place.args.length > 0 ? place.args : [];
    it('runs a bot named by absolute path from its workspace in the home, and the bot cannot read the key', async () => {
      const workspace = path.join(home, 'bot-workspace');
      mkdirSync(workspace, { recursive: true });
      const { code, stdout, stderr } = await belay(['nanobot', '--command', `${node} ${agents}/bot.mjs {message}`, '--text', 'hi', ...backend], workspace);
      assert.equal(code, 0, stderr);
      assert.match(stdout, /bot ran; key DENIED:ENOENT/);
      assert.doesNotMatch(stdout + stderr, new RegExp(secret));
    });

    it('runs a bot named relatively from its workspace', async () => {
      const workspace = path.join(elsewhere, 'ws');
      mkdirSync(workspace, { recursive: true });
      const { code, stdout, stderr } = await belay(['nanobot', '--command', `${node} ../../agents/bot.mjs {message}`, '--text', 'hi', ...backend], workspace);
      assert.equal(code, 0, stderr);
      assert.match(stdout, /bot ran; key DENIED:ENOENT/);
    });

    it('refuses a bot whose program lies in the home folder itself, in one line naming --agent-dir', async () => {
      writeFileSync(path.join(home, 'bot.mjs'), 'console.log("ran")\n');
      const { code, stdout, stderr } = await belay(['nanobot', '--command', `${node} ${home}/bot.mjs`, '--text', 'hi', ...backend], elsewhere);
      assert.equal(code, 2);
      assert.match(stderr, /^belay nanobot: the micro-agent's program .*bot\.mjs lies in .*, which is your home folder and is never shown whole to it: .*--agent-dir DIR$/m);
      assert.doesNotMatch(stdout, /ran/);
    });
  });
}
