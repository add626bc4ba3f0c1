// The verify phase's own network in real runs: a task whose [verifier] is an allowlist (its tests
// fetch an allowed host through their own proxy, are refused another, cannot go around it in the
// sandbox and the container), in the shared environment and in a verifier's environment of its
// own, while the agent phase has another list and leaves a process behind that tries to reach
// the verifier's proxy; and a task whose agent phase has an allowlist but whose verifier has no
// network: its tests see no proxy and reach nothing.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { NetworkLogEntry } from '../../../src/runner/core/network/proxy.ts';
import { hostGateway, type HostedGateway } from '../../../src/runner/core/run/runLlm.ts';
import { runFiles } from '../../../src/runner/core/records/records.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';
import { containerOrReason } from '../../support/runner/container-helpers.ts';
import { startUpstream, type FakeUpstream } from '../../support/runner/gateway-upstream.ts';
import { agentFile, backends, nodeAgent, runFixture, tempDir } from '../../support/runner/helpers.ts';
import { namedHosts } from '../../support/runner/namedHosts.ts';

const tmp = tempDir('belay-netverify-');
const available = await Promise.all([...backends, { name: 'container', get: containerOrReason }].map(async (b) => ({ ...b, backend: await b.get() })));
const hosts = namedHosts({ 'pkgs.test': '203.0.113.20', 'solutions.test': '203.0.113.21', 'leftover.test': '203.0.113.22' });
const seen = hosts.seen;
const resolveNetwork = (host: string) => hosts.resolve(host);
// A gateway in the run, so that there are a key and a gateway the verifier must not get.
let upstream: FakeUpstream;
let gateway: HostedGateway;

before(async () => {
  upstream = await startUpstream('/v1');
  gateway = await hostGateway();
  await hosts.start();
});
after(async () => {
  await gateway.close();
  await upstream.close();
  await hosts.close();
  tmp.remove();
});


const PROBE = readFileSync(agentFile('net-probe.py'), 'utf8');

let tasks = 0;
/** A task whose tests run `lines` (shell) in the verifier's logs folder, where net.txt is kept with the run. */
async function networkTask(toml: string, lines: string[]) {
  const script = ['cd "$LOGS_DIR/verifier" || exit 3', ...lines, 'exit 0', ''].join('\n');
  return loadTask(tmp.writeTask(`netv-${++tasks}`, { 'task.toml': toml, 'instruction.md': 'Fetch.\n', 'tests/test.sh': script, 'tests/net-probe.py': PROBE }));
}

/** One attempt of the probe from the tests (the copy staged with them). */
const testProbe = (label: string, mode: 'proxy' | 'tunnel' | 'direct', target: string) => `python3 "$TEST_DIR/net-probe.py" ${label} ${mode} '${target}'`;
/** One attempt of the probe from the agent. */
const agentProbe = (label: string, mode: 'proxy' | 'direct', target: string) => `python3 '${agentFile('net-probe.py')}' ${label} ${mode} '${target}'`;
/** The agent's leftover: started detached, waited for until it has had an answer (bounded), its first answer noted. */
const leftover = (ports: boolean) =>
  `python3 '${agentFile('net-leftover.py')}'${ports ? ' ports' : ''} </dev/null >/dev/null 2>&1; for i in $(seq 1 150); do [ -e leftover.ready ] && break; sleep 0.1; done; echo "leftover $(cat leftover.ready 2>/dev/null || echo none)" >> net.txt`;

function networkLog(runDir: string): NetworkLogEntry[] {
  const file = path.join(runDir, 'network.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').trim().split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as NetworkLogEntry);
}

const VERIFIER_ALLOWLIST = (separate: boolean) =>
  `[agent]\nnetwork_mode = "allowlist"\nallowed_hosts = ["solutions.test"]\n[verifier]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pkgs.test"]\n${separate ? 'environment_mode = "separate"\n' : ''}`;

