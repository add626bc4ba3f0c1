import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { runFiles } from '../../../src/runner/core/records/records.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';
import { containerOrReason } from '../../support/runner/container-helpers.ts';
import { fixtures, nodeAgent, runFixture, tempDir } from '../../support/runner/helpers.ts';

// Resolved before any test is registered: node:test runs root hooks early after a top-level await.
const backend = await containerOrReason();
const skip = backend instanceof Error ? backend.message : false;
const tmp = tempDir('belay-steps-container-');
after(() => tmp.remove());
const stepsDir = (name: string) => path.join(fixtures, 'multi-step', name);

describe('multi-step runs (container backend)', { skip }, () => {
  const be = backend as Exclude<typeof backend, Error>;
  const runs = path.join(tmp.dir, 'runs');

  it('runs each step in a fresh container of the base image over the same workspace', async () => {
    const { result } = await runFixture(be, runs, nodeAgent('instructed.mjs'), { task: await loadTask(stepsDir('steps-two')) });
    assert.equal(result.passed, true, result.error ?? '');
    assert.deepEqual(result.task_steps?.map((s) => [s.name, s.reward]), [['01-write', 1], ['02-extend', 1]]);
    assert.equal(readFileSync(path.join(runFiles(result.run_dir).workspace, 'log.txt'), 'utf8'), 'one\ntwo\n');
  });

  it('refuses a multi-step task with its own image: each container would start from its /app', async () => {
    const dir = path.join(tmp.dir, 'own-image');
    tmp.writeTask('own-image', {
      'task.toml': '[[steps]]\nname = "one"\n',
      'environment/Dockerfile': 'FROM localhost/belay-base:bookworm\nWORKDIR /app\n',
      'steps/one/instruction.md': 'RUN: true\n',
      'steps/one/tests/test.sh': 'exit 0\n',
    });
    writeFileSync(path.join(dir, 'environment', 'seed.txt'), 'seed');
    const { result } = await runFixture(be, runs, nodeAgent('instructed.mjs'), { task: await loadTask(dir) });
    assert.equal(result.failure_cause, 'setup_error');
    assert.equal(result.error, 'a multi-step task with its own image keeps its work between steps only on the sandbox or local backend');
    assert.equal(result.task_steps?.[0]?.failure_cause, 'setup_error');
  });
});
