// The verifier's network on the grading paths without an agent phase of their own: a regrade
// (in-process and as a real `belay run --regrade` process) gets the task's *current* [verifier]
// policy, its attempts in the regrade's own network.jsonl and never in the run's, no key and no
// gateway, and `public` only when the person allows it; a Term Challenge repository task's tests
// run under the task's verifier policy (none unless workspace.yaml says otherwise).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Backend } from '../../../src/runner/core/backends/backend.ts';
import { createJob, runJob } from '../../../src/runner/core/jobs/job.ts';
import type { NetworkLogEntry } from '../../../src/runner/core/network/proxy.ts';
import type { RunResult } from '../../../src/runner/core/records/records.ts';
import { regradeJob } from '../../../src/runner/core/regrade/regrade.ts';
import { hostGateway, type HostedGateway } from '../../../src/runner/core/run/runLlm.ts';
import { loadTask, type Task } from '../../../src/runner/core/tasks/task.ts';
import { ensureBuilt } from '../../support/build.ts';
import { runCli } from '../../support/cli-process.ts';
import { containerOrReason } from '../../support/runner/container-helpers.ts';
import { startUpstream, type FakeUpstream } from '../../support/runner/gateway-upstream.ts';
import { agentFile, backends, nodeAgent, repoRoot, runFixture, tempDir } from '../../support/runner/helpers.ts';
import { namedHosts } from '../../support/runner/namedHosts.ts';

const tmp = tempDir('belay-netregrade-');
const cli = path.join(repoRoot, 'dist', 'cli.js');
const local = await backends[0]!.get();
const available = await Promise.all([...backends, { name: 'container', get: containerOrReason }].map(async (b) => ({ ...b, backend: await b.get() })));
const hosts = namedHosts({ 'pkgs.test': '203.0.113.30', 'solutions.test': '203.0.113.31' });
const seen = hosts.seen;
const resolveNetwork = (host: string) => hosts.resolve(host);
let upstream: FakeUpstream;
let gateway: HostedGateway;

