// Random and mutated answers: the parser never throws, never reports an internal error, gives the
// same result twice, and every range it returns points at what it claims to.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAnswer } from '../../../src/blocks/core/parser.ts';
import { COMMAND_TYPES, TRIMMED_BODY, type ParseResult, type Range } from '../../../src/blocks/core/syntax.ts';
import { fixture, lineStarts, slice } from '../../support/blocks/helpers.ts';

/** A small seeded generator (xorshift32), so a failure can be replayed from its seed. */
function random(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 0x100000000;
  };
}

const TOKENS = [
  ...COMMAND_TYPES.map((t) => `[${t}`),
  ...COMMAND_TYPES.map((t) => `[/${t}]`),
  '[CREAT_FILE',
  '[/CREAT_FILE]',
  '[',
  ']',
  '[/',
  ' path="a.txt"',
  " path='b'",
  ' path=',
  ' path="',
  ' start_line="2"',
  ' end_line="1"',
  ' start_line="-4"',
  ' end_line="x"',
  '"',
  "'",
  '\\"',
  '\\',
  '=',
  '\n',
  '\r\n',
  '\r',
  '\n\n',
  ' ',
  '\t',
  '\uFEFF',
  '```',
  '```python\n',
  '~~~',
  'hello',
  'é😀',
  '\ud800',
  '\0',
  'x'.repeat(50),
  '\n[DONE]ok[/DONE]\n',
  '\n[CREATE_FILE path="a.py"]\n  x = 1\n[/CREATE_FILE]\n',
  '\n[EDIT_FILE path="a" start_line="1" end_line="2"]\r\ny\r\n[/EDIT_FILE]\r\n',
  '\n[READ_FILE path="a"]\n',
  '\n[RUN_COMMAND]\n```sh\nls\n```\n[/RUN_COMMAND]\n',
];

function generate(next: () => number): string {
  const count = Math.floor(next() * 60);
  let text = '';
  for (let i = 0; i < count; i++) text += TOKENS[Math.floor(next() * TOKENS.length)];
  return text;
}

function mutate(text: string, next: () => number): string {
  let out = text;
  const edits = 1 + Math.floor(next() * 6);
  for (let i = 0; i < edits; i++) {
    const at = Math.floor(next() * (out.length + 1));
    const kind = Math.floor(next() * 4);
    if (kind === 0) out = out.slice(0, at) + out.slice(at + 1 + Math.floor(next() * 20));
    else if (kind === 1) out = out.slice(0, at) + TOKENS[Math.floor(next() * TOKENS.length)] + out.slice(at);
    else if (kind === 2) out = out.slice(0, at) + out.slice(Math.floor(next() * out.length)).slice(0, 40) + out.slice(at);
    else out = out.slice(0, at) + String.fromCharCode(Math.floor(next() * 0x3000)) + out.slice(at);
  }
  return out;
}

function checkRange(text: string, starts: number[], range: Range, what: string): void {
  for (const p of [range.start, range.end]) {
    assert.ok(p.line >= 0 && p.line < starts.length, `${what}: line ${p.line} out of bounds`);
    const lineEnd = p.line + 1 < starts.length ? starts[p.line + 1]! : text.length;
    assert.ok(p.character >= 0 && starts[p.line]! + p.character <= lineEnd, `${what}: character ${p.character} out of bounds`);
  }
  const a = range.start;
  const b = range.end;
  assert.ok(a.line < b.line || (a.line === b.line && a.character <= b.character), `${what}: start after end`);
}

function checkInvariants(text: string, result: ParseResult): void {
  const starts = lineStarts(text);
  for (const error of result.errors) {
    assert.notEqual(error.code, 'internal', error.message);
    checkRange(text, starts, error.range, 'error');
    if (error.blockRange) checkRange(text, starts, error.blockRange, 'error block');
  }
  for (const command of result.commands) {
    checkRange(text, starts, command.range, 'command');
    assert.equal(slice(text, command.openTag.nameRange), command.type);
    assert.ok(slice(text, command.openTag.range).startsWith(`[${command.type}`));
    if (command.closeTag) assert.equal(slice(text, command.closeTag.range), `[/${command.type}]`);
    for (const attribute of command.attributes) {
      checkRange(text, starts, attribute.range, 'attribute');
      assert.equal(slice(text, attribute.nameRange), attribute.name);
    }
    if ('body' in command) {
      checkRange(text, starts, command.body.range, 'body');
      if (!TRIMMED_BODY.has(command.type) && command.body.removedFences.length === 0) {
        assert.equal(slice(text, command.body.range).replace(/\r\n?/g, '\n'), command.body.text);
      }
    }
  }
}

describe('parser: properties', () => {
  it('random answers never throw, parse the same twice, and have ranges that point at what they claim', () => {
    let commands = 0;
    let errors = 0;
    for (let seed = 1; seed <= 3000; seed++) {
      const text = generate(random(seed));
      let first: ParseResult;
      try {
        first = parseAnswer(text);
        commands += first.commands.length;
        errors += first.errors.length;
        checkInvariants(text, first);
      } catch (error) {
        assert.fail(`seed ${seed}, input ${JSON.stringify(text)}: ${(error as Error).message}`);
      }
      assert.deepEqual(parseAnswer(text), first, `seed ${seed}: not deterministic`);
    }
    // The generator must reach both outcomes, or the test proves little.
    assert.ok(commands > 100 && errors > 100, `only ${commands} commands and ${errors} errors generated`);
  });

  it('mutated real answers never throw and keep the same properties', async () => {
    const sources = await Promise.all(['every-command.txt', 'errors.txt', 'fenced-answer.txt', 'crlf-answer.txt'].map(fixture));
    for (let seed = 1; seed <= 2000; seed++) {
      const next = random(seed * 7919);
      const text = mutate(sources[seed % sources.length]!, next);
      try {
        const result = parseAnswer(text);
        checkInvariants(text, result);
        assert.deepEqual(parseAnswer(text), result);
      } catch (error) {
        assert.fail(`seed ${seed}, input ${JSON.stringify(text)}: ${(error as Error).message}`);
      }
    }
  });

  it('survives inputs that are not what they should be', () => {
    for (const input of ['', '\n', '\r', '\r\n', '[', '[/', ']', '\uFEFF', '['.repeat(10000), `[DONE]${'\n'.repeat(1000)}`, null, undefined, 42]) {
      const result = parseAnswer(input as string);
      assert.ok(Array.isArray(result.commands) && Array.isArray(result.errors));
    }
  });
});
