// The panel's rules over mailbox entries: expiry, timeouts, the queue, the snapshot.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as path from 'node:path';
import { CUE_TIMEOUT_MS, cueTimeoutMs } from '../../../src/cues/core/expiry.ts';
import { expandHomeSetting, mailboxPathsForSetting } from '../../../src/cues/core/home.ts';
import { buildSnapshot, nextExpiryMs, promptSummary, queuedDeliveries, shownState, toCue, waitingPhrase, whyNotAnswerable } from '../../../src/cues/core/model.ts';
import { parsePayload, PAUSE_PAYLOAD_JSON } from '../../../src/cues/core/payload.ts';
import type { CueEntry } from '../../../src/cues/core/store.ts';

const T0 = 1_800_000_000_000;
/** The default: how long `cueme cue` waits unless CUEME_TIMEOUT_SECONDS says otherwise. */
const EXPIRE_AFTER_MS = CUE_TIMEOUT_MS;
const stateAt = (entry: CueEntry, nowMs: number) => shownState(entry, nowMs, EXPIRE_AFTER_MS);

function entry(id: number, over: Partial<CueEntry> = {}): CueEntry {
  return {
    id,
    requestId: `req_${id}`,
    agentId: 'ada',
    prompt: `prompt ${id}`,
    payloadJson: null,
    payload: { kind: 'none' },
    status: 'PENDING',
    state: 'pending',
    createdAtMs: T0,
    ...over,
  };
}

describe('the Cues panel model', () => {
  test('a pending cue past the 600 s the CLI waits is expired and cannot be answered; a pause never expires', () => {
    const cue = entry(1);
    assert.equal(stateAt(cue, T0 + EXPIRE_AFTER_MS), 'pending');
    assert.equal(stateAt(cue, T0 + EXPIRE_AFTER_MS + 1), 'expired');
    assert.match(whyNotAnswerable(cue, T0 + EXPIRE_AFTER_MS + 1, EXPIRE_AFTER_MS) ?? '', /expired/);
    assert.equal(whyNotAnswerable(cue, T0 + 1000, EXPIRE_AFTER_MS), undefined);
    const pause = entry(2, { payload: parsePayload(PAUSE_PAYLOAD_JSON) });
    assert.equal(stateAt(pause, T0 + 10 * EXPIRE_AFTER_MS), 'pending');
    assert.equal(whyNotAnswerable(undefined, T0, EXPIRE_AFTER_MS), 'this cue is no longer in the mailbox');
    assert.match(whyNotAnswerable(entry(3, { state: 'answered' }), T0, EXPIRE_AFTER_MS) ?? '', /already answered/);
  });

  test("a cancel written 600 s after the cue is the CLI's timeout; an earlier one is the human's End", () => {
    const response = (atMs: number) => ({ id: 1, text: '', cancelled: true, files: [], createdAtMs: atMs });
    assert.equal(stateAt(entry(1, { state: 'cancelled', response: response(T0 + EXPIRE_AFTER_MS) }), T0 + EXPIRE_AFTER_MS), 'timeout');
    assert.equal(stateAt(entry(1, { state: 'cancelled', response: response(T0 + 5_000) }), T0 + 6_000), 'cancelled');
  });

  test('a queued reply goes to the first cue written after it was queued, once per agent', () => {
    const queue = new Map([['ada', { text: 'next: changelog', afterId: 5 }]]);
    const pending = [entry(4), entry(7), entry(6), entry(8, { agentId: 'bob' })];
    assert.deepEqual(queuedDeliveries(pending, queue, T0 + 1000, EXPIRE_AFTER_MS), [{ requestId: 'req_6', agentId: 'ada', text: 'next: changelog' }]);
    assert.deepEqual(queuedDeliveries([entry(4)], queue, T0 + 1000, EXPIRE_AFTER_MS), [], 'an older cue does not take it');
    assert.deepEqual(queuedDeliveries([entry(9)], queue, T0 + EXPIRE_AFTER_MS + 1, EXPIRE_AFTER_MS), [], 'an expired cue does not take it');
  });

  test('the snapshot counts only answerable cues, keeps history out of pending and lists queued agents', () => {
    const pending = [entry(1), entry(2, { createdAtMs: T0 - EXPIRE_AFTER_MS - 10 })];
    const recent = [...pending, entry(3, { state: 'answered', response: { id: 3, text: 'yes', cancelled: false, files: [{ file: 'files/ab.png', absolutePath: '/x/files/ab.png', mimeType: 'image/png' }] } })];
    const snapshot = buildSnapshot(
      { agents: [{ agentId: 'ada', runtime: 'claude_code', projectDir: '/w/p', requestCount: 3, pendingCount: 2 }], pending, recent },
      new Map([['zed', { text: 'hi', afterId: 0 }]]),
      T0 + 1000,
      EXPIRE_AFTER_MS,
    );
    assert.equal(snapshot.waitingCount, 1);
    assert.deepEqual(snapshot.pending.map((c) => c.state), ['pending', 'expired']);
    assert.deepEqual(snapshot.history.map((c) => [c.requestId, c.state, c.response?.files]), [['req_3', 'answered', ['ab.png']]]);
    assert.deepEqual(snapshot.agents.map((a) => [a.agentId, a.pendingCount, a.queued]), [['ada', 1, undefined], ['zed', 0, 'hi']]);
  });

  test('prompt summaries and the home setting', () => {
    assert.equal(promptSummary('\n\n## Deploy **now**?\nmore'), 'Deploy now?');
    assert.equal(promptSummary('x'.repeat(300), 10).length, 10);
    assert.equal(expandHomeSetting('', '/home/u'), undefined);
    assert.equal(expandHomeSetting('~/mail', '/home/u'), '/home/u/mail');
    assert.equal(expandHomeSetting('/srv/cue', '/home/u'), '/srv/cue');
  });
});

