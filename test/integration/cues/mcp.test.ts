// `belay mcp`: the HAP tools as a stdio MCP server, driven by the official SDK's client and by raw
// JSON-RPC lines, against a real mailbox in a temp CUE_HOME; answers come from `belay cues answer`
// (the panel's own answer composer) and from the store, as a console would write them.
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { renderResponse } from '../../../src/cues/core/hap.ts';
import { Mailbox, type CueEntry } from '../../../src/cues/core/store.ts';
import { timeoutText } from '../../../src/cues/core/texts.ts';
import { parsePayloadArgument, runtimeFromClient } from '../../../src/cli/mcpServer.ts';
import { buildBundles, childEnv, cueFixture, envelope, run, start, tempHome, waitUntil, type Bundles } from '../../support/cues/helpers.ts';
import { RawClient, sdkClient, textOf } from '../../support/cues/mcpHelpers.ts';

describe('belay mcp: the HAP tools over MCP', () => {
  let bin: Bundles;
  let home: ReturnType<typeof tempHome>;
  let env: NodeJS.ProcessEnv;
  let mailbox: Mailbox;

  cueFixture('belay-mcp-', (f) => ({ bin, home, env, mailbox } = f));

  const pendingFor = (agentId: string) => () => mailbox.listRequests({ pendingOnly: true, agentId })[0];
  const answer = (...args: string[]) => run(bin.belay, ['cues', 'answer', ...args], { env });

  it('lists the public cuemcp\'s four tools with their arguments', async () => {
    const { client } = await sdkClient(process.execPath, [bin.belay, 'mcp'], { env });
    try {
      const { tools } = await client.listTools();
      const byName = new Map(tools.map((t) => [t.name, t]));
      assert.deepEqual([...byName.keys()].sort(), ['cue', 'join', 'pause', 'recall']);
      assert.deepEqual(Object.keys(byName.get('join')!.inputSchema.properties ?? {}), []);
      assert.deepEqual(byName.get('recall')!.inputSchema.required, ['hints']);
      assert.deepEqual(Object.keys(byName.get('cue')!.inputSchema.properties ?? {}).sort(), ['agent_id', 'payload', 'prompt']);
      assert.deepEqual([...(byName.get('cue')!.inputSchema.required ?? [])].sort(), ['agent_id', 'prompt']);
      const payload = (byName.get('cue')!.inputSchema.properties as Record<string, { anyOf?: Array<{ type: string }> }>).payload!;
      assert.ok(payload.anyOf?.some((s) => s.type === 'string') && payload.anyOf.some((s) => s.type === 'null'), 'payload is a JSON string or null');
      assert.deepEqual(byName.get('pause')!.inputSchema.required, ['agent_id']);
      assert.ok(Object.hasOwn(byName.get('pause')!.inputSchema.properties ?? {}, 'prompt'));
      assert.equal(client.getServerVersion()?.name, 'belay');
      assert.match(client.getInstructions() ?? '', /join\(\).*cue\(/s);
    } finally {
      await client.close();
    }
  });

  it('join records the agent with the client as its runtime; recall finds it again; a cue returns the very text cueme prints', async () => {
    const { client } = await sdkClient(process.execPath, [bin.belay, 'mcp'], { env, cwd: home.dir, name: 'claude-code' });
    try {
      const joined = textOf(await client.callTool({ name: 'join', arguments: {} }));
      const agentId = /^agent_id=([a-z]{8,12})$/m.exec(joined)?.[1];
      assert.ok(agentId, joined);
      assert.match(joined, /^agent_runtime=claude_code$/m);
      assert.match(joined, new RegExp(`^project_dir=${home.dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
      assert.equal(mailbox.listAgents().find((a) => a.agentId === agentId)?.runtime, 'claude_code');

      const payload = JSON.stringify({ type: 'choice', options: ['Deploy', 'Wait'] });
      const called = client.callTool({ name: 'cue', arguments: { prompt: 'Deploy the billing refactor?', agent_id: agentId, payload } });
      const request = await waitUntil(mailbox, pendingFor(agentId), 'the MCP cue');
      assert.equal(request.prompt, 'Deploy the billing refactor?');
      assert.equal(request.payload.kind, 'choice');
      assert.equal(request.payloadJson, payload);
      const answered = await answer(request.requestId, '--choice', 'Deploy');
      assert.equal(answered.code, 0, answered.stderr);
      const result = await called;
      assert.equal(result.isError, undefined);
      assert.deepEqual(result.content, [{ type: 'text', text: renderResponse('cue', { id: 0, text: 'Deploy', cancelled: false, files: [] }).text }]);

      // The same cue through cueme, answered the same way, prints exactly the same text.
      const cueme = start(bin.cueme, ['cue', agentId, '-'], { env, input: envelope('Deploy the billing refactor?', JSON.parse(payload)) });
      const viaCueme = await waitUntil(mailbox, () => mailbox.listRequests({ pendingOnly: true, agentId })[0], 'the cueme cue');
      await answer(viaCueme.requestId, '--choice', 'Deploy');
      assert.equal((await cueme.done).stdout, textOf(result));

      const recalled = textOf(await client.callTool({ name: 'recall', arguments: { hints: 'billing refactor' } }));
      assert.match(recalled, new RegExp(`^agent_id=${agentId}$`, 'm'));
      assert.match(textOf(await client.callTool({ name: 'recall', arguments: { hints: 'nothing like it' } })), /No matching record found/);
    } finally {
      await client.close();
    }
  });

  it('answers with attached images as MCP image content, other files as paths only', async () => {
    const { client } = await sdkClient(process.execPath, [bin.belay, 'mcp'], { env });
    try {
      const png = path.join(home.dir, 'screen.png');
      const bytes = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
      writeFileSync(png, bytes);
      const notes = path.join(home.dir, 'notes.txt');
      writeFileSync(notes, 'read me');
      const called = client.callTool({ name: 'cue', arguments: { prompt: 'Show me', agent_id: 'imageagent', payload: null } });
      const request = await waitUntil(mailbox, pendingFor('imageagent'), 'the cue');
      const answered = await answer(request.requestId, '--text', 'Like this', '--attach', png, '--attach', notes);
      assert.equal(answered.code, 0, answered.stderr);
      const result = await called;
      const content = result.content as Array<{ type: string; text?: string; data?: string; mimeType?: string }>;
      assert.equal(content.length, 2);
      assert.equal(content[0]!.type, 'text');
      const entry = mailbox.getRequest(request.requestId)!;
      assert.equal(content[0]!.text, renderResponse('cue', entry.response!).text);
      assert.match(content[0]!.text!, /gave these instructions:\n\nLike this\n[\s\S]*\.png \(image\/png\)\n- .*\.txt \(text\/plain\)/);
      assert.deepEqual(content[1], { type: 'image', data: bytes.toString('base64'), mimeType: 'image/png' });
    } finally {
      await client.close();
    }
  });

  it('cancel, empty answer, pause, timeout: the texts cueme prints, and nothing left pending', async () => {
    const { client } = await sdkClient(process.execPath, [bin.belay, 'mcp'], { env });
    try {
      const cancelled = client.callTool({ name: 'cue', arguments: { prompt: 'Go?', agent_id: 'agentc' } });
      await answer((await waitUntil(mailbox, pendingFor('agentc'), 'cue')).requestId, '--cancel');
      assert.match(textOf(await cancelled), /^The user did not continue\. Call pause\(agent_id\)/);

      const paused = client.callTool({ name: 'pause', arguments: { agent_id: 'agentp', prompt: 'Lunch break' } });
      const pause = await waitUntil(mailbox, pendingFor('agentp'), 'pause');
      assert.equal(pause.payload.kind, 'pause');
      assert.equal(pause.prompt, 'Lunch break');
      const continued = await answer(pause.requestId, '--confirm');
      assert.equal(continued.code, 0, continued.stderr);
      assert.match(textOf(await paused), /^The user resumed the conversation\./);
    } finally {
      await client.close();
    }
    // The timeout follows CUEME_TIMEOUT_SECONDS (short, in a server of its own so the answers above
    // never race it), and the cue is then closed in the mailbox.
    const { client: impatient } = await sdkClient(process.execPath, [bin.belay, 'mcp'], { env: { ...env, CUEME_TIMEOUT_SECONDS: '0.5' } });
    try {
      const timedOut = await impatient.callTool({ name: 'cue', arguments: { prompt: 'Anyone?', agent_id: 'agentt' } });
      assert.equal(textOf(timedOut), timeoutText('cue'));
      const closed = mailbox.listRequests({ agentId: 'agentt' });
      assert.equal(closed.length, 1);
      assert.equal(closed[0]!.state, 'cancelled');
    } finally {
      await impatient.close();
    }
  });

  it('a client that cancels its call, or goes away, leaves no cue answerable', async () => {
    const { client } = await sdkClient(process.execPath, [bin.belay, 'mcp'], { env });
    const aborted = new AbortController();
    const call = client.callTool({ name: 'cue', arguments: { prompt: 'Still there?', agent_id: 'agenta' } }, undefined, { signal: aborted.signal });
    call.catch(() => undefined);
    const request = await waitUntil(mailbox, pendingFor('agenta'), 'cue');
    aborted.abort();
    await assert.rejects(call);
    const state = (id: string) => () => {
      const entry = mailbox.getRequest(id);
      return entry && entry.state !== 'pending' ? entry : undefined;
    };
    assert.equal((await waitUntil(mailbox, state(request.requestId), 'the cancelled cue')).state, 'cancelled');

    void client.callTool({ name: 'pause', arguments: { agent_id: 'agentb' } }).catch(() => undefined);
    const pause = await waitUntil(mailbox, pendingFor('agentb'), 'pause');
    await client.close();
    assert.equal((await waitUntil(mailbox, state(pause.requestId), 'the pause closed with its client')).state, 'cancelled');
  });

  it('refuses what cannot be a cue with a message the model can act on, writing nothing', async () => {
    const { client } = await sdkClient(process.execPath, [bin.belay, 'mcp'], { env });
    try {
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ prompt: 'x', agent_id: 'a1', payload: '{not json' }, /payload is not valid JSON.*Nothing was sent/],
        [{ prompt: 'x', agent_id: 'a1', payload: '[1,2]' }, /JSON object or null, not an array/],
        [{ prompt: '   ', agent_id: 'a1' }, /needs a prompt/],
        [{ prompt: 'x', agent_id: ' ' }, /needs your agent_id.*join\(\)/],
        [{ prompt: 'x' }, /agent_id/],
        [{ prompt: 42, agent_id: 'a1' }, /prompt/],
      ];
      for (const [args, message] of cases) {
        const result = await client.callTool({ name: 'cue', arguments: args });
        assert.equal(result.isError, true, JSON.stringify(args));
        assert.match(textOf(result), message, JSON.stringify(args));
      }
      assert.equal(mailbox.listRequests().length, 0);

      // A payload object that is not the protocol's goes to the human as a plain prompt, with a note.
      const called = client.callTool({ name: 'cue', arguments: { prompt: 'Pick', agent_id: 'a2', payload: { type: 'slider' } } });
      const request = await waitUntil(mailbox, pendingFor('a2'), 'cue');
      assert.equal(request.payload.kind, 'invalid');
      await answer(request.requestId, '--text', 'ok');
      assert.match(textOf(await called), /^Note: payload does not follow the protocol.*plain prompt\.\n\nThe user wants to continue/s);
    } finally {
      await client.close();
    }
  });

  it('without a home the tools say why, and the server keeps serving', async () => {
    // Spawned directly: the SDK's client would hand the child its own HOME.
    const peer = new RawClient(process.execPath, [bin.belay, 'mcp'], { env: { PATH: process.env.PATH } });
    try {
      await peer.initialize();
      const joined = await peer.request('tools/call', { name: 'join', arguments: {} });
      assert.equal(joined.result!.isError, true);
      assert.match((joined.result!.content as Array<{ text: string }>)[0]!.text, /cue mailbox cannot be used: .*HOME is not set.*CUE_HOME/);
      assert.equal(((await peer.request('tools/list')).result!.tools as unknown[]).length, 4);
    } finally {
      assert.equal(await peer.close(), 0);
    }
  });

  it('raw JSON-RPC, one message per line: initialize, list, call each tool, answers from belay cues answer', async () => {
    const peer = new RawClient(process.execPath, [bin.belay, 'mcp'], { env, cwd: home.dir });
    try {
      const init = await peer.initialize({}, 'Visual Studio Code');
      assert.equal(init.result!.protocolVersion, '2025-06-18');
      assert.deepEqual((init.result!.serverInfo as { name: string }).name, 'belay');
      assert.ok((init.result!.capabilities as Record<string, unknown>).tools);
      assert.equal((await peer.request('ping')).error, undefined);
      const listed = await peer.request('tools/list');
      assert.deepEqual((listed.result!.tools as Array<{ name: string }>).map((t) => t.name).sort(), ['cue', 'join', 'pause', 'recall']);

      const joined = await peer.request('tools/call', { name: 'join', arguments: {} });
      const joinText = (joined.result!.content as Array<{ text: string }>)[0]!.text;
      const agentId = /^agent_id=(\w+)$/m.exec(joinText)![1]!;
      assert.match(joinText, /^agent_runtime=vscode$/m);

      const form = { type: 'form', fields: [{ label: 'Env', options: ['prod', 'staging'] }, { label: 'Reason', kind: 'text' }] };
      const cueId = 'cue-1';
      peer.send({ jsonrpc: '2.0', id: cueId, method: 'tools/call', params: { name: 'cue', arguments: { prompt: 'Where to?', agent_id: agentId, payload: JSON.stringify(form) } } });
      const request = await waitUntil(mailbox, pendingFor(agentId), 'the raw cue');
      assert.equal(request.payload.kind, 'form');
      const answered = await answer(request.requestId, '--field', 'Env=staging', '--field', 'Reason=smoke test first');
      assert.equal(answered.code, 0, answered.stderr);
      const cued = await peer.next((m) => m.id === cueId, 'the cue result');
      assert.deepEqual(cued.result, { content: [{ type: 'text', text: renderResponse('cue', { id: 0, text: 'Env: staging\nReason: smoke test first', cancelled: false, files: [] }).text }] });

      const recalled = await peer.request('tools/call', { name: 'recall', arguments: { hints: 'Where to' } });
      assert.match((recalled.result!.content as Array<{ text: string }>)[0]!.text, new RegExp(`^agent_id=${agentId}$`, 'm'));

      peer.send({ jsonrpc: '2.0', id: 'p', method: 'tools/call', params: { name: 'pause', arguments: { agent_id: agentId } } });
      const pause = await waitUntil(mailbox, pendingFor(agentId), 'the raw pause');
      await answer(pause.requestId, '--confirm');
      const resumed = await peer.next((m) => m.id === 'p', 'the pause result');
      assert.match((resumed.result!.content as Array<{ text: string }>)[0]!.text, /^The user resumed the conversation\./);

      const unknown = await peer.request('tools/call', { name: 'frobnicate', arguments: {} });
      assert.ok(unknown.error || unknown.result?.isError, 'an unknown tool is an error');
      for (const line of peer.lines) assert.doesNotThrow(() => JSON.parse(line), 'every stdout line is one JSON-RPC message');
    } finally {
      assert.equal(await peer.close(), 0);
    }
    assert.doesNotMatch(peer.stderr, /ExperimentalWarning/);
  });

  it('a client that closes stdin still gets the result of a pending cue, then the server exits; a signal cancels the cue', async () => {
    // Everything written at once and stdin closed, as a script piping into the server does.
    const peer = new RawClient(process.execPath, [bin.belay, 'mcp'], { env });
    peer.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'pipe', version: '1' } } });
    peer.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    peer.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    peer.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'cue', arguments: { prompt: 'Hello?', agent_id: 'piped' } } });
    const exited = peer.close();
    const request = await waitUntil(mailbox, pendingFor('piped'), 'the piped cue');
    assert.equal(((await peer.next((m) => m.id === 2, 'the tool list')).result!.tools as unknown[]).length, 4);
    await answer(request.requestId, '--text', 'Hi there');
    assert.match(((await peer.next((m) => m.id === 3, 'the cue result')).result!.content as Array<{ text: string }>)[0]!.text, /instructions:\n\nHi there\n/);
    assert.equal(await exited, 0);

    const signalled = new RawClient(process.execPath, [bin.belay, 'mcp'], { env });
    await signalled.initialize();
    signalled.send({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'pause', arguments: { agent_id: 'rawgone' } } });
    const pause: CueEntry = await waitUntil(mailbox, pendingFor('rawgone'), 'the pause');
    signalled.child.kill('SIGTERM');
    assert.equal(await signalled.exited, 0);
    assert.equal(mailbox.getRequest(pause.requestId)!.state, 'cancelled');
  });
});

describe('belay mcp: a client that dies', () => {
  it('without closing anything cleanly: its pending cue is cancelled and the server exits', async () => {
    const bin = await buildBundles();
    const home = tempHome('belay-mcp-orphan-');
    const mailbox = Mailbox.open({ home: home.cueHome });
    try {
      // A client process that starts the server, sends a cue, closes stdin, then is killed with -9.
      const lines = [
        { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'doomed', version: '1' } } },
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'cue', arguments: { prompt: 'Anyone?', agent_id: 'orphanagent' } } },
      ].map((m) => JSON.stringify(m) + '\n').join('');
      const script = `const c = require('node:child_process').spawn(process.execPath, [${JSON.stringify(bin.belay)}, 'mcp'], { stdio: ['pipe', 'pipe', 'inherit'] });
        c.stdin.end(${JSON.stringify(lines)}); c.stdout.resume(); console.log(c.pid); setInterval(() => {}, 1000);`;
      const client = start('-e', [script], { env: childEnv(home.cueHome), input: '' });
      const request = await waitUntil(mailbox, () => mailbox.listRequests({ pendingOnly: true, agentId: 'orphanagent' })[0], 'the cue');
      client.child.kill('SIGKILL');
      const closed = await waitUntil(mailbox, () => (mailbox.getRequest(request.requestId)?.state === 'cancelled' ? true : undefined), 'the cue cancelled after its client died');
      assert.equal(closed, true);
    } finally {
      mailbox.close();
      home.remove();
      rmSync(bin.dir, { recursive: true, force: true });
    }
  });
});

describe('belay mcp: pure parts', () => {
  it('reads the payload argument as cuemcp takes it (a JSON string or null), and an object too', () => {
    assert.deepEqual(parsePayloadArgument(undefined), { payloadJson: null });
    assert.deepEqual(parsePayloadArgument(null), { payloadJson: null });
    assert.deepEqual(parsePayloadArgument('  '), { payloadJson: null });
    assert.deepEqual(parsePayloadArgument('null'), { payloadJson: null });
    assert.deepEqual(parsePayloadArgument('{ "type": "confirm", "text": "Go?" }'), { payloadJson: '{"type":"confirm","text":"Go?"}' });
    assert.deepEqual(parsePayloadArgument({ type: 'choice', options: ['a'] }), { payloadJson: '{"type":"choice","options":["a"]}' });
    assert.match((parsePayloadArgument({ type: 'choice' }) as { warning: string }).warning, /does not follow the protocol/);
    assert.match((parsePayloadArgument('"text"') as { error: string }).error, /not string/);
    assert.match((parsePayloadArgument('{') as { error: string }).error, /not valid JSON/);
    assert.match((parsePayloadArgument(7) as { error: string }).error, /not number/);
  });

  it('names the runtime after the client, with the usual tags for the known ones', () => {
    assert.equal(runtimeFromClient('Visual Studio Code'), 'vscode');
    assert.equal(runtimeFromClient('claude-code'), 'claude_code');
    assert.equal(runtimeFromClient('cursor-vscode'), 'cursor');
    assert.equal(runtimeFromClient('codex-mcp-client'), 'codex');
    assert.equal(runtimeFromClient('My Agent'), 'my_agent');
    assert.equal(runtimeFromClient(undefined), 'mcp');
    assert.equal(runtimeFromClient('  '), 'mcp');
  });
});