before(async () => {
  ensureBuilt();
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
/** One attempt of the probe from the tests (the copy staged with them). */
const testProbe = (label: string, mode: 'proxy' | 'tunnel' | 'direct', target: string) => `python3 "$TEST_DIR/net-probe.py" ${label} ${mode} '${target}'`;
const agentProbe = (label: string, mode: 'proxy' | 'direct', target: string) => `python3 '${agentFile('net-probe.py')}' ${label} ${mode} '${target}'`;
/** What the verifier has of keys and of the gateway, as one line of net.txt. */
const KEYS_LINE = 'echo "v-env keys=${LLM_API_KEY:-none}${OPENAI_API_KEY:-}${ANTHROPIC_API_KEY:-} gateway=${OPENAI_BASE_URL:-none}${ANTHROPIC_BASE_URL:-}" >> net.txt';

/** task.toml's network, then tests that run `lines` in the verifier's logs folder and pass when the agent's hello.txt is there. */
function writeTaskFiles(taskDir: string, toml: string, lines: string[]): void {
  const script = ['[ -f hello.txt ] || exit 4', 'cd "$LOGS_DIR/verifier" || exit 3', ...lines, 'exit 0', ''].join('\n');
  tmp.writeTask(path.relative(tmp.dir, taskDir), { 'task.toml': toml, 'instruction.md': 'Write hello.txt.\n', 'tests/test.sh': script, 'tests/net-probe.py': PROBE });
}

/** The network a task had when its job ran: the agent may reach solutions.test, the verifier nothing. */
const OLD_TOML = '[agent]\nnetwork_mode = "allowlist"\nallowed_hosts = ["solutions.test"]\n[verifier]\nnetwork_mode = "no-network"\n';

/** A job of one trial of `task` on `backend`, the trial run by runFixture with `trial`'s options. */
async function oneTrialJob(label: string, task: Task, backend: Backend, backendName: string, trial: NonNullable<Parameters<typeof runFixture>[3]>): Promise<{ jobDir: string; run: RunResult }> {
  const jobDir = await createJob({ jobsDir: path.join(tmp.dir, `jobs-${label}`), tasks: [task], settings: { agent: 'commands', protocol: 'sdk1', backend: backendName, attempts: 1, options: {} } });
  const runs: RunResult[] = [];
  await runJob({
    jobDir,
    tasks: [task],
    concurrency: 1,
    runTrial: async ({ task, runId, runsDir, signal, onEvent }) => {
      const { result } = await runFixture(backend, runsDir, nodeAgent('commands.mjs'), { ...trial, task, runId, signal, onEvent });
      runs.push(result);
      return result;
    },
  });
  assert.equal(runs.length, 1);
  return { jobDir, run: runs[0]! };
}

/** A job of one trial on `backend`: the agent writes hello.txt and fetches from solutions.test, with a gateway and its key in the run. */
async function recordedJob(label: string, backend: Backend, backendName: string): Promise<{ jobDir: string; taskDir: string; run: RunResult }> {
  const taskDir = path.join(tmp.dir, `task-${label}`);
  writeTaskFiles(taskDir, OLD_TOML, []);
  const { jobDir, run } = await oneTrialJob(label, await loadTask(taskDir), backend, backendName, {
    resolveNetwork,
    env: { AGENT_COMMANDS: JSON.stringify(["printf 'Hello, world!' > hello.txt", agentProbe('a-allowed', 'proxy', `http://solutions.test/agent-${label}`)]) },
    llm: { gateway: gateway.gateway, socketPath: gateway.socketPath, upstream: { baseUrl: upstream.url, key: 'sk-upstream-key-of-this-test' } },
  });
  assert.equal(run.passed, true, run.error ?? '');
  return { jobDir, taskDir, run };
}

function networkLog(file: string): NetworkLogEntry[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').trim().split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as NetworkLogEntry);
}

/** The one regrade folder of a run. */
function regradeFolder(runDir: string): string {
  const stamps = readdirSync(path.join(runDir, 'regrade'));
  assert.equal(stamps.length, 1, stamps.join(', '));
  return path.join(runDir, 'regrade', stamps[0]!);
}

describe("a regrade's verifier gets the task's current network", () => {
  for (const { name, backend } of available) {
    it(`on ${name}: a run recorded with a verifier of no network, regraded after the task asks for an allowlist: the allowed host through its own proxy, another refused, the gateway's port refused, no key; all logged in the regrade's network.jsonl, the run's log untouched`, { skip: backend instanceof Error ? backend.message : false }, async () => {
      if (backend instanceof Error) return;
      const { jobDir, taskDir, run } = await recordedJob(`inproc-${name}`, backend, name);
      const runLog = path.join(run.run_dir, 'network.jsonl');
      const runLogBefore = readFileSync(runLog, 'utf8');
      assert.deepEqual(networkLog(runLog).map((e) => [e.phase, e.host, e.allowed]), [['agent', 'solutions.test', true]]);
      // The task now asks for an allowlist in its verify phase.
      writeTaskFiles(taskDir, '[agent]\nnetwork_mode = "allowlist"\nallowed_hosts = ["solutions.test"]\n[verifier]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pkgs.test"]\n', [
        testProbe('v-allowed', 'proxy', `http://pkgs.test/regrade-${name}`),
        testProbe('v-denied', 'proxy', `http://solutions.test/regrade-solution-${name}`),
        testProbe('v-gateway', 'tunnel', '127.0.0.1:4141'),
        testProbe(`v-direct-${name}`, 'direct', `127.0.0.1:${hosts.port}`),
        KEYS_LINE,
      ]);
      const notices: string[] = [];
      const report = await regradeJob({ jobDir, backend, resolveNetwork, onNotice: (n) => notices.push(n) });
      const trial = report.trials[0]!;
      assert.equal(trial.skipped, undefined, trial.skipped);
      assert.deepEqual(trial.after, { reward: 1, passed: true });
      const folder = regradeFolder(run.run_dir);
      const lines = readFileSync(path.join(folder, 'logs', 'verifier', 'net.txt'), 'utf8');
      assert.match(lines, /^v-allowed 200$/m);
      assert.match(lines, /^v-denied 403$/m);
      assert.match(lines, /^v-gateway 403$/m);
      assert.match(lines, /^v-env keys=none gateway=none$/m);
      assert.ok(seen.includes(`pkgs.test /regrade-${name}`), seen.join('\n'));
      assert.equal(seen.some((line) => line.includes(`regrade-solution-${name}`)), false);
      // Every attempt in the regrade's own log, as the verifier's; the run's log as it was.
      assert.deepEqual(networkLog(path.join(folder, 'network.jsonl')).map((e) => [e.phase, e.host, e.port, e.allowed]), [
        ['verifier', 'pkgs.test', 80, true],
        ['verifier', 'solutions.test', 80, false],
        ['verifier', '127.0.0.1', 4141, false],
      ]);
      assert.equal(readFileSync(runLog, 'utf8'), runLogBefore);
      if (backend.isolated) {
        assert.match(lines, new RegExp(`^v-direct-${name} 000$`, 'm'));
        assert.equal(seen.some((line) => line.endsWith(`/direct-v-direct-${name}`)), false);
        assert.ok(notices.some((n) => /^verify phase network: allowlist \(pkgs\.test\), through Belay's proxy/.test(n)), notices.join('\n'));
      } else {
        assert.ok(notices.some((n) => /^verify phase network: allowlist \(pkgs\.test\) — the local backend cannot enforce it/.test(n)), notices.join('\n'));
      }
      // Nothing of the agent phase's network is in a regrade: no agent line, no agent proxy.
      assert.equal(notices.some((n) => /agent phase network/.test(n)), false);
    });
  }
});

describe('belay run --regrade and the network', () => {
  const cliBackend = available.find((b) => b.name === 'sandbox' && !(b.backend instanceof Error)) ?? available[0]!;

  it(`a real regrade process (${cliBackend.name}): the verifier tunnels to the host its allowlist names, is refused another, sees none of the process's keys; the attempts are in the regrade's log`, async () => {
    const backend = cliBackend.backend as Backend;
    const { jobDir, taskDir, run } = await recordedJob('cli', backend, cliBackend.name);
    writeTaskFiles(taskDir, `[verifier]\nnetwork_mode = "allowlist"\nallowed_hosts = ["127.0.0.1:${hosts.port}"]\n`, [
      testProbe('v-allowed', 'tunnel', `127.0.0.1:${hosts.port}`),
      testProbe('v-denied', 'tunnel', 'solutions.test:443'),
      KEYS_LINE,
    ]);
    const regrade = await runCli(cli, ['run', '--regrade', jobDir, '--backend', cliBackend.name], { cwd: repoRoot, env: { ANTHROPIC_API_KEY: 'sk-ant-of-the-person', OPENAI_API_KEY: 'sk-openai-of-the-person' } });
    assert.equal(regrade.code, 0, regrade.stderr);
    assert.match(regrade.stdout, /^task-cli \(attempt 1\): 1\.000 → 1\.000 \(unchanged\)$/m);
    assert.match(regrade.stderr, /verify phase network: allowlist \(127\.0\.0\.1:\d+\)/);
    const folder = regradeFolder(run.run_dir);
    const lines = readFileSync(path.join(folder, 'logs', 'verifier', 'net.txt'), 'utf8');
    assert.match(lines, /^v-allowed 200$/m);
    assert.match(lines, /^v-denied 403$/m);
    assert.match(lines, /^v-env keys=none gateway=none$/m);
    assert.deepEqual(networkLog(path.join(folder, 'network.jsonl')).map((e) => [e.phase, e.host, e.port, e.allowed]), [
      ['verifier', '127.0.0.1', hosts.port, true],
      ['verifier', 'solutions.test', 443, false],
    ]);
    assert.deepEqual(networkLog(path.join(run.run_dir, 'network.jsonl')).map((e) => e.phase), ['agent']);
  });

  it('a task whose verifier now asks for the public network: without --allow-public-network one line and that trial is not regraded (nothing left in its run folder); with it, regraded', async (t) => {
    if (local instanceof Error) return t.skip(local.message);
    const { jobDir, taskDir, run } = await recordedJob('public', local, 'local');
    writeTaskFiles(taskDir, '[verifier]\nnetwork_mode = "public"\n', [KEYS_LINE]);
    const refused = await runCli(cli, ['run', '--regrade', jobDir], { cwd: repoRoot });
    assert.equal(refused.code, 1, refused.stderr);
    const line = `task-public (attempt 1): cannot be regraded: ${path.join(taskDir, 'task.toml')}: [verifier] network_mode "public" needs the public network, which belay.runner.allowPublicNetwork (--allow-public-network) does not allow; this trial is not regraded`;
    assert.deepEqual(refused.stdout.trim().split('\n'), [line, '0 changed (0 up, 0 down), mean - → -; 1 not regraded']);
    assert.equal(existsSync(path.join(run.run_dir, 'regrade')), false);
    const allowed = await runCli(cli, ['run', '--regrade', jobDir, '--allow-public-network'], { cwd: repoRoot });
    assert.equal(allowed.code, 0, allowed.stderr);
    assert.match(allowed.stdout, /^task-public \(attempt 1\): 1\.000 → 1\.000 \(unchanged\)$/m);
    assert.match(allowed.stderr, /verify phase network: public — the local backend cannot enforce it/);
    assert.match(readFileSync(path.join(regradeFolder(run.run_dir), 'logs', 'verifier', 'net.txt'), 'utf8'), /^v-env keys=none gateway=none$/m);
  });
});

// A repository task: a git repository made here, an agent that changes nothing, tests that probe the network.
const gitEnv = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
const project = path.join(tmp.dir, 'project');
mkdirSync(project);
writeFileSync(path.join(project, 'README'), 'a project\n');
execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: project, env: gitEnv });
execFileSync('git', ['add', '-A'], { cwd: project, env: gitEnv });
execFileSync('git', ['commit', '-q', '-m', 'base'], { cwd: project, env: gitEnv });

/** tests/test_net.sh probes (in the checkout, where tests/ is laid) and prints what it got; it passes when `pass` is in net.txt. */
function repoTask(name: string, workspace: string, label: string, pass: string): string {
  const probe = (l: string, mode: string, target: string) => `python3 ./net-probe.py ${l} ${mode} '${target}'`;
  const script = [
    `echo "v-proxy-variables $(env | grep -ci proxy)" >> net.txt`,
    probe('v-allowed', 'proxy', `http://pkgs.test/repo-${label}`),
    probe('v-denied', 'proxy', `http://solutions.test/repo-solution-${label}`),
    probe(`v-direct-${label}`, 'direct', `127.0.0.1:${hosts.port}`),
    'cat net.txt',
    `grep -q '^${pass}$' net.txt`,
    '',
  ].join('\n');
  return tmp.writeTask(name, { 'workspace.yaml': `repo: ../project\n${workspace}`, 'prompt.md': 'Nothing to fix.\n', 'tests/test_net.sh': script, 'tests/net-probe.py': PROBE });
}

describe("a repository task's tests and the verifier's network", () => {
  for (const { name, backend } of available.filter((b) => b.name !== 'container')) {
    it(`on ${name}: workspace.yaml's verifier allowlist lets the tests reach its host through their own proxy and refuses another, logged as the verifier's; the agent phase has no network`, { skip: backend instanceof Error ? backend.message : false }, async () => {
      if (backend instanceof Error) return;
      const label = `allow-${name}`;
      const task = await loadTask(repoTask(`repo-${label}`, 'verifier_network_mode: allowlist\nverifier_allowed_hosts: [pkgs.test]\n', label, 'v-allowed 200'));
      const { result } = await runFixture(backend, path.join(tmp.dir, `runs-repo-${label}`), nodeAgent('commands.mjs'), {
        task,
        resolveNetwork,
        env: { AGENT_COMMANDS: JSON.stringify([agentProbe('a-name', 'proxy', `http://pkgs.test/repo-agent-${label}`)]) },
      });
      assert.equal(result.failure_cause, null, result.error ?? '');
      assert.equal(result.reward, 1);
      const output = result.verification?.output ?? '';
      assert.match(output, /^v-proxy-variables [1-9]\d*$/m);
      assert.match(output, /^v-denied 403$/m);
      assert.ok(seen.includes(`pkgs.test /repo-${label}`), seen.join('\n'));
      assert.equal(seen.some((line) => line.includes(`repo-agent-${label}`) || line.includes(`repo-solution-${label}`)), false);
      assert.deepEqual(networkLog(path.join(result.run_dir, 'network.jsonl')).map((e) => [e.phase, e.host, e.allowed]), [
        ['verifier', 'pkgs.test', true],
        ['verifier', 'solutions.test', false],
      ]);
      if (backend.isolated) assert.match(output, new RegExp(`^v-direct-${label} 000$`, 'm'));
    });

    it(`on ${name}: a repository task that says nothing of the network: its tests see no proxy and reach nothing`, { skip: backend instanceof Error ? backend.message : false }, async () => {
      if (backend instanceof Error) return;
      const label = `none-${name}`;
      const task = await loadTask(repoTask(`repo-${label}`, '', label, 'v-proxy-variables 0'));
      const { result } = await runFixture(backend, path.join(tmp.dir, `runs-repo-${label}`), nodeAgent('commands.mjs'), { task, resolveNetwork, env: { AGENT_COMMANDS: '[]' } });
      assert.equal(result.failure_cause, null, result.error ?? '');
      const output = result.verification?.output ?? '';
      assert.match(output, /^v-allowed 000$/m);
      if (backend.isolated) assert.match(output, new RegExp(`^v-direct-${label} 000$`, 'm'));
      assert.equal(seen.some((line) => line.includes(`/repo-${label}`)), false);
      assert.equal(existsSync(path.join(result.run_dir, 'network.jsonl')), false);
    });
  }

  it("a repository task's public verifier without the setting: one line naming workspace.yaml, the run does not start", async (t) => {
    if (local instanceof Error) return t.skip(local.message);
    const task = await loadTask(repoTask('repo-public', 'verifier_network_mode: public\n', 'public', 'v-allowed 200'));
    const { result } = await runFixture(local, path.join(tmp.dir, 'runs-repo-public'), nodeAgent('commands.mjs'), { task, env: { AGENT_COMMANDS: '[]' } });
    assert.equal(result.failure_cause, 'setup_error');
    assert.equal(result.error, `${path.join(task.dir, 'workspace.yaml')}: the verify phase's network_mode "public" needs the public network, which belay.runner.allowPublicNetwork (--allow-public-network) does not allow; the run did not start`);
  });

  it('a hostile allowlist in workspace.yaml (a URL, a path) is refused when the task loads, in one line naming the field', async () => {
    const dir = repoTask('repo-bad-hosts', 'verifier_network_mode: allowlist\nverifier_allowed_hosts: ["https://pkgs.test/simple"]\n', 'bad', 'x');
    await assert.rejects(loadTask(dir), (error: Error) => /workspace\.yaml.*verifier_allowed_hosts.*is not a host/.test(error.message) && !error.message.includes('\n'));
  });
});

describe("a repository task's regrade", () => {
  const where = available.find((b) => b.name === 'sandbox' && !(b.backend instanceof Error)) ?? available[0]!;

  it(`on ${where.name}: the recorded patch is graded again by the task's current tests, under its current verifier allowlist, everything written in the regrade's folder (its network.jsonl, its test output), the run's records untouched`, async (t) => {
    if (where.backend instanceof Error) return t.skip(where.backend.message);
    const backend = where.backend;
    const taskDir = tmp.writeTask('repo-regrade', { 'workspace.yaml': 'repo: ../project\n', 'prompt.md': 'Add fixed.txt.\n', 'tests/test_fixed.sh': 'test -f fixed.txt\n' });
    const task = await loadTask(taskDir);
    // The agent's change: a new file, which its patch carries.
    const { jobDir, run } = await oneTrialJob('repo-regrade', task, backend, where.name, { env: { AGENT_COMMANDS: JSON.stringify(['echo fixed > fixed.txt']) } });
    assert.equal(run.reward, 1, run.error ?? '');
    const recorded = readFileSync(path.join(run.run_dir, 'verifier', 'test-output.log'), 'utf8');
    // The task now also probes the network under a verifier allowlist, and needs it to pass.
    writeFileSync(path.join(taskDir, 'workspace.yaml'), 'repo: ../project\nverifier_network_mode: allowlist\nverifier_allowed_hosts: [pkgs.test]\n');
    const probe = (l: string, target: string) => `python3 ./net-probe.py ${l} proxy '${target}'`;
    tmp.writeTask('repo-regrade', {
      'tests/test_net.sh': [probe('v-allowed', 'http://pkgs.test/repo-regrade'), probe('v-denied', 'http://solutions.test/repo-regrade-solution'), 'cat net.txt', "grep -q '^v-allowed 200$' net.txt", ''].join('\n'),
      'tests/net-probe.py': PROBE,
    });
    const report = await regradeJob({ jobDir, backend, resolveNetwork });
    const trial = report.trials[0]!;
    assert.equal(trial.skipped, undefined, trial.skipped);
    assert.deepEqual(trial.after, { reward: 1, passed: true });
    const folder = regradeFolder(run.run_dir);
    const record = JSON.parse(readFileSync(path.join(folder, 'verification.json'), 'utf8')) as { verification: { test_results: { name: string; status: string }[]; output: string } };
    // Both of the task's current tests ran, on the patch: as its run graded it.
    assert.deepEqual(record.verification.test_results.map((r) => [r.name, r.status]), [['test_fixed.sh', 'passed'], ['test_net.sh', 'passed']]);
    assert.match(record.verification.output, /^v-denied 403$/m);
    assert.ok(seen.includes('pkgs.test /repo-regrade'), seen.join('\n'));
    assert.deepEqual(networkLog(path.join(folder, 'network.jsonl')).map((e) => [e.phase, e.host, e.allowed]), [['verifier', 'pkgs.test', true], ['verifier', 'solutions.test', false]]);
    assert.match(readFileSync(path.join(folder, 'verifier', 'test-output.log'), 'utf8'), /=== test_net\.sh ===/);
    // The run's own records as they were; no checkout or staged tests kept in the regrade's folder.
    assert.equal(existsSync(path.join(run.run_dir, 'network.jsonl')), false);
    assert.equal(readFileSync(path.join(run.run_dir, 'verifier', 'test-output.log'), 'utf8'), recorded);
    assert.equal(existsSync(path.join(folder, 'grade', 'app')), false);
    assert.equal(existsSync(path.join(folder, 'grade', 'tests')), false);
  });
});
