import assert from 'node:assert/strict';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { containerLauncher } from '../../../src/runner/core/backends/container-nanobot.ts';
import { LABELS } from '../../../src/runner/core/backends/container.ts';
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
  const launcher = () => containerLauncher({ engine, agentFolders: [path.dirname(agentFile('nanobot-rich.mjs')), nodeDir] });
  const nanobotContainers = async () => (await engine.check(['ps', '--all', '--filter', `label=${LABELS.run}`, '--format', '{{.Names}}'], { timeoutMs: 60_000 })).split('\n').filter((name) => name.startsWith('belay-nanobot-'));

  it('runs a rich micro-agent with its workspace writable at its own path, and removes the container', async () => {
    const workspace = path.join(tmp.dir, 'bot');
    const events: NanobotEvent[] = [];
    const before = await nanobotContainers();
    const config = TerminalConfigSchema.parse({ command: `'${node}' '${agentFile('nanobot-rich.mjs')}'`, protocol: 'rich', timeout: 60 });
    const result = await runNanobot({ config, input: { text: 'hello from a test', workspace }, onEvent: (e) => events.push(e), launcher: launcher() });
    assert.equal(result.ok, true, `${result.error?.text} ${result.stderr}`);
    assert.match(result.messages[0]!.text, /You said: hello from a test \(message #1\)/);
    assert.deepEqual(JSON.parse(readFileSync(path.join(workspace, 'users', 'local', 'state.json'), 'utf8')), { count: 1 });
    assert.ok(events.some((e) => e.type === 'progress'));
    assert.deepEqual(await nanobotContainers(), before);
  });

  it('holds the timeout and leaves no container behind', async () => {
    const workspace = path.join(tmp.dir, 'bot-hang');
    const before = await nanobotContainers();
    const config = TerminalConfigSchema.parse({ command: `'${node}' '${agentFile('nanobot-rich.mjs')}' {message}`, protocol: 'rich', timeout: 2 });
    const result = await runNanobot({ config, input: { text: 'hang', workspace }, launcher: launcher() });
    assert.equal(result.timedOut, true);
    assert.equal(result.error?.code, 'TIMEOUT');
    assert.deepEqual(await nanobotContainers(), before);
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
    const result = await runNanobot({ config, input: { text: 'x', workspace }, launcher: launcher() });
    const text = result.messages[0]?.text ?? '';
    assert.match(text, /Read-only file system/);
    assert.match(text, /CapEff:\s+0000000000000000/);
    assert.match(text, /Network is unreachable/);
    assert.match(text, /No such file or directory/);
    assert.equal(existsSync(path.join(path.dirname(agentFile('nanobot-rich.mjs')), 'nanobot-escape.txt')), false);
    assert.equal(readFileSync(path.join(workspace, 'written.txt'), 'utf8'), 'ok\n');
  });
});