describe('one expiry rule for the panel, the badge and the tools', () => {
  test('CUEME_TIMEOUT_SECONDS sets how long cue waits; a bad value is refused with the reason', () => {
    assert.equal(cueTimeoutMs({}), 600_000);
    assert.equal(cueTimeoutMs({ CUEME_TIMEOUT_SECONDS: ' 0.3 ' }), 300);
    for (const bad of ['soon', '0', '-5']) assert.throws(() => cueTimeoutMs({ CUEME_TIMEOUT_SECONDS: bad }), /CUEME_TIMEOUT_SECONDS must be a positive number/);
  });

  test('with a 30 s timeout a cue expires after 30 s, says so, and the page gets the moment', () => {
    const timeoutMs = 30_000;
    const cue = entry(1);
    assert.equal(shownState(cue, T0 + timeoutMs, timeoutMs), 'pending');
    assert.equal(shownState(cue, T0 + timeoutMs + 1, timeoutMs), 'expired');
    assert.equal(whyNotAnswerable(cue, T0 + timeoutMs + 1, timeoutMs), 'this cue expired: its cueme stopped waiting after 30 s, so nobody would read the answer');
    const pause = entry(2, { payload: parsePayload(PAUSE_PAYLOAD_JSON), createdAtMs: T0 - 5_000 });
    const snapshot = buildSnapshot({ agents: [], pending: [entry(3, { createdAtMs: T0 + 5_000 }), cue, pause], recent: [] }, new Map(), T0 + 1000, timeoutMs);
    assert.deepEqual(snapshot.pending.map((c) => c.expiresAtMs), [T0 + 5_000 + timeoutMs, T0 + timeoutMs, undefined], 'a pause never expires');
    assert.equal(nextExpiryMs(snapshot), T0 + timeoutMs);
    const later = buildSnapshot({ agents: [], pending: [cue, pause], recent: [] }, new Map(), T0 + timeoutMs + 1, timeoutMs);
    assert.equal(later.pending[0]?.expiresAtMs, undefined, 'an expired cue has nothing left to count down');
    assert.equal(nextExpiryMs(later), undefined);
  });

  test('the mailbox from the setting: a folder (with ~), else CUE_HOME, else ~/.cue', () => {
    assert.equal(mailboxPathsForSetting('~/mail', '/home/u').dbPath, path.resolve('/home/u/mail/cue.db'));
    assert.equal(mailboxPathsForSetting('  ', '/home/u', { CUE_HOME: '/srv/cue' }).home, path.resolve('/srv/cue'));
    assert.equal(mailboxPathsForSetting('', '/home/u', { HOME: '/home/u' }).home, path.resolve('/home/u/.cue'));
  });
});

