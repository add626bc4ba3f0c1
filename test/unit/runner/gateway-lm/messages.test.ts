// Anthropic Messages to and from the LM API's terms: what a Claude-Code-like request becomes, what
// is refused or left out, and the answer whole and as the events Anthropic streams.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lmMessages } from '../../../../src/runner/core/gateway/lmMessages.ts';
import type { LmRequest } from '../../../../src/runner/core/gateway/lmModel.ts';
import { streamed } from '../../../support/runner/lm-streams.ts';

const read = (body: Record<string, unknown>) => lmMessages.read(body, { stream: false });
const ok = (body: Record<string, unknown>): LmRequest => {
  const request = read(body);
  assert.ok(!('refused' in request), `refused: ${'refused' in request ? request.refused : ''}`);
  return request;
};
const refusal = (body: Record<string, unknown>): string => {
  const request = read(body);
  assert.ok('refused' in request, 'the request was not refused');
  return request.refused;
};

const BASH = { name: 'Bash', description: 'Runs a command', input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } };

describe('Anthropic Messages → LM API', () => {
  it('reads system blocks, text, a tool_use and its tool_result, and custom tools', () => {
    const request = ok({
      model: 'claude-sonnet-4-5',
      max_tokens: 512,
      temperature: 0.5,
      stream: true,
      system: [{ type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral' } }],
      tools: [BASH],
      messages: [
        { role: 'user', content: 'Create hello.txt' },
        { role: 'assistant', content: [{ type: 'text', text: 'Running it.' }, { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'touch hello.txt' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'done' }] }, { type: 'text', text: 'Go on' }] },
      ],
    });
    assert.equal(request.model, 'claude-sonnet-4-5');
    assert.equal(request.stream, true);
    assert.deepEqual(request.messages, [
      { role: 'user', parts: [{ type: 'text', text: 'You are a coding agent.' }, { type: 'text', text: 'Create hello.txt' }] },
      { role: 'assistant', parts: [{ type: 'text', text: 'Running it.' }, { type: 'toolCall', callId: 'toolu_1', name: 'Bash', input: { command: 'touch hello.txt' } }] },
      { role: 'user', parts: [{ type: 'toolResult', callId: 'toolu_1', text: 'done' }, { type: 'text', text: 'Go on' }] },
    ]);
    assert.deepEqual(request.tools, [{ name: 'Bash', description: 'Runs a command', inputSchema: BASH.input_schema }]);
    assert.deepEqual(request.options, { toolMode: 'auto', modelOptions: { temperature: 0.5, max_tokens: 512 } });
    assert.deepEqual(request.dropped, []);
  });

  it('takes a system message amid the conversation (as Claude Code sends them) as user text', () => {
    const request = ok({ messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello' }, { role: 'system', content: 'Agent types: claude, Explore' }, { role: 'user', content: 'Go' }] });
    assert.deepEqual(request.messages, [
      { role: 'user', parts: [{ type: 'text', text: 'Hi' }] },
      { role: 'assistant', parts: [{ type: 'text', text: 'Hello' }] },
      { role: 'user', parts: [{ type: 'text', text: 'Agent types: claude, Explore' }, { type: 'text', text: 'Go' }] },
    ]);
  });

  it('marks a failed tool result as an error, and requires a tool for tool_choice any', () => {
    const request = ok({ messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'no such file', is_error: true }] }], tools: [BASH], tool_choice: { type: 'any' } });
    assert.deepEqual(request.messages[0]!.parts, [{ type: 'toolResult', callId: 't', text: 'Error: no such file' }]);
    assert.equal(request.options.toolMode, 'required');
    assert.deepEqual(ok({ messages: [], tools: [BASH], tool_choice: { type: 'none' } }).tools, []);
  });

  it('refuses what the LM API cannot express, naming it', () => {
    assert.match(refusal({ messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AA==' } }] }] }), /cannot express a 'image' content block \(images and documents\)/);
    assert.match(refusal({ messages: [{ role: 'user', content: [{ type: 'document', source: {} }] }] }), /'document' content block/);
    assert.match(refusal({ messages: [], tools: [BASH], tool_choice: { type: 'tool', name: 'Bash' } }), /tool_choice naming one tool \('Bash'\)/);
    assert.match(refusal({ messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'image', source: {} }] }] }] }), /tool_result holding a 'image' block/);
    assert.match(refusal({ messages: [], tool_choice: { type: 'any' } }), /offers none/);
    assert.match(refusal({ messages: [{ role: 'tool', content: 'x' }] }), /role 'user', 'assistant' or 'system'/);
    assert.match(refusal({ messages: [{ role: 'system', content: [{ type: 'tool_result', tool_use_id: 't', content: 'x' }] }] }), /'tool_result' content block/);
    assert.match(refusal({ messages: 'hello' }), /messages must be a list/);
  });

  it('leaves out server tools, naming each, and offers the rest', () => {
    const request = ok({ messages: [], tools: [{ type: 'web_search_20250305', name: 'web_search' }, BASH, { type: 'code_execution_20250522', name: 'code_execution' }] });
    assert.deepEqual(request.tools.map((t) => t.name), ['Bash']);
    assert.deepEqual(request.dropped, ["the server tool 'web_search' (web_search_20250305)", "the server tool 'code_execution' (code_execution_20250522)"]);
    assert.match(refusal({ messages: [], tools: [{ type: 'web_search_20250305', name: 'web_search' }], tool_choice: { type: 'any' } }), /offers none the LM API can take/);
  });

  it('names what it leaves out: thinking, sampling it cannot set, parallel-tool limits, earlier thinking blocks', () => {
    const request = ok({
      messages: [{ role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: 's' }, { type: 'text', text: 'ok' }] }],
      thinking: { type: 'enabled', budget_tokens: 1000 },
      top_p: 0.9,
      stop_sequences: ['END'],
      tools: [BASH],
      tool_choice: { type: 'auto', disable_parallel_tool_use: true },
    });
    assert.deepEqual(request.dropped, ['earlier thinking blocks', 'disable_parallel_tool_use', 'top_p', 'stop_sequences', 'thinking']);
    assert.deepEqual(request.messages, [{ role: 'assistant', parts: [{ type: 'text', text: 'ok' }] }]);
  });
});

