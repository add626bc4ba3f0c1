// Harbor 1.4's task.toml fields of the final state: `artifacts` and the verifier's own environment.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { loadTask, TaskError } from '../../../src/runner/core/tasks/task.ts';
import { tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-task14-');
after(() => tmp.remove());

const task = (name: string, toml: string) => tmp.writeTask(name, { 'task.toml': toml, 'instruction.md': 'Do it.', 'tests/test.sh': 'true\n' });

describe("task.toml's artifacts and verifier environment", () => {
  it('reads artifacts as paths or { source, destination }, and the separate verifier with its resources', async () => {
    const loaded = await loadTask(task('full', 'artifacts = ["/app/out", { source = "/app/r.txt", destination = "reports/r.txt" }]\n[verifier]\nenvironment_mode = "separate"\n[verifier.environment]\ncpus = 2\nmemory_mb = 1024\n'));
    assert.deepEqual(loaded.artifacts, [{ source: '/app/out' }, { source: '/app/r.txt', destination: 'reports/r.txt' }]);
    assert.deepEqual(loaded.verifierEnvironment, { cpus: 2, memoryMb: 1024, storageMb: undefined });
  });

  it('takes a [verifier.environment] alone as asking for a separate one, and leaves a task without either as it was', async () => {
    assert.deepEqual((await loadTask(task('implied', '[verifier.environment]\nstorage_mb = 100\n'))).verifierEnvironment, { cpus: undefined, memoryMb: undefined, storageMb: 100 });
    const plain = await loadTask(task('plain', '[verifier]\nenvironment_mode = "shared"\n'));
    assert.equal(plain.verifierEnvironment, undefined);
    assert.equal(plain.artifacts, undefined);
  });

  it("refuses, in one line naming the field, a path with '..', an absolute destination and 'shared' with an environment", async () => {
    const cases: [string, string, RegExp][] = [
      ['up', 'artifacts = ["/app/../etc/passwd"]\n', /field 'artifacts\.0': an artifact's path must not contain '\.\.'/],
      ['abs', 'artifacts = [{ source = "out", destination = "/etc/x" }]\n', /field 'artifacts\.0\.destination': an artifact's destination must be a relative path without '\.\.'/],
      ['shared', '[verifier]\nenvironment_mode = "shared"\n[verifier.environment]\ncpus = 1\n', /field 'verifier': environment_mode 'shared' cannot have a \[verifier\.environment\]/],
      ['mode', '[verifier]\nenvironment_mode = "elsewhere"\n', /field 'verifier\.environment_mode'/],
    ];
    for (const [name, toml, says] of cases) {
      await assert.rejects(loadTask(task(name, toml)), (e: unknown) => e instanceof TaskError && says.test(e.message) && !e.message.includes('\n'), name);
    }
  });
});
