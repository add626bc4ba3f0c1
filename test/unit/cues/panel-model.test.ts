// The panel's rules over mailbox entries: expiry, timeouts, the queue, the snapshot.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parsePayload, PAUSE_PAYLOAD_JSON } from '../../../src/cues/core/payload.ts';
import type { CueEntry } from '../../../src/cues/core/store.ts';
import { buildSnapshot, expandHomeSetting, EXPIRE_AFTER_MS, promptSummary, queuedDeliveries, uiState, whyNotAnswerable } from '../../../src/cues/model.ts';

const T0 = 1_800_000_000_000;

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
    assert.equal(uiState(cue, T0 + EXPIRE_AFTER_MS), 'pending');
    assert.equal(uiState(cue, T0 + EXPIRE_AFTER_MS + 1), 'expired');
    assert.match(whyNotAnswerable(cue, T0 + EXPIRE_AFTER_MS + 1) ?? '', /expired/);
    assert.equal(whyNotAnswerable(cue, T0 + 1000), undefined);
    const pause = entry(2, { payload: parsePayload(PAUSE_PAYLOAD_JSON) });
    assert.equal(uiState(pause, T0 + 10 * EXPIRE_AFTER_MS), 'pending');
    assert.equal(whyNotAnswerable(undefined, T0), 'this cue is no longer in the mailbox');
    assert.match(whyNotAnswerable(entry(3, { state: 'answered' }), T0) ?? '', /already answered/);
  });

  test("a cancel written 600 s after the cue is the CLI's timeout; an earlier one is the human's End", () => {
    const response = (atMs: number) => ({ id: 1, text: '', cancelled: true, files: [], createdAtMs: atMs });
    assert.equal(uiState(entry(1, { state: 'cancelled', response: response(T0 + EXPIRE_AFTER_MS) }), T0 + EXPIRE_AFTER_MS), 'timeout');
    assert.equal(uiState(entry(1, { state: 'cancelled', response: response(T0 + 5_000) }), T0 + 6_000), 'cancelled');
  });

  test('a queued reply goes to the first cue written after it was queued, once per agent', () => {
    const queue = new Map([['ada', { text: 'next: changelog', afterId: 5 }]]);
    const pending = [entry(4), entry(7), entry(6), entry(8, { agentId: 'bob' })];
    assert.deepEqual(queuedDeliveries(pending, queue, T0 + 1000), [{ requestId: 'req_6', agentId: 'ada', text: 'next: changelog' }]);
    assert.deepEqual(queuedDeliveries([entry(4)], queue, T0 + 1000), [], 'an older cue does not take it');
    assert.deepEqual(queuedDeliveries([entry(9)], queue, T0 + EXPIRE_AFTER_MS + 1), [], 'an expired cue does not take it');
  });

  test('the snapshot counts only answerable cues, keeps history out of pending and lists queued agents', () => {
    const pending = [entry(1), entry(2, { createdAtMs: T0 - EXPIRE_AFTER_MS - 10 })];
    const recent = [...pending, entry(3, { state: 'answered', response: { id: 3, text: 'yes', cancelled: false, files: [{ file: 'files/ab.png', absolutePath: '/x/files/ab.png', mimeType: 'image/png' }] } })];
    const snapshot = buildSnapshot(
      { agents: [{ agentId: 'ada', runtime: 'claude_code', projectDir: '/w/p', requestCount: 3, pendingCount: 2 }], pending, recent },
      new Map([['zed', { text: 'hi', afterId: 0 }]]),
      T0 + 1000,
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
