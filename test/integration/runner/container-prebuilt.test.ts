// A task whose `[environment] docker_image` names a prebuilt image (Harbor runs it without
// building): on the container backend the run uses that image as it is, its own /app included;
// an image the engine does not hold ends the run before the agent, in one line saying to pull it,
// and nothing of the run is left in the engine.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import type { Backend } from '../../../src/runner/core/backends/backend.ts';
import { LABELS } from '../../../src/runner/core/backends/container.ts';
import type { Engine } from '../../../src/runner/core/backends/engine.ts';
import { BASE_IMAGE } from '../../../src/runner/core/backends/image-base.ts';
import { runFiles } from '../../../src/runner/core/records/records.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';
import { containerForFile, uniqueName } from '../../support/runner/container-helpers.ts';
import { nodeAgent, runFixture, tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-prebuilt-');
const made: string[] = [];
const { found, skip, backend } = await containerForFile(async () => {
  if (!(found instanceof Error) && made.length > 0) await found.run(['rmi', '-f', ...made], { timeoutMs: 120_000 });
  tmp.remove();
});

describe('a task naming a prebuilt image ([environment] docker_image)', { skip }, () => {
  it('runs in that image as it is, its own /app included, without building the Dockerfile beside it', async () => {
    const engine = found as Engine;
    const image = `localhost/${uniqueName('belay-prebuilt')}:1`;
    const context = path.join(tmp.dir, 'prebuilt-context');
    tmp.writeTask('prebuilt-context', { Containerfile: `FROM ${BASE_IMAGE}\nRUN echo from-the-prebuilt-image > /app/prebuilt.txt\n` });
    await engine.check(['build', '--network=none', '--tag', image, '--file', path.join(context, 'Containerfile'), context], { timeoutMs: 300_000 });
    made.push(image);
    const dir = tmp.writeTask(uniqueName('prebuilt'), {
      'task.toml': `[environment]\ndocker_image = "${image}"\n[agent]\ntimeout_sec = 120\n`,
      'instruction.md': 'Copy prebuilt.txt to out.txt.',
      // Harbor uses the named image and never builds this: a build would fail at its RUN.
      'environment/Dockerfile': `FROM ${BASE_IMAGE}\nRUN exit 7\n`,
      'tests/test.sh': '#!/bin/sh\n[ "$(cat /app/out.txt)" = from-the-prebuilt-image ]\n',
    });
    const { result } = await runFixture(backend as Backend, path.join(tmp.dir, 'runs'), nodeAgent('commands.mjs'), {
      task: await loadTask(dir),
      env: { AGENT_COMMANDS: JSON.stringify(['cp /app/prebuilt.txt /app/out.txt']) },
    });
    assert.equal(result.passed, true, `${result.failure_cause}: ${result.error ?? ''} ${result.verification?.output ?? ''}`);
    assert.equal(readFileSync(path.join(runFiles(result.run_dir).workspace, 'out.txt'), 'utf8'), 'from-the-prebuilt-image\n');
  });

  it('an image the engine does not hold: one line saying to pull it, no agent started, nothing left', async () => {
    const engine = found as Engine;
    const image = `localhost/${uniqueName('belay-never-built')}:1`;
    const dir = tmp.writeTask(uniqueName('missing'), {
      'task.toml': `[environment]\ndocker_image = "${image}"\n`,
      'instruction.md': 'Anything.',
      'tests/test.sh': '#!/bin/sh\ntrue\n',
    });
    const { result } = await runFixture(backend as Backend, path.join(tmp.dir, 'runs-missing'), nodeAgent('commands.mjs'), {
      task: await loadTask(dir),
      env: { AGENT_COMMANDS: JSON.stringify(['touch /app/started']) },
    });
    assert.equal(result.passed, false);
    assert.equal(result.failure_cause, 'setup_error', result.error ?? '');
    assert.match(result.error ?? '', new RegExp(`the image ${image.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is not in ${engine.name}'s storage, and Belay does not pull images: pull it first`));
    assert.ok(!(result.error ?? '').includes('\n'), 'one line');
    assert.deepEqual([result.steps, result.agent_completed], [0, false], 'the agent never started');
    const left = await engine.check(['ps', '--all', '--filter', `label=${LABELS.run}=${path.basename(result.run_dir)}`, '--format', '{{.Names}}'], { timeoutMs: 60_000 });
    assert.equal(left.trim(), '', 'the run left a container');
  });
});
