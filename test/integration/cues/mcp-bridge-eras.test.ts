// `belay mcp --wrap` between a 2025-11-25 client (one that starts with `initialize`: the official
// SDK 1.x client, and raw JSON-RPC lines) and a 2026-07-28 server (the scripted one in
// test/fixtures/mcp/modern-server.ts, which knows no `initialize`): Belay finds the server's era
// through `server/discover`, answers `initialize` itself, adds the `_meta` envelope to every
// request and gives results back as the old era reads them. Hostile discover answers each get one
// clear error on the `initialize` id and leave nothing running.
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { cueFixture, repoRoot, run, waitUntil, type Bundles } from '../../support/cues/helpers.ts';
import { RawClient, sdkClient, serverPid, stderrShows, textOf } from '../../support/cues/mcpHelpers.ts';
import { alive } from '../../support/processes.ts';
import type { Mailbox } from '../../../src/cues/core/store.ts';

const MODERN_SERVER = path.join(repoRoot, 'test', 'fixtures', 'mcp', 'modern-server.ts');
const V = '2026-07-28';
const SERVER_INFO = { name: 'modern-deploy', title: 'Modern Deploy', version: '2.0.0' };


describe('belay mcp --wrap: a 2025-11-25 client in front of a 2026-07-28 server', () => {
  let bin: Bundles;
  let env: NodeJS.ProcessEnv;
  let mailbox: Mailbox;

  cueFixture('belay-mcp-eras-', (f) => ({ bin, env, mailbox } = f));

  const argv = (...serverArgs: string[]) => [bin.belay, 'mcp', '--wrap', '--', process.execPath, MODERN_SERVER, ...serverArgs];
  const raw = (...serverArgs: string[]) => new RawClient(process.execPath, argv(...serverArgs), { env, cwd: repoRoot });
  const pending = () => mailbox.listRequests({ pendingOnly: true })[0];
  const answer = (...args: string[]) => run(bin.belay, ['cues', 'answer', ...args], { env });
  const initialize = (peer: RawClient, protocolVersion: string, id: number | string = 1) =>
    peer.request('initialize', { protocolVersion, capabilities: { roots: { listChanged: true } }, clientInfo: { name: 'raw-legacy', version: '3.1' } }, id);

  it('the SDK client lists and calls tools, plain and asking for input (a form answered from the mailbox), pings, and cancels', async () => {
    const { client, stderr } = await sdkClient(process.execPath, argv(), { env, cwd: repoRoot });
    try {
      assert.deepEqual(client.getServerVersion(), SERVER_INFO, 'initialize answered from discover');
      assert.equal(client.getInstructions(), 'Deploys things; asks first.');
      assert.deepEqual(client.getServerCapabilities(), { tools: {} });
      const tools = await client.listTools();
      assert.ok(tools.tools.some((t) => t.name === 'echo') && tools.tools.some((t) => t.name === 'ask_form'));

      const echoed = JSON.parse(textOf(await client.callTool({ name: 'echo', arguments: { text: 'héllo' } }))) as { text: string; meta: Record<string, unknown> };
      assert.equal(echoed.text, 'héllo');
      assert.equal(echoed.meta['io.modelcontextprotocol/protocolVersion'], V);
      assert.deepEqual(echoed.meta['io.modelcontextprotocol/clientCapabilities'], { elicitation: { form: {}, url: {} } }, 'the client\'s capabilities plus both elicitation modes');
      assert.deepEqual(echoed.meta['io.modelcontextprotocol/clientInfo'], { name: 'sdk-test-client', version: '1.0.0' });

      const call = client.callTool({ name: 'ask_form', arguments: {} }, undefined, { timeout: 60_000 });
      const cue = await waitUntil(mailbox, pending, 'the form cue');
      assert.match(cue.prompt, /^Please provide your GitHub username/);
      assert.match(cue.prompt, /MCP server Modern Deploy/, 'named from the discover result');
      await answer(cue.requestId, '--field', 'Name=octocat');
      const seen = JSON.parse(textOf(await call)) as { inputResponses: unknown; stateEchoed: boolean };
      assert.deepEqual(seen.inputResponses, { github_login: { action: 'accept', content: { name: 'octocat' } } });
      assert.equal(seen.stateEchoed, true);

      assert.deepEqual(await client.ping(), {});

      const abort = new AbortController();
      const cancelled = client.callTool({ name: 'ask_form', arguments: {} }, undefined, { timeout: 60_000, signal: abort.signal });
      const second = await waitUntil(mailbox, () => mailbox.listRequests({ pendingOnly: true }).find((c) => c.requestId !== cue.requestId), 'the second cue');
      abort.abort('no longer needed');
      await assert.rejects(cancelled);
      await waitUntil(mailbox, () => (mailbox.getRequest(second.requestId)!.state === 'pending' ? undefined : true), 'the cancelled cue');
      assert.equal(mailbox.getRequest(second.requestId)!.state, 'cancelled');
      assert.doesNotMatch(stderr(), /notified notifications\/initialized/, 'initialized is not forwarded');
    } finally {
      await client.close();
    }
  });

  it('raw lines: initialize answered from discover in the client\'s own version, the envelope on each request, ids unchanged, results without resultType, dropped notifications not forwarded', async () => {
    const peer = raw();
    try {
      const pid = await serverPid(peer);
      const initializing = initialize(peer, '2025-06-18', 0);
      const early = peer.request('ping', undefined, 'p-0');
      const init = await initializing;
      assert.deepEqual((await early).result, {}, 'a ping sent before the answer is held, then forwarded');
      assert.ok(peer.messages.findIndex((m) => m.id === 0) < peer.messages.findIndex((m) => m.id === 'p-0'));
      assert.deepEqual(init.result, { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: SERVER_INFO, instructions: 'Deploys things; asks first.' });
      peer.notify('notifications/initialized');
      peer.notify('notifications/roots/list_changed');

      const ping = await peer.request('ping', undefined, 'p-1');
      assert.deepEqual(ping.result, {});
      const echo = await peer.request('tools/call', { name: 'echo', arguments: { text: 'x' }, _meta: { progressToken: 7 } }, 'e-1');
      assert.ok(!peer.lines.some((l) => l.includes('"resultType"')), 'no result the client got names a resultType');
      const seen = JSON.parse(String((echo.result!.content as Array<{ text: string }>)[0]!.text)) as { meta: Record<string, unknown>; id: unknown };
      assert.equal(seen.id, 'e-1', 'the server saw the client\'s own id');
      assert.equal(seen.meta.progressToken, 7, 'the request\'s own _meta is kept');
      assert.deepEqual(seen.meta['io.modelcontextprotocol/clientCapabilities'], { roots: { listChanged: true }, elicitation: { form: {}, url: {} } });
      assert.deepEqual(seen.meta['io.modelcontextprotocol/clientInfo'], { name: 'raw-legacy', version: '3.1' });
      const sampling = await peer.request('tools/call', { name: 'ask_sampling', arguments: {} }, 's-1');
      assert.equal(sampling.error!.message, 'belay mcp: the MCP server Modern Deploy asked for sampling/createMessage (input request "capital"), and the client did not declare the sampling capability: Sampling not supported', 'the client declared roots only');
      const unknown = await peer.request('resources/list', {}, 'r-1');
      assert.equal(unknown.error!.code, -32601, 'the server\'s errors pass through');

      // The server logs each notification it gets, in order: once it has the cancellation, it would have had the others.
      peer.notify('notifications/cancelled', { requestId: 'long-gone', reason: 'test' });
      const logged = await stderrShows(peer, /notified notifications\/cancelled/, 'the forwarded cancellation');
      assert.doesNotMatch(logged, /notified notifications\/(initialized|roots\/list_changed)/);
      assert.ok(!peer.messages.some((m) => typeof m.id === 'string' && m.id.startsWith('belay-')), 'Belay\'s own discover never reaches the client');
      assert.equal(await peer.close(), 0);
      assert.equal(alive(pid), false, 'the wrapped server is gone');
    } finally {
      peer.child.kill();
    }
  });

  it('a client naming a version Belay does not speak is told 2025-11-25', async () => {
    const peer = raw();
    try {
      const init = await initialize(peer, '1999-01-01');
      assert.equal(init.result!.protocolVersion, '2025-11-25');
      assert.deepEqual(init.result!.serverInfo, SERVER_INFO);
    } finally {
      assert.equal(await peer.close(), 0);
    }
  });

  const hostile: Array<[string, RegExp]> = [
    ['not-object', /its result is a string, not an object/],
    ['huge', /its result is \d+ characters of JSON; at most 1048576 are read/],
    ['error', /it answered with the error -32601 Method not found: server\/discover/],
  ];
  for (const [mode, why] of hostile) {
    it(`a discover answer that is unusable (${mode}) is one clear error on the initialize id, said once; nothing is left running`, async () => {
      const peer = raw(`--discover=${mode}`);
      try {
        const pid = await serverPid(peer);
        const init = await initialize(peer, '2025-11-25', 'init-1');
        assert.equal(init.result, undefined);
        assert.equal(init.error!.code, -32603);
        assert.match(init.error!.message, /^belay mcp: the MCP server \S+ refused initialize \(-32022 Unsupported protocol version\) and its answer to server\/discover cannot be used: /);
        assert.match(init.error!.message, why);
        assert.ok(init.error!.message.length < 400, 'one short line');
        assert.equal(peer.messages.length, 1, 'the client got that error and nothing else');
        assert.equal(await peer.close(), 0);
        assert.equal(peer.stderr.split('\n').filter((l) => l.startsWith('belay mcp:')).length, 1, peer.stderr);
        assert.match(peer.stderr, why);
        assert.doesNotMatch(peer.stderr, /\n\s+at /, 'no stack trace');
        assert.equal(alive(pid), false, 'the wrapped server is gone');
      } finally {
        peer.child.kill();
      }
    });
  }

  it('the SDK client in front of a server that answers neither initialize nor discover fails to connect with that line', async () => {
    await assert.rejects(sdkClient(process.execPath, argv('--discover=error'), { env, cwd: repoRoot }), /refused initialize .* and its answer to server\/discover cannot be used: it answered with the error -32601/);
  });
});
