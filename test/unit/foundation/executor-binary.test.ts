// Where Belay finds belay-exec: beside the bundles in dist/, or in the checkout's dist/ from the
// sources (src/shared/executor/) and from the host tests' bundles (out/test/host/).
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { executorBinary, hostArch } from '../../../src/shared/executor/binary.ts';
import { tempDir } from '../../support/temp.ts';

test('the executor is found beside the bundles and from the sources, per architecture', () => {
  const temp = tempDir('belay-executor-binary-');
  try {
    const root = temp.dir;
    for (const arch of ['x64', 'arm64']) {
      mkdirSync(path.join(root, 'dist', 'native', `linux-${arch}`), { recursive: true });
      writeFileSync(path.join(root, 'dist', 'native', `linux-${arch}`, 'belay-exec'), '');
    }
    assert.equal(executorBinary('x64', path.join(root, 'dist')), path.join(root, 'dist', 'native', 'linux-x64', 'belay-exec'));
    assert.equal(executorBinary('arm64', path.join(root, 'src', 'shared', 'executor')), path.join(root, 'dist', 'native', 'linux-arm64', 'belay-exec'));
    assert.equal(executorBinary('x64', path.join(root, 'out', 'test', 'host')), path.join(root, 'dist', 'native', 'linux-x64', 'belay-exec'));
    assert.throws(
      () => executorBinary('arm64', path.join(root, 'elsewhere', 'a', 'b', 'c')),
      /^Error: belay-exec for linux-arm64 is not built \(looked in .*\): run node scripts\/build\.ts where aarch64-linux-gnu-gcc is installed$/,
    );
  } finally {
    temp.remove();
  }
});

test('the architectures it is built for; another is named in one line', () => {
  assert.equal(hostArch('x64'), 'x64');
  assert.equal(hostArch('arm64'), 'arm64');
  assert.throws(() => hostArch('riscv64'), /^Error: the executor is built for Linux on x64 and arm64, not riscv64$/);
});
