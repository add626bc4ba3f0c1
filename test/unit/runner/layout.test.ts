// The task layouts' file names in one place: what the views open, where a failed test points,
// what the watchers watch, and the rule and syntax of secret references.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { configFileName, instructionFile, TASK_FOLDER, TASK_MARKER_FILES, testScriptFile } from '../../../src/runner/core/tasks/layout.ts';
import { isSecretName, secretNames, secretReference } from '../../../src/runner/core/agents/secrets.ts';
import { brokenTaskLabel, loadTask, TaskError } from '../../../src/runner/core/tasks/task.ts';
import { taskDir } from '../../support/runner/helpers.ts';

describe('task layouts', () => {
  it('name the instruction and the test script of real tasks in both layouts, and both exist', async () => {
    const current = await loadTask(taskDir('hello'));
    const legacy = await loadTask(taskDir('legacy-hello'));
    assert.equal(instructionFile(current), path.join(current.dir, 'instruction.md'));
    assert.equal(testScriptFile(current), path.join(current.dir, 'tests', 'test.sh'));
    assert.equal(instructionFile(legacy), path.join(legacy.dir, 'task.yaml'));
    assert.equal(testScriptFile(legacy), path.join(legacy.dir, 'run-tests.sh'));
    for (const file of [instructionFile(current), testScriptFile(current), instructionFile(legacy), testScriptFile(legacy)]) assert.ok(existsSync(file), file);
    assert.deepEqual([configFileName(current.layout), configFileName(legacy.layout)], ['task.toml', 'task.yaml']);
  });

  it('watch the files that make or change a task, and say what a task folder is', () => {
    assert.deepEqual([...TASK_MARKER_FILES].sort(), ['instruction.md', 'prompt.md', 'run-tests.sh', 'task.toml', 'task.yaml', 'workspace.yaml']);
    assert.equal(TASK_FOLDER, 'a folder with task.toml, task.yaml or workspace.yaml');
  });

  it('label a broken task with its folder', () => {
    assert.equal(brokenTaskLabel(new TaskError('/ws/tasks/broken/task.toml', 'x')), 'broken');
    assert.equal(brokenTaskLabel(new TaskError('/task.toml', 'x')), '/task.toml');
  });
});

describe('secret references', () => {
  it('write and read ${secret:NAME} the same way, with one rule for names', () => {
    assert.equal(secretReference('OPENROUTER_API_KEY'), '${secret:OPENROUTER_API_KEY}');
    assert.deepEqual(secretNames([`Bearer ${secretReference('a.b-c_1')}`, '${secret:bad name}', secretReference('a.b-c_1')]), ['a.b-c_1']);
    assert.equal(isSecretName('a.b-c_1'), true);
    for (const bad of ['', 'two words', 'x/y', '${secret:x}']) assert.equal(isSecretName(bad), false, bad);
  });
});
