import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { run as imageCommand } from '../../../src/cli/image.ts';
import { UsageError } from '../../../src/cli/io.ts';
import { subcommands } from '../../../src/cli/registry.ts';
import type { Engine } from '../../../src/runner/core/backends/engine.ts';
import { BASE_IMAGE, BASE_PACKAGES, buildBaseImage, mmdebstrapArgs, recipeHash } from '../../../src/runner/core/backends/image-base.ts';
import { cacheDir, engineWithBase, uniqueName } from '../../support/runner/container-helpers.ts';
import { tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-image-');
after(() => tmp.remove());
const found = await engineWithBase();
const skip = found instanceof Error ? found.message : false;

describe('base image recipe', () => {
  it('holds the packages agents and tests assume and changes its hash with them', () => {
    const recipe = { suite: 'bookworm', mirror: 'http://deb.debian.org/debian', packages: BASE_PACKAGES };
    assert.deepEqual([...BASE_PACKAGES].slice(0, 3), ['bash', 'coreutils', 'python3']);
    // git for repository tasks' agents, procps for Claude Code, pip for an agent's requirements.txt.
    for (const name of ['git', 'procps', 'python3-pip']) assert.ok(BASE_PACKAGES.includes(name as (typeof BASE_PACKAGES)[number]), name);
    assert.equal(recipeHash(recipe), recipeHash({ ...recipe }));
    assert.notEqual(recipeHash(recipe), recipeHash({ ...recipe, packages: [...BASE_PACKAGES, 'curl'] }));
    assert.notEqual(recipeHash(recipe), recipeHash({ ...recipe, mirror: 'http://mirror.example/debian' }));
    const args = mmdebstrapArgs(recipe, '/out/rootfs.tar');
    assert.deepEqual(args.slice(0, 2), ['--variant=minbase', '--include=bash,coreutils,python3,libstdc++6,git,procps,python3-pip']);
    assert.deepEqual(args.slice(-3), ['bookworm', '/out/rootfs.tar', 'http://deb.debian.org/debian']);
  });
});

/** An mmdebstrap stand-in: writes a tar of a one-file tree where the real one writes the root file system. */
function fakeMmdebstrap(name: string, body: string): string {
  const file = path.join(tmp.dir, name);
  writeFileSync(file, `#!/bin/sh\nfor a; do prev2=$prev1; prev1=$a; done\nout=$prev2\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

describe('belay image', () => {
  it('is listed among the subcommands and refuses an unknown engine or action', async () => {
    assert.ok(subcommands.some((s) => s.name === 'image' && /base image/.test(s.summary)));
    const io = { stdin: new PassThrough(), stdout: new PassThrough(), stderr: new PassThrough(), env: process.env, cwd: tmp.dir };
    await assert.rejects(imageCommand(['build-base', '--engine', 'lxc'], io), (e: unknown) => e instanceof UsageError && /--engine: .*podman, docker or auto \(got 'lxc'\)/.test(e.message));
    await assert.rejects(imageCommand(['build', 'x'], io), (e: unknown) => e instanceof UsageError && /unknown action 'build'; use build-base/.test(e.message));
    await assert.rejects(imageCommand(['build-base', 'extra'], io), /takes options only/);
  });
});

describe('base image build', { skip }, () => {
  const engine = found as Engine;

  it('is found again with the same recipe, and imported from the cached tar when the image is gone', async () => {
    const image = `localhost/${uniqueName('belay-test-base')}:bookworm`;
    const cache = path.join(tmp.dir, 'cache');
    const tree = path.join(tmp.dir, 'tree');
    mkdirSync(tree, { recursive: true });
    writeFileSync(path.join(tree, 'marker'), 'made by the stand-in\n');
    const mmdebstrap = fakeMmdebstrap('mmdebstrap-ok', `tar -C '${tree}' -cf "$out" .`);
    const steps: string[] = [];
    try {
      const first = await buildBaseImage({ engine, image, cacheDir: cache, mmdebstrap, onStep: (line) => steps.push(line) });
      assert.equal(first.source, 'packages');
      assert.match(steps.join('\n'), /making a Debian bookworm root file system \(bash, coreutils, python3, libstdc\+\+6, git, procps, python3-pip\)/);
      assert.equal(existsSync(first.rootfs), true);
      assert.deepEqual(readdirSync(cache), [path.basename(first.rootfs)], 'no partial file is left');
      const second = await buildBaseImage({ engine, image, cacheDir: cache, mmdebstrap: '/nonexistent/mmdebstrap' });
      assert.equal(second.source, 'image');
      await engine.check(['rmi', image], { timeoutMs: 60_000 });
      const third = await buildBaseImage({ engine, image, cacheDir: cache, mmdebstrap: '/nonexistent/mmdebstrap' });
      assert.equal(third.source, 'rootfs');
      const labels = await engine.check(['image', 'inspect', '--format', '{{index .Config.Labels "belay.base.recipe"}} {{.Config.WorkingDir}}', image], { timeoutMs: 60_000 });
      assert.equal(labels.trim(), `${first.recipe} /app`);
    } finally {
      await engine.run(['rmi', '-f', image], { timeoutMs: 60_000 });
    }
  });

  it('says what mmdebstrap said when it fails, and leaves no tar that looks complete', async () => {
    const cache = path.join(tmp.dir, 'cache-fail');
    const mmdebstrap = fakeMmdebstrap('mmdebstrap-fail', 'echo partial > "$out"; echo "E: cannot reach the mirror" >&2; exit 1');
    await assert.rejects(
      buildBaseImage({ engine, image: `localhost/${uniqueName('belay-test-never')}:x`, cacheDir: cache, mmdebstrap }),
      /^Error: mmdebstrap failed: E: cannot reach the mirror$/,
    );
    assert.deepEqual(readdirSync(cache), []);
  });

  it('`belay image build-base` finds the base image built from the cache', async () => {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let out = '';
    let err = '';
    stdout.on('data', (chunk) => (out += chunk));
    stderr.on('data', (chunk) => (err += chunk));
    const code = await imageCommand(['build-base', '--cache', cacheDir], { stdin: new PassThrough(), stdout, stderr, env: process.env, cwd: tmp.dir });
    assert.equal(code, 0, err);
    assert.match(out, new RegExp(`^${BASE_IMAGE.replace(/[.]/g, '\\.')}: already built with this recipe \\(\\d+\\.\\d s\\)\\n$`));
    assert.match(err, /with podman|with docker/);
  });
});
