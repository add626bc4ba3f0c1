// The pure parts of the isolation model: capped logs, the sandbox's layout per phase, the
// environment allowlist, --env, the verifier's files, the backend choice, task limits.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { BackendUnavailableError, programEnvironment } from '../../../src/runner/core/backends/backend.ts';
import { isBackendName, pickBackend } from '../../../src/runner/core/backends/choose.ts';
import { localBaseEnvironment, localBackend } from '../../../src/runner/core/backends/local.ts';
import { isolationArgs, layoutArgs, systemView, tooWide, type SandboxLayout } from '../../../src/runner/core/backends/sandbox.ts';
import { markedProcesses } from '../../../src/runner/core/backends/sweep.ts';
import { parseEnvOptions } from '../../../src/runner/core/agents/agents.ts';
import { CappedLog, diskUsage } from '../../../src/runner/core/records/logs.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';
import { metricsFromJson, removeVerifierLeftovers, ruleOfRewards } from '../../../src/runner/core/run/verify.ts';
import { tempDir } from '../../support/runner/helpers.ts';
import { runBounded } from '../../../src/shared/process.ts';

const tmp = tempDir('belay-isolation-');
after(() => tmp.remove());

describe('capped logs', () => {
  it('keeps everything under the limit, and past it the head, a marker with the count, and the tail', () => {
    const small = path.join(tmp.dir, 'small.log');
    const log = new CappedLog(small, 100);
    log.write('hello ');
    log.write(Buffer.from('world\n'));
    log.close();
    assert.equal(readFileSync(small, 'utf8'), 'hello world\n');

    const big = path.join(tmp.dir, 'big.log');
    const capped = new CappedLog(big, 20);
    for (const piece of ['0123456789', 'abcdefghij', 'ABCDEFGHIJ', 'KLMNOPQRST', 'xyz']) capped.write(piece);
    capped.close();
    capped.write('after close is ignored');
    assert.equal(capped.omitted, 23);
    assert.equal(readFileSync(big, 'utf8'), '0123456789\n[... 23 bytes omitted by Belay: each log keeps its first and last 10 bytes ...]\nNOPQRSTxyz');
  });

  it('keeps the tail of one huge write', () => {
    const file = path.join(tmp.dir, 'huge.log');
    const log = new CappedLog(file, 8);
    log.write('a'.repeat(1000) + 'TAIL');
    log.close();
    assert.match(readFileSync(file, 'utf8'), /^aaaa\n\[\.\.\. 996 bytes omitted by Belay: each log keeps its first and last 4 bytes \.\.\.\]\nTAIL$/);
  });

  it('measures a folder on disk, stopping early past a limit', async () => {
    const dir = path.join(tmp.dir, 'usage');
    mkdirSync(path.join(dir, 'sub'), { recursive: true });
    writeFileSync(path.join(dir, 'sub', 'a.bin'), Buffer.alloc(64 * 1024, 1));
    writeFileSync(path.join(dir, 'b.bin'), Buffer.alloc(64 * 1024, 1));
    const used = await diskUsage(dir);
    assert.ok(used >= 128 * 1024, `${used} bytes`);
    assert.ok((await diskUsage(dir, 1)) < used, 'stops counting past the limit');
  });
});

