// Pieces both trajectory pages use (one run, two runs compared): buttons, durations, model-call
// costs, and the failure reason a run leads with. Text is set with textContent only.
import { codicon, el } from '../shared/dom.ts';
import type { LlmUsageView, RunSummary, ToHost, TrajectoryStep } from '../../contracts/trajectoryPage.ts';

export type Post = (message: Exclude<ToHost, { type: 'ready' }>) => void;

export function button(label: string, icon: string, title: string, onClick: () => void, id?: string): HTMLButtonElement {
  const b = el('button', 'button');
  b.type = 'button';
  b.title = title;
  if (id) b.id = id;
  b.append(codicon(`codicon-${icon}`), el('span', '', label));
  b.addEventListener('click', onClick);
  return b;
}

export function duration(sec: number): string {
  return sec < 60 ? `${sec.toFixed(1)} s` : `${Math.floor(sec / 60)} min ${Math.round(sec % 60)} s`;
}

const compact = new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 1 });

/** "12.4K tokens (10.1K in, 2.3K out) · $0.0421 · 3 requests". */
export function usage(llm: LlmUsageView): string {
  const cost = llm.costUsd < 1 ? llm.costUsd.toFixed(4) : llm.costUsd.toFixed(2);
  const requests = `${llm.requests} request${llm.requests === 1 ? '' : 's'}`;
  return `${compact.format(llm.inputTokens + llm.outputTokens)} tokens (${compact.format(llm.inputTokens)} in, ${compact.format(llm.outputTokens)} out) · $${cost} · ${requests}`;
}

export function resultIcon(run: RunSummary): HTMLElement {
  // A picture with its words: the title's mark says passed or failed to a screen reader too.
  const icon = el('span', `codicon ${run.passed ? 'codicon-pass passed' : run.failureCause === 'aborted' ? 'codicon-circle-slash' : 'codicon-error failed'}`);
  icon.setAttribute('role', 'img');
  icon.setAttribute('aria-label', run.passed ? 'passed' : run.failureCause === 'aborted' ? 'stopped' : 'failed');
  return icon;
}

/** "exit 0", "exit 2", "timed out", or '' for a step without a command. */
export function stepStatus(step: TrajectoryStep): string {
  return step.timedOut ? 'timed out' : step.exitCode === null ? '' : `exit ${step.exitCode}`;
}

/** How many failed tests the reason lists before "and N more". */
const TESTS_LISTED = 8;
/** Lines of the tests' output the reason shows when nothing else says why. */
const OUTPUT_TAIL_LINES = 12;

/**
 * Why a failed run failed, first thing on the page: the cause in words, the error, the tests that
 * failed (or the end of the tests' output), and for a protocol mismatch the way to the agent's
 * setting. Null for a passed run.
 */
export function failureReason(run: RunSummary, post: Post): HTMLElement | null {
  if (run.passed) return null;
  const box = el('section', 'reason');
  box.setAttribute('aria-label', 'Why the run failed');
  box.append(el('p', 'reason-title', `Failed: ${run.causeWords ?? 'the run failed'}`));
  if (run.error) box.append(el('p', 'reason-error', run.error));
  if (run.failedTests.length > 0) {
    const list = el('ul', 'failed-tests');
    for (const test of run.failedTests.slice(0, TESTS_LISTED)) {
      const item = el('li', '');
      item.append(el('span', 'test-name', test.name), el('span', 'muted', test.status === 'failed' ? '' : ` (${test.status})`));
      if (test.message) item.append(el('span', '', `: ${test.message}`));
      list.append(item);
    }
    if (run.failedTests.length > TESTS_LISTED) list.append(el('li', 'muted', `and ${run.failedTests.length - TESTS_LISTED} more`));
    box.append(list);
  }
  // The tests' own words, when the failed tests carry no message of their own.
  if (run.failureCause === 'tests_failed' && run.testOutput.trim() !== '' && !run.failedTests.some((t) => t.message)) {
    const tail = run.testOutput.trimEnd().split('\n').slice(-OUTPUT_TAIL_LINES).join('\n');
    box.append(el('pre', 'reason-output', tail));
  }
  if (run.protocolFix) {
    const fix = run.protocolFix;
    box.append(
      button(`Set the protocol of ${fix.agent}…`, 'settings-gear', `Open the belay.agents setting to set "protocol": "${fix.protocol}" for ${fix.agent}`, () =>
        post({ type: 'openAgentSettings', agent: fix.agent }),
      ),
    );
  }
  return box;
}