describe('abandoned cues: the recorded waiter decides, the timeout only guesses for the public tools', () => {
  const waiter = (over: Partial<NonNullable<CueEntry['waiter']>> = {}) => ({ requestId: 'req_1', pid: 4242, machine: 'm', host: 'devbox', heartbeatMs: T0, ...over });
  const alive = () => 'alive' as const;
  const gone = () => 'gone' as const;

  test('a cue whose waiter is gone is abandoned: not answerable, not counted, says why', () => {
    const cue = entry(1, { waiter: waiter({ deadlineMs: T0 + 600_000 }) });
    assert.equal(shownState(cue, T0 + 1000, EXPIRE_AFTER_MS, gone), 'abandoned');
    assert.equal(
      whyNotAnswerable(cue, T0 + 1000, EXPIRE_AFTER_MS, gone),
      'this cue was abandoned: the process that waited for it (pid 4242 on devbox) is gone, so nobody would read the answer',
    );
    const snapshot = buildSnapshot({ agents: [{ agentId: 'ada', requestCount: 1, pendingCount: 1 }], pending: [cue], recent: [cue] }, new Map(), T0 + 1000, EXPIRE_AFTER_MS, gone);
    assert.equal(snapshot.waitingCount, 0);
    assert.equal(snapshot.agents[0]?.pendingCount, 0);
    assert.deepEqual(snapshot.pending[0]?.waiter, { pid: 4242, host: 'devbox' });
    assert.equal(snapshot.pending[0]?.expiresAtMs, undefined);
    const queue = new Map([['ada', { text: 'go on', afterId: 0 }]]);
    assert.deepEqual(queuedDeliveries([cue], queue, T0 + 1000, EXPIRE_AFTER_MS, gone), [], 'a queued reply is never used up on a cue nobody reads');
  });

  test("the waiter's own deadline is the expiry (its CUEME_TIMEOUT_SECONDS, not the editor's)", () => {
    const short = entry(1, { waiter: waiter({ deadlineMs: T0 + 5_000 }) });
    const snapshot = buildSnapshot({ agents: [], pending: [short], recent: [] }, new Map(), T0 + 1000, EXPIRE_AFTER_MS);
    assert.equal(snapshot.pending[0]?.expiresAtMs, T0 + 5_000);
    assert.equal(shownState(short, T0 + 5_001, EXPIRE_AFTER_MS), 'expired');
    assert.equal(whyNotAnswerable(short, T0 + 5_001, EXPIRE_AFTER_MS), 'this cue expired: its cueme stopped waiting after 5 s, so nobody would read the answer');
    const timedOut = entry(2, { state: 'cancelled', waiter: waiter({ deadlineMs: T0 + 5_000 }), response: { id: 2, text: '', cancelled: true, files: [], createdAtMs: T0 + 5_000 } });
    assert.equal(shownState(timedOut, T0 + 6_000, EXPIRE_AFTER_MS), 'timeout', "a cancel at the waiter's deadline is its timeout");
  });

  test('a live waiter past its deadline (its machine slept) is still waiting; one with no deadline never expires by the clock', () => {
    const slept = entry(1, { waiter: waiter({ deadlineMs: T0 + 5_000 }) });
    assert.equal(shownState(slept, T0 + 3_600_000, EXPIRE_AFTER_MS, alive), 'pending');
    assert.equal(whyNotAnswerable(slept, T0 + 3_600_000, EXPIRE_AFTER_MS, alive), undefined);
    assert.equal(toCue(slept, T0 + 3_600_000, EXPIRE_AFTER_MS, alive).expiresAtMs, undefined, 'nothing to count down');
    const noDeadline = entry(2, { waiter: waiter() });
    assert.equal(shownState(noDeadline, T0 + 10 * EXPIRE_AFTER_MS, EXPIRE_AFTER_MS), 'pending');
  });

  test("an agent's last activity counts the human's last answer to it", () => {
    const answered = entry(5, { state: 'answered', response: { id: 5, text: 'ok', cancelled: false, files: [], createdAtMs: T0 + 9_000 } });
    const snapshot = buildSnapshot({ agents: [{ agentId: 'ada', requestCount: 1, pendingCount: 0, lastActivityMs: T0 }], pending: [], recent: [answered] }, new Map(), T0 + 10_000, EXPIRE_AFTER_MS);
    assert.equal(snapshot.agents[0]?.lastActivityMs, T0 + 9_000);
  });

  test('the status bar and the badge say it in words that read aloud', () => {
    assert.equal(waitingPhrase(1), 'one agent question is waiting for your answer');
    assert.equal(waitingPhrase(3), '3 agent questions are waiting for your answer');
  });
});
