import type { CueEntry } from './store.ts';

// The one rule for how long a cue is read: `cueme cue` waits this long for the human, then gives up
// and cancels its request. A pending cue older than that is expired: nobody would read an answer.
// A pause (`cueme pause`) waits without limit and never expires.
//
// Whose timeout: Belay's writers record their own deadline beside the request (waiters.ts), from
// the CUEME_TIMEOUT_SECONDS of the process that waits, so a cueme started with another timeout than
// the editor's is read right. The public tools record nothing: for their cues the reader's own
// CUEME_TIMEOUT_SECONDS (or the 600 s default) is the best guess there is.

/** How long `cueme cue` waits for the human unless CUEME_TIMEOUT_SECONDS says otherwise, as the public cueme does. */
export const CUE_TIMEOUT_MS = 600_000;

/**
 * The timeout of `cue` in this environment: CUEME_TIMEOUT_SECONDS (decimals allowed) or 600 s.
 * Throws a RangeError with the message to show when the variable is not a positive number.
 */
export function cueTimeoutMs(env: NodeJS.ProcessEnv): number {
  const raw = env.CUEME_TIMEOUT_SECONDS?.trim();
  if (!raw) return CUE_TIMEOUT_MS;
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new RangeError(`CUEME_TIMEOUT_SECONDS must be a positive number of seconds, got ${JSON.stringify(raw)}`);
  return Math.round(seconds * 1000);
}

/**
 * When a request's cueme stops waiting: the deadline its waiter recorded, else its time plus the
 * reader's `timeoutMs`; undefined when it never does (a pause, a waiter that recorded no deadline)
 * or its time is unknown.
 */
export function expiresAtMs(entry: Pick<CueEntry, 'payload' | 'createdAtMs' | 'waiter'>, timeoutMs: number): number | undefined {
  if (entry.payload.kind === 'pause') return undefined;
  if (entry.waiter) return entry.waiter.deadlineMs;
  if (entry.createdAtMs === undefined) return undefined;
  return entry.createdAtMs + timeoutMs;
}

/** True for a pending request that its cueme no longer waits for. */
export function isExpired(entry: Pick<CueEntry, 'state' | 'payload' | 'createdAtMs' | 'waiter'>, nowMs: number, timeoutMs: number): boolean {
  const expiresAt = expiresAtMs(entry, timeoutMs);
  return entry.state === 'pending' && expiresAt !== undefined && nowMs > expiresAt;
}

/** "600 s", "0.3 s": the timeout as the messages say it. */
export function describeTimeout(timeoutMs: number): string {
  return `${timeoutMs / 1000} s`;
}
