// Term Challenge repository tasks end to end: real git repositories made here (a base commit with
// two bugs, a later commit that fixes them, tests), real agents run through SDK 3.0 on each
// backend, and what is graded is the agent's patch on a clean checkout.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { runFiles, type RunResult } from '../../../src/runner/core/records/records.ts';
import { repoFiles, RepoRun, type RepoTask } from '../../../src/runner/core/run/repoGrade.ts';
import { openRunNetwork } from '../../../src/runner/core/run/taskEnvironment.ts';
import { applyPatch, capturePatch, checkoutBase, fetchBase, GitError, layFiles } from '../../../src/runner/core/tasks/repoGit.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';
import { containerOrReason } from '../../support/runner/container-helpers.ts';
import { backends, nodeDir, runFixture, tempDir } from '../../support/runner/helpers.ts';

const available = await Promise.all(backends.map(async (b) => ({ ...b, backend: await b.get() })));
const container = await containerOrReason();
const tmp = tempDir('belay-repo-');
after(() => tmp.remove());

const gitEnv = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: gitEnv, encoding: 'utf8' }).trim();

// The project: calc.sh with two bugs, and its own check (which the task's tests bring again).
const CHECK = '. ./calc.sh\ncase "$1" in add) [ "$(add 2 3)" = 5 ];; mul) [ "$(mul 2 3)" = 6 ];; *) exit 9;; esac\n';
const source = path.join(tmp.dir, 'project');
mkdirSync(source);
git(source, 'init', '-q', '-b', 'main');
writeFileSync(path.join(source, 'calc.sh'), 'add() { echo $(( $1 - $2 )); }\nmul() { echo $(( $1 + $2 )); }\n');
writeFileSync(path.join(source, 'check_calc.inc'), CHECK);
writeFileSync(path.join(source, '.gitignore'), 'install-ran.txt\n');
git(source, 'add', '-A');
git(source, 'commit', '-q', '-m', 'base: two bugs');
const BASE = git(source, 'rev-parse', 'HEAD');
// A later commit holds the fix: it must never reach the agent.
writeFileSync(path.join(source, 'calc.sh'), 'add() { echo $(( $1 + $2 )); }\nmul() { echo $(( $1 * $2 )); }\n');
git(source, 'commit', '-q', '-am', 'the fix, later');
const FIX = git(source, 'rev-parse', 'HEAD');

const TESTS = {
  'tests/test_add.sh': 'sh ./check_calc.inc add\n',
  'tests/test_mul.sh': 'sh ./check_calc.inc mul\n',
  'tests/test_install.sh': 'test -f install-ran.txt\n',
  'tests/check_calc.inc': CHECK,
};
const taskFolder = (name: string, workspace: string) =>
  tmp.writeTask(name, { 'workspace.yaml': workspace, 'prompt.md': 'add and mul in calc.sh give wrong answers: fix them.\n', ...TESTS });
const fixTask = taskFolder('fix-calc', `repo: ../project\nbase_commit: '${BASE}'\ninstall:\n  - printf ok > install-ran.txt\nhints: look at calc.sh\ndifficulty: Easy\n`);

