import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { BackendUnavailableError } from '../../../src/runner/core/backends/backend.ts';
import { localBackend } from '../../../src/runner/core/backends/local.ts';
import { sandboxBackend } from '../../../src/runner/core/backends/sandbox.ts';
import { runFiles } from '../../../src/runner/core/records/records.ts';
import { fixtures, nodeAgent, runFixture, sandboxOrReason, tempDir } from '../../support/runner/helpers.ts';

// Resolved before any test is registered: node:test runs root hooks early after a top-level await.
const sandbox = await sandboxOrReason();
const tmp = tempDir();
after(() => tmp.remove());

describe('sandbox availability', () => {
  it('reports a clear reason when bubblewrap is missing or cannot run', async () => {
    await assert.rejects(sandboxBackend({ bwrap: '/nonexistent/bwrap' }), (e: unknown) => e instanceof BackendUnavailableError && /^sandbox unavailable: \/nonexistent\/bwrap not found/.test(e.message));
    await assert.rejects(sandboxBackend({ bwrap: '/bin/false' }), /sandbox unavailable: \/bin\/false failed: exit code 1/);
  });

  it('labels the local backend as having no isolation', () => {
    assert.match(localBackend().label, /no isolation/);
  });
});

describe('sandbox isolation', { skip: sandbox instanceof Error ? sandbox.message : false }, () => {
  it('blocks writes outside /app and the network, for the agent and for its commands', async () => {
    const backend = sandbox as Exclude<typeof sandbox, Error>;
    const connections: string[] = [];
    const server = net.createServer((socket) => {
      connections.push('connected');
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    const commandTarget = path.join(fixtures, `escape-command-${process.pid}.txt`);
    const agentTarget = path.join(fixtures, `escape-agent-${process.pid}.txt`);
    const hostTmpTarget = `/tmp/outside-of-app`;
    const hadHostTmp = existsSync(hostTmpTarget);
    try {
      const { result } = await runFixture(backend, path.join(tmp.dir, 'runs'), nodeAgent('escape.mjs'), {
        env: { ESCAPE_TARGET: commandTarget, ESCAPE_AGENT_TARGET: agentTarget, ESCAPE_PORT: String(port) },
      });
      assert.equal(result.agent_completed, true, result.error ?? '');
      const trajectory = JSON.parse(readFileSync(runFiles(result.run_dir).trajectory, 'utf8')) as { screen: string | null; response: { text?: string } }[];
      assert.match(trajectory[1]!.screen ?? '', /Read-only file system/);
      assert.match(trajectory[2]!.response.text ?? '', /agent-write: EROFS; agent-net: ECONNREFUSED; step2 exit 7/);
      assert.equal(existsSync(commandTarget), false);
      assert.equal(existsSync(agentTarget), false);
      if (!hadHostTmp) assert.equal(existsSync(hostTmpTarget), false, 'the private /tmp leaked to the host');
      assert.equal(readFileSync(path.join(runFiles(result.run_dir).workspace, 'inside.txt'), 'utf8'), 'inside\n');
      assert.deepEqual(connections, []);
    } finally {
      server.close();
      rmSync(commandTarget, { force: true });
      rmSync(agentTarget, { force: true });
    }
  });
});
