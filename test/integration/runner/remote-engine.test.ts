// A task run in a container on another machine's engine, over SSH: the test hosts are network
// namespaces with their own SSH server and rootless podman (test/support/hosts/). What crosses:
// the build context (the task's image is built there), the agent's folders and the workspace by
// copy, the commands through the engine's exec, the records back; nothing of this machine is
// mounted there and nothing is left there.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Backend } from '../../../src/runner/core/backends/backend.ts';
import { containerBackend, containerName, LABELS } from '../../../src/runner/core/backends/container.ts';
import { readJob } from '../../../src/runner/core/jobs/schema.ts';
import { hostGateway } from '../../../src/runner/core/run/runLlm.ts';
import { chatAnswer, startUpstream } from '../../support/runner/gateway-upstream.ts';
import { runFiles } from '../../../src/runner/core/records/records.ts';
import { ensureBuilt } from '../../support/build.ts';
import { runCli } from '../../support/cli-process.ts';
import { hostsUnavailable, makeHosts, type TestHost, type TestHosts } from '../../support/hosts/hosts.ts';
import { agentFile, nodeDir, repoRoot, runFixture, taskDir, tempDir } from '../../support/runner/helpers.ts';

const unavailable = hostsUnavailable();
const BASE = 'localhost/belay-base:bookworm';
const tmp = tempDir('belay-remote-');
after(() => tmp.remove());

/** The agent's own folder: the fixture agent and its library, nothing else of the repo. */
function agentFolder(name: string, more: readonly string[] = []): string {
  const dir = path.join(tmp.dir, `agent-${name}`);
  mkdirSync(dir, { recursive: true });
  for (const file of [name, 'sdk1-lib.mjs', ...more]) copyFileSync(agentFile(file), path.join(dir, file));
  return dir;
}

/**
 * What is on the host now: every container (any state) and the user's processes. Podman keeps
 * an exec session's monitor (conmon, `--exit-delay 300`) for up to five minutes after the exec
 * ended, to hand its exit code to a late client; one whose container is gone holds nothing of
 * the run and ends by itself, so it is named apart (and counted) rather than as a leftover.
 */
function leftOn(host: TestHost): { containers: string; processes: string[]; lingeringMonitors: number } {
  const listed = host.podman(['ps', '--all', '--format', '{{.Names}} {{.Status}}']);
  assert.equal(listed.code, 0, listed.stderr);
  const containers = listed.stdout.trim();
  const names = new Set(containers.split('\n').map((line) => line.split(' ')[0]));
  const monitorOfGone = (line: string) => {
    const match = /^\d+ \/usr\/bin\/conmon .* -n (\S+) .*--exec-attach/.exec(line);
    return match !== null && !names.has(match[1]!);
  };
  const all = host.userProcesses();
  return { containers, processes: all.filter((line) => !monitorOfGone(line)).map((line) => line.slice(0, 300)), lingeringMonitors: all.filter(monitorOfGone).length };
}

