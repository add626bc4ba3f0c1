// The gateway's Gemini API shape against the scripted Gemini service: streamed and whole answers
// counted from usageMetadata, the token taken from x-goog-api-key or ?key= and never passed on,
// the real key sent as the service wants it; and the ways out: a model in the path that tries to
// leave its route (dot-dot, slashes, encoded characters, query tricks), other APIs' requests on a
// Gemini upstream and Gemini requests on another, unknown tokens, a spent budget, an upstream
// that echoes the key. Each refusal is one line in the API's own error shape, and nothing reaches
// the upstream.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startGateway, type Gateway } from '../../../src/runner/core/gateway/index.ts';
import { startUpstream, type FakeUpstream } from '../../support/runner/gateway-upstream.ts';
import { startGeminiUpstream, type GeminiUpstream } from '../../support/runner/upstreams/gemini.ts';

const KEY = 'AIzaSy-real-upstream-key-0123456789';
const MODEL = 'gemini-2.5-flash';
const BODY = { contents: [{ role: 'user', parts: [{ text: 'Say hi' }] }] };

let gemini: GeminiUpstream;
let plain: FakeUpstream;
let gateway: Gateway;
let base: string;

before(async () => {
  gemini = await startGeminiUpstream({
    key: KEY,
    model: MODEL,
    turns: Array.from({ length: 20 }, () => ({ parts: [{ text: 'Hi there, how can I help?' }], usage: { prompt: 100, candidates: 7, thoughts: 3, cached: 40 } })),
    pieceChars: 5,
  });
  plain = await startUpstream('/v1');
  gateway = startGateway({ retry: { baseDelayMs: 5, attempts: 2 } });
  base = await gateway.listenTcp();
});
after(async () => {
  await gateway.close();
  await gemini.close();
  await plain.close();
});

const geminiRun = (runId: string, budget?: { tokens: number }) => gateway.openRun({ runId, upstream: { baseUrl: gemini.url, key: KEY, api: 'gemini' }, ...(budget ? { budget } : {}) });
const post = (path: string, headers: Record<string, string> = {}, body: unknown = BODY) => fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

