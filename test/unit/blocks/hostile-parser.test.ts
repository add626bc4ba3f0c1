// Hostile answers against the parser: inputs that were quadratic, overflowed the stack or flooded
// the result. Each must parse (the timeout only guards against a hang; figures are in
// `npm run bench`), keep every well-formed block, and report what it refused in few errors.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_LISTED_ERRORS, MAX_TAG_ATTRIBUTES, parseAnswer } from '../../../src/blocks/core/parser.ts';
import type { ParseResult } from '../../../src/blocks/core/syntax.ts';
import { fixture } from '../../support/blocks/helpers.ts';
import { pathologicalAnswers, repeatTo, SURVIVOR } from '../../support/blocks/hostileAnswers.ts';

/** Every error the parse found, listed or only counted. */
function totalErrors(result: ParseResult): number {
  const summary = result.errors.find((e) => e.code === 'too-many-errors');
  return result.errors.length - (summary ? 1 : 0) + (summary ? Number(/^(\d+) more/.exec(summary.message)![1]) : 0);
}

/** The blocks found, with their lines counted from `offset`. */
function blocks(result: ParseResult, offset = 0) {
  return result.commands.map((c) => ({ type: c.type, line: c.openTag.range.start.line - offset, path: 'path' in c ? c.path : '', body: 'body' in c ? c.body.text : '' }));
}

const SIZE = 256 * 1024;

