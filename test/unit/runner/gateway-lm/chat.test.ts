// OpenAI chat completions to and from the LM API's terms: messages, tools, tool calls and their
// results, refusals and what is left out, the completion whole and as streamed chunks.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lmChat } from '../../../../src/runner/core/gateway/lmChat.ts';
import type { LmRequest } from '../../../../src/runner/core/gateway/lmModel.ts';
import { streamed } from '../../../support/runner/lm-streams.ts';

const ok = (body: Record<string, unknown>, stream = false): LmRequest => {
  const request = lmChat.read(body, { stream });
  assert.ok(!('refused' in request), `refused: ${'refused' in request ? request.refused : ''}`);
  return request;
};
const refusal = (body: Record<string, unknown>): string => {
  const request = lmChat.read(body, { stream: false });
  assert.ok('refused' in request, 'the request was not refused');
  return request.refused;
};
const SHELL = { type: 'function', function: { name: 'shell', description: 'Runs a command', parameters: { type: 'object', properties: { cmd: { type: 'string' } } } } };

describe('chat completions → LM API', () => {
  it('reads system, user, an assistant tool call and the tool message, and function tools', () => {
    const request = ok({
      model: 'gpt-4o',
      max_completion_tokens: 300,
      tools: [SHELL],
      tool_choice: 'auto',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'List files' }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'shell', arguments: '{"cmd":"ls"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'a.txt' },
      ],
    });
    assert.deepEqual(request.messages, [
      { role: 'user', parts: [{ type: 'text', text: 'Be brief.' }, { type: 'text', text: 'List files' }] },
      { role: 'assistant', parts: [{ type: 'toolCall', callId: 'call_1', name: 'shell', input: { cmd: 'ls' } }] },
      { role: 'user', parts: [{ type: 'toolResult', callId: 'call_1', text: 'a.txt' }] },
    ]);
    assert.deepEqual(request.tools, [{ name: 'shell', description: 'Runs a command', inputSchema: SHELL.function.parameters }]);
    assert.deepEqual(request.options, { toolMode: 'auto', modelOptions: { max_tokens: 300 } });
    assert.equal(request.stream, false);
  });

  it('streams when the route does or the body asks, and remembers whether the usage chunk was asked for', () => {
    assert.equal(ok({ messages: [] }, true).stream, true);
    const asked = ok({ messages: [], stream: true, stream_options: { include_usage: true } });
    assert.equal(asked.stream, true);
    assert.equal(asked.includeUsage, true);
    assert.equal(ok({ messages: [], stream: true }).includeUsage, false);
  });

  it('refuses images, audio, structured output, n > 1, a named tool_choice and bad arguments', () => {
    assert.match(refusal({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:' } }] }] }), /'image_url' content part \(images, audio and files\)/);
    assert.match(refusal({ messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }] }), /'input_audio'/);
    assert.match(refusal({ messages: [], response_format: { type: 'json_schema', json_schema: {} } }), /structured output/);
    assert.match(refusal({ messages: [], n: 2 }), /n > 1/);
    assert.match(refusal({ messages: [], tools: [SHELL], tool_choice: { type: 'function', function: { name: 'shell' } } }), /one function \('shell'\)/);
    assert.match(refusal({ messages: [{ role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'shell', arguments: '[1]' } }] }] }), /not a JSON object/);
    assert.match(refusal({ messages: [], functions: [] }), /legacy functions/);
    assert.match(refusal({ messages: [], tool_choice: 'required' }), /offers none/);
  });

  it('leaves out custom (grammar) tools, naming each', () => {
    const request = ok({ messages: [], tools: [{ type: 'custom', custom: { name: 'apply_patch', format: { type: 'grammar' } } }, SHELL] });
    assert.deepEqual(request.tools.map((t) => t.name), ['shell']);
    assert.deepEqual(request.dropped, ["the custom tool 'apply_patch'"]);
    assert.match(refusal({ messages: [], tools: [{ type: 'function' }] }), /each function tool needs a function with a name/);
  });

  it('names what it leaves out, and takes tool_choice none as no tools', () => {
    const request = ok({ messages: [], tools: [SHELL], tool_choice: 'none', top_p: 0.5, seed: 3, stop: ['x'], parallel_tool_calls: false });
    assert.deepEqual(request.tools, []);
    assert.deepEqual(request.dropped, ['top_p', 'seed', 'stop', 'parallel_tool_calls: false']);
    assert.equal(ok({ messages: [], tools: [SHELL], tool_choice: 'required' }).options.toolMode, 'required');
  });
});

