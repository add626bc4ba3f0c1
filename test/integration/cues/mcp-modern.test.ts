// MCP 2026-07-28 against `belay mcp` and through `belay mcp --wrap`, as raw JSON-RPC lines (the
// installed SDK speaks 2025-11-25 only): no initialize, the envelope in each request's `_meta`,
// discover, `resultType` on every result, cues answered as InputRequiredResults, as tasks, or by
// waiting; the hostile inputs each get one clear error and leave nothing behind. The human's
// answers are written by `belay cues answer`, as the panel composes them.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { renderResponse } from '../../../src/cues/core/hap.ts';
import { Mailbox } from '../../../src/cues/core/store.ts';
import { cueFixture, repoRoot, run, tempHome, waitUntil, type Bundles } from '../../support/cues/helpers.ts';
import { RawClient, type RpcMessage } from '../../support/cues/mcpHelpers.ts';

const MODERN_SERVER = path.join(repoRoot, 'test', 'fixtures', 'mcp', 'modern-server.ts');
const V = '2026-07-28';

/** The request `_meta` of a 2026-07-28 client with `capabilities`. */
const meta = (capabilities: object = {}, extra: object = {}) => ({
  _meta: { 'io.modelcontextprotocol/protocolVersion': V, 'io.modelcontextprotocol/clientCapabilities': capabilities, 'io.modelcontextprotocol/clientInfo': { name: 'raw-2026', version: '1' }, ...extra },
});
const ELICIT = { elicitation: { form: {} } };
const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
/** Polls a task as a tasks client does (at the interval the server asks for) until it ends. */
async function settled(peer: RawClient, taskId: string, capabilities: object): Promise<RpcMessage> {
  for (;;) {
    const got = await peer.request('tasks/get', { taskId, ...meta(capabilities) });
    if (['completed', 'failed', 'cancelled'].includes(String(got.result?.status))) return got;
    await new Promise((resolve) => setTimeout(resolve, Number(got.result?.pollIntervalMs ?? 100)));
  }
}
/** Whether a process has ended (a zombie not yet reaped by init, once its parent is gone, counts). */
function exitedOrZombie(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') ?? false;
  } catch {
    return true;
  }
}
const text = (m: RpcMessage) => ((m.result?.content ?? []) as Array<{ text?: string }>).map((c) => c.text ?? '').join('');

