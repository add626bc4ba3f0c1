// The scripted chat completions service the OpenCode tests use (test/support/runner/upstreams/
// chat.ts), asked as OpenAI's SDK asks: streamed and not, tool calls, usage only when asked, the
// turn by the conversation, the key checked, OpenAI's error shape. What its tests rely on.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { startChatUpstream, type ChatUpstream } from '../../support/runner/upstreams/chat.ts';

const KEY = 'sk-scripted-chat-key';
const upstreams: ChatUpstream[] = [];
after(() => Promise.all(upstreams.map((u) => u.close())));

async function service(...args: Parameters<typeof startChatUpstream>): Promise<ChatUpstream> {
  const upstream = await startChatUpstream(...args);
  upstreams.push(upstream);
  return upstream;
}

const tools = [{ type: 'function', function: { name: 'bash', parameters: { type: 'object' } } }];
const ask = (upstream: ChatUpstream, body: Record<string, unknown>, key = KEY, route = '/chat/completions') =>
  fetch(`${upstream.url}${route}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** The `data:` payloads of an SSE body. */
const events = (text: string) =>
  text
    .split('\n\n')
    .filter((block) => block.startsWith('data: '))
    .map((block) => block.slice('data: '.length));

describe('the scripted chat completions service', () => {
  it('streams a turn as the service does: text pieces, a tool call built up by index, the finish reason, usage when asked, [DONE]', async () => {
    const upstream = await service({ key: KEY, turns: [{ text: 'Writing it now.', toolCalls: [{ name: 'bash', arguments: { command: "printf 'x' > a" } }], usage: { prompt_tokens: 70, completion_tokens: 9 } }], chunkMs: 1 });
    const response = await ask(upstream, { model: 'gpt-4.1', stream: true, stream_options: { include_usage: true }, tools, messages: [{ role: 'user', content: 'go' }] });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/event-stream/);
    const data = events(await response.text());
    assert.equal(data.at(-1), '[DONE]');
    const chunks = data.slice(0, -1).map((text) => JSON.parse(text) as { object: string; choices: { delta: Record<string, unknown>; finish_reason: string | null }[]; usage?: unknown });
    assert.ok(chunks.every((chunk) => chunk.object === 'chat.completion.chunk'));
    const deltas = chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.delta));
    assert.equal(deltas.map((delta) => (typeof delta.content === 'string' ? delta.content : '')).join(''), 'Writing it now.');
    const calls = deltas.flatMap((delta) => (Array.isArray(delta.tool_calls) ? (delta.tool_calls as { index: number; id?: string; function: { name?: string; arguments?: string } }[]) : []));
    assert.equal(calls[0]?.id, 'call_1_0');
    assert.equal(calls[0]?.function.name, 'bash');
    assert.deepEqual(JSON.parse(calls.map((call) => call.function.arguments ?? '').join('')), { command: "printf 'x' > a" });
    assert.ok(calls.length > 2, 'the arguments come in pieces');
    assert.deepEqual(chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.finish_reason)).filter(Boolean), ['tool_calls']);
    const last = chunks.at(-1)!;
    assert.deepEqual([last.choices, last.usage], [[], { prompt_tokens: 70, completion_tokens: 9, total_tokens: 79 }]);
    assert.deepEqual(upstream.reportedUsage(), { prompt_tokens: 70, completion_tokens: 9 });
    assert.equal(upstream.received[0]?.headers.authorization, `Bearer ${KEY}`);
  });

  it('sends no usage chunk when not asked, and answers whole when not streamed', async () => {
    const upstream = await service({ key: KEY, turns: [{ text: 'Hello.' }] });
    const streamed = events(await (await ask(upstream, { model: 'm', stream: true, tools, messages: [] })).text());
    assert.ok(streamed.slice(0, -1).every((text) => !('usage' in (JSON.parse(text) as object))));
    const whole = (await (await ask(upstream, { model: 'm', tools, messages: [] })).json()) as { object: string; choices: { message: { content: string }; finish_reason: string }[]; usage: { total_tokens: number } };
    assert.deepEqual([whole.object, whole.choices[0]?.message.content, whole.choices[0]?.finish_reason, whole.usage.total_tokens > 0], ['chat.completion', 'Hello.', 'stop', true]);
  });

  it("takes each request's turn from its conversation (a retry gets the same answer), gives side requests a short answer, and ends with Done.", async () => {
    const upstream = await service({ key: KEY, turns: [{ text: 'first' }, { text: 'second' }] });
    const text = async (messages: unknown[], withTools = true) => ((await (await ask(upstream, { model: 'm', ...(withTools ? { tools } : {}), messages })).json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content;
    const assistant = { role: 'assistant', content: 'x' };
    assert.equal(await text([{ role: 'user', content: 'a' }]), 'first');
    assert.equal(await text([{ role: 'user', content: 'a' }]), 'first');
    assert.equal(await text([{ role: 'user', content: 'a' }, assistant]), 'second');
    assert.equal(await text([{ role: 'user', content: 'a' }, assistant, assistant]), 'Done.');
    assert.equal(await text([{ role: 'user', content: 'title?' }], false), 'A task on a file');
    assert.deepEqual(upstream.completions().map((request) => request.turn), [0, 0, 1, 2, null]);
  });

  it("refuses a wrong key, a missing route and a body without messages in OpenAI's error shape, and fails a turn as scripted", async () => {
    const upstream = await service({ key: KEY, turns: [{ error: { status: 429, message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } }] });
    const wrongKey = await ask(upstream, { model: 'm', messages: [] }, 'sk-wrong');
    assert.equal(wrongKey.status, 401);
    assert.equal(((await wrongKey.json()) as { error: { code: string } }).error.code, 'invalid_api_key');
    assert.equal((await ask(upstream, { model: 'm', messages: [] }, KEY, '/completions')).status, 404);
    const noMessages = await ask(upstream, { model: 'm' });
    assert.equal(noMessages.status, 400);
    const failed = await ask(upstream, { model: 'm', tools, messages: [] });
    assert.equal(failed.status, 429);
    assert.deepEqual(await failed.json(), { error: { message: 'Rate limit reached', type: 'requests', param: null, code: 'rate_limit_exceeded' } });
    const models = await fetch(`${upstream.url}/models`, { headers: { authorization: `Bearer ${KEY}` } });
    assert.equal(((await models.json()) as { object: string }).object, 'list');
  });
});
