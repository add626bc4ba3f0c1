// The gateway under pressure: rate limits shared by key, hanging and unreachable upstreams,
// agents that go away, oversized bodies, and requests that try to reach another host or leak the key.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync, statSync, chmodSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startGateway, type Gateway } from '../../../src/runner/core/gateway/index.ts';
import { bodyReader, chatAnswer, chatChunk, gate, sse, startUpstream, type FakeUpstream } from '../../support/runner/gateway-upstream.ts';

const KEY = 'sk-real-upstream-key-0123456789';

let upstream: FakeUpstream;
let gateway: Gateway;
let base: string;
const backoffs: { runId: string; status: number; waitMs: number }[] = [];

before(async () => {
  upstream = await startUpstream('/v1');
  gateway = startGateway({ retry: { baseDelayMs: 5, attempts: 4 }, upstreamIdleTimeoutMs: 300, onBackoff: (info) => backoffs.push(info) });
  base = await gateway.listenTcp();
});
after(async () => {
  await gateway.close();
  await upstream.close();
});

const run = (runId = 'run', key = KEY, baseUrl = upstream.url) => gateway.openRun({ runId, upstream: { baseUrl, key } });
const chat = (token: string, body: unknown = { model: 'gpt-4o', messages: [] }, headers: Record<string, string> = {}) =>
  fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${token}`, ...headers }, body: JSON.stringify(body) });

/** Sends raw bytes to the gateway and returns the raw answer (until the server closes or after the first response). */
async function rawRequest(text: string): Promise<string> {
  const url = new URL(base);
  const socket = net.connect(Number(url.port), url.hostname);
  await once(socket, 'connect');
  socket.write(text);
  let answer = '';
  socket.setEncoding('utf8');
  for await (const chunk of socket) {
    answer += chunk as string;
    if (/\r\n\r\n/.test(answer) && /content-length: (\d+)/i.test(answer)) {
      const length = Number(/content-length: (\d+)/i.exec(answer)![1]);
      if (answer.length - answer.indexOf('\r\n\r\n') - 4 >= length) break;
    }
  }
  socket.destroy();
  return answer;
}

describe('gateway: rate limits', () => {
  it('retries a 429 after the backoff and honours Retry-After, then answers with the success', async () => {
    const grant = run();
    const count = upstream.received.length;
    upstream.reply({ status: 429, headers: { 'retry-after-ms': '20' }, json: { error: { message: 'slow down' } } }, { status: 503, headers: { 'retry-after': '0' }, json: { error: { message: 'busy' } } }, { json: chatAnswer('finally') });
    const response = await chat(grant.token);
    assert.equal(response.status, 200);
    assert.match(await response.text(), /finally/);
    assert.equal(upstream.received.length - count, 3);
    assert.equal(grant.records()[0]!.retries, 2);
    assert.deepEqual(backoffs.slice(-2).map((b) => [b.status, b.waitMs]), [
      [429, 20],
      [503, 0],
    ]);
    grant.close();
  });

  it('hands the 429 to the agent when the attempts are spent, and a 503 without Retry-After at once', async () => {
    const grant = run();
    const limited = { status: 429, json: { error: { message: 'rate limited', type: 'rate_limit_error' } } };
    upstream.reply(limited, limited, limited, limited);
    const count = upstream.received.length;
    const response = await chat(grant.token);
    assert.equal(response.status, 429);
    assert.equal(upstream.received.length - count, 4);
    upstream.reply({ status: 503, json: { error: { message: 'down' } } });
    assert.equal((await chat(grant.token)).status, 503);
    assert.equal(upstream.received.length - count, 5);
    grant.close();
  });

  it('holds every run with the same key while one of them is told to wait', async () => {
    const first = run('first');
    const second = run('second');
    // The first run's request is rate limited for 150 ms; the second run's request, sent while
    // that hold lasts, reaches the upstream only once the hold is over.
    upstream.reply({ status: 429, headers: { 'retry-after-ms': '150' }, json: { error: { message: 'slow down' } } }, { json: chatAnswer('first') }, { json: chatAnswer('second') });
    const count = upstream.received.length;
    const firstDone = chat(first.token);
    const limited = await upstream.arrival(count + 1);
    while (backoffs.at(-1)?.runId !== 'first' || backoffs.at(-1)?.waitMs !== 150) await new Promise((resolve) => setImmediate(resolve));
    const secondDone = chat(second.token);
    assert.deepEqual([(await firstDone).status, (await secondDone).status], [200, 200]);
    assert.equal(upstream.received.length - count, 3);
    for (const later of upstream.received.slice(count + 1)) assert.ok(later.at >= limited.at + 150, 'a request with the held key went out during the hold');
    first.close();
    second.close();
  });

  it('holds no other key', async () => {
    const held = run('held', 'sk-first-key-0123456789');
    const free = run('free', 'sk-other-key-0123456789');
    upstream.reply({ status: 429, headers: { 'retry-after-ms': '60000' }, json: { error: { message: 'slow down' } } }, { json: chatAnswer('other key') });
    const count = upstream.received.length;
    const stuck = chat(held.token);
    await upstream.arrival(count + 1);
    while (backoffs.at(-1)?.runId !== 'held') await new Promise((resolve) => setImmediate(resolve));
    assert.equal((await chat(free.token)).status, 200);
    held.close();
    await assert.rejects(stuck.then((r) => r.text()));
    free.close();
  });
});

describe('gateway: bounds', () => {
  it('refuses a body over the limit with 413 and sends nothing upstream', async () => {
    const small = startGateway({ maxBodyBytes: 1024 });
    const smallBase = await small.listenTcp();
    const grant = small.openRun({ runId: 'big', upstream: { baseUrl: upstream.url, key: KEY } });
    const count = upstream.received.length;
    const response = await fetch(`${smallBase}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${grant.token}` }, body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x'.repeat(5000) }] }) });
    assert.equal(response.status, 413);
    assert.equal(((await response.json()) as { error: { code: string } }).error.code, 'request_too_large');
    assert.equal(upstream.received.length, count);
    await small.close();
  });

  it('gives up on an upstream that hangs, with 504 in the API shape', async () => {
    const grant = run();
    upstream.reply({ hang: true });
    const response = await chat(grant.token);
    assert.equal(response.status, 504);
    assert.match(((await response.json()) as { error: { message: string } }).error.message, /sent nothing/);
    assert.equal(grant.records()[0]!.status, 504);
    grant.close();
  });

  it('answers 502 when the upstream cannot be reached', async () => {
    const dead = await startUpstream();
    await dead.close();
    const grant = run('dead', KEY, dead.url);
    const response = await chat(grant.token);
    assert.equal(response.status, 502);
    assert.match(((await response.json()) as { error: { message: string } }).error.message, /ECONNREFUSED/);
    grant.close();
  });

  it('aborts the upstream request when the agent goes away mid-stream, and counts what was streamed', async () => {
    const grant = run();
    const never = gate();
    upstream.reply({ stream: [sse(chatChunk('partial answer')), never.promise] });
    const count = upstream.received.length;
    const response = await chat(grant.token, { model: 'gpt-4o', stream: true, messages: [] }, {});
    const reader = bodyReader(response);
    assert.match((await reader.next()) ?? '', /partial/);
    await reader.cancel();
    await (await upstream.arrival(count + 1)).aborted;
    while (grant.records().length === 0) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(grant.records()[0]!.status, 499);
    assert.match(grant.records()[0]!.error ?? '', /agent disconnected/);
    assert.equal(grant.records()[0]!.estimated, true);
    assert.ok(grant.records()[0]!.output_tokens > 0);
    never.open();
    grant.close();
  });

  it('ends a stream the upstream breaks off, and records the failure', async () => {
    const grant = run();
    const broken = gate();
    upstream.reply({ stream: [sse(chatChunk('half')), broken.promise] });
    const count = upstream.received.length;
    const response = await chat(grant.token, { model: 'gpt-4o', stream: true, messages: [] });
    const reader = bodyReader(response);
    assert.match((await reader.next()) ?? '', /half/);
    await upstream.arrival(count + 1);
    upstream.destroyConnections();
    await assert.rejects(reader.rest());
    while (grant.records().length === 0) await new Promise((resolve) => setImmediate(resolve));
    assert.match(grant.records()[0]!.error ?? '', /broke off|socket hang up|aborted/);
    broken.open();
    grant.close();
  });

  it('closes the connection of an agent that never finishes its headers (408), or sends too many (431)', async () => {
    const own = startGateway({ headersTimeoutMs: 200 });
    try {
      const ownBase = new URL(await own.listenTcp());
      const answerTo = async (text: string) => {
        const socket = net.connect(Number(ownBase.port), ownBase.hostname);
        await once(socket, 'connect');
        socket.write(text);
        let answer = '';
        socket.on('data', (chunk: Buffer) => (answer += chunk.toString('utf8')));
        await once(socket, 'close');
        return answer;
      };
      assert.match(await answerTo('POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n'), /^HTTP\/1\.1 408 /);
      assert.match(await answerTo(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(70_000)}\r\n\r\n`), /^HTTP\/1\.1 431 /);
    } finally {
      await own.close();
    }
  });

  it('serves many concurrent requests and counts each', async () => {
    const grant = run();
    upstream.reply(...Array.from({ length: 60 }, (_, i) => ({ json: chatAnswer(`answer ${i}`) })));
    const answers = await Promise.all(Array.from({ length: 60 }, () => chat(grant.token).then((r) => r.status)));
    assert.deepEqual(new Set(answers), new Set([200]));
    assert.equal(grant.usage().requests, 60);
    assert.equal(grant.usage().input_tokens, 600);
    grant.close();
  });

  it('ends everything on close: streams in flight, and later connections', async () => {
    const own = startGateway();
    const ownBase = await own.listenTcp();
    const grant = own.openRun({ runId: 'closing', upstream: { baseUrl: upstream.url, key: KEY } });
    const never = gate();
    upstream.reply({ stream: [sse(chatChunk('a')), never.promise] });
    const count = upstream.received.length;
    const response = await fetch(`${ownBase}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${grant.token}` }, body: '{"model":"gpt-4o","stream":true,"messages":[]}' });
    const reader = bodyReader(response);
    await reader.next();
    await own.close();
    await (await upstream.arrival(count + 1)).aborted;
    await assert.rejects(reader.rest());
    await assert.rejects(fetch(`${ownBase}/v1/models`));
    never.open();
  });
});

