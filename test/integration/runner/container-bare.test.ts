// A task image with nothing but the task's own programs: no shell, no python3, no perl (the base
// image with them deleted). The container's executor needs none of them: an SDK 1.x agent (a
// host Node shown read-only) runs there, and its commands, which name programs directly, run
// as the words they are.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import type { Backend } from '../../../src/runner/core/backends/backend.ts';
import type { Engine } from '../../../src/runner/core/backends/engine.ts';
import { BASE_IMAGE } from '../../../src/runner/core/backends/image-base.ts';
import { runFiles } from '../../../src/runner/core/records/records.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';
import { containerForFile, uniqueName } from '../../support/runner/container-helpers.ts';
import { agentFile, nodeAgent, nodeDir, runFixture, tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-container-bare-');
const { found, skip, backend } = await containerForFile(() => tmp.remove());

/** Deleted with find's exec form (no shell is needed to delete the shell). */
const STRIP = ['/usr/bin/find', '/usr/bin', '/usr/sbin', '/usr/local/bin', '(', '-name', 'sh', '-o', '-name', 'bash', '-o', '-name', 'rbash', '-o', '-name', 'dash', '-o', '-name', 'perl*', '-o', '-name', 'python*', ')', '-delete'];

describe('container backend: an image with no shell, python3 or perl', { skip }, () => {
  it('runs an SDK 1.x agent whose commands name programs directly; what needs a shell says it could not start', async () => {
    const engine = found as Engine;
    const dir = tmp.writeTask(uniqueName('bare'), {
      'task.toml': '[agent]\ntimeout_sec = 120\n[verifier]\ntimeout_sec = 30\n',
      'instruction.md': 'Make /app/made.txt.',
      'environment/Dockerfile': `FROM ${BASE_IMAGE}\nWORKDIR /app\nRUN ["/usr/bin/touch", "/app/image.txt"]\nRUN ${JSON.stringify(STRIP)}\n`,
      'tests/test.sh': 'test -e /app/made.txt\n',
    });
    const commands = [
      "/usr/bin/touch '/app/made.txt'",
      'ls -A /app',
      '/bin/sh -c true',
      'bash -c true',
      'perl -e 1',
      'python3 -c pass',
      'cat /does/not/exist',
    ];
    const agentDir = path.dirname(agentFile('commands.mjs'));
    const { result } = await runFixture(backend as Backend, path.join(tmp.dir, 'runs'), nodeAgent('commands.mjs'), {
      task: await loadTask(dir),
      agentCwd: agentDir,
      agentFolders: [nodeDir, agentDir],
      env: { AGENT_COMMANDS: JSON.stringify(commands) },
    });
    assert.equal(result.agent_completed, true, `${result.failure_cause}: ${result.error}`);
    assert.equal(result.steps, commands.length + 1);
    const trajectory = JSON.parse(readFileSync(runFiles(result.run_dir).trajectory, 'utf8')) as { screen: string | null; exit_code: number | null }[];
    /** What command `index` printed: the screen of the next request. */
    const screen = (index: number) => trajectory[index + 1]!.screen ?? '';
    assert.equal(trajectory[0]!.exit_code, 0);
    assert.match(screen(1), /^image\.txt\nmade\.txt$/m, 'the words ran as a program with its arguments');
    for (const [index, program] of [[2, '/bin/sh'], [3, 'bash'], [4, 'perl'], [5, 'python3']] as const) {
      assert.match(screen(index), new RegExp(`could not start the command: ${program.replace('/', '\\/')}: .*not found`), `${commands[index]}: ${screen(index)}`);
    }
    assert.match(screen(6), /cat: \/does\/not\/exist: No such file or directory\n\[exit code: 1\]/, 'stderr is in the output, the exit code is told');
    // The final /app comes back as always; the tests (a shell script) cannot run in such an image.
    assert.equal(existsSync(path.join(runFiles(result.run_dir).workspace, 'made.txt')), true);
    const left = await engine.run(['ps', '--all', '--filter', `label=belay.run=${result.run_id}`, '--format', '{{.Names}}'], { timeoutMs: 60_000 });
    assert.equal(left.stdout.text('').trim(), '', 'no container is left');
  });
});
