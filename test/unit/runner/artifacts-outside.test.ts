// Artifacts outside the working folder, the part that is the same on every backend: what is refused
// before any backend is asked (/proc, /sys, /dev, `..`, the whole filesystem), a backend's refusal
// said in one line, the place it names copied with no link on the way followed, a link kept as a
// link, a huge file left out by the bounds, and the staging folder gone afterwards.
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import type { ArtifactPlace } from '../../../src/runner/core/backends/backend.ts';
import { collectArtifacts } from '../../../src/runner/core/run/finalState.ts';
import { tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-artifacts-outside-');
after(() => tmp.remove());

const bounds = { maxBytes: 1024 * 1024, maxEntries: 1000 };

describe('artifacts outside the working folder', () => {
  it('copies what the backend names, never through a link on the way, keeping links as links; a huge file is left out', async () => {
    const runDir = path.join(tmp.dir, 'run-1');
    const workspace = path.join(runDir, 'workspace');
    mkdirSync(workspace, { recursive: true });
    // The environment's /tmp, as the backend keeps it on the host.
    const envTmp = path.join(tmp.dir, 'env-tmp');
    mkdirSync(path.join(envTmp, 'out'), { recursive: true });
    writeFileSync(path.join(envTmp, 'out', 'report.txt'), 'report\n');
    symlinkSync('/etc/passwd', path.join(envTmp, 'out', 'passwd'));
    writeFileSync(path.join(envTmp, 'out', 'huge.bin'), '');
    truncateSync(path.join(envTmp, 'out', 'huge.bin'), 4 * 1024 * 1024);
    symlinkSync('/etc', path.join(envTmp, 'escape'));
    const asked: { inside: string; staging: string }[] = [];
    const outside = async (inside: string, staging: string): Promise<ArtifactPlace> => {
      asked.push({ inside, staging });
      if (inside.startsWith('/var/')) return { refused: 'not in a folder the environment could write' };
      return { root: envTmp, parts: path.posix.relative('/tmp', inside).split('/') };
    };
    const target = path.join(runDir, 'artifacts');
    const report = await collectArtifacts(
      [
        { source: '/tmp/out/' },
        { source: '/tmp/out/report.txt', destination: 'r.txt' },
        { source: '/tmp/escape/passwd' },
        { source: '/var/log/app.log' },
        { source: '/tmp/nothing' },
        { source: '/proc/self/environ' },
        { source: '/dev/zero' },
        { source: '/sys/kernel' },
        { source: '/' },
        { source: '/tmp/../etc/passwd' },
        { source: '../etc/passwd' },
      ],
      workspace,
      '/app',
      target,
      bounds,
      outside,
    );
    // Asked only for what could be the environment's own files; the trailing slash dropped.
    assert.deepEqual(asked.map((a) => a.inside), ['/tmp/out', '/tmp/out/report.txt', '/tmp/escape/passwd', '/var/log/app.log', '/tmp/nothing']);
    for (const { staging } of asked) assert.equal(path.dirname(staging), runDir);
    assert.deepEqual(readdirSync(runDir).sort(), ['artifacts', 'workspace'], 'no staging folder left');
    assert.equal(readFileSync(path.join(target, 'tmp', 'out', 'report.txt'), 'utf8'), 'report\n');
    assert.equal(readFileSync(path.join(target, 'r.txt'), 'utf8'), 'report\n');
    assert.ok(lstatSync(path.join(target, 'tmp', 'out', 'passwd')).isSymbolicLink());
    assert.equal(readlinkSync(path.join(target, 'tmp', 'out', 'passwd')), '/etc/passwd');
    assert.equal(report.files, 3);
    assert.deepEqual(report.skipped, [
      '/tmp/out/huge.bin: 4194304 bytes, past the 1048576 bytes the run keeps',
      '/tmp/escape/passwd: escape is not a folder (a link or a file): not followed',
      '/var/log/app.log: not in a folder the environment could write',
      '/tmp/nothing: not there after the agent phase',
      "/proc/self/environ: under /proc, which is no file of the environment's own: refused",
      "/dev/zero: under /dev, which is no file of the environment's own: refused",
      "/sys/kernel: under /sys, which is no file of the environment's own: refused",
      '/: the whole filesystem: refused',
      "/tmp/../etc/passwd: names its path through '..': refused, an artifact is named by its own path",
      "../etc/passwd: names its path through '..': refused, an artifact is named by its own path",
    ]);
  });

  it('without a backend that reads outside, says so in one line and collects the working folder’s artifacts as before', async () => {
    const runDir = path.join(tmp.dir, 'run-2');
    const workspace = path.join(runDir, 'workspace');
    mkdirSync(path.join(workspace, 'out'), { recursive: true });
    writeFileSync(path.join(workspace, 'out', 'a.txt'), 'a');
    const report = await collectArtifacts([{ source: '/app/out' }, { source: '/tmp/out' }], workspace, '/app', path.join(runDir, 'artifacts'), bounds);
    assert.equal(readFileSync(path.join(runDir, 'artifacts', 'out', 'a.txt'), 'utf8'), 'a');
    assert.deepEqual(report.skipped, ['/tmp/out: outside the working folder /app: this backend collects artifacts from the working folder only']);
  });
});
