import assert from 'node:assert/strict';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { containerLauncher } from '../../../src/runner/core/backends/container-nanobot.ts';
import { LABELS, ownerMark } from '../../../src/runner/core/backends/container.ts';
import type { Engine } from '../../../src/runner/core/backends/engine.ts';
import { runNanobot, TerminalConfigSchema, type NanobotEvent } from '../../../src/runner/core/protocols/nanobot.ts';
import { engineWithBase } from '../../support/runner/container-helpers.ts';
import { agentFile, repoRoot, tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-container-nanobot-');
after(() => tmp.remove());
const found = await engineWithBase();
const skip = found instanceof Error ? found.message : false;
const nodeDir = path.dirname(realpathSync(process.execPath));
const node = realpathSync(process.execPath);

describe('nanobot micro-agents in containers', { skip }, () => {
  const engine = found as Engine;
  const launchers: { dispose(): Promise<void> }[] = [];
  const launcher = (idleMs?: number) => {
    const made = containerLauncher({ engine, agentFolders: [path.dirname(agentFile('nanobot-rich.mjs')), nodeDir], ...(idleMs ? { idleMs } : {}) });
    launchers.push(made);
    return made;
  };
  after(() => Promise.all(launchers.map((made) => made.dispose())));
  // This process's containers only: other Belay processes may run micro-agents meanwhile.
  const nanobotContainers = async () => (await engine.check(['ps', '--all', '--filter', `label=${LABELS.owner}=${ownerMark()}`, '--format', '{{.Names}}'], { timeoutMs: 60_000 })).split('\n').filter((name) => name.startsWith('belay-nanobot-'));

  const ours = async (before: readonly string[]) => (await nanobotContainers()).filter((name) => !before.includes(name));

  it('runs a rich micro-agent with its workspace writable at its own path, in one container for both messages, removed with the launcher', async () => {
    const workspace = path.join(tmp.dir, 'bot');
    const events: NanobotEvent[] = [];
    const before = await nanobotContainers();
    const config = TerminalConfigSchema.parse({ command: `'${node}' '${agentFile('nanobot-rich.mjs')}'`, protocol: 'rich', timeout: 60 });
    const bot = launcher();
    const result = await runNanobot({ config, input: { text: 'hello from a test', workspace }, onEvent: (e) => events.push(e), launcher: bot });
    assert.equal(result.ok, true, `${result.error?.text} ${result.stderr}`);
    assert.match(result.messages[0]!.text, /You said: hello from a test \(message #1\)/);
    assert.deepEqual(JSON.parse(readFileSync(path.join(workspace, 'users', 'local', 'state.json'), 'utf8')), { count: 1 });
    assert.ok(events.some((e) => e.type === 'progress'));
    const kept = await ours(before);
    assert.equal(kept.length, 1, kept.join(' '));
    const again = await runNanobot({ config, input: { text: 'again', workspace }, launcher: bot });
    assert.match(again.messages[0]!.text, /You said: again \(message #2\)/);
    assert.deepEqual(await ours(before), kept);
    await bot.dispose();
    assert.deepEqual(await ours(before), []);
  });

  it('holds the timeout, and the container ends once idle', async () => {
    const workspace = path.join(tmp.dir, 'bot-hang');
    const before = await nanobotContainers();
    const config = TerminalConfigSchema.parse({ command: `'${node}' '${agentFile('nanobot-rich.mjs')}' {message}`, protocol: 'rich', timeout: 2 });
    const result = await runNanobot({ config, input: { text: 'hang', workspace }, launcher: launcher(1000) });
    assert.equal(result.timedOut, true);
    assert.equal(result.error?.code, 'TIMEOUT');
    // Idle for a second: the container ends by itself (each look at the engine takes its own time).
    const deadline = Date.now() + 60_000;
    while ((await ours(before)).length > 0 && Date.now() < deadline);
    assert.deepEqual(await ours(before), []);
  });

  it('starts the container again when its executor died', async () => {
    const workspace = path.join(tmp.dir, 'bot-killed');
    const before = await nanobotContainers();
    const bot = launcher();
    const config = TerminalConfigSchema.parse({ command: 'hostname', protocol: 'plain', timeout: 60 });
    const first = await runNanobot({ config, input: { text: 'x', workspace }, launcher: bot });
    const [name] = await ours(before);
    assert.ok(name);
    await engine.check(['rm', '--force', name], { timeoutMs: 60_000 });
    const second = await runNanobot({ config, input: { text: 'x', workspace }, launcher: bot });
    assert.equal(second.ok, true, `${second.error?.text} ${second.stderr}`);
    assert.notEqual(second.messages[0]?.text, first.messages[0]?.text);
    const now = await ours(before);
    assert.equal(now.length, 1);
    assert.notEqual(now[0], name);
  });

  it('gives the micro-agent no network, no capabilities and nothing of the host but its folders', async () => {
    const workspace = path.join(tmp.dir, 'bot-hostile');
    const script = [
      `touch ${path.dirname(agentFile('nanobot-rich.mjs'))}/nanobot-escape.txt 2>&1 | sed 's/.*: //'`,
      `ls ${repoRoot}/package.json 2>&1 | sed 's/.*: //'`,
      'grep CapEff /proc/self/status',
      `python3 -c "import socket; socket.create_connection(('1.1.1.1', 53), 3)" 2>&1 | tail -1`,
      'ls /root/.ssh 2>&1 | sed "s/.*: //"',
      'echo ok > written.txt',
    ].join('; ');
    const config = TerminalConfigSchema.parse({ command: script, protocol: 'plain', timeout: 60 });
    const bot = launcher();
    const result = await runNanobot({ config, input: { text: 'x', workspace }, launcher: bot });
    await bot.dispose();
    const text = result.messages[0]?.text ?? '';
    assert.match(text, /Read-only file system/);
    assert.match(text, /CapEff:\s+0000000000000000/);
    assert.match(text, /Network is unreachable/);
    assert.match(text, /No such file or directory/);
    assert.equal(existsSync(path.join(path.dirname(agentFile('nanobot-rich.mjs')), 'nanobot-escape.txt')), false);
    assert.equal(readFileSync(path.join(workspace, 'written.txt'), 'utf8'), 'ok\n');
  });
});
