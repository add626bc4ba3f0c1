// The Responses API to and from the LM API's terms: instructions, input items, function calls and
// their outputs, refusals, and the response whole and as the streamed `response.*` events.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LmRequest } from '../../../../src/runner/core/gateway/lmModel.ts';
import { lmResponses } from '../../../../src/runner/core/gateway/lmResponses.ts';
import { streamed } from '../../../support/runner/lm-streams.ts';

const ok = (body: Record<string, unknown>): LmRequest => {
  const request = lmResponses.read(body, { stream: false });
  assert.ok(!('refused' in request), `refused: ${'refused' in request ? request.refused : ''}`);
  return request;
};
const refusal = (body: Record<string, unknown>): string => {
  const request = lmResponses.read(body, { stream: false });
  assert.ok('refused' in request, 'the request was not refused');
  return request.refused;
};
const EXEC = { type: 'function', name: 'exec_command', description: 'Runs a command', parameters: { type: 'object', properties: { cmd: { type: 'string' } } }, strict: false };

describe('Responses → LM API', () => {
  it('reads instructions, messages, a function_call and its output, and function tools (as Codex sends them)', () => {
    const request = ok({
      model: 'gpt-5-codex',
      instructions: 'You are Codex.',
      stream: true,
      tools: [EXEC],
      tool_choice: 'auto',
      include: ['reasoning.encrypted_content'],
      store: false,
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'sandbox: none' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'make hello.txt' }] },
        { type: 'function_call', call_id: 'call_1', name: 'exec_command', arguments: '{"cmd":"touch hello.txt"}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'exit 0' },
        { role: 'assistant', content: [{ type: 'output_text', text: 'Done.' }] },
      ],
    });
    assert.deepEqual(request.messages, [
      { role: 'user', parts: [{ type: 'text', text: 'You are Codex.' }, { type: 'text', text: 'sandbox: none' }, { type: 'text', text: 'make hello.txt' }] },
      { role: 'assistant', parts: [{ type: 'toolCall', callId: 'call_1', name: 'exec_command', input: { cmd: 'touch hello.txt' } }] },
      { role: 'user', parts: [{ type: 'toolResult', callId: 'call_1', text: 'exit 0' }] },
      { role: 'assistant', parts: [{ type: 'text', text: 'Done.' }] },
    ]);
    assert.deepEqual(request.tools, [{ name: 'exec_command', description: 'Runs a command', inputSchema: EXEC.parameters }]);
    assert.equal(request.stream, true);
    assert.deepEqual(request.dropped, []);
    assert.deepEqual(ok({ input: 'hi' }).messages, [{ role: 'user', parts: [{ type: 'text', text: 'hi' }] }]);
  });

  it('refuses images, previous_response_id, structured output and a named tool_choice', () => {
    assert.match(refusal({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:' }] }] }), /'input_image' content part \(images, files and audio\)/);
    assert.match(refusal({ input: [], previous_response_id: 'resp_1' }), /previous_response_id/);
    assert.match(refusal({ input: [], text: { format: { type: 'json_schema' } } }), /structured output/);
    assert.match(refusal({ input: [], tools: [EXEC], tool_choice: { type: 'function', name: 'exec_command' } }), /one function \('exec_command'\)/);
    assert.match(refusal({ input: [{ type: 'local_shell_call', call_id: 'x' }] }), /input item of type 'local_shell_call'/);
  });

  it('leaves out built-in, namespace and custom tools (as Codex offers them), naming each', () => {
    const request = ok({
      input: [],
      tools: [EXEC, { type: 'namespace', name: 'multi_agent_v1', description: 'Sub-agents', tools: [{ type: 'function', name: 'close_agent' }] }, { type: 'web_search', external_web_access: true }, { type: 'custom', name: 'apply_patch', format: { type: 'grammar' } }],
    });
    assert.deepEqual(request.tools.map((t) => t.name), ['exec_command']);
    assert.deepEqual(request.dropped, ["the namespace tool 'multi_agent_v1'", 'the web_search tool', "the custom tool 'apply_patch'"]);
  });

  it('names what it leaves out: reasoning settings and items, parallel_tool_calls false', () => {
    const request = ok({ input: [{ type: 'reasoning', summary: [], encrypted_content: 'x' }], reasoning: { effort: 'high' }, parallel_tool_calls: false, tools: [EXEC] });
    assert.deepEqual(request.dropped, ['earlier reasoning items', 'reasoning', 'parallel_tool_calls: false']);
  });
});

describe('LM API → Responses', () => {
  const parts = [
    { type: 'text' as const, text: 'Let me ' },
    { type: 'text' as const, text: 'look.' },
    { type: 'toolCall' as const, callId: 'call_3', name: 'exec_command', input: { cmd: 'ls' } },
  ];

  it('writes a completed response with a message item, a function_call item and usage', () => {
    const response = lmResponses.whole({ model: 'gpt-5', parts, usage: { input: 30, output: 12 }, stop: 'tool_use' }) as Record<string, unknown> & { output: Record<string, unknown>[]; usage: Record<string, unknown> };
    assert.equal(response.object, 'response');
    assert.equal(response.status, 'completed');
    assert.equal(response.output_text, 'Let me look.');
    assert.equal(response.output[0]!.type, 'message');
    assert.deepEqual(response.output[0]!.content, [{ type: 'output_text', text: 'Let me look.', annotations: [] }]);
    assert.deepEqual({ ...response.output[1], id: undefined }, { type: 'function_call', id: undefined, call_id: 'call_3', name: 'exec_command', arguments: '{"cmd":"ls"}', status: 'completed' });
    assert.equal(response.usage.input_tokens, 30);
    assert.equal(response.usage.output_tokens, 12);
    assert.equal(response.usage.total_tokens, 42);
  });

  it('streams the response.* events in order, numbered, ending in response.completed with the output and usage', () => {
    const events = streamed(lmResponses.streamWriter('gpt-5', ok({ input: [] }), 30), parts, { input: 30, output: 12 }, 'tool_use');
    assert.deepEqual(
      events.map((e) => e.event),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
        'response.output_text.delta',
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.output_item.added',
        'response.function_call_arguments.delta',
        'response.function_call_arguments.done',
        'response.output_item.done',
        'response.completed',
      ],
    );
    assert.ok(events.every((e) => e.json.type === e.event));
    assert.deepEqual(events.map((e) => e.json.sequence_number), events.map((_, i) => i));
    assert.equal(events[6]!.json.text, 'Let me look.');
    assert.equal(events[11]!.json.arguments, '{"cmd":"ls"}');
    const completed = events.at(-1)!.json.response as { output: Record<string, unknown>[]; usage: Record<string, unknown>; status: string };
    assert.equal(completed.status, 'completed');
    assert.deepEqual(completed.output.map((item) => item.type), ['message', 'function_call']);
    assert.equal(completed.usage.input_tokens, 30);
    assert.equal(completed.usage.output_tokens, 12);
    // Each item keeps its id from added to done.
    assert.equal((events[2]!.json.item as Record<string, unknown>).id, (events[8]!.json.item as Record<string, unknown>).id);
  });

  it('fails a stream half-way with response.failed naming the error', () => {
    const text = lmResponses.streamWriter('m', ok({ input: [] }), 0).fail('gone');
    const event = JSON.parse(text.split('data: ')[1]!) as { type: string; response: { status: string; error: { message: string } } };
    assert.equal(event.type, 'response.failed');
    assert.equal(event.response.status, 'failed');
    assert.equal(event.response.error.message, 'gone');
  });
});
