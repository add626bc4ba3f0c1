import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { PassThrough } from 'node:stream';
import { run as runCommandModule } from '../../../src/cli/run.ts';
import { BackendUnavailableError, type Backend } from '../../../src/runner/core/backends/backend.ts';
import { pickBackend } from '../../../src/runner/core/backends/choose.ts';
import {
  agentMounts,
  containerBackend,
  containerEnvironment,
  containerLimits,
  containerName,
  execEnvironment,
  LABELS,
  ownerGone,
  ownerMark,
  removeLeftovers,
  sanitizeTree,
} from '../../../src/runner/core/backends/container.ts';
import type { Engine } from '../../../src/runner/core/backends/engine.ts';
import { BASE_IMAGE } from '../../../src/runner/core/backends/image-base.ts';
import { runFiles } from '../../../src/runner/core/records/records.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';
import { engineWithBase, removeTestImages, uniqueName } from '../../support/runner/container-helpers.ts';
import { agentFile, nodeAgent, nodeDir, repoRoot, runFixture, taskDir, tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-container-');
/** `belay run ARGS` (the first argument, 'run', is the subcommand's name). */
const runCommand = (args: string[], io: Parameters<typeof runCommandModule>[1]) => runCommandModule(args.slice(1), io);
const found = await engineWithBase();
const skip = found instanceof Error ? found.message : false;
const backend: Backend | Error = found instanceof Error ? found : await containerBackend().catch((error: Error) => error);
after(async () => {
  if (!(found instanceof Error)) await removeTestImages(found);
  tmp.remove();
});

describe('container backend: the parts', () => {
  it('names containers after the run, in the characters engines accept', () => {
    assert.equal(containerName('20260101T000000Z-hello world-abc123'), 'belay-20260101T000000Z-hello_world-abc123');
    assert.match(containerName('x'.repeat(500)), /^belay-x+$/);
    assert.ok(containerName('x'.repeat(500)).length <= 200);
  });

  it('passes secrets through the client environment, never on its command line', () => {
    const { flags, env } = execEnvironment({ PATH: '/usr/bin', HOME: '/root' }, { OPENAI_API_KEY: 'sk-secret', PATH: '/app/bin', TERM: 'dumb', 'bad name': 'x', BELAY_WORKDIR: '/app' });
    assert.deepEqual(flags, ['--env', 'OPENAI_API_KEY', '--env', 'PATH=/app/bin', '--env', 'TERM=dumb', '--env', 'BELAY_WORKDIR']);
    assert.ok(!flags.some((flag) => flag.includes('sk-secret')));
    assert.deepEqual(env, { PATH: '/usr/bin', HOME: '/root', OPENAI_API_KEY: 'sk-secret', BELAY_WORKDIR: '/app' });
  });

  it("builds a program's environment from the image and Belay's variables only", () => {
    const root = containerEnvironment({ path: '/usr/bin:/bin', home: '/root' }, ['/opt/node/bin'], { AGENT_PORT: '8765' });
    assert.deepEqual(root, { SHLVL: '1', PATH: '/usr/bin:/bin:/opt/node/bin', HOME: '/root', LANG: 'C.UTF-8', TERM: 'dumb', AGENT_PORT: '8765' });
    // The image's own user: its home comes from the image, not a guess.
    assert.equal('HOME' in containerEnvironment({ path: '/bin', home: undefined }, [], {}), false);
    assert.equal(containerEnvironment({ path: '/bin', home: undefined }, [], { HOME: '/work' }).HOME, '/work');
  });

  it("shows the agent's folders read-only and masks the hidden paths under them", () => {
    const agent = tmp.writeTask('agent-folder', { 'agent.py': '', 'tasks/t1/tests/test.sh': '', 'secret.txt': '' });
    const { flags, skipped } = agentMounts(
      [agent, '/', '/usr/bin', '/usr/local', path.join(agent, 'tasks', 't1'), '/nonexistent-folder'],
      [path.join(agent, 'tasks', 't1'), path.join(agent, 'tasks'), path.join(agent, 'secret.txt'), '/elsewhere'],
      '/run/empty',
    );
    assert.deepEqual(flags, ['--volume', `${agent}:${agent}:ro`, '--volume', `/run/empty:${path.join(agent, 'tasks')}:ro`, '--volume', `/dev/null:${path.join(agent, 'secret.txt')}:ro`]);
    assert.deepEqual(skipped, ['/', '/usr/bin', '/usr/local'], "the image's own system folders are never shadowed");
    assert.deepEqual(agentMounts([agent], [agent], '/run/empty'), { flags: [], skipped: [] });
    // Shown where the agent names it, through a symlink; what is hidden is compared as real paths.
    const link = path.join(tmp.dir, 'agent-link');
    symlinkSync(agent, link);
    assert.deepEqual(agentMounts([link], [path.join(agent, 'tasks')], '/run/empty').flags, ['--volume', `${link}:${link}:ro`, '--volume', `/run/empty:${path.join(link, 'tasks')}:ro`]);
    const odd = tmp.writeTask('odd:name', { 'a.txt': '' });
    assert.throws(() => agentMounts([odd], [], '/run/empty'), /its path holds ':' or ','/);
  });

  it("bounds CPUs and memory by the task first, then the settings, and never beyond the host's CPUs", () => {
    assert.deepEqual(containerLimits({ cpus: 1, memoryMb: 512 }, { cpus: 4, memoryMb: 8192 }, 8), { cpus: 1, memoryMb: 512, pidsLimit: 1024 });
    assert.deepEqual(containerLimits({ cpus: undefined, memoryMb: undefined }, { cpus: 4, memoryMb: 8192, pidsLimit: 64 }, 8), { cpus: 4, memoryMb: 8192, pidsLimit: 64 });
    assert.equal(containerLimits({ cpus: 64, memoryMb: undefined }, {}, 2).cpus, 2);
  });

  it('judges a leftover by its owner: this process lives, a dead or reused pid does not, another host is not judged', () => {
    const mine = ownerMark();
    assert.equal(ownerGone(mine), false);
    const [host, pid] = mine.split('/');
    assert.equal(ownerGone(`${host}/${pid}/other-start`, host), true);
    assert.equal(ownerGone(`${host}/4194303/unknown`), true);
    assert.equal(ownerGone(`another-host/4194303/unknown`), false);
    assert.equal(ownerGone('garbage'), false);
  });

  it('makes a copy from the container safe: no set-user bits, no pipes', async () => {
    const dir = path.join(tmp.dir, 'copy');
    mkdirSync(path.join(dir, 'sub'), { recursive: true });
    writeFileSync(path.join(dir, 'sub', 'tool'), '#!/bin/sh\n');
    chmodSync(path.join(dir, 'sub', 'tool'), 0o4755);
    writeFileSync(path.join(dir, 'plain'), 'x');
    chmodSync(path.join(dir, 'plain'), 0o2600);
    await new Promise<void>((resolve, reject) => spawn('mkfifo', [path.join(dir, 'pipe')]).on('close', () => resolve()).on('error', reject));
    await sanitizeTree(dir);
    assert.equal(statSync(path.join(dir, 'sub', 'tool')).mode & 0o7777, 0o755);
    assert.equal(statSync(path.join(dir, 'plain')).mode & 0o7777, 0o644);
    assert.equal(existsSync(path.join(dir, 'pipe')), false);
  });
});

/** The containers the engine still has for a run. */
async function containersOf(engine: Engine, runId: string): Promise<string> {
  return (await engine.check(['ps', '--all', '--filter', `label=${LABELS.run}=${runId}`, '--format', '{{.Names}}'], { timeoutMs: 60_000 })).trim();
}

/** A task whose image is built from the base, with the given test script (in `under` when given). */
function baseTask(name: string, test: string, extra: Record<string, string> = {}, under = ''): string {
  return tmp.writeTask(path.join(under, name), {
    'task.toml': '[agent]\ntimeout_sec = 60\n[verifier]\ntimeout_sec = 30\n',
    'instruction.md': 'Do what the test asks.',
    'environment/Dockerfile': `FROM ${BASE_IMAGE}\nWORKDIR /app\nRUN echo from-the-image > /app/image.txt\n`,
    'tests/test.sh': test,
    ...extra,
  });
}

describe('container backend: runs', { skip }, () => {
  const engine = found as Engine;
  const container = () => backend as Backend;

  it('runs an SDK 1.x agent in the task image: passes, names the backend, keeps the build log and the final /app, leaves no container', async () => {
    const { result } = await runFixture(container(), path.join(tmp.dir, 'runs'), nodeAgent('multi-step.mjs'));
    assert.equal(result.passed, true, result.error ?? '');
    assert.equal(result.backend, 'container');
    assert.match(result.backend_label ?? '', /^container \((podman|docker) \d/);
    const files = runFiles(result.run_dir);
    assert.equal(readFileSync(path.join(files.workspace, 'hello.txt'), 'utf8'), 'Hello, world!\n');
    assert.equal(readFileSync(path.join(files.workspace, 'seed.txt'), 'utf8'), readFileSync(path.join(taskDir('hello'), 'environment', 'seed.txt'), 'utf8'));
    assert.match(readFileSync(files.environmentLog, 'utf8'), /belay-task-hello/);
    assert.equal(await containersOf(engine, result.run_id), '');
  });

  it('runs an SDK 2.0 agent, reached only through a socket on the host', async () => {
    const { result } = await runFixture(container(), path.join(tmp.dir, 'runs'), nodeAgent('sdk2-server.mjs'), { protocol: 'sdk2' });
    assert.equal(result.passed, true, result.error ?? '');
    assert.equal(result.agent_completed, true);
    assert.equal(await containersOf(engine, result.run_id), '');
  });

  it('runs the older layout from its Dockerfile', async () => {
    const { result } = await runFixture(container(), path.join(tmp.dir, 'runs'), nodeAgent('legacy.mjs'), { taskName: 'legacy-hello' });
    assert.equal(result.backend, 'container');
    assert.equal(result.failure_cause === 'setup_error', false, result.error ?? '');
  });

  it('a failing build is setup_error naming the Dockerfile line, with the build log in the run', async () => {
    const dir = baseTask(uniqueName('broken-build'), 'exit 0\n', { 'environment/Dockerfile': `FROM ${BASE_IMAGE}\n\nRUN echo building && exit 42\n` });
    const { result } = await runFixture(container(), path.join(tmp.dir, 'runs'), nodeAgent('multi-step.mjs'), { task: await loadTask(dir) });
    assert.equal(result.failure_cause, 'setup_error');
    assert.match(result.error ?? '', /^environment\/Dockerfile:3: RUN echo building && exit 42: the image build failed: .*exit status 42/);
    assert.match(readFileSync(runFiles(result.run_dir).environmentLog, 'utf8'), /^building$/m);
  });

  it('gives the agent none of the ways out: host files, task tests, network, capabilities, its own folder, secrets, a forged reward, processes that outlive it', async () => {
    const server = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    const hostFile = path.join(os.tmpdir(), `belay-host-secret-${process.pid}.txt`);
    writeFileSync(hostFile, 'host secret\n');
    process.env.BELAY_TEST_HOST_SECRET = 'editor-secret';
    const marker = uniqueName('belay-escapee');
    // The tests pass only if no process of the agent phase is alive and the agent's hello.txt is there.
    // The task lies in the agent's own folder, as tasks lie in a workspace: it must be hidden.
    const project = path.join(tmp.dir, uniqueName('project'));
    const dir = baseTask(uniqueName('hostile'), `#!/bin/sh\nfor f in /proc/[0-9]*/cmdline; do if tr '\\0' ' ' < "$f" 2>/dev/null | grep -q ${marker}; then echo "alive: ${marker}"; exit 1; fi; done\ntest "$(cat hello.txt)" = hi\n`, {
      'task.toml': '[agent]\ntimeout_sec = 60\n[verifier]\ntimeout_sec = 30\n[environment]\ncpus = 0.5\nmemory_mb = 300\n',
      'solution/solve.sh': 'echo hi > hello.txt\n',
    }, path.relative(tmp.dir, project));
    const commands = [
      `cat ${hostFile}; ls ${project}; ls ${dir}/tests ${dir}/solution`,
      `python3 -c "import socket; socket.create_connection(('127.0.0.1', ${port}), 3)" 2>&1 | tail -1; cat /proc/net/dev | grep -v -e Inter -e face -e lo: | wc -l`,
      'grep -E "^Cap(Eff|Prm|Bnd)" /proc/self/status; grep NoNewPrivs /proc/self/status',
      `touch ${project}/escape.txt; touch /tests/planted.sh; ls -A /tests | wc -l`,
      'env | grep -c "editor-secre[t]"; env | grep -c -i "^[a-z_]*api_key="',
      'mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt; echo forged',
      `setsid bash -c 'exec -a ${marker} sleep 1000' > /dev/null 2>&1 & nohup bash -c 'exec -a ${marker} sleep 1000' > /dev/null 2>&1 & echo started`,
      'cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max; cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max',
      'echo hi > hello.txt; cat image.txt',
    ];
    try {
      const { result } = await runFixture(container(), path.join(tmp.dir, 'runs'), nodeAgent('commands.mjs'), {
        task: await loadTask(dir),
        agentCwd: project,
        agentFolders: [nodeDir, path.dirname(agentFile('commands.mjs'))],
        env: { AGENT_COMMANDS: JSON.stringify(commands) },
      });
      const trajectory = JSON.parse(readFileSync(runFiles(result.run_dir).trajectory, 'utf8')) as { screen: string | null }[];
      const screen = (step: number) => trajectory[step]!.screen ?? '';
      assert.match(screen(1), new RegExp(`cat: ${hostFile.replace(/[.]/g, '\\.')}: No such file or directory`));
      assert.match(screen(1), /ls: cannot access '.*hostile[^/]*\/tests': No such file or directory/);
      assert.doesNotMatch(screen(1), /host secret|test\.sh|solve\.sh/);
      assert.match(screen(2), /Network is unreachable|Connection refused/);
      assert.match(screen(2), /^0$/m, 'no network interface but loopback');
      assert.match(screen(3), /CapEff:\s+0000000000000000/);
      assert.match(screen(3), /CapBnd:\s+0000000000000000/);
      assert.match(screen(3), /NoNewPrivs:\s+1/);
      assert.match(screen(4), /Read-only file system/);
      assert.match(screen(4), /^0$/m, '/tests is empty in the agent phase');
      assert.equal(existsSync(path.join(project, 'escape.txt')), false);
      assert.match(screen(5), /^0\n0/);
      assert.match(screen(8), /^314572800\n1024/);
      assert.match(screen(9), /from-the-image/);
      assert.equal(result.passed, true, `${result.failure_cause}: ${result.error}; ${result.verification?.output}`);
      assert.match(screen(6), /Permission denied/, "the verifier's folder is not the agent's to write");
      assert.equal(await containersOf(engine, result.run_id), '');
    } finally {
      server.close();
      delete process.env.BELAY_TEST_HOST_SECRET;
      await import('node:fs').then((fs) => fs.rmSync(hostFile, { force: true }));
    }
  });

  it("stops the agent phase when the container writes more than the task's storage", async () => {
    const bounded = await containerBackend({ storageCheckMs: 300 });
    const dir = baseTask(uniqueName('storage'), 'exit 0\n', { 'task.toml': '[agent]\ntimeout_sec = 60\n[verifier]\ntimeout_sec = 30\n[environment]\nstorage_mb = 5\n' });
    // Files under the storage limit each (no file may grow past it), more than it together.
    const commands = ['for i in 1 2 3 4 5; do head -c 4000000 /dev/zero > /tmp/big$i.bin; done && sleep 50'];
    const { result } = await runFixture(bounded, path.join(tmp.dir, 'runs'), nodeAgent('commands.mjs'), { task: await loadTask(dir), env: { AGENT_COMMANDS: JSON.stringify(commands) } });
    assert.match((result.notes ?? []).join('\n'), /the container wrote \d+ MB, more than its storage limit of 5 MB: the agent phase is stopped/);
    assert.equal(result.passed, false);
    assert.equal(result.failure_cause, 'disk_budget');
    assert.match(result.error ?? '', /the container wrote \d+ MB, more than its storage limit of 5 MB$/);
    const trajectory = JSON.parse(readFileSync(runFiles(result.run_dir).trajectory, 'utf8')) as { exit_code: number | null; timed_out: boolean }[];
    assert.deepEqual([trajectory[0]!.exit_code, trajectory[0]!.timed_out], [null, false], "the command was killed by the run's stop, not by its timeout");
  });

  it('a forged reward does not turn failing tests into a pass', async () => {
    const dir = baseTask(uniqueName('forge'), '#!/bin/sh\nexit 1\n');
    const commands = ['mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && echo \'{"reward": 1}\' > /logs/verifier/reward.json'];
    const { result } = await runFixture(container(), path.join(tmp.dir, 'runs'), nodeAgent('commands.mjs'), { task: await loadTask(dir), env: { AGENT_COMMANDS: JSON.stringify(commands) } });
    assert.equal(result.passed, false);
    assert.equal(result.reward, 0);
    assert.equal(result.failure_cause, 'tests_failed');
  });
});

describe('container backend: the default and the command line', { skip }, () => {
  it('is chosen first when none is named; without an engine the choice falls to the sandbox', async () => {
    assert.equal((await pickBackend()).name, 'container');
    const noEngine = { container: { env: { PATH: '/nonexistent' } } };
    await assert.rejects(pickBackend('container', noEngine), (e: unknown) => e instanceof BackendUnavailableError && /^container unavailable: no container engine answers here \(podman: not installed.*; docker: not installed.*\); install podman/.test(e.message));
    const fallback = await pickBackend(undefined, noEngine).catch((error: Error) => error);
    if (!(fallback instanceof Error)) assert.equal(fallback.name, 'sandbox');
    else assert.match(fallback.message, /^isolation unavailable: no isolating backend works here \(container unavailable: .*; sandbox unavailable: /);
  });

  it('`belay run --backend container` runs the demo tasks in their images and names the backend', async () => {
    const out = new PassThrough();
    const err = new PassThrough();
    let stdout = '';
    let stderr = '';
    out.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    err.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const demo = path.join(repoRoot, 'demo');
    const code = await runCommand(
      ['run', 'tasks', '--agent', `'${process.execPath}' agents/sdk1-agent.mjs`, '--protocol', 'sdk1', '--backend', 'container', '--out', path.join(tmp.dir, 'demo-runs')],
      { stdin: new PassThrough(), stdout: out, stderr: err, env: process.env, cwd: demo },
    );
    assert.equal(code, 0, stderr);
    assert.match(stderr, /backend container \((podman|docker) /);
    assert.match(stdout, /^count-words\s+passed\s+1\s+\d+\s+\S+\s+container\b/m);
    assert.match(stdout, /^hello-world\s+passed\s+1\s+\d+\s+\S+\s+container\b/m);
    await assert.rejects(runCommand(['run', 'tasks', '--agent', 'x', '--protocol', 'sdk1', '--engine', 'lxc'], { stdin: new PassThrough(), stdout: out, stderr: err, env: process.env, cwd: demo }), /--engine must be podman or docker \(got 'lxc'\)/);
  });
});

describe('container backend: lifetimes', { skip }, () => {
  const engine = found as Engine;

  it('removes the containers of a Belay that is gone, and keeps those of one that lives', async () => {
    const [host] = ownerMark().split('/');
    const dead = uniqueName('belay-leftover-dead');
    const alive = uniqueName('belay-leftover-alive');
    const create = (name: string, owner: string) => engine.check(['create', '--name', name, '--label', `${LABELS.owner}=${owner}`, ...engine.isolationFlags(), BASE_IMAGE, 'true'], { timeoutMs: 60_000 });
    try {
      await create(dead, `${host}/4194303/unknown`);
      await create(alive, ownerMark());
      const removed = await removeLeftovers(engine);
      // Other Belay processes on this machine sweep too: the dead one's container is gone, by
      // this sweep (it lists it) or by theirs (then it was gone before this one listed).
      assert.ok(!removed.includes(alive));
      assert.equal((await engine.run(['container', 'inspect', dead], { timeoutMs: 60_000 })).exitCode === 0, false, `removed here: ${removed.join(', ')}`);
      assert.equal((await engine.run(['container', 'inspect', alive], { timeoutMs: 60_000 })).exitCode, 0);
    } finally {
      for (const name of [dead, alive]) await engine.run(['rm', '--force', name], { timeoutMs: 60_000 });
    }
  });

  it('stops the container when Belay is killed, and the next start removes it', async () => {
    const script = path.join(tmp.dir, 'opener.ts');
    const dir = baseTask(uniqueName('killed'), 'exit 0\n');
    writeFileSync(
      script,
      `import { containerBackend } from ${JSON.stringify(path.join(repoRoot, 'src/runner/core/backends/container.ts'))};
import { loadTask } from ${JSON.stringify(path.join(repoRoot, 'src/runner/core/tasks/task.ts'))};
const base = process.argv[2];
const backend = await containerBackend();
const folders = { workspace: base + '/app', tests: base + '/tests', logs: base + '/logs', control: base + '/control', scratch: base + '/scratch', environmentLog: base + '/environment.log' };
await backend.open({ runId: process.argv[3], task: await loadTask(process.argv[4]), folders, agentFolders: [], hidden: [] });
process.stdout.write('open\\n');
setInterval(() => {}, 1000);
`,
    );
    const runId = uniqueName('killed-run');
    const child = spawn(process.execPath, [script, path.join(tmp.dir, runId), runId, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    await new Promise<void>((resolve, reject) => {
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => chunk.includes('open') && resolve());
      child.on('close', (code) => reject(new Error(`the opener ended (${code}): ${stderr}`)));
    });
    const name = await containersOf(engine, runId);
    assert.equal(name, containerName(runId));
    // Running, and not removed by the engine when it stops: only a leftover sweep removes it.
    assert.equal((await engine.check(['container', 'inspect', '--format', '{{.State.Running}} {{.HostConfig.AutoRemove}}', name], { timeoutMs: 60_000 })).trim(), 'true false');
    child.kill('SIGKILL');
    // From here on its owner is gone, and any Belay on this machine (other test files start
    // backends all the time) may sweep it: every check below holds whichever process does.
    // The keeper's pipe from the killed process closes: the container's main process ends.
    const wait = await engine.run(['wait', name], { timeoutMs: 60_000 });
    const after = await engine.run(['container', 'inspect', '--format', '{{.State.Running}}', name], { timeoutMs: 60_000 });
    if (after.exitCode === 0) {
      assert.equal(wait.exitCode, 0, wait.stderr.text(''));
      assert.equal(after.stdout.text('').trim(), 'false', 'the container still runs after its Belay was killed');
    }
    const removed = await removeLeftovers(engine);
    assert.equal(await containersOf(engine, runId), '', `a sweep should have removed ${name} (this one removed: ${removed.join(', ') || 'none'})`);
  });
});