// The agent (SDK 3.0: `--instruction TEXT`, its own commands, [DONE]). AGENT_MODE says what it does.
const agentDir = tmp.writeTask('agent', {
  'agent.mjs': `import { execSync } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
const mode = process.env.AGENT_MODE;
const at = process.argv.indexOf('--instruction');
// Where git is missing (an image without it), the agent says null.
const git = (args) => { try { return execSync('git ' + args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim(); } catch { return null; } };
const pick = (names) => Object.fromEntries(names.map((n) => [n, process.env[n] ?? null]));
console.error(JSON.stringify({ instruction: process.argv[at + 1], ...pick(['TERM_TASK_ID', 'TERM_REPO', 'TERM_BASE_COMMIT', 'TERM_ISSUE_TEXT', 'TERM_HINTS', 'TERM_TIMEOUT', 'TERM_DIFFICULTY']),
  installed: readFileSync('install-ran.txt', 'utf8'), head: git('rev-parse HEAD'), log: git('log --all --format=%H')?.split('\\n') ?? null }));
const fix = (which) => {
  const lines = readFileSync('calc.sh', 'utf8').split('\\n').map((line) =>
    which.includes('add') && line.startsWith('add') ? 'add() { echo $(( $1 + $2 )); }' : which.includes('mul') && line.startsWith('mul') ? 'mul() { echo $(( $1 * $2 )); }' : line);
  writeFileSync('calc.sh', lines.join('\\n'));
};
if (mode === 'fix') { fix(['add', 'mul']); console.error('DIFF ' + JSON.stringify(git('diff --stat'))); execSync('git add -A && git commit -q -m fix'); }
else if (mode === 'fix-plain') fix(['add', 'mul']);
else if (mode === 'half') fix(['add']);
else if (mode === 'tests') {
  writeFileSync('check_calc.inc', 'exit 0\\n');
  writeFileSync('test_add.sh', 'exit 0\\n');
  writeFileSync('test_mul.sh', 'exit 0\\n');
}
else if (mode === 'kill-git') { fix(['add', 'mul']); rmSync('.git', { recursive: true, force: true }); writeFileSync('.git', 'gitdir: /nowhere\\n'); }
else if (mode === 'hostile') {
  fix(['add', 'mul']);
  // Git settings and hooks that would run a program if Belay ran git with this repository.
  appendFileSync('.git/config', '[core]\\n\\tfsmonitor = "touch ' + process.env.MARKER + '"\\n\\tpager = "touch ' + process.env.MARKER + '"\\n[diff]\\n\\texternal = "touch ' + process.env.MARKER + '"\\n');
  mkdirSync('.git/hooks', { recursive: true });
  writeFileSync('.git/hooks/post-checkout', '#!/bin/sh\\ntouch ' + process.env.MARKER + '\\n', { mode: 0o755 });
  writeFileSync('.gitattributes', '* diff=evil filter=evil\\n');
  execSync('mkfifo pipe');
  // A link where the task's check goes: laying the task's file must not write through it.
  rmSync('check_calc.inc');
  symlinkSync(process.env.OUTSIDE, 'check_calc.inc');
  writeFileSync('data.bin', Buffer.from([0, 1, 2, 255, 0, 10, 13, 0]));
  // Only where the backend isolates the agent: the local backend's home is the person's.
  if (process.env.JUNK_HOME === '1') { writeFileSync(process.env.HOME + '/junk.txt', 'left outside the repository'); console.error('junk written'); }
}
else if (mode === 'hostile-git') {
  // Its fix committed with its own git, then settings that would run a program (a marker at a
  // path only the host has) the next time any git reads this repository.
  fix(['add', 'mul']);
  execSync('git add -A && git commit -q -m fix');
  const m = process.env.MARKER;
  const set = (key, value) => execSync('git config ' + key + " '" + value + "'");
  set('core.fsmonitor', 'touch ' + m + '-fsmonitor');
  mkdirSync('.git/evil-hooks');
  for (const hook of ['pre-commit', 'post-commit', 'post-checkout', 'post-index-change', 'reference-transaction', 'pre-auto-gc']) writeFileSync('.git/evil-hooks/' + hook, '#!/bin/sh\\ntouch ' + m + '-hook\\n', { mode: 0o755 });
  set('core.hooksPath', '.git/evil-hooks');
  set('filter.evil.clean', 'touch ' + m + '-filter; cat');
  set('filter.evil.smudge', 'touch ' + m + '-filter; cat');
  set('filter.evil.process', 'touch ' + m + '-filter');
  set('filter.evil.required', 'true');
  set('diff.evil.textconv', 'touch ' + m + '-textconv; cat');
  writeFileSync('.gitattributes', '* filter=evil diff=evil\\n');
  writeFileSync('.git/evil.inc', '[core]\\n\\tfsmonitor = touch ' + m + '-include\\n\\tpager = touch ' + m + '-include\\n[diff]\\n\\texternal = touch ' + m + '-include\\n');
  set('includeIf.gitdir:/.path', 'evil.inc');
  writeFileSync('after.txt', 'written after the settings\\n');
  console.error('CONFIG ' + JSON.stringify(execSync('git config --local --list', { encoding: 'utf8' })));
}
else if (mode === 'none') {}
console.log('[DONE]');
`,
});
const agent = `'${process.execPath}' '${path.join(agentDir, 'agent.mjs')}'`;

