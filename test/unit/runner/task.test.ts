import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { discoverTasks, loadTask, seedWorkspace, stageTests, TaskError } from '../../../src/runner/core/tasks/task.ts';
import { fixtures, taskDir, tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir();
after(() => tmp.remove());

const writeTask = (name: string, files: Record<string, string>) => tmp.writeTask(name, files);

describe('task loading', () => {
  it('loads the current layout with its timeouts and metadata', async () => {
    const task = await loadTask(taskDir('hello'));
    assert.equal(task.layout, 'current');
    assert.equal(task.name, 'hello');
    assert.match(task.instruction, /^Create a file named hello\.txt/);
    assert.equal(task.agentTimeoutSec, 60);
    assert.equal(task.testTimeoutSec, 30);
    assert.equal(task.testScript, 'test.sh');
    assert.deepEqual(task.metadata.tags, ['hello', 'fixture']);
    assert.ok(task.solutionScript?.endsWith(path.join('solution', 'solve.sh')));
  });

  it('loads the older layout (task.yaml, run-tests.sh + tests/, solution.sh)', async () => {
    const task = await loadTask(taskDir('legacy-hello'));
    assert.equal(task.layout, 'legacy');
    assert.equal(task.instruction, 'Create a file named hello.txt in the working directory\ncontaining exactly "Hello, world!".');
    assert.equal(task.agentTimeoutSec, 45);
    assert.equal(task.testTimeoutSec, 20);
    assert.equal(task.testScript, 'run-tests.sh');
    assert.ok(task.solutionScript?.endsWith('solution.sh'));
  });

  it('uses the harness defaults when timeouts are absent', async () => {
    const dir = writeTask('defaults', { 'task.toml': '', 'instruction.md': 'Do it.', 'tests/test.sh': 'exit 0' });
    const task = await loadTask(dir);
    assert.equal(task.agentTimeoutSec, 600);
    assert.equal(task.testTimeoutSec, 600);
    const legacy = await loadTask(writeTask('legacy-defaults', { 'task.yaml': 'instruction: Do it.\n', 'run-tests.sh': 'exit 0' }));
    assert.equal(legacy.agentTimeoutSec, 360);
    assert.equal(legacy.testTimeoutSec, 60);
  });

  it('names the file and the field of a broken task', async () => {
    const badTimeout = writeTask('bad-timeout', { 'task.toml': '[agent]\ntimeout_sec = "soon"\n', 'instruction.md': 'x', 'tests/test.sh': '' });
    await assert.rejects(loadTask(badTimeout), (e: unknown) => e instanceof TaskError && e.file === path.join(badTimeout, 'task.toml') && /field 'agent\.timeout_sec'/.test(e.message));
    const badToml = writeTask('bad-toml', { 'task.toml': '[agent\n', 'instruction.md': 'x', 'tests/test.sh': '' });
    await assert.rejects(loadTask(badToml), /bad-toml\/task\.toml: line 1, column \d+: /);
    const noInstruction = writeTask('no-instruction', { 'task.yaml': 'difficulty: easy\n', 'run-tests.sh': '' });
    await assert.rejects(loadTask(noInstruction), /no-instruction\/task\.yaml: field 'instruction'/);
    const noTests = writeTask('no-tests', { 'task.toml': '', 'instruction.md': 'x' });
    await assert.rejects(loadTask(noTests), /no-tests\/tests\/test\.sh: missing/);
    const emptyInstruction = writeTask('empty-instruction', { 'task.toml': '', 'instruction.md': '  \n', 'tests/test.sh': '' });
    await assert.rejects(loadTask(emptyInstruction), /instruction\.md: the instruction is empty/);
    await assert.rejects(loadTask(tmp.dir), /not a task/);
  });

  it('discovers every task under folders and keeps broken ones as errors', async () => {
    const { tasks, errors } = await discoverTasks([path.join(fixtures, 'tasks')]);
    assert.deepEqual(tasks.map((t) => t.name), ['hello', 'legacy-hello', 'partial']);
    assert.equal(errors.length, 0);
    const mixed = await discoverTasks([tmp.dir, taskDir('hello')]);
    assert.ok(mixed.tasks.some((t) => t.name === 'hello'));
    assert.ok(mixed.errors.some((e) => e.file.endsWith(path.join('bad-timeout', 'task.toml'))));
  });

  it('seeds the working directory from the environment without Docker files, and stages tests apart', async () => {
    const current = await loadTask(taskDir('hello'));
    const workspace = path.join(tmp.dir, 'ws-current');
    await seedWorkspace(current, workspace);
    assert.equal(readFileSync(path.join(workspace, 'seed.txt'), 'utf8'), 'seeded from environment/\n');
    assert.equal(existsSync(path.join(workspace, 'Dockerfile')), false);
    assert.equal(existsSync(path.join(workspace, 'tests')), false);

    const legacy = await loadTask(taskDir('legacy-hello'));
    const legacyWs = path.join(tmp.dir, 'ws-legacy');
    await seedWorkspace(legacy, legacyWs);
    assert.ok(existsSync(path.join(legacyWs, 'notes.txt')));
    for (const hidden of ['task.yaml', 'Dockerfile', 'run-tests.sh', 'solution.sh', 'tests']) {
      assert.equal(existsSync(path.join(legacyWs, hidden)), false, `${hidden} must not be seeded`);
    }
    const staged = path.join(tmp.dir, 'staged');
    await stageTests(legacy, staged);
    assert.ok(existsSync(path.join(staged, 'run-tests.sh')));
    assert.ok(existsSync(path.join(staged, 'check.sh')));
  });
});
