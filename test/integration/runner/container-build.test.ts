import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync, chmodSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import type { Engine } from '../../../src/runner/core/backends/engine.ts';
import { BASE_IMAGE } from '../../../src/runner/core/backends/image-base.ts';
import { buildFailureSummary, CappedLog, contextHash, dockerfileInstructions, failedInstruction, imageSource, mainService, taskImage, taskImageName } from '../../../src/runner/core/backends/image-task.ts';
import { engineWithBase, uniqueName } from '../../support/runner/container-helpers.ts';
import { tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-build-');
const found = await engineWithBase();
const skip = found instanceof Error ? found.message : false;
const built: string[] = [];
after(async () => {
  if (!(found instanceof Error) && built.length > 0) await found.run(['rmi', '-f', ...built], { timeoutMs: 120_000 });
  tmp.remove();
});

const MULTI_STAGE = `# syntax=docker/dockerfile:1
# A comment before everything
FROM ${BASE_IMAGE} AS one
RUN echo one \\
  # a comment inside a continuation
  && true

FROM ${BASE_IMAGE}
COPY --from=one /etc/hostname /x
RUN <<EOF
echo in a heredoc
EOF
RUN echo hi && \\
    exit 3
RUN echo never
`;

describe('Dockerfile lines', () => {
  it('finds each instruction and the line it starts on', () => {
    const instructions = dockerfileInstructions(MULTI_STAGE);
    assert.deepEqual(
      instructions.map((i) => [i.line, i.keyword]),
      [
        [3, 'FROM'],
        [4, 'RUN'],
        [8, 'FROM'],
        [9, 'COPY'],
        [10, 'RUN'],
        [13, 'RUN'],
        [15, 'RUN'],
      ],
    );
    assert.equal(instructions[1]!.text, 'RUN echo one && true');
  });

  it('understands the escape directive', () => {
    const instructions = dockerfileInstructions('# escape=`\nFROM x\nRUN a `\n  b\nRUN c\n');
    assert.deepEqual(instructions.map((i) => [i.line, i.text]), [[2, 'FROM x'], [3, 'RUN a b'], [5, 'RUN c']]);
  });

  it('names the failed instruction from podman, docker and BuildKit logs', () => {
    const podman = '[1/2] STEP 1/2: FROM x AS one\n[1/2] STEP 2/2: RUN echo one\n[2/2] STEP 1/5: FROM x\n[2/2] STEP 2/5: COPY a b\n[2/2] STEP 3/5: RUN <<EOF\n[2/2] STEP 4/5: RUN echo hi && exit 3\nError: building at STEP "RUN echo hi && exit 3": exit status 3';
    assert.equal(failedInstruction(podman, MULTI_STAGE)?.line, 13);
    assert.equal(failedInstruction('STEP 1/2: FROM x\nSTEP 2/2: RUN false\nError: exit status 1', 'FROM x\n\nRUN false\n')?.line, 3);
    const classic = 'Step 1/3 : FROM x\n ---> abc\nStep 2/3 : RUN false\nThe command \'/bin/sh -c false\' returned a non-zero code: 1';
    assert.equal(failedInstruction(classic, 'FROM x\n# c\nRUN false\nRUN true\n')?.line, 3);
    const buildkit = ' > [2/3] RUN false:\n------\nDockerfile:3\n--------------------\n   1 |     FROM x\n>>> RUN false\nERROR: failed to solve: process "/bin/sh -c false" did not complete successfully: exit code: 1';
    assert.equal(failedInstruction(buildkit, 'FROM x\n# c\nRUN false\nRUN true\n')?.text, 'RUN false');
    assert.equal(failedInstruction('Error: no such file', 'FROM x\n'), undefined);
  });
});

describe('a failed build in words', () => {
  it('says the end of the output the same way for podman and docker, without docker\'s notices', () => {
    const docker = [
      'DEPRECATED: The legacy builder is deprecated and will be removed in a future release.',
      '            Install the buildx component to build images with BuildKit:',
      '            https://docs.docker.com/go/buildx/',
      '',
      "The command '/bin/sh -c echo building && exit 42' returned a non-zero code: 42",
    ].join('\n');
    assert.equal(buildFailureSummary(docker), "The command '/bin/sh -c echo building && exit 42' returned a non-zero code: 42 (exit status 42)");
    const podman = 'STEP 3/3: RUN echo building && exit 42\nbuilding\nError: building at STEP "RUN echo building && exit 42": while running runtime: exit status 42\n';
    assert.equal(buildFailureSummary(podman), 'STEP 3/3: RUN echo building && exit 42 building Error: building at STEP "RUN echo building && exit 42": while running runtime: exit status 42');
  });
});

describe('task image names and sources', () => {
  it('makes a valid image name from any task name', () => {
    assert.equal(taskImageName('Hello World!', 'abc'), 'localhost/belay-task-hello-world-:abc');
    assert.equal(taskImageName('../../etc', '1'), 'localhost/belay-task-etc:1');
    assert.equal(taskImageName('', '1'), 'localhost/belay-task-task:1');
  });

  it('picks the compose service the agent runs in', () => {
    assert.equal(mainService({ db: { build: '.' }, client: { container_name: 'x' } }), 'client');
    assert.equal(mainService({ db: null, app: { container_name: '${T_BENCH_TASK_DOCKER_CLIENT_CONTAINER_NAME}' } }), 'app');
    assert.equal(mainService({ db: null, web: { build: '.' } }), 'web');
  });

  it('reads both layouts and compose files, and refuses a context outside the task', async () => {
    const current = tmp.writeTask('current', { 'task.toml': '', 'environment/Dockerfile': 'FROM x\n' });
    assert.deepEqual(await imageSource(current, 'current'), { kind: 'dockerfile', dockerfile: path.join(current, 'environment', 'Dockerfile'), context: path.join(current, 'environment'), origin: path.join(current, 'environment', 'Dockerfile') });
    const bare = tmp.writeTask('bare', { 'task.toml': '' });
    assert.deepEqual(await imageSource(bare, 'current'), { kind: 'base' });
    const compose = tmp.writeTask('compose', {
      'task.yaml': '',
      'docker-compose.yaml': 'services:\n  client:\n    build:\n      context: ./image\n      dockerfile: Build.dockerfile\n    image: ${T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME}\n',
    });
    assert.deepEqual(await imageSource(compose, 'legacy'), {
      kind: 'dockerfile',
      dockerfile: path.join(compose, 'image', 'Build.dockerfile'),
      context: path.join(compose, 'image'),
      origin: path.join(compose, 'docker-compose.yaml'),
    });
    const named = tmp.writeTask('named', { 'task.yaml': '', 'docker-compose.yml': 'services:\n  client:\n    image: ghcr.io/example/task:1\n' });
    assert.deepEqual(await imageSource(named, 'legacy'), { kind: 'image', image: 'ghcr.io/example/task:1', origin: path.join(named, 'docker-compose.yml') });
    const escaping = tmp.writeTask('escaping', { 'task.yaml': '', 'docker-compose.yaml': 'services:\n  client:\n    build: ../..\n' });
    await assert.rejects(imageSource(escaping, 'legacy'), /docker-compose\.yaml: service 'client' builds from outside the task folder/);
    const broken = tmp.writeTask('broken', { 'task.yaml': '', 'docker-compose.yaml': 'services: [1, 2]\n' });
    await assert.rejects(imageSource(broken, 'legacy'), /docker-compose\.yaml: field 'services': /);
    const legacy = tmp.writeTask('legacy', { 'task.yaml': '', Dockerfile: 'FROM x\n' });
    assert.equal((await imageSource(legacy, 'legacy')).kind, 'dockerfile');
  });

  it('hashes the build context: any change of a name, a content or an executable bit changes it', async () => {
    const dir = tmp.writeTask('hash', { Dockerfile: 'FROM x\n', 'data/a.txt': 'a', 'b.sh': 'echo' });
    const dockerfile = path.join(dir, 'Dockerfile');
    const first = await contextHash(dir, dockerfile);
    assert.equal(await contextHash(dir, dockerfile), first);
    writeFileSync(path.join(dir, 'data', 'a.txt'), 'A');
    const second = await contextHash(dir, dockerfile);
    assert.notEqual(second, first);
    chmodSync(path.join(dir, 'b.sh'), 0o755);
    assert.notEqual(await contextHash(dir, dockerfile), second);
  });

  it('caps a log on disk, keeping its head and tail', () => {
    const file = path.join(tmp.dir, 'capped.log');
    const log = new CappedLog(file, 400);
    for (let i = 0; i < 1000; i++) log.write(`line ${i}\n`);
    log.close();
    const text = readFileSync(file, 'utf8');
    assert.ok(statSync(file).size < 600, `${statSync(file).size} bytes`);
    assert.match(text, /^line 0\n/);
    assert.match(text, /\[… \d+ characters of the log omitted …\]/);
    assert.match(text, /line 999\n$/);
  });
});

describe('task image builds (real engine)', { skip }, () => {
  const engine = found as Engine;
  const options = (taskDir: string, taskName: string) => ({ engine, taskName, taskDir, logFile: path.join(taskDir, 'build.log'), timeoutMs: 300_000 });

  it('builds from the base image, then finds the same context again without building', async () => {
    const name = uniqueName('build-ok');
    const dir = tmp.writeTask(name, { 'task.toml': '', 'environment/Dockerfile': `FROM ${BASE_IMAGE}\nCOPY data.txt /app/data.txt\nRUN echo built > /built\n`, 'environment/data.txt': 'data\n' });
    const source = await imageSource(dir, 'current');
    assert.equal(source.kind, 'dockerfile');
    const notices: string[] = [];
    const first = await taskImage({ ...options(dir, name), source: source as Exclude<typeof source, { kind: 'base' }>, onNotice: (m) => notices.push(m) });
    built.push(first.image);
    assert.equal(first.cached, false);
    assert.match(first.image, new RegExp(`^localhost/belay-task-${name}:[0-9a-f]{16}$`));
    assert.match(notices.join('\n'), /building the task's image .* from environment\/Dockerfile with (podman|docker)/);
    assert.match(readFileSync(path.join(dir, 'build.log'), 'utf8'), /RUN echo built > \/built/);
    const out = await engine.check(['run', '--rm', ...engine.isolationFlags(), first.image, 'cat', '/app/data.txt', '/built'], { timeoutMs: 60_000 });
    assert.equal(out, 'data\nbuilt\n');
    const again = await taskImage({ ...options(dir, name), source: source as Exclude<typeof source, { kind: 'base' }> });
    assert.deepEqual(again, { image: first.image, cached: true });
  });

  it('names the Dockerfile line of a failing build, and keeps the log', async () => {
    const name = uniqueName('build-fail');
    // podman 4.3 (Debian 12) does not know heredocs: the real build leaves them out.
    const dir = tmp.writeTask(name, { 'task.toml': '', 'environment/Dockerfile': MULTI_STAGE.replace('RUN <<EOF\necho in a heredoc\nEOF\n', 'RUN echo first\n\n\n') });
    const source = await imageSource(dir, 'current');
    await assert.rejects(
      taskImage({ ...options(dir, name), source: source as Exclude<typeof source, { kind: 'base' }> }),
      (e: unknown) => e instanceof Error && /^environment\/Dockerfile:13: RUN echo hi && exit 3: the image build failed: .*exit status 3.* \(build log: .*build\.log\)$/.test(e.message),
    );
    assert.match(readFileSync(path.join(dir, 'build.log'), 'utf8'), /^hi$/m);
  });

  it('has no network while building', async () => {
    const name = uniqueName('build-net');
    const dir = tmp.writeTask(name, { 'task.toml': '', 'environment/Dockerfile': `FROM ${BASE_IMAGE}\nRUN python3 -c "import socket; socket.create_connection(('1.1.1.1', 53), 3)"\n` });
    const source = await imageSource(dir, 'current');
    await assert.rejects(taskImage({ ...options(dir, name), source: source as Exclude<typeof source, { kind: 'base' }> }), /environment\/Dockerfile:2: RUN python3 .*the image build failed/);
    assert.match(readFileSync(path.join(dir, 'build.log'), 'utf8'), /Network is unreachable|No route|unreachable/i);
  });

  it('says how to get an image a compose file names but the engine lacks', async () => {
    const dir = tmp.writeTask(uniqueName('named'), { 'task.yaml': '', 'docker-compose.yaml': 'services:\n  client:\n    image: localhost/belay-never-built:1\n' });
    const source = await imageSource(dir, 'legacy');
    await assert.rejects(
      taskImage({ ...options(dir, 'named'), source: source as Exclude<typeof source, { kind: 'base' }> }),
      /^Error: docker-compose\.yaml: the image localhost\/belay-never-built:1 is not in (podman|docker)'s storage, and Belay does not pull images/,
    );
  });
});
