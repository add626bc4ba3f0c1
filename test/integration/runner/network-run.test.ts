// A task's network in real runs: an agent whose commands try the network (a Python probe) through
// the allowlist proxy in the sandbox and a container (enforced) and on the local backend (which
// says it cannot enforce it); `public`
// refused without the setting; [environment.env] seen by both phases under Belay's own variables.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { NetworkLogEntry } from '../../../src/runner/core/network/proxy.ts';
import { runFiles } from '../../../src/runner/core/records/records.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';
import { containerOrReason } from '../../support/runner/container-helpers.ts';
import { agentFile, backends, nodeAgent, runFixture, tempDir } from '../../support/runner/helpers.ts';
import { namedHosts } from '../../support/runner/namedHosts.ts';

const tmp = tempDir('belay-netrun-');
const available = await Promise.all([...backends, { name: 'container', get: containerOrReason }].map(async (b) => ({ ...b, backend: await b.get() })));
const hosts = namedHosts({ 'pkgs.test': '203.0.113.20', 'solutions.test': '203.0.113.21', 'rebind.test': '127.0.0.1' });
const seen = hosts.seen;
const resolveNetwork = (host: string) => hosts.resolve(host);

before(async () => {
  await hosts.start();
});
after(async () => {
  await hosts.close();
  tmp.remove();
});

let tasks = 0;
async function networkTask(toml: string) {
  return loadTask(tmp.writeTask(`net-${++tasks}`, { 'task.toml': toml, 'instruction.md': 'Fetch.\n', 'tests/test.sh': 'echo "verifier sees TASK_COLOUR=$TASK_COLOUR" ; exit 0\n' }));
}

/** One attempt of the probe (a Python file, run by whichever python3 the environment has), a line of net.txt. */
const probe = (label: string, mode: 'proxy' | 'tunnel' | 'direct' | 'sni' | 'flood', target: string) => `python3 '${agentFile('net-probe.py')}' ${label} ${mode} '${target}'`;

const ALLOWLIST = '[agent]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pkgs.test", "rebind.test"]\n[environment.env]\nTASK_COLOUR = "teal"\nTERM_NOTE = "x"\n'.replace('TERM_NOTE = "x"\n', '');

