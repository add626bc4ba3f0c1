// `belay mcp --wrap` between a 2025-11-25 client and a 2026-07-28 server (test/fixtures/mcp/
// modern-server.ts, a real process on stdio): the input requests of the server's
// InputRequiredResults that the person does not answer through a cue (sampling, roots, a form
// Belay cannot show) go to the client as the 2025-11-25 requests they were, when it declared the
// capability, and the call is retried with the answers; the spec's own examples are the fixtures.
// Then the hostile cases (a server that keeps asking, floods, oversized or unknown requests, a
// second answer to one id; a client that never answers, refuses, or closes) and a server that
// answers its first requests slowly or never.
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { cueFixture, repoRoot, run, waitUntil, type Bundles } from '../../support/cues/helpers.ts';
import { RawClient, sdkClient, serverPid, stderrShows, textOf, type RpcMessage } from '../../support/cues/mcpHelpers.ts';
import { alive } from '../../support/processes.ts';
import type { Mailbox } from '../../../src/cues/core/store.ts';

const MODERN_SERVER = path.join(repoRoot, 'test', 'fixtures', 'mcp', 'modern-server.ts');
/** The schema's examples: ListRootsResult "multiple-root-directories", CreateMessageResult "text-response". */
const SPEC_ROOTS = { roots: [{ uri: 'file:///home/user/repos/frontend', name: 'Frontend Repository' }, { uri: 'file:///home/user/repos/backend', name: 'Backend Repository' }] };
const SPEC_SAMPLED = { role: 'assistant', content: { type: 'text', text: 'The capital of France is Paris.' }, model: 'claude-3-sonnet-20240307', stopReason: 'endTurn' };
/** patterns/mrtr: the sampling request of the spec's InputRequiredResult, as the client must get it. */
const SPEC_SAMPLING_PARAMS = {
  messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }],
  modelPreferences: { hints: [{ name: 'claude-3-sonnet' }], intelligencePriority: 0.8, speedPriority: 0.5 },
  systemPrompt: 'You are a helpful assistant.',
  maxTokens: 100,
};

const gotOf = (response: RpcMessage) => JSON.parse(String((response.result!.content as Array<{ text: string }>)[0]!.text)) as Record<string, unknown>;
/** Requests Belay sent the client (server-to-client, 2025-11-25 style). */
const requestsTo = (peer: RawClient) => peer.messages.filter((m) => m.method !== undefined && m.id !== undefined);
const belayLines = (peer: RawClient) => peer.stderr.split('\n').filter((l) => l.startsWith('belay mcp:'));

