// The LLM gateway against a real loopback upstream: each API shape whole and streamed, the real
// key going upstream and never the run token, usage, cost and the budget.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { llmEnvironment, startGateway, type Gateway, type LlmRequestRecord } from '../../../src/runner/core/gateway/index.ts';
import { bodyReader, chatAnswer, chatChunk, gate, messagesAnswer, sse, startUpstream, type FakeUpstream } from '../../support/runner/gateway-upstream.ts';

const KEY = 'sk-real-upstream-key-0123456789';

let upstream: FakeUpstream;
let anthropicUpstream: FakeUpstream;
let gateway: Gateway;
let base: string;

before(async () => {
  upstream = await startUpstream('/v1');
  anthropicUpstream = await startUpstream();
  gateway = startGateway({ retry: { baseDelayMs: 5 } });
  base = await gateway.listenTcp();
});
after(async () => {
  await gateway.close();
  await upstream.close();
  await anthropicUpstream.close();
});

function openAiRun(extra: Partial<Parameters<Gateway['openRun']>[0]> = {}) {
  const records: LlmRequestRecord[] = [];
  const grant = gateway.openRun({ runId: 'run', upstream: { baseUrl: upstream.url, key: KEY }, onRequest: (r) => records.push(r), ...extra });
  return { grant, records };
}

function anthropicRun() {
  return gateway.openRun({ runId: 'run-a', upstream: { baseUrl: anthropicUpstream.url, key: KEY, api: 'anthropic' } });
}

