import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { detectEngine, Engine, engineChoice, engineEnvironment, EngineUnavailableError, findProgram, parseEngineInfo, parseHostLimits, ulimitFlags } from '../../../src/runner/core/backends/engine.ts';
import { tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-engine-');
after(() => tmp.remove());

/** A folder holding executable scripts named like engines, to put on PATH. */
function fakeBin(name: string, scripts: Record<string, string>): string {
  const dir = path.join(tmp.dir, name);
  mkdirSync(dir, { recursive: true });
  for (const [program, body] of Object.entries(scripts)) {
    writeFileSync(path.join(dir, program), `#!/bin/sh\n${body}\n`);
    chmodSync(path.join(dir, program), 0o755);
  }
  return dir;
}

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max processes             96365                96365                processes
Max open files            1024                 20000                files
`;

describe('container engine: host limits', () => {
  it('reads the hard limits and keeps the flags within them and within pid_max', () => {
    const limits = parseHostLimits(LIMITS, '32768\n');
    assert.deepEqual(limits, { openFiles: 20000, processes: 96365, pidMax: 32768 });
    assert.deepEqual(ulimitFlags(limits), ['--ulimit', 'nofile=20000:20000', '--ulimit', 'nproc=32768:32768']);
  });

  it('asks for generous limits where the host sets none, never unlimited', () => {
    const limits = parseHostLimits(LIMITS.replace(/96365 +96365/, 'unlimited unlimited').replace('20000', 'unlimited'), '');
    assert.deepEqual(limits, { openFiles: undefined, processes: undefined, pidMax: undefined });
    assert.deepEqual(ulimitFlags(limits), ['--ulimit', 'nofile=1048576:1048576', '--ulimit', 'nproc=1048576:1048576']);
  });
});

describe('container engine: choice and detection', () => {
  it('accepts podman, docker and auto, and names the choices otherwise', () => {
    assert.equal(engineChoice(undefined), undefined);
    assert.equal(engineChoice('auto'), undefined);
    assert.equal(engineChoice('docker'), 'docker');
    assert.throws(() => engineChoice('lxc'), /must be podman, docker or auto \(got 'lxc'\)/);
  });

  it('finds programs on PATH only when executable', () => {
    const dir = fakeBin('find', { podman: 'exit 0' });
    writeFileSync(path.join(dir, 'docker'), 'not executable');
    assert.equal(findProgram('podman', `/nonexistent${path.delimiter}${dir}`), path.join(dir, 'podman'));
    assert.equal(findProgram('docker', dir), undefined);
  });

  it('names every engine tried and why, when none answers', async () => {
    const dir = fakeBin('broken', { docker: 'echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock." >&2; exit 1' });
    await assert.rejects(
      detectEngine({ env: { PATH: dir } }),
      (e: unknown) =>
        e instanceof EngineUnavailableError &&
        /^no container engine answers here \(podman: not installed \(not on PATH\); docker: .*\/docker info failed: Cannot connect to the Docker daemon/.test(e.message),
    );
    await assert.rejects(detectEngine({ env: { PATH: dir }, engine: 'podman' }), /podman: not installed/);
  });

  it('does not wait for ever on an engine that hangs', async () => {
    const dir = fakeBin('hang', { podman: 'exec /bin/sleep 30' });
    await assert.rejects(detectEngine({ env: { PATH: dir }, engine: 'podman', timeoutMs: 1000 }), /podman: .* info failed: no answer within 1 s/);
  });

  it('reads podman and docker info', () => {
    const podman = parseEngineInfo('podman', JSON.stringify({ host: { ociRuntime: { name: 'runc' }, cgroupVersion: 'v1', security: { rootless: true } }, version: { Version: '4.3.1' } }));
    assert.deepEqual(podman, { version: '4.3.1', runtime: 'runc', rootless: true, cgroupVersion: 1 });
    const docker = parseEngineInfo('docker', JSON.stringify({ ServerVersion: '28.2.2', DefaultRuntime: 'runc', CgroupVersion: '2', SecurityOptions: ['name=seccomp', 'name=rootless'] }));
    assert.deepEqual(docker, { version: '28.2.2', runtime: 'runc', rootless: true, cgroupVersion: 2 });
  });

  it('bounds CPUs, memory without swap, and processes, except where a rootless engine on cgroups v1 cannot', () => {
    const limits = parseHostLimits(LIMITS, '32768');
    const bounds = { cpus: 1.5, memoryMb: 512, pidsLimit: 256 };
    const v2 = new Engine('podman', '/usr/bin/podman', { version: '5', runtime: 'crun', rootless: true, cgroupVersion: 2 }, {}, limits);
    assert.deepEqual(v2.resourceFlags(bounds), ['--cpus', '1.5', '--memory', '512m', '--memory-swap', '512m', '--pids-limit=256']);
    const rootlessV1 = new Engine('podman', '/usr/bin/podman', { version: '4', runtime: 'runc', rootless: true, cgroupVersion: 1 }, {}, limits);
    assert.equal(rootlessV1.canLimitResources, false);
    assert.deepEqual(rootlessV1.resourceFlags(bounds), []);
  });

  it('gives the engine client only the variables it needs, never API keys', () => {
    const env = engineEnvironment({ PATH: '/bin', HOME: '/root', XDG_RUNTIME_DIR: '/run/user/0', CONTAINERS_CONF: '/c', DOCKER_HOST: 'unix:///x', OPENAI_API_KEY: 'sk-secret', GITHUB_TOKEN: 't' });
    assert.deepEqual(Object.keys(env).sort(), ['CONTAINERS_CONF', 'DOCKER_HOST', 'HOME', 'PATH', 'XDG_RUNTIME_DIR']);
  });
});

describe('container engine: the real one', async () => {
  const found = await detectEngine().catch((error: Error) => error);
  it('answers info with its version and runtime', { skip: found instanceof Error ? found.message : false }, async () => {
    const engine = found as Exclude<typeof found, Error>;
    assert.match(engine.info.version, /^\d+\.\d+/);
    assert.match(engine.label, new RegExp(`^${engine.name} \\d`));
    assert.deepEqual(engine.isolationFlags().slice(0, 1), ['--network=none']);
    assert.equal(await engine.imageExists('localhost/belay-no-such-image:never'), false);
  });
});