describe('LM API → Anthropic Messages', () => {
  const parts = [
    { type: 'text' as const, text: 'I will ' },
    { type: 'text' as const, text: 'run it.' },
    { type: 'toolCall' as const, callId: 'call_9', name: 'Bash', input: { command: 'ls' } },
  ];

  it('writes a whole message with text joined, the tool_use block, its stop reason and usage', () => {
    const message = lmMessages.whole({ model: 'claude-x', parts, usage: { input: 42, output: 7 }, stop: 'tool_use' }) as Record<string, unknown>;
    assert.equal(message.type, 'message');
    assert.equal(message.model, 'claude-x');
    assert.deepEqual(message.content, [
      { type: 'text', text: 'I will run it.' },
      { type: 'tool_use', id: 'call_9', name: 'Bash', input: { command: 'ls' } },
    ]);
    assert.equal(message.stop_reason, 'tool_use');
    assert.deepEqual(message.usage, { input_tokens: 42, output_tokens: 7 });
  });

  it('streams message_start with the input tokens, one block per run of text or tool call, then message_delta and message_stop', () => {
    const request = ok({ messages: [], stream: true });
    const events = streamed(lmMessages.streamWriter('claude-x', request, 42), parts, { input: 42, output: 7 }, 'tool_use');
    assert.deepEqual(
      events.map((e) => `${e.event}:${String(e.json.type)}`),
      ['message_start:message_start', 'content_block_start:content_block_start', 'content_block_delta:content_block_delta', 'content_block_delta:content_block_delta', 'content_block_stop:content_block_stop', 'content_block_start:content_block_start', 'content_block_delta:content_block_delta', 'content_block_stop:content_block_stop', 'message_delta:message_delta', 'message_stop:message_stop'],
    );
    assert.deepEqual((events[0]!.json.message as Record<string, unknown>).usage, { input_tokens: 42, output_tokens: 0 });
    assert.deepEqual(events[5]!.json, { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'call_9', name: 'Bash', input: {} } });
    assert.deepEqual(JSON.parse(String((events[6]!.json.delta as Record<string, unknown>).partial_json)), { command: 'ls' });
    assert.deepEqual(events[8]!.json, { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 7 } });
  });

  it('ends a stream that fails half-way with an error event in Anthropic’s words', () => {
    const writer = lmMessages.streamWriter('claude-x', ok({ messages: [] }), 1);
    const text = writer.fail('the model went away');
    assert.match(text, /^event: error\ndata: /);
    assert.deepEqual(JSON.parse(text.split('data: ')[1]!), { type: 'error', error: { type: 'api_error', message: 'the model went away', code: 'model_failed' } });
  });
});