// A Python agent.py as the Term Challenge miners' guide writes one: the issue from TERM_ISSUE_TEXT,
// its change committed with git.
const pythonAgentDir = tmp.writeTask('python-agent', {
  'agent.py': `import os, subprocess, sys
assert sys.argv[1] == '--instruction' and sys.argv[2] == os.environ['TERM_ISSUE_TEXT']
assert os.environ['TERM_BASE_COMMIT'] == subprocess.run(['git', 'rev-parse', 'HEAD'], capture_output=True, text=True).stdout.strip()
with open('calc.sh') as f:
    text = f.read()
text = text.replace('$1 - $2', '$1 + $2').replace('mul() { echo $(( $1 + $2', 'mul() { echo $(( $1 * $2')
with open('calc.sh', 'w') as f:
    f.write(text)
subprocess.run('git add -A && git commit -q -m "Fix issue"', shell=True, check=True)
print('[DONE]')
`,
  'requirements.txt': '',
});
// The hostile agent's task also checks that what it left in its home is gone when the patch is graded.
const hostileTask = tmp.writeTask('hostile-calc', {
  'workspace.yaml': `repo: ${source}\nbase_commit: '${BASE}'\ninstall: printf ok > install-ran.txt\n`,
  'prompt.md': 'Fix calc.sh.',
  ...TESTS,
  'tests/test_home.sh': 'test ! -e "$HOME/junk.txt"\n',
});

/** The agent of mode hostile-git set its settings, and no program they name ran while Belay captured and graded its patch. */
function hostileGitChecked({ result }: { result: RunResult }, marker: string): void {
  assert.equal(result.reward, 1, result.error ?? '');
  const config = /^CONFIG (.*)$/m.exec(readFileSync(runFiles(result.run_dir).agentStderr, 'utf8'));
  assert.ok(config, 'the agent did not report its settings');
  const settings = JSON.parse(config[1]!) as string;
  for (const key of ['core.fsmonitor=touch', 'core.hookspath=.git/evil-hooks', 'filter.evil.clean=touch', 'filter.evil.required=true', 'includeif.gitdir:/.path=evil.inc']) assert.ok(settings.includes(key), `${key} not set: ${settings}`);
  const left = readdirSync(path.dirname(marker)).filter((entry) => entry.startsWith(path.basename(marker)));
  assert.deepEqual(left, [], 'a program named by the agent\'s git settings ran');
  const patch = patchOf(result);
  assert.match(patch, /^\+mul\(\) \{ echo \$\(\( \$1 \* \$2 \)\); \}$/m);
  assert.match(patch, /^diff --git a\/after\.txt b\/after\.txt$/m);
  assert.match(patch, /^\+\* filter=evil diff=evil$/m);
  assert.doesNotMatch(patch, /evil-hooks|evil\.inc/);
}

const seen = (result: RunResult) => JSON.parse(readFileSync(runFiles(result.run_dir).agentStderr, 'utf8').split('\n')[0]!) as Record<string, unknown>;
const patchOf = (result: RunResult) => readFileSync(repoFiles(result.run_dir).patch, 'utf8');

