import { randomInt } from 'node:crypto';
import { PAUSE_DEFAULT_PROMPT, PAUSE_PAYLOAD_JSON } from './payload.ts';
import { detectTerminal } from './platform.ts';
import type { CueResponse, Mailbox } from './store.ts';
import { answerText, cancelledText, emptyAnswerText, joinText, recallText, timeoutText, type CueMode } from './texts.ts';
import { waitForChange } from './watch.ts';

// The Human Agent Protocol operations (join, recall, cue, pause) over the mailbox, shared by the
// `cueme` command line and the editor's language-model tools.

/** The default timeout of `cue` (src/cli/cueme.ts imports it from here); the rule is in expiry.ts. */
export { CUE_TIMEOUT_MS } from './expiry.ts';

const CONSONANTS = 'bcdfghjklmnprstvwz';
const VOWELS = 'aeiou';
const CODAS = ['', '', 'n', 'r', 's', 'l', 'th', 'nd', 'st'];

/** A random pronounceable lowercase word of 8 to 12 letters, e.g. `josthendren`. */
export function newAgentId(): string {
  const length = 8 + randomInt(5);
  let id = '';
  while (id.length < length) {
    id += CONSONANTS[randomInt(CONSONANTS.length)]! + VOWELS[randomInt(VOWELS.length)]! + CODAS[randomInt(CODAS.length)]!;
  }
  return id.slice(0, length);
}

/** `Claude Code` -> `claude_code`: lowercase, runs of spaces and dashes to `_`. */
export function normalizeRuntime(raw: string): string {
  const value = raw.trim().toLowerCase().replace(/[-\s]+/g, '_');
  return value || 'unknown';
}

/** The agent's shell (platform.ts: SHELL, PowerShell, or ComSpec on Windows). */
export { detectTerminal };

export function join(mailbox: Mailbox, runtime: string, context: { env: NodeJS.ProcessEnv; cwd: string }): { agentId: string; text: string } {
  const agentId = newAgentId();
  const info = { agentId, projectDir: context.cwd, terminal: detectTerminal(context.env), runtime: normalizeRuntime(runtime) };
  mailbox.upsertAgent({ agentId, runtime: info.runtime, projectDir: info.projectDir, terminal: info.terminal });
  return { agentId, text: joinText(info) };
}

export function recall(mailbox: Mailbox, hints: string): { agentId: string; found: boolean; text: string } {
  const found = hints.trim() === '' ? undefined : mailbox.findAgentByHints(hints.trim());
  const agentId = found ?? newAgentId();
  return { agentId, found: found !== undefined, text: recallText(agentId, found !== undefined) };
}

export type CueOutcomeKind = 'answered' | 'empty' | 'cancelled' | 'timeout' | 'interrupted';

export interface CueOutcome {
  kind: CueOutcomeKind;
  requestId: string;
  response?: CueResponse;
  /** What cueme prints on stdout (empty for an interruption: nobody is reading). */
  text: string;
}

/** What the agent reads for a response, by the public cueme's rules. */
export function renderResponse(mode: CueMode, response: CueResponse): { kind: CueOutcomeKind; text: string } {
  if (response.cancelled) return { kind: 'cancelled', text: cancelledText(mode) };
  if (response.text.trim() === '' && response.files.length === 0) return { kind: 'empty', text: emptyAnswerText(mode) };
  return { kind: 'answered', text: answerText(response.text, response.files) };
}

export interface CueOptions {
  mode: CueMode;
  agentId: string;
  prompt: string;
  payloadJson: string | null;
  /** Give up after this long (cue: `cueTimeoutMs`, expiry.ts); undefined waits forever (pause). */
  timeoutMs?: number;
  /** Aborted on Ctrl-C: the request is cancelled. */
  interrupt?: AbortSignal;
  /** Called once the request is in the mailbox. */
  onRequest?: (requestId: string) => void;
  /**
   * Calls its argument after each committed change of the mailbox, until the returned function is
   * called. Default: a watch of its own (`mailbox.watch`); the editor passes its one watch instead.
   */
  subscribe?: (onChange: () => void) => () => void;
}

/**
 * Writes a request and waits for its response on mailbox change notifications (not a poll).
 * On timeout or interruption the request is cancelled in the mailbox, unless an answer got in
 * first, which is then delivered.
 */
export async function cueAndWait(mailbox: Mailbox, options: CueOptions): Promise<CueOutcome> {
  const { requestId } = mailbox.createRequest({ agentId: options.agentId, prompt: options.prompt, payloadJson: options.payloadJson, timeoutMs: options.timeoutMs });
  options.onRequest?.(requestId);
  const stop = new AbortController();
  let timedOut = false;
  const timer =
    options.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          stop.abort();
        }, options.timeoutMs);
  const onInterrupt = () => stop.abort();
  if (options.interrupt?.aborted) stop.abort();
  options.interrupt?.addEventListener('abort', onInterrupt);
  try {
    const subscribe = options.subscribe ?? ((onChange: () => void) => mailbox.watch(onChange));
    const response = await waitForChange(subscribe, () => responseOrClosed(mailbox, requestId), stop.signal);
    if (response) return { requestId, response, ...renderResponse(options.mode, response) };
  } catch (error) {
    // Waiting broke (the file went away, the lock stayed busy): do not leave a request nobody waits for.
    try {
      mailbox.closeUnanswered(requestId);
    } catch {
      // The original error says more.
    }
    throw error;
  } finally {
    if (timer) clearTimeout(timer);
    options.interrupt?.removeEventListener('abort', onInterrupt);
  }
  const raced = mailbox.closeUnanswered(requestId);
  if (raced) return { requestId, response: raced, ...renderResponse(options.mode, raced) };
  if (timedOut) return { requestId, kind: 'timeout', text: timeoutText(options.mode) };
  return { requestId, kind: 'interrupted', text: '' };
}

/**
 * The response to wait for; or, when another program deleted the request (cue-console's cancel
 * does) or closed it without a response, a cancelled one, so the agent is not left waiting for
 * an answer that cannot come (the public cueme waits 10 minutes, and a pause forever).
 */
function responseOrClosed(mailbox: Mailbox, requestId: string): CueResponse | undefined {
  const response = mailbox.getResponse(requestId);
  if (response) return response;
  // Read again with the request: a whole answer may have landed between the two reads.
  const request = mailbox.getRequest(requestId);
  if (request?.response) return request.response;
  if (request && request.state === 'pending') return undefined;
  return { id: 0, text: '', cancelled: true, files: [] };
}

export function pauseRequest(prompt: string | undefined): { prompt: string; payloadJson: string } {
  return { prompt: prompt?.trim() || PAUSE_DEFAULT_PROMPT, payloadJson: PAUSE_PAYLOAD_JSON };
}
