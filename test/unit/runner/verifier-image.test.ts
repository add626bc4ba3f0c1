// The verifier's own image as tasks describe it (Harbor 1.4: `[verifier.environment] docker_image`,
// tests/Dockerfile), a step's verifier environment resolved before the task's, and the build
// context's check (no link, nothing past its bounds) made before anything is read or built.
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { checkBuildContext, taskImageSource } from '../../../src/runner/core/backends/image-task.ts';
import { resolveVerifierEnvironment } from '../../../src/runner/core/run/verifierEnvironment.ts';
import { loadTask, TaskError } from '../../../src/runner/core/tasks/task.ts';
import { tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-verifier-image-');
after(() => tmp.remove());

const task = (name: string, toml: string, files: Record<string, string> = {}) =>
  tmp.writeTask(name, { 'task.toml': toml, 'instruction.md': 'Do it.', 'tests/test.sh': 'true\n', ...files });

describe("the verifier's image in task.toml", () => {
  it('builds from tests/Dockerfile (context tests/) in separate mode, and takes docker_image before it', async () => {
    const built = await loadTask(task('built', '[verifier]\nenvironment_mode = "separate"\n', { 'tests/Dockerfile': 'FROM x\n' }));
    const tests = path.join(built.dir, 'tests');
    assert.deepEqual(built.verifierEnvironment?.image, { kind: 'dockerfile', dockerfile: path.join(tests, 'Dockerfile'), context: tests, origin: path.join(tests, 'Dockerfile') });
    const named = await loadTask(task('named', '[verifier.environment]\ndocker_image = "registry.example/verifier:1.2@sha256:abc"\nbuild_timeout_sec = 30\n', { 'tests/Dockerfile': 'FROM x\n' }));
    assert.deepEqual(named.verifierEnvironment, { cpus: undefined, memoryMb: undefined, storageMb: undefined, buildTimeoutSec: 30, image: { kind: 'image', image: 'registry.example/verifier:1.2@sha256:abc', origin: path.join(named.dir, 'task.toml') } });
    // Without separate mode, tests/Dockerfile is only a file among the tests.
    assert.equal((await loadTask(task('shared', '', { 'tests/Dockerfile': 'FROM x\n' }))).verifierEnvironment, undefined);
  });

  it('refuses a docker_image that is no image name (an option, a blank) in one line naming the field', async () => {
    for (const [name, image] of [['option', '--privileged'], ['blank', 'a b'], ['empty', '']] as const) {
      await assert.rejects(
        loadTask(task(`bad-${name}`, `[verifier.environment]\ndocker_image = "${image}"\n`)),
        (e: unknown) => e instanceof TaskError && /task\.toml: field 'verifier\.environment\.docker_image'/.test(e.message) && !e.message.includes('\n'),
        name,
      );
    }
  });
});

describe("a step's verifier environment", () => {
  const steps = (toml: string) => `[[steps]]\nname = "one"\n${toml}\n[[steps]]\nname = "two"\n\n[[steps]]\nname = "three"\n[steps.verifier]\nenvironment_mode = "shared"\n`;

  it("is resolved before the task's: its docker_image, then its tests/Dockerfile, then the task's; 'shared' keeps it where the agent ran", async () => {
    const dir = task('steps', '[verifier]\nenvironment_mode = "separate"\n[verifier.environment]\ncpus = 1\nmemory_mb = 512\n' + steps('[steps.verifier.environment]\nmemory_mb = 256\ndocker_image = "localhost/step-one:1"\n'), {
      'tests/Dockerfile': 'FROM x\n',
      'steps/one/instruction.md': 'One.',
      'steps/two/instruction.md': 'Two.',
      'steps/two/tests/Dockerfile': 'FROM y\n',
      'steps/three/instruction.md': 'Three.',
    });
    const loaded = await loadTask(dir);
    const [one, two, three] = loaded.steps!.steps;
    const first = resolveVerifierEnvironment(loaded, one);
    assert.deepEqual([first?.cpus, first?.memoryMb, first?.image], [1, 256, { kind: 'image', image: 'localhost/step-one:1', origin: path.join(dir, 'task.toml') }]);
    const second = resolveVerifierEnvironment(loaded, two);
    assert.deepEqual([second?.cpus, second?.memoryMb, second?.image?.kind === 'dockerfile' && second.image.context], [1, 512, path.join(dir, 'steps', 'two', 'tests')]);
    assert.equal(resolveVerifierEnvironment(loaded, three), undefined);
    // The task's own, for a single-step view of it (regrade): its tests/Dockerfile.
    const own = resolveVerifierEnvironment(loaded);
    assert.equal(own?.image?.kind === 'dockerfile' && own.image.context, path.join(dir, 'tests'));
  });

  it("asks for a separate verifier by a step's own verifier.environment in a task that asks for none, and refuses 'shared' with one", async () => {
    const dir = task('step-only', '[[steps]]\nname = "one"\n[steps.verifier.environment]\nstorage_mb = 64\n[[steps]]\nname = "two"\n', { 'steps/one/instruction.md': 'One.', 'steps/two/instruction.md': 'Two.' });
    const loaded = await loadTask(dir);
    assert.deepEqual(resolveVerifierEnvironment(loaded, loaded.steps!.steps[0]), { cpus: undefined, memoryMb: undefined, storageMb: 64 });
    assert.equal(resolveVerifierEnvironment(loaded, loaded.steps!.steps[1]), undefined);
    await assert.rejects(
      loadTask(task('step-shared', '[[steps]]\nname = "one"\n[steps.verifier]\nenvironment_mode = "shared"\n[steps.verifier.environment]\ncpus = 1\n', { 'steps/one/instruction.md': 'One.' })),
      (e: unknown) => e instanceof TaskError && /field 'steps\.0\.verifier': environment_mode 'shared' cannot have a verifier\.environment/.test(e.message),
    );
  });
});

describe("a verifier image's build context", () => {
  const name = (file: string) => path.relative(tmp.dir, file);
  const bounds = { maxBytes: 1000, maxEntries: 10 };
  const context = (label: string, files: Record<string, string>) => {
    const dir = path.join(tmp.dir, 'contexts', label);
    mkdirSync(dir, { recursive: true });
    for (const [file, text] of Object.entries({ Dockerfile: 'FROM x\nCOPY . /tests\n', ...files })) {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      writeFileSync(path.join(dir, file), text);
    }
    return dir;
  };

  it('passes files and folders within the bounds', async () => {
    const dir = context('fine', { 'test.sh': 'true\n', 'data/a.txt': 'a' });
    await checkBuildContext(dir, path.join(dir, 'Dockerfile'), bounds, name);
  });

  it('refuses a link out of tests/ (deep or at the top), the Dockerfile as a link, more bytes or entries than the bounds, each in one line naming it', async () => {
    const deep = context('deep-link', { 'data/a.txt': 'a' });
    symlinkSync('/etc', path.join(deep, 'data', 'host'));
    const linkedFile = context('linked-dockerfile', {});
    symlinkSync('/etc/hostname', path.join(linkedFile, 'Linked'));
    const linkedDir = path.join(tmp.dir, 'contexts', 'linked-folder');
    symlinkSync(deep, linkedDir);
    const big = context('big', { 'blob.bin': 'x'.repeat(1001) });
    const many = context('many', Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`f${i}`, ''])));
    const cases: [string, string, RegExp][] = [
      [deep, path.join(deep, 'Dockerfile'), /^contexts\/deep-link\/data\/host: a symlink in the build context: refused/],
      [linkedFile, path.join(linkedFile, 'Linked'), /^contexts\/linked-dockerfile\/Linked: a symlink: a build context and its Dockerfile must be the task's own files/],
      [linkedDir, path.join(linkedDir, 'Dockerfile'), /^contexts\/linked-folder: a symlink/],
      [big, path.join(big, 'Dockerfile'), /^contexts\/big: more than 1000 bytes in the build context: refused$/],
      [many, path.join(many, 'Dockerfile'), /^contexts\/many: more than 10 entries in the build context: refused$/],
    ];
    for (const [dir, dockerfile, says] of cases) {
      await assert.rejects(checkBuildContext(dir, dockerfile, bounds, name), (e: unknown) => e instanceof Error && says.test(e.message) && !e.message.includes('\n'), dir);
    }
  });
});

