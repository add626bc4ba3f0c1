// The agent's final state kept with the run (final/workdir), task.toml's artifacts, the verifier
// in an environment of its own, and `belay run --regrade` on the kept states: real tasks, real
// scripted agents on the local and sandbox backends, a real CLI process for the regrade, and a
// hostile final state (links out, a FIFO, a 10 GiB sparse file, a flood of files).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { localBackend } from '../../../src/runner/core/backends/local.ts';
import { createJob, runJob } from '../../../src/runner/core/jobs/job.ts';
import { protocolNamed } from '../../../src/runner/core/protocols/index.ts';
import { readResult, type RunResult } from '../../../src/runner/core/records/records.ts';
import { RegradeRecordSchema } from '../../../src/runner/core/regrade/regrade.ts';
import { copyTreeBounded } from '../../../src/runner/core/run/finalState.ts';
import { runTask } from '../../../src/runner/core/run/run.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';
import { runCli } from '../../support/cli-process.ts';
import { ensureBuilt } from '../../support/build.ts';
import { agentFile, backends, fastLimits, nodeAgent, nodeDir, repoRoot, runFixture, tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-final-');
const cli = path.join(repoRoot, 'dist', 'cli.js');
after(() => tmp.remove());

/** Runs the commands agent with `commands`, one per step. */
function commandsEnv(commands: string[]): Record<string, string> {
  return { AGENT_COMMANDS: JSON.stringify(commands) };
}

/** Every path under `dir` (relative), to tell what a copy left behind. */
function tree(dir: string, prefix = ''): string[] {
  // Not readdir's `recursive`, which goes through links to folders.
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => [prefix + entry.name, ...(entry.isDirectory() ? tree(path.join(dir, entry.name), `${prefix}${entry.name}/`) : [])])
    .sort();
}

function helloTask(name: string, extraToml = '', test = '#!/bin/sh\n[ "$(cat hello.txt 2>/dev/null)" = "Hello, world!" ]\n'): string {
  return tmp.writeTask(name, {
    'task.toml': `version = "1.0"\n${extraToml}\n[verifier]\ntimeout_sec = 30.0\n[agent]\ntimeout_sec = 60.0\n`,
    'instruction.md': 'Create hello.txt holding "Hello, world!".\n',
    'tests/test.sh': test,
  });
}

