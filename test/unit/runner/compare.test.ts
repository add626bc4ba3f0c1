import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compareSteps, countsWords, differencesWords, differenceWords, stepDifference, stepDifferences, type ComparableStep } from '../../../src/runner/core/records/compareRuns.ts';

interface Step extends ComparableStep {
  step: number;
}

function step(n: number, command: string | null, exitCode: number | null = 0, timedOut = false): Step {
  return { step: n, command, exitCode, timedOut };
}

describe('comparing two runs', () => {
  it('aligns steps by position, whatever numbers the trajectories gave them', () => {
    const left = [step(1, 'ls'), step(2, 'cat a')];
    const right = [step(0, 'ls'), step(1, 'cat a')];
    const { rows } = compareSteps(left, right);
    assert.deepEqual(
      rows.map((r) => [r.index, r.left?.step, r.right?.step, r.difference]),
      [
        [0, 1, 0, null],
        [1, 2, 1, null],
      ],
    );
  });

  it('finds the first step with a different command, and marks every differing row', () => {
    const left = [step(1, 'ls'), step(2, 'cat a'), step(3, 'rm x')];
    const right = [step(1, 'ls'), step(2, 'cat b'), step(3, 'rm y')];
    const c = compareSteps(left, right);
    assert.deepEqual(c.firstDivergence, { index: 1, reason: 'command' });
    assert.deepEqual(c.rows.map((r) => r.difference), [null, 'command', 'command']);
  });

  it('ignores only the whitespace around a command', () => {
    assert.equal(stepDifference(step(1, 'ls -la\n'), step(1, '  ls -la')), null);
    assert.equal(stepDifference(step(1, 'ls  -la'), step(1, 'ls -la')), 'command');
    assert.equal(stepDifference(step(1, null), step(1, 'ls')), 'command');
    assert.equal(stepDifference(step(1, null, null), step(1, null, null)), null);
  });

  it('finds the same command with a different exit code', () => {
    const c = compareSteps([step(1, 'make', 0), step(2, 'make test', 0)], [step(1, 'make', 0), step(2, 'make test', 2)]);
    assert.deepEqual(c.firstDivergence, { index: 1, reason: 'exit_code' });
  });

  it('finds the same command where only one timed out (before comparing exit codes)', () => {
    const c = compareSteps([step(1, 'sleep 9', null, true)], [step(1, 'sleep 9', 0, false)]);
    assert.deepEqual(c.firstDivergence, { index: 0, reason: 'timed_out' });
    assert.equal(stepDifference(step(1, 'x', null, true), step(1, 'x', 124, true)), 'exit_code');
  });

  it('a run that went on longer diverges where the other one stopped, on either side', () => {
    const short = [step(1, 'ls')];
    const long = [step(1, 'ls'), step(2, 'cat a'), step(3, 'cat b')];
    const a = compareSteps(long, short);
    assert.deepEqual(a.firstDivergence, { index: 1, reason: 'only_left' });
    assert.equal(a.rows.length, 3);
    assert.deepEqual(a.rows.map((r) => r.right?.step ?? null), [1, null, null]);
    assert.deepEqual(compareSteps(short, long).firstDivergence, { index: 1, reason: 'only_right' });
    assert.deepEqual(compareSteps([], long).firstDivergence, { index: 0, reason: 'only_right' });
  });

  it('identical runs never diverge, and two empty runs neither', () => {
    const steps = [step(1, 'ls'), step(2, 'cat a', 1), step(3, 'sleep 9', null, true)];
    const c = compareSteps(steps, steps.map((s) => ({ ...s })));
    assert.equal(c.firstDivergence, null);
    assert.ok(c.rows.every((r) => r.difference === null));
    const empty = compareSteps([], []);
    assert.deepEqual([empty.rows, empty.firstDivergence, empty.differing], [[], null, 0]);
    assert.equal(countsWords(empty.counts), '');
  });

  it('says each reason in words', () => {
    for (const reason of ['command', 'timed_out', 'exit_code', 'output', 'message', 'only_left', 'only_right'] as const) assert.ok(differenceWords(reason).length > 0);
  });
});

/** A step as the compare page shows it: with its output and the agent's words. */
function shown(n: number, command: string | null, output: string, agentText: string | null, exitCode: number | null = 0): Step {
  return { step: n, command, exitCode, timedOut: false, output, agentText };
}

describe('counting every difference the comparison shows', () => {
  it('counts the output of the same command and the agent’s message, not only commands (the demo’s three steps)', () => {
    const left = [
      shown(1, 'printf "%s" "$WHO" > who.txt', '', 'I write the name.'),
      shown(2, 'echo "Hello, $(cat who.txt)!"', 'Hello, world!\n', 'I greet.'),
      shown(3, null, '', 'Done: the greeting is written.'),
    ];
    const right = [
      shown(1, 'printf "%s" moon > who.txt', '', 'I write the name.'),
      shown(2, 'echo "Hello, $(cat who.txt)!"', 'Hello, moon!\n', 'I greet.'),
      shown(3, null, '', 'Done, with the moon.'),
    ];
    const c = compareSteps(left, right);
    assert.equal(c.differing, 3, 'every one of the three rows differs in something the page shows');
    assert.deepEqual(c.rows.map((r) => r.differences), [['command'], ['output'], ['message']]);
    assert.deepEqual(c.firstDivergence, { index: 0, reason: 'command' });
    assert.equal(countsWords(c.counts), '1 in the command, 1 in the output, 1 in the message');
  });

  it('lists every way one row differs, in a fixed order, and says them together', () => {
    const a = shown(1, 'make', 'ok\n', 'building', 0);
    const b = shown(1, 'make all', 'error\n', 'building it', 2);
    assert.deepEqual(stepDifferences(a, b), ['command', 'exit_code', 'output', 'message']);
    assert.equal(differencesWords(stepDifferences(a, b)), 'the command, the exit code, the output and the agent’s message differ');
    assert.equal(differencesWords(['output']), 'a different output');
    assert.equal(differencesWords([]), null);
  });

  it('ignores only the whitespace at the ends of outputs and messages; a missing message against one is a difference', () => {
    assert.deepEqual(stepDifferences(shown(1, 'ls', 'a\n', 'x'), shown(1, 'ls', 'a', ' x ')), []);
    assert.deepEqual(stepDifferences(shown(1, 'ls', 'a  b', 'x'), shown(1, 'ls', 'a b', 'x')), ['output']);
    assert.deepEqual(stepDifferences(shown(1, 'ls', '', null), shown(1, 'ls', '', 'why')), ['message']);
    assert.deepEqual(stepDifferences(shown(1, 'ls', '', ''), shown(1, 'ls', '', null)), [], 'an empty message is no message');
  });

  it('compares texts only when both sides carry them (steps read from disk have no output text)', () => {
    assert.deepEqual(stepDifferences(step(1, 'ls'), shown(1, 'ls', 'a', 'x')), []);
  });

  it('counts a row under each way it differs, and runs of unequal length as steps only one run has', () => {
    const c = compareSteps([shown(1, 'a', 'x', null), shown(2, 'b', 'y', null)], [shown(1, 'a', 'X', 'hm'), shown(2, 'b', 'y', null), shown(3, 'c', '', null)]);
    assert.equal(c.differing, 2);
    assert.equal(c.counts.output, 1);
    assert.equal(c.counts.message, 1);
    assert.equal(c.counts.only_right, 1);
    assert.equal(countsWords(c.counts), '1 only in B, 1 in the output, 1 in the message');
  });
});
