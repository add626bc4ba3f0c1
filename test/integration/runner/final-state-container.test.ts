// The final state and the verifier's own environment on the container backend, with a task that
// builds its own image: the agent's /app is kept (final/workdir), and the verifier runs in a
// fresh container of that image whose /app holds the final state, without the agent's /tmp or
// processes; a regrade grades that kept state again in another fresh container. Artifacts outside
// /app come out of the stopped container through the engine's copy, checked as the final state is.
import assert from 'node:assert/strict';
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import type { Backend } from '../../../src/runner/core/backends/backend.ts';
import { containerBackend } from '../../../src/runner/core/backends/container.ts';
import { BASE_IMAGE } from '../../../src/runner/core/backends/image-base.ts';
import { createJob, runJob } from '../../../src/runner/core/jobs/job.ts';
import { protocolNamed } from '../../../src/runner/core/protocols/index.ts';
import { regradeJob } from '../../../src/runner/core/regrade/regrade.ts';
import { runTask } from '../../../src/runner/core/run/run.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';
import { containerForFile, uniqueName } from '../../support/runner/container-helpers.ts';
import { agentFile, fastLimits, nodeAgent, nodeDir, repoRoot, runFixture, tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-final-container-');
const { found, skip, backend } = await containerForFile(() => tmp.remove());

describe('container backend: final state and a separate verifier', { skip }, () => {
  it("keeps /app, verifies in a fresh container of the task's image holding only it, and regrades it there", async () => {
    const container = backend as Backend;
    const dir = tmp.writeTask(uniqueName('separate'), {
      'task.toml': '[agent]\ntimeout_sec = 120\n[verifier]\ntimeout_sec = 60\nenvironment_mode = "separate"\n',
      'instruction.md': 'Write hello.txt.',
      'environment/Dockerfile': `FROM ${BASE_IMAGE}\nWORKDIR /app\nRUN echo image > /app/from-image.txt\n`,
      'tests/test.sh': '#!/bin/sh\necho "in $(pwd): $(ls /app | tr "\\n" " ")"\n[ "$(cat /app/hello.txt)" = hi ] || exit 1\n[ ! -e /tmp/agent-marker ] || { echo "the agent\'s /tmp is here"; exit 1; }\n[ ! -e /app/from-image.txt ] || { echo "the image\'s /app is here"; exit 1; }\n',
    });
    const task = await loadTask(dir);
    const jobDir = await createJob({ jobsDir: path.join(tmp.dir, 'jobs'), tasks: [task], settings: { agent: 'commands', protocol: 'sdk1', backend: 'container', attempts: 1, options: {} } });
    let result;
    await runJob({
      jobDir,
      tasks: [task],
      concurrency: 1,
      runTrial: async ({ task, runId, runsDir, signal, onEvent }) =>
        (result = await runTask({
          task,
          agentCommand: `'${process.execPath}' '${agentFile('commands.mjs')}'`,
          agentCwd: repoRoot,
          agentFolders: [nodeDir],
          protocol: protocolNamed('sdk1'),
          backend: container,
          runsDir,
          runId,
          limits: fastLimits,
          env: { AGENT_COMMANDS: JSON.stringify(['echo hi > /app/hello.txt && touch /tmp/agent-marker && rm /app/from-image.txt']) },
          signal,
          onEvent,
        })),
    });
    const run = result!;
    assert.equal(run.passed, true, `${run.error ?? ''} ${run.verification?.output ?? ''}`);
    assert.match(run.notes!.join('\n'), /the verifier ran in an environment of its own/);
    assert.equal(readFileSync(path.join(run.run_dir, 'final', 'workdir', 'hello.txt'), 'utf8'), 'hi\n');
    assert.deepEqual(run.final && [run.final.files, run.final.skipped], [1, []]);
    // The verifier's container and its copy of the state are gone (a rootless container's files included).
    assert.equal(existsSync(path.join(run.run_dir, 'verifier-env')), false);
    // A verifier that fails the kept state: one regrade in a fresh container, down.
    writeFileSync(path.join(dir, 'tests', 'test.sh'), '#!/bin/sh\n[ "$(cat /app/hello.txt)" = bye ]\n');
    const report = await regradeJob({ jobDir, backend: container });
    assert.deepEqual([report.changed, report.down, report.mean_before, report.mean_after], [1, 1, 1, 0], JSON.stringify(report.trials));
  });
});

/** Every path under `dir` (relative), links not followed. */
function tree(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => [prefix + entry.name, ...(entry.isDirectory() ? tree(path.join(dir, entry.name), `${prefix}${entry.name}/`) : [])])
    .sort();
}