for (const { name, get } of backends) {
  describe(`final state and artifacts (${name})`, () => {
    it('keeps the working folder as the agent left it: links kept as links, never followed; a FIFO skipped and listed; the artifacts collected, those outside the folder or behind a link refused', async (t) => {
      const backend = await get();
      if (backend instanceof Error) return t.skip(backend.message);
      const dir = helloTask(`kept-${name}`, 'artifacts = ["/app/out", { source = "report.txt", destination = "reports/r.txt" }, "/proc/self/environ", "escape/passwd", "missing.txt"]');
      const runsDir = path.join(tmp.dir, `runs-${name}`);
      const { result } = await runFixture(backend, runsDir, nodeAgent('commands.mjs'), {
        task: await loadTask(dir),
        env: commandsEnv([
          "printf 'Hello, world!' > hello.txt && mkdir -p out/deep && echo a > out/deep/a.txt && echo r > report.txt",
          `ln -s /etc etc-link && ln -s ${os.homedir()} home-link && ln -s /etc escape && mkfifo pipe`,
        ]),
      });
      assert.equal(result.passed, true, result.error ?? '');
      const final = path.join(result.run_dir, 'final', 'workdir');
      assert.deepEqual(result.final && { dir: result.final.dir, files: result.final.files }, { dir: 'final/workdir', files: 6 });
      assert.equal(readFileSync(path.join(final, 'hello.txt'), 'utf8'), 'Hello, world!');
      assert.equal(readFileSync(path.join(final, 'out', 'deep', 'a.txt'), 'utf8'), 'a\n');
      for (const [link, target] of [['etc-link', '/etc'], ['home-link', os.homedir()], ['escape', '/etc']] as const) {
        assert.ok(lstatSync(path.join(final, link)).isSymbolicLink(), `${link} is kept as a link`);
        assert.equal(readlinkSync(path.join(final, link)), target);
      }
      assert.equal(existsSync(path.join(final, 'pipe')), false);
      assert.deepEqual(result.final!.skipped, ['pipe: a FIFO, not a file: not copied']);
      // The artifacts: the folder and the renamed file; /proc is no file of the environment's own, escape/ is a link, missing.txt absent.
      const artifacts = path.join(result.run_dir, 'artifacts');
      assert.deepEqual(tree(artifacts), ['out', 'out/deep', 'out/deep/a.txt', 'reports', 'reports/r.txt']);
      assert.equal(result.artifacts?.files, 2);
      assert.match(result.artifacts!.skipped.join('\n'), /^\/proc\/self\/environ: under \/proc, which is no file of the environment's own: refused$/m);
      assert.match(result.artifacts!.skipped.join('\n'), /escape\/passwd: escape is not a folder \(a link or a file\): not followed/);
      assert.match(result.artifacts!.skipped.join('\n'), /missing\.txt: not there after the agent phase/);
      const recorded = await readResult(result.run_dir);
      assert.deepEqual(recorded.final, result.final);
    });

    it('runs the verifier in an environment of its own when the task asks: the final working folder is there, what the agent left elsewhere is not', async (t) => {
      const backend = await get();
      if (backend instanceof Error) return t.skip(backend.message);
      // The marker outside the working folder: in the sandbox its private /tmp, on the local backend the run's own app folder's parent is not shown either.
      const marker = name === 'sandbox' ? '/tmp/agent-was-here' : path.join(tmp.dir, `marker-${process.pid}`);
      const dir = helloTask(
        `separate-${name}`,
        '',
        `#!/bin/sh\necho "verifier in $(pwd)"\n[ "$(cat hello.txt 2>/dev/null)" = "Hello, world!" ] || exit 1\n${name === 'sandbox' ? `[ ! -e ${marker} ] || { echo "the agent's /tmp is here"; exit 1; }\n` : ''}`,
      );
      writeFileSync(path.join(dir, 'task.toml'), 'version = "1.0"\n[verifier]\ntimeout_sec = 30.0\nenvironment_mode = "separate"\n[agent]\ntimeout_sec = 60.0\n');
      const runsDir = path.join(tmp.dir, `runs-separate-${name}`);
      const { result } = await runFixture(backend, runsDir, nodeAgent('commands.mjs'), {
        task: await loadTask(dir),
        env: commandsEnv([`printf 'Hello, world!' > hello.txt && touch ${marker}`]),
      });
      assert.equal(result.passed, true, `${result.error ?? ''} ${result.verification?.output ?? ''}`);
      assert.match(result.notes!.join('\n'), /the verifier ran in an environment of its own/);
      if (name === 'local') assert.match(result.verification!.output, /verifier in .*verifier-env\/app/);
      else assert.match(result.verification!.output, /verifier in \/app/);
      // Its folders are gone once the run ended.
      assert.equal(existsSync(path.join(result.run_dir, 'verifier-env')), false);
      rmSync(marker, { force: true });
    });
  });
}

for (const { name, get } of backends) {
  describe(`artifacts outside the working folder (${name})`, () => {
    it('collects the report the agent wrote outside the working folder, keeps its link to /etc/passwd as a link, skips a FIFO and a huge file, each listed', async (t) => {
      const backend = await get();
      if (backend instanceof Error) return t.skip(backend.message);
      // The sandbox's /tmp is its own; the local backend's is this machine's, shared with other tests.
      const out = name === 'sandbox' ? '/tmp/out' : path.join(tmp.dir, `out-${name}`);
      const dir = helloTask(`outside-${name}`, `artifacts = ["${out}/", { source = "${out}/report.txt", destination = "copies/report.txt" }, "${out}/missing.txt"]`);
      const { result } = await runFixture(backend, path.join(tmp.dir, `runs-outside-${name}`), nodeAgent('commands.mjs'), {
        task: await loadTask(dir),
        env: commandsEnv([
          `printf 'Hello, world!' > hello.txt && mkdir -p ${out} && echo all good > ${out}/report.txt && ln -s /etc/passwd ${out}/passwd && mkfifo ${out}/pipe && truncate -s 3G ${out}/huge.bin`,
        ]),
      });
      assert.equal(result.passed, true, `${result.error ?? ''} ${result.notes?.join('\n') ?? ''}`);
      const artifacts = path.join(result.run_dir, 'artifacts');
      const where = out.slice(1);
      assert.deepEqual(tree(artifacts), [...ancestors(where), where, `${where}/passwd`, `${where}/report.txt`, 'copies', 'copies/report.txt'].sort());
      assert.equal(readFileSync(path.join(artifacts, where, 'report.txt'), 'utf8'), 'all good\n');
      assert.equal(readFileSync(path.join(artifacts, 'copies', 'report.txt'), 'utf8'), 'all good\n');
      // The link is kept as the link it is: its target is text, never read.
      assert.ok(lstatSync(path.join(artifacts, where, 'passwd')).isSymbolicLink());
      assert.equal(readlinkSync(path.join(artifacts, where, 'passwd')), '/etc/passwd');
      const skipped = result.artifacts!.skipped.join('\n');
      assert.match(skipped, new RegExp(`^${out}/pipe: a FIFO, not a file: not copied$`, 'm'));
      assert.match(skipped, new RegExp(`^${out}/huge\\.bin: 3221225472 bytes, past the 268435456 bytes the run keeps$`, 'm'));
      assert.match(skipped, new RegExp(`^${out}/missing\\.txt: not there after the agent phase$`, 'm'));
      assert.equal(result.artifacts!.files, 3);
      // No staging folder is left in the run folder.
      assert.deepEqual(readdirSync(result.run_dir).filter((entry) => entry.startsWith('.artifact-staging-')), []);
      if (name === 'local') rmSync(out, { recursive: true, force: true });
    });

    it('refuses a path through a link the agent made, and one under /proc or /sys, each in one line', async (t) => {
      const backend = await get();
      if (backend instanceof Error) return t.skip(backend.message);
      const base = name === 'sandbox' ? '/tmp' : path.join(tmp.dir, `base-${name}`);
      const dir = helloTask(`outside-refused-${name}`, `artifacts = ["${base}/escape/passwd", "/proc/1/root/etc/passwd", "/sys/kernel"]`);
      const { result } = await runFixture(backend, path.join(tmp.dir, `runs-outside-refused-${name}`), nodeAgent('commands.mjs'), {
        task: await loadTask(dir),
        env: commandsEnv([`printf 'Hello, world!' > hello.txt && mkdir -p ${base} && ln -s /etc ${base}/escape`]),
      });
      assert.equal(result.passed, true, result.error ?? '');
      assert.deepEqual(tree(path.join(result.run_dir, 'artifacts')), []);
      const lines = result.artifacts!.skipped;
      assert.equal(lines.length, 3, lines.join('\n'));
      assert.match(lines.join('\n'), new RegExp(`^${base}/escape/passwd: ${base.slice(1)}/escape is not a folder \\(a link or a file\\): not followed$|^${base}/escape/passwd: escape is not a folder \\(a link or a file\\): not followed$`, 'm'));
      assert.match(lines.join('\n'), /^\/proc\/1\/root\/etc\/passwd: under \/proc, which is no file of the environment's own: refused$/m);
      assert.match(lines.join('\n'), /^\/sys\/kernel: under \/sys, which is no file of the environment's own: refused$/m);
      // A path through '..' is refused with the task itself, in one line, before anything runs.
      writeFileSync(path.join(dir, 'task.toml'), 'version = "1.0"\nartifacts = ["/tmp/../etc/passwd"]\n[verifier]\ntimeout_sec = 30.0\n[agent]\ntimeout_sec = 60.0\n');
      await assert.rejects(loadTask(dir), /task\.toml: field 'artifacts\.0': an artifact's path must not contain '\.\.'$/);
      if (name === 'local') rmSync(base, { recursive: true, force: true });
    });
  });
}

/** `a`, `a/b` for `a/b/c`: the folders an artifact's path makes on the way. */
function ancestors(relative: string): string[] {
  const parts = relative.split('/');
  return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join('/'));
}

describe('a hostile final state', () => {
  it('bounds a flood of files, a 10 GiB sparse file, links to /etc and home, and a FIFO: each skipped or kept as a link, listed, and nothing copied beyond the bounds', () => {
    const source = path.join(tmp.dir, 'hostile', 'app');
    mkdirSync(path.join(source, 'z-flood'), { recursive: true });
    // 100,000 empty files, made by the shell at once (as an agent would); walked last (by name).
    execFileSync('/bin/sh', ['-c', 'cd z-flood && seq 1 100000 | xargs touch'], { cwd: source });
    execFileSync('truncate', ['-s', '10G', path.join(source, 'huge.bin')]);
    execFileSync('mkfifo', [path.join(source, 'fifo')]);
    symlinkSync('/etc', path.join(source, 'etc'));
    symlinkSync(os.homedir(), path.join(source, 'home'));
    writeFileSync(path.join(source, 'a.txt'), 'kept');
    const target = path.join(tmp.dir, 'hostile', 'final');
    return copyTreeBounded(source, target, { maxBytes: 1024 * 1024, maxEntries: 500 }).then((report) => {
      const skipped = report.skipped.join('\n');
      assert.match(skipped, /^huge\.bin: 10737418240 bytes, past the 1048576 bytes the run keeps$/m);
      assert.match(skipped, /^fifo: a FIFO, not a file: not copied$/m);
      assert.match(skipped, /not copied, nor anything after it: more than 500 entries/);
      assert.match(skipped, /… and \d+ more left out$/);
      assert.ok(report.skipped.length <= 101, 'the list itself is bounded');
      const copied = tree(target);
      assert.ok(copied.length <= 500, `at most the bound was copied (${copied.length})`);
      assert.equal(readFileSync(path.join(target, 'a.txt'), 'utf8'), 'kept');
      assert.equal(readlinkSync(path.join(target, 'etc')), '/etc');
      assert.equal(readlinkSync(path.join(target, 'home')), os.homedir());
      assert.equal(existsSync(path.join(target, 'huge.bin')), false);
      assert.equal(report.bytes, 4);
    });
  });

  it('refuses a working folder that is itself a link, and leaves no partial copy', async () => {
    const link = path.join(tmp.dir, 'hostile', 'app-link');
    symlinkSync('/etc', link);
    const target = path.join(tmp.dir, 'hostile', 'final-link');
    await assert.rejects(copyTreeBounded(link, target, { maxBytes: 1024, maxEntries: 10 }), /is a symlink, not the working folder/);
    assert.equal(existsSync(target), false);
  });

  it('a run whose agent leaves a FIFO and a 3 GiB sparse file ends, with both listed and neither copied (sandbox)', async (t) => {
    const backend = await backends.find((b) => b.name === 'sandbox')!.get();
    if (backend instanceof Error) return t.skip(backend.message);
    const dir = helloTask('hostile-run');
    const { result } = await runFixture(backend, path.join(tmp.dir, 'runs-hostile'), nodeAgent('commands.mjs'), {
      task: await loadTask(dir),
      // 3 GiB: the sandbox itself refuses a file past the run's disk budget (4 GiB by default).
      env: commandsEnv(["printf 'Hello, world!' > hello.txt && mkfifo fifo && truncate -s 3G huge.bin"]),
    });
    assert.ok(result.final, result.notes?.join('\n'));
    assert.match(result.final.skipped.join('\n'), /^fifo: a FIFO/m);
    assert.match(result.final.skipped.join('\n'), /^huge\.bin: 3221225472 bytes, past the 268435456 bytes the run keeps$/m);
    assert.deepEqual(tree(path.join(result.run_dir, 'final', 'workdir')), ['hello.txt']);
  });
});

describe('belay run --regrade', () => {
  before(() => ensureBuilt());

  /** A job of one trial of a task whose agent writes hello.txt, graded by `test`. */
  async function job(name: string, test?: string): Promise<{ jobDir: string; taskDir: string; runs: RunResult[] }> {
    const taskDir = helloTask(name, '', test);
    const task = await loadTask(taskDir);
    const jobDir = await createJob({ jobsDir: path.join(tmp.dir, `jobs-${name}`), tasks: [task], settings: { agent: 'commands', protocol: 'sdk1', backend: 'local', attempts: 2, options: {} } });
    const runs: RunResult[] = [];
    await runJob({
      jobDir,
      tasks: [task],
      concurrency: 1,
      runTrial: async ({ task, runId, runsDir, signal, onEvent }) => {
        const result = await runTask({
          task,
          agentCommand: `'${process.execPath}' '${agentFile('commands.mjs')}'`,
          agentCwd: repoRoot,
          agentFolders: [nodeDir],
          protocol: protocolNamed('sdk1'),
          backend: localBackend(),
          runsDir,
          runId,
          limits: fastLimits,
          env: commandsEnv(["printf 'Hello, world!' > hello.txt"]),
          signal,
          onEvent,
        });
        runs.push(result);
        return result;
      },
    });
    return { jobDir, taskDir, runs };
  }

  it("grades the kept final states with the task's current verifier, down then up, writing beside the old record and never over it", async () => {
    const { jobDir, taskDir, runs } = await job('regrade');
    assert.deepEqual(runs.map((r) => r.passed), [true, true]);
    const before = runs.map((r) => readFileSync(path.join(r.run_dir, 'result.json'), 'utf8'));
    // The verifier changes: it now wants a file the agent never wrote.
    writeFileSync(path.join(taskDir, 'tests', 'test.sh'), '#!/bin/sh\n[ -f goodbye.txt ]\n');
    const down = await runCli(cli, ['run', '--regrade', jobDir], { cwd: repoRoot, env: { ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '' } });
    assert.equal(down.code, 0, down.stderr);
    assert.match(down.stdout, /^regrade \(attempt 1\): 1\.000 → 0\.000 \(down\)$/m);
    assert.match(down.stdout, /^regrade \(attempt 2\): 1\.000 → 0\.000 \(down\)$/m);
    assert.match(down.stdout, /^2 changed \(0 up, 2 down\), mean 1\.000 → 0\.000$/m);
    assert.match(down.stderr, /no agent, no key/);
    // The old records are as they were; the new verification is beside them.
    assert.deepEqual(runs.map((r) => readFileSync(path.join(r.run_dir, 'result.json'), 'utf8')), before);
    for (const run of runs) {
      const stamps = readdirSync(path.join(run.run_dir, 'regrade'));
      assert.equal(stamps.length, 1);
      const record = RegradeRecordSchema.parse(JSON.parse(readFileSync(path.join(run.run_dir, 'regrade', stamps[0]!, 'verification.json'), 'utf8')));
      assert.deepEqual([record.before, record.after], [{ reward: 1, passed: true }, { reward: 0, passed: false }]);
      // Nothing of the fresh environment is left: no copy of the state, no staged tests.
      assert.deepEqual(readdirSync(path.join(run.run_dir, 'regrade', stamps[0]!)).sort(), ['logs', 'verification.json', 'verifier']);
    }
    // The verifier changes again, to one that reads the kept state and passes it; JSON this time.
    writeFileSync(path.join(taskDir, 'tests', 'test.sh'), '#!/bin/sh\ngrep -q Hello hello.txt\n');
    const same = await runCli(cli, ['run', '--regrade', jobDir, '--json'], { cwd: repoRoot });
    assert.equal(same.code, 0, same.stderr);
    const report = JSON.parse(same.stdout) as { changed: number; up: number; down: number; mean_before: number; mean_after: number };
    // Each regrade compares with the run's own record (which passed): no change this time.
    assert.deepEqual([report.changed, report.up, report.down, report.mean_before, report.mean_after], [0, 0, 0, 1, 1]);
  });

  it('a verifier that now passes what failed goes up', async () => {
    // The runs fail under the verifier of their time; the fixed verifier passes their kept state.
    const { jobDir, taskDir, runs } = await job('regrade-up', '#!/bin/sh\nexit 1\n');
    assert.deepEqual(runs.map((r) => r.passed), [false, false]);
    writeFileSync(path.join(taskDir, 'tests', 'test.sh'), '#!/bin/sh\ngrep -q world hello.txt\n');
    const up = await runCli(cli, ['run', '--regrade', jobDir], { cwd: repoRoot });
    assert.equal(up.code, 0, up.stderr);
    assert.match(up.stdout, /^regrade-up \(attempt 1\): 0\.000 → 1\.000 \(up\)$/m);
    assert.match(up.stdout, /^2 changed \(2 up, 0 down\), mean 0\.000 → 1\.000$/m);
  });

  it('says of each run recorded without a final state, in one line, that it cannot be regraded and why', async () => {
    const { jobDir, runs } = await job('regrade-old');
    // As a run recorded before final states were kept: no final/ and no `final` in result.json.
    for (const run of runs) {
      rmSync(path.join(run.run_dir, 'final'), { recursive: true });
      const file = path.join(run.run_dir, 'result.json');
      const { final: _, ...rest } = JSON.parse(readFileSync(file, 'utf8')) as RunResult;
      writeFileSync(file, JSON.stringify(rest));
    }
    const old = await runCli(cli, ['run', '--regrade', jobDir], { cwd: repoRoot });
    assert.equal(old.code, 1);
    const lines = old.stdout.trim().split('\n');
    assert.deepEqual(lines.slice(0, 2), [1, 2].map((n) => `regrade-old (attempt ${n}): cannot be regraded: recorded before Belay kept final states (no final/workdir in its run folder): nothing to grade without running the agent again`));
    assert.equal(lines[2], '0 changed (0 up, 0 down), mean - → -; 2 not regraded');
    assert.doesNotMatch(old.stderr, /\n\s+at /, 'no stack trace');
    for (const run of runs) assert.equal(existsSync(path.join(run.run_dir, 'regrade')), false);
  });

  it('refuses task folders and agent options beside --regrade, in one line', async () => {
    const given = await runCli(cli, ['run', '--regrade', tmp.dir, '--agent', 'x'], { cwd: repoRoot });
    assert.equal(given.code, 2);
    assert.match(given.stderr, /--agent cannot be given with --regrade/);
    const notJob = await runCli(cli, ['run', '--regrade', tmp.dir], { cwd: repoRoot });
    assert.equal(notJob.code, 1);
    assert.match(notJob.stderr, /is not a job folder \(no job\.json\)/);
  });
});