describe('hostile answers: the parser', () => {
  for (const [name, text] of Object.entries(pathologicalAnswers(SIZE))) {
    it(`${name}: parses without an internal error, and keeps the block after it`, { timeout: 30_000 }, () => {
      const result = parseAnswer(text);
      assert.ok(!result.errors.some((e) => e.code === 'internal'), result.errors.find((e) => e.code === 'internal')?.message);
      assert.ok(result.errors.length <= MAX_LISTED_ERRORS + 1, `${result.errors.length} errors`);
      const survivor = result.commands.find((c) => 'path' in c && c.path === 'survivor.txt');
      if (name === 'unclosed blocks') assert.equal(survivor, undefined, 'an unclosed block takes everything after it');
      else assert.ok(survivor && 'body' in survivor && survivor.body.text === 'still here', 'the block after the hostile part is kept');
      assert.ok(!result.commands.some((c) => c.type === 'RUN_COMMAND'), 'nothing inside a refused block runs');
    });
  }

  it('a tag with 150,000 attributes is one parse error; the blocks before and after it stay, its body does not run', { timeout: 30_000 }, () => {
    const before = '[MESSAGE]\nfirst\n[/MESSAGE]\n';
    const hostile = `[CREATE_FILE path="x.txt" ${'k="v" '.repeat(149_999)}]\n[RUN_COMMAND]\ntouch pwned\n[/RUN_COMMAND]\n[/CREATE_FILE]\n`;
    const result = parseAnswer(before + hostile + SURVIVOR.trimStart());
    assert.deepEqual(
      result.commands.map((c) => c.type),
      ['MESSAGE', 'CREATE_FILE'],
    );
    assert.equal(result.errors.length, 1);
    const [error] = result.errors;
    assert.equal(error!.code, 'oversized-tag');
    assert.match(error!.message, /^CREATE_FILE tag has 150000 attributes or words where it takes path; this block was not executed$/);
    assert.equal(error!.range.start.line, 3);
    assert.equal(error!.blockRange?.end.line, 7, 'the refused block ends at its own closing tag');
  });

  it('a tag of junk words, and one of unclosed quotes, are one error each', { timeout: 30_000 }, () => {
    for (const junk of ['@ '.repeat(200_000), 'a="'.repeat(100_000), 'p= '.repeat(100_000)]) {
      const result = parseAnswer(`[DELETE_FILE ${junk}]\n[READ_FILE path="ok.txt"]\n`);
      assert.equal(result.errors.length, 1, junk.slice(0, 6));
      assert.equal(result.errors[0]!.code, 'oversized-tag');
      assert.deepEqual(
        result.commands.map((c) => ('path' in c ? c.path : c.type)),
        ['ok.txt'],
      );
    }
  });

  it(`a tag just within ${MAX_TAG_ATTRIBUTES} attributes or problems is read as before`, () => {
    const extra = Array.from({ length: MAX_TAG_ATTRIBUTES - 1 }, (_, i) => `x${i}="1"`).join(' ');
    const result = parseAnswer(`[READ_FILE path="a.txt" ${extra}]`);
    assert.deepEqual(result.errors, []);
    assert.equal(result.commands[0]!.attributes.length, MAX_TAG_ATTRIBUTES);
    const problems = parseAnswer(`[READ_FILE path="a.txt" ${'@ '.repeat(MAX_TAG_ATTRIBUTES - 1)}]`).errors;
    assert.equal(problems.length, MAX_TAG_ATTRIBUTES - 1);
    assert.ok(problems.every((e) => e.code === 'malformed-attribute'));
  });

  it(`lists the first ${MAX_LISTED_ERRORS} errors and counts the rest in one, at the first one left out`, { timeout: 30_000 }, () => {
    const flood = '[/DONE]\n'.repeat(5000);
    const result = parseAnswer(`${flood}[DONE]\nend\n[/DONE]\n${flood}`);
    assert.equal(result.errors.length, MAX_LISTED_ERRORS + 1);
    const summary = result.errors.at(-1)!;
    assert.equal(summary.code, 'too-many-errors');
    assert.equal(summary.message, `9000 more parse errors from line ${MAX_LISTED_ERRORS + 1} on are not listed (only the first ${MAX_LISTED_ERRORS} are); blocks with errors are not executed`);
    assert.equal(summary.range.start.line, MAX_LISTED_ERRORS);
    assert.deepEqual(
      result.commands.map((c) => c.type),
      ['DONE'],
    );
  });

  it('once the error list is full, the same blocks are found and every error is still counted', { timeout: 60_000 }, async () => {
    const flood = '[/DONE]\n'.repeat(MAX_LISTED_ERRORS);
    const texts = [
      ...(await Promise.all(['every-command.txt', 'errors.txt', 'fenced-answer.txt', 'crlf-answer.txt'].map(fixture))),
      ...Object.values(pathologicalAnswers(16 * 1024)),
      '[EDIT_FILE path="a" start_line="x" end_line="0"]\nbody\n[/EDIT_FILE]\n[EDIT_FILE start_line="2"]\n[DELETE_FILE path=""]\n[READ_FILE path="a" junk]\n[CREATE_FILE path="b"]\nunclosed',
    ];
    for (const text of texts) {
      const plain = parseAnswer(text);
      const flooded = parseAnswer(flood + text);
      assert.deepEqual(blocks(flooded, MAX_LISTED_ERRORS), blocks(plain), text.slice(0, 40));
      assert.equal(totalErrors(flooded), totalErrors(plain) + MAX_LISTED_ERRORS, text.slice(0, 40));
    }
  });

  it('a misspelt block keeps its body from running even after the error list is full', { timeout: 30_000 }, () => {
    const flood = '[/DONE]\n'.repeat(MAX_LISTED_ERRORS + 10);
    const result = parseAnswer(`${flood}[RUN_COMAND]\n[RUN_COMMAND]\ntouch pwned\n[/RUN_COMMAND]\n[/RUN_COMAND]\n[MESSAGE]\nafter\n[/MESSAGE]\n`);
    assert.deepEqual(
      result.commands.map((c) => c.type),
      ['MESSAGE'],
    );
  });

  it('lone CRs: lines and ranges as an editor counts them, in a large answer', { timeout: 30_000 }, () => {
    const prose = repeatTo('text\r', SIZE);
    const result = parseAnswer(`${prose}[CREATE_FILE path="a.txt"]\rx\ry\r[/CREATE_FILE]\r`);
    const lines = prose.length / 5;
    assert.deepEqual(result.errors, []);
    const [command] = result.commands;
    assert.equal(command!.openTag.range.start.line, lines);
    assert.ok('body' in command! && command.body.text === 'x\ny');
    assert.equal(command!.closeTag?.range.start.line, lines + 3);
  });

  it('the line before a tag is still seen as its fence when prose before it is skipped in one pass', () => {
    const result = parseAnswer('intro\r\n\r\n```python\r\n[CREATE_FILE path="a.py"]\r\nx = 1\r\n```\r\n[/CREATE_FILE]\r\n');
    assert.deepEqual(result.errors, []);
    assert.ok('body' in result.commands[0]! && result.commands[0].body.text === 'x = 1');
  });
});
