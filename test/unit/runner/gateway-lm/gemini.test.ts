// The Gemini API to and from the LM API's terms: contents and parts, function calls and responses
// (with and without ids), declarations in both schema forms, refusals, and the answer whole and
// as SSE chunks.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lmGemini } from '../../../../src/runner/core/gateway/lmGemini.ts';
import type { LmRequest } from '../../../../src/runner/core/gateway/lmModel.ts';
import { streamed } from '../../../support/runner/lm-streams.ts';

const ok = (body: Record<string, unknown>, stream = false): LmRequest => {
  const request = lmGemini.read(body, { stream, model: 'gemini-2.5-pro' });
  assert.ok(!('refused' in request), `refused: ${'refused' in request ? request.refused : ''}`);
  return request;
};
const refusal = (body: Record<string, unknown>): string => {
  const request = lmGemini.read(body, { stream: false });
  assert.ok('refused' in request, 'the request was not refused');
  return request.refused;
};
const SHELL = { name: 'run_shell_command', description: 'Runs a command', parameters: { type: 'OBJECT', properties: { command: { type: 'STRING' } }, required: ['command'] } };

describe('Gemini → LM API', () => {
  it('reads the system instruction, contents, function calls and responses, matching responses without ids by name', () => {
    const request = ok(
      {
        systemInstruction: { parts: [{ text: 'You are Gemini CLI.' }] },
        tools: [{ functionDeclarations: [SHELL] }],
        generationConfig: { temperature: 0, maxOutputTokens: 100 },
        contents: [
          { role: 'user', parts: [{ text: 'make hello.txt' }] },
          { role: 'model', parts: [{ functionCall: { name: 'run_shell_command', args: { command: 'touch hello.txt' } } }, { functionCall: { id: 'given', name: 'run_shell_command', args: { command: 'ls' } } }] },
          { role: 'user', parts: [{ functionResponse: { name: 'run_shell_command', response: { output: 'ok' } } }, { functionResponse: { id: 'given', name: 'run_shell_command', response: { output: 'hello.txt', exit: 0 } } }] },
        ],
      },
      true,
    );
    assert.equal(request.model, 'gemini-2.5-pro');
    assert.equal(request.stream, true);
    const [system, model, answers] = request.messages;
    assert.deepEqual(system, { role: 'user', parts: [{ type: 'text', text: 'You are Gemini CLI.' }, { type: 'text', text: 'make hello.txt' }] });
    assert.equal(model!.role, 'assistant');
    const [first, second] = model!.parts as { callId: string }[];
    assert.equal(second!.callId, 'given');
    assert.deepEqual(answers!.parts, [
      { type: 'toolResult', callId: first!.callId, text: 'ok' },
      { type: 'toolResult', callId: 'given', text: '{"output":"hello.txt","exit":0}' },
    ]);
    assert.deepEqual(request.tools[0]!.inputSchema, { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] });
    assert.deepEqual(request.options, { toolMode: 'auto', modelOptions: { temperature: 0, max_tokens: 100 } });
  });

  it('takes parametersJsonSchema as it is, and the calling modes ANY and NONE', () => {
    const schema = { type: 'object', properties: { path: { type: 'string' } } };
    const tools = [{ functionDeclarations: [{ name: 'read', description: 'r', parametersJsonSchema: schema }] }];
    assert.deepEqual(ok({ contents: [], tools }).tools, [{ name: 'read', description: 'r', inputSchema: schema }]);
    assert.equal(ok({ contents: [], tools, toolConfig: { functionCallingConfig: { mode: 'ANY' } } }).options.toolMode, 'required');
    assert.deepEqual(ok({ contents: [], tools, toolConfig: { functionCallingConfig: { mode: 'NONE' } } }).tools, []);
  });

  it('refuses inline data, files, structured output, a subset of allowed functions', () => {
    assert.match(refusal({ contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'image/png', data: 'AA==' } }] }] }), /'inlineData' part \(images and files\)/);
    assert.match(refusal({ contents: [{ role: 'user', parts: [{ fileData: { fileUri: 'x' } }] }] }), /'fileData' part/);
    assert.match(refusal({ contents: [], generationConfig: { responseMimeType: 'application/json' } }), /structured output/);
    assert.match(refusal({ contents: [], tools: [{ functionDeclarations: [SHELL, { name: 'read' }] }], toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['read'] } } }), /allowedFunctionNames \(read\)/);
    assert.match(refusal({ contents: [{ role: 'model', parts: [{ executableCode: {} }] }] }), /'executableCode' part/);
    assert.match(refusal({ contents: 'hi' }), /contents must be a list/);
  });

  it('leaves out built-in tools, naming each, and keeps the declarations beside them', () => {
    const request = ok({ contents: [], tools: [{ googleSearch: {} }, { functionDeclarations: [SHELL], codeExecution: {} }] });
    assert.deepEqual(request.tools.map((t) => t.name), ['run_shell_command']);
    assert.deepEqual(request.dropped, ["the built-in tool 'googleSearch'", "the built-in tool 'codeExecution'"]);
  });

  it('names what it leaves out: thinking config, topP/topK, earlier thoughts', () => {
    const request = ok({ contents: [{ role: 'model', parts: [{ text: 'pondering', thought: true }, { text: 'Hi' }] }], generationConfig: { topP: 0.9, topK: 4, thinkingConfig: { thinkingBudget: 100 } } });
    assert.deepEqual(request.dropped, ['earlier thought parts', 'generationConfig.topP', 'generationConfig.topK', 'generationConfig.thinkingConfig']);
    assert.deepEqual(request.messages, [{ role: 'assistant', parts: [{ type: 'text', text: 'Hi' }] }]);
  });
});

