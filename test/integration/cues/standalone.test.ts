// The standalone install, for agents that run outside VS Code: `npm pack` makes a package of the
// two command lines only, which `npm install -g` installs with nothing to download; the installed
// `belay` and `cueme` then work with a plain Node 22 (here: a temp prefix, a temp mailbox).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Mailbox } from '../../../src/cues/core/store.ts';
import { envelope, repoRoot, run, start, waitUntil } from '../../support/cues/helpers.ts';
import { RawClient } from '../../support/cues/mcpHelpers.ts';

// The executor ships with the command lines: `belay run` starts it inside each environment.
const EXPECTED_FILES = ['LICENSE', 'README.md', 'dist/cli.js', 'dist/cueme.js', 'dist/native/linux-arm64/belay-exec', 'dist/native/linux-x64/belay-exec', 'dist/package.json', 'package.json'];

describe('the npm package: belay and cueme installed on their own', () => {
  let dir: string;
  let prefix: string;
  let packed: { filename: string; files: Array<{ path: string }> };
  let env: NodeJS.ProcessEnv;
  let cueHome: string;
  let bin: (name: 'belay' | 'cueme') => string;

  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'belay-standalone-'));
    // A copy of what `npm pack` reads in the repository, with the production bundles (as the
    // prepack script builds them) and sources and tests beside them that must stay out.
    const staging = path.join(dir, 'staging');
    mkdirSync(staging);
    for (const file of ['package.json', 'README.md', 'LICENSE']) cpSync(path.join(repoRoot, file), path.join(staging, file));
    for (const folder of ['src/cli', 'test/unit/cues']) cpSync(path.join(repoRoot, folder), path.join(staging, folder), { recursive: true });
    execFileSync(process.execPath, ['scripts/build.ts', '--production', '--dist', path.join(staging, 'dist')], { cwd: repoRoot, stdio: 'ignore' });
    const npmEnv = { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false', npm_config_cache: path.join(dir, 'npm-cache') };
    [packed] = JSON.parse(execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: staging, env: npmEnv, encoding: 'utf8' }));
    prefix = path.join(dir, 'prefix');
    // --offline: a package that needs anything from the registry fails here.
    execFileSync('npm', ['install', '--global', '--offline', '--ignore-scripts', '--prefix', prefix, path.join(dir, packed.filename)], { cwd: dir, env: npmEnv, stdio: 'pipe' });
    cueHome = path.join(dir, 'home', '.cue');
    // Only Node 22 and the installed commands on PATH (plus the system's env and sh).
    env = { PATH: [path.dirname(process.execPath), path.join(prefix, 'bin'), '/usr/bin', '/bin'].join(path.delimiter), HOME: path.dirname(cueHome), CUE_HOME: cueHome, SHELL: '/bin/bash' };
    bin = (name) => path.join(prefix, 'bin', name);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('holds the two command lines and the executor, nothing else: no sources, tests, maps or the extension', () => {
    assert.deepEqual(packed.files.map((f) => f.path).sort(), EXPECTED_FILES);
    const manifest = JSON.parse(readFileSync(path.join(prefix, 'lib', 'node_modules', 'belay', 'package.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(manifest.dependencies, undefined, 'the bundles hold everything: installing downloads nothing');
    assert.deepEqual(manifest.bin, { belay: 'dist/cli.js', cueme: 'dist/cueme.js' });
    assert.deepEqual(readdirSync(path.join(prefix, 'bin')).sort(), ['belay', 'cueme']);
  });

  it('the installed commands run on Node 22: version, a cue answered by belay cues answer, and belay mcp', async () => {
    const version = await run(bin('belay'), ['--version'], { env });
    assert.equal(version.stdout, `${JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')).version}\n`);
    const joined = await run(bin('cueme'), ['join', 'terminal'], { env, cwd: dir });
    assert.equal(joined.code, 0, joined.stderr);
    const agentId = /^agent_id=(\w+)$/m.exec(joined.stdout)![1]!;

    const mailbox = Mailbox.open({ home: cueHome });
    try {
      const cue = start(bin('cueme'), ['cue', agentId, '-'], { env, input: envelope('Ready?') });
      const request = await waitUntil(mailbox, () => mailbox.listRequests({ pendingOnly: true, agentId })[0], 'the cue');
      const answered = await run(bin('belay'), ['cues', 'answer', request.requestId, '--text', 'Go ahead'], { env });
      assert.equal(answered.code, 0, answered.stderr);
      const done = await cue.done;
      assert.equal(done.code, 0, done.stderr);
      assert.match(done.stdout, /gave these instructions:\n\nGo ahead\n/);
      assert.equal(done.stderr, '');
    } finally {
      mailbox.close();
    }

    const peer = new RawClient(bin('belay'), ['mcp'], { env });
    try {
      await peer.initialize();
      const listed = await peer.request('tools/list');
      assert.deepEqual((listed.result!.tools as Array<{ name: string }>).map((t) => t.name).sort(), ['cue', 'join', 'pause', 'recall']);
    } finally {
      assert.equal(await peer.close(), 0);
    }
  });
});
