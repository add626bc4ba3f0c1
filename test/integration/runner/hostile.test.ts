// The hostile-agent suite: agents that try every way out measured on the old sandbox, run
// against every backend there is. Each attempt must fail and the run must still end with the
// right cause. Attempts that only an isolating backend can stop (reading the host's files,
// capabilities, the network) are tried on backends with `isolated: true`; the rest (the
// environment, forged results, disk, timeouts, SDK 2.0 abuse, survivors) on every backend.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Backend } from '../../../src/runner/core/backends/backend.ts';
import { localBackend } from '../../../src/runner/core/backends/local.ts';
import { runFiles, type RunResult } from '../../../src/runner/core/records/records.ts';
import { loadTask, type Task } from '../../../src/runner/core/tasks/task.ts';
import { runBounded } from '../../../src/shared/process.ts';
import { containerOrReason } from '../../support/runner/container-helpers.ts';
import { fixtures, nodeAgent, processesWith, repoRoot, runFixture, sandboxOrReason, tempDir } from '../../support/runner/helpers.ts';

/** Every backend the suite runs against; a backend that cannot run here is skipped with its reason. */
export const HOSTILE_BACKENDS: { name: string; get: () => Promise<Backend | Error> }[] = [
  { name: 'local', get: async () => localBackend() },
  { name: 'sandbox', get: sandboxOrReason },
  { name: 'container', get: containerOrReason },
];

// Resolved before any test is registered: node:test runs root hooks early after a top-level await.
const available = await Promise.all(HOSTILE_BACKENDS.map(async (b) => ({ ...b, backend: await b.get() })));
const tmp = tempDir('belay-hostile-');
after(() => tmp.remove());

const hostileTaskDir = path.join(fixtures, 'hostile', 'task');
const hostileAgent = (prefix = '') => `${prefix}${nodeAgent('../hostile/hostile.mjs')}`;
const token = `belay-hostile-${process.pid}-${randomBytes(3).toString('hex')}`;
// A secret in Belay's own environment: no agent may see it.
const SECRET_VARIABLE = 'BELAY_HOSTILE_SECRET';
process.env[SECRET_VARIABLE] = `secret-${token}`;

/** A regular file in the user's real home, if there is one: the agent must not read it. */
function homeFile(): string | undefined {
  try {
    const name = readdirSync(os.homedir()).find((entry) => {
      const stat = lstatSync(path.join(os.homedir(), entry));
      return stat.isFile() && stat.size > 0;
    });
    return name === undefined ? undefined : path.join(os.homedir(), name);
  } catch {
    return undefined;
  }
}

interface Attempt {
  name: string;
  /** A shell command that prints ESCAPED when it got out. */
  command: string;
}

/**
 * The SHA-256 of a host file, or undefined when this process cannot read it. Reading a path
 * is an escape only when what was read is the host's: a container has its own /etc/shadow and
 * /root, which it may read.
 */
function hostHash(file: string | undefined): string | undefined {
  if (file === undefined) return undefined;
  try {
    return createHash('sha256').update(readFileSync(file)).digest('hex');
  } catch {
    return undefined;
  }
}

/** A command that prints ESCAPED when it reads the host's own `file` (same content). */
function readsHostFile(file: string): string | undefined {
  const hash = hostHash(file);
  return hash === undefined ? undefined : `[ "$(sha256sum '${file}' 2>/dev/null | cut -c1-64)" = '${hash}' ] && echo ESCAPED`;
}