describe('LM API → Gemini', () => {
  const parts = [
    { type: 'text' as const, text: 'Run' },
    { type: 'text' as const, text: 'ning.' },
    { type: 'toolCall' as const, callId: 'c1', name: 'run_shell_command', input: { command: 'ls' } },
  ];

  it('writes a GenerateContentResponse with text joined, the functionCall, finishReason and usageMetadata', () => {
    const response = lmGemini.whole({ model: 'gemini-2.5-pro', parts, usage: { input: 11, output: 5 }, stop: 'tool_use' }) as { candidates: { content: { role: string; parts: unknown[] }; finishReason: string }[]; usageMetadata: unknown };
    assert.deepEqual(response.candidates[0]!.content, { role: 'model', parts: [{ text: 'Running.' }, { functionCall: { id: 'c1', name: 'run_shell_command', args: { command: 'ls' } } }] });
    assert.equal(response.candidates[0]!.finishReason, 'STOP');
    assert.deepEqual(response.usageMetadata, { promptTokenCount: 11, candidatesTokenCount: 5, totalTokenCount: 16 });
  });

  it('streams one chunk per part and a last chunk with the finish reason and the whole usage', () => {
    const events = streamed(lmGemini.streamWriter('gemini-2.5-pro', ok({ contents: [] }, true), 11), parts, { input: 11, output: 5 }, 'tool_use');
    assert.equal(events.length, 4);
    const partsOf = (i: number) => (events[i]!.json.candidates as { content: { parts: unknown[] } }[])[0]!.content.parts;
    assert.deepEqual(partsOf(0), [{ text: 'Run' }]);
    assert.deepEqual(partsOf(2), [{ functionCall: { id: 'c1', name: 'run_shell_command', args: { command: 'ls' } } }]);
    const last = events[3]!.json as { candidates: { finishReason: string }[]; usageMetadata: unknown };
    assert.equal(last.candidates[0]!.finishReason, 'STOP');
    assert.deepEqual(last.usageMetadata, { promptTokenCount: 11, candidatesTokenCount: 5, totalTokenCount: 16 });
  });

  it('answers errors in Gemini’s shape', () => {
    const refused = lmGemini.error(400, 'unsupported_by_upstream', 'no') as { error: Record<string, unknown> };
    assert.deepEqual([refused.error.code, refused.error.message, refused.error.status], [400, 'no', 'INVALID_ARGUMENT']);
    const consent = lmGemini.error(403, 'no_permissions', 'consent') as { error: Record<string, unknown> };
    assert.deepEqual([consent.error.code, consent.error.status], [403, 'PERMISSION_DENIED']);
  });
});