describe('remote engine over SSH', { skip: unavailable }, () => {
  let made: TestHosts;
  let backend: Backend;
  before(async () => {
    made = await makeHosts(1, { loadImage: BASE });
    backend = await containerBackend({ engineHosts: [made.hosts[0]!.engineHost], env: made.clientEnv });
  });
  after(async () => {
    await made?.remove();
  });

  it("names the host in the backend's label, and finds the engine's socket there by asking", () => {
    const host = made.hosts[0]!;
    assert.match(backend.label, new RegExp(`^container \\(podman \\S+ \\(runc, rootless\\) on ${host.user}@${host.address.replace(/\./g, '\\.')}: `));
  });

  it('runs an SDK 1.x agent in the task image built there: passes, workspace and records back, nothing left on the host', async () => {
    const host = made.hosts[0]!;
    const agent = agentFolder('multi-step.mjs');
    const { result } = await runFixture(backend, path.join(tmp.dir, 'runs'), `'${process.execPath}' '${path.join(agent, 'multi-step.mjs')}'`, { agentCwd: agent, agentFolders: [nodeDir] });
    assert.equal(result.passed, true, result.error ?? '');
    assert.match(result.backend_label ?? '', new RegExp(` on ${host.user}@`));
    const files = runFiles(result.run_dir);
    assert.equal(readFileSync(path.join(files.workspace, 'hello.txt'), 'utf8'), 'Hello, world!\n');
    assert.equal(readFileSync(path.join(files.workspace, 'seed.txt'), 'utf8'), readFileSync(path.join(taskDir('hello'), 'environment', 'seed.txt'), 'utf8'));
    // Built there, from the context sent over the connection: the image is the host's, not only this machine's.
    assert.match(readFileSync(files.environmentLog, 'utf8'), /belay-task-hello/);
    assert.match(host.podman(['images', '--format', '{{.Repository}}']).stdout, /belay-task-hello/);
    const left = leftOn(host);
    assert.deepEqual({ containers: left.containers, processes: left.processes }, { containers: '', processes: [] });
  });

  it('runs an SDK 2.0 agent there, reached only through the executor\'s channel over the SSH connection (no port opened on the host)', async () => {
    const host = made.hosts[0]!;
    const agent = path.join(tmp.dir, 'agent-sdk2');
    mkdirSync(agent, { recursive: true });
    copyFileSync(agentFile('sdk2-server.mjs'), path.join(agent, 'sdk2-server.mjs'));
    const { result } = await runFixture(backend, path.join(tmp.dir, 'runs'), `'${process.execPath}' '${path.join(agent, 'sdk2-server.mjs')}'`, { agentCwd: agent, agentFolders: [nodeDir], protocol: 'sdk2' });
    assert.equal(result.passed, true, result.error ?? '');
    assert.equal(result.agent_completed, true);
    assert.equal(result.host, `${host.user}@${host.address}`);
    // Nothing listens on the host's network but its SSH server.
    const listening = host.ssh('cat /proc/net/tcp /proc/net/tcp6');
    const ports = new Set(listening.stdout.split('\n').slice(1).map((line) => line.trim().split(/\s+/)).filter((fields) => fields[3] === '0A').map((fields) => parseInt(fields[1]!.split(':')[1]!, 16)));
    assert.deepEqual([...ports], [22]);
    const left = leftOn(host);
    assert.deepEqual({ containers: left.containers, processes: left.processes }, { containers: '', processes: [] });
  });

  it("an agent there calls its model through Belay's gateway: the call crosses the executor's channel, the real key stays here", async () => {
    const host = made.hosts[0]!;
    const realKey = 'sk-real-key-that-must-never-reach-the-remote-host-9a8b';
    const upstream = await startUpstream('/v1');
    const gateway = await hostGateway();
    try {
      upstream.reply({ json: chatAnswer("printf 'Hello, world!' > hello.txt", { prompt_tokens: 120, completion_tokens: 30 }) });
      const agent = agentFolder('llm-sdk1.mjs', ['llm-client.mjs']);
      const { result } = await runFixture(backend, path.join(tmp.dir, 'runs'), `'${process.execPath}' '${path.join(agent, 'llm-sdk1.mjs')}' chat`, {
        agentCwd: agent,
        agentFolders: [nodeDir],
        llm: { gateway: gateway.gateway, socketPath: gateway.socketPath, upstream: { baseUrl: upstream.url, key: realKey } },
      });
      assert.equal(result.passed, true, `${result.failure_cause}: ${result.error}`);
      assert.equal(result.host, `${host.user}@${host.address}`);
      assert.equal(upstream.received.length, 1);
      assert.equal(upstream.received[0]!.headers.authorization, `Bearer ${realKey}`);
      assert.deepEqual(result.llm, { requests: 1, input_tokens: 120, output_tokens: 30, cost_usd: result.llm!.cost_usd });
      // What the agent saw there: the gateway at a loopback port inside the container, and a run token, never the key.
      const seen = readFileSync(path.join(runFiles(result.run_dir).workspace, 'seen-env.txt'), 'utf8');
      assert.match(seen, /^OPENAI_BASE_URL=http:\/\/127\.0\.0\.1:\d+\/v1$/m);
      assert.ok(!seen.includes(realKey));
      // Nothing listens on the host's network but its SSH server, and nothing is left there.
      const listening = host.ssh('cat /proc/net/tcp /proc/net/tcp6');
      const ports = new Set(listening.stdout.split('\n').slice(1).map((line) => line.trim().split(/\s+/)).filter((fields) => fields[3] === '0A').map((fields) => parseInt(fields[1]!.split(':')[1]!, 16)));
      assert.deepEqual([...ports], [22]);
      const left = leftOn(host);
      assert.deepEqual({ containers: left.containers, processes: left.processes }, { containers: '', processes: [] });
    } finally {
      await gateway.close();
      await upstream.close();
    }
  });

  it('Belay killed mid-run: the container there stops with the SSH connection, and the next start removes it', async () => {
    const host = made.hosts[0]!;
    const script = path.join(tmp.dir, 'opener.ts');
    const dir = tmp.writeTask('killed-task', { 'task.toml': 'version = "1.0"\n', 'instruction.md': 'nothing\n', 'tests/test.sh': 'exit 0\n' });
    writeFileSync(
      script,
      `import { containerBackend } from ${JSON.stringify(path.join(repoRoot, 'src/runner/core/backends/container.ts'))};
import { loadTask } from ${JSON.stringify(path.join(repoRoot, 'src/runner/core/tasks/task.ts'))};
const base = process.argv[2];
const backend = await containerBackend({ engineHosts: [process.argv[5]], env: JSON.parse(process.argv[6]) });
const folders = { workspace: base + '/app', tests: base + '/tests', logs: base + '/logs', control: base + '/control', scratch: base + '/scratch', environmentLog: base + '/environment.log' };
const session = await backend.open({ runId: process.argv[3], task: await loadTask(process.argv[4]), folders, agentFolders: [], hidden: [] });
session.spawn({ argv: ['sleep', '600'], stdin: 'ignore' });
process.stdout.write('open\\n');
setInterval(() => {}, 1000);
`,
    );
    const runId = `killed-${process.pid}`;
    const name = containerName(runId);
    const child = spawn(process.execPath, [script, path.join(tmp.dir, runId), runId, dir, host.engineHost, JSON.stringify(made.clientEnv)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    await new Promise<void>((resolve, reject) => {
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => chunk.includes('open') && resolve());
      child.on('close', (code) => reject(new Error(`the opener ended (${code}): ${stderr}`)));
    });
    // Running there, labelled with its owner here; a command of the run runs in it.
    const inspect = () => host.podman(['container', 'inspect', '--format', `{{.State.Running}} {{index .Config.Labels "${LABELS.owner}"}}`, name]);
    assert.match(inspect().stdout.trim(), /^true \S+\/\d+\//);
    child.kill('SIGKILL');
    // The keeper's attach ends with the killed client's SSH connection: the container stops there.
    const waited = host.podman(['wait', name], undefined, 120_000);
    assert.equal(waited.code, 0, waited.stderr);
    assert.match(inspect().stdout.trim(), /^false /);
    // The next Belay to start with this host removes it.
    await containerBackend({ engineHosts: [host.engineHost], env: made.clientEnv });
    const left = leftOn(host);
    assert.deepEqual({ containers: left.containers, processes: left.processes }, { containers: '', processes: [] });
  });
});

describe('a job over two remote hosts', { skip: unavailable }, () => {
  let made: TestHosts;
  before(async () => {
    ensureBuilt();
    made = await makeHosts(2, { loadImage: BASE });
  });
  after(async () => {
    await made?.remove();
  });

  it('runs every trial once, spread over both hosts, records and rewards back here, nothing left on either host', async () => {
    const agent = agentFolder('multi-step.mjs');
    // The tests exit 1: a trial passes only through the verifier's reward file, so only if /logs came back from the host.
    const test = '#!/bin/sh\nmkdir -p "$LOGS_DIR/verifier"\nif [ "$(cat hello.txt)" = "Hello, world!" ]; then echo 1 > "$LOGS_DIR/verifier/reward.txt"; else echo 0 > "$LOGS_DIR/verifier/reward.txt"; fi\nexit 1\n';
    const dirs = ['one', 'two'].map((name) =>
      tmp.writeTask(path.join('job-tasks', name), { 'task.toml': 'version = "1.0"\n[verifier]\ntimeout_sec = 60.0\n[agent]\ntimeout_sec = 120.0\n', 'instruction.md': 'Write hello.txt\n', 'tests/test.sh': test }),
    );
    const out = path.join(tmp.dir, 'job-out');
    const hosts = made.hosts.flatMap((host) => ['--engine-host', host.engineHost]);
    const run = await runCli(path.join(repoRoot, 'dist', 'cli.js'), ['run', ...dirs, '--agent', `'${process.execPath}' '${path.join(agent, 'multi-step.mjs')}'`, '--protocol', 'sdk1', '--attempts', '2', '--concurrency', '2', '--out', out, ...hosts], {
      cwd: repoRoot,
      env: made.clientEnv,
    });
    assert.equal(run.code, 0, run.stderr.slice(-3000));
    const jobDir = path.join(out, readdirSync(out)[0]!);
    const job = await readJob(jobDir);
    assert.equal(job.status, 'finished');
    assert.equal(job.trials.length, 4);
    // Every trial once: one run folder each, all different, each passed with the verifier's reward.
    assert.equal(new Set(job.trials.map((trial) => trial.run_id)).size, 4);
    for (const trial of job.trials) {
      assert.equal(trial.status, 'finished');
      assert.equal(trial.passed, true, `${trial.trial_id}: ${trial.failure_cause}`);
      assert.equal(trial.reward, 1);
      const result = JSON.parse(readFileSync(path.join(jobDir, trial.run_id!, 'result.json'), 'utf8')) as { host?: string; reward: number };
      assert.equal(result.host, trial.host);
      assert.equal(readFileSync(path.join(runFiles(path.join(jobDir, trial.run_id!)).workspace, 'hello.txt'), 'utf8'), 'Hello, world!\n');
    }
    // Spread: both hosts ran trials, and the terminal named each trial's host.
    const labels = made.hosts.map((host) => `${host.user}@${host.address}`);
    assert.deepEqual([...new Set(job.trials.map((trial) => trial.host))].sort(), [...labels].sort());
    for (const label of labels) assert.match(run.stderr, new RegExp(`, on ${label.replace(/\./g, '\\.')}\\) `));
    for (const host of made.hosts) {
      const left = leftOn(host);
      assert.deepEqual({ containers: left.containers, processes: left.processes }, { containers: '', processes: [] }, host.name);
      // Only the image loaded on purpose is kept there: no task image (these tasks have no Dockerfile).
      assert.deepEqual(host.podman(['images', '--format', '{{.Repository}}:{{.Tag}}']).stdout.trim().split('\n'), [BASE]);
    }
  });

  it('a host that vanishes mid-trial: the trial ends host_lost, runs again on the other host, and the next start cleans the lost one', async () => {
    const [kept, lost] = made.hosts as [TestHost, TestHost];
    // A slow first step, so the trial is surely running on its host when the host goes.
    const agent = agentFolder('multi-step.mjs');
    writeFileSync(
      path.join(agent, 'slow.mjs'),
      `import { serve } from './sdk1-lib.mjs';\nawait serve((req) => req.step === 1 ? { command: "sleep 20; echo 'Hello, world!' > hello.txt", task_complete: false } : { command: null, task_complete: true });\n`,
    );
    const test = '#!/bin/sh\n[ "$(cat hello.txt)" = "Hello, world!" ]\n';
    const dir = tmp.writeTask(path.join('lost-tasks', 'slow'), { 'task.toml': 'version = "1.0"\n[verifier]\ntimeout_sec = 60.0\n[agent]\ntimeout_sec = 300.0\n', 'instruction.md': 'Write hello.txt\n', 'tests/test.sh': test });
    const out = path.join(tmp.dir, 'lost-out');
    let cut = false;
    // Cut the host once a run's container runs there (read through the host's own engine).
    const watch = setInterval(() => {
      if (cut) return;
      const running = lost.podman(['ps', '--filter', `label=${LABELS.run}`, '--format', '{{.Names}}'], undefined, 10_000);
      if (running.code === 0 && running.stdout.trim() !== '') {
        cut = true;
        lost.setReachable(false);
      }
    }, 500);
    let run;
    try {
      run = await runCli(
        path.join(repoRoot, 'dist', 'cli.js'),
        ['run', dir, '--agent', `'${process.execPath}' '${path.join(agent, 'slow.mjs')}'`, '--protocol', 'sdk1', '--attempts', '2', '--concurrency', '2', '--out', out, '--engine-host', kept.engineHost, '--engine-host', lost.engineHost],
        { cwd: repoRoot, env: made.clientEnv },
      );
    } finally {
      clearInterval(watch);
      lost.setReachable(true);
    }
    assert.equal(cut, true, 'no trial ran on the host to cut');
    assert.equal(run.code, 0, run.stderr.slice(-3000));
    const jobDir = path.join(out, readdirSync(out)[0]!);
    const job = await readJob(jobDir);
    assert.equal(job.status, 'finished');
    // Both trials passed, in the end on the host that stayed; the one cut short kept its run aside, with its named cause.
    const keptLabel = `${kept.user}@${kept.address}`;
    assert.deepEqual(job.trials.map((trial) => [trial.passed, trial.host]), [[true, keptLabel], [true, keptLabel]]);
    const rerun = job.trials.filter((trial) => trial.interrupted_runs.length > 0);
    assert.equal(rerun.length, 1);
    const aside = JSON.parse(readFileSync(path.join(jobDir, '.interrupted', rerun[0]!.interrupted_runs[0]!, 'result.json'), 'utf8')) as { failure_cause: string; error: string; host: string };
    assert.equal(aside.failure_cause, 'host_lost');
    assert.equal(aside.host, `${lost.user}@${lost.address}`);
    assert.match(aside.error, new RegExp(`the engine on ${lost.user}@${lost.address.replace(/\./g, '\\.')} stopped answering`));
    // Back on the network, the next start with that host removes what the lost trial left there.
    await containerBackend({ engineHosts: [lost.engineHost], env: made.clientEnv });
    for (const host of made.hosts) {
      const left = leftOn(host);
      assert.deepEqual({ containers: left.containers, processes: left.processes }, { containers: '', processes: [] }, host.name);
    }
  });
});
