// The gateway's pure parts: prices, Retry-After, the SSE reader, the agent's environment.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { llmEnvironment } from '../../../src/runner/core/gateway/index.ts';
import { KeyGate, retryAfterMs, retryDelay, DEFAULT_RETRY } from '../../../src/runner/core/gateway/backoff.ts';
import { upstreamUrl } from '../../../src/runner/core/gateway/forward.ts';
import { Grant, MAX_RECORDS } from '../../../src/runner/core/gateway/grant.ts';
import { costOf, findPrice, normaliseModel, priceTable } from '../../../src/runner/core/gateway/prices.ts';
import { eventJson, SseReader } from '../../../src/runner/core/gateway/sse.ts';

describe('gateway prices', () => {
  const table = priceTable({ 'my-model': { input: 1, output: 2 }, 'gpt-4o': { input: 5, output: 5 } });

  it('finds a model by its bare name, with dots as dashes, and by the longest entry it starts with', () => {
    assert.equal(normaliseModel('anthropic/Claude-3.5-Sonnet'), 'claude-3-5-sonnet');
    assert.deepEqual(findPrice(table, 'openai/gpt-4o-mini'), { input: 0.15, output: 0.6 });
    assert.deepEqual(findPrice(table, 'gpt-4o-2024-08-06'), { input: 5, output: 5 });
    assert.deepEqual(findPrice(table, 'claude-sonnet-4-5-20250929'), { input: 3, output: 15 });
    assert.deepEqual(findPrice(table, 'claude-3-5-haiku-latest'), { input: 0.8, output: 4 });
    assert.deepEqual(findPrice(table, 'o3-pro'), { input: 20, output: 80 });
    assert.deepEqual(findPrice(table, 'gpt-4.1-mini'), { input: 0.4, output: 1.6 });
    assert.deepEqual(findPrice(table, 'my-model'), { input: 1, output: 2 });
  });

  it('knows no price for an unknown model or a name that only looks like a prefix', () => {
    assert.equal(findPrice(table, 'llama-3-70b'), undefined);
    assert.equal(findPrice(table, 'gpt-4omega'), undefined);
    assert.equal(findPrice(table, null), undefined);
    assert.equal(costOf({ input: 2, output: 8 }, 1_000_000, 500_000), 6);
  });
});

describe('gateway backoff', () => {
  it('reads Retry-After as milliseconds, seconds or a date', () => {
    assert.equal(retryAfterMs({ 'retry-after-ms': '250' }), 250);
    assert.equal(retryAfterMs({ 'retry-after': '3' }), 3000);
    assert.equal(retryAfterMs({ 'retry-after': new Date(10_000).toUTCString() }, 4000), 6000);
    assert.equal(retryAfterMs({ 'retry-after': 'soon' }), undefined);
    assert.equal(retryAfterMs({}), undefined);
  });

  it('retries 429 and 503-with-Retry-After only, within the attempts and the longest wait', () => {
    assert.equal(retryDelay(429, { 'retry-after': '2' }, 0, DEFAULT_RETRY), 2000);
    assert.equal(retryDelay(503, { 'retry-after': '1' }, 0, DEFAULT_RETRY), 1000);
    assert.equal(retryDelay(503, {}, 0, DEFAULT_RETRY), undefined);
    assert.equal(retryDelay(500, { 'retry-after': '1' }, 0, DEFAULT_RETRY), undefined);
    assert.equal(retryDelay(429, { 'retry-after': '3600' }, 0, DEFAULT_RETRY), undefined);
    assert.equal(retryDelay(429, {}, DEFAULT_RETRY.attempts - 1, DEFAULT_RETRY), undefined);
    const backoff = retryDelay(429, {}, 2, { attempts: 5, baseDelayMs: 100, maxDelayMs: 10_000 })!;
    assert.ok(backoff >= 320 && backoff <= 480, String(backoff));
  });

  it('holds a key, not its neighbours, and keeps the longer hold', () => {
    const gate = new KeyGate();
    const a = KeyGate.id('key-a');
    assert.ok(!a.includes('key-a'));
    gate.hold(a, 10_000);
    gate.hold(a, 10);
    assert.ok(gate.remaining(a) > 5000);
    assert.equal(gate.remaining(KeyGate.id('key-b')), 0);
  });
});