describe("the task's own prebuilt image ([environment] docker_image)", () => {
  /** An engine that holds just the images named (imageExists is all the choice asks of it). */
  const engine = (...held: string[]) => ({ name: 'podman' as const, imageExists: async (image: string) => held.includes(image) });
  const IMAGE = 'registry.example/tasks/prebuilt:2.0';

  it('is used when the engine holds it, before environment/Dockerfile, as Harbor does', async () => {
    const loaded = await loadTask(task('prebuilt-held', `[environment]\ndocker_image = "${IMAGE}"\n`, { 'environment/Dockerfile': 'FROM x\n' }));
    assert.equal(loaded.environment.dockerImage, IMAGE);
    const notices: string[] = [];
    assert.deepEqual(await taskImageSource(engine(IMAGE), loaded, (m) => notices.push(m)), { kind: 'image', image: IMAGE, origin: path.join(loaded.dir, 'task.toml') });
    assert.deepEqual(notices, []);
  });

  it('not held: environment/Dockerfile is built instead, with one notice; with no Dockerfile the image is asked for (and its absence is one line)', async () => {
    const withFile = await loadTask(task('prebuilt-missing', `[environment]\ndocker_image = "${IMAGE}"\n`, { 'environment/Dockerfile': 'FROM x\n' }));
    const notices: string[] = [];
    const source = await taskImageSource(engine(), withFile, (m) => notices.push(m));
    assert.equal(source.kind, 'dockerfile');
    assert.deepEqual(notices, [`the task names the image ${IMAGE}, which podman does not hold (Belay does not pull images): building environment/Dockerfile instead`]);
    const bare = await loadTask(task('prebuilt-only', `[environment]\ndocker_image = "${IMAGE}"\n`));
    assert.deepEqual(await taskImageSource(engine(), bare), { kind: 'image', image: IMAGE, origin: path.join(bare.dir, 'task.toml') });
    // Without docker_image nothing changes: the Dockerfile, else the base image.
    assert.equal((await taskImageSource(engine(IMAGE), await loadTask(task('no-prebuilt', '', { 'environment/Dockerfile': 'FROM x\n' })))).kind, 'dockerfile');
    assert.equal((await taskImageSource(engine(IMAGE), await loadTask(task('no-files', '')))).kind, 'base');
  });

  it('refuses a docker_image that is no image name in one line naming the field', async () => {
    await assert.rejects(
      loadTask(task('prebuilt-bad', '[environment]\ndocker_image = "--privileged"\n')),
      (e: unknown) => e instanceof TaskError && /task\.toml: field 'environment\.docker_image'/.test(e.message) && !e.message.includes('\n'),
    );
  });
});
