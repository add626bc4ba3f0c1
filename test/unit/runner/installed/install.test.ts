// The per-user install of a pinned CLI: where it goes, what counts as installed, npm's failures in
// one line. The install itself runs real npm against a registry on a closed port.
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { defaultAgentCache, ensureInstalled, findInstalled, InstallError, installFolder, launchCommand, npmReason } from '../../../../src/runner/core/protocols/installed/install.ts';
import { claudeCode } from '../../../../src/runner/core/protocols/installed/claudeCode.ts';
import { tempDir } from '../../../support/temp.ts';

describe('installed CLIs', () => {
  it('live in the per-user cache, a folder per pinned version', () => {
    assert.equal(defaultAgentCache({ XDG_CACHE_HOME: '/x/cache' }), '/x/cache/belay/agents');
    assert.match(defaultAgentCache({ XDG_CACHE_HOME: 'relative' }), /\/\.cache\/belay\/agents$/);
    assert.equal(installFolder(claudeCode, '/c'), `/c/claude-code-${claudeCode.version}`);
  });

  it('count as installed only when finished (the mark) and the program is there', () => {
    const tmp = tempDir('belay-install-');
    try {
      const folder = installFolder(claudeCode, tmp.dir);
      mkdirSync(path.join(folder, 'node_modules', '.bin'), { recursive: true });
      writeFileSync(path.join(folder, 'node_modules', 'claude.exe'), '');
      symlinkSync('../claude.exe', path.join(folder, 'node_modules', '.bin', 'claude'));
      assert.equal(findInstalled(claudeCode, tmp.dir), undefined, 'an unfinished install counts');
      writeFileSync(path.join(folder, '.belay-installed'), 'x');
      assert.equal(findInstalled(claudeCode, tmp.dir)?.bin, path.join(folder, 'node_modules', '.bin', 'claude'));
    } finally {
      tmp.remove();
    }
  });

  it('fail in one line when the registry cannot be reached, leaving nothing behind', async () => {
    const tmp = tempDir('belay-install-');
    try {
      const progress: string[] = [];
      await assert.rejects(
        ensureInstalled(claudeCode, { cache: tmp.dir, onProgress: (m) => progress.push(m), env: { ...process.env, npm_config_registry: 'http://127.0.0.1:9/', npm_config_fetch_retries: '0', npm_config_cache: path.join(tmp.dir, 'npm-cache'), npm_config_offline: 'false' } }),
        (error: Error) => {
          assert.ok(error instanceof InstallError);
          assert.match(error.message, /^@anthropic-ai\/claude-code@[\d.]+ could not be installed from the npm registry: /);
          assert.ok(!error.message.includes('\n'), error.message);
          return true;
        },
      );
      assert.match(progress[0]!, /^installing Claude Code/);
      assert.deepEqual(readdirSync(tmp.dir).filter((name) => name !== 'npm-cache'), [], 'a partial install was left');
    } finally {
      tmp.remove();
    }
  });

  it('fail in one line when npm cannot be started', async () => {
    const tmp = tempDir('belay-install-');
    try {
      await assert.rejects(ensureInstalled(claudeCode, { cache: tmp.dir, npm: path.join(tmp.dir, 'no-npm-here') }), /^InstallError: Claude Code is not installed and npm could not be started/);
    } finally {
      tmp.remove();
    }
  });

  it("word npm's failures by their cause", () => {
    assert.equal(npmReason('npm error code ENOTFOUND\nnpm error network request to https://registry.npmjs.org/x failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org\nnpm error A complete log of this run can be found in: /root/.npm/_logs/x-debug-0.log'), 'the npm registry cannot be reached (network request to https://registry.npmjs.org/x failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org)');
    assert.equal(npmReason('npm error code E404\nnpm error 404 Not Found - GET https://registry.npmjs.org/nope'), '404 Not Found - GET https://registry.npmjs.org/nope');
    assert.equal(npmReason(''), 'npm failed without saying why');
  });

  it('start a Node program with Belay\'s own runtime, quoted', () => {
    assert.equal(launchCommand({ needsNode: false }, { bin: "/c/it's/claude", folder: '/c' }), `'/c/it'\\''s/claude'`);
    assert.equal(launchCommand({ needsNode: true }, { bin: '/c/gemini', folder: '/c' }, '/opt/node 22/node'), `'/opt/node 22/node' '/c/gemini'`);
  });

  it('start a native executable in place of its Node launcher where the install has it, never one outside the install', () => {
    const tmp = tempDir('belay-install-');
    try {
      mkdirSync(path.join(tmp.dir, 'vendor'), { recursive: true });
      writeFileSync(path.join(tmp.dir, 'vendor', 'tool'), '');
      const cli = { bin: path.join(tmp.dir, 'node_modules', '.bin', 'tool'), folder: tmp.dir };
      assert.equal(launchCommand({ needsNode: true, nativeExecutable: () => 'vendor/tool' }, cli, '/node'), `'${path.join(tmp.dir, 'vendor', 'tool')}'`);
      assert.equal(launchCommand({ needsNode: true, nativeExecutable: () => 'vendor/missing' }, cli, '/node'), `'/node' '${cli.bin}'`);
      assert.equal(launchCommand({ needsNode: true, nativeExecutable: () => '../../etc/passwd' }, cli, '/node'), `'/node' '${cli.bin}'`);
    } finally {
      tmp.remove();
    }
  });
});
