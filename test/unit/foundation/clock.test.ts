// The tests' wait for the clock to leave an id's second (test/support/clock.ts), which orders the
// ids of runs and jobs made one after the other.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { endOfSecondOf, pastSecondOf } from '../../support/clock.ts';

describe('waiting past the second an id names', () => {
  test("a job's and a run's id end their second one second after their stamp", () => {
    assert.equal(endOfSecondOf('20260105T100059Z-job-ab12cd'), Date.UTC(2026, 0, 5, 10, 1, 0));
    assert.equal(endOfSecondOf('20261231T235959Z-hello-world-ab12cd'), Date.UTC(2027, 0, 1, 0, 0, 0));
  });

  test('an id made now is past once the wait ends, and one from the past does not wait', async () => {
    const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
    await pastSecondOf(`${stamp}-job-000000`);
    const after = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
    assert.ok(after > stamp, `${after} sorts after ${stamp}`);
    const first = await Promise.race([pastSecondOf('20200101T000000Z-job-000000').then(() => 'past at once'), new Promise((resolve) => setImmediate(() => resolve('waited')))]);
    assert.equal(first, 'past at once');
  });

  test('an id without a stamp is said to be one, in one line', () => {
    assert.throws(() => endOfSecondOf('job-ab12cd'), { message: "'job-ab12cd' does not begin with a time stamp (YYYYMMDDTHHMMSSZ)" });
  });
});
