// Term Challenge repository tasks as Belay reads them: workspace.yaml (zod over the YAML library
// the other layouts use), prompt.md, tests/*.sh; where the repository comes from (a local path or
// a mirror folder, never the network); the TERM_* variables.
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { mirrorsFromEnvironment, remoteKey, repoSource, termVariables } from '../../../src/runner/core/tasks/repoTask.ts';
import { discoverTasks, isTaskDir, loadTask, TaskError } from '../../../src/runner/core/tasks/task.ts';
import { configFileName, instructionFile } from '../../../src/runner/core/tasks/layout.ts';
import { tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-repo-unit-');
after(() => tmp.remove());

const PROMPT = 'The parser drops the last line.\n\nIt should keep it.\n';
const write = (name: string, workspace: string, extra: Record<string, string> = {}) =>
  tmp.writeTask(name, { 'workspace.yaml': workspace, 'prompt.md': PROMPT, 'tests/test_one.sh': 'exit 0\n', ...extra });
/** One line naming the file and what was wrong in it. */
const refused = (file: string, pattern: RegExp) => (error: unknown) =>
  error instanceof TaskError && error.message.startsWith(`${file}: `) && pattern.test(error.message) && !error.message.includes('\n');

describe('workspace.yaml tasks', () => {
  it('load beside the other layouts: repository, base commit, install list, hints, the tests and the files they bring', async () => {
    const dir = write('parser-fix', "repo: acme/parser\nversion: '1.2'\nbase_commit: 4f1c2ab9e0d3c7b6a5f4e3d2c1b0a9f8e7d6c5b4\ninstall:\n  - pip install -e .\n  - make\nlanguage: python\ndifficulty: Hard\nhints: look at the tokenizer\n", {
      'tests/test_two.sh': 'exit 0\n',
      'tests/unit/test_deep.sh': 'exit 0\n',
      'tests/unit/test_parser.py': 'def test(): pass\n',
    });
    assert.equal(isTaskDir(dir), true);
    const task = await loadTask(dir);
    assert.equal(task.layout, 'repo');
    assert.equal(task.name, 'parser-fix');
    assert.equal(task.instruction, PROMPT.trim());
    assert.equal(instructionFile(task), path.join(dir, 'prompt.md'));
    assert.equal(configFileName(task.layout), 'workspace.yaml');
    assert.deepEqual(task.repo, {
      repo: 'acme/parser',
      baseCommit: '4f1c2ab9e0d3c7b6a5f4e3d2c1b0a9f8e7d6c5b4',
      install: ['pip install -e .', 'make'],
      installTimeoutSec: 600,
      hints: 'look at the tokenizer',
      difficulty: 'Hard',
      testScripts: ['test_one.sh', 'test_two.sh', 'unit/test_deep.sh'],
      testFiles: ['unit/test_parser.py'],
      generatedTests: [],
    });
    assert.deepEqual([task.agentTimeoutSec, task.testTimeoutSec], [600, 300]);
    assert.equal(task.metadata.repo, 'acme/parser');
    assert.equal(task.solutionScript, undefined);
  });

  it('take one install command as a string, hints_text as SWE-bench spells it, and their own time limits', async () => {
    const task = await loadTask(write('one-install', 'repo: ./src\ninstall: npm ci\nhints_text: none really\nagent_timeout_sec: 90\ntest_timeout_sec: 30\ninstall_timeout_sec: 45\n'));
    assert.deepEqual(task.repo?.install, ['npm ci']);
    assert.equal(task.repo?.hints, 'none really');
    assert.equal(task.repo?.installTimeoutSec, 45);
    assert.deepEqual([task.agentTimeoutSec, task.testTimeoutSec], [90, 30]);
  });

  it('without a tests/*.sh, take checks.txt\'s commands, else fail_to_pass and pass_to_pass, each a test (as the executor does)', async () => {
    const swe = tmp.writeTask('swe', { 'workspace.yaml': "repo: ./x\nfail_to_pass:\n  - pytest tests/test_a.py::test_fix\npass_to_pass:\n  - pytest tests/test_b.py\n", 'prompt.md': 'Fix.' });
    const fromYaml = await loadTask(swe);
    assert.deepEqual(fromYaml.repo?.testScripts, ['fail_to_pass_0.sh', 'pass_to_pass_1.sh']);
    assert.deepEqual(fromYaml.repo?.generatedTests, [
      { name: 'fail_to_pass_0.sh', content: '#!/bin/sh\nset -e\npytest tests/test_a.py::test_fix\n' },
      { name: 'pass_to_pass_1.sh', content: '#!/bin/sh\nset -e\npytest tests/test_b.py\n' },
    ]);
    const checks = tmp.writeTask('checks', { 'workspace.yaml': 'repo: ./x\nfail_to_pass: [ignored]\n', 'prompt.md': 'Fix.', 'checks.txt': '# the checks\nmake test\n\n  ./run.sh  \n' });
    assert.deepEqual((await loadTask(checks)).repo?.generatedTests.map((t) => [t.name, t.content]), [['check_1.sh', '#!/bin/sh\nset -e\nmake test\n'], ['check_3.sh', '#!/bin/sh\nset -e\n./run.sh\n']]);
    // A script in tests/ wins over both.
    const both = tmp.writeTask('both', { 'workspace.yaml': 'repo: ./x\nfail_to_pass: [ignored]\n', 'prompt.md': 'Fix.', 'tests/t.sh': 'exit 0' });
    assert.deepEqual([(await loadTask(both)).repo?.testScripts, (await loadTask(both)).repo?.generatedTests], [['t.sh'], []]);
  });

  it('are found by discovery beside task.toml tasks, a broken one listed apart', async () => {
    const root = path.join(tmp.dir, 'mixed');
    tmp.writeTask('mixed/current', { 'task.toml': '', 'instruction.md': 'Do it.', 'tests/test.sh': 'exit 0' });
    tmp.writeTask('mixed/repo', { 'workspace.yaml': 'repo: ./x\n', 'prompt.md': 'Fix it.', 'tests/a.sh': 'exit 0' });
    tmp.writeTask('mixed/broken', { 'workspace.yaml': 'base_commit: main\n', 'prompt.md': 'Fix it.', 'tests/a.sh': 'exit 0' });
    const { tasks, errors } = await discoverTasks([root]);
    assert.deepEqual(tasks.map((t) => [t.name, t.layout]), [['current', 'current'], ['repo', 'repo']]);
    assert.equal(errors.length, 1);
    assert.match(errors[0]!.message, /broken\/workspace\.yaml: field 'repo': /);
  });

  it("have no network in either phase unless workspace.yaml's own fields say otherwise, read as task.toml's tables are", async () => {
    const none = await loadTask(write('net-none', 'repo: ./x\n'));
    assert.deepEqual(none.network, { agent: { mode: 'no-network', allowedHosts: [] }, verifier: { mode: 'no-network', allowedHosts: [] } });
    const verifier = await loadTask(write('net-verifier', 'repo: ./x\nverifier_network_mode: allowlist\nverifier_allowed_hosts: [pypi.org, "*.pythonhosted.org"]\n'));
    assert.deepEqual(verifier.network, { agent: { mode: 'no-network', allowedHosts: [] }, verifier: { mode: 'allowlist', allowedHosts: ['pypi.org', '*.pythonhosted.org'] } });
    // The baseline for both phases; a phase's own mode over it, and the baseline's hosts for an allowlist that names none.
    const both = await loadTask(write('net-both', 'repo: ./x\nnetwork_mode: allowlist\nallowed_hosts: [pypi.org]\nagent_network_mode: no-network\n'));
    assert.deepEqual(both.network, { agent: { mode: 'no-network', allowedHosts: [] }, verifier: { mode: 'allowlist', allowedHosts: ['pypi.org'] } });
    const file = (name: string) => path.join(tmp.dir, name, 'workspace.yaml');
    await assert.rejects(loadTask(write('net-mode', 'repo: ./x\nverifier_network_mode: internet\n')), refused(file('net-mode'), /field 'verifier_network_mode': must be one of "no-network", "allowlist", "public"/));
    await assert.rejects(loadTask(write('net-url', 'repo: ./x\nallowed_hosts: ["http://pypi.org/simple"]\n')), refused(file('net-url'), /field 'allowed_hosts\.0': .*is not a host/));
    await assert.rejects(loadTask(write('net-wild', 'repo: ./x\nagent_allowed_hosts: ["*.com"]\n')), refused(file('net-wild'), /field 'agent_allowed_hosts\.0': .*wildcard/));
  });

  it('a bad workspace.yaml is one line naming the file and the field', async () => {
    const file = (name: string) => path.join(tmp.dir, name, 'workspace.yaml');
    await assert.rejects(loadTask(write('no-repo', 'base_commit: main\n')), refused(file('no-repo'), /field 'repo': /));
    await assert.rejects(loadTask(write('option-commit', "repo: ./x\nbase_commit: '--upload-pack=touch /tmp/x'\n")), refused(file('option-commit'), /field 'base_commit': expected a commit id, a branch or a tag/));
    await assert.rejects(loadTask(write('number-commit', 'repo: ./x\nbase_commit: 1234567\n')), refused(file('number-commit'), /field 'base_commit': expected a commit id, a branch or a tag \(in quotes when YAML would read it as a number\)/));
    await assert.rejects(loadTask(write('bad-install', 'repo: ./x\ninstall:\n  - make\n  - 3\n')), refused(file('bad-install'), /field 'install/));
    await assert.rejects(loadTask(write('syntax', 'repo: [./x\n')), refused(file('syntax'), /line \d+, column \d+/));
    await assert.rejects(loadTask(write('dup', 'repo: ./x\nrepo: ./y\n')), refused(file('dup'), /line 2/));
  });

  it('need prompt.md with an issue in it and at least one tests/*.sh; a link in tests/ is refused', async () => {
    const noPrompt = tmp.writeTask('no-prompt', { 'workspace.yaml': 'repo: ./x\n', 'tests/a.sh': 'exit 0' });
    await assert.rejects(loadTask(noPrompt), refused(path.join(noPrompt, 'prompt.md'), /missing: a repository task's issue is prompt\.md/));
    const empty = tmp.writeTask('empty-prompt', { 'workspace.yaml': 'repo: ./x\n', 'prompt.md': '  \n', 'tests/a.sh': 'exit 0' });
    await assert.rejects(loadTask(empty), refused(path.join(empty, 'prompt.md'), /the issue is empty/));
    const noTests = tmp.writeTask('no-tests', { 'workspace.yaml': 'repo: ./x\n', 'prompt.md': 'Fix.', 'tests/helper.py': '' });
    await assert.rejects(loadTask(noTests), refused(path.join(noTests, 'tests'), /no test: a repository task runs every tests\/\*\.sh \(or the commands of checks\.txt, or of fail_to_pass and pass_to_pass\)$/));
    const linked = write('linked-test', 'repo: ./x\n');
    symlinkSync('/etc/passwd', path.join(linked, 'tests', 'z.sh'));
    await assert.rejects(loadTask(linked), refused(path.join(linked, 'tests', 'z.sh'), /not a regular file/));
  });
});

describe('where a repository comes from', () => {
  const taskDir = path.join(tmp.dir, 'tasks', 'one');
  mkdirSync(taskDir, { recursive: true });
  const project = path.join(tmp.dir, 'tasks', 'project');
  mkdirSync(project);
  const mirror = path.join(tmp.dir, 'mirror');
  mkdirSync(path.join(mirror, 'github.com', 'acme', 'widgets.git'), { recursive: true });
  mkdirSync(path.join(mirror, 'gitlab.example.org', 'team', 'tool'), { recursive: true });
  const other = path.join(tmp.dir, 'mirror2');
  mkdirSync(path.join(other, 'acme', 'gears.git'), { recursive: true });

  it('a local path: relative to the task folder, absolute, or file://; a missing one says where it looked', () => {
    assert.deepEqual(repoSource('../project', taskDir, []), { ok: true, path: project, via: 'path' });
    assert.deepEqual(repoSource(project, taskDir, []), { ok: true, path: project, via: 'path' });
    assert.deepEqual(repoSource(`file://${project}`, taskDir, []), { ok: true, path: project, via: 'path' });
    const missing = repoSource('./nowhere', taskDir, []);
    assert.deepEqual(missing, { ok: false, error: `./nowhere is not a folder on this machine (${path.join(taskDir, 'nowhere')})` });
  });

  it('a remote name is looked up in the mirror folders, in either layout, the first that holds it winning', () => {
    for (const name of ['acme/widgets', 'https://github.com/acme/widgets', 'https://github.com/acme/widgets.git', 'git@github.com:acme/widgets.git', 'ssh://git@github.com/acme/widgets']) {
      assert.deepEqual(repoSource(name, taskDir, [other, mirror]), { ok: true, path: path.join(mirror, 'github.com', 'acme', 'widgets.git'), via: 'mirror' }, name);
    }
    assert.deepEqual(repoSource('https://gitlab.example.org/team/tool', taskDir, [mirror]), { ok: true, path: path.join(mirror, 'gitlab.example.org', 'team', 'tool'), via: 'mirror' });
    assert.deepEqual(repoSource('acme/gears', taskDir, [mirror, other]), { ok: true, path: path.join(other, 'acme', 'gears.git'), via: 'mirror' });
  });

  it('a remote no mirror holds is one line saying how to name a mirror; nothing reaches the network', () => {
    assert.deepEqual(repoSource('https://github.com/acme/missing', taskDir, [mirror]), {
      ok: false,
      error: `https://github.com/acme/missing is a remote repository and no mirror folder holds it (looked in ${mirror}): Belay never fetches from the network; put a clone at <mirror>/github.com/acme/missing.git and name <mirror> in BELAY_GIT_MIRRORS`,
    });
  });

  it('names that climb out of a mirror folder, or are not repository names, are refused', () => {
    for (const name of ['https://github.com/../../etc', 'https://github.com/acme/..', 'acme/../x', 'just-a-word', 'https://github.com/acme/wid gets', '-uhttps://x/y/z']) {
      assert.equal(remoteKey(name), undefined, name);
      const found = repoSource(name, taskDir, [mirror]);
      assert.equal(found.ok, false, name);
    }
  });

  it('BELAY_GIT_MIRRORS lists folders as PATH does', () => {
    assert.deepEqual(mirrorsFromEnvironment({ BELAY_GIT_MIRRORS: `${mirror}${path.delimiter}${path.delimiter} ${other} ` }), [mirror, other]);
    assert.deepEqual(mirrorsFromEnvironment({}), []);
  });
});

describe('TERM_* variables', () => {
  it('are the ones Term Challenge gives its agents', () => {
    const repo = { repo: 'acme/parser', baseCommit: 'main', install: [], installTimeoutSec: 600, hints: 'h', difficulty: 'Easy', testScripts: ['a.sh'], testFiles: [], generatedTests: [] };
    assert.deepEqual(termVariables({ name: 'parser-fix', instruction: 'Fix it.', repo }, 'f'.repeat(40), 300), {
      TERM_TASK_ID: 'parser-fix',
      TERM_REPO: 'acme/parser',
      TERM_BASE_COMMIT: 'f'.repeat(40),
      TERM_ISSUE_TEXT: 'Fix it.',
      TERM_HINTS: 'h',
      TERM_TIMEOUT: '300',
      TERM_DIFFICULTY: 'Easy',
    });
    assert.equal('TERM_DIFFICULTY' in termVariables({ name: 'x', instruction: 'y', repo: { ...repo, difficulty: undefined } }, 'a', 1), false);
  });
});
