// Reading `--engine-host` and spreading sessions over hosts by free capacity (pure parts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hostArch } from '../../../src/shared/executor/binary.ts';
import { Engine, type RemoteEndpoint } from '../../../src/runner/core/backends/engine.ts';
import { EnginePool, nodeArch, parseEngineHost, parseEngineHosts } from '../../../src/runner/core/backends/engine-remote.ts';

const INFO = { version: '4.3.1', runtime: 'runc', rootless: true, cgroupVersion: 1 as const };
const LIMITS = { openFiles: 1024, processes: 1024, pidMax: 32768 };
const remote = (host: string, cpus: number | undefined): Engine => {
  const endpoint: RemoteEndpoint = { host, flags: ['--url', `ssh://${host}:22/run/podman.sock`], env: {}, cpus, arch: 'x64' };
  return new Engine('podman', '/usr/bin/podman', INFO, { PATH: '/usr/bin' }, LIMITS, endpoint);
};

describe('engine hosts: reading', () => {
  it('reads user, host, port and socket, and names the host for people', () => {
    assert.deepEqual(parseEngineHost(' ssh://ci@build-2 '), { text: 'ssh://ci@build-2', user: 'ci', hostname: 'build-2', port: 22, socket: undefined, label: 'ci@build-2' });
    assert.deepEqual(parseEngineHost('ssh://ci@10.0.0.5:2222/run/user/1000/podman/podman.sock'), {
      text: 'ssh://ci@10.0.0.5:2222/run/user/1000/podman/podman.sock',
      user: 'ci',
      hostname: '10.0.0.5',
      port: 2222,
      socket: '/run/user/1000/podman/podman.sock',
      label: 'ci@10.0.0.5:2222',
    });
    assert.equal(parseEngineHost('ssh://ci@[fd00::5]:22').label, 'ci@[fd00::5]');
  });

  it('refuses in one line what it cannot pass on safely: other schemes, passwords, no user, odd names', () => {
    for (const [text, why] of [
      ['tcp://ci@host:2375', /only ssh:\/\/ is supported/],
      ['ci@host', /only ssh:\/\//],
      ['ssh://ci:secret@host', /a password does not belong in the URL/],
      ['ssh://host', /no user/],
      ['ssh://-oProxyCommand=x@host', /is not a plain user name/],
      ['ssh://ci@host?x=1', /no query or fragment/],
      ['ssh://ci@host/run/my%20sock', /holds characters Belay does not pass on/],
      ['ssh://ci@host/run/x;rm', /holds characters Belay does not pass on/],
    ] as const) {
      assert.throws(() => parseEngineHost(text), (error: Error) => why.test(error.message) && !error.message.includes('\n') && error.message.includes(text), text);
    }
  });

  it('refuses a host given twice, and skips empty entries', () => {
    assert.deepEqual(parseEngineHosts(['', 'ssh://a@h1', 'ssh://a@h2:22']).map((h) => h.label), ['a@h1', 'a@h2']);
    assert.throws(() => parseEngineHosts(['ssh://a@h1', 'ssh://a@h1:22/run/x.sock']), /engine host 'ssh:\/\/a@h1:22\/run\/x.sock' is given twice/);
  });

  it("puts the host in the engine's command line and label", () => {
    const engine = remote('ci@h1', 4);
    assert.deepEqual(engine.argv(['ps']), ['/usr/bin/podman', '--url', 'ssh://ci@h1:22/run/podman.sock', 'ps']);
    assert.equal(engine.label, 'podman 4.3.1 (runc, rootless) on ci@h1');
  });

  it("reads the host's architecture as each engine says it, so the executor copied there is the host's", () => {
    assert.deepEqual(['amd64', 'x86_64', 'arm64', 'aarch64'].map(nodeArch), ['x64', 'x64', 'arm64', 'arm64']);
    assert.equal(nodeArch('ppc64le'), 'ppc64le');
    assert.equal(nodeArch(undefined), undefined);
    assert.equal(nodeArch(''), undefined);
    assert.throws(() => hostArch(nodeArch('ppc64le')), /built for Linux on x64 and arm64, not ppc64le/);
    assert.equal(hostArch(nodeArch('aarch64')), 'arm64');
  });
});

describe('engine hosts: spreading sessions', () => {
  it('sends each session to the host with the most free CPUs, the first on a tie, and counts releases', () => {
    const big = remote('a@big', 3);
    const small = remote('a@small', 1);
    const pool = new EnginePool([small, big]);
    const taken = [pool.take(), pool.take(), pool.take()];
    // big has 3 free, then 2; then both have 1: the first listed (small) takes it.
    assert.deepEqual(taken.map((e) => e.remote?.host), ['a@big', 'a@big', 'a@small']);
    assert.equal(pool.load.get(big), 2);
    pool.release(big);
    assert.equal(pool.take(), big);
    // Full everywhere: still the one with the most room (the job's concurrency bounds the total).
    assert.equal(pool.take(), big);
    assert.equal(pool.load.get(big), 3);
  });

  it('an engine that says no CPU count takes one session at a time before the others fill', () => {
    const unknown = remote('a@unknown', undefined);
    const two = remote('a@two', 2);
    const pool = new EnginePool([unknown, two]);
    assert.deepEqual([pool.take(), pool.take(), pool.take()].map((e) => e.remote?.host), ['a@two', 'a@unknown', 'a@two']);
    assert.throws(() => new EnginePool([]), /needs an engine/);
  });
});