describe('container backend: artifacts outside /app', { skip }, () => {
  const commands = (extra = '') => ({
    AGENT_COMMANDS: JSON.stringify([`echo hi > /app/hello.txt && mkdir -p /tmp/out && echo all good > /tmp/out/report.txt && ln -s /etc/passwd /tmp/out/passwd && mkfifo /tmp/out/pipe${extra}`]),
  });
  const task = (name: string) =>
    loadTask(
      tmp.writeTask(uniqueName(name), {
        'task.toml': 'artifacts = ["/tmp/out/", "/proc/1/environ"]\n[agent]\ntimeout_sec = 120\n[verifier]\ntimeout_sec = 60\n',
        'instruction.md': 'Write a report.',
        'tests/test.sh': '#!/bin/sh\n[ "$(cat /app/hello.txt)" = hi ]\n',
      }),
    );

  it('collects /tmp/out through the engine: the report copied, the link to /etc/passwd kept as a link, a FIFO and a file past the bounds skipped, each listed', async () => {
    const { result } = await runFixture(backend as Backend, path.join(tmp.dir, 'runs-artifacts'), nodeAgent('commands.mjs'), {
      task: await task('artifacts'),
      // A 64 MB budget keeps 16 MB of files: the 20 MB file is past it.
      limits: { diskBudgetBytes: 64 * 1024 * 1024 },
      env: commands(' && head -c 20000000 /dev/zero > /tmp/out/huge.bin'),
    });
    assert.equal(result.passed, true, `${result.error ?? ''} ${result.notes?.join('\n') ?? ''}`);
    const artifacts = path.join(result.run_dir, 'artifacts');
    assert.deepEqual(tree(artifacts), ['tmp', 'tmp/out', 'tmp/out/passwd', 'tmp/out/report.txt']);
    assert.equal(readFileSync(path.join(artifacts, 'tmp', 'out', 'report.txt'), 'utf8'), 'all good\n');
    assert.ok(lstatSync(path.join(artifacts, 'tmp', 'out', 'passwd')).isSymbolicLink());
    assert.equal(readlinkSync(path.join(artifacts, 'tmp', 'out', 'passwd')), '/etc/passwd');
    const skipped = result.artifacts!.skipped.join('\n');
    assert.match(skipped, /^\/tmp\/out\/pipe: a FIFO, not a file: not copied$/m);
    assert.match(skipped, /^\/tmp\/out\/huge\.bin: 20000000 bytes, past the 16777216 bytes the run keeps$/m);
    assert.match(skipped, /^\/proc\/1\/environ: under \/proc, which is no file of the environment's own: refused$/m);
    assert.equal(result.artifacts!.skipped.length, 3, skipped);
    assert.deepEqual(readdirSync(result.run_dir).filter((entry) => entry.startsWith('.artifact-staging-')), [], 'the staging folder is gone');
  });

  it('copies nothing out of a container that wrote more than its copy limit (no artifact either), and says so in one line', async () => {
    const small = await containerBackend({ engine: (found as { name: 'podman' | 'docker' }).name, workspaceCopyLimitBytes: 1024 * 1024 });
    const { result } = await runFixture(small, path.join(tmp.dir, 'runs-artifacts-big'), nodeAgent('commands.mjs'), {
      task: await task('artifacts-big'),
      env: commands(' && head -c 3000000 /dev/zero > /tmp/out/big.bin'),
    });
    assert.equal(existsSync(path.join(result.run_dir, 'artifacts')), false);
    assert.equal(result.artifacts, undefined);
    assert.match(result.notes?.join('\n') ?? '', /^the final state could not be kept: the container's \/app was not copied out \(it wrote more than 1 MB\)$/m);
  });
});