/** The ways out only an isolating backend can close. */
function isolationAttempts(ctx: { runsDir: string; otherProject: string; port: number; writeProbe: string; hostTmp: string; spawnHelper: number }): Attempt[] {
  const attempts: Attempt[] = [];
  const file = homeFile();
  const home = file === undefined ? undefined : readsHostFile(file);
  if (home) attempts.push({ name: 'read a file in the home folder', command: home });
  const shadow = readsHostFile('/etc/shadow');
  if (shadow) attempts.push({ name: 'read /etc/shadow', command: shadow });
  attempts.push(
    { name: "read the task's tests", command: `grep -q TESTS-SECRET '${hostileTaskDir}/tests/test.sh' 2>/dev/null && echo ESCAPED` },
    { name: "read the task's solution", command: `grep -q SOLUTION-SECRET '${hostileTaskDir}/solution/solve.sh' 2>/dev/null && echo ESCAPED` },
    { name: 'read the run records', command: `cat '${ctx.runsDir}'/earlier/result.json >/dev/null 2>&1 && echo ESCAPED` },
    { name: 'read another project', command: `cat '${ctx.otherProject}/secret.txt' >/dev/null 2>&1 && echo ESCAPED` },
    {
      name: 'list the projects beside its own',
      command: `for e in '${path.dirname(repoRoot)}'/* '${path.dirname(repoRoot)}'/.[!.]*; do [ -e "$e" ] && [ "$e" != '${repoRoot}' ] && echo "ESCAPED $e"; done; true`,
    },
    { name: 'keep a capability', command: `grep -q '^CapEff:[[:space:]]*0*$' /proc/self/status || echo ESCAPED` },
    { name: 'remount a system folder writable', command: `mount -o remount,rw,bind /usr /usr 2>/dev/null && echo ESCAPED` },
    { name: 'write /proc/sys', command: `v=$(cat /proc/sys/kernel/printk_ratelimit) && echo "$v" > /proc/sys/kernel/printk_ratelimit 2>/dev/null && echo ESCAPED` },
    { name: 'create a user namespace', command: `unshare -Ur true 2>/dev/null && echo ESCAPED` },
    { name: 'reach the network', command: `(echo hello > /dev/tcp/127.0.0.1/${ctx.port}) 2>/dev/null && echo ESCAPED` },
    { name: "signal Belay's own process", command: `kill -0 ${process.pid} 2>/dev/null && echo ESCAPED` },
    { name: "read Belay's environment through /proc", command: `grep -q PATH= /proc/${process.pid}/environ 2>/dev/null && echo ESCAPED` },
    // The helper that forks every program of the run (src/shared/spawn-host.ts) lives outside it.
    // ('[t]': the pattern does not match the command line of the grep that looks for it.)
    { name: 'signal the spawn helper', command: `grep -q 'belay-spawn-hos[t]' /proc/${ctx.spawnHelper}/cmdline 2>/dev/null && kill -0 ${ctx.spawnHelper} 2>/dev/null && echo ESCAPED` },
    { name: 'find the spawn helper', command: `grep -l 'belay-spawn-hos[t]' /proc/[0-9]*/cmdline 2>/dev/null | grep -q . && echo ESCAPED` },
    { name: 'write its own program folder', command: `touch '${ctx.writeProbe}' 2>/dev/null && echo ESCAPED` },
    { name: "write the host's /tmp", command: `echo x > '${ctx.hostTmp}' 2>/dev/null; true` },
  );
  return attempts;
}

/** The pid of this process's spawn helper, which forks every program (started here if none runs yet). */
async function spawnHelper(): Promise<number> {
  const started = await runBounded({ argv: ['/bin/sh', '-c', 'echo $PPID'], cwd: os.tmpdir(), timeoutMs: 10_000, maxOutputChars: 100 });
  const pid = Number(started.stdout.text('').trim());
  assert.match(readFileSync(`/proc/${pid}/cmdline`, 'utf8'), /belay-spawn-host/, 'programs are forked by the spawn helper');
  return pid;
}

/** Ways out every backend closes. */
const everyBackendAttempts: Attempt[] = [
  { name: "see Belay's environment", command: `env | grep -q '^${SECRET_VARIABLE}=' && echo ESCAPED` },
  { name: 'see the tests before the verify phase', command: `cat /tests/test.sh "$BELAY_WORKDIR/../tests/test.sh" 2>/dev/null | grep -q TESTS-SECRET && echo ESCAPED` },
];

function screens(result: RunResult): (string | null)[] {
  const trajectory = JSON.parse(readFileSync(runFiles(result.run_dir).trajectory, 'utf8')) as { screen: string | null }[];
  return trajectory.map((t) => t.screen);
}

