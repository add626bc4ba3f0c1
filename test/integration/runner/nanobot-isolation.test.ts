// Micro-agents run isolated by default, like task agents: in a container where an engine works,
// in the bubblewrap sandbox otherwise, on the host only when `local` is named. A hostile
// micro-agent tries to read host files outside its folders, Belay's environment and the network,
// in every isolated place there is here.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { BackendUnavailableError } from '../../../src/runner/core/backends/backend.ts';
import { microAgentLauncher } from '../../../src/runner/core/backends/nanobot-launch.ts';
import { runNanobot, TerminalConfigSchema } from '../../../src/runner/core/protocols/nanobot.ts';
import { engineWithBase } from '../../support/runner/container-helpers.ts';
import { agentFile, nodeDir, sandboxOrReason, tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-nanobot-isolation-');
after(() => tmp.remove());
const engine = await engineWithBase();
const sandbox = await sandboxOrReason();
const token = `belay-bot-${process.pid}-${randomBytes(3).toString('hex')}`;
const SECRET_VARIABLE = 'BELAY_BOT_SECRET';
process.env[SECRET_VARIABLE] = `secret-${token}`;

/** A file of another project, beside the bot's folders: the bot must not read it. */
const otherProject = path.join(tmp.dir, 'other-project');
mkdirSync(otherProject, { recursive: true });
writeFileSync(path.join(otherProject, 'secret.txt'), `${token}-other-project\n`);

/** A regular file in the user's real home, with its SHA-256 (a container has its own /root). */
function homeFile(): { file: string; sha256: string } | undefined {
  try {
    for (const entry of readdirSync(os.homedir())) {
      const file = path.join(os.homedir(), entry);
      if (!lstatSync(file).isFile() || lstatSync(file).size === 0) continue;
      return { file, sha256: createHash('sha256').update(readFileSync(file)).digest('hex') };
    }
  } catch {
    // no home to read
  }
  return undefined;
}

const places = [
  { name: 'sandbox' as const, skip: sandbox instanceof Error ? sandbox.message : false },
  { name: 'container' as const, skip: engine instanceof Error ? engine.message : false },
];

for (const place of places) {
  describe(`a hostile micro-agent (${place.name})`, { skip: place.skip }, () => {
    it('reads nothing of the host outside its folders, sees none of Belay\'s environment and no network; writes its workspace', async () => {
      const launcher = await microAgentLauncher({ backend: place.name, agentFolders: [path.dirname(agentFile('nanobot-rich.mjs')), nodeDir] });
      assert.notEqual(launcher, 'local');
      assert.match(typeof launcher === 'string' ? '' : (launcher.label ?? ''), new RegExp(`^${place.name} `));
      const home = homeFile();
      const script = [
        `cat '${path.join(otherProject, 'secret.txt')}' 2>/dev/null`,
        home ? `[ "$(sha256sum '${home.file}' 2>/dev/null | cut -c1-64)" = '${home.sha256}' ] && echo READ-HOME` : 'true',
        `env | grep -q '^${SECRET_VARIABLE}=' && echo SAW-SECRET`,
        `(echo > /dev/tcp/1.1.1.1/53) 2>/dev/null && echo NETWORK`,
        'echo written > in-workspace.txt && echo WROTE',
      ].join('; ');
      const workspace = path.join(tmp.dir, `bot-${place.name}`);
      const config = TerminalConfigSchema.parse({ command: `bash -c ${JSON.stringify(script)}`, protocol: 'plain', timeout: 60 });
      const result = await runNanobot({ config, input: { text: 'x', workspace }, launcher });
      if (launcher !== 'local') await launcher.dispose();
      const text = result.messages[0]?.text ?? '';
      assert.doesNotMatch(text, new RegExp(`${token}-other-project|READ-HOME|SAW-SECRET|NETWORK`));
      assert.match(text, /WROTE/, `${text}\n${result.stderr}`);
      assert.equal(readFileSync(path.join(workspace, 'in-workspace.txt'), 'utf8'), 'written\n');
    });
  });
}

describe('where a micro-agent runs', () => {
  it('isolated unless local is named: auto picks a container or the sandbox, or refuses saying how to choose local', async () => {
    const agentFolders = [path.dirname(agentFile('nanobot-rich.mjs'))];
    assert.equal(await microAgentLauncher({ backend: 'local', agentFolders }), 'local');
    const chosen = await microAgentLauncher({ agentFolders }).catch((error: unknown) => error);
    if (chosen instanceof BackendUnavailableError) assert.match(chosen.message, /choose local/);
    else {
      assert.notEqual(chosen, 'local');
      assert.match(typeof chosen === 'object' && chosen !== null && 'label' in chosen ? String(chosen.label) : '', /^(container|sandbox) /);
    }
  });
});

// One environment per bot, its executor its one program: each message a command whose whole tree
// ends with it (a background process, a timeout), the environment kept between messages and
// ended by `dispose`, mid-message too.
for (const place of places) {
  describe(`a bot's environment (${place.name})`, { skip: place.skip }, () => {
    // The command is run by the shell as it is: no quoting between the script and its shell.
    const plain = (script: string, timeout = 60) => TerminalConfigSchema.parse({ command: script, protocol: 'plain', timeout });
    const mark = `marker-${token}`;

    it('is shared by two messages, and a background process of the first is gone before the second starts', async () => {
      const launcher = await microAgentLauncher({ backend: place.name, agentFolders: [nodeDir] });
      assert.notEqual(launcher, 'local');
      if (launcher === 'local') return;
      try {
        const workspace = path.join(tmp.dir, `env-${place.name}`);
        const first = await runNanobot({ config: plain(`echo here > /tmp/${mark}; sleep 300 & echo $! > bg.pid; echo EXECUTOR=$(cut -d" " -f4 /proc/$PPID/stat)`), input: { text: 'x', workspace }, launcher });
        assert.equal(first.ok, true, `${first.messages[0]?.text} ${first.stderr}`);
        const parent = /EXECUTOR=(\d+)/.exec(first.messages[0]!.text)?.[1];
        assert.ok(parent, first.messages[0]!.text);
        const second = await runNanobot({ config: plain(`cat /tmp/${mark}; test -d /proc/$(cat bg.pid) && echo ALIVE || echo GONE; echo EXECUTOR=$(cut -d" " -f4 /proc/$PPID/stat)`), input: { text: 'x', workspace }, launcher });
        const text = second.messages[0]?.text ?? '';
        assert.match(text, /^here$/m, text);
        assert.match(text, /^GONE$/m, text);
        assert.match(text, new RegExp(`EXECUTOR=${parent}\\b`), text);
      } finally {
        await launcher.dispose();
      }
    });

    it('keeps nothing of a message that timed out', async () => {
      const launcher = await microAgentLauncher({ backend: place.name, agentFolders: [nodeDir] });
      if (launcher === 'local') return assert.fail('local');
      try {
        const workspace = path.join(tmp.dir, `env-timeout-${place.name}`);
        const hung = await runNanobot({ config: plain('sleep 300 & echo $! > bg.pid; (setsid sleep 300 & echo $! > bg2.pid); sleep 300; echo UNREACHED', 2), input: { text: 'x', workspace }, launcher });
        assert.equal(hung.timedOut, true);
        const after = await runNanobot({ config: plain('for f in bg.pid bg2.pid; do test -d /proc/$(cat $f) && echo ALIVE || echo GONE; done'), input: { text: 'x', workspace }, launcher });
        assert.equal(after.messages[0]?.text, 'GONE\nGONE');
      } finally {
        await launcher.dispose();
      }
    });

    it('ends with dispose, mid-message; the next message starts a fresh one', async () => {
      const launcher = await microAgentLauncher({ backend: place.name, agentFolders: [path.dirname(agentFile('nanobot-rich.mjs')), nodeDir] });
      if (launcher === 'local') return assert.fail('local');
      const workspace = path.join(tmp.dir, `env-dispose-${place.name}`);
      try {
        const seeded = await runNanobot({ config: plain(`echo here > /tmp/${mark}`), input: { text: 'x', workspace }, launcher });
        assert.equal(seeded.ok, true, seeded.stderr);
        let started!: () => void;
        const progress = new Promise<void>((resolve) => (started = resolve));
        const config = TerminalConfigSchema.parse({ command: `'${realpathSync(process.execPath)}' '${agentFile('nanobot-rich.mjs')}'`, protocol: 'rich', timeout: 300 });
        const hanging = runNanobot({ config, input: { text: 'hang', workspace }, launcher, onEvent: (e) => e.type === 'progress' && started() });
        await progress;
        await launcher.dispose();
        const result = await hanging;
        assert.equal(result.ok, false);
        assert.equal(result.timedOut, false);
        const fresh = await runNanobot({ config: plain(`test -e /tmp/${mark} && echo SAME || echo FRESH`), input: { text: 'x', workspace }, launcher });
        assert.equal(fresh.messages[0]?.text, 'FRESH');
      } finally {
        await launcher.dispose();
      }
    });
  });
}
