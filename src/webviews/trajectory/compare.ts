// Two runs compared in the trajectory view: who they are (result, agent, time) side by side, then
// every step aligned by position, the rows that differ marked and the first divergence highlighted;
// the page opens scrolled to it, and a button jumps back to it. Text is set with textContent only.
import { codicon, el } from '../shared/dom.ts';
import { button, duration, failureReason, resultIcon, stepStatus, usage, type Post } from './parts.ts';
import type { CompareRow, CompareSide, ToWebview, TrajectoryStep } from '../../contracts/trajectoryPage.ts';

type Comparison = Extract<ToWebview, { type: 'compare' }>;
type Side = 'left' | 'right';

const SIDE_NAME: Record<Side, string> = { left: 'A', right: 'B' };

function when(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' });
}

/** "A · agent sdk-demo · 12/11/26, 10:31:02": which run a column is. */
function sideLabel(side: Side, { run }: CompareSide): string {
  return [SIDE_NAME[side], run.agent ? `agent ${run.agent}` : run.protocol, when(run.startedAt)].join(' · ');
}

function summary(side: Side, data: CompareSide, post: Post): HTMLElement {
  const { run, steps } = data;
  const card = el('section', `side side-${side}`);
  const title = el('h2', 'side-title');
  title.append(el('span', 'side-name', SIDE_NAME[side]), resultIcon(run), el('span', '', run.task));
  card.append(title);
  const facts = [
    run.passed ? 'passed' : 'failed',
    run.rewardText,
    `${steps.length} step${steps.length === 1 ? '' : 's'}`,
    duration(run.durationSec),
    run.agent ? `agent ${run.agent}` : run.protocol,
    when(run.startedAt),
  ];
  card.append(el('p', 'facts', facts.join(' · ')));
  if (run.llm) card.append(el('p', 'llm', `Model calls: ${usage(run.llm)}`));
  const reason = failureReason(run, post);
  if (reason) card.append(reason);
  card.append(button('Open run', 'go-to-file', 'Open this run on its own', () => post({ type: 'openRun', side })));
  return card;
}

type Part = CompareRow['parts'][number];

/** Adds `changed` to a part that differs from the other run's, with a title saying so. */
function mark<E extends HTMLElement>(element: E, part: Part, changed: readonly Part[]): E {
  if (changed.includes(part)) {
    element.classList.add('changed');
    element.title = `The ${part === 'status' ? 'outcome' : part} differs from the other run's`;
  }
  return element;
}

function cell(side: Side, step: TrajectoryStep | undefined, post: Post, expanded: boolean, changed: readonly Part[] = []): HTMLElement {
  const box = el('div', `cell cell-${side}`);
  if (!step) {
    box.classList.add('absent');
    box.append(el('p', 'muted', `Run ${SIDE_NAME[side]} had ended.`));
    return box;
  }
  const head = el('div', 'cell-head');
  head.append(el('span', 'cell-step', `Step ${step.step}`));
  if (step.source && step.source !== 'agent') head.append(el('span', 'muted', step.source));
  if (step.subagent) head.append(el('span', 'subagent', `subagent ${step.subagent}`));
  const status = stepStatus(step);
  if (status) head.append(mark(el('span', `cell-status ${step.timedOut || (step.exitCode !== null && step.exitCode !== 0) ? 'failed' : ''}`, status), 'status', changed));
  if (step.durationMs !== null) head.append(el('span', 'muted', `${Math.round(step.durationMs)} ms`));
  box.append(head);
  if (step.llm) box.append(el('p', 'meta llm', `Model calls: ${usage(step.llm)}`));
  if (step.agentText) box.append(mark(el('p', 'agent-text compact', step.agentText), 'message', changed));
  else if (changed.includes('message')) box.append(mark(el('p', 'muted', 'No message in this step.'), 'message', changed));
  if (step.command) {
    const cmd = mark(el('pre', 'command'), 'command', changed);
    cmd.append(el('span', 'prompt', '$ '), el('span', '', step.command));
    box.append(cmd);
  } else box.append(el('p', 'muted', 'No command in this step.'));
  const output = el('details', 'cell-output');
  // An output that differs is shown open: the page does not count what it hides.
  output.open = expanded || changed.includes('output');
  output.append(mark(el('summary', '', step.outputKind === 'output' ? 'Output' : 'What the agent saw'), 'output', changed), mark(el('pre', 'output', step.output === '' ? '(no output)' : step.output), 'output', changed));
  if (step.hasOutputFile) output.append(button('Open full output', 'go-to-file', 'Open this step’s full output read-only', () => post({ type: 'openOutput', step: step.step, side })));
  box.append(output);
  return box;
}