describe('gateway: hostile requests', () => {
  it('never shows the key: upstream answers that echo it are scrubbed, whole or streamed', async () => {
    const grant = run();
    upstream.reply({ status: 401, json: { error: { message: `Incorrect API key provided: ${KEY}` } } });
    const error = await (await chat(grant.token)).text();
    assert.ok(!error.includes(KEY));
    assert.match(error, /\[redacted\]/);
    upstream.reply({ json: chatAnswer(`your key is ${KEY}`) });
    assert.ok(!(await (await chat(grant.token)).text()).includes(KEY));
    upstream.reply({ stream: [sse(chatChunk(`streamed ${KEY}`)), sse('[DONE]')] });
    assert.ok(!(await (await chat(grant.token, { model: 'gpt-4o', stream: true, messages: [] })).text()).includes(KEY));
    grant.close();
  });

  it('keeps a model name with CR/LF in the body, never as a header', async () => {
    const grant = run();
    upstream.reply({ json: chatAnswer('ok') });
    const count = upstream.received.length;
    const model = 'gpt-4o\r\nX-Injected: yes\r\nHost: evil.example';
    const response = await chat(grant.token, { model, messages: [] });
    assert.equal(response.status, 200);
    const got = upstream.received[count]!;
    assert.equal(got.body.model, model);
    assert.equal(got.headers['x-injected'], undefined);
    assert.match(got.headers.host ?? '', /^127\.0\.0\.1:/);
    assert.equal(grant.records()[0]!.model, model);
    grant.close();
  });

  it('answers 404 to traversal and unknown paths, and sends nothing upstream', async () => {
    const grant = run();
    const count = upstream.received.length;
    for (const target of ['/v1/../admin', '/v1/chat/completions/../../admin', '/v1/chat/completions%2f..', '/admin', '/v1/embeddings', '//v1/chat/completions']) {
      const answer = await rawRequest(`POST ${target} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${grant.token}\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}`);
      assert.match(answer, /^HTTP\/1\.1 404 /, target);
    }
    assert.equal(upstream.received.length, count);
    grant.close();
  });

  it('never follows an absolute-URL request line or a CONNECT to another host', async () => {
    const evil = await startUpstream();
    evil.fallback = () => ({ json: { owned: true } });
    const grant = run();
    const count = upstream.received.length;
    const evilHost = new URL(evil.url).host;
    const absolute = await rawRequest(`GET ${evil.url}/ HTTP/1.1\r\nhost: ${evilHost}\r\nauthorization: Bearer ${grant.token}\r\nconnection: close\r\n\r\n`);
    assert.match(absolute, /^HTTP\/1\.1 404 /);
    const absolutePost = await rawRequest(`POST ${evil.url}/v1/chat/completions HTTP/1.1\r\nhost: ${evilHost}\r\nauthorization: Bearer ${grant.token}\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}`);
    assert.match(absolutePost, /^HTTP\/1\.1 404 /);
    const connect = await rawRequest(`CONNECT ${evilHost} HTTP/1.1\r\nhost: ${evilHost}\r\n\r\n`);
    assert.match(connect, /^HTTP\/1\.1 405 /);
    assert.equal(evil.received.length, 0);
    assert.equal(upstream.received.length, count);
    await evil.close();
    grant.close();
  });

  it('answers 400 to a body that is not a JSON object', async () => {
    const grant = run();
    for (const body of ['not json', '[1,2]', '"text"', '{"model": 5}']) {
      const response = await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${grant.token}` }, body });
      assert.equal(response.status, 400, body);
    }
    grant.close();
  });

  it('forwards /v1/models to the upstream with the real key', async () => {
    const grant = run();
    upstream.reply({ json: { object: 'list', data: [{ id: 'gpt-4o', object: 'model' }] } });
    const count = upstream.received.length;
    const response = await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${grant.token}` } });
    assert.equal(response.status, 200);
    assert.equal(((await response.json()) as { data: { id: string }[] }).data[0]!.id, 'gpt-4o');
    assert.equal(upstream.received[count]!.url, '/v1/models');
    assert.equal(upstream.received[count]!.headers.authorization, `Bearer ${KEY}`);
    assert.equal((await fetch(`${base}/v1/models`, { headers: { authorization: 'Bearer nope' } })).status, 401);
    grant.close();
  });

  it('refuses an upstream URL with credentials or another scheme', () => {
    assert.throws(() => run('x', KEY, 'file:///etc/passwd'), /http\(s\)/);
    assert.throws(() => run('x', KEY, 'http://user:pw@127.0.0.1/v1'), /credentials/);
  });

  it('sends a keyless upstream (a model server on this machine) no credentials at all, not even the run token', async () => {
    const grant = run('keyless', '');
    upstream.reply({ json: chatAnswer('no key needed') });
    const count = upstream.received.length;
    const response = await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${grant.token}`, 'x-api-key': grant.token, 'content-type': 'application/json' }, body: '{"model":"gpt-4o","messages":[]}' });
    assert.equal(response.status, 200);
    const got = upstream.received[count]!;
    assert.equal(got.headers.authorization, undefined);
    assert.equal(got.headers['x-api-key'], undefined);
    assert.doesNotMatch(got.raw, new RegExp(grant.token));
    grant.close();
  });
});

describe('gateway: Unix socket', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'belay-gw-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('listens on a 0600 socket in a private folder and serves requests there', async () => {
    const own = startGateway();
    const socketPath = path.join(dir, 'private', 'llm.sock');
    await own.listenSocket(socketPath);
    assert.equal(statSync(socketPath).mode & 0o777, 0o600);
    assert.equal(statSync(path.dirname(socketPath)).mode & 0o777, 0o700);
    const grant = own.openRun({ runId: 'sock', upstream: { baseUrl: upstream.url, key: KEY } });
    upstream.reply({ json: chatAnswer('via socket') });
    const answer = await new Promise<string>((resolve, reject) => {
      const req = http.request({ socketPath, path: '/v1/chat/completions', method: 'POST', headers: { authorization: `Bearer ${grant.token}` } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve(text));
      });
      req.on('error', reject);
      req.end('{"model":"gpt-4o","messages":[]}');
    });
    assert.match(answer, /via socket/);
    await own.close();
  });

  it('refuses a folder others may enter, and a path too long for a socket', async () => {
    const own = startGateway();
    const open = path.join(dir, 'open');
    rmSync(open, { recursive: true, force: true });
    await own.listenSocket(path.join(open, 'a.sock')).then(() => own.close());
    chmodSync(open, 0o755);
    const other = startGateway();
    await assert.rejects(other.listenSocket(path.join(open, 'b.sock')), /must be private/);
    await assert.rejects(other.listenSocket(path.join(dir, 'x'.repeat(120), 'c.sock')), /longer than 107 bytes/);
    await other.close();
  });
});
