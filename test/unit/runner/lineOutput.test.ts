import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LineOutput } from '../../../src/runner/core/records/lineOutput.ts';

const DIM = (name: string) => `\x1b[2m[${name}]\x1b[0m `;

describe('the live output of tasks sharing one run', () => {
  it('writes whole lines, each after its task’s name, so two tasks never mix inside a line', () => {
    const out: string[] = [];
    const a = new LineOutput('a', (t) => out.push(t));
    const b = new LineOutput('b', (t) => out.push(t));
    a.write('step 1 $ ec');
    b.write('step 1 $ ls\n');
    a.write('ho hi\nhi\nrest');
    b.write('x');
    a.flush();
    b.flush();
    assert.deepEqual(out, [`${DIM('b')}step 1 $ ls\n`, `${DIM('a')}step 1 $ echo hi\n${DIM('a')}hi\n`, `${DIM('a')}rest\n`, `${DIM('b')}x\n`]);
  });

  it('alone, passes the text on as it comes', () => {
    const out: string[] = [];
    const only = new LineOutput(undefined, (t) => out.push(t));
    only.write('step 1 $ ');
    only.write('ls\n');
    only.flush();
    assert.deepEqual(out, ['step 1 $ ', 'ls\n']);
  });
});