describe('the sandbox layout', () => {
  const layout: SandboxLayout = {
    phase: 'agent',
    folders: { workspace: '/runs/r/app', tests: '/runs/r/tests', logs: '/runs/r/logs', control: '/runs/r/control' },
    tmp: '/runs/r/scratch/s/tmp',
    home: '/runs/r/scratch/s/home',
    homeInside: '/root',
    agentFolders: [{ path: '/projects/agent', source: '/projects/agent' }],
    hidden: [],
    runtime: [],
    cwd: '/app',
  };
  const pairs = (args: string[], flag: string) => args.flatMap((a, i) => (a === flag ? [`${args[i + 1]} -> ${args[i + 2]}`] : []));

  it('shows the agent its folder read-only and /belay, never the tests or the logs', () => {
    const args = layoutArgs(layout);
    assert.deepEqual(pairs(args, '--ro-bind'), ['/projects/agent -> /projects/agent']);
    assert.deepEqual(pairs(args, '--bind'), ['/runs/r/app -> /app', '/runs/r/scratch/s/tmp -> /tmp', '/runs/r/scratch/s/home -> /root', '/runs/r/control -> /belay']);
    assert.ok(!args.includes('/tests') && !args.includes('/logs'));
    assert.deepEqual(args.slice(-4), ['--remount-ro', '/', '--chdir', '/app']);
  });

  it('shows the verify phase the tests read-only and the logs, and no agent folder', () => {
    const args = layoutArgs({ ...layout, phase: 'verify' });
    assert.deepEqual(pairs(args, '--ro-bind'), ['/runs/r/tests -> /tests']);
    assert.ok(pairs(args, '--bind').includes('/runs/r/logs -> /logs'));
    assert.ok(!args.includes('/projects/agent') && !args.includes('/belay'));
  });

  it('masks task folders and run records inside the agent folder with an empty read-only folder', () => {
    const project = path.join(tmp.dir, 'project');
    for (const dir of ['tasks/one', '.belay/runs', 'agent']) mkdirSync(path.join(project, dir), { recursive: true });
    // The agent names its folder through a symlink: it is shown there, masks included.
    const named = '/work/link-to-project';
    const args = layoutArgs({ ...layout, agentFolders: [{ path: named, source: project }], hidden: [path.join(project, 'tasks/one'), path.join(project, '.belay/runs'), '/elsewhere/task'] });
    assert.deepEqual(pairs(args, '--ro-bind'), [`${project} -> ${named}`]);
    const masked = args.flatMap((a, i) => (a === '--tmpfs' ? [args[i + 1]] : []));
    assert.deepEqual(masked, [`${named}/tasks/one`, `${named}/.belay/runs`]);
    for (const dir of masked) assert.equal(args[args.indexOf(dir!) + 1], '--remount-ro');
  });

  it('drops every capability, forbids user namespaces inside and keeps /proc/sys read-only', () => {
    const args = isolationArgs(true);
    assert.deepEqual(args.slice(args.indexOf('--cap-drop'), args.indexOf('--cap-drop') + 2), ['--cap-drop', 'ALL']);
    assert.ok(args.includes('--unshare-all') && args.includes('--die-with-parent') && args.includes('--disable-userns'));
    assert.deepEqual(pairs(args, '--ro-bind'), ['/proc/sys -> /proc/sys']);
    assert.ok(!isolationArgs(false).includes('--disable-userns'));
  });

  it('shows only system folders and an allowlist of /etc; PATH keeps the entries that exist inside', () => {
    const root = path.join(tmp.dir, 'root');
    for (const dir of ['usr/bin', 'etc/ssl/private', 'etc/python3.11', 'home/someone', 'opt/tool']) mkdirSync(path.join(root, dir), { recursive: true });
    for (const file of ['etc/passwd', 'etc/shadow', 'etc/sudoers', 'etc/ld.so.cache']) writeFileSync(path.join(root, file), '');
    const view = systemView('/root/.pyenv/shims:/usr/local/bin:/usr/bin:/opt/tool/bin:relative', root);
    const shown = pairs(view.args, '--ro-bind').map((p) => p.split(' -> ')[0]!.slice(root.length));
    assert.deepEqual(shown, ['/usr', '/etc/ld.so.cache', '/etc/passwd', '/etc/python3.11', '/etc/ssl']);
    assert.ok(view.args.includes(path.join(root, 'etc/ssl/private')), 'ssl/private is masked');
    assert.equal(view.path, '/usr/local/bin:/usr/bin');
  });

  it('refuses an agent folder that would show the whole home', () => {
    assert.equal(tooWide('/', '/home/me'), true);
    assert.equal(tooWide('/home/me', '/home/me'), true);
    assert.equal(tooWide('/home', '/home/me'), true);
    assert.equal(tooWide('/home/me/agent', '/home/me'), false);
  });
});

describe('the environment allowlist', () => {
  it("gives programs the base variables and Belay's own, never the rest of Belay's environment", () => {
    const base = localBaseEnvironment({ PATH: '/bin', HOME: '/h', OPENAI_API_KEY: 'sk-leak', TERM: 'xterm' }, 'linux');
    assert.deepEqual(base, { PATH: '/bin', HOME: '/h', LANG: 'C.UTF-8', TERM: 'xterm' });
    assert.deepEqual(programEnvironment(base, { AGENT_PORT: '1' }), { SHLVL: '1', PATH: '/bin', HOME: '/h', LANG: 'C.UTF-8', TERM: 'xterm', AGENT_PORT: '1' });
    const windows = localBaseEnvironment({ Path: 'C:\\bin', SystemRoot: 'C:\\Windows', USERPROFILE: 'C:\\u', SECRET: 'x' }, 'win32');
    assert.equal(windows.PATH, 'C:\\bin');
    assert.equal(windows.SystemRoot, 'C:\\Windows');
    assert.equal('SECRET' in windows, false);
  });

  it('local commands carry the session mark and nothing of Belay', async () => {
    const folders = { workspace: tmp.dir, tests: path.join(tmp.dir, 't'), logs: path.join(tmp.dir, 'l'), control: path.join(tmp.dir, 'c'), scratch: path.join(tmp.dir, 's'), environmentLog: path.join(tmp.dir, 'e') };
    process.env.BELAY_ISOLATION_TEST_SECRET = 'leak';
    try {
      const session = await localBackend().open({ runId: 'r', task: await loadTask(path.join(tempTask())), folders, agentFolders: [], hidden: [] });
      const printed = await runBounded({
        start: (output) => session.spawn({ argv: [process.execPath, '-e', 'process.stdout.write(JSON.stringify(process.env))'], env: { MINE: '1' }, ...output }),
        timeoutMs: 60_000,
        maxOutputChars: 1_000_000,
      });
      assert.equal(printed.exitCode, 0, printed.stderr.text(''));
      const env = JSON.parse(printed.stdout.text('')) as Record<string, string>;
      assert.equal(env.BELAY_ISOLATION_TEST_SECRET, undefined);
      assert.equal(env.MINE, '1');
      assert.match(env.BELAY_SESSION ?? '', /^[0-9a-f]{24}$/);
      assert.equal(session.phase, 'agent');
      await session.endAgentPhase();
      await session.startVerifyPhase();
      assert.equal(session.phase, 'verify');
      await session.close();
    } finally {
      delete process.env.BELAY_ISOLATION_TEST_SECRET;
    }
  });

  it('reads --env as KEY=VALUE or KEY from the shell, and names a bad one', () => {
    assert.deepEqual(parseEnvOptions(['A=1', 'B=x=y', 'C='], {}), { A: '1', B: 'x=y', C: '' });
    assert.deepEqual(parseEnvOptions(['TOKEN'], { TOKEN: 's3cret' }), { TOKEN: 's3cret' });
    assert.throws(() => parseEnvOptions(['MISSING'], {}), /MISSING is not set in this environment \(give it as MISSING=VALUE\)/);
    assert.throws(() => parseEnvOptions(['1BAD=x'], {}), /'1BAD=x' is not KEY=VALUE or KEY/);
  });

  it('finds processes by their mark in /proc', () => {
    assert.deepEqual(markedProcesses({ file: 'environ', text: `BELAY_SESSION=no-such-session-${process.pid}\0` }), []);
    assert.deepEqual(markedProcesses({ file: 'environ', text: 'x' }, '/nonexistent-proc'), []);
  });
});