function jumpTo(row: HTMLElement | null): void {
  if (!row) return;
  row.scrollIntoView({ block: 'start' });
  row.focus({ preventScroll: true });
}

export function renderComparison(root: HTMLElement, message: Comparison, post: Post, scroll: { scrollY: number | undefined; save: (scrollY: number) => void }): void {
  const { left, right, rows, firstDivergence, countsWords } = message;
  const page = el('div', 'compare');
  const head = el('header', 'run');
  const title = el('h1', 'title');
  title.append(codicon('codicon-diff'), el('span', '', left.run.task === right.run.task ? `Compare runs of ${left.run.task}` : `Compare ${left.run.task} with ${right.run.task}`));
  head.append(title);
  const sides = el('div', 'sides');
  sides.append(summary('left', left, post), summary('right', right, post));
  head.append(sides);

  const banner = el('div', `divergence-banner ${firstDivergence ? 'diverged' : 'same'}`);
  banner.setAttribute('role', 'status');
  if (firstDivergence) {
    const at = rows[firstDivergence.index];
    const l = left.steps[firstDivergence.index];
    const r = right.steps[firstDivergence.index];
    const where = l && r && l.step !== r.step ? `at step ${l.step} of A and ${r.step} of B` : `at step ${(l ?? r)?.step ?? (at?.index ?? 0) + 1}`;
    const different = rows.filter((row) => row.difference !== null).length;
    banner.append(
      codicon('codicon-git-compare'),
      el('span', 'banner-text', `The runs first diverge ${where}: ${firstDivergence.words}. ${different} of ${rows.length} aligned step${rows.length === 1 ? '' : 's'} differ${countsWords ? ` (${countsWords})` : ''}.`),
      button('Jump to first divergence', 'arrow-down', 'Scroll to the first step where the runs differ', () => jumpTo(document.getElementById('first-divergence')), 'jump-divergence'),
    );
  } else {
    banner.append(
      codicon('codicon-check'),
      el('span', 'banner-text', rows.length === 0 ? 'Neither run has steps: they never diverge.' : `The runs never diverge: the same ${rows.length} step${rows.length === 1 ? '' : 's'}, with the same commands, outcomes, outputs and messages.`),
    );
  }
  head.append(banner);
  page.append(head);

  const columns = el('div', 'columns');
  columns.append(el('span', 'gutter', '#'), el('span', 'column-title', sideLabel('left', left)), el('span', 'column-title', sideLabel('right', right)));
  page.append(columns);

  const list = el('div', 'rows');
  list.setAttribute('role', 'list');
  for (const row of rows) {
    const first = firstDivergence?.index === row.index;
    const line = el('div', `row${row.difference ? ' differs' : ''}${first ? ' divergence' : ''}`);
    line.setAttribute('role', 'listitem');
    line.tabIndex = -1;
    if (first) line.id = 'first-divergence';
    if (row.difference) line.append(el('p', 'row-difference', `${first ? 'First divergence: ' : 'Differs: '}${row.difference}`));
    const pair = el('div', 'pair');
    const gutter = el('span', 'gutter', String(row.index + 1));
    if (row.difference) gutter.title = row.difference;
    pair.append(gutter, cell('left', left.steps[row.index], post, first, row.parts), cell('right', right.steps[row.index], post, first, row.parts));
    line.append(pair);
    list.append(line);
  }
  page.append(list);
  root.replaceChildren(page);
  document.body.classList.add('comparing');

  // A reload (the panel hidden and shown) keeps where the person had scrolled; the first load opens at the divergence.
  if (scroll.scrollY !== undefined) window.scrollTo(0, scroll.scrollY);
  else {
    // Scrolled to only when it is not already in full view under the two runs' summaries.
    const first = document.getElementById('first-divergence');
    if (first && first.getBoundingClientRect().bottom > window.innerHeight) jumpTo(first);
    else first?.focus({ preventScroll: true });
  }
  let pending = false;
  window.onscroll = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      scroll.save(window.scrollY);
    });
  };
}
