// The arm64 build of belay-exec, run under qemu-user on any machine: the same channel, a command,
// its output and exit, a connection. CI installs the cross compiler and qemu-user (.ci/run).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import * as path from 'node:path';
import { test } from 'node:test';
import { executorBinary } from '../../../src/shared/executor/binary.ts';
import { ensureBuilt } from '../../support/build.ts';
import { localExecutor, run } from '../../support/executor.ts';

ensureBuilt();

const qemu = ['/usr/bin/qemu-aarch64', '/usr/bin/qemu-aarch64-static'].find((file) => existsSync(file));
const binary = (() => {
  try {
    return executorBinary('arm64');
  } catch {
    return undefined;
  }
})();
const skip = process.arch === 'arm64' ? false : !qemu ? 'qemu-aarch64 is not installed (apt-get install qemu-user)' : !binary ? 'the arm64 build is absent (aarch64-linux-gnu-gcc is not installed)' : false;

test('the arm64 executor runs commands and connections (under qemu-user on other machines)', { skip }, async () => {
  const executor = await localExecutor(process.arch === 'arm64' ? [] : [qemu!], binary!);
  try {
    assert.equal(path.basename(path.dirname(binary!)), 'linux-arm64');
    const ran = await run(executor, { argv: ['/bin/sh', '-c', 'cat; echo err >&2; exit 5'], cwd: '/', env: {}, input: 'through arm64\n' });
    assert.deepEqual([ran.exitCode, ran.stdout, ran.stderr], [5, 'through arm64\n', 'err\n']);
    const server = createServer((socket) => socket.pipe(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const stream = await executor.connect((server.address() as AddressInfo).port);
      let got = '';
      stream.on('data', (c: Buffer) => (got += c.toString()));
      const ended = new Promise((resolve) => stream.on('end', resolve));
      stream.end('echo');
      await ended;
      assert.equal(got, 'echo');
    } finally {
      server.close();
    }
    const killed = executor.spawn({ argv: ['/bin/sleep', '300'], cwd: '/', env: {}, timeoutMs: 200 });
    assert.equal((await killed.ended).signal, 'SIGKILL');
  } finally {
    await executor.close();
  }
});
