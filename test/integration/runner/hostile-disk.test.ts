// A flooding agent against the disk budget, on every backend: no single file it writes can grow
// past the budget (RLIMIT_FSIZE, which it cannot raise), and a container's own layer, which the
// run's poll of its folders does not see, is measured against the budget by the backend, which
// stops the agent phase and names the cause `disk_budget`.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import type { Backend, BackendSession, RunFolders } from '../../../src/runner/core/backends/backend.ts';
import { containerBackend } from '../../../src/runner/core/backends/container.ts';
import { limitFileSize } from '../../../src/runner/core/backends/file-size.ts';
import { localBackend } from '../../../src/runner/core/backends/local.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';
import { runBounded } from '../../../src/shared/process.ts';
import { engineWithBase } from '../../support/runner/container-helpers.ts';
import { fixtures, sandboxOrReason, tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-hostile-disk-');
after(() => tmp.remove());
const BUDGET = 8 * 1024 * 1024;
const engine = await engineWithBase();
const backends: { name: string; get: () => Promise<Backend | Error> }[] = [
  { name: 'local', get: async () => localBackend() },
  { name: 'sandbox', get: sandboxOrReason },
  // Measured often, so that the test does not wait on the poll.
  { name: 'container', get: async () => (engine instanceof Error ? engine : containerBackend({ engine: engine.name, storageCheckMs: 300 }).catch((error: Error) => error)) },
];
const available = await Promise.all(backends.map(async (b) => ({ ...b, backend: await b.get() })));

let runs = 0;
async function open(backend: Backend, onLimit?: (cause: 'disk_budget' | 'host_lost', message: string) => void): Promise<BackendSession> {
  const dir = path.join(tmp.dir, `run-${++runs}`);
  const folders: RunFolders = {
    workspace: path.join(dir, 'app'),
    tests: path.join(dir, 'tests'),
    logs: path.join(dir, 'logs'),
    control: path.join(dir, 'control'),
    scratch: path.join(dir, 'scratch'),
    environmentLog: path.join(dir, 'environment.log'),
  };
  mkdirSync(folders.workspace, { recursive: true });
  return backend.open({
    runId: `disk-${process.pid}-${runs}`,
    task: await loadTask(path.join(fixtures, 'hostile', 'task')),
    folders,
    agentFolders: [],
    hidden: [],
    diskBudgetBytes: BUDGET,
    ...(onLimit ? { onLimit } : {}),
  });
}

async function sh(session: BackendSession, script: string, timeoutMs = 120_000) {
  return runBounded({ start: (output) => session.spawn({ argv: ['/bin/sh', '-c', script], ...output }), timeoutMs, maxOutputChars: 4000 });
}

describe('the file size bound', () => {
  it('runs the program through prlimit with the budget; unchanged without a budget', () => {
    assert.deepEqual(limitFileSize(['sh', '-c', 'x'], undefined), ['sh', '-c', 'x']);
    assert.deepEqual(limitFileSize(['sh', '-c', 'x'], 1000, '/nonexistent/prlimit'), ['sh', '-c', 'x']);
    if (process.platform === 'linux') assert.deepEqual(limitFileSize(['sh'], 1000.5, '/bin/sh'), ['/bin/sh', '--fsize=1001:1001', '--', 'sh']);
  });
});

for (const { name, backend } of available) {
  describe(`a flooding agent (${name} backend)`, { skip: backend instanceof Error ? backend.message : false }, () => {
    it('cannot write a file larger than the disk budget, nor raise the bound', async () => {
      const session = await open(backend as Backend);
      try {
        const flood = await sh(session, 'head -c 30000000 /dev/zero > big.bin; echo "rc=$?"; wc -c < big.bin; ulimit -f unlimited 2>/dev/null && echo RAISED; true');
        const out = flood.stdout.text('');
        assert.match(out, /rc=153/, `${out}\n${flood.stderr.text('')}`);
        const size = Number(out.split('\n')[1]);
        assert.ok(size <= BUDGET, `big.bin holds ${size} bytes`);
        assert.doesNotMatch(out, /RAISED/);
      } finally {
        await session.close();
      }
    });

    if (name === 'container') {
      it("stops the agent phase when its own layer outgrows the budget, and says the cause is the disk budget", async () => {
        const limits: [string, string][] = [];
        const session = await open(backend as Backend, (cause, message) => limits.push([cause, message]));
        try {
          // Many files, each under the bound: only the measure of the layer catches them.
          const flood = await sh(session, 'i=0; while [ $i -lt 40 ]; do head -c 1000000 /dev/zero > /tmp/f$i; i=$((i + 1)); done; sleep 100');
          // Killed with the whole container: its executor reports the command killed (an engine's exec client said 137).
          assert.deepEqual([flood.exitCode, flood.signal], [null, 'SIGKILL'], 'the command was ended by the stop');
          assert.equal(limits.length, 1);
          assert.equal(limits[0]![0], 'disk_budget');
          assert.match(limits[0]![1], /^the run wrote [\d.]+ MB in its container, more than its disk budget of 8 MB$/);
        } finally {
          await session.close();
        }
      });
    }
  });
}
