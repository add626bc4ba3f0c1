// Past the listed errors, runs of lines that start with a tag no command opens are read in one
// loop (see countedTagLines): each must be counted, skipped or left to the usual reading exactly as
// one by one, whatever the line breaks.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_LISTED_ERRORS, parseAnswer } from '../../../src/blocks/core/parser.ts';
import type { ParseResult } from '../../../src/blocks/core/syntax.ts';

/** The errors a parse counted without listing them, and from which line. */
function unlisted(result: ParseResult): { count: number; line: number } {
  const summary = result.errors.find((e) => e.code === 'too-many-errors');
  assert.ok(summary, 'no summary error');
  return { count: Number(/^(\d+) more/.exec(summary.message)![1]), line: summary.range.start.line };
}

/** The commands with their ranges, lines counted from `offset`. */
function commands(result: ParseResult, offset: number) {
  return result.commands.map((c) => ({
    type: c.type,
    start: [c.range.start.line - offset, c.range.start.character],
    end: [c.range.end.line - offset, c.range.end.character],
    body: 'body' in c ? c.body.text : '',
  }));
}

const LINES = [
  '[DON]', // an unknown tag whose body runs to its closing tag, three lines down
  'x',
  '[RUN_COMMAND]', // inside the lookalike block: not executed
  'rm -rf .',
  '[/RUN_COMMAND]',
  ' \t[/DON] ',
  '[DON]x[/DON]', // a one-liner: its closing tag is not alone on its line, and none is below
  '[/DONE]', // a stray closing tag
  '[/DON]x', // not a closing tag alone on its line: not an error
  '[CREATE_FILX path="a"]', // misspelt, never closed
  '[FOO]', // unknown and like no command: not an error
  '[ab]',
  '[DELETE_FILE]', // missing its path, counted
  '[READ_FILE]', // missing its path; its closing tag after a blank line belongs to it
  '',
  '[/READ_FILE]',
  '  [DONA]', // blanks before the tag: read as usual
  '[/DONA]',
  '[DONE]all good[/DONE]', // a command in the middle of the run
  '[READ_FILE path="kept.txt"]',
  '[MESSAGE]',
  'hello',
  '[/MESSAGE]',
];

describe('parser: lines counted past the listed errors', () => {
  for (const [kind, lineBreak] of [
    ['LF', '\n'],
    ['CRLF', '\r\n'],
    ['CR', '\r'],
  ] as const) {
    it(`counts and skips them as one by one (${kind})`, () => {
      const text = LINES.join(lineBreak);
      const plain = parseAnswer(text);
      const flooded = parseAnswer(`[/DONE]${lineBreak}`.repeat(MAX_LISTED_ERRORS) + text);
      assert.deepEqual(
        plain.errors.map((e) => [e.code, e.range.start.line]),
        [
          ['unknown-command', 0],
          ['unknown-command', 6],
          ['stray-closing-tag', 7],
          ['unknown-command', 9],
          ['missing-attribute', 12],
          ['missing-attribute', 13],
          ['unknown-command', 16],
        ],
      );
      assert.deepEqual(unlisted(flooded), { count: plain.errors.length, line: MAX_LISTED_ERRORS });
      assert.deepEqual(commands(flooded, MAX_LISTED_ERRORS), commands(plain, 0));
      assert.deepEqual(
        commands(plain, 0).map((c) => c.type),
        ['DONE', 'READ_FILE', 'MESSAGE'],
      );
    });
  }
});
