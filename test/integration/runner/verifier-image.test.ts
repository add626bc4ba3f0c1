// The verifier's own image (Harbor 1.4: tests/Dockerfile with tests/ as its context, or a prebuilt
// `[verifier.environment] docker_image`) on the container backend: built through the task image's
// build (no network, bounded, cached by content), run with the final state at /app and nothing of
// the agent's or the host's; a regrade builds and uses the verifier's current image; a build that
// tries the network, a link out of tests/ and an image the engine does not hold each fail in one
// line. A multi-step task in separate mode verifies each step in a fresh environment of that step's
// final state (the step's own environment first), which the next step never sees. The sandbox has
// no images: it says so in one line and verifies in the task's environment.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import type { Backend } from '../../../src/runner/core/backends/backend.ts';
import { containerBackend } from '../../../src/runner/core/backends/container.ts';
import { BASE_IMAGE } from '../../../src/runner/core/backends/image-base.ts';
import { createJob, runJob } from '../../../src/runner/core/jobs/job.ts';
import { regradeJob, RegradeRecordSchema } from '../../../src/runner/core/regrade/regrade.ts';
import type { RunResult } from '../../../src/runner/core/records/records.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';
import { openVerifierEnvironment } from '../../../src/runner/core/run/verifierEnvironment.ts';
import type { Engine } from '../../../src/runner/core/backends/engine.ts';
import { engineWithBase, removeTestImages, uniqueName } from '../../support/runner/container-helpers.ts';
import { nodeAgent, nodeDir, repoRoot, runFixture, sandboxOrReason, tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-verifier-image-');
const found = await engineWithBase();
const skip = found instanceof Error ? found.message : false;
const backend: Backend | Error = found instanceof Error ? found : await containerBackend({ engine: found.name }).catch((error: Error) => error);
const sandbox = await sandboxOrReason();
after(async () => {
  if (!(found instanceof Error)) await removeTestImages(found);
  tmp.remove();
});

/** The images of the engine whose name holds `part`. */
async function imagesNamed(part: string): Promise<string[]> {
  if (found instanceof Error) return [];
  const listed = await found.run(['images', '--format', '{{.Repository}}:{{.Tag}}'], { timeoutMs: 60_000 });
  return listed.stdout.text('').split('\n').filter((image) => image.includes(part));
}

/** A test script that fails, saying why, unless `checks` (shell tests) all hold. */
const testScript = (checks: [string, string][], after = '') => `#!/bin/sh\necho "marker: $(cat /verifier-marker 2>/dev/null || echo none)"\n${checks.map(([test, why]) => `${test} || { echo "${why}"; exit 1; }\n`).join('')}${after}`;

/** Host paths the verifier must not find: the agent's folders, the run records, the task folders. */
const hostPaths = () => [repoRoot, nodeDir, tmp.dir].map((p): [string, string] => [`[ ! -e '${p}' ]`, `the host's ${p} is here`]);

describe("container backend: the verifier's own image", { skip }, () => {
  it('builds tests/Dockerfile (context tests/) and verifies in it with only the final state at /app; a regrade builds and uses its current version', async () => {
    const container = backend as Backend;
    const name = uniqueName('vimg');
    const dir = tmp.writeTask(name, {
      'task.toml': '[agent]\ntimeout_sec = 120\n[verifier]\ntimeout_sec = 60\nenvironment_mode = "separate"\n',
      'instruction.md': 'Write hello.txt.',
      'tests/Dockerfile': `FROM ${BASE_IMAGE}\nRUN echo v1 > /verifier-marker\nCOPY . /verifier-tests/\n`,
      'tests/test.sh': testScript([
        ['[ "$(cat /verifier-marker)" = v1 ]', "not the verifier's image v1"],
        ['[ -f /verifier-tests/test.sh ]', 'the image was not built from tests/'],
        ['[ "$(cat /app/hello.txt)" = hi ]', 'the final state is not at /app'],
        ['[ ! -e /tmp/agent-marker ]', "the agent's /tmp is here"],
        ...hostPaths(),
      ]),
    });
    const task = await loadTask(dir);
    const jobDir = await createJob({ jobsDir: path.join(tmp.dir, 'jobs'), tasks: [task], settings: { agent: 'commands', protocol: 'sdk1', backend: 'container', attempts: 1, options: {} } });
    let result: RunResult | undefined;
    await runJob({
      jobDir,
      tasks: [task],
      concurrency: 1,
      runTrial: async ({ task, runId, runsDir, signal, onEvent }) =>
        (result = (
          await runFixture(container, runsDir, nodeAgent('commands.mjs'), {
            task,
            runId,
            signal,
            onEvent,
            env: { AGENT_COMMANDS: JSON.stringify(['echo hi > /app/hello.txt && touch /tmp/agent-marker']) },
          })
        ).result),
    });
    const run = result!;
    assert.equal(run.passed, true, `${run.error ?? ''} ${run.verification?.output ?? ''}`);
    assert.match(run.notes!.join('\n'), /^the verifier ran in an environment of its own \(container .*, of tests\/Dockerfile\), holding only the final working folder$/m);
    // Its build log is kept with the run; its image is the task's name and the context's hash.
    assert.match(readFileSync(path.join(run.run_dir, 'verifier-environment.log'), 'utf8'), /v1|STEP|COPY/);
    assert.equal((await imagesNamed(`belay-task-${name}-verifier:`)).length, 1);
    assert.equal(existsSync(path.join(run.run_dir, 'verifier-env')), false);

    // The verifier's image changes (its marker is v2 now): the regrade builds it and the same tests fail there.
    writeFileSync(path.join(dir, 'tests', 'Dockerfile'), `FROM ${BASE_IMAGE}\nRUN echo v2 > /verifier-marker\nCOPY . /verifier-tests/\n`);
    const report = await regradeJob({ jobDir, backend: container });
    assert.deepEqual([report.changed, report.down, report.mean_before, report.mean_after], [1, 1, 1, 0], JSON.stringify(report.trials));
    const regraded = RegradeRecordSchema.parse(JSON.parse(readFileSync(path.join(jobDir, report.trials[0]!.file!), 'utf8')));
    assert.match(regraded.verification.output, /^marker: v2$/m);
    assert.match(regraded.verification.output, /^not the verifier's image v1$/m);
    assert.equal((await imagesNamed(`belay-task-${name}-verifier:`)).length, 2);
  });

  it("ends the run with setup_error in one line when the verifier's build tries the network, keeping the agent's work and leaving nothing of the verifier", async () => {
    const name = uniqueName('vnet');
    const dir = tmp.writeTask(name, {
      'task.toml': '[agent]\ntimeout_sec = 120\n[verifier]\ntimeout_sec = 60\nenvironment_mode = "separate"\n',
      'instruction.md': 'Write hello.txt.',
      'tests/test.sh': 'exit 0\n',
      'tests/Dockerfile': `FROM ${BASE_IMAGE}\nRUN getent hosts deb.debian.org || exit 7\n`,
    });
    const { result } = await runFixture(backend as Backend, path.join(tmp.dir, 'runs-refused'), nodeAgent('commands.mjs'), {
      task: await loadTask(dir),
      env: { AGENT_COMMANDS: JSON.stringify(['echo hi > /app/hello.txt']) },
    });
    assert.equal(result.failure_cause, 'setup_error', result.error ?? '');
    assert.match(result.error ?? '', /^the verifier's environment could not be opened: tests\/Dockerfile:2: RUN getent hosts deb\.debian\.org \|\| exit 7: the image build failed: .*exit status 7.* \(build log: .*verifier-environment\.log\)$/);
    assert.ok(!(result.error ?? '').includes('\n'));
    assert.equal(result.verification, null);
    // The agent's work is kept (a regrade may grade it once the verifier's image is fixed); nothing of the verifier is left.
    assert.equal(readFileSync(path.join(result.run_dir, 'final', 'workdir', 'hello.txt'), 'utf8'), 'hi\n');
    assert.equal(existsSync(path.join(result.run_dir, 'verifier-env')), false);
    assert.deepEqual(await imagesNamed(`belay-task-${name}-verifier:`), []);
  });

  it('refuses, in one line and before the engine builds or creates anything, a link out of tests/, a FIFO, a build context of too many entries, a docker_image the engine does not hold', async () => {
    const cases: [string, Record<string, string>, (dir: string) => void, RegExp][] = [
      ['vlink', { 'tests/Dockerfile': `FROM ${BASE_IMAGE}\nCOPY . /tests/\n` }, (dir) => symlinkSync('/etc', path.join(dir, 'tests', 'host-etc')), /^tests\/host-etc: a symlink in the build context: refused \(its files must be the task's own\)$/],
      ['vfifo', { 'tests/Dockerfile': `FROM ${BASE_IMAGE}\nCOPY . /tests/\n` }, (dir) => execFileSync('mkfifo', [path.join(dir, 'tests', 'pipe')]), /^tests\/pipe: neither a file nor a folder in the build context: refused$/],
      [
        'vhuge',
        { 'tests/Dockerfile': `FROM ${BASE_IMAGE}\nCOPY . /tests/\n` },
        (dir) => {
          mkdirSync(path.join(dir, 'tests', 'data'));
          for (let i = 0; i <= 20_000; i++) writeFileSync(path.join(dir, 'tests', 'data', `f${i}`), '');
        },
        /^tests: more than 20000 entries in the build context: refused$/,
      ],
      [
        'vpull',
        { 'task.toml': '[verifier.environment]\ndocker_image = "localhost/belay-never-built:none"\n' },
        () => undefined,
        /^task\.toml: the image localhost\/belay-never-built:none is not in (podman|docker)'s storage, and Belay does not pull images: pull it first/,
      ],
    ];
    for (const [prefix, files, prepare, says] of cases) {
      const name = uniqueName(prefix);
      const dir = tmp.writeTask(name, { 'task.toml': '[verifier]\nenvironment_mode = "separate"\n', 'instruction.md': 'Write hello.txt.', 'tests/test.sh': 'exit 0\n', ...files });
      prepare(dir);
      const task = await loadTask(dir);
      const work = path.join(tmp.dir, 'refused', name);
      mkdirSync(path.join(work, 'final'), { recursive: true });
      writeFileSync(path.join(work, 'final', 'hello.txt'), 'hi\n');
      const runId = `refused-${name}`;
      await assert.rejects(
        openVerifierEnvironment({ backend: backend as Backend, task, runId, finalDir: path.join(work, 'final'), envDir: path.join(work, 'env'), tests: path.join(work, 'tests'), logs: path.join(work, 'logs'), hidden: [dir] }),
        (e: unknown) => e instanceof Error && says.test(e.message) && !e.message.includes('\n'),
        prefix,
      );
      assert.deepEqual(await imagesNamed(`belay-task-${name}-verifier:`), [], prefix);
      const containers = await (found as Engine).run(['ps', '--all', '--filter', `label=belay.run=${runId}`, '--format', '{{.Names}}'], { timeoutMs: 60_000 });
      assert.equal(containers.stdout.text('').trim(), '', prefix);
    }
  });
});

/** A two-step task in separate mode: step one's verifier writes into its /app (which must stay its own); step two verifies in `stepTwoImage`. */
function twoStepTask(name: string, image: { taskMarker: string | undefined; stepTwo: string | undefined }): string {
  const marker = (expected: string | undefined): [string, string] => (expected === undefined ? ['[ ! -e /verifier-marker ]', 'a verifier image is here'] : [`[ "$(cat /verifier-marker)" = ${expected} ]`, `not the verifier image ${expected}`]);
  return tmp.writeTask(name, {
    'task.toml': `[agent]\ntimeout_sec = 120\n[verifier]\ntimeout_sec = 60\nenvironment_mode = "separate"\n\n[[steps]]\nname = "one"\n\n[[steps]]\nname = "two"\n${image.stepTwo ? `[steps.verifier.environment]\ndocker_image = "${image.stepTwo}"\n` : ''}`,
    ...(image.taskMarker ? { 'tests/Dockerfile': `FROM ${BASE_IMAGE}\nRUN echo ${image.taskMarker} > /verifier-marker\n` } : {}),
    'steps/one/instruction.md': 'Write one.\nRUN: echo one > /app/log.txt\n',
    'steps/one/tests/test.sh': testScript([marker(image.taskMarker), ['[ "$(cat /app/log.txt)" = one ]', 'step one left no log'], ...hostPaths()], 'echo written by the verifier > /app/verifier-was-here\n'),
    'steps/two/instruction.md': 'Append two, where no verifier wrote.\nRUN: [ ! -e /app/verifier-was-here ] && echo two >> /app/log.txt\n',
    'steps/two/tests/test.sh': testScript([
      marker(image.stepTwo ? undefined : image.taskMarker),
      ['[ "$(cat /app/log.txt | tr "\\n" " ")" = "one two " ]', 'step two left no log'],
      ['[ ! -e /app/verifier-was-here ]', "step one's verifier wrote into the shared environment"],
    ]),
  });
}

/** What every separate multi-step run must show: both steps passed, each graded on its own kept state, the verifier's writes nowhere. */
function assertSeparateSteps(run: RunResult): void {
  assert.equal(run.passed, true, `${run.error ?? ''} ${run.verification?.output ?? ''} ${run.notes?.join('\n') ?? ''}`);
  assert.deepEqual(run.task_steps?.map((s) => [s.name, s.reward, s.final?.dir]), [['one', 1, 'final/steps/one/workdir'], ['two', 1, 'final/steps/two/workdir']]);
  assert.equal(readFileSync(path.join(run.run_dir, 'final', 'steps', 'one', 'workdir', 'log.txt'), 'utf8'), 'one\n');
  assert.equal(readFileSync(path.join(run.run_dir, 'final', 'steps', 'two', 'workdir', 'log.txt'), 'utf8'), 'one\ntwo\n');
  for (const where of [['app'], ['final', 'workdir'], ['final', 'steps', 'one', 'workdir'], ['final', 'steps', 'two', 'workdir']]) {
    assert.equal(existsSync(path.join(run.run_dir, ...where, 'verifier-was-here')), false, where.join('/'));
  }
  assert.equal(existsSync(path.join(run.run_dir, 'verifier-env')), false);
}

describe('container backend: a multi-step task in separate mode', { skip }, () => {
  it("verifies each step in a fresh environment of its final state, the step's docker_image before the task's tests/Dockerfile", async () => {
    const name = uniqueName('vsteps');
    const { result } = await runFixture(backend as Backend, path.join(tmp.dir, 'runs-steps'), nodeAgent('instructed.mjs'), {
      task: await loadTask(twoStepTask(name, { taskMarker: 'task-verifier', stepTwo: BASE_IMAGE })),
    });
    assertSeparateSteps(result);
    const notes = result.notes!.join('\n');
    assert.match(notes, /^step 'one': the verifier ran in an environment of its own \(container .*, of tests\/Dockerfile\)/m);
    assert.match(notes, new RegExp(`^step 'two': the verifier ran in an environment of its own \\(container .*, of the image ${BASE_IMAGE.replace(/[.]/g, '\\.')}\\)`, 'm'));
    assert.ok(existsSync(path.join(result.run_dir, 'task-steps', 'one', 'verifier-environment.log')));
  });
});

describe('sandbox backend: no images', { skip: sandbox instanceof Error ? sandbox.message : false }, () => {
  it("says so in one line and verifies each step in a fresh environment of the task's kind, which the next step never sees", async () => {
    const { result } = await runFixture(sandbox as Backend, path.join(tmp.dir, 'runs-sandbox'), nodeAgent('instructed.mjs'), {
      task: await loadTask(twoStepTask('sandbox-steps', { taskMarker: undefined, stepTwo: undefined })),
    });
    assertSeparateSteps(result);
    // With a tests/Dockerfile it cannot build, it says so in one line, and verifies in the task's environment.
    const dir = tmp.writeTask('sandbox-image', {
      'task.toml': '[verifier]\nenvironment_mode = "separate"\n',
      'instruction.md': 'Write hello.txt.',
      'tests/Dockerfile': `FROM ${BASE_IMAGE}\nRUN echo v1 > /verifier-marker\n`,
      'tests/test.sh': testScript([['[ ! -e /verifier-marker ]', 'an image is here'], ['[ "$(cat /app/hello.txt)" = hi ]', 'no final state at /app']]),
    });
    const { result: single } = await runFixture(sandbox as Backend, path.join(tmp.dir, 'runs-sandbox'), nodeAgent('commands.mjs'), {
      task: await loadTask(dir),
      env: { AGENT_COMMANDS: JSON.stringify(['echo hi > /app/hello.txt']) },
    });
    assert.equal(single.passed, true, `${single.error ?? ''} ${single.verification?.output ?? ''}`);
    assert.ok(single.notes!.includes("the sandbox backend has no images: the verifier runs in the task's environment, not in tests/Dockerfile (use the container backend for it)"), single.notes!.join('\n'));
    assert.match(single.notes!.join('\n'), /^the verifier ran in an environment of its own \(sandbox[^\n]*\), holding only the final working folder$/m);
  });
});