const post = (path: string, token: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

function assertNoToken(received: { headers: Record<string, unknown>; raw: string }, token: string) {
  assert.ok(!JSON.stringify(received.headers).includes(token), 'the run token reached the upstream in a header');
  assert.ok(!received.raw.includes(token), 'the run token reached the upstream in the body');
}

describe('gateway: OpenAI chat completions', () => {
  it('forwards a request with the real key in place of the token, and counts usage and cost', async () => {
    const { grant, records } = openAiRun();
    upstream.reply({ json: chatAnswer('hello there') });
    const count = upstream.received.length;
    const response = await post('/v1/chat/completions', grant.token, { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }, { 'x-api-key': grant.token, 'api-key': grant.token, cookie: 'a=b' });
    assert.equal(response.status, 200);
    const answer = (await response.json()) as { choices: { message: { content: string } }[] };
    assert.equal(answer.choices[0]!.message.content, 'hello there');
    const got = upstream.received[count]!;
    assert.equal(got.url, '/v1/chat/completions');
    assert.equal(got.headers.authorization, `Bearer ${KEY}`);
    assert.equal(got.headers['x-api-key'], undefined);
    assert.equal(got.headers['api-key'], undefined);
    assert.equal(got.headers.cookie, undefined);
    assert.deepEqual(got.body.messages, [{ role: 'user', content: 'hi' }]);
    assertNoToken(got, grant.token);
    assert.deepEqual(grant.usage(), { requests: 1, input_tokens: 10, output_tokens: 5, cost_usd: (10 * 2.5 + 5 * 10) / 1e6 });
    assert.equal(records.length, 1);
    assert.deepEqual({ ...records[0], at: undefined, latency_ms: undefined }, { at: undefined, latency_ms: undefined, api: 'chat', model: 'gpt-4o', stream: false, status: 200, input_tokens: 10, output_tokens: 5, cost_usd: (10 * 2.5 + 5 * 10) / 1e6 });
    assert.equal(grant.records().length, 1);
    grant.close();
  });

  it('takes an endpoint URL given as the upstream base back to its base', async () => {
    const grant = gateway.openRun({ runId: 'endpoint', upstream: { baseUrl: `${upstream.url}/chat/completions/`, key: KEY } });
    upstream.reply({ json: chatAnswer('a') });
    const count = upstream.received.length;
    assert.equal((await post('/v1/chat/completions', grant.token, { model: 'gpt-4o', messages: [] })).status, 200);
    assert.equal(upstream.received[count]!.url, '/v1/chat/completions');
    grant.close();
  });

  it('takes the path without /v1 and the token as x-api-key or api-key', async () => {
    const { grant } = openAiRun();
    upstream.reply({ json: chatAnswer('a') }, { json: chatAnswer('b') });
    const first = await fetch(`${base}/chat/completions`, { method: 'POST', headers: { 'x-api-key': grant.token }, body: JSON.stringify({ model: 'gpt-4o', messages: [] }) });
    const second = await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { 'api-key': grant.token }, body: JSON.stringify({ model: 'gpt-4o', messages: [] }) });
    assert.deepEqual([first.status, second.status], [200, 200]);
    assert.equal(grant.usage().requests, 2);
    grant.close();
  });

  it('streams chunk by chunk, asks for usage and keeps the usage chunk from an agent that did not', async () => {
    const { grant, records } = openAiRun();
    const more = gate();
    upstream.reply({ stream: [sse(chatChunk('Hel')), more.promise, sse(chatChunk('lo')), sse({ id: 'c', choices: [], usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 } }), sse('[DONE]')] });
    const count = upstream.received.length;
    const response = await post('/v1/chat/completions', grant.token, { model: 'gpt-4o-mini', stream: true, messages: [] });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /text\/event-stream/);
    const reader = bodyReader(response);
    // The first piece reaches the agent while the upstream still holds the rest back.
    assert.match((await reader.next()) ?? '', /Hel/);
    more.open();
    const rest = await reader.rest();
    assert.match(rest, /lo/);
    assert.match(rest, /\[DONE\]/);
    assert.doesNotMatch(rest, /prompt_tokens/);
    assert.deepEqual(upstream.received[count]!.body.stream_options, { include_usage: true });
    await waitFor(() => records.length === 1);
    assert.equal(records[0]!.stream, true);
    assert.deepEqual([records[0]!.input_tokens, records[0]!.output_tokens], [7, 2]);
    assert.equal(records[0]!.estimated, undefined);
    grant.close();
  });

  it('passes the usage chunk to an agent that asked for it', async () => {
    const { grant, records } = openAiRun();
    upstream.reply({ stream: [sse(chatChunk('x')), sse({ id: 'c', choices: [], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } }), sse('[DONE]')] });
    const response = await post('/v1/chat/completions', grant.token, { model: 'gpt-4o', stream: true, stream_options: { include_usage: true }, messages: [] });
    assert.match(await response.text(), /"prompt_tokens":3/);
    await waitFor(() => records.length === 1);
    assert.equal(records[0]!.output_tokens, 1);
    grant.close();
  });

  it('estimates tokens at 4 characters each when the upstream reports none, and says so', async () => {
    const { grant, records } = openAiRun();
    upstream.reply({ json: chatAnswer('x'.repeat(40), null) });
    const body = { model: 'gpt-4o', messages: [{ role: 'user', content: 'y'.repeat(100) }] };
    await (await post('/v1/chat/completions', grant.token, body)).json();
    assert.equal(records[0]!.estimated, true);
    assert.equal(records[0]!.output_tokens, 10);
    assert.equal(records[0]!.input_tokens, Math.ceil(JSON.stringify(body).length / 4));
    grant.close();
  });

  it('counts an unknown model at no cost and flags it; a run price table overrides the defaults', async () => {
    const { grant, records } = openAiRun({ prices: { 'gpt-4o': { input: 1000, output: 0 } } });
    upstream.reply({ json: chatAnswer('a', undefined, 'x') }, { json: chatAnswer('b') });
    await (await post('/v1/chat/completions', grant.token, { model: 'acme/unknown-model', messages: [] })).text();
    await (await post('/v1/chat/completions', grant.token, { model: 'openai/gpt-4o-2024-08-06', messages: [] })).text();
    assert.equal(records[0]!.cost_usd, 0);
    assert.equal(records[0]!.unpriced, true);
    assert.equal(records[1]!.cost_usd, (10 * 1000) / 1e6);
    assert.equal(records[1]!.unpriced, undefined);
    grant.close();
  });

  it('uses the cost the upstream reports (OpenRouter) over the price table', async () => {
    const { grant } = openAiRun();
    upstream.reply({ json: { ...chatAnswer('a'), usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2, cost: 0.5 } } });
    await (await post('/v1/chat/completions', grant.token, { model: 'gpt-4o', messages: [] })).text();
    assert.equal(grant.usage().cost_usd, 0.5);
    grant.close();
  });

  it('passes an upstream error through and counts no tokens for it', async () => {
    const { grant, records } = openAiRun();
    upstream.reply({ status: 400, json: { error: { message: 'bad model', type: 'invalid_request_error' } } });
    const response = await post('/v1/chat/completions', grant.token, { model: 'nope', messages: [] });
    assert.equal(response.status, 400);
    assert.equal(((await response.json()) as { error: { message: string } }).error.message, 'bad model');
    assert.deepEqual([records[0]!.status, records[0]!.input_tokens, records[0]!.output_tokens], [400, 0, 0]);
    grant.close();
  });
});