/** Sends a raw request line (no client normalising the path) and returns the status and body. */
async function rawPost(target: string, token: string): Promise<{ status: number; body: string }> {
  const url = new URL(base);
  const socket = net.connect(Number(url.port), url.hostname);
  await once(socket, 'connect');
  const body = JSON.stringify(BODY);
  socket.write(`POST ${target} HTTP/1.1\r\nhost: ${url.host}\r\nx-goog-api-key: ${token}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
  let text = '';
  socket.setEncoding('utf8');
  for await (const chunk of socket) text += chunk;
  const [head = '', ...rest] = text.split('\r\n\r\n');
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), body: rest.join('\r\n\r\n') };
}

describe('gateway: the Gemini API', () => {
  it('streams streamGenerateContent?alt=sse as it comes, counts usageMetadata (thoughts as output), and sends the real key in its header only', async () => {
    const grant = geminiRun('sse');
    const before = gemini.received.length;
    const response = await post(`/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`, { 'x-goog-api-key': grant.token });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /text\/event-stream/);
    const text = await response.text();
    const pieces = text.split('\r\n\r\n').filter(Boolean).map((event) => JSON.parse(event.replace(/^data: /, '')) as { candidates: { content: { parts: { text: string }[] } }[] });
    assert.ok(pieces.length > 2, 'the answer came in pieces');
    assert.equal(pieces.map((p) => p.candidates[0]!.content.parts[0]!.text).join(''), 'Hi there, how can I help?');
    const got = gemini.received[before]!;
    assert.equal(got.url, `/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`);
    assert.equal(got.headers['x-goog-api-key'], KEY);
    assert.deepEqual(got.body, BODY);
    assert.deepEqual(grant.usage(), { requests: 1, input_tokens: 100, output_tokens: 10, cost_usd: (100 * 0.3 + 10 * 2.5) / 1e6 });
    assert.deepEqual(
      grant.records().map((r) => [r.api, r.model, r.stream, r.status]),
      [['gemini', MODEL, true, 200]],
    );
    grant.close();
  });

  it('takes the token from ?key= and never passes the agent query on; a whole answer and a JSON-array stream are counted too', async () => {
    const grant = geminiRun('query');
    const before = gemini.received.length;
    const whole = await post(`/v1beta/models/${MODEL}:generateContent?key=${grant.token}&alt=json&$fields=x`);
    assert.equal(whole.status, 200);
    assert.equal(((await whole.json()) as { usageMetadata: { promptTokenCount: number } }).usageMetadata.promptTokenCount, 100);
    const array = await post(`/v1/models/${MODEL}:streamGenerateContent?key=${grant.token}`);
    assert.equal(array.status, 200);
    const items = (await array.json()) as unknown[];
    assert.ok(Array.isArray(items) && items.length > 1);
    assert.deepEqual(
      gemini.received.slice(before).map((r) => [r.url, r.key]),
      [
        [`/v1beta/models/${MODEL}:generateContent`, KEY],
        [`/v1/models/${MODEL}:streamGenerateContent`, KEY],
      ],
    );
    assert.deepEqual(grant.usage(), { requests: 2, input_tokens: 200, output_tokens: 20, cost_usd: 2 * ((100 * 0.3 + 10 * 2.5) / 1e6) });
    grant.close();
  });

  it('passes countTokens and the model list through uncounted', async () => {
    const grant = geminiRun('passthrough');
    const before = gemini.received.length;
    const count = await post(`/v1beta/models/${MODEL}:countTokens`, { 'x-goog-api-key': grant.token });
    assert.equal(count.status, 200);
    assert.ok(((await count.json()) as { totalTokens: number }).totalTokens > 0);
    const list = await fetch(`${base}/v1beta/models?key=${grant.token}`);
    assert.equal(list.status, 200);
    assert.equal(((await list.json()) as { models: { name: string }[] }).models[0]!.name, `models/${MODEL}`);
    assert.deepEqual(
      gemini.received.slice(before).map((r) => [r.method, r.url, r.key]),
      [
        ['POST', `/v1beta/models/${MODEL}:countTokens`, KEY],
        ['GET', '/v1beta/models', KEY],
      ],
    );
    assert.equal(grant.usage().requests, 0);
    grant.close();
  });

  it('refuses a model in the path that tries to leave its route, in the Gemini error shape, and sends nothing upstream', async () => {
    const grant = geminiRun('paths');
    const before = gemini.received.length;
    const targets = [
      '/v1beta/models/..:generateContent',
      '/v1beta/models/gemini..x:generateContent',
      '/v1beta/models/%2e%2e:generateContent',
      '/v1beta/models/a%2Fb:generateContent',
      '/v1beta/models/a%252Fb:generateContent',
      '/v1beta/models/a/b:generateContent',
      '/v1beta/models/../../admin:generateContent',
      '/v1beta/models/x\\..\\y:generateContent',
      '/v1beta/models/:generateContent',
      '/v1beta/models/-x:generateContent',
      `/v1beta/models/${'m'.repeat(200)}:generateContent`,
      '/v1beta/models/gemini:generateContent:x',
      '/v1beta/models/gemini:batchGenerateContent',
      '/v1beta/models/gemini:generateContent/../../x',
      '/v1beta/models/gemini@evil.example:generateContent',
      '/v1beta/models/gémini:generateContent',
      '/v1beta/models/a;b:generateContent',
      '/v1beta/tunedModels/x:generateContent',
    ];
    for (const target of targets) {
      const answer = await rawPost(target, grant.token);
      assert.ok(answer.status === 400 || answer.status === 404, `${target}: ${answer.status}`);
      // A request line Node's HTTP parser refuses (bytes beyond ASCII) gets its bare 400.
      if (answer.body === '' && answer.status === 400 && /[^\x21-\x7e]/.test(target)) continue;
      const body = JSON.parse(answer.body) as { error: { code: number; status: string; message: string } };
      assert.equal(body.error.code, answer.status, target);
      assert.match(body.error.status, /^(INVALID_ARGUMENT|NOT_FOUND)$/, target);
      assert.match(body.error.message, /^Belay gateway: /, target);
      assert.ok(!body.error.message.includes('\n'), `${target}: one line`);
    }
    assert.equal(gemini.received.length, before, 'nothing reached the upstream');
    assert.equal(grant.usage().requests, 0);
    grant.close();
  });

  it('takes no token from a query that names two, or from a closed run; says so in the Gemini error shape', async () => {
    const grant = geminiRun('tokens');
    const other = geminiRun('other');
    const before = gemini.received.length;
    const two = await post(`/v1beta/models/${MODEL}:generateContent?key=${grant.token}&key=${other.token}`);
    assert.equal(two.status, 401);
    assert.deepEqual(((await two.json()) as { error: { status: string } }).error.status, 'UNAUTHENTICATED');
    const none = await post(`/v1beta/models/${MODEL}:generateContent`);
    assert.equal(none.status, 401);
    assert.match(((await none.json()) as { error: { message: string } }).error.message, /carries no run token/);
    other.close();
    const closed = await post(`/v1beta/models/${MODEL}:generateContent`, { 'x-goog-api-key': other.token });
    assert.equal(closed.status, 401);
    const wrongMethod = await fetch(`${base}/v1beta/models/${MODEL}:generateContent?key=${grant.token}`);
    assert.equal(wrongMethod.status, 405);
    assert.equal(((await wrongMethod.json()) as { error: { status: string } }).error.status, 'INVALID_ARGUMENT');
    assert.equal(gemini.received.length, before);
    grant.close();
  });

  it('refuses other APIs on a Gemini upstream and Gemini on another, each in its own error shape', async () => {
    const grant = geminiRun('cross');
    const openAiRun = gateway.openRun({ runId: 'openai', upstream: { baseUrl: plain.url, key: KEY } });
    const before = gemini.received.length;
    const plainBefore = plain.received.length;
    const chat = await post('/v1/chat/completions', { authorization: `Bearer ${grant.token}` }, { model: 'x', messages: [] });
    assert.equal(chat.status, 400);
    assert.match(((await chat.json()) as { error: { message: string; type: string } }).error.message, /speaks the Gemini API; send \/v1\/chat\/completions requests to \/v1beta\/models/);
    const messages = await post('/v1/messages', { 'x-api-key': grant.token }, { model: 'x', messages: [], max_tokens: 5 });
    assert.equal(messages.status, 400);
    assert.equal(((await messages.json()) as { type: string }).type, 'error');
    const proxy = await post('/llm/proxy', { authorization: `Bearer ${grant.token}` }, { messages: [] });
    assert.equal(proxy.status, 400);
    const models = await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${grant.token}` } });
    assert.equal(models.status, 400);
    const onOpenAi = await post(`/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`, { 'x-goog-api-key': openAiRun.token });
    assert.equal(onOpenAi.status, 400);
    const refusal = (await onOpenAi.json()) as { error: { status: string; message: string; details: { reason: string }[] } };
    assert.equal(refusal.error.status, 'INVALID_ARGUMENT');
    assert.equal(refusal.error.details[0]!.reason, 'unsupported_by_upstream');
    assert.match(refusal.error.message, /speaks the OpenAI API, not the Gemini API/);
    const countOnOpenAi = await post(`/v1beta/models/${MODEL}:countTokens`, { 'x-goog-api-key': openAiRun.token });
    assert.equal(countOnOpenAi.status, 400);
    assert.equal(((await countOnOpenAi.json()) as { error: { status: string } }).error.status, 'INVALID_ARGUMENT');
    assert.equal(gemini.received.length, before);
    assert.equal(plain.received.length, plainBefore);
    grant.close();
    openAiRun.close();
  });

  it('stops a run at its budget with a Gemini error, and scrubs the key from what an upstream echoes', async () => {
    const grant = geminiRun('budget', { tokens: 50 });
    const first = await post(`/v1beta/models/${MODEL}:generateContent`, { 'x-goog-api-key': grant.token });
    assert.equal(first.status, 200);
    await first.arrayBuffer();
    const before = gemini.received.length;
    const spent = await post(`/v1beta/models/${MODEL}:generateContent`, { 'x-goog-api-key': grant.token });
    assert.equal(spent.status, 402);
    const body = (await spent.json()) as { error: { status: string; message: string; details: { reason: string }[] } };
    assert.equal(body.error.status, 'RESOURCE_EXHAUSTED');
    assert.equal(body.error.details[0]!.reason, 'budget_exceeded');
    assert.equal(gemini.received.length, before);
    grant.close();

    const echo = gateway.openRun({ runId: 'echo', upstream: { baseUrl: plain.url.replace(/\/v1$/, ''), key: KEY, api: 'gemini' } });
    plain.reply({ status: 400, json: { error: { code: 400, message: `API key ${KEY} not valid`, status: 'INVALID_ARGUMENT' } } }, { stream: [`data: {"candidates":[{"content":{"parts":[{"text":"${KEY}"}]}}]}\r\n\r\n`] });
    const error = await post(`/v1beta/models/${MODEL}:generateContent`, { 'x-goog-api-key': echo.token });
    assert.equal(error.status, 400);
    const errorText = await error.text();
    assert.ok(!errorText.includes(KEY) && errorText.includes('[redacted]'), errorText);
    const stream = await post(`/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`, { 'x-goog-api-key': echo.token });
    const streamText = await stream.text();
    assert.ok(!streamText.includes(KEY) && streamText.includes('[redacted]'), streamText);
    assert.equal(plain.received.at(-1)!.headers['x-goog-api-key'], KEY);
    assert.ok(!plain.received.at(-1)!.url.includes('key='));
    echo.close();
  });
});
