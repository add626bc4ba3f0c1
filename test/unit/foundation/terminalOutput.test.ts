// What every Belay pseudoterminal shows (src/shared/terminalOutput.ts, under src/ui/pseudoterminal.ts):
// held until the terminal opens, `\r\n` line endings, a bounded transcript, and one close with the
// exit code, at once when open or as soon as it opens.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TerminalOutput, toTerminalNewlines } from '../../../src/shared/terminalOutput.ts';

function recorded(transcriptLimit?: number): { output: TerminalOutput; written: string[]; closes: number[] } {
  const written: string[] = [];
  const closes: number[] = [];
  const output = new TerminalOutput({ write: (text) => written.push(text), close: (code) => closes.push(code) }, transcriptLimit);
  return { output, written, closes };
}

test('line endings become \\r\\n, whatever they were', () => {
  assert.equal(toTerminalNewlines('a\nb\r\nc\n\n'), 'a\r\nb\r\nc\r\n\r\n');
  assert.equal(toTerminalNewlines('no newline'), 'no newline');
});

test('what is written before the terminal opens is held, then shown in order; after, at once', () => {
  const { output, written } = recorded();
  output.write('one\n');
  output.write('');
  output.write('two');
  assert.deepEqual(written, []);
  assert.equal(output.opened, false);
  output.open();
  assert.deepEqual(written, ['one\r\n', 'two']);
  output.write('three\n');
  assert.deepEqual(written, ['one\r\n', 'two', 'three\r\n']);
  // Opened twice (VS Code does not, but nothing is shown twice if it did).
  output.open();
  assert.deepEqual(written, ['one\r\n', 'two', 'three\r\n']);
});

test('the transcript keeps what was written, as written, up to its limit, and none by default', () => {
  const kept = recorded(10);
  kept.output.write('12345\n');
  kept.output.write('6789\n');
  kept.output.write('more');
  assert.equal(kept.output.transcript, '12345\n6789\n');
  const none = recorded();
  none.output.write('text');
  assert.equal(none.output.transcript, '');
});

test('an exit before the terminal opens closes it, with its code, once it has shown what was held', () => {
  const { output, written, closes } = recorded();
  output.write('failed\n');
  output.exit(2);
  assert.deepEqual(closes, []);
  assert.equal(output.exitCode, 2);
  output.open();
  assert.deepEqual(written, ['failed\r\n']);
  assert.deepEqual(closes, [2]);
  assert.equal(output.closed, true);
});

test('an exit once open closes at once, only the first exit counts, and nothing is shown after', () => {
  const { output, written, closes } = recorded(100);
  output.open();
  output.exit(0);
  output.exit(1);
  output.write('late');
  assert.deepEqual(closes, [0]);
  assert.deepEqual(written, []);
  // The transcript still has it: tests read what was said after the close too.
  assert.equal(output.transcript, 'late');
});

test('closed by the person: nothing held is shown, no close is sent, and a later exit does nothing', () => {
  const { output, written, closes } = recorded();
  output.write('held');
  output.closedByPerson();
  output.open();
  output.exit(0);
  output.write('after');
  assert.deepEqual(written, []);
  assert.deepEqual(closes, []);
  assert.equal(output.closed, true);
});