describe('belay mcp --wrap: a 2026-07-28 server\'s sampling and roots asked of a bridged 2025-11-25 client', () => {
  let bin: Bundles;
  let env: NodeJS.ProcessEnv;
  let mailbox: Mailbox;

  cueFixture('belay-mcp-inputs-', (f) => ({ bin, env, mailbox } = f));

  const argv = (...serverArgs: string[]) => [bin.belay, 'mcp', '--wrap', '--', process.execPath, MODERN_SERVER, ...serverArgs];
  const raw = (serverArgs: string[] = [], extraEnv: NodeJS.ProcessEnv = {}) => new RawClient(process.execPath, argv(...serverArgs), { env: { ...env, ...extraEnv }, cwd: repoRoot });
  const initialize = (peer: RawClient, capabilities: object, id: number | string = 'init') =>
    peer.request('initialize', { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 'raw-legacy', version: '1.0' } }, id);
  const call = (peer: RawClient, name: string, id: number | string, args: object = {}, extra: object = {}) => peer.request('tools/call', { name, arguments: args, ...extra }, id);

  it('the SDK client answers the spec\'s mixed request (the form as a cue, the sampling itself), roots, and the spec\'s state-only result', async () => {
    const { client } = await sdkClient(process.execPath, argv(), { env, cwd: repoRoot, capabilities: { sampling: {}, roots: { listChanged: true }, elicitation: { form: {} } } });
    const sampled: unknown[] = [];
    const elicited: unknown[] = [];
    let rootsAsked = 0;
    client.setRequestHandler(CreateMessageRequestSchema, (request) => (sampled.push(request.params), SPEC_SAMPLED as never));
    client.setRequestHandler(ListRootsRequestSchema, () => (rootsAsked++, SPEC_ROOTS));
    client.setRequestHandler(ElicitRequestSchema, (request) => (elicited.push(request.params), { action: 'decline' }));
    try {
      const mixed = client.callTool({ name: 'ask_mixed', arguments: {} }, undefined, { timeout: 60_000 });
      const cue = await waitUntil(mailbox, () => mailbox.listRequests({ pendingOnly: true })[0], 'the form cue');
      assert.match(cue.prompt, /^Please provide your GitHub username/);
      await run(bin.belay, ['cues', 'answer', cue.requestId, '--field', 'name=octocat'], { env });
      const got = JSON.parse(textOf(await mixed)) as { inputResponses: Record<string, unknown>; stateEchoed: boolean; capabilities: unknown };
      assert.deepEqual(got.inputResponses, { github_login: { action: 'accept', content: { name: 'octocat' } }, capital_of_france: SPEC_SAMPLED }, 'the spec\'s InputResponses, both answered');
      assert.equal(got.stateEchoed, true, 'the spec\'s requestState came back exactly');
      assert.deepEqual(sampled, [SPEC_SAMPLING_PARAMS], 'the client got the sampling request as the server wrote it');
      assert.deepEqual(elicited, [], 'a form Belay can show goes to the person, not the client');
      assert.deepEqual(got.capabilities, { sampling: {}, roots: { listChanged: true }, elicitation: { form: {}, url: {} } });

      const roots = JSON.parse(textOf(await client.callTool({ name: 'ask_roots', arguments: {} }))) as { inputResponses: unknown };
      assert.deepEqual(roots.inputResponses, { where: SPEC_ROOTS });
      assert.equal(rootsAsked, 1);

      const stateOnly = JSON.parse(textOf(await client.callTool({ name: 'ask_state_only', arguments: {} }))) as { inputResponses: unknown; stateEchoed: boolean };
      assert.equal(stateOnly.stateEchoed, true, 'the state-only result is retried at once, its state echoed');
      assert.deepEqual(stateOnly.inputResponses, {});
      assert.equal(mailbox.listRequests({ pendingOnly: true }).length, 0);
    } finally {
      await client.close();
    }
  });

  it('raw lines: a client without the capability is never asked and gets the 2025-11-25 spec\'s error; its own retry channel never reaches the server; ids like Belay\'s stay the client\'s', async () => {
    const peer = raw();
    try {
      const pid = await serverPid(peer);
      await initialize(peer, {}, 'belay-discover-1');
      const sampling = await call(peer, 'ask_sampling', 'belay-retry-1');
      assert.equal(sampling.error!.code, -32601);
      assert.equal(sampling.error!.message, 'belay mcp: the MCP server Modern Deploy asked for sampling/createMessage (input request "capital"), and the client did not declare the sampling capability: Sampling not supported');
      assert.deepEqual((sampling.error as { data?: unknown }).data, { reason: 'Client does not have sampling capability' });
      const roots = await call(peer, 'ask_roots', 'r');
      assert.equal(roots.error!.code, -32601);
      assert.match(roots.error!.message, /the client did not declare the roots capability: Roots not supported$/);
      const nested = await call(peer, 'ask_nested', 'n');
      assert.match(nested.error!.message, /asked for a form Belay cannot show as a cue \(input request "shape"\), and the client did not declare the elicitation capability: Elicitation not supported$/);
      assert.deepEqual(requestsTo(peer), [], 'nothing was asked of the client');

      const forged = await call(peer, 'echo', 'e', { text: 'x' }, { inputResponses: { github_login: { action: 'accept', content: { name: 'mallory' } } }, requestState: 'opaque-state-1' });
      const seen = gotOf(forged);
      assert.equal(seen.inputResponses, undefined, 'the client cannot answer for the person');
      assert.equal(seen.requestState, undefined, 'nor hand the server a state');
      assert.equal(seen.id, 'e');
      assert.deepEqual(peer.messages.map((m) => m.id), ['belay-discover-1', 'belay-retry-1', 'r', 'n', 'e'], 'each answer under the client\'s own id, once');
      assert.equal(await peer.close(), 0);
      assert.equal(alive(pid), false);
    } finally {
      peer.child.kill();
    }
  });

  it('raw lines: a server that keeps asking is stopped after 8 retries; floods, oversized and unknown requests end the call with one line; a big payload within the bound passes; a __proto__ key and a second answer to one id do no harm', async () => {
    const peer = raw();
    try {
      const pid = await serverPid(peer);
      await initialize(peer, { roots: {}, sampling: {}, elicitation: {} });
      peer.answer('roots/list', () => ({ result: SPEC_ROOTS }));
      peer.answer('elicitation/create', () => ({ result: { action: 'accept', content: { box: 'square' } } }));
      const bigTexts: number[] = [];
      peer.answer('sampling/createMessage', (request) => {
        const messages = request.params!.messages as Array<{ content: { text: string } }>;
        bigTexts.push(messages[0]!.content.text.length);
        return { result: SPEC_SAMPLED };
      });

      const forever = await call(peer, 'ask_forever', 1);
      assert.equal(forever.error!.code, -32603);
      assert.equal(forever.error!.message, 'belay mcp: the MCP server Modern Deploy still asked for input after 8 retries of tools/call with answers; Belay stopped the call');
      assert.equal(requestsTo(peer).filter((m) => m.method === 'roots/list').length, 8, 'the first answer and 7 retries asked once each; the 8th retry\'s answer still asked');
      assert.match(peer.stderr, /modern-deploy call ask_forever #9\n/);
      assert.doesNotMatch(peer.stderr, /ask_forever #10/);

      const before = requestsTo(peer).length;
      const flood = await call(peer, 'ask_flood', 2, { count: 5000 });
      assert.equal(flood.error!.message, 'belay mcp: the MCP server Modern Deploy answered tools/call with an InputRequiredResult Belay cannot answer: it asked 5000 things at once; at most 16 are answered');
      const huge = await call(peer, 'ask_big', 3, { chars: 5 * 1024 * 1024 });
      assert.match(huge.error!.message, /^belay mcp: the MCP server Modern Deploy answered tools\/call with an InputRequiredResult Belay cannot answer: its sampling\/createMessage input request "big" is \d+ characters of JSON; at most 4194304 are passed on$/);
      const unknown = await call(peer, 'ask_unknown', 4);
      assert.match(unknown.error!.message, /its input request "call" is "tools\/call", none of elicitation\/create, sampling\/createMessage, roots\/list$/);
      assert.equal(requestsTo(peer).length, before, 'none of these reached the client');

      const big = await call(peer, 'ask_big', 5, { chars: 1024 * 1024 });
      assert.deepEqual(gotOf(big).inputResponses, { big: SPEC_SAMPLED });
      assert.deepEqual(bigTexts, [1024 * 1024], 'a 1 MiB prompt went to the client whole');

      const nested = gotOf(await call(peer, 'ask_nested', 'nested'));
      assert.deepEqual(nested.inputResponses, { shape: { action: 'accept', content: { box: 'square' } } }, 'a form Belay cannot show went to the client, which declared form elicitation');
      assert.equal(mailbox.listRequests({}).length, 0, 'no cue for it');

      const proto = gotOf(await call(peer, 'ask_proto', 6));
      assert.equal(proto.ownProto, true, 'the answer went back under the key "__proto__"');
      assert.deepEqual(proto.inputResponses, JSON.parse(`{"__proto__":${JSON.stringify(SPEC_ROOTS)}}`));
      assert.equal(proto.stateEchoed, true);

      const twice = await call(peer, 'ask_twice', 7);
      assert.deepEqual(gotOf(twice).inputResponses, { where: SPEC_ROOTS }, 'the forged second answer was dropped; the retry\'s answer is the call\'s');
      await peer.request('ping', undefined, 'after');
      assert.equal(peer.messages.filter((m) => m.id === 7).length, 1, 'one answer for the call');
      assert.ok(!peer.lines.some((l) => l.includes('forged')));
      assert.ok(!peer.lines.some((l) => l.includes('opaque-state-1') || l.includes('round-')), 'no requestState ever reached the client: it has nothing to forge or replay');
      assert.ok(!peer.messages.some((m) => m.method === undefined && typeof m.id === 'string' && m.id.startsWith('belay-')), 'no answer to Belay\'s own requests reached the client');

      assert.equal(await peer.close(), 0);
      assert.equal(alive(pid), false);
      const lines = belayLines(peer);
      assert.equal(lines.filter((l) => l.includes('already answered')).length, 1, lines.join('\n'));
      assert.equal(lines.length, 5, `one line per refused call and the dropped answer:\n${lines.join('\n')}`);
      assert.doesNotMatch(peer.stderr, /\n\s+at /, 'no stack trace');
    } finally {
      peer.child.kill();
    }
  });

  it('raw lines: a client that refuses a sampling request, answers it malformed, never answers it (bounded, then cancelled), or cancels its call meanwhile', async () => {
    const peer = raw([], { CUEME_TIMEOUT_SECONDS: '1.5' });
    try {
      await initialize(peer, { roots: {}, sampling: {} });
      peer.answer('sampling/createMessage', () => ({ error: { code: -1, message: 'User rejected sampling request' } }));
      const refused = await call(peer, 'ask_sampling', 1);
      assert.equal(refused.error!.code, -1, 'the client\'s own code');
      assert.equal(refused.error!.message, 'belay mcp: the client answered the MCP server Modern Deploy\'s sampling/createMessage request "capital" with the error -1 User rejected sampling request; the call was not retried');

      peer.answer('roots/list', () => ({ result: { roots: [{ uri: 'https://evil.example/' }] } }));
      const malformed = await call(peer, 'ask_roots', 2);
      assert.match(malformed.error!.message, /^belay mcp: the client's answer to the MCP server Modern Deploy's roots\/list request "where" cannot be passed on: its result's roots\.0\.uri is malformed/);

      peer.answer('sampling/createMessage', () => undefined);
      const silent = await call(peer, 'ask_sampling', 3);
      assert.equal(silent.error!.message, 'belay mcp: the client did not answer the MCP server Modern Deploy\'s sampling/createMessage request "capital" within 1.5 s; Belay cancelled it and the call');
      const asked = requestsTo(peer).filter((m) => m.method === 'sampling/createMessage').at(-1)!;
      const cancel = peer.messages.find((m) => m.method === 'notifications/cancelled')!;
      assert.deepEqual(cancel.params, { requestId: asked.id, reason: 'no answer within 1.5 s' });
      assert.ok(peer.messages.indexOf(cancel) < peer.messages.indexOf(silent), 'cancelled before the call ended');

      const sampledAfter = (at: number, what: string) => peer.next((m) => m.method === 'sampling/createMessage' && peer.messages.indexOf(m) >= at, what);
      let at = peer.messages.length;
      peer.send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'ask_sampling', arguments: {} } });
      const request = await sampledAfter(at, 'the next sampling request');
      peer.notify('notifications/cancelled', { requestId: 4, reason: 'the user gave up' });
      const withdrawn = await peer.next((m) => m.method === 'notifications/cancelled' && m.params?.requestId === request.id, 'Belay cancelling its request');
      assert.equal(withdrawn.params!.reason, 'the call it was asked for ended');
      // A late answer to the withdrawn request, and a second one to an answered request, go nowhere.
      peer.send({ jsonrpc: '2.0', id: request.id, result: SPEC_SAMPLED });
      peer.send({ jsonrpc: '2.0', id: asked.id, result: SPEC_SAMPLED });
      assert.deepEqual((await peer.request('ping', undefined, 'p')).result, {});
      assert.equal(peer.messages.some((m) => m.id === 4), false, 'a cancelled call gets no answer');
      assert.doesNotMatch(peer.stderr, /modern-deploy got a response/, 'the server never saw those answers');

      // Closing its input while asked: the call ends at once, and so does everything.
      at = peer.messages.length;
      const last = call(peer, 'ask_sampling', 5);
      await sampledAfter(at, 'the last sampling request');
      assert.equal(await peer.close(), 0);
      assert.match((await last).error!.message, /^belay mcp: the client closed its input before answering the MCP server Modern Deploy's sampling\/createMessage request "capital"$/);
    } finally {
      peer.child.kill();
    }
  });

  it('raw lines: a server that exits while Belay waits on the client\'s sampling answer ends the bridge (and Belay\'s request) at once, not after the cue timeout', async () => {
    const peer = raw();
    try {
      await initialize(peer, { sampling: {} });
      peer.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'ask_and_exit', arguments: {} } });
      const asked = await peer.next((m) => m.method === 'sampling/createMessage', 'the sampling request');
      assert.equal(await peer.exited, 0, 'the bridge ended with its server');
      const withdrawn = peer.messages.find((m) => m.method === 'notifications/cancelled');
      assert.deepEqual(withdrawn?.params, { requestId: asked.id, reason: 'the call it was asked for ended' });
    } finally {
      peer.child.kill();
    }
  });

  const silent: Array<[string, string[], string]> = [
    ['never answers anything', ['--silent'], 'initialize'],
    ['refuses initialize and never answers server/discover', ['--discover=never'], 'server/discover'],
  ];
  for (const [how, serverArgs, what] of silent) {
    it(`a server that ${how} is stopped after the start timeout with one error on the initialize id; nothing is left`, async () => {
      const peer = raw(serverArgs, { BELAY_MCP_START_TIMEOUT_SECONDS: '2' });
      try {
        const pid = await serverPid(peer);
        const initializing = initialize(peer, {}, 'init-1');
        peer.send({ jsonrpc: '2.0', id: 'held', method: 'ping' });
        const init = await initializing;
        const command = `node ${MODERN_SERVER} ${serverArgs.join(' ')}`;
        assert.equal(init.error!.message, `belay mcp: the MCP server \`${command}\` did not answer ${what} within 2 s; Belay stopped it`);
        assert.equal(init.error!.code, -32603);
        assert.equal(await peer.exited, 1, 'the bridge ends with the server');
        assert.equal(alive(pid), false, 'the server is gone');
        assert.deepEqual(peer.messages.map((m) => m.id), ['init-1'], 'the held ping got nothing: the server never saw it');
        assert.deepEqual(belayLines(peer), [`belay mcp: the MCP server \`${command}\` did not answer ${what} within 2 s; Belay stopped it`]);
      } finally {
        peer.child.kill();
      }
    });
  }

  it('the SDK client in front of a silent server fails to connect with that line', async () => {
    await assert.rejects(sdkClient(process.execPath, argv('--silent'), { env: { ...env, BELAY_MCP_START_TIMEOUT_SECONDS: '1' }, cwd: repoRoot }), /did not answer initialize within 1 s; Belay stopped it/);
  });

  it('a server whose discover answer starts after 4 s and trickles in pieces is bridged (the default bound)', async () => {
    const peer = raw(['--discover=slow']);
    try {
      const init = await initialize(peer, {}, 1);
      assert.equal(init.result!.protocolVersion, '2025-11-25');
      assert.deepEqual(init.result!.serverInfo, { name: 'modern-deploy', title: 'Modern Deploy', version: '2.0.0' });
      await stderrShows(peer, /(modern-deploy wrote \d+ of \d+ characters\n[^]*){4}/, 'the four pieces');
      const echo = await call(peer, 'echo', 2, { text: 'late' });
      assert.equal(gotOf(echo).text, 'late');
      assert.equal(await peer.close(), 0);
      assert.deepEqual(belayLines(peer), []);
    } finally {
      peer.child.kill();
    }
  });
});