describe('a task whose verifier has an allowlist', () => {
  for (const { name, backend } of available) {
    for (const separate of [false, true]) {
      const where = separate ? "in the verifier's own environment" : 'in the shared environment';
      it(`on ${name}, ${where}: the tests reach their allowed host through their own proxy, are refused another (both logged as the verifier's), ${name === 'local' ? 'and the run says it cannot enforce it' : 'and cannot go around it'}; nothing the agent left reaches it`, { skip: backend instanceof Error ? backend.message : false }, async () => {
        if (backend instanceof Error) return;
        const label = `${name}-${separate ? 'separate' : 'shared'}`;
        const task = await networkTask(VERIFIER_ALLOWLIST(separate), [
          testProbe('v-allowed', 'proxy', `http://pkgs.test/verifier-${label}`),
          testProbe('v-denied', 'proxy', 'http://solutions.test/solution.sh'),
          testProbe(`v-direct-${label}`, 'direct', `127.0.0.1:${hosts.port}`),
          'echo "v-proxy ${HTTP_PROXY:+set} keys=${LLM_API_KEY:-none}${OPENAI_API_KEY:-}${ANTHROPIC_API_KEY:-} gateway=${OPENAI_BASE_URL:-none}" >> net.txt',
        ]);
        const commands = [
          'echo "agent-key ${LLM_API_KEY:+set}" >> net.txt',
          // The agent phase has its own list: the verifier's host is not on it.
          agentProbe('a-verifier-host', 'proxy', 'http://pkgs.test/agent'),
          agentProbe('a-allowed', 'proxy', 'http://solutions.test/agent'),
          leftover(backend.isolated),
        ];
        const { result } = await runFixture(backend, path.join(tmp.dir, `runs-${label}`), nodeAgent('commands.mjs'), {
          task,
          env: { AGENT_COMMANDS: JSON.stringify(commands) },
          resolveNetwork,
          llm: { gateway: gateway.gateway, socketPath: gateway.socketPath, upstream: { baseUrl: upstream.url, key: 'sk-upstream-key-of-this-test' } },
        });
        assert.equal(result.failure_cause, null, result.error ?? '');
        const agentLines = readFileSync(path.join(runFiles(result.run_dir).workspace, 'net.txt'), 'utf8');
        assert.match(agentLines, /^agent-key set$/m);
        assert.match(agentLines, /^a-verifier-host 403$/m);
        assert.match(agentLines, /^a-allowed 200$/m);
        // The leftover was alive and reaching the agent's proxy before the agent phase ended.
        assert.match(agentLines, /^leftover HTTP\/1\.1 403/m);
        const lines = readFileSync(path.join(runFiles(result.run_dir).logs, 'verifier', 'net.txt'), 'utf8');
        assert.match(lines, /^v-allowed 200$/m);
        assert.match(lines, /^v-denied 403$/m);
        // The verifier gets its proxy, never a key or the gateway.
        assert.match(lines, /^v-proxy set keys=none gateway=none$/m);
        assert.ok(seen.includes(`pkgs.test /verifier-${label}`), seen.join('\n'));
        const log = networkLog(result.run_dir);
        // Every verifier line is one the tests made: the leftover (dead before the verify phase) is in none of them.
        assert.deepEqual(log.filter((e) => e.phase === 'verifier').map((e) => [e.host, e.allowed]), [['pkgs.test', true], ['solutions.test', false]]);
        assert.ok(log.some((e) => e.phase === 'agent' && e.host === 'leftover.test' && !e.allowed), 'the leftover reached the agent phase\'s proxy');
        assert.deepEqual(log.filter((e) => e.phase === 'agent' && e.host !== 'leftover.test').map((e) => [e.host, e.allowed]), [['pkgs.test', false], ['solutions.test', true]]);
        assert.equal(seen.some((line) => line.startsWith('leftover.test')), false);
        if (backend.isolated) {
          assert.match(lines, new RegExp(`^v-direct-${label} 000$`, 'm'));
          assert.equal(seen.some((line) => line.endsWith(`/direct-v-direct-${label}`)), false);
          assert.ok(result.notes?.some((note) => /^verify phase network: allowlist \(pkgs\.test\), through Belay's proxy/.test(note)), result.notes?.join('\n'));
        } else {
          // What the local backend cannot stop, and says so: the tests' own connection went straight through.
          assert.match(lines, new RegExp(`^v-direct-${label} 200$`, 'm'));
          assert.ok(result.notes?.some((note) => /^verify phase network: allowlist \(pkgs\.test\) — the local backend cannot enforce it: the tests' own connections reach anything/.test(note)), result.notes?.join('\n'));
        }
      });
    }
  }
});

describe('a task whose agent phase has an allowlist and whose verifier has no network', () => {
  for (const { name, backend } of available) {
    it(`on ${name}: the tests see no proxy variables${name === 'local' ? '' : ' and cannot connect anywhere'}; no verifier line is logged`, { skip: backend instanceof Error ? backend.message : false }, async () => {
      if (backend instanceof Error) return;
      const task = await networkTask('[agent]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pkgs.test"]\n[verifier]\nnetwork_mode = "no-network"\n', [
        'echo "v-proxy-variables $(env | grep -ci proxy)" >> net.txt',
        testProbe('v-name', 'proxy', 'http://pkgs.test/verifier-none'),
        testProbe(`v-direct-none-${name}`, 'direct', `127.0.0.1:${hosts.port}`),
        // Where the agent phase's proxy was, and where a verifier's would be: nothing listens (inside an isolated environment).
        ...(backend.isolated ? [`HTTPS_PROXY=http://127.0.0.1:4141 ${testProbe('v-port', 'tunnel', 'pkgs.test:443')}`] : []),
      ]);
      const commands = [agentProbe('a-allowed', 'proxy', 'http://pkgs.test/agent-none')];
      const { result } = await runFixture(backend, path.join(tmp.dir, `runs-none-${name}`), nodeAgent('commands.mjs'), { task, env: { AGENT_COMMANDS: JSON.stringify(commands) }, resolveNetwork });
      assert.equal(result.failure_cause, null, result.error ?? '');
      assert.match(readFileSync(path.join(runFiles(result.run_dir).workspace, 'net.txt'), 'utf8'), /^a-allowed 200$/m);
      const lines = readFileSync(path.join(runFiles(result.run_dir).logs, 'verifier', 'net.txt'), 'utf8');
      assert.match(lines, /^v-proxy-variables 0$/m);
      assert.match(lines, /^v-name 000$/m);
      if (backend.isolated) {
        assert.match(lines, /^v-port 000$/m);
        assert.match(lines, new RegExp(`^v-direct-none-${name} 000$`, 'm'));
        assert.equal(seen.some((line) => line.endsWith(`/direct-v-direct-none-${name}`)), false);
      }
      assert.deepEqual(networkLog(result.run_dir).map((e) => [e.phase, e.host, e.allowed]), [['agent', 'pkgs.test', true]]);
      assert.equal(result.notes?.some((note) => /verify phase network/.test(note)), false);
    });
  }
});

describe("a multi-step task whose second step's verifier has an allowlist of its own", () => {
  for (const { name, backend } of available.filter((b) => b.name !== 'container')) {
    it(`on ${name}: step one's tests have no network (the task's), step two's reach its host through their own proxy and are refused another, logged as the verifier's`, { skip: backend instanceof Error ? backend.message : false }, async () => {
      if (backend instanceof Error) return;
      const label = `steps-${name}`;
      // Each step's tests pass only when the network is as that step says.
      const stepTests = (lines: string[], pass: string) => ['cd "$LOGS_DIR/verifier" || exit 3', ...lines, 'cat net.txt', pass, ''].join('\n');
      const dir = tmp.writeTask(`netv-${label}`, {
        'task.toml': '[verifier]\ntimeout_sec = 60\n\n[[steps]]\nname = "one"\n\n[[steps]]\nname = "two"\n[steps.verifier]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pkgs.test"]\n',
        'steps/one/instruction.md': 'Step one.\n',
        'steps/one/tests/test.sh': stepTests(['echo "v1-proxy-variables $(env | grep -ci proxy)" >> net.txt', testProbe('v1-name', 'proxy', `http://pkgs.test/step-one-${label}`)], "grep -q '^v1-proxy-variables 0$' net.txt && grep -q '^v1-name 000$' net.txt"),
        'steps/one/tests/net-probe.py': PROBE,
        'steps/two/instruction.md': 'Step two.\n',
        'steps/two/tests/test.sh': stepTests([testProbe('v2-allowed', 'proxy', `http://pkgs.test/step-two-${label}`), testProbe('v2-denied', 'proxy', `http://solutions.test/step-two-${label}`)], "grep -q '^v2-allowed 200$' net.txt && grep -q '^v2-denied 403$' net.txt"),
        'steps/two/tests/net-probe.py': PROBE,
      });
      const { result } = await runFixture(backend, path.join(tmp.dir, `runs-${label}`), nodeAgent('commands.mjs'), { task: await loadTask(dir), env: { AGENT_COMMANDS: '[]' }, resolveNetwork });
      assert.equal(result.failure_cause, null, result.error ?? '');
      assert.equal(result.reward, 1);
      assert.deepEqual(result.task_steps?.map((s) => [s.name, s.reward]), [['one', 1], ['two', 1]]);
      assert.ok(seen.includes(`pkgs.test /step-two-${label}`), seen.join('\n'));
      assert.equal(seen.some((line) => line.includes(`step-one-${label}`) || line.startsWith(`solutions.test /step-two-${label}`)), false);
      assert.deepEqual(networkLog(result.run_dir).map((e) => [e.phase, e.host, e.allowed]), [['verifier', 'pkgs.test', true], ['verifier', 'solutions.test', false]]);
      assert.ok(result.notes?.some((note) => /^step 'two': verify phase network: allowlist \(pkgs\.test\)/.test(note)), result.notes?.join('\n'));
    });
  }
});