describe('LM API → chat completions', () => {
  const parts = [
    { type: 'text' as const, text: 'Listing' },
    { type: 'toolCall' as const, callId: 'call_7', name: 'shell', input: { cmd: 'ls -a' } },
    { type: 'toolCall' as const, callId: 'call_8', name: 'shell', input: { cmd: 'pwd' } },
  ];

  it('writes a completion with content, tool_calls (arguments as JSON text), finish_reason and usage', () => {
    const completion = lmChat.whole({ model: 'gpt-4o', parts, usage: { input: 20, output: 9 }, stop: 'tool_use' }) as { choices: { message: Record<string, unknown>; finish_reason: string }[]; usage: unknown; object: string };
    assert.equal(completion.object, 'chat.completion');
    const message = completion.choices[0]!.message;
    assert.equal(message.content, 'Listing');
    assert.deepEqual(message.tool_calls, [
      { id: 'call_7', type: 'function', function: { name: 'shell', arguments: '{"cmd":"ls -a"}' } },
      { id: 'call_8', type: 'function', function: { name: 'shell', arguments: '{"cmd":"pwd"}' } },
    ]);
    assert.equal(completion.choices[0]!.finish_reason, 'tool_calls');
    assert.deepEqual(completion.usage, { prompt_tokens: 20, completion_tokens: 9, total_tokens: 29 });
    const plain = lmChat.whole({ model: 'm', parts: [{ type: 'text', text: 'hi' }], usage: { input: 1, output: 1 }, stop: 'end' }) as { choices: { message: Record<string, unknown>; finish_reason: string }[] };
    assert.equal(plain.choices[0]!.finish_reason, 'stop');
    assert.equal('tool_calls' in plain.choices[0]!.message, false);
  });

  it('streams chunks: the role, text deltas, tool calls by index, the finish reason, the usage chunk when asked, [DONE]', () => {
    const events = streamed(lmChat.streamWriter('gpt-4o', ok({ messages: [], stream: true, stream_options: { include_usage: true } }), 20), parts, { input: 20, output: 9 }, 'tool_use');
    assert.ok(events.slice(0, -1).every((e) => e.json.object === 'chat.completion.chunk'));
    const deltas = events.slice(0, 4).map((e) => (e.json.choices as { delta: unknown }[])[0]!.delta);
    assert.deepEqual(deltas, [
      { role: 'assistant', content: '' },
      { content: 'Listing' },
      { tool_calls: [{ index: 0, id: 'call_7', type: 'function', function: { name: 'shell', arguments: '{"cmd":"ls -a"}' } }] },
      { tool_calls: [{ index: 1, id: 'call_8', type: 'function', function: { name: 'shell', arguments: '{"cmd":"pwd"}' } }] },
    ]);
    assert.equal((events[4]!.json.choices as { finish_reason: string }[])[0]!.finish_reason, 'tool_calls');
    assert.deepEqual(events[5]!.json.choices, []);
    assert.deepEqual(events[5]!.json.usage, { prompt_tokens: 20, completion_tokens: 9, total_tokens: 29 });
    assert.equal(events[6]!.done, true);
    const unasked = streamed(lmChat.streamWriter('gpt-4o', ok({ messages: [], stream: true }), 20), parts, { input: 20, output: 9 }, 'tool_use');
    assert.equal(unasked.some((e) => 'usage' in e.json), false, 'no usage chunk the agent did not ask for');
  });

  it('fails a stream half-way with an error chunk in OpenAI’s words', () => {
    const text = lmChat.streamWriter('m', ok({ messages: [] }), 0).fail('gone');
    assert.deepEqual(JSON.parse(text.slice('data: '.length)), { error: { message: 'gone', type: 'api_error', param: null, code: 'model_failed' } });
  });
});
