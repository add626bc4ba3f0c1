// The local backend's executor (belay-exec on the host) runs as the agent's own user, so an agent
// can kill it. Its commands die with it, what left their group (setsid) too, and the sweep by the
// session's mark still runs when the agent phase ends; later commands say why they did not start.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { localBackend } from '../../../src/runner/core/backends/local.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';
import { runBounded } from '../../../src/shared/process.ts';
import { processesWith, taskDir, tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-local-executor-');
after(() => tmp.remove());

describe('local backend: an agent that kills its executor', { skip: process.platform !== 'linux' && 'the executor is Linux only' }, () => {
  it('leaves nothing running once the agent phase ends, and later commands say they could not start', async () => {
    const base = path.join(tmp.dir, 'run');
    const folders = { workspace: path.join(base, 'app'), tests: path.join(base, 'tests'), logs: path.join(base, 'logs'), control: path.join(base, 'control'), scratch: path.join(base, 'scratch'), environmentLog: path.join(base, 'env.log') };
    mkdirSync(folders.workspace, { recursive: true });
    const session = await localBackend().open({ runId: `local-exec-${process.pid}`, task: await loadTask(taskDir('hello')), folders, agentFolders: [], hidden: [] });
    const token = `belay-escaped-${process.pid}`;
    try {
      // A setsid child that outlives its command, then the executor (the command's shepherd's parent) killed.
      const script = `setsid sh -c 'echo up > escaped-started; sleep 1000; : ${token}' > /dev/null 2>&1 < /dev/null & while [ ! -s escaped-started ]; do sleep 0.05; done; kill -9 "$(cut -d' ' -f4 /proc/$PPID/stat)"; sleep 1000`;
      const killer = await runBounded({ start: (output) => session.spawn({ argv: ['/bin/sh', '-c', script], ...output }), timeoutMs: 60_000, maxOutputChars: 1000 });
      assert.equal(killer.timedOut, false, 'the command ended with its executor, not by its timeout');
      assert.equal(killer.signal, 'SIGKILL');
      assert.equal(existsSync(path.join(folders.workspace, 'escaped-started')), true, 'the setsid child had started');
      const later = await runBounded({ start: (output) => session.spawn({ argv: ['/bin/true'], ...output }), timeoutMs: 60_000, maxOutputChars: 1000 });
      assert.match(later.spawnError?.message ?? '', /^\/bin\/true: not started: .+/);
      assert.doesNotMatch(later.spawnError?.message ?? '', /\n/);
      await session.endAgentPhase();
      assert.deepEqual(processesWith(token), [], 'nothing is left once the phase ended');
    } finally {
      await session.close();
    }
  });
});
