// Request bodies an agent controls, thrown at every LM translator: each is refused in one line or
// read, never a crash, never a prototype changed, never a stack blown by nesting.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lmChat } from '../../../../src/runner/core/gateway/lmChat.ts';
import { lmGemini } from '../../../../src/runner/core/gateway/lmGemini.ts';
import { lmMessages } from '../../../../src/runner/core/gateway/lmMessages.ts';
import type { LmTranslator } from '../../../../src/runner/core/gateway/lmModel.ts';
import { lmResponses } from '../../../../src/runner/core/gateway/lmResponses.ts';

const TRANSLATORS: Record<string, LmTranslator> = { messages: lmMessages, chat: lmChat, responses: lmResponses, gemini: lmGemini };

function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = { type: 'STRING' };
  for (let i = 0; i < depth; i++) value = { type: 'OBJECT', properties: { x: value } };
  return value;
}

const HOSTILE: Record<string, unknown>[] = [
  {},
  { messages: null, input: null, contents: null },
  { messages: [null, 1, 'x', []], input: [null, 1, 'x', []], contents: [null, 1, 'x', []] },
  { messages: [{ role: 'user', content: 5 }], input: [{ role: 'user', content: 5 }], contents: [{ role: 'user', parts: 5 }] },
  { messages: [{ role: 'user', content: [null, 7, { type: 'text' }] }], input: [{ type: 'message', role: 'user', content: [null] }], contents: [{ parts: [null, 7] }] },
  { messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 1, name: {}, input: 'nope' }], tool_calls: 'x' }], input: [{ type: 'function_call', arguments: '{"__proto__":{"polluted":true}}', call_id: 'c', name: 'n' }], contents: [{ role: 'model', parts: [{ functionCall: { name: 'n', args: [] } }] }] },
  { messages: [{ role: 'tool', tool_call_id: 5 }], input: [{ type: 'function_call_output', call_id: 5, output: {} }], contents: [{ role: 'user', parts: [{ functionResponse: { response: 1 } }] }] },
  { messages: [], input: [], contents: [], tools: 'all', tool_choice: 7 },
  { messages: [], input: [], contents: [], tools: [null, 3, { type: 'function' }, { type: 'function', function: null }] },
  { messages: [], input: [], contents: [], tools: [{ functionDeclarations: [{ name: 'deep', parameters: nested(5000) }] }] },
  { messages: [], input: [], contents: [], system: [null], instructions: 5, systemInstruction: { parts: 'x' } },
  { messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'n', input: JSON.parse('{"__proto__":{"polluted":true}}') }] }], input: [], contents: [] },
];

describe('hostile requests to the LM translators', () => {
  for (const [name, translator] of Object.entries(TRANSLATORS)) {
    it(`${name}: every hostile body is refused in one line or read, and nothing is polluted`, () => {
      for (const [index, body] of HOSTILE.entries()) {
        const read = translator.read(body, { stream: false });
        if ('refused' in read) {
          assert.equal(typeof read.refused, 'string', `body ${index}`);
          assert.ok(read.refused.length > 0 && !read.refused.includes('\n'), `body ${index}: ${read.refused}`);
        } else {
          assert.ok(Array.isArray(read.messages) && Array.isArray(read.tools), `body ${index}`);
          assert.doesNotThrow(() => JSON.stringify(read), `body ${index}`);
        }
      }
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
    });
  }

  it('refuses a tool schema nested thousands deep in every shape, without blowing the stack; 60 levels pass', () => {
    const deep = nested(5000);
    const bodies: Record<string, Record<string, unknown>> = {
      messages: { messages: [], tools: [{ name: 'deep', input_schema: deep }] },
      chat: { messages: [], tools: [{ type: 'function', function: { name: 'deep', parameters: deep } }] },
      responses: { input: [], tools: [{ type: 'function', name: 'deep', parameters: deep }] },
      gemini: { contents: [], tools: [{ functionDeclarations: [{ name: 'deep', parameters: deep }] }] },
    };
    for (const [name, body] of Object.entries(bodies)) {
      const read = TRANSLATORS[name]!.read(body, { stream: false });
      assert.ok('refused' in read, name);
      assert.equal(read.refused, "Belay gateway: the schema of tool 'deep' is nested deeper than 64 levels");
    }
    const fine = lmGemini.read({ contents: [], tools: [{ functionDeclarations: [{ name: 'ok', parameters: nested(30) }] }] }, { stream: false });
    assert.ok(!('refused' in fine));
    assert.equal((fine.tools[0]!.inputSchema as { type: string }).type, 'object');
  });
});
