// `belay mcp --wrap -- COMMAND…`: a real MCP server written for these tests (official SDK, stdio)
// runs behind Belay and asks through elicitation; the SDK's client and raw JSON-RPC talk to Belay.
// The human's answers are written by `belay cues answer`, as the panel composes them.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, watch, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { elicitationForm, readFormAnswer } from '../../../src/cli/mcpForm.ts';
import { withElicitationModes } from '../../../src/cli/mcpBridge.ts';
import { Mailbox } from '../../../src/cues/core/store.ts';
import { cueFixture, repoRoot, run, start, tempHome, waitUntil, type Bundles } from '../../support/cues/helpers.ts';
import { RawClient, sdkClient, textOf } from '../../support/cues/mcpHelpers.ts';

const SERVER = path.join(repoRoot, 'test', 'fixtures', 'mcp', 'elicit-server.ts');

describe('belay mcp --wrap: elicitations of a wrapped server become cues', () => {
  let bin: Bundles;
  let home: ReturnType<typeof tempHome>;
  let env: NodeJS.ProcessEnv;
  let mailbox: Mailbox;

  cueFixture('belay-mcp-wrap-', (f) => ({ bin, home, env, mailbox } = f));

  const wrapped = (extraEnv: NodeJS.ProcessEnv = {}, capabilities = {}) =>
    sdkClient(process.execPath, [bin.belay, 'mcp', '--wrap', '--', process.execPath, SERVER], { env: { ...env, ...extraEnv }, cwd: repoRoot, capabilities });
  const pending = () => mailbox.listRequests({ pendingOnly: true })[0];
  const answer = (...args: string[]) => run(bin.belay, ['cues', 'answer', ...args], { env });
  const resultOf = async (call: Promise<object>) => JSON.parse(textOf(await call)) as Record<string, unknown>;

  it('a form of every field kind is asked as a cue; the answer goes back typed, as the schema wants it', async () => {
    const { client } = await wrapped();
    try {
      const call = client.callTool({ name: 'ask_details', arguments: {} }, undefined, { timeout: 60_000 });
      const cue = await waitUntil(mailbox, pending, 'the elicitation cue');
      assert.match(cue.prompt, /^Where should I deploy\?/);
      assert.match(cue.prompt, /\*\*Port\*\* \(a whole number, 1 to 65535\): The port to listen on/);
      assert.match(cue.prompt, /Deploy Helper/);
      assert.equal(cue.payload.kind, 'form');
      const fields = cue.payload.kind === 'form' ? cue.payload.payload.fields : [];
      assert.deepEqual(
        fields.map((f) => [f.label, f.options ?? null, f.allow_multiple ?? false]),
        [
          ['Name', null, false],
          ['Port', null, false],
          ['Use TLS (optional)', ['Yes', 'No'], false],
          ['Environment', ['Production', 'Staging'], false],
          ['Features (optional)', ['Logs', 'Metrics', 'Traces, sampled'], true],
          ['Contact (optional)', null, false],
        ],
      );
      assert.equal(mailbox.listAgents().find((a) => a.agentId === cue.agentId)?.runtime, 'deploy_helper');
      const answered = await answer(
        cue.requestId,
        ...['--field', 'Name=api', '--field', 'Port=8443', '--field', 'Use TLS (optional)=No', '--field', 'Environment=Staging'],
        ...['--field', 'Features (optional)=Traces, sampled', '--field', 'Features (optional)=Logs'],
      );
      assert.equal(answered.code, 0, answered.stderr);
      // The wrapped server's SDK validated the content against its own schema before returning it.
      assert.deepEqual(await resultOf(call), { action: 'accept', content: { name: 'api', port: 8443, tls: false, env: 'staging', features: ['logs', 'traces'] } });
    } finally {
      await client.close();
    }
  });

  it('an answer that does not fit is asked again with what was wrong; the defaults fill what was left out', async () => {
    const { client } = await wrapped();
    try {
      const call = client.callTool({ name: 'ask_details', arguments: {} }, undefined, { timeout: 60_000 });
      const first = await waitUntil(mailbox, pending, 'the first cue');
      await answer(first.requestId, '--field', 'Name=x', '--field', 'Port=eighty', '--field', 'Contact (optional)=nobody');
      const second = await waitUntil(mailbox, () => mailbox.listRequests({ pendingOnly: true }).find((c) => c.requestId !== first.requestId), 'the second cue');
      assert.match(second.prompt, /^Your answer did not fit the form: Name needs at least 2 characters; Port must be a number, got "eighty"; Environment is required; Contact \(optional\) must be an email address, got "nobody"\. Please answer again\.\n\nWhere should I deploy\?/);
      assert.equal(second.agentId, first.agentId);
      await answer(second.requestId, '--field', 'Name=web', '--field', 'Port=80', '--field', 'Environment=Production');
      assert.deepEqual(await resultOf(call), { action: 'accept', content: { name: 'web', port: 80, tls: true, env: 'prod' } });
    } finally {
      await client.close();
    }
  });

  it('ending the cue declines, the timeout cancels, a form with no fields is a confirm', async () => {
    const { client } = await wrapped();
    try {
      const declined = client.callTool({ name: 'ask_confirm', arguments: {} }, undefined, { timeout: 60_000 });
      const confirm = await waitUntil(mailbox, pending, 'the confirm cue');
      assert.equal(confirm.payload.kind, 'confirm');
      assert.deepEqual(confirm.payload.kind === 'confirm' && [confirm.payload.payload.confirm_label, confirm.payload.payload.cancel_label], ['Accept', 'Decline']);
      await answer(confirm.requestId, '--cancel');
      assert.deepEqual(await resultOf(declined), { action: 'decline' });
    } finally {
      await client.close();
    }
    // Nobody answers: the cue times out (CUEME_TIMEOUT_SECONDS, short here, in a server of its own
    // so the answer above never races it) and the elicitation is cancelled.
    const { client: impatient } = await wrapped({ CUEME_TIMEOUT_SECONDS: '0.5' });
    try {
      assert.deepEqual(await resultOf(impatient.callTool({ name: 'ask_details', arguments: {} }, undefined, { timeout: 60_000 })), { action: 'cancel' });
      assert.equal(mailbox.listRequests({ pendingOnly: true }).length, 0);
    } finally {
      await impatient.close();
    }
  });

  it('a confirmed form with no fields accepts with empty content', async () => {
    const { client } = await wrapped();
    try {
      const call = client.callTool({ name: 'ask_confirm', arguments: {} }, undefined, { timeout: 60_000 });
      await answer((await waitUntil(mailbox, pending, 'the confirm cue')).requestId, '--confirm');
      assert.deepEqual(await resultOf(call), { action: 'accept', content: {} });
    } finally {
      await client.close();
    }
  });

  it('the server cancelling its elicitation cancels the cue', async () => {
    const { client } = await wrapped();
    try {
      const call = client.callTool({ name: 'ask_pending', arguments: {} }, undefined, { timeout: 60_000 });
      const cue = await waitUntil(mailbox, pending, 'the cue');
      assert.deepEqual(await resultOf(client.callTool({ name: 'give_up', arguments: {} })), { cancelled: true });
      assert.match(String((await resultOf(call)).error), /no longer needed|abort/i);
      const closed = await waitUntil(mailbox, () => (mailbox.getRequest(cue.requestId)?.state === 'cancelled' ? true : undefined), 'the cue cancelled');
      assert.equal(closed, true);
    } finally {
      await client.close();
    }
  });

  it('everything else passes through: tools, results, logging; no elicitation reaches the client\'s own handler', async () => {
    const { client } = await wrapped({}, { elicitation: { url: {} } });
    const seen: unknown[] = [];
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      seen.push(request.params);
      return { action: 'accept' };
    });
    try {
      assert.equal(client.getServerVersion()?.name, 'deploy-helper');
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name).sort(), ['ask_confirm', 'ask_details', 'ask_pending', 'ask_secret', 'ask_url', 'ask_url_to', 'client_capabilities', 'echo', 'give_up']);
      const echoed = await client.callTool({ name: 'echo', arguments: { text: 'héllo' } });
      assert.deepEqual(echoed.structuredContent, { echoed: 'héllo', unicode: 'é✓' });
      assert.deepEqual(await resultOf(client.callTool({ name: 'client_capabilities', arguments: {} })), { elicitation: { url: {}, form: {} } });
      assert.deepEqual(seen, []);
      assert.equal(mailbox.listRequests().length, 0, 'nothing of this went to the mailbox');
    } finally {
      await client.close();
    }
  });

  it('raw JSON-RPC: a client with no elicitation gets its server\'s lines unchanged, and the server sees form elicitation', async () => {
    const peer = new RawClient(process.execPath, [bin.belay, 'mcp', '--wrap', process.execPath, SERVER], { env, cwd: repoRoot });
    try {
      const init = await peer.initialize({}, 'raw');
      assert.equal((init.result!.serverInfo as { name: string }).name, 'deploy-helper');
      const caps = await peer.request('tools/call', { name: 'client_capabilities', arguments: {} });
      assert.deepEqual(JSON.parse((caps.result!.content as Array<{ text: string }>)[0]!.text), { elicitation: { form: {}, url: {} } });
      peer.send({ jsonrpc: '2.0', id: 'e', method: 'tools/call', params: { name: 'echo', arguments: { text: 'a\u2028b' } } });
      const echoed = await peer.next((m) => m.id === 'e', 'the echo');
      const line = peer.lines.find((l) => l.includes('"id":"e"'))!;
      assert.deepEqual(JSON.parse(line), echoed);
      assert.ok(peer.messages.some((m) => m.method === 'notifications/message'), 'the server\'s log notification passed through');

      peer.send({ jsonrpc: '2.0', id: 'd', method: 'tools/call', params: { name: 'ask_details', arguments: {} } });
      const cue = await waitUntil(mailbox, pending, 'the cue');
      await answer(cue.requestId, '--field', 'Name=db', '--field', 'Port=5432', '--field', 'Environment=Production', '--field', 'Features (optional)=Metrics');
      const result = await peer.next((m) => m.id === 'd', 'the tool result');
      assert.deepEqual(JSON.parse((result.result!.content as Array<{ text: string }>)[0]!.text), { action: 'accept', content: { name: 'db', port: 5432, tls: true, env: 'prod', features: ['metrics'] } });
      assert.ok(!peer.messages.some((m) => m.method === 'elicitation/create'), 'the client never saw the form elicitation');
    } finally {
      assert.equal(await peer.close(), 0);
    }
  });

  /** A browser opener of our own on PATH: it records the URL it was given (written whole, then renamed). */
  const fakeOpener = () => {
    const dir = path.join(home.dir, 'opener');
    mkdirSync(dir, { recursive: true });
    const opened = path.join(home.dir, 'opened.txt');
    writeFileSync(path.join(dir, 'xdg-open'), `#!/bin/sh\nprintf '%s\\n' "$1" > "${opened}.tmp" && mv "${opened}.tmp" "${opened}"\n`, { mode: 0o755 });
    return { PATH: `${dir}${path.delimiter}${env.PATH ?? ''}`, opened };
  };
  const appears = (file: string, timeoutMs = 15_000) =>
    new Promise<string>((resolve, reject) => {
      const watcher = watch(path.dirname(file), () => check());
      const timer = setTimeout(() => (watcher.close(), reject(new Error(`${file} did not appear`))), timeoutMs);
      const check = () => {
        if (!existsSync(file)) return;
        watcher.close();
        clearTimeout(timer);
        resolve(readFileSync(file, 'utf8'));
      };
      check();
    });

  it('a URL elicitation is a confirm cue naming the host; the page opens only after the person agrees', async () => {
    const opener = fakeOpener();
    const { client } = await wrapped({ PATH: opener.PATH }, { elicitation: { url: {} } });
    const seen: unknown[] = [];
    client.setRequestHandler(ElicitRequestSchema, (request) => (seen.push(request.params), { action: 'decline' }));
    try {
      const declined = client.callTool({ name: 'ask_url', arguments: {} }, undefined, { timeout: 60_000 });
      const first = await waitUntil(mailbox, pending, 'the URL cue');
      assert.equal(first.payload.kind, 'confirm');
      assert.match(first.prompt, /^The MCP server Deploy Helper asks you to open a page on \*\*example\.com\*\*\.\n\nSign in, please\n\n`https:\/\/example\.com\/login`/);
      await answer(first.requestId, '--cancel');
      assert.deepEqual(await resultOf(declined), { action: 'decline' });
      assert.equal(existsSync(opener.opened), false, 'declined: nothing was opened');

      const accepted = client.callTool({ name: 'ask_url', arguments: {} }, undefined, { timeout: 60_000 });
      const second = await waitUntil(mailbox, () => mailbox.listRequests({ pendingOnly: true }).find((c) => c.requestId !== first.requestId), 'the second URL cue');
      await answer(second.requestId, '--confirm');
      assert.deepEqual(await resultOf(accepted), { action: 'accept' });
      assert.equal(await appears(opener.opened), 'https://example.com/login\n');
      assert.deepEqual(seen, [], 'the client was never asked');
    } finally {
      await client.close();
    }
  });

  it('where no browser opener exists the page is printed; javascript:, file: and credentials in a URL are refused without a cue', async () => {
    const empty = path.join(home.dir, 'empty-path');
    mkdirSync(empty);
    const { client, stderr } = await wrapped({ PATH: empty });
    try {
      const call = client.callTool({ name: 'ask_url_to', arguments: { url: 'https://auth.example.org:8443/device?code=ABCD' } }, undefined, { timeout: 60_000 });
      const cue = await waitUntil(mailbox, pending, 'the URL cue');
      assert.match(cue.prompt, /\*\*auth\.example\.org:8443\*\*/);
      await answer(cue.requestId, '--confirm');
      assert.deepEqual(await resultOf(call), { action: 'accept' });
      assert.match(stderr(), /^belay mcp: open this page to continue: https:\/\/auth\.example\.org:8443\/device\?code=ABCD$/m);

      const hostile: Array<[string, RegExp]> = [
        ['javascript:alert(document.cookie)', /javascript: URLs are not opened \(only http and https\)/],
        ['file:///etc/passwd', /file: URLs are not opened/],
        ['https://admin:hunter2@bank.example.com/', /its URL carries credentials/],
        ['https://ok.example.com/\u001b[2Jx', /spaces or control characters/],
      ];
      for (const [url, why] of hostile) {
        const result = await resultOf(client.callTool({ name: 'ask_url_to', arguments: { url } }, undefined, { timeout: 60_000 }));
        assert.match(String(result.error), why, url);
        assert.match(String(result.error), /sent a URL elicitation Belay will not open/);
      }
      assert.equal(mailbox.listRequests().length, 1, 'only the good URL made a cue');
    } finally {
      await client.close();
    }
  });

  it('a form asking for a secret is refused with one line saying URL mode is for that', async () => {
    const { client, stderr } = await wrapped();
    try {
      const result = await resultOf(client.callTool({ name: 'ask_secret', arguments: {} }, undefined, { timeout: 60_000 }));
      assert.match(String(result.error), /the MCP server Deploy Helper asked for a secret \("pw"\) in a form; Belay does not pass secrets through forms: URL mode is for that/);
      assert.equal(mailbox.listRequests().length, 0, 'no cue was made');
      assert.equal(stderr().split('\n').filter((l) => l.includes('asked for a secret')).length, 1);
    } finally {
      await client.close();
    }
  });

  it('a client that closes stdin still gets its pending elicitation answered; a signal, or the client killed with -9, ends the server and cancels the cue; a missing server is one clear line', async () => {
    const peer = new RawClient(process.execPath, [bin.belay, 'mcp', '--wrap', '--', process.execPath, SERVER], { env, cwd: repoRoot });
    await peer.initialize();
    peer.send({ jsonrpc: '2.0', id: 'confirm', method: 'tools/call', params: { name: 'ask_confirm', arguments: {} } });
    const exited = peer.close();
    const first = await waitUntil(mailbox, pending, 'the cue');
    await answer(first.requestId, '--confirm');
    const result = await peer.next((m) => m.id === 'confirm', 'the tool result');
    assert.deepEqual(JSON.parse((result.result!.content as Array<{ text: string }>)[0]!.text), { action: 'accept', content: {} });
    assert.equal(await exited, 0);

    const signalled = new RawClient(process.execPath, [bin.belay, 'mcp', '--wrap', '--', process.execPath, SERVER], { env, cwd: repoRoot });
    await signalled.initialize();
    signalled.send({ jsonrpc: '2.0', id: 'details', method: 'tools/call', params: { name: 'ask_details', arguments: {} } });
    const cue = await waitUntil(mailbox, pending, 'the second cue');
    signalled.child.kill('SIGTERM');
    assert.equal(await signalled.exited, 0);
    assert.equal(mailbox.getRequest(cue.requestId)!.state, 'cancelled');

    // A client killed with -9 after closing stdin: the bridge notices it is orphaned and ends it all.
    const lines = [
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'doomed', version: '1' } } },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'ask_confirm', arguments: {} } },
    ].map((m) => JSON.stringify(m) + '\n').join('');
    const argv = [bin.belay, 'mcp', '--wrap', '--', process.execPath, SERVER];
    const script = `const c = require('node:child_process').spawn(process.execPath, ${JSON.stringify(argv)}, { stdio: ['pipe', 'pipe', 'inherit'] });
      c.stdin.end(${JSON.stringify(lines)}); c.stdout.resume(); setInterval(() => {}, 1000);`;
    const doomed = start('-e', [script], { env, input: '', cwd: repoRoot });
    const orphan = await waitUntil(mailbox, pending, 'the orphan\'s cue');
    doomed.child.kill('SIGKILL');
    assert.equal(await waitUntil(mailbox, () => (mailbox.getRequest(orphan.requestId)?.state === 'cancelled' ? true : undefined), 'the cue cancelled'), true);

    const missing = await run(bin.belay, ['mcp', '--wrap', '--', 'no-such-mcp-server-here'], { env });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^belay mcp: cannot start the MCP server: no-such-mcp-server-here: not found/);
    const usage = await run(bin.belay, ['mcp', '--wrap'], { env });
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--wrap needs the MCP server to run/);
    const stray = await run(bin.belay, ['mcp', 'server.js'], { env });
    assert.equal(stray.code, 2);
    assert.match(stray.stderr, /unexpected argument 'server\.js'/);
  });
});