describe('a task with an allowlist', () => {
  for (const { name, backend } of available) {
    it(`on ${name}: the named host works, others are refused with 403 and logged${name === 'local' ? ', and the run says what it cannot enforce' : ', and no way around the proxy works'}`, { skip: backend instanceof Error ? backend.message : false }, async () => {
      if (backend instanceof Error) return;
      const task = await networkTask(ALLOWLIST);
      const commands = [
        probe('allowed', 'proxy', 'http://pkgs.test/simple/'),
        probe('denied', 'proxy', 'http://example.org/'),
        probe('solution', 'proxy', 'http://solutions.test/task/solution.sh'),
        probe('rebind', 'tunnel', 'rebind.test:443'),
        probe('private', 'tunnel', `10.0.0.1:443`),
        // A tunnel to a named host whose TLS server name is another host.
        probe('sni', 'sni', 'pkgs.test:443=solutions.test'),
        probe('flood', 'flood', '120'),
        // Around the proxy: straight to the host's server.
        probe(`direct-${name}`, 'direct', `127.0.0.1:${hosts.port}`),
        `echo "agent sees TASK_COLOUR=$TASK_COLOUR TERM_TASK_ID=$TERM_TASK_ID" >> net.txt`,
      ];
      const runsDir = path.join(tmp.dir, `runs-${name}`);
      const { result } = await runFixture(backend, runsDir, nodeAgent('commands.mjs'), { task, env: { AGENT_COMMANDS: JSON.stringify(commands) }, resolveNetwork });
      assert.equal(result.failure_cause, null, result.error ?? '');
      const lines = readFileSync(path.join(runFiles(result.run_dir).workspace, 'net.txt'), 'utf8');
      assert.match(lines, /^allowed 200$/m);
      assert.match(lines, /^denied 403$/m);
      assert.match(lines, /^solution 403$/m);
      assert.match(lines, /^rebind 403$/m);
      assert.match(lines, /^private 403$/m);
      assert.match(lines, /^sni closed$/m);
      // 120 connections at once: the proxy held 64 at most, and served again once they went.
      const flood = /^flood closed=(\d+) after=(\d+)$/m.exec(lines);
      assert.ok(flood, lines);
      assert.ok(Number(flood[1]) >= 120 - 64, lines);
      assert.equal(flood[2], '200');
      assert.match(lines, new RegExp(`agent sees TASK_COLOUR=teal TERM_TASK_ID=${task.name}`));
      const log = readFileSync(path.join(result.run_dir, 'network.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as NetworkLogEntry);
      assert.deepEqual(log.map((e) => [e.phase, e.host, e.allowed]), [['agent', 'pkgs.test', true], ['agent', 'example.org', false], ['agent', 'solutions.test', false], ['agent', 'rebind.test', false], ['agent', '10.0.0.1', false], ['agent', 'pkgs.test', true], ['agent', 'solutions.test', false], ['agent', 'pkgs.test', true]]);
      const testOutput = readFileSync(runFiles(result.run_dir).testOutput, 'utf8');
      assert.match(testOutput, /verifier sees TASK_COLOUR=teal/);
      if (backend.isolated) {
        // The sandbox has no network of its own: the direct connection never reached the host's server.
        assert.match(lines, new RegExp(`^direct-${name} 000$`, 'm'));
        assert.equal(seen.some((line) => line.endsWith(`/direct-${name}`)), false);
        assert.ok(result.notes?.some((note) => /agent phase network: allowlist \(pkgs\.test, rebind\.test\), through Belay's proxy/.test(note)));
      } else {
        // What the local backend cannot stop, and says so: the agent's own connection went straight through.
        assert.match(lines, new RegExp(`^direct-${name} 200$`, 'm'));
        assert.ok(result.notes?.some((note) => /the local backend cannot enforce it: the agent's own connections reach anything/.test(note)));
      }
    });
  }
});

describe('a task asking for the public network', () => {
  const local = available.find((b) => b.name === 'local')!.backend;
  it('does not start without the setting, saying so in one line', async () => {
    if (local instanceof Error) return;
    const task = await networkTask('[agent]\nnetwork_mode = "public"\n');
    const { result } = await runFixture(local, path.join(tmp.dir, 'runs-public'), nodeAgent('commands.mjs'), { task, env: { AGENT_COMMANDS: '[]' } });
    assert.equal(result.failure_cause, 'setup_error');
    assert.match(result.error ?? '', /task\.toml: \[agent\] network_mode "public" needs the public network, which belay\.runner\.allowPublicNetwork \(--allow-public-network\) does not allow; the run did not start$/);
    assert.equal(result.error?.includes('\n'), false);
    assert.equal(result.steps, 0);
    assert.equal(existsSync(path.join(result.run_dir, 'network.jsonl')), false);
  });

  it('runs an older allow_internet = true task with no network and a note, without the setting', async () => {
    if (local instanceof Error) return;
    const task = await networkTask('[environment]\nallow_internet = true\n');
    const { result } = await runFixture(local, path.join(tmp.dir, 'runs-legacy'), nodeAgent('commands.mjs'), { task, env: { AGENT_COMMANDS: '[]' } });
    assert.equal(result.failure_cause, null, result.error ?? '');
    assert.ok(result.notes?.some((note) => /allow_internet = true, but belay\.runner\.allowPublicNetwork is off: the agent phase has no network/.test(note)));
  });

  it('with the setting, reaches public names through the proxy and never an internal one', async () => {
    const isolated = available.find((b) => b.name === 'sandbox')!.backend;
    const backend = isolated instanceof Error ? local : isolated;
    if (backend instanceof Error) return;
    const task = await networkTask('[agent]\nnetwork_mode = "public"\n');
    const commands = [probe('public', 'proxy', 'http://solutions.test/any'), probe('internal', 'tunnel', 'rebind.test:443')];
    const { result } = await runFixture(backend, path.join(tmp.dir, 'runs-public-allowed'), nodeAgent('commands.mjs'), { task, env: { AGENT_COMMANDS: JSON.stringify(commands) }, resolveNetwork, allowPublicNetwork: true });
    assert.equal(result.failure_cause, null, result.error ?? '');
    const lines = readFileSync(path.join(runFiles(result.run_dir).workspace, 'net.txt'), 'utf8');
    assert.match(lines, /^public 200$/m);
    assert.match(lines, /^internal 403$/m);
    const log = readFileSync(path.join(result.run_dir, 'network.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as NetworkLogEntry);
    assert.deepEqual(log.map((e) => [e.host, e.allowed]), [['solutions.test', true], ['rebind.test', false]]);
  });
});