describe('gateway: OpenAI Responses API', () => {
  it('forwards whole and streamed requests and reads their usage', async () => {
    const { grant, records } = openAiRun();
    upstream.reply({ json: { id: 'resp_1', object: 'response', output: [{ type: 'message', content: [{ type: 'output_text', text: 'hi' }] }], usage: { input_tokens: 12, output_tokens: 3, total_tokens: 15 } } });
    const count = upstream.received.length;
    const whole = await post('/v1/responses', grant.token, { model: 'gpt-4.1', input: 'hello' });
    assert.equal(((await whole.json()) as { id: string }).id, 'resp_1');
    assert.equal(upstream.received[count]!.url, '/v1/responses');
    const more = gate();
    upstream.reply({
      stream: [
        sse({ type: 'response.output_text.delta', delta: 'He' }, 'response.output_text.delta'),
        more.promise,
        sse({ type: 'response.completed', response: { id: 'resp_2', usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 } } }, 'response.completed'),
      ],
    });
    const streamed = await post('/v1/responses', grant.token, { model: 'gpt-4.1', input: 'hello', stream: true });
    const reader = bodyReader(streamed);
    assert.match((await reader.next()) ?? '', /"He"/);
    more.open();
    assert.match(await reader.rest(), /response\.completed/);
    await waitFor(() => records.length === 2);
    assert.deepEqual(records.map((r) => [r.api, r.stream, r.input_tokens, r.output_tokens]), [
      ['responses', false, 12, 3],
      ['responses', true, 5, 2],
    ]);
    grant.close();
  });
});

describe('gateway: Anthropic Messages', () => {
  it('puts the real key in x-api-key with anthropic-version, never Authorization', async () => {
    const grant = anthropicRun();
    anthropicUpstream.reply({ json: messagesAnswer('bonjour') });
    const count = anthropicUpstream.received.length;
    const response = await fetch(`${base}/v1/messages`, { method: 'POST', headers: { 'x-api-key': grant.token, 'anthropic-version': '2023-06-01', authorization: `Bearer ${grant.token}` }, body: JSON.stringify({ model: 'claude-sonnet-4-20250514', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }) });
    assert.equal(response.status, 200);
    assert.equal(((await response.json()) as { content: { text: string }[] }).content[0]!.text, 'bonjour');
    const got = anthropicUpstream.received[count]!;
    assert.equal(got.url, '/v1/messages');
    assert.equal(got.headers['x-api-key'], KEY);
    assert.equal(got.headers['anthropic-version'], '2023-06-01');
    assert.equal(got.headers.authorization, undefined);
    assertNoToken(got, grant.token);
    assert.deepEqual(grant.usage(), { requests: 1, input_tokens: 20, output_tokens: 8, cost_usd: (20 * 3 + 8 * 15) / 1e6 });
    grant.close();
  });

  it('streams events as they come and reads usage from message_start and message_delta', async () => {
    const grant = anthropicRun();
    const more = gate();
    anthropicUpstream.reply({
      stream: [
        sse({ type: 'message_start', message: { id: 'm', usage: { input_tokens: 30, output_tokens: 1, cache_read_input_tokens: 10 } } }, 'message_start'),
        sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } }, 'content_block_delta'),
        more.promise,
        sse({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 12 } }, 'message_delta'),
        sse({ type: 'message_stop' }, 'message_stop'),
      ],
    });
    const response = await fetch(`${base}/v1/messages`, { method: 'POST', headers: { 'x-api-key': grant.token }, body: JSON.stringify({ model: 'claude-3-5-haiku-latest', max_tokens: 10, stream: true, messages: [] }) });
    const reader = bodyReader(response);
    let first = '';
    while (!first.includes('"Hi"')) first += (await reader.next()) ?? assert.fail('the stream ended early');
    more.open();
    assert.match(await reader.rest(), /message_stop/);
    await waitFor(() => grant.usage().requests === 1);
    assert.deepEqual([grant.usage().input_tokens, grant.usage().output_tokens], [40, 12]);
    grant.close();
  });

  it('passes token counting through uncounted, and only to an Anthropic upstream', async () => {
    const grant = anthropicRun();
    anthropicUpstream.reply({ json: { input_tokens: 42 } });
    const count = anthropicUpstream.received.length;
    const response = await fetch(`${base}/v1/messages/count_tokens`, { method: 'POST', headers: { 'x-api-key': grant.token }, body: JSON.stringify({ model: 'claude-sonnet-4-5', messages: [] }) });
    assert.deepEqual(await response.json(), { input_tokens: 42 });
    assert.equal(anthropicUpstream.received[count]!.url, '/v1/messages/count_tokens');
    assert.equal(anthropicUpstream.received[count]!.headers['x-api-key'], KEY);
    assert.equal(grant.usage().requests, 0);
    const { grant: openAi } = openAiRun();
    const refused = await post('/v1/messages/count_tokens', openAi.token, { model: 'gpt-4o', messages: [] });
    assert.equal(refused.status, 400);
    grant.close();
    openAi.close();
  });

  it('tells an agent that speaks the other API where to go, in its own error shape', async () => {
    const grant = anthropicRun();
    const response = await post('/v1/chat/completions', grant.token, { model: 'claude-3-5-haiku', messages: [] });
    assert.equal(response.status, 400);
    assert.match(((await response.json()) as { error: { message: string } }).error.message, /\/v1\/messages/);
    const { grant: openAi } = openAiRun();
    const wrong = await post('/v1/messages', openAi.token, { model: 'gpt-4o', messages: [] });
    const body = (await wrong.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(body.type, 'error');
    assert.match(body.error.message, /\/v1\/chat\/completions/);
    grant.close();
    openAi.close();
  });
});

