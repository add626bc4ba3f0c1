// The trajectory view app (runs in the webview, never imports host code): steps through a run
// with previous / next / jump, leading with why it failed; or two runs compared (compare.ts).
// Text is set with textContent only: nothing an agent wrote is ever parsed as HTML.
import { connect } from '../shared/connect.ts';
import { el } from '../shared/dom.ts';
import { renderComparison } from './compare.ts';
import { button, duration, failureReason, resultIcon, stepStatus, usage } from './parts.ts';
import { toWebviewSchema, type RunSummary, type ToHost, type ToWebview, type TrajectoryStep } from '../../contracts/trajectoryPage.ts';
import './style.css';

/** Kept while the page is hidden and reloaded: the step shown, or how far a comparison was scrolled. */
interface Saved {
  current?: number;
  scrollY?: number;
}
const host = connect<ToHost, ToWebview, Saved>('trajectory', toWebviewSchema, receive);
let steps: TrajectoryStep[] = [];
let current = 0;

function header(run: RunSummary): HTMLElement {
  const head = el('header', 'run');
  const title = el('h1', 'title');
  title.append(resultIcon(run), el('span', '', `${run.task}`));
  head.append(title);
  const reason = failureReason(run, (message) => host.post(message));
  if (reason) head.append(reason);
  const facts = [
    run.passed ? 'passed' : `failed: ${run.failureCause ?? 'unknown'}`,
    run.rewardText,
    `${steps.length} step${steps.length === 1 ? '' : 's'}`,
    duration(run.durationSec),
    run.agent ? `agent ${run.agent}` : run.protocol,
    run.backend,
  ];
  head.append(el('p', 'facts', facts.join(' · ')));
  if (run.llm && run.llm.requests > 0) head.append(el('p', 'llm', `Model calls: ${usage(run.llm)}`));
  if (run.skippedEntries > 0) head.append(el('p', 'warning', `${run.skippedEntries} malformed step(s) in trajectory.json were skipped.`));
  const links = el('div', 'links');
  if (run.kind === 'atif') {
    links.append(
      button('trajectory.json', 'json', 'Open the ATIF file', () => host.post({ type: 'openFile', file: 'trajectory' })),
      button('result.json', 'json', 'Open the trial’s result.json', () => host.post({ type: 'openFile', file: 'result' })),
    );
    head.append(links);
    return head;
  }
  links.append(
    button('result.json', 'json', 'Open result.json', () => host.post({ type: 'openFile', file: 'result' })),
    button('Test output', 'output', 'Open the tests’ output', () => host.post({ type: 'openFile', file: 'testOutput' })),
    button('Agent log', 'debug-console', 'Open the agent’s stderr', () => host.post({ type: 'openFile', file: 'agentLog' })),
    button('Repeat', 'debug-rerun', 'Run this task again with the same agent', () => host.post({ type: 'repeat' })),
  );
  head.append(links);
  return head;
}

function stepper(): HTMLElement {
  const nav = el('nav', 'stepper');
  nav.setAttribute('aria-label', 'Steps');
  nav.append(button('Previous', 'arrow-left', 'Previous step (←)', () => show(current - 1), 'previous'));
  const select = el('select', 'jump');
  select.id = 'jump';
  select.title = 'Jump to a step';
  select.setAttribute('aria-label', 'Jump to a step');
  steps.forEach((s, index) => {
    const option = el('option', '', `Step ${s.step}${stepWho(s) ? ` (${stepWho(s)})` : ''}${s.command ? `: ${s.command.replace(/\s+/g, ' ').slice(0, 60)}` : ''}`);
    option.value = String(index);
    select.append(option);
  });
  select.addEventListener('change', () => show(Number(select.value)));
  nav.append(select);
  nav.append(button('Next', 'arrow-right', 'Next step (→)', () => show(current + 1), 'next'));
  const position = el('span', 'position', '');
  // Said when it changes: a keyboard's ← and → move through the steps without moving the focus.
  position.setAttribute('aria-live', 'polite');
  nav.append(position);
  return nav;
}

