import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lazy } from '../../../src/shared/lazy.ts';

test('lazy makes its value on first use, once, and makes it again after a failure', () => {
  let calls = 0;
  const value = lazy(() => ({ n: ++calls }));
  assert.equal(calls, 0);
  const first = value();
  assert.equal(value(), first);
  assert.equal(calls, 1);
  let attempts = 0;
  const flaky = lazy(() => {
    attempts++;
    if (attempts === 1) throw new Error('not yet');
    return attempts;
  });
  assert.throws(flaky, /not yet/);
  assert.equal(flaky(), 2);
  assert.equal(flaky(), 2);
});