function finalReport(result: RunResult): { read: { file: string; sha256: string }[]; variable: string | null; forged: string[] } {
  const trajectory = JSON.parse(readFileSync(runFiles(result.run_dir).trajectory, 'utf8')) as { response: { text?: string } }[];
  return JSON.parse(trajectory.at(-1)!.response.text ?? '{}') as { read: { file: string; sha256: string }[]; variable: string | null; forged: string[] };
}

/** A copy of the hostile task with another test script. */
async function taskWithTests(name: string, testScript: string, timeoutSec: number): Promise<Task> {
  const dir = path.join(tmp.dir, 'tasks', name);
  mkdirSync(path.join(dir, 'tests'), { recursive: true });
  writeFileSync(path.join(dir, 'task.toml'), `[verifier]\ntimeout_sec = ${timeoutSec}\n`);
  writeFileSync(path.join(dir, 'instruction.md'), 'Do nothing.');
  writeFileSync(path.join(dir, 'tests', 'test.sh'), testScript);
  return loadTask(dir);
}

for (const { name, backend } of available) {
  describe(`hostile agents (${name} backend)`, { skip: backend instanceof Error ? backend.message : false }, () => {
    const be = backend as Backend;
    const runs = path.join(tmp.dir, name, 'runs');
    const server = net.createServer((socket) => {
      connections.push(socket.remoteAddress ?? '?');
      socket.destroy();
    });
    const connections: string[] = [];
    let port = 0;
    before(async () => {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as net.AddressInfo).port;
      mkdirSync(path.join(runs, 'earlier'), { recursive: true });
      writeFileSync(path.join(runs, 'earlier', 'result.json'), '{"secret": "an earlier run"}\n');
    });
    after(() => server.close());

    it('gets nothing out: files, privileges, network, environment, tests, records', async () => {
      const otherProject = path.join(tmp.dir, 'other-project');
      mkdirSync(otherProject, { recursive: true });
      writeFileSync(path.join(otherProject, 'secret.txt'), 'another project\n');
      const writeProbe = path.join(repoRoot, 'test', `.hostile-write-probe-${token}`);
      const hostTmp = path.join(os.tmpdir(), `belay-hostile-host-tmp-${token}`);
      const attempts = [...everyBackendAttempts, ...(be.isolated ? isolationAttempts({ runsDir: runs, otherProject, port, writeProbe, hostTmp, spawnHelper: await spawnHelper() }) : [])];
      const probeFiles = be.isolated ? [homeFile(), '/etc/shadow', path.join(hostileTaskDir, 'tests', 'test.sh'), path.join(hostileTaskDir, 'solution', 'solve.sh'), path.join(runs, 'earlier', 'result.json')] : [];
      try {
        const { result } = await runFixture(be, runs, hostileAgent(), {
          task: await loadTask(hostileTaskDir),
          env: { AGENT_COMMANDS: JSON.stringify(attempts.map((a) => a.command)), PROBE_FILES: JSON.stringify(probeFiles.filter(Boolean)), PROBE_VARIABLE: SECRET_VARIABLE },
        });
        assert.equal(result.agent_completed, true, result.error ?? '');
        const seen = screens(result);
        const escaped = attempts.filter((_, i) => (seen[i + 1] ?? '').includes('ESCAPED')).map((a) => `${a.name}: ${seen[attempts.indexOf(a) + 1]}`);
        assert.deepEqual(escaped, []);
        const report = finalReport(result);
        const hostFilesRead = report.read.filter((read) => read.sha256 === hostHash(read.file)).map((read) => read.file);
        assert.deepEqual(hostFilesRead, [], 'the agent process itself read host files');
        assert.equal(report.variable, null, "the agent saw Belay's environment");
        assert.deepEqual(connections, []);
        assert.equal(existsSync(writeProbe), false, 'the agent wrote into its program folder');
        assert.equal(existsSync(hostTmp), false, "the agent wrote into the host's /tmp");
        // The honest verdict stands.
        assert.equal(result.failure_cause, 'tests_failed');
        assert.equal(result.passed, false);
      } finally {
        rmSync(writeProbe, { force: true });
        rmSync(hostTmp, { force: true });
      }
    });

    it('cannot forge its result: reward files count only when the verify phase wrote them', async () => {
      const forger = `setsid sh -c 'while :; do d="$BELAY_WORKDIR/../logs/verifier"; mkdir -p "$d" 2>/dev/null && echo 1 > "$d/reward.txt" && echo "{}" > "$d/ctrf.json"; sleep 0.05; done; : ${token}-forger' >/dev/null 2>&1 < /dev/null &`;
      const { result } = await runFixture(be, runs, hostileAgent(`setsid sh -c 'sleep 120; : ${token}-agent-child' >/dev/null 2>&1 < /dev/null & exec `), {
        task: await loadTask(hostileTaskDir),
        env: { AGENT_COMMANDS: JSON.stringify([forger, 'sleep 0.3']) },
      });
      assert.equal(result.passed, false);
      assert.equal(result.failure_cause, 'tests_failed');
      assert.equal(result.verification?.reward, 0);
      assert.equal(result.verification?.exit_code, 1);
      assert.deepEqual(result.verification?.test_results, []);
      const report = finalReport(result);
      if (be.isolated) assert.deepEqual(report.forged, [], 'the agent could write a verifier folder');
      else {
        // Unisolated, the agent can write the run's logs folder; what it left is removed and noted.
        assert.ok(report.forged.length > 0);
        assert.ok(result.notes?.some((n) => /^removed logs\/verifier\/reward\.txt, left by the agent phase/.test(n)), JSON.stringify(result.notes));
      }
      assert.deepEqual(processesWith(`${token}-forger`), []);
      assert.deepEqual(processesWith(`${token}-agent-child`), []);
    });

    it('holds the command and test timeouts whatever setsid children do with the pipes', async () => {
      const holder = `setsid sh -c 'sleep 60; : ${token}-step' & sleep 60`;
      const { result } = await runFixture(be, runs, hostileAgent(), {
        task: await taskWithTests('setsid-tests', `#!/bin/sh\nsetsid sh -c 'sleep 60; : ${token}-test' &\nsleep 60\n`, 2),
        env: { AGENT_COMMANDS: JSON.stringify([holder]) },
        limits: { commandTimeoutMs: 2000 },
      });
      const trajectory = JSON.parse(readFileSync(runFiles(result.run_dir).trajectory, 'utf8')) as { timed_out: boolean; screen: string | null }[];
      assert.equal(trajectory[0]!.timed_out, true);
      assert.match(trajectory[1]!.screen ?? '', /\[Command timed out after 2s\]/);
      assert.equal(result.failure_cause, 'test_timeout');
      assert.equal(result.verification?.timed_out, true);
      assert.deepEqual(processesWith(`${token}-step`), []);
      assert.deepEqual(processesWith(`${token}-test`), []);
    });

    it('cannot keep a timed-out command running: everything it started stops at the timeout, while the agent goes on', { skip: be.isolated ? false : 'local: a timed-out command\'s setsid children are killed when the agent phase ends' }, async () => {
      // A double-forked setsid writer (appends to `grow` every 100 ms), a setsid holder of the
      // output, and a command that would run for a minute under a 10 s timeout.
      const writer = `(setsid sh -c 'while :; do echo x >> grow; sleep 0.1; done; : ${token}-grow' </dev/null >/dev/null 2>&1 &)`;
      const holder = `setsid sh -c 'sleep 60; : ${token}-holder' &`;
      // The next steps measure the file over 0.6 s each: it must stop growing and stay so; then no process of the command is left.
      const measure = 'a=$(wc -c < grow); sleep 0.6; b=$(wc -c < grow); [ "$a" = "$b" ] && echo "STABLE $b" || echo "GROWING $a $b"';
      const left = `t='${token}'; grep -l -e "$t-gro[w]" -e "$t-holde[r]" /proc/[0-9]*/cmdline 2>/dev/null | sed "s/^/LEFT /"; true`;
      const checks = 6;
      const { result } = await runFixture(be, runs, hostileAgent(), {
        task: await loadTask(hostileTaskDir),
        env: { AGENT_COMMANDS: JSON.stringify([`${writer}; ${holder} sleep 60`, ...Array<string>(checks).fill(measure), left]) },
        // Long enough that a measuring step (0.6 s, plus an engine exec each in a container) never
        // reaches it on a loaded machine; the first command runs for a minute and always does.
        limits: { commandTimeoutMs: 10_000 },
      });
      assert.equal(result.agent_completed, true, result.error ?? '');
      const trajectory = JSON.parse(readFileSync(runFiles(result.run_dir).trajectory, 'utf8')) as { timed_out: boolean; screen: string | null }[];
      assert.deepEqual(trajectory.map((t) => t.timed_out), [true, ...Array<boolean>(checks + 1).fill(false), false]);
      // trajectory[i].screen is what step i (from 0) showed; the first measures may still see the kill under way.
      const measures = trajectory.slice(2, 2 + checks).map((t) => (t.screen ?? '').trim());
      const lastThree = measures.slice(-3);
      assert.ok(lastThree.every((m) => /^STABLE \d+$/.test(m) && m === lastThree[0]), `the file kept growing after the timeout: ${JSON.stringify(measures)}`);
      assert.equal((trajectory[2 + checks]!.screen ?? '').trim(), '', 'processes of the timed-out command were left');
      assert.deepEqual(processesWith(`${token}-grow`), []);
      assert.deepEqual(processesWith(`${token}-holder`), []);
    });

    it('stays within its disk budget and its log caps', async () => {
      const logLimit = 256 * 1024;
      const { result } = await runFixture(be, runs, hostileAgent(), {
        task: await loadTask(hostileTaskDir),
        env: { AGENT_COMMANDS: JSON.stringify(["head -c 50000000 /dev/zero | tr '\\0' y", 'head -c 60000000 /dev/zero > big.bin; sleep 60']) },
        limits: { maxLogBytes: logLimit, diskBudgetBytes: 20 * 1024 * 1024 },
      });
      assert.equal(result.failure_cause, 'disk_budget', result.error ?? '');
      assert.match(result.error ?? '', /more than its disk budget of 20 MB/);
      for (const log of readdirSync(path.join(result.run_dir, 'steps'))) {
        const size = lstatSync(path.join(result.run_dir, 'steps', log)).size;
        assert.ok(size <= logLimit + 200, `${log} holds ${size} bytes`);
      }
    });

    it('cannot hang the harness with a trickling SDK 2.0 /status: the agent timeout holds', async () => {
      const { result } = await runFixture(be, runs, nodeAgent('sdk2-server.mjs'), {
        task: await loadTask(hostileTaskDir),
        protocol: 'sdk2',
        env: { SDK2_MODE: 'trickle' },
        limits: { agentTimeoutMs: 4000, pollIntervalMs: 100 },
      });
      assert.equal(result.failure_cause, 'agent_timeout', result.error ?? '');
      assert.match(result.error ?? '', /did not finish within its time limit of 4 s/);
    });

    it('names a huge SDK 2.0 history as the agent\'s fault, not a setup error', async () => {
      const { result } = await runFixture(be, runs, nodeAgent('sdk2-server.mjs'), {
        task: await loadTask(hostileTaskDir),
        protocol: 'sdk2',
        env: { SDK2_MODE: 'huge' },
        limits: { pollIntervalMs: 100 },
      });
      assert.equal(result.failure_cause, 'agent_error', result.error ?? '');
      assert.match(result.error ?? '', /GET \/status: the answer to GET \/status is larger than 1048576 bytes \(the agent's fault/);
    });

    it('leaves nothing behind: no process, no mount', () => {
      assert.deepEqual(processesWith(token), []);
      assert.equal(readFileSync('/proc/self/mountinfo', 'utf8').includes(tmp.dir), false);
    });
  });
}