describe('gateway: Term Challenge /llm/proxy', () => {
  const sdkBody = (token: string, extra: Record<string, unknown> = {}) => ({
    agent_hash: token,
    messages: [{ role: 'user', content: 'list files' }],
    model: 'gpt-4o-mini',
    max_tokens: 256,
    task_id: 'hello',
    extra_params: { top_p: 0.5 },
    temperature: 0.2,
    ...extra,
  });

  it('answers the term_sdk request in its own shape, with the provider request built like the real proxy', async () => {
    const { grant } = openAiRun();
    upstream.reply({ json: { ...chatAnswer('ls -la', { prompt_tokens: 100, completion_tokens: 20 }, 'gpt-4o-mini'), choices: [{ index: 0, message: { role: 'assistant', content: 'ls -la', tool_calls: [{ id: 't1', type: 'function', function: { name: 'run', arguments: '{}' } }] } }] } });
    const count = upstream.received.length;
    const response = await post('/llm/proxy', grant.token, sdkBody(grant.token));
    assert.equal(response.status, 200);
    const answer = (await response.json()) as Record<string, unknown>;
    assert.deepEqual(answer, {
      success: true,
      content: 'ls -la',
      model: 'gpt-4o-mini',
      usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 },
      cost_usd: (100 * 0.15 + 20 * 0.6) / 1e6,
      error: null,
      tool_calls: [{ id: 't1', type: 'function', function: { name: 'run', arguments: '{}' } }],
    });
    const got = upstream.received[count]!;
    assert.equal(got.url, '/v1/chat/completions');
    assert.deepEqual(got.body, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'list files' }], temperature: 0.2, max_tokens: 256, top_p: 0.5 });
    assert.equal(got.headers.authorization, `Bearer ${KEY}`);
    assertNoToken(got, grant.token);
    assert.equal(grant.records()[0]!.api, 'proxy');
    grant.close();
  });

  it('streams on /llm/proxy/stream with the token only in agent_hash, without the usage chunk', async () => {
    const { grant } = openAiRun();
    upstream.reply({ stream: [sse(chatChunk('ok')), sse({ id: 'c', choices: [], usage: { prompt_tokens: 4, completion_tokens: 1, total_tokens: 5 } }), sse('[DONE]')] });
    const response = await fetch(`${base}/llm/proxy/stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(sdkBody(grant.token)) });
    assert.equal(response.status, 200);
    const text = await response.text();
    assert.match(text, /"ok"/);
    assert.match(text, /\[DONE\]/);
    // term_sdk reads choices[0] of every chunk: a chunk without choices would break it.
    for (const line of text.split('\n').filter((l) => l.startsWith('data: {'))) assert.ok((JSON.parse(line.slice(6)) as { choices: unknown[] }).choices.length > 0);
    await waitFor(() => grant.usage().requests === 1);
    assert.equal(grant.usage().input_tokens, 4);
    grant.close();
  });

  it('translates the request and the answer for an Anthropic upstream', async () => {
    const grant = anthropicRun();
    anthropicUpstream.reply({ json: { ...messagesAnswer('done'), content: [{ type: 'text', text: 'done' }, { type: 'tool_use', id: 'tu1', name: 'run', input: { cmd: 'ls' } }] } });
    const count = anthropicUpstream.received.length;
    const response = await post('/llm/proxy', grant.token, sdkBody(grant.token, { model: 'claude-3-5-sonnet-20241022', messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'go' }], extra_params: null }));
    const answer = (await response.json()) as { success: boolean; content: string; tool_calls: unknown[]; usage: { prompt_tokens: number } };
    assert.equal(answer.success, true);
    assert.equal(answer.content, 'done');
    assert.deepEqual(answer.tool_calls, [{ id: 'tu1', type: 'function', function: { name: 'run', arguments: '{"cmd":"ls"}' } }]);
    assert.equal(answer.usage.prompt_tokens, 20);
    const got = anthropicUpstream.received[count]!;
    assert.equal(got.url, '/v1/messages');
    assert.equal(got.body.system, 'be brief');
    assert.deepEqual(got.body.messages, [{ role: 'user', content: [{ type: 'text', text: 'go' }] }]);
    assert.equal(got.body.max_tokens, 256);
    grant.close();
  });

  it('streams an Anthropic upstream as the OpenAI chunks term_sdk reads, tool calls included', async () => {
    const grant = anthropicRun();
    anthropicUpstream.reply({
      stream: [
        sse({ type: 'message_start', message: { id: 'm', usage: { input_tokens: 9, output_tokens: 1 } } }, 'message_start'),
        sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start'),
        sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'ls' } }, 'content_block_delta'),
        sse({ type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'tu1', name: 'run', input: {} } }, 'content_block_start'),
        sse({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"cmd":' } }, 'content_block_delta'),
        sse({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '"ls"}' } }, 'content_block_delta'),
        sse({ type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 3 } }, 'message_delta'),
        sse({ type: 'message_stop' }, 'message_stop'),
      ],
    });
    const response = await fetch(`${base}/llm/proxy/stream`, { method: 'POST', body: JSON.stringify(sdkBody(grant.token, { model: 'claude-3-5-haiku-latest', extra_params: null })) });
    const data = (await response.text()).split('\n').filter((line) => line.startsWith('data: ')).map((line) => line.slice(6));
    assert.equal(data.at(-1), '[DONE]');
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d) as { choices: { delta: { content?: string; tool_calls?: unknown[] }; finish_reason?: string }[] });
    assert.deepEqual(chunks.map((c) => [c.choices[0]!.delta.content, c.choices[0]!.delta.tool_calls, c.choices[0]!.finish_reason]), [
      ['ls', undefined, undefined],
      [undefined, [{ index: 0, id: 'tu1', type: 'function', function: { name: 'run', arguments: '' } }], undefined],
      [undefined, [{ index: 0, function: { arguments: '{"cmd":' } }], undefined],
      [undefined, [{ index: 0, function: { arguments: '"ls"}' } }], undefined],
      [undefined, undefined, 'tool_calls'],
    ]);
    await waitFor(() => grant.usage().requests === 1);
    assert.deepEqual([grant.usage().input_tokens, grant.usage().output_tokens], [9, 3]);
    grant.close();
  });

  it('words upstream errors as {success: false, error}', async () => {
    const { grant } = openAiRun();
    upstream.reply({ status: 404, json: { error: { message: 'no such model' } } });
    const response = await post('/llm/proxy', grant.token, sdkBody(grant.token));
    assert.equal(response.status, 404);
    assert.deepEqual(await response.json(), { success: false, error: 'no such model', status_code: 404 });
    grant.close();
  });
});

describe('gateway: budget', () => {
  it('refuses requests once the USD budget is spent, in each API shape, and tells the run once', async () => {
    const { grant } = openAiRun({ budget: { usd: 0.00001 } });
    let fired = 0;
    grant.onBudgetExceeded(() => fired++);
    upstream.reply({ json: chatAnswer('a', { prompt_tokens: 1000, completion_tokens: 1000 }) });
    assert.equal((await post('/v1/chat/completions', grant.token, { model: 'gpt-4o', messages: [] })).status, 200);
    assert.equal(grant.budgetExceeded, true);
    const count = upstream.received.length;
    const refused = await post('/v1/chat/completions', grant.token, { model: 'gpt-4o', messages: [] });
    assert.equal(refused.status, 402);
    const body = (await refused.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'budget_exceeded');
    assert.match(body.error.message, /budget is spent/);
    const viaProxy = await post('/llm/proxy', grant.token, { agent_hash: grant.token, messages: [], model: 'gpt-4o' });
    assert.equal(viaProxy.status, 402);
    // term_sdk raises its fatal CostLimitExceeded on this wording.
    assert.match(((await viaProxy.json()) as { error: string }).error, /^cost_limit_exceeded: .*\$[\d.]+ used of \$[\d.]+ limit/);
    assert.equal(upstream.received.length, count, 'a refused request reached the upstream');
    assert.equal(fired, 1);
    let late = false;
    grant.onBudgetExceeded(() => (late = true));
    await waitFor(() => late);
    assert.equal(grant.usage().requests, 1);
    assert.equal(grant.records().length, 3);
    assert.deepEqual(grant.records().slice(1).map((r) => [r.status, r.error]), [
      [402, 'budget_exceeded'],
      [402, 'budget_exceeded'],
    ]);
    grant.close();
  });

  it('stops at a token budget too (Anthropic error shape)', async () => {
    const grant = gateway.openRun({ runId: 'tok', upstream: { baseUrl: anthropicUpstream.url, key: KEY, api: 'anthropic' }, budget: { tokens: 20 } });
    anthropicUpstream.reply({ json: messagesAnswer('x') });
    await (await fetch(`${base}/v1/messages`, { method: 'POST', headers: { 'x-api-key': grant.token }, body: '{"model":"claude-3-haiku","messages":[]}' })).text();
    const refused = await fetch(`${base}/v1/messages`, { method: 'POST', headers: { 'x-api-key': grant.token }, body: '{"model":"claude-3-haiku","messages":[]}' });
    assert.equal(refused.status, 402);
    const body = (await refused.json()) as { type: string; error: { type: string; message: string } };
    assert.deepEqual([body.type, body.error.type], ['error', 'billing_error']);
    assert.match(body.error.message, /28 tokens used of 20 limit/);
    grant.close();
  });
});

describe('gateway: tokens', () => {
  it('answers 401 with one JSON line to a request without a token, with an unknown one, or a closed run', async () => {
    const { grant } = openAiRun();
    grant.close();
    const count = upstream.received.length;
    const attempts: Record<string, string>[] = [{}, { authorization: 'Bearer nope' }, { authorization: `Bearer ${grant.token}` }, { 'x-api-key': KEY }];
    for (const headers of attempts) {
      const response = await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers, body: '{"model":"gpt-4o","messages":[]}' });
      assert.equal(response.status, 401);
      const text = await response.text();
      assert.equal(text.trim().split('\n').length, 1);
      const body = JSON.parse(text) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'invalid_run_token');
      assert.match(body.error.message, /run token/);
    }
    const proxied = await fetch(`${base}/llm/proxy/stream`, { method: 'POST', body: JSON.stringify({ agent_hash: 'guess', messages: [] }) });
    assert.equal(proxied.status, 401);
    assert.equal(((await proxied.json()) as { success: boolean }).success, false);
    assert.equal(upstream.received.length, count);
  });
});

describe('gateway: an agent process with llmEnvironment', () => {
  it('reaches the model through every variable it is given, and never sees the key', async () => {
    const { grant } = openAiRun();
    upstream.reply({ json: chatAnswer('via LLM_API_URL') }, { json: chatAnswer('via OPENAI_BASE_URL') }, { json: chatAnswer('via LLM_PROXY_URL') });
    const agent = `
      const env = process.env;
      const call = async (url, headers, body) => (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })).json();
      const answers = [
        (await call(env.LLM_API_URL, { authorization: 'Bearer ' + env.LLM_API_KEY }, { model: 'gpt-4o', messages: [] })).choices[0].message.content,
        (await call(env.OPENAI_BASE_URL + '/chat/completions', { authorization: 'Bearer ' + env.OPENAI_API_KEY }, { model: 'gpt-4o', messages: [] })).choices[0].message.content,
        (await call(env.LLM_PROXY_URL + '/llm/proxy', { authorization: 'Bearer ' + env.LLM_API_KEY }, { agent_hash: env.TERM_AGENT_HASH, model: 'gpt-4o', messages: [] })).content,
      ];
      console.log(JSON.stringify({ answers, env }));`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', agent], { env: { PATH: process.env.PATH ?? '', ...llmEnvironment(base, grant.token) } });
    const out = JSON.parse(stdout) as { answers: string[]; env: Record<string, string> };
    assert.deepEqual(out.answers, ['via LLM_API_URL', 'via OPENAI_BASE_URL', 'via LLM_PROXY_URL']);
    assert.ok(!JSON.stringify(out.env).includes(KEY));
    assert.equal(grant.usage().requests, 3);
    grant.close();
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}