describe('gateway run accounting', () => {
  it('keeps the last records in memory but counts every request', () => {
    const grant = new Grant({ runId: 'many', upstream: { baseUrl: 'http://127.0.0.1:1/v1', key: 'k' } }, () => {});
    const outcome = { api: 'chat' as const, model: 'gpt-4o', stream: false, status: 200, startedAt: Date.now(), reported: { input: 1, output: 1 }, inputChars: 0, outputChars: 0, reachedModel: true, retries: 0 };
    for (let i = 0; i <= MAX_RECORDS; i++) grant.account({ ...outcome, status: i === 0 ? 201 : 200 });
    assert.equal(grant.records().length, MAX_RECORDS);
    assert.equal(grant.records()[0]!.status, 200);
    assert.equal(grant.usage().requests, MAX_RECORDS + 1);
    assert.equal(grant.usage().input_tokens, MAX_RECORDS + 1);
  });
});

describe('gateway SSE reader', () => {
  it('splits events across chunk boundaries, CRLF and multi-byte characters included', () => {
    const reader = new SseReader();
    const text = 'event: a\r\ndata: {"x":"é"}\r\n\r\n: comment\n\ndata: [DONE]\n\ndata: tail';
    const bytes = new TextEncoder().encode(text);
    const events = [];
    for (let i = 0; i < bytes.length; i += 3) events.push(...reader.push(bytes.slice(i, i + 3)));
    events.push(...reader.end());
    assert.deepEqual(events.map((e) => [e.event, e.data]), [
      ['a', '{"x":"é"}'],
      [undefined, ''],
      [undefined, '[DONE]'],
      [undefined, 'tail'],
    ]);
    assert.equal(events.map((e) => e.raw).join(''), text);
    assert.deepEqual(eventJson(events[0]!), { x: 'é' });
    assert.equal(eventJson(events[2]!), undefined);
  });
});

describe('gateway URLs and environment', () => {
  it('joins a base ending in /v1 and a path starting with it once', () => {
    assert.equal(upstreamUrl('https://api.anthropic.com', '/v1/messages').href, 'https://api.anthropic.com/v1/messages');
    assert.equal(upstreamUrl('https://api.anthropic.com/v1', '/v1/messages').href, 'https://api.anthropic.com/v1/messages');
    assert.equal(upstreamUrl('https://openrouter.ai/api/v1', '/chat/completions').href, 'https://openrouter.ai/api/v1/chat/completions');
  });

  it('gives the agent every URL and key variable the SDKs read, all pointing at the gateway', () => {
    const env = llmEnvironment('http://127.0.0.1:4141/', 'belay-run-token');
    assert.deepEqual(env, {
      LLM_PROXY_URL: 'http://127.0.0.1:4141',
      LLM_API_URL: 'http://127.0.0.1:4141/v1/chat/completions',
      OPENAI_BASE_URL: 'http://127.0.0.1:4141/v1',
      OPENAI_API_BASE: 'http://127.0.0.1:4141/v1',
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:4141',
      ANTHROPIC_API_BASE: 'http://127.0.0.1:4141',
      OPENROUTER_API_BASE: 'http://127.0.0.1:4141/v1',
      GOOGLE_GEMINI_BASE_URL: 'http://127.0.0.1:4141',
      LLM_API_KEY: 'belay-run-token',
      OPENAI_API_KEY: 'belay-run-token',
      ANTHROPIC_API_KEY: 'belay-run-token',
      OPENROUTER_API_KEY: 'belay-run-token',
      GEMINI_API_KEY: 'belay-run-token',
      GOOGLE_API_KEY: 'belay-run-token',
      TERM_AGENT_HASH: 'belay-run-token',
    });
  });
});