describe("the verifier's files", () => {
  it('empties the logs folder before the verify phase and says what was there', async () => {
    const logs = path.join(tmp.dir, 'logs');
    mkdirSync(path.join(logs, 'verifier'), { recursive: true });
    writeFileSync(path.join(logs, 'verifier', 'reward.txt'), '1');
    writeFileSync(path.join(logs, 'stray'), '');
    assert.deepEqual(await removeVerifierLeftovers(logs), ['logs/stray', 'logs/verifier/reward.txt']);
    assert.deepEqual(await removeVerifierLeftovers(logs), []);
  });

  it('reads reward.json: the reward metric, a single metric, or no single reward', () => {
    const reward = (text: string) => {
      const metrics = metricsFromJson(text);
      return typeof metrics === 'string' ? metrics : ruleOfRewards(metrics).reward;
    };
    assert.equal(reward('{"reward": 0.5, "other": 1}'), 0.5);
    assert.equal(reward('{"accuracy": 0.25}'), 0.25);
    assert.equal(reward('0.75'), 0.75);
    assert.equal(reward('{"a": 1, "b": 0}'), null);
    assert.match(String(reward('{}')), /no numeric metric/);
    assert.match(String(reward('nope')), /not JSON/);
  });
});

describe('the backend choice', () => {
  it('knows the backend names and gives local only when asked', async () => {
    assert.equal(isBackendName('sandbox'), true);
    assert.equal(isBackendName('docker'), false);
    assert.equal((await pickBackend('local')).isolated, false);
    const automatic = await pickBackend().catch((error: unknown) => error);
    if (automatic instanceof BackendUnavailableError) assert.match(automatic.message, /^isolation unavailable: no isolating backend works here/);
    else assert.equal((automatic as { isolated: boolean }).isolated, true);
  });
});

describe("the task's environment", () => {
  it("reads cpus, memory and the Dockerfile from task.toml's [environment]", async () => {
    const dir = tmp.writeTask('env-task', {
      'task.toml': '[environment]\ncpus = 2\nmemory = "2G"\nbuild_timeout_sec = 300\nallow_internet = true\n',
      'instruction.md': 'x',
      'tests/test.sh': '',
      'environment/Dockerfile': 'FROM localhost/belay-base:bookworm\n',
    });
    const task = await loadTask(dir);
    assert.deepEqual(task.environment, {
      dockerfile: path.join(dir, 'environment', 'Dockerfile'),
      composeFile: undefined,
      cpus: 2,
      memoryMb: 2048,
      storageMb: undefined,
      buildTimeoutSec: 300,
      allowInternet: true,
    });
    const legacy = await loadTask(tmp.writeTask('legacy-env', { 'task.yaml': 'instruction: x\n', 'run-tests.sh': '', 'Dockerfile': 'FROM x\n', 'docker-compose.yaml': 'services: {}\n' }));
    assert.equal(legacy.environment.dockerfile, path.join(legacy.dir, 'Dockerfile'));
    assert.equal(legacy.environment.composeFile, path.join(legacy.dir, 'docker-compose.yaml'));
    assert.equal(legacy.environment.allowInternet, false);
  });
});

let tasks = 0;
function tempTask(): string {
  return tmp.writeTask(`task-${++tasks}`, { 'task.toml': '', 'instruction.md': 'x', 'tests/test.sh': '' });
}