describe('belay mcp --wrap: the form, pure', () => {
  const schema = {
    type: 'object',
    properties: {
      a: { type: 'string', title: 'Same' },
      b: { type: 'string', title: 'Same', enum: ['x', 'y'], enumNames: ['Ex', 'Ex'] },
      n: { type: 'number', title: 'Ratio', minimum: 0, maximum: 1 },
      day: { type: 'string', title: 'Day', format: 'date' },
      tags: { type: 'array', title: 'Tags', items: { type: 'string', enum: ['a, b', 'c'] }, minItems: 1, maxItems: 2 },
    },
    required: ['a', 'b'],
  };

  it('labels are unique and say what is optional; repeated titles fall back to values', () => {
    const form = elicitationForm({ message: 'Q', requestedSchema: schema }, 'srv')!;
    assert.deepEqual(form.fields.map((f) => f.label), ['Same (a)', 'Same (b)', 'Ratio (optional)', 'Day (optional)', 'Tags (optional)']);
    assert.deepEqual(form.fields[1]!.options, [{ value: 'x', label: 'x' }, { value: 'y', label: 'y' }]);
    assert.deepEqual(JSON.parse(form.payloadJson).fields[2], { label: 'Ratio (optional)', kind: 'number' });
  });

  it('reads answers: options holding ", ", ranges, formats, free text for a one-field form', () => {
    const form = elicitationForm({ message: 'Q', requestedSchema: schema }, 'srv')!;
    assert.deepEqual(readFormAnswer(form, 'Same (a): hi\nSame (b): y\nRatio (optional): 0.5\nDay (optional): 2026-11-22\nTags (optional): c, a, b\nthanks!'), {
      content: { a: 'hi', b: 'y', n: 0.5, day: '2026-11-22', tags: ['a, b', 'c'] },
    });
    assert.deepEqual(readFormAnswer(form, 'Same (a): hi\nSame (b): z\nRatio (optional): 2\nDay (optional): soon\nTags (optional): d'), {
      problems: ['Same (b) is one of "x", "y", got "z"', 'Ratio (optional) must be at most 1, got 2', 'Day (optional) must be a date (ISO 8601), got "soon"', 'Tags (optional) takes options from "a, b", "c", got "d"'],
    });
    const one = elicitationForm({ message: 'Name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } }, 'srv')!;
    assert.deepEqual(readFormAnswer(one, 'Ann Lee'), { content: { name: 'Ann Lee' } });
    assert.deepEqual(readFormAnswer(one, ''), { problems: ['name is required'] });
  });

  it('hostile schemas still make a form the panel shows and an answer reads back', () => {
    const form = elicitationForm(
      {
        message: 'Q',
        requestedSchema: {
          type: 'object',
          properties: {
            constructor: { type: 'string', title: 'Line one\nLine: two' },
            '': { type: 'string', enum: ['', ' ', 'a\nb'] },
            x: { type: 'string', title: 'Line one Line: two' },
          },
          required: ['constructor', ''],
        },
      },
      'srv',
    )!;
    assert.ok(form, 'a form');
    assert.deepEqual(form.fields.map((f) => f.label), ['Line one Line: two (constructor)', '(unnamed)', 'Line one Line: two (x) (optional)']);
    assert.deepEqual(form.fields[1]!.options!.map((o) => o.label), ['1. (empty)', '2. (empty)', '3. a b']);
    const payload = JSON.parse(form.payloadJson) as { fields: Array<{ label: string; options?: string[] }> };
    assert.ok(payload.fields.every((f) => f.label.trim() !== '' && !/\n/.test(f.label) && (f.options ?? []).every((o) => o.trim() !== '')));
    const read = readFormAnswer(form, 'Line one Line: two (constructor): hello\n(unnamed): 3. a b\nLine one Line: two (x) (optional): more');
    assert.ok('content' in read, JSON.stringify(read));
    assert.deepEqual(Object.entries(read.content), [['constructor', 'hello'], ['', 'a\nb'], ['x', 'more']]);
    const proto = JSON.parse('{"message":"Q","requestedSchema":{"type":"object","properties":{"__proto__":{"type":"string"}}}}') as unknown;
    assert.equal(elicitationForm(proto, 'srv'), undefined, 'a property named __proto__ goes to the client as it came');
  });

  it('leaves to the client what it cannot show: URL mode, nested objects, unknown types', () => {
    assert.equal(elicitationForm({ mode: 'url', message: 'Sign in', url: 'https://x', elicitationId: '1' }, 's'), undefined);
    assert.equal(elicitationForm({ message: 'Q', requestedSchema: { type: 'object', properties: { o: { type: 'object' } } } }, 's'), undefined);
    assert.equal(elicitationForm({ message: 'Q', requestedSchema: { type: 'object', properties: { l: { type: 'array', items: { type: 'string' } } } } }, 's'), undefined);
    assert.equal(elicitationForm({ requestedSchema: {} }, 's'), undefined);
  });

  it('adds form and URL elicitation to the client\'s capabilities, and only where they are missing', () => {
    const init = (capabilities: object | undefined) => ({ jsonrpc: '2.0' as const, id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', clientInfo: { name: 'c', version: '1' }, ...(capabilities ? { capabilities } : {}) } });
    const both = { form: {}, url: {} };
    assert.deepEqual((withElicitationModes(init(undefined))!.params as { capabilities: unknown }).capabilities, { elicitation: both });
    assert.deepEqual((withElicitationModes(init({ roots: { listChanged: true } }))!.params as { capabilities: unknown }).capabilities, { roots: { listChanged: true }, elicitation: both });
    assert.deepEqual((withElicitationModes(init({ elicitation: { url: { x: 1 } } }))!.params as { capabilities: unknown }).capabilities, { elicitation: { url: { x: 1 }, form: {} } });
    assert.deepEqual((withElicitationModes(init({ elicitation: {} }))!.params as { capabilities: unknown }).capabilities, { elicitation: both }, 'an empty object (form) gains url, keeping form');
    assert.equal(withElicitationModes(init({ elicitation: { form: {}, url: {} } })), undefined);
  });
});
