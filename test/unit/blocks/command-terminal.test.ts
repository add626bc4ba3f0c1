// RUN_COMMAND's terminal text, against hostile commands and outputs: an LLM's answer names the
// command and the program it runs writes the output, so neither may drive the terminal (set the
// title, clear the screen, write the clipboard, overwrite the result line, reverse text).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { commandEcho, commandEnding, type CommandResult } from '../../../src/blocks/core/results.ts';

/** A control character a terminal would act on: C0 but tab and line feed, DEL, C1, bidi controls. */
const ACTIVE = /[\u0000-\u0008\u000b-\u001a\u001c-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
/** ESC not starting a colour sequence. */
const BARE_ESC = /\u001b(?!\[[0-9;]*m)/;

const hostile = [
  '\u001b]52;c;cm0gLXJmIH4=\u0007', // write the clipboard (OSC 52)
  '\u001b]0;Belay: all tests passed\u0007', // set the title
  '\u001b[2J\u001b[H', // clear the screen, cursor home
  'rm -rf ~ \rls -la', // a CR that hides the first half
  'safe\u202etxt.exe', // right-to-left override
  '\u009b31m', // C1 CSI
  '\u0000\u0008\u007f',
];

function result(output: string, success = false): CommandResult {
  return { commandType: 'RUN_COMMAND', success, summary: 'exit code 1', output };
}

describe("RUN_COMMAND's terminal", () => {
  for (const text of hostile) {
    test(`a hostile command or output does nothing: ${JSON.stringify(text)}`, () => {
      for (const shown of [commandEcho(text), commandEnding(result(text))]) {
        assert.doesNotMatch(shown, ACTIVE, JSON.stringify(shown));
        assert.doesNotMatch(shown, BARE_ESC, JSON.stringify(shown));
      }
    });
  }

  test("the output's colours stay; its text and the result line are all there", () => {
    const shown = commandEnding(result('\u001b[32mok\u001b[0m 3 passed\nline two', true));
    assert.match(shown, /\u001b\[32mok\u001b\[0m 3 passed\nline two\n/);
    assert.match(shown, /\[OK\] RUN_COMMAND: exit code 1/);
    assert.match(shown, /Press any key to close\.\n$/);
  });

  test('a CR in the output becomes a line break, so it cannot overwrite the line before it', () => {
    const shown = commandEnding(result('FAILED 3 tests\rPASSED      '));
    assert.match(shown, /FAILED 3 tests\nPASSED/);
  });

  test('the command is echoed as written, after a $', () => {
    assert.equal(commandEcho('npm test -- --grep "a b"'), '$ npm test -- --grep "a b"\n');
  });
});