describe('belay mcp for 2026-07-28 clients', () => {
  let bin: Bundles;
  let home: ReturnType<typeof tempHome>;
  let env: NodeJS.ProcessEnv;
  let mailbox: Mailbox;

  cueFixture('belay-mcp-2026-', (f) => ({ bin, home, env, mailbox } = f));

  const server = (extraEnv: NodeJS.ProcessEnv = {}) => new RawClient(process.execPath, [bin.belay, 'mcp'], { env: { ...env, ...extraEnv }, cwd: home.dir });
  const pendingFor = (agentId: string) => () => mailbox.listRequests({ pendingOnly: true, agentId })[0];
  const answer = (...args: string[]) => run(bin.belay, ['cues', 'answer', ...args], { env });
  const call = (peer: RawClient, name: string, args: object, capabilities: object = {}, extra: object = {}) => peer.request('tools/call', { name, arguments: args, ...meta(capabilities), ...extra });

  it('no initialize: discover, tools/list and join answer at once, every result with resultType; both eras in one process', async () => {
    const peer = server();
    try {
      const discovered = await peer.request('server/discover', meta());
      assert.deepEqual(discovered.result!.supportedVersions, [V, '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07']);
      assert.equal(discovered.result!.resultType, 'complete');
      assert.deepEqual(discovered.result!.capabilities, { tools: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } });
      assert.deepEqual((discovered.result!._meta as Record<string, { name: string }>)['io.modelcontextprotocol/serverInfo']!.name, 'belay');
      assert.match(String(discovered.result!.instructions), /join\(\).*cue\(/s);

      const listed = await peer.request('tools/list', meta());
      assert.equal(listed.result!.resultType, 'complete');
      const tools = listed.result!.tools as Array<{ name: string; inputSchema: { type: string; required?: string[]; properties: Record<string, { anyOf?: Array<{ type: string }> }> } }>;
      assert.deepEqual(tools.map((t) => t.name), ['join', 'recall', 'cue', 'pause']);
      const cue = tools.find((t) => t.name === 'cue')!;
      assert.equal(cue.inputSchema.type, 'object');
      assert.deepEqual([...(cue.inputSchema.required ?? [])].sort(), ['agent_id', 'prompt']);
      assert.ok(cue.inputSchema.properties.payload!.anyOf!.some((s) => s.type === 'null'));

      const joined = await call(peer, 'join', {});
      assert.equal(joined.result!.resultType, 'complete');
      assert.match(text(joined), /^agent_runtime=raw_2026$/m, 'the runtime comes from the clientInfo in _meta');
      assert.equal((await peer.request('ping', meta())).result!.resultType, 'complete');

      // The same process answers a 2025-11-25 client (initialize first) beside it.
      const init = await peer.initialize({}, 'old-client');
      assert.equal((init.result!.serverInfo as { name: string }).name, 'belay');
      const old = await peer.request('tools/call', { name: 'join', arguments: {} });
      assert.equal(old.result!.resultType, undefined, 'the older era has no resultType');
      assert.match(text(old), /^agent_runtime=old_client$/m);
    } finally {
      assert.equal(await peer.close(), 0);
    }
  });

  it('an unknown revision, a legacy one in the new envelope, and a malformed or huge _meta each get one clear error; the server goes on', async () => {
    const peer = server();
    try {
      const unknown = await peer.request('tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '1900-01-01', 'io.modelcontextprotocol/clientCapabilities': {} } });
      assert.equal(unknown.error!.code, -32022);
      assert.match(unknown.error!.message, /unknown protocol version "1900-01-01"; this server speaks 2026-07-28 \(per-request _meta\) and 2025-11-25, .* \(after initialize\)/);
      assert.deepEqual((unknown.error as { data?: unknown }).data, { supported: [V, '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'], requested: '1900-01-01' });
      const legacy = await peer.request('tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2025-11-25', 'io.modelcontextprotocol/clientCapabilities': {} } });
      assert.equal(legacy.error!.code, -32022);
      assert.match(legacy.error!.message, /2025-11-25 is spoken after an initialize handshake/);

      const bad: Array<[object, RegExp]> = [
        [{ _meta: { 'io.modelcontextprotocol/protocolVersion': 20260728, 'io.modelcontextprotocol/clientCapabilities': {} } }, /protocolVersion"\] must be a string/],
        [{ _meta: { 'io.modelcontextprotocol/protocolVersion': V } }, /lacks "io\.modelcontextprotocol\/clientCapabilities"/],
        [{ _meta: { 'io.modelcontextprotocol/protocolVersion': V, 'io.modelcontextprotocol/clientCapabilities': 'all' } }, /clientCapabilities"\] is malformed/],
        [{ _meta: { 'io.modelcontextprotocol/protocolVersion': V, 'io.modelcontextprotocol/clientCapabilities': { elicitation: [1] } } }, /clientCapabilities"\]\.elicitation is malformed/],
        [{ _meta: { 'io.modelcontextprotocol/protocolVersion': V, 'io.modelcontextprotocol/clientCapabilities': {}, 'x.example/blob': 'x'.repeat(200_000) } }, /params\._meta is \d+ characters of JSON; at most 65536 are read/],
      ];
      for (const [params, why] of bad) {
        const answered = await peer.request('tools/list', params);
        assert.equal(answered.error!.code, -32602, JSON.stringify(answered));
        assert.match(answered.error!.message, why);
        assert.ok(!answered.error!.message.includes('\n'), 'one line');
      }
      const unknownMethod = await peer.request('resources/subscribe', meta());
      assert.equal(unknownMethod.error!.code, -32601);
      assert.equal((await peer.request('tools/list', meta())).result!.resultType, 'complete', 'still answering');
    } finally {
      assert.equal(await peer.close(), 0);
    }
    assert.equal(mailbox.listRequests().length, 0, 'nothing reached the mailbox');
  });

  it('a client that shows elicitations gets an InputRequiredResult; the retry with inputResponses and the sealed requestState gets the text cueme prints', async () => {
    const peer = server();
    try {
      const payload = JSON.stringify({ type: 'choice', options: ['Deploy', 'Wait'] });
      const args = { prompt: 'Deploy the billing refactor?', agent_id: 'modernagent', payload };
      const first = await call(peer, 'cue', args, ELICIT);
      assert.equal(first.result!.resultType, 'input_required');
      const requests = first.result!.inputRequests as Record<string, { method: string; params: { mode: string; message: string; requestedSchema: object } }>;
      assert.deepEqual(Object.keys(requests), ['human']);
      assert.deepEqual(requests.human, {
        method: 'elicitation/create',
        params: { mode: 'form', message: 'Deploy the billing refactor?', requestedSchema: { type: 'object', properties: { choice: { type: 'string', title: 'Choose', enum: ['Deploy', 'Wait'] } }, required: ['choice'] } },
      });
      const state = String(first.result!.requestState);
      const cue = await waitUntil(mailbox, pendingFor('modernagent'), 'the cue in the mailbox');
      assert.equal(cue.payloadJson, payload, 'the panel shows the same cue');

      // A response for a key never asked is ignored: the server asks again, the cue still pending.
      const stray = await call(peer, 'cue', args, ELICIT, { inputResponses: { other: { action: 'accept', content: { choice: 'Deploy' } } }, requestState: state });
      assert.equal(stray.result!.resultType, 'input_required');
      assert.equal(mailbox.getRequest(cue.requestId)!.state, 'pending');

      const done = await call(peer, 'cue', args, ELICIT, { inputResponses: { human: { action: 'accept', content: { choice: 'Deploy' } } }, requestState: state });
      assert.equal(done.result!.resultType, 'complete');
      const entry = mailbox.getRequest(cue.requestId)!;
      assert.equal(entry.state, 'answered');
      assert.equal(entry.response!.text, 'Deploy');
      assert.equal(text(done), renderResponse('cue', entry.response!).text);
    } finally {
      assert.equal(await peer.close(), 0);
    }
  });

  it('an answer in the panel wins over the retry; declining ends the cue as cueme reports it', async () => {
    const peer = server();
    try {
      const args = { prompt: 'Ship it?', agent_id: 'panelagent' };
      const first = await call(peer, 'cue', args, ELICIT);
      const cue = await waitUntil(mailbox, pendingFor('panelagent'), 'the cue');
      assert.equal((await answer(cue.requestId, '--text', 'from the panel')).code, 0);
      const retried = await call(peer, 'cue', args, ELICIT, { inputResponses: { human: { action: 'accept', content: { answer: 'from the client' } } }, requestState: first.result!.requestState });
      assert.match(text(retried), /gave these instructions:\n\nfrom the panel\n/);

      const second = await call(peer, 'pause', { agent_id: 'panelagent' }, ELICIT);
      assert.deepEqual((second.result!.inputRequests as Record<string, { params: { requestedSchema: object } }>).human!.params.requestedSchema, { type: 'object', properties: {} });
      const declined = await call(peer, 'pause', { agent_id: 'panelagent' }, ELICIT, { inputResponses: { human: { action: 'decline' } }, requestState: second.result!.requestState });
      assert.match(text(declined), /did not continue/);
      assert.equal(mailbox.listRequests({ pendingOnly: true }).length, 0);
    } finally {
      assert.equal(await peer.close(), 0);
    }
  });

  it('a forged, altered or misplaced requestState, or inputResponses with none, is refused and writes nothing', async () => {
    const peer = server();
    try {
      const args = { prompt: 'Which?', agent_id: 'forgeagent' };
      const first = await call(peer, 'cue', args, ELICIT);
      const state = String(first.result!.requestState);
      const cue = await waitUntil(mailbox, pendingFor('forgeagent'), 'the cue');
      const [body, mac] = state.split('.') as [string, string];
      const claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Record<string, unknown>;
      const otherBody = Buffer.from(JSON.stringify({ ...claims, rid: 'req_000000000000' })).toString('base64url');
      const forged: Array<[unknown, RegExp]> = [
        ['made-up', /requestState is not one this server issued/],
        [`${otherBody}.${mac}`, /was not issued by this server, or was altered/],
        [`${body}.${Buffer.alloc(32).toString('base64url')}`, /was not issued by this server, or was altered/],
      ];
      const reply = { human: { action: 'accept', content: { answer: 'forged' } } };
      for (const [requestState, why] of forged) {
        const refused = await call(peer, 'cue', args, ELICIT, { inputResponses: reply, requestState });
        assert.equal(refused.error!.code, -32602);
        assert.match(refused.error!.message, why);
      }
      const elsewhere = await call(peer, 'cue', { ...args, prompt: 'Something else' }, ELICIT, { inputResponses: reply, requestState: state });
      assert.match(elsewhere.error!.message, /requestState belongs to another call/);
      const stateless = await call(peer, 'cue', args, ELICIT, { inputResponses: reply });
      assert.match(stateless.error!.message, /inputResponses without requestState answer no request of this server/);
      const onJoin = await call(peer, 'join', {}, ELICIT, { requestState: state });
      assert.match(onJoin.error!.message, /join never asks for input/);
      assert.equal(mailbox.getRequest(cue.requestId)!.state, 'pending', 'the real cue is untouched');
      assert.equal(mailbox.listRequests().length, 1, 'no other cue was made');
    } finally {
      assert.equal(await peer.close(), 0);
    }
    assert.equal(mailbox.listRequests({ pendingOnly: true }).length, 0, 'the client went away: its unanswered cue was closed');
  });

  it('a client with the tasks extension gets a task: input_required with the elicitation, answered by tasks/update, or from the panel, or cancelled', async () => {
    const peer = server();
    try {
      const caps = { ...ELICIT, ...TASKS };
      const created = await call(peer, 'cue', { prompt: 'Name the release', agent_id: 'taskagent' }, caps);
      assert.equal(created.result!.resultType, 'task');
      const taskId = String(created.result!.taskId);
      assert.ok(['working', 'input_required'].includes(String(created.result!.status)));
      assert.equal(created.result!.pollIntervalMs, 1000);
      await waitUntil(mailbox, pendingFor('taskagent'), 'the task cue');
      const waiting = await peer.request('tasks/get', { taskId, ...meta(caps) });
      assert.equal(waiting.result!.resultType, 'complete');
      assert.equal(waiting.result!.status, 'input_required');
      const keys = Object.keys(waiting.result!.inputRequests as object);
      assert.deepEqual(keys, ['human-1']);
      const ack = await peer.request('tasks/update', { taskId, inputResponses: { 'human-1': { action: 'accept', content: { answer: 'v2.0' } } }, ...meta(caps) });
      assert.deepEqual(ack.result, { resultType: 'complete' });
      const done = await settled(peer, taskId, caps);
      const result = done.result!.result as RpcMessage['result'];
      assert.equal(result!.resultType, 'complete');
      assert.match(text({ jsonrpc: '2.0', result }), /gave these instructions:\n\nv2\.0\n/);

      // No elicitation declared: the task works while the human answers in the panel.
      const second = await call(peer, 'cue', { prompt: 'Second', agent_id: 'taskagent2' }, TASKS);
      const cue = await waitUntil(mailbox, pendingFor('taskagent2'), 'the second cue');
      assert.equal((await peer.request('tasks/get', { taskId: second.result!.taskId, ...meta(TASKS) })).result!.status, 'working');
      await answer(cue.requestId, '--text', 'from the panel');
      assert.match(text({ jsonrpc: '2.0', result: (await settled(peer, String(second.result!.taskId), TASKS)).result!.result as RpcMessage['result'] }), /from the panel/);

      const third = await call(peer, 'cue', { prompt: 'Third', agent_id: 'taskagent3' }, TASKS);
      const thirdCue = await waitUntil(mailbox, pendingFor('taskagent3'), 'the third cue');
      assert.deepEqual((await peer.request('tasks/cancel', { taskId: third.result!.taskId, ...meta(TASKS) })).result, { resultType: 'complete' });
      await waitUntil(mailbox, () => (mailbox.getRequest(thirdCue.requestId)!.state === 'pending' ? undefined : true), 'the cancelled cue');
      assert.equal(mailbox.getRequest(thirdCue.requestId)!.state, 'cancelled');

      const undeclared = await peer.request('tasks/get', { taskId, ...meta(ELICIT) });
      assert.equal(undeclared.error!.code, -32021);
      assert.deepEqual((undeclared.error as { data?: unknown }).data, { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } });
      const missing = await peer.request('tasks/get', { taskId: 'nope', ...meta(TASKS) });
      assert.equal(missing.error!.code, -32602);
    } finally {
      assert.equal(await peer.close(), 0);
    }
  });

  it('a client with neither waits, as today; closing stdin still delivers the answer, and a waiting task\'s cue is cancelled', async () => {
    const peer = server();
    // A blocking call the client cancels: its cue is cancelled and the call gets no answer.
    peer.send({ jsonrpc: '2.0', id: 'gone-1', method: 'tools/call', params: { name: 'cue', arguments: { prompt: 'Never mind?', agent_id: 'cancelagent' }, ...meta() } });
    const cancelled = await waitUntil(mailbox, pendingFor('cancelagent'), 'the cancelled call\'s cue');
    peer.notify('notifications/cancelled', { requestId: 'gone-1', reason: 'the user stopped it' });
    await waitUntil(mailbox, () => (mailbox.getRequest(cancelled.requestId)!.state === 'pending' ? undefined : true), 'the cue cancelled');
    assert.equal(mailbox.getRequest(cancelled.requestId)!.state, 'cancelled');
    const blocking = call(peer, 'cue', { prompt: 'Blocking?', agent_id: 'blockagent' });
    const cue = await waitUntil(mailbox, pendingFor('blockagent'), 'the blocking cue');
    const task = await call(peer, 'cue', { prompt: 'Task?', agent_id: 'lateagent' }, TASKS);
    assert.equal(task.result!.resultType, 'task');
    const taskCue = await waitUntil(mailbox, pendingFor('lateagent'), 'the task cue');
    peer.child.stdin!.end();
    await answer(cue.requestId, '--text', 'yes');
    const result = await blocking;
    assert.equal(result.result!.resultType, 'complete');
    assert.match(text(result), /gave these instructions:\n\nyes\n/);
    assert.equal(await peer.exited, 0);
    assert.equal(mailbox.getRequest(taskCue.requestId)!.state, 'cancelled', 'nobody polls the task any more');
    assert.ok(!peer.messages.some((m) => m.id === 'gone-1'), 'a cancelled call gets no answer');
  });
});

describe('belay mcp --wrap with a 2026-07-28 server', () => {
  let bin: Bundles;
  let env: NodeJS.ProcessEnv;
  let mailbox: Mailbox;

  cueFixture('belay-mcp-wrap-2026-', (f) => ({ bin, env, mailbox } = f));

  const wrapped = () => new RawClient(process.execPath, [bin.belay, 'mcp', '--wrap', '--', process.execPath, MODERN_SERVER], { env, cwd: repoRoot });
  const pending = () => mailbox.listRequests({ pendingOnly: true })[0];
  const answer = (...args: string[]) => run(bin.belay, ['cues', 'answer', ...args], { env });
  const got = (m: RpcMessage) => JSON.parse(text(m)) as { inputResponses: Record<string, unknown>; stateEchoed: boolean; capabilities: unknown; id: unknown };

  it('answers the input requests through cues and retries the call; the client sees only the final result under its own id', async () => {
    const peer = wrapped();
    try {
      const discovered = await peer.request('server/discover', meta());
      assert.deepEqual(discovered.result!.supportedVersions, [V], 'discover passes through');
      const call = peer.request('tools/call', { name: 'ask_form', arguments: {}, ...meta() }, 'mine-1');
      const cue = await waitUntil(mailbox, pending, 'the form cue');
      assert.match(cue.prompt, /^Please provide your GitHub username/);
      assert.match(cue.prompt, /MCP server Modern Deploy/, 'named from serverInfo in the result _meta');
      await answer(cue.requestId, '--field', 'Name=octocat');
      const result = await call;
      assert.equal(result.id, 'mine-1');
      assert.equal(result.result!.resultType, 'complete');
      const seen = got(result);
      assert.deepEqual(seen.inputResponses, { github_login: { action: 'accept', content: { name: 'octocat' } } });
      assert.equal(seen.stateEchoed, true);
      assert.match(String(seen.id), /^belay-[0-9a-f]{12}-retry-\d+$/, 'the server saw Belay\'s retry');
      assert.deepEqual(seen.capabilities, { elicitation: { form: {}, url: {} } }, 'the server was told both modes are supported');
      assert.ok(!peer.messages.some((m) => (m.result as { resultType?: string } | undefined)?.resultType === 'input_required'), 'the client never saw the InputRequiredResult');

      const two = peer.request('tools/call', { name: 'ask_two', arguments: {}, ...meta() });
      const region = await waitUntil(mailbox, pending, 'the region cue');
      await answer(region.requestId, '--field', 'Region=us');
      const replicas = await waitUntil(mailbox, () => mailbox.listRequests({ pendingOnly: true }).find((c) => c.requestId !== region.requestId), 'the replicas cue');
      await answer(replicas.requestId, '--field', 'Replicas=3');
      assert.deepEqual(got(await two).inputResponses, { region: { action: 'accept', content: { region: 'us' } }, replicas: { action: 'accept', content: { n: 3 } } });
    } finally {
      assert.equal(await peer.close(), 0);
    }
  });

  it('a URL input request is a confirm cue; a declined one is retried as decline; bad URLs and secret forms are refused; sampling goes to the client', async () => {
    const peer = wrapped();
    try {
      const url = peer.request('tools/call', { name: 'ask_url', arguments: {}, ...meta() });
      const cue = await waitUntil(mailbox, pending, 'the URL cue');
      assert.match(cue.prompt, /open a page on \*\*auth\.example\.com\*\*/);
      await answer(cue.requestId, '--cancel');
      assert.deepEqual(got(await url).inputResponses, { login: { action: 'decline' } });

      const bad = await peer.request('tools/call', { name: 'ask_url', arguments: { url: 'javascript:alert(1)' }, ...meta() });
      assert.equal(bad.error!.code, -32603);
      assert.match(bad.error!.message, /will not open: javascript: URLs are not opened/);
      const secret = await peer.request('tools/call', { name: 'ask_secret', arguments: {}, ...meta() });
      assert.match(secret.error!.message, /asked for a secret \("apiKey"\) in a form; .*URL mode is for that/);
      assert.equal(mailbox.listRequests().length, 1, 'the refused ones made no cue');

      const sampling = await peer.request('tools/call', { name: 'ask_sampling', arguments: {}, ...meta() });
      assert.equal(sampling.result!.resultType, 'input_required', 'Belay cannot sample: the client gets the request');
      assert.ok((sampling.result!.inputRequests as Record<string, unknown>).capital);
    } finally {
      assert.equal(await peer.close(), 0);
    }
  });

  it('the client cancelling its call cancels the cue; the client going away leaves nothing running', async () => {
    const peer = wrapped();
    peer.send({ jsonrpc: '2.0', id: 'c1', method: 'tools/call', params: { name: 'ask_form', arguments: {}, ...meta() } });
    const cue = await waitUntil(mailbox, pending, 'the cue');
    peer.notify('notifications/cancelled', { requestId: 'c1', reason: 'no longer needed' });
    await waitUntil(mailbox, () => (mailbox.getRequest(cue.requestId)!.state === 'pending' ? undefined : true), 'the cancelled cue');
    assert.equal(mailbox.getRequest(cue.requestId)!.state, 'cancelled');
    peer.send({ jsonrpc: '2.0', id: 'c2', method: 'tools/call', params: { name: 'ask_form', arguments: {}, ...meta() } });
    const second = await waitUntil(mailbox, () => mailbox.listRequests({ pendingOnly: true })[0], 'the second cue');
    const serverPid = Number(/modern-deploy ready pid=(\d+)/.exec(peer.stderr)?.[1]);
    assert.ok(serverPid > 0, peer.stderr);
    peer.child.kill('SIGTERM');
    await peer.exited;
    assert.ok(exitedOrZombie(serverPid), 'the wrapped server is gone too');
    await waitUntil(mailbox, () => (mailbox.getRequest(second.requestId)!.state === 'pending' ? undefined : true), 'the second cue closed');
    assert.ok(!peer.messages.some((m) => m.id === 'c1'), 'a cancelled call gets no answer');
  });
});