function stepBody(step: TrajectoryStep): HTMLElement {
  const body = el('section', 'step');
  body.setAttribute('aria-live', 'polite');
  body.append(el('h2', 'step-title', `Step ${step.step}`));
  if (step.subagent) body.append(el('p', 'subagent', `Subagent ${step.subagent}`));
  if (step.agentText) {
    body.append(el('h3', 'label', step.source === 'user' ? 'User' : step.source === 'system' ? 'System' : 'Agent'));
    body.append(el('p', 'agent-text', step.agentText));
  }
  body.append(el('h3', 'label', 'Command'));
  if (step.command) {
    const cmd = el('pre', 'command');
    cmd.append(el('span', 'prompt', '$ '), el('span', '', step.command));
    body.append(cmd);
  } else body.append(el('p', 'muted', 'No command in this step.'));
  const status = stepStatus(step);
  const meta = [status, step.cwd && step.command ? `in ${step.cwd}` : '', step.durationMs !== null ? `${Math.round(step.durationMs)} ms` : ''].filter(Boolean).join(' · ');
  if (meta) body.append(el('p', `meta ${step.exitCode !== null && step.exitCode !== 0 ? 'failed' : ''}`, meta));
  if (step.llm && step.llm.requests > 0) body.append(el('p', 'meta llm', `Model calls for this step: ${usage(step.llm)}`));
  body.append(el('h3', 'label', step.outputKind === 'output' ? 'Output' : 'What the agent saw'));
  body.append(el('pre', 'output', step.output === '' ? '(no output)' : step.output));
  if (step.hasOutputFile) body.append(button('Open full output', 'go-to-file', 'Open this step’s full output read-only', () => host.post({ type: 'openOutput', step: step.step })));
  return body;
}

/** A step that is not the top agent's own: "user", "system", or the subagent it belongs to. */
function stepWho(step: TrajectoryStep): string {
  return [step.source && step.source !== 'agent' ? step.source : '', step.subagent ? `subagent ${step.subagent}` : ''].filter(Boolean).join(', ');
}

function show(index: number): void {
  if (steps.length === 0) return;
  current = Math.max(0, Math.min(steps.length - 1, index));
  const holder = document.getElementById('step-holder');
  holder?.replaceChildren(stepBody(steps[current]!));
  const select = document.getElementById('jump') as HTMLSelectElement | null;
  if (select) select.value = String(current);
  const position = document.querySelector('.position');
  if (position) position.textContent = `${current + 1} of ${steps.length}`;
  (document.getElementById('previous') as HTMLButtonElement | null)?.toggleAttribute('disabled', current === 0);
  (document.getElementById('next') as HTMLButtonElement | null)?.toggleAttribute('disabled', current === steps.length - 1);
  host.save({ current });
}

function render(run: RunSummary, focus: number | undefined): void {
  const root = document.getElementById('root');
  if (!root) return;
  const parts: HTMLElement[] = [header(run)];
  if (steps.length === 0) parts.push(el('p', 'muted empty', 'This run has no steps.'));
  else {
    parts.push(stepper());
    const holder = el('div', '');
    holder.id = 'step-holder';
    parts.push(holder);
  }
  if (run.testOutput.trim() !== '') {
    const tests = el('details', 'tests');
    tests.append(el('summary', '', 'Test output'), el('pre', 'output', run.testOutput));
    parts.push(tests);
  }
  root.replaceChildren(...parts);
  const saved = host.saved()?.current;
  const index = focus !== undefined ? steps.findIndex((s) => s.step === focus) : (saved ?? 0);
  show(index < 0 ? 0 : index);
}

window.addEventListener('keydown', (event) => {
  if (event.target instanceof HTMLSelectElement) return;
  if (event.key === 'ArrowLeft') show(current - 1);
  else if (event.key === 'ArrowRight') show(current + 1);
  else if (event.key === 'Home') show(0);
  else if (event.key === 'End') show(steps.length - 1);
});

function receive(message: ToWebview): void {
  if (message.type === 'error') {
    document.getElementById('root')?.replaceChildren(el('p', 'cause', message.message));
    return;
  }
  if (message.type === 'compare') {
    steps = [];
    const root = document.getElementById('root');
    if (root) renderComparison(root, message, (m) => host.post(m), { scrollY: host.saved()?.scrollY, save: (scrollY) => host.save({ scrollY }) });
    return;
  }
  steps = message.steps;
  render(message.run, message.focus);
}
