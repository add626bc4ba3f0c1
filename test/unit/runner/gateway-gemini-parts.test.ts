// The Gemini shape's pure parts: a path read into its route (or refused, or left to the other
// routes), the token in a query, usage from usageMetadata, the error shape, the plan sent upstream.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gemini, geminiError, geminiRoute, geminiUsage, queryKey } from '../../../src/runner/core/gateway/gemini.ts';
import { Grant } from '../../../src/runner/core/gateway/grant.ts';

describe('Gemini routes', () => {
  it('reads the version, model and method from the path; the stream form from alt=sse', () => {
    assert.deepEqual(geminiRoute('/v1beta/models/gemini-2.5-flash:streamGenerateContent', 'alt=sse'), { kind: 'call', route: { version: 'v1beta', model: 'gemini-2.5-flash', method: 'streamGenerateContent', sse: true } });
    assert.deepEqual(geminiRoute('/v1/models/gemini-2.5-pro:streamGenerateContent', ''), { kind: 'call', route: { version: 'v1', model: 'gemini-2.5-pro', method: 'streamGenerateContent', sse: false } });
    assert.deepEqual(geminiRoute('/v1beta/models/gemini-2.5-pro:generateContent', 'alt=sse'), { kind: 'call', route: { version: 'v1beta', model: 'gemini-2.5-pro', method: 'generateContent', sse: false } });
    assert.deepEqual(geminiRoute('/v1beta/models/m_1.5:countTokens', ''), { kind: 'countTokens', upstreamPath: '/v1beta/models/m_1.5:countTokens' });
    assert.deepEqual(geminiRoute('/v1beta/models', 'pageSize=5'), { kind: 'models', upstreamPath: '/v1beta/models' });
    assert.deepEqual(geminiRoute('/v1beta/models/gemini-2.5-pro', ''), { kind: 'models', upstreamPath: '/v1beta/models/gemini-2.5-pro' });
  });

  it('leaves the other APIs’ paths alone, and refuses what breaks a rule under Gemini’s', () => {
    for (const path of ['/v1/chat/completions', '/v1/models', '/v1/models/gpt-4o', '/llm/proxy', '/v2beta/models/x:generateContent']) assert.equal(geminiRoute(path, ''), undefined, path);
    for (const path of ['/v1beta/models/..:generateContent', '/v1beta/models/a%2Fb:generateContent', '/v1beta/models/a\\b:generateContent', '/v1beta/models/a:b:generateContent', '/v1beta/models/x:embedContent', '/v1beta/files', '/v1beta', '/v1/models/..:generateContent', '/v1beta/models/.hidden:generateContent']) {
      assert.equal(geminiRoute(path, '')?.kind, 'invalid', path);
    }
  });

  it('takes one key from the query, never two', () => {
    assert.equal(queryKey('alt=sse&key=belay-run-a'), 'belay-run-a');
    assert.equal(queryKey('key=a&key=b'), undefined);
    assert.equal(queryKey('key=&alt=sse'), undefined);
    assert.equal(queryKey('alt=sse'), undefined);
  });
});

describe('Gemini usage, errors and plans', () => {
  it('counts the prompt and tool-use prompt as input, candidates and thoughts as output', () => {
    assert.deepEqual(geminiUsage({ promptTokenCount: 100, candidatesTokenCount: 7, thoughtsTokenCount: 3, cachedContentTokenCount: 40, toolUsePromptTokenCount: 5 }), { input: 105, output: 10 });
    assert.deepEqual(geminiUsage({ promptTokenCount: 100 }), { input: 100, output: 0 });
    assert.equal(geminiUsage({ totalTokenCount: 5 }), undefined);
    assert.equal(geminiUsage({ promptTokenCount: -1 }), undefined);
    assert.equal(geminiUsage('x'), undefined);
  });

  it('reads usage and text from a whole answer and from a JSON array of answers', () => {
    const answer = (text: string, usage?: object) => ({ candidates: [{ content: { parts: [{ text }, { functionCall: { name: 'f', args: {} } }] } }], ...(usage ? { usageMetadata: usage } : {}) });
    const one = gemini.answer(answer('hello', { promptTokenCount: 10, candidatesTokenCount: 2 }));
    assert.deepEqual(one.usage, { input: 10, output: 2 });
    assert.ok(one.outputChars > 5);
    const many = gemini.answer([answer('a', { promptTokenCount: 10 }), answer('b', { promptTokenCount: 10, candidatesTokenCount: 4 })]);
    assert.deepEqual(many.usage, { input: 10, output: 4 });
    assert.deepEqual(gemini.answer(null), { usage: undefined, outputChars: 0 });
  });

  it('words errors as google.rpc.Status with Belay’s code as the reason', () => {
    assert.deepEqual(geminiError(401, 'invalid_run_token', 'no'), { error: { code: 401, message: 'no', status: 'UNAUTHENTICATED', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'invalid_run_token', domain: 'belay.gateway' }] } });
    assert.equal((geminiError(402, 'budget_exceeded', 'x') as { error: { status: string } }).error.status, 'RESOURCE_EXHAUSTED');
    assert.equal((geminiError(504, 'upstream_timeout', 'x') as { error: { status: string } }).error.status, 'DEADLINE_EXCEEDED');
  });

  it('plans the upstream path from the route alone and refuses other upstreams', () => {
    const route = { version: 'v1beta', model: 'gemini-2.5-flash', method: 'streamGenerateContent', sse: true } as const;
    assert.deepEqual(gemini.plan({ contents: [] }, { api: 'gemini' }, { forceStream: true, route }), { path: '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', body: { contents: [] }, model: 'gemini-2.5-flash', stream: true });
    assert.match((gemini.plan({}, { api: 'anthropic' }, { forceStream: false, route }) as { refused: string }).refused, /Anthropic Messages API, not the Gemini API/);
    assert.ok('refused' in gemini.plan({}, { api: 'gemini' }, { forceStream: false }));
  });
});

describe('a Gemini upstream', () => {
  it("is known by Google's host, and its base loses the API version each path names", () => {
    const grant = new Grant({ runId: 'r', upstream: { baseUrl: 'https://generativelanguage.googleapis.com/v1beta/', key: 'k' } }, () => undefined);
    assert.deepEqual(grant.upstream, { baseUrl: 'https://generativelanguage.googleapis.com', key: 'k', api: 'gemini', model: undefined });
    const local = new Grant({ runId: 'r', upstream: { baseUrl: 'http://127.0.0.1:9/v1', key: '', api: 'gemini' } }, () => undefined);
    assert.equal(local.upstream.baseUrl, 'http://127.0.0.1:9');
    assert.equal(new Grant({ runId: 'r', upstream: { baseUrl: 'https://example.com/v1beta', key: 'k' } }, () => undefined).upstream.api, 'openai');
  });
});