for (const { name, backend } of available) {
  describe(`Term Challenge repository tasks (${name} backend)`, { skip: backend instanceof Error ? backend.message : false }, () => {
    const be = backend as Exclude<typeof backend, Error>;
    const runs = path.join(tmp.dir, `runs-${name}`);
    const run = async (mode: string, task = fixTask, env: Record<string, string> = {}) =>
      runFixture(be, runs, agent, { task: await loadTask(task), protocol: 'sdk3', agentFolders: [nodeDir, agentDir], env: { AGENT_MODE: mode, ...env } });

    it('an agent that fixes the bug gets reward 1: the base commit checked out, installed, TERM_* set, its committed change graded', async () => {
      const { result } = await run('fix');
      assert.equal(result.passed, true, result.error ?? '');
      assert.equal(result.reward, 1);
      assert.deepEqual(
        result.verification?.test_results.map((t) => [t.name, t.status]),
        [['test_add.sh', 'passed'], ['test_install.sh', 'passed'], ['test_mul.sh', 'passed']],
      );
      const env = seen(result);
      assert.equal(env.instruction, 'add and mul in calc.sh give wrong answers: fix them.');
      assert.deepEqual(
        { id: env.TERM_TASK_ID, repo: env.TERM_REPO, base: env.TERM_BASE_COMMIT, issue: env.TERM_ISSUE_TEXT, hints: env.TERM_HINTS, timeout: env.TERM_TIMEOUT, difficulty: env.TERM_DIFFICULTY },
        { id: 'fix-calc', repo: '../project', base: BASE, issue: 'add and mul in calc.sh give wrong answers: fix them.', hints: 'look at calc.sh', timeout: '60', difficulty: 'Easy' },
      );
      assert.equal(env.installed, 'ok');
      assert.equal(env.head, BASE);
      // Only the base commit's history came along: never the later fix.
      assert.deepEqual(env.log, [BASE]);
      assert.ok(!(env.log as string[]).includes(FIX));
      const patch = patchOf(result);
      assert.match(patch, /^diff --git a\/calc\.sh b\/calc\.sh$/m);
      assert.match(patch, /^\+mul\(\) \{ echo \$\(\( \$1 \* \$2 \)\); \}$/m);
      // The install's own file is ignored by the repository: it is not part of the change.
      assert.doesNotMatch(patch, /install-ran/);
      assert.match(readFileSync(repoFiles(result.run_dir).installLog, 'utf8'), /^\$ printf ok > install-ran\.txt\n\[exit 0\]\n$/);
      assert.match(readFileSync(runFiles(result.run_dir).testOutput, 'utf8'), /=== test_add\.sh ===[\s\S]*\[test_mul\.sh: passed, exit 0\]/);
    });

    it('an agent that fixes half of it gets 0, and each test says what it gave', async () => {
      const { result } = await run('half');
      assert.equal(result.passed, false);
      assert.equal(result.reward, 0);
      assert.equal(result.failure_cause, 'tests_failed');
      assert.deepEqual(
        result.verification?.test_results.map((t) => [t.name, t.status, t.message]),
        [['test_add.sh', 'passed', 'exit 0'], ['test_install.sh', 'passed', 'exit 0'], ['test_mul.sh', 'failed', 'exit 1']],
      );
      assert.match(result.error ?? '', /^1 of 3 tests failed: test_mul\.sh \(exit 1\)$/);
    });

    it('an agent that edits the tests instead gets 0: the tests that run are the task\'s', async () => {
      const { result, events } = await run('tests');
      assert.equal(result.reward, 0);
      assert.deepEqual(result.verification?.test_results.map((t) => [t.name, t.status]), [['test_add.sh', 'failed'], ['test_install.sh', 'passed'], ['test_mul.sh', 'failed']]);
      // Its patch says what it did; the task's own files were laid over it.
      assert.match(patchOf(result), /^\+exit 0$/m);
      assert.equal(readFileSync(path.join(repoFiles(result.run_dir).checkout, 'check_calc.inc'), 'utf8'), CHECK);
      assert.ok(events.some((e) => e.type === 'notice' && /the patch changes check_calc\.inc, test_add\.sh, test_mul\.sh, which the task's tests bring/.test(e.message)));
    });

    it('an agent that leaves no change: an empty patch, the tests run on the base commit', async () => {
      const { result, events } = await run('none');
      assert.equal(result.reward, 0);
      assert.equal(patchOf(result), '');
      assert.ok(events.some((e) => e.type === 'notice' && /left no change to the repository/.test(e.message)));
      assert.deepEqual(result.verification?.test_results.map((t) => t.status), ['failed', 'passed', 'failed']);
    });

    it('an agent that destroys its .git still has its change graded (the patch does not depend on it)', async () => {
      const { result } = await run('kill-git');
      assert.equal(result.reward, 1, result.error ?? '');
    });

    it('a hostile agent: its git settings and hooks never run, a FIFO is skipped, a link where a test file goes is not written through, binary changes pass whole', async () => {
      const marker = path.join(tmp.dir, `marker-${name}`);
      const outside = path.join(tmp.dir, `outside-${name}`);
      mkdirSync(outside);
      const { result } = await run('hostile', hostileTask, { MARKER: marker, OUTSIDE: outside, JUNK_HOME: be.isolated ? '1' : '' });
      assert.equal(result.reward, 1, result.error ?? '');
      if (be.isolated) assert.match(readFileSync(runFiles(result.run_dir).agentStderr, 'utf8'), /^junk written$/m);
      assert.deepEqual(result.verification?.test_results.map((t) => [t.name, t.status]), [['test_add.sh', 'passed'], ['test_home.sh', 'passed'], ['test_install.sh', 'passed'], ['test_mul.sh', 'passed']]);
      assert.equal(existsSync(marker), false, 'a program named by the agent\'s git settings ran');
      assert.deepEqual(readdirSync(outside), []);
      const patch = patchOf(result);
      assert.match(patch, /^diff --git a\/data\.bin b\/data\.bin\nnew file mode 100644\n[^\n]*\nGIT binary patch$/m);
      assert.match(patch, /^new file mode 120000$/m);
      assert.doesNotMatch(patch, /a\/pipe/);
      assert.deepEqual([...readFileSync(path.join(repoFiles(result.run_dir).checkout, 'data.bin'))], [0, 1, 2, 255, 0, 10, 13, 0]);
    });

    it('an agent that sets core.fsmonitor, core.hooksPath, a filter driver and an includeIf with its own git: none of them runs when its patch is captured and graded', async () => {
      await hostileGitChecked(await run('hostile-git', fixTask, { MARKER: path.join(tmp.dir, `git-marker-${name}`) }), path.join(tmp.dir, `git-marker-${name}`));
    });

    it('a Python agent.py run as Term Challenge runs it (python3 agent.py --instruction …) fixes the bug: reward 1', async () => {
      const { result } = await runFixture(be, runs, `/usr/bin/python3 '${path.join(pythonAgentDir, 'agent.py')}'`, { task: await loadTask(fixTask), protocol: 'sdk3', agentFolders: [pythonAgentDir] });
      assert.equal(result.reward, 1, `${result.error ?? ''} ${readFileSync(runFiles(result.run_dir).agentStderr, 'utf8').slice(-500)}`);
      assert.equal(result.agent_completed, true);
    });
  });
}

describe('Term Challenge repository tasks: where the repository comes from', () => {
  const local = available.find((b) => b.name === 'local')!.backend as Exclude<(typeof available)[number]['backend'], Error>;
  const runs = path.join(tmp.dir, 'runs-source');
  const run = async (task: string) => runFixture(local, runs, agent, { task: await loadTask(task), protocol: 'sdk3', agentFolders: [nodeDir, agentDir], env: { AGENT_MODE: 'fix' } });

  it('a remote URL no mirror holds: one line naming workspace.yaml, the field and how to name a mirror; nothing is fetched', async () => {
    const task = taskFolder('remote-calc', `repo: https://github.com/acme/calc\nbase_commit: '${BASE}'\n`);
    const saved = process.env.BELAY_GIT_MIRRORS;
    delete process.env.BELAY_GIT_MIRRORS;
    try {
      const { result } = await run(task);
      assert.equal(result.failure_cause, 'setup_error');
      assert.equal(result.steps, 0);
      assert.equal(
        result.error,
        `${path.join(task, 'workspace.yaml')}: field 'repo': https://github.com/acme/calc is a remote repository and no mirror folder is named: Belay never fetches from the network; put a clone at <mirror>/github.com/acme/calc.git and name <mirror> in BELAY_GIT_MIRRORS`,
      );
    } finally {
      if (saved !== undefined) process.env.BELAY_GIT_MIRRORS = saved;
    }
  });

  it('the same URL through a mirror named in BELAY_GIT_MIRRORS runs and passes', async () => {
    const mirrors = path.join(tmp.dir, 'mirrors');
    mkdirSync(path.join(mirrors, 'github.com', 'acme'), { recursive: true });
    execFileSync('git', ['clone', '-q', '--bare', source, path.join(mirrors, 'github.com', 'acme', 'calc.git')], { env: gitEnv });
    const task = taskFolder('mirrored-calc', `repo: acme/calc\nbase_commit: '${BASE}'\ninstall: printf ok > install-ran.txt\n`);
    process.env.BELAY_GIT_MIRRORS = mirrors;
    try {
      const { result } = await run(task);
      assert.equal(result.reward, 1, result.error ?? '');
    } finally {
      delete process.env.BELAY_GIT_MIRRORS;
    }
  });

  it('a base commit the repository does not have: one line naming the field', async () => {
    const task = taskFolder('missing-commit', `repo: ../project\nbase_commit: '${'0'.repeat(40)}'\n`);
    const { result } = await run(task);
    assert.equal(result.failure_cause, 'setup_error');
    assert.match(result.error ?? '', /workspace\.yaml: field 'base_commit': '0{40}' could not be fetched from .*project .*name a full commit id, a branch or a tag it has$/);
    assert.doesNotMatch(result.error ?? '', /\n/);
  });

  it('a finished run\'s recorded patch is graded again by the task\'s current tests, without any agent', async () => {
    const { result } = await run(fixTask);
    assert.equal(result.reward, 1, result.error ?? '');
    const regrade = async (taskDir: string) => {
      const notes: string[] = [];
      const task = (await loadTask(taskDir)) as RepoTask;
      const repo = await RepoRun.recorded(task, result.run_dir);
      const network = await openRunNetwork({ task, runDir: result.run_dir, allowPublic: false, isolated: local.isolated, note: (n) => notes.push(n), verifierOnly: { refused: 'not graded' } });
      const verification = await repo.gradePatch({ backend: local, runId: `${result.run_id}-regrade`, hidden: [], network, testTimeoutMs: 30_000, maxLogBytes: 1 << 20, diskBudgetBytes: 1 << 30, signal: new AbortController().signal, note: (n) => notes.push(n) });
      return verification;
    };
    assert.equal((await regrade(fixTask)).reward, 1);
    // A stricter verifier: one more test, which the recorded fix does not pass.
    const stricter = tmp.writeTask('fix-calc-stricter', { 'workspace.yaml': readFileSync(path.join(fixTask, 'workspace.yaml'), 'utf8'), 'prompt.md': 'Fix.', ...TESTS, 'tests/test_sub.sh': '. ./calc.sh\n[ "$(sub 5 3)" = 2 ]\n' });
    const stricterResult = await regrade(stricter);
    assert.equal(stricterResult.reward, 0);
    assert.deepEqual(stricterResult.test_results.map((t) => [t.name, t.status]), [['test_add.sh', 'passed'], ['test_install.sh', 'passed'], ['test_mul.sh', 'passed'], ['test_sub.sh', 'failed']]);
  });

  it('a task with fail_to_pass and pass_to_pass instead of tests/ is graded by those commands', async () => {
    const task = tmp.writeTask('swe-calc', {
      'workspace.yaml': `repo: ../project\nbase_commit: '${BASE}'\ninstall: printf ok > install-ran.txt\nfail_to_pass:\n  - sh ./check_calc.inc add\n  - sh ./check_calc.inc mul\npass_to_pass:\n  - test -f calc.sh\n`,
      'prompt.md': 'Fix calc.sh.',
    });
    const { result } = await run(task);
    assert.equal(result.reward, 1, result.error ?? '');
    assert.deepEqual(result.verification?.test_results.map((t) => [t.name, t.status]), [['fail_to_pass_0.sh', 'passed'], ['fail_to_pass_1.sh', 'passed'], ['pass_to_pass_2.sh', 'passed']]);
  });

  it('several repository tasks at once each grade their own patch', async () => {
    const runs2 = path.join(tmp.dir, 'runs-parallel');
    const task = await loadTask(fixTask);
    const modes = ['fix', 'half', 'fix', 'none'];
    const results = await Promise.all(modes.map((mode) => runFixture(local, runs2, agent, { task, protocol: 'sdk3', agentFolders: [nodeDir, agentDir], env: { AGENT_MODE: mode } })));
    assert.deepEqual(results.map(({ result }) => result.reward), [1, 0, 1, 0]);
    assert.equal(new Set(results.map(({ result }) => result.run_dir)).size, 4);
  });
});

describe('Term Challenge repository tasks: hostile patches and working trees', () => {
  const work = path.join(tmp.dir, 'hostile-git');
  mkdirSync(work);
  const baseRepo = path.join(work, 'base.git');
  let sha = '';
  const clean = async (name: string) => {
    const dir = path.join(work, name);
    sha ||= await fetchBase(source, BASE, baseRepo);
    await checkoutBase(baseRepo, sha, dir);
    return dir;
  };
  const outside = path.join(work, 'outside');
  mkdirSync(outside);
  const patchFile = (name: string, text: string) => {
    const file = path.join(work, `${name}.diff`);
    writeFileSync(file, text);
    return file;
  };
  const refusedInOneLine = (error: unknown) => error instanceof GitError && /^the agent's patch does not apply to a clean checkout: /.test(error.message) && !error.message.includes('\n');

  it('a patch naming a path outside the repository is refused whole, in one line, and writes nothing', async () => {
    const dir = await clean('outside-path');
    const patch = patchFile('escape', `diff --git a/../outside/evil b/../outside/evil\nnew file mode 100644\n--- /dev/null\n+++ b/../outside/evil\n@@ -0,0 +1 @@\n+pwned\ndiff --git a/ok.txt b/ok.txt\nnew file mode 100644\n--- /dev/null\n+++ b/ok.txt\n@@ -0,0 +1 @@\n+fine\n`);
    await assert.rejects(applyPatch(dir, patch), refusedInOneLine);
    assert.deepEqual(readdirSync(outside), []);
    assert.equal(existsSync(path.join(dir, 'ok.txt')), false);
  });

  it('a patch that makes a symlink to a folder outside and writes through it is refused', async () => {
    const dir = await clean('through-link');
    const patch = patchFile('through', `diff --git a/door b/door\nnew file mode 120000\n--- /dev/null\n+++ b/door\n@@ -0,0 +1 @@\n+${outside}\n\\ No newline at end of file\ndiff --git a/door/evil b/door/evil\nnew file mode 100644\n--- /dev/null\n+++ b/door/evil\n@@ -0,0 +1 @@\n+pwned\n`);
    await assert.rejects(applyPatch(dir, patch), refusedInOneLine);
    assert.deepEqual(readdirSync(outside), []);
  });

  it('a patch that writes into .git is refused', async () => {
    const dir = await clean('into-git');
    const patch = patchFile('git', `diff --git a/.git/hooks/post-merge b/.git/hooks/post-merge\nnew file mode 100755\n--- /dev/null\n+++ b/.git/hooks/post-merge\n@@ -0,0 +1 @@\n+touch ${outside}/pwned\n`);
    await assert.rejects(applyPatch(dir, patch), refusedInOneLine);
    assert.equal(existsSync(path.join(dir, '.git', 'hooks', 'post-merge')), false);
  });

  it('a change larger than the limit is not kept: the patch file is not written and nothing is left in the scratch folder', async () => {
    const dir = await clean('huge');
    writeFileSync(path.join(dir, 'big.txt'), 'x'.repeat(300_000) + '\n');
    const out = path.join(work, 'huge-final', 'patch.diff');
    const scratch = path.join(work, 'huge-scratch');
    const captured = await capturePatch({ baseRepo, sha, worktree: dir, patchFile: out, maxBytes: 100_000, scratch });
    assert.equal(captured.tooLarge, true);
    assert.ok(captured.bytes > 300_000);
    assert.equal(existsSync(out), false);
    assert.deepEqual(readdirSync(scratch), []);
  });

  it('a link where a test file goes is replaced, never written through; so is a linked folder on the way', async () => {
    const dir = await clean('lay');
    const from = path.join(work, 'lay-from');
    mkdirSync(path.join(from, 'sub'), { recursive: true });
    writeFileSync(path.join(from, 'check.inc'), 'task check\n');
    writeFileSync(path.join(from, 'sub', 'deep.inc'), 'deep\n');
    symlinkSync(path.join(outside, 'target'), path.join(dir, 'check.inc'));
    symlinkSync(outside, path.join(dir, 'sub'));
    await layFiles(from, ['check.inc', 'sub/deep.inc'], dir);
    assert.deepEqual(readdirSync(outside), []);
    assert.equal(readFileSync(path.join(dir, 'check.inc'), 'utf8'), 'task check\n');
    assert.equal(lstatSync(path.join(dir, 'sub')).isDirectory(), true);
    await assert.rejects(layFiles(from, ['../escape'], dir), /not a plain relative path/);
  });
});

describe('Term Challenge repository tasks (container backend)', { skip: container instanceof Error ? container.message : false }, () => {
  const be = container as Exclude<typeof container, Error>;
  const runs = path.join(tmp.dir, 'runs-container');
  const run = async (mode: string, env: Record<string, string> = {}) => runFixture(be, runs, agent, { task: await loadTask(fixTask), protocol: 'sdk3', agentFolders: [nodeDir, agentDir], env: { AGENT_MODE: mode, ...env } });

  it('the checkout is /app, installed there; the fix is graded in a fresh container (reward 1), an edit of the tests is not (0)', async () => {
    const fixed = await run('fix-plain');
    assert.equal(fixed.result.reward, 1, fixed.result.error ?? '');
    const env = seen(fixed.result);
    assert.equal(env.installed, 'ok');
    assert.equal(env.TERM_BASE_COMMIT, BASE);
    assert.match(patchOf(fixed.result), /^\+mul\(\) \{ echo \$\(\( \$1 \* \$2 \)\); \}$/m);
    const cheated = await run('tests');
    assert.equal(cheated.result.reward, 0);
    assert.deepEqual(cheated.result.verification?.test_results.map((t) => [t.name, t.status]), [['test_add.sh', 'failed'], ['test_install.sh', 'passed'], ['test_mul.sh', 'failed']]);
  });

  it('the base image has git: the agent\'s own git diff and git commit work inside, on a history that ends at the base commit; its commit is graded (reward 1)', async () => {
    const { result } = await run('fix');
    assert.equal(result.reward, 1, result.error ?? '');
    const env = seen(result);
    assert.equal(env.head, BASE);
    assert.deepEqual(env.log, [BASE]);
    assert.match(readFileSync(runFiles(result.run_dir).agentStderr, 'utf8'), /^DIFF "calc\.sh \| 4 \+\+--\\n 1 file changed, 2 insertions\(\+\), 2 deletions\(-\)"$/m);
    assert.match(patchOf(result), /^\+add\(\) \{ echo \$\(\( \$1 \+ \$2 \)\); \}$/m);
  });

  it('an agent that sets core.fsmonitor, core.hooksPath, a filter driver and an includeIf with the image\'s git: none of them runs when its patch is captured and graded', async () => {
    const marker = path.join(tmp.dir, 'git-marker-container');
    await hostileGitChecked(await run('hostile-git', { MARKER: marker }), marker);
  });
});
