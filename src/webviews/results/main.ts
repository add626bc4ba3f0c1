// The Results view app (runs in the webview, never imports host code): the matrix of tasks ×
// attempts (one job) or × agents (several jobs), drawn row by row as it scrolls into sight, so a
// job of thousands of trials draws as fast as one of ten; filters and sorts are the host's (it
// answers with the rows' order); a cell opens its trial. Names from files are set as text only.
import { connect } from '../shared/connect.ts';
import { codicon, el } from '../shared/dom.ts';
import { toWebviewSchema, type Cell, type CellRegrade, type Comparison, type Regrade, type State, type ToHost, type ToWebview } from '../../contracts/resultsPage.ts';
import './style.css';

/** A row's height: one line, or two when regrade marks, flags or metrics share the cells (the grade above, the facts and the flag below). */
const ROW_HEIGHT = 30;
const TWO_LINE_ROW_HEIGHT = 44;
/** Rows drawn above and below the visible ones. */
const OVERSCAN = 8;

// Stamped before the message is parsed: the render time measured covers parsing too.
let arrivedAt = 0;
window.addEventListener('message', () => {
  arrivedAt = performance.now();
});
let renders = 0;

interface Saved {
  scrollTop?: number;
}
const host = connect<ToHost, ToWebview, Saved>('results', toWebviewSchema, receive);

let state: State | undefined;
let order: number[] = [];
/** The focused cell: a position in `order` and a column (-1: the task's name). */
let focus = { row: 0, column: 0 };
let viewport: HTMLElement | undefined;
let body: HTMLElement | undefined;
let drawn = { from: -1, to: -1 };
let rowHeight = ROW_HEIGHT;

const percent = (v: number | null) => (v === null ? '–' : `${(v * 100).toFixed(1)}%`);
const reward = (v: number | null) => (v === null ? '–' : (Math.round(v * 100) / 100).toFixed(2));
function seconds(v: number): string {
  return v < 60 ? `${v.toFixed(1)}s` : `${Math.floor(v / 60)}m${String(Math.round(v % 60)).padStart(2, '0')}s`;
}
const usd = (v: number) => `$${v < 1 ? v.toFixed(3) : v.toFixed(2)}`;

const ICONS: Record<Cell['result'], string> = {
  passed: 'codicon-pass passed',
  failed: 'codicon-error failed',
  mixed: 'codicon-warning mixed',
  running: 'codicon-loading codicon-modifier-spin running',
  pending: 'codicon-circle-large-outline pending',
};
const WORDS: Record<Cell['result'], string> = { passed: 'passed', failed: 'failed', mixed: 'some passed', running: 'running', pending: 'not started' };

function select<T extends string>(id: string, label: string, options: readonly (readonly [T, string])[], value: T, onChange: (value: T) => void): HTMLElement {
  const wrap = el('label', 'field');
  wrap.append(el('span', 'field-label', label));
  const s = el('select', 'dropdown');
  s.id = id;
  for (const [v, text] of options) {
    const o = el('option', '', text);
    o.value = v;
    s.append(o);
  }
  s.value = value;
  s.addEventListener('change', () => onChange(s.value as T));
  wrap.append(s);
  return wrap;
}

function button(label: string, icon: string, title: string, onClick: () => void): HTMLButtonElement {
  const b = el('button', 'button');
  b.type = 'button';
  b.title = title;
  b.append(codicon(`codicon-${icon}`), el('span', '', label));
  b.addEventListener('click', onClick);
  return b;
}

function toolbar(s: State): HTMLElement {
  const bar = el('div', 'toolbar');
  const jobOptions: [string, string][] = s.jobs.map((j) => [j.dir, j.label]);
  if (s.jobs.length > 1) jobOptions.push(['*', `All jobs (${s.jobs.length}), by agent`]);
  if (s.jobs.length > 0) {
    bar.append(
      select('job', 'Job', jobOptions, s.all ? '*' : (s.shown[0] ?? ''), (v) => host.post(v === '*' ? { type: 'show', jobs: [], all: true } : { type: 'show', jobs: [v], all: false })),
    );
    const others = s.jobs.filter((j) => !s.shown.includes(j.dir));
    if (!s.all && others.length > 0) {
      bar.append(
        select('compare', 'Compare with', [['', '(none)'], ...others.map((j): [string, string] => [j.dir, j.label])], s.compareWith ?? '', (v) =>
          host.post({ type: 'compareWith', job: v === '' ? null : v }),
        ),
      );
    }
    const query = () => s.query;
    bar.append(
      select('filter', 'Show', [['all', 'All tasks'], ['failed', 'Failed'], ['flaky', 'Flaky'], ['passed', 'Passed'], ['unfinished', 'Unfinished'], ['flagged', 'Flagged (reward hacking)']] as const, s.query.filter, (filter) =>
        host.post({ type: 'query', query: { ...query(), filter } }),
      ),
      select('sort', 'Sort by', [['task', 'Task'], ['failed', 'Most failed'], ['slowest', 'Slowest'], ['cost', 'Most expensive'], ['reward', 'Lowest reward']] as const, s.query.sort, (sort) =>
        host.post({ type: 'query', query: { ...query(), sort } }),
      ),
    );
    const find = el('input', 'find');
    find.id = 'find';
    find.type = 'search';
    find.placeholder = 'Filter tasks by name';
    find.setAttribute('aria-label', 'Filter tasks by name');
    find.value = s.query.text;
    let timer: ReturnType<typeof setTimeout> | undefined;
    find.addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(() => host.post({ type: 'query', query: { ...query(), text: find.value } }), 150);
    });
    bar.append(find);
  }
  const actions = el('div', 'actions');
  actions.append(
    button('Run Job…', 'play', 'Run tasks several times with an agent (Belay: Run Job…)', () => host.post({ type: 'command', command: 'runJob' })),
    button('Resume…', 'debug-continue', 'Go on with a stopped job (Belay: Resume Job…)', () => host.post({ type: 'command', command: 'resumeJob' })),
    button('Open Folder…', 'folder-opened', 'Open a job folder (Belay or Harbor)', () => host.post({ type: 'command', command: 'openJobFolder' })),
  );
  if (s.shown.length === 1 && !s.all) actions.append(button('job.json', 'json', 'Open the job’s own file', () => host.post({ type: 'command', command: 'openJobFile' })));
  if (s.shown.length === 1 && !s.all && s.jobs.find((j) => j.dir === s.shown[0])?.detail === 'Belay job') {
    actions.append(button('Regrade', 'refresh', 'Grade the job’s trials again with each task’s current verifier, on the final states kept (Belay: Regrade Job…)', () => host.post({ type: 'command', command: 'regradeJob' })));
  }
  bar.append(actions);
  return bar;
}

function scores(s: State): HTMLElement {
  const box = el('div', 'scores');
  for (const score of s.scores) {
    const item = el('span', 'score');
    item.append(el('span', 'score-agent', score.agent));
    if (s.scores.length > 1) item.append(el('span', 'muted', ` (${score.job})`));
    item.append(el('span', 'score-value', ` pass@1 ${percent(score.passAt1)}`));
    if (score.k > 1) item.append(el('span', 'score-value', ` · pass@${score.k} ${percent(score.passAtK)}`));
    box.append(item);
  }
  return box;
}

/** A cell's facts in words: "2.5 steps", "1m05s", "$0.012" (steps a mean over attempts). */
function cellFacts(cell: Cell): string[] {
  const facts: string[] = [];
  if (cell.finished === 0) return facts;
  if (cell.steps !== null) {
    const steps = Math.round(cell.steps * 10) / 10;
    facts.push(`${steps} step${steps === 1 ? '' : 's'}`);
  }
  if (cell.durationSec !== null) facts.push(seconds(cell.durationSec));
  if (cell.costUsd !== null) facts.push(usd(cell.costUsd));
  return facts;
}

/**
 * A cell's parts: its grade (icon, passes, reward, the regrade's mark) and its facts (steps, time,
 * cost), then the flag. On one line the facts give way first, cut with an ellipsis; with regrade
 * marks, flags or metrics the facts and the flag take a second line. Whatever is cut is whole in
 * the cell's tooltip and label.
 */
function cellText(cell: Cell, mode: State['mode']): HTMLElement[] {
  const grade = el('span', 'grade');
  grade.append(codicon(ICONS[cell.result]));
  if (cell.finished === 0) {
    grade.append(el('span', 'muted', WORDS[cell.result]));
    return [grade];
  }
  if (mode === 'agents' || cell.trials > 1) grade.append(el('span', 'count', `${cell.passed}/${cell.finished}`));
  grade.append(cell.reward === null && cell.metrics ? el('span', 'reward metrics', metricsText(cell.metrics, true)) : el('span', 'reward', reward(cell.reward)));
  if (cell.regrade) grade.append(regradeMark(cell.regrade));
  const more = el('span', 'more');
  const facts = cellFacts(cell);
  // Apart by an en space, as wide as the gap between the cell's parts: one text, so that an ellipsis can cut it.
  if (facts.length > 0) more.append(el('span', 'facts', facts.join('\u2002')));
  if (cell.signals.length > 0) {
    // The reasons are the agent's commands: set as the title's text, never as markup.
    const badge = el('span', 'badge signals');
    badge.append(el('span', 'mark', '⚑'), el('span', '', ' flagged'));
    badge.firstElementChild!.setAttribute('aria-hidden', 'true');
    badge.title = `Reward-hacking signals:\n${cell.signals.join('\n')}`;
    more.append(badge);
  }
  return more.childElementCount > 0 ? [grade, more] : [grade];
}

/** A grade as the cells say it: the reward, or passed/failed when the tests gave none. */
const gradeText = (g: CellRegrade['before']) => (g.reward === null ? (g.passed ? 'passed' : 'failed') : reward(g.reward));

/** The mark of a change, a sign and words, so that it never rests on colour alone (the sign is a picture: the words say it). */
const CHANGE_MARKS: Record<CellRegrade['change'], readonly [sign: string, words: string]> = { up: ['▲', 'up'], down: ['▼', 'down'], same: ['=', 'same'], skipped: ['', 'not regraded'] };

/** The regrade's grade beside the recorded one: "→ 0.00 ▼ down". */
function regradeMark(r: CellRegrade): HTMLElement {
  const mark = el('span', `regrade ${r.change}`);
  if (r.after) mark.append(el('span', 'regrade-after', `→ ${gradeText(r.after)}`));
  const [sign, words] = CHANGE_MARKS[r.change];
  const change = el('span', 'regrade-change');
  if (sign) {
    const picture = el('span', 'regrade-sign', `${sign} `);
    picture.setAttribute('aria-hidden', 'true');
    change.append(picture);
  }
  change.append(el('span', '', words));
  mark.append(change);
  return mark;
}

/** What a screen reader says of a cell: all the cell shows, in words, the flag's reasons included. */
function cellLabel(task: string, column: string, cell: Cell): string {
  const parts = [`${task}, ${column}: ${WORDS[cell.result]}${cell.finished > 1 ? ` (${cell.passed} of ${cell.finished} passed)` : ''}`];
  if (cell.finished > 0) parts.push(cell.reward === null && cell.metrics ? `metrics ${metricsText(cell.metrics)}` : `reward ${reward(cell.reward)}`);
  if (cell.regrade) parts.push(regradeWords(cell.regrade));
  parts.push(...cellFacts(cell));
  if (cell.signals.length > 0) parts.push(`flagged for reward hacking: ${cell.signals.join('; ')}`);
  return parts.join(', ');
}

/** "regraded: reward 1.00 → 0.00, down", or why it was not regraded. */
function regradeWords(r: CellRegrade): string {
  if (!r.after) return `not regraded${r.reason ? `: ${r.reason}` : ''}`;
  return `regraded: ${gradeText(r.before)} → ${gradeText(r.after)}, ${r.change === 'same' ? 'unchanged' : r.change}`;
}

/** Metrics one by one ("correctness 0 · performance 1"): a cell without a single reward shows these, short. */
function metricsText(metrics: Readonly<Record<string, number>>, short = false): string {
  const value = (v: number) => (short ? String(Math.round(v * 100) / 100) : reward(v));
  return Object.entries(metrics).slice(0, 4).map(([name, v]) => `${name.slice(0, short ? 16 : 24)} ${value(v)}`).join(short ? ' ' : ' · ');
}

function cellTitle(cell: Cell, column: string): string {
  const lines = [`${column}: ${WORDS[cell.result]}${cell.finished > 1 ? ` (${cell.passed} of ${cell.finished} passed)` : ''}`];
  if (cell.finished > 0) lines.push(`reward ${reward(cell.reward)}${cell.finished > 1 ? ' (mean)' : ''}`);
  if (cell.finished > 0 && cell.metrics) lines.push(`metrics: ${metricsText(cell.metrics)}${cell.finished > 1 ? ' (means)' : ''}`);
  const facts = cellFacts(cell);
  if (facts.length > 0) lines.push(`${facts.join(' · ')}${cell.finished > 1 ? ' (means)' : ''}`);
  if (cell.failureCause) lines.push(`cause: ${cell.failureCause}`);
  if (cell.hosts.length > 0) lines.push(`ran on ${cell.hosts.join(', ')}`);
  if (cell.regrade) lines.push(regradeWords(cell.regrade));
  if (cell.signals.length > 0) lines.push(`reward-hacking signals:\n${cell.signals.map((line) => `  ${line}`).join('\n')}`);
  if (cell.opens) lines.push('Enter or click: open the trajectory');
  return lines.join('\n');
}

function rowElement(position: number): HTMLElement {
  const s = state!;
  const index = order[position]!;
  const row = s.rows[index]!;
  const tr = el('div', 'row');
  tr.setAttribute('role', 'row');
  tr.setAttribute('aria-rowindex', String(position + 2));
  tr.style.transform = `translateY(${position * rowHeight}px)`;
  const name = el('div', 'cell task');
  name.setAttribute('role', 'rowheader');
  name.title = row.task;
  name.append(el('span', 'task-name', row.task));
  if (row.flaky) name.append(el('span', 'badge flaky', 'flaky'));
  if (row.flagged) {
    const badge = el('span', 'badge flagged', 'flagged');
    badge.title = 'A trial of this task has reward-hacking signals (its cell says which)';
    name.append(badge);
  }
  tr.append(name);
  row.cells.forEach((cell, column) => {
    const td = el('div', `cell trial ${cell ? cell.result : 'empty'}`);
    td.setAttribute('role', 'gridcell');
    td.dataset.row = String(position);
    td.dataset.column = String(column);
    td.tabIndex = focus.row === position && focus.column === column ? 0 : -1;
    if (cell) {
      td.append(...cellText(cell, s.mode));
      td.title = cellTitle(cell, s.columns[column]!.label);
      td.setAttribute('aria-label', cellLabel(row.task, s.columns[column]!.label, cell));
      if (cell.opens) td.classList.add('opens');
    } else {
      td.append(el('span', 'muted', '–'));
      td.setAttribute('aria-label', `${row.task}, ${s.columns[column]!.label}: no trial`);
    }
    tr.append(td);
  });
  return tr;
}

/** Draws the rows in sight (and a few more); called on scroll and after each state. */
function draw(force = false): void {
  if (!viewport || !body || !state) return;
  const top = viewport.scrollTop;
  const height = viewport.clientHeight || 600;
  const from = Math.max(0, Math.floor(top / rowHeight) - OVERSCAN);
  const to = Math.min(order.length, Math.ceil((top + height) / rowHeight) + OVERSCAN);
  if (!force && from === drawn.from && to === drawn.to) return;
  drawn = { from, to };
  const rows: HTMLElement[] = [];
  for (let p = from; p < to; p++) rows.push(rowElement(p));
  body.replaceChildren(...rows);
}

function header(s: State): HTMLElement {
  const head = el('div', 'row head');
  head.setAttribute('role', 'row');
  head.setAttribute('aria-rowindex', '1');
  const first = el('div', 'cell task');
  first.setAttribute('role', 'columnheader');
  first.append(el('span', '', `Task (${order.length}${order.length !== s.rows.length ? ` of ${s.rows.length}` : ''})`));
  head.append(first);
  for (const c of s.columns) {
    const th = el('div', 'cell');
    th.setAttribute('role', 'columnheader');
    th.title = `${c.label}\n${c.detail}`;
    th.append(el('span', 'column-label', c.label));
    // By agent: the job under the agent's name (the same agent may run in several jobs).
    if (s.mode === 'agents') th.append(el('span', 'column-score column-job', c.detail));
    if (c.score) th.append(el('span', 'column-score', `pass@1 ${percent(c.score.passAt1)}${c.score.k > 1 ? ` · @${c.score.k} ${percent(c.score.passAtK)}` : ''}`));
    head.append(th);
  }
  return head;
}

const CHANGE_WORDS: Record<Comparison['tasks'][number]['kind'], string> = {
  broken: 'got worse',
  fixed: 'got better',
  reward: 'reward changed',
  added: 'only in the second job',
  removed: 'only in the first job',
  same: 'unchanged',
};

function outcomeText(outcome: string, rate: number | null, r: number | null): string {
  if (outcome === 'missing') return '–';
  return `${outcome} (${percent(rate)} passed, reward ${reward(r)})`;
}

function comparison(c: Comparison): HTMLElement {
  const section = el('section', 'comparison');
  section.setAttribute('aria-label', 'Comparison of two jobs');
  section.append(el('h2', '', `${c.before} → ${c.after}`));
  const changed = c.tasks.filter((t) => t.kind !== 'same');
  const counts = (['broken', 'fixed', 'reward', 'added', 'removed'] as const).filter((k) => (c.counts[k] ?? 0) > 0).map((k) => `${c.counts[k]} ${CHANGE_WORDS[k]}`);
  section.append(el('p', 'muted', changed.length === 0 ? `No task changed outcome (${c.counts.same ?? 0} the same).` : `${counts.join(' · ')} · ${c.counts.same ?? 0} unchanged`));
  if (changed.length === 0) return section;
  const table = el('table', 'changes');
  const head = el('tr');
  for (const h of ['Task', 'Change', c.before, c.after, '']) head.append(el('th', '', h));
  table.append(head);
  c.tasks.forEach((t, index) => {
    if (t.kind === 'same') return;
    const tr = el('tr', `change ${t.kind}`);
    tr.append(el('td', 'task-name', t.task));
    const kind = el('td', `kind ${t.kind}`);
    kind.append(codicon(t.kind === 'broken' ? 'codicon-arrow-down failed' : t.kind === 'fixed' ? 'codicon-arrow-up passed' : 'codicon-diff'), el('span', '', CHANGE_WORDS[t.kind]));
    tr.append(kind, el('td', '', outcomeText(t.before, t.passRateBefore, t.rewardBefore)), el('td', '', outcomeText(t.after, t.passRateAfter, t.rewardAfter)));
    const action = el('td');
    if (t.canCompare) action.append(button('Compare runs', 'split-horizontal', `Compare a run of ${t.task} from each job`, () => host.post({ type: 'compareRuns', task: index })));
    tr.append(action);
    table.append(tr);
  });
  section.append(table);
  return section;
}

/** "2026-01-05 10:00:00 UTC" from an ISO time. */
const timeText = (iso: string) => iso.replace('T', ' ').replace(/(\.\d+)?Z$/, ' UTC');

/** The job's latest regrade above the matrix: its time, Harbor's summary line, and the way between it and the recorded results. */
function regradeBanner(r: Regrade): HTMLElement {
  const section = el('section', `regrade-banner${r.shown ? ' shown' : ''}`);
  section.setAttribute('aria-label', 'Latest regrade');
  if (r.at !== null) {
    const line = el('p', 'regrade-summary');
    line.append(codicon('codicon-refresh'), el('span', 'regrade-time', `${r.shown ? 'Regraded' : 'Latest regrade'} ${timeText(r.at)}:`), el('span', 'regrade-counts', r.summary));
    if (!r.shown) line.append(el('span', 'muted', '(the cells show the recorded results)'));
    section.append(line);
    section.append(
      r.shown
        ? button('Show recorded results', 'history', 'Show the results as their runs recorded them, without the regrade', () => host.post({ type: 'showRegrade', show: false }))
        : button('Show regrade', 'diff', 'Show the latest regrade beside the recorded results', () => host.post({ type: 'showRegrade', show: true })),
    );
  }
  for (const problem of r.problems) section.append(el('p', 'regrade-problem', `Regrade: ${problem}`));
  return section;
}

function render(s: State): void {
  const root = document.getElementById('root');
  if (!root) return;
  const parts: HTMLElement[] = [toolbar(s)];
  parts.push(el('p', 'summary', s.summary));
  if (s.scores.length > 0) parts.push(scores(s));
  if (s.regrade) parts.push(regradeBanner(s.regrade));
  if (s.comparison) parts.push(comparison(s.comparison));
  if (s.notice) parts.push(el('p', 'notice', s.notice));
  if (s.columns.length > 0) {
    const grid = el('div', 'grid');
    grid.setAttribute('role', 'grid');
    grid.setAttribute('aria-rowcount', String(order.length + 1));
    grid.setAttribute('aria-colcount', String(s.columns.length + 1));
    grid.setAttribute('aria-label', 'Results: tasks by ' + (s.mode === 'attempts' ? 'attempt' : 'agent'));
    grid.style.setProperty('--columns', String(s.columns.length));
    // Regrade marks, flags and metrics widen a cell past its width on one line: its facts and flag go to a second one.
    const twoLines = s.rows.some((r) => r.cells.some((c) => c && (c.regrade || c.signals.length > 0 || (c.reward === null && c.metrics))));
    rowHeight = twoLines ? TWO_LINE_ROW_HEIGHT : ROW_HEIGHT;
    grid.classList.toggle('two-lines', twoLines);
    grid.style.setProperty('--row-height', `${rowHeight}px`);
    const previous = viewport?.scrollTop ?? host.saved()?.scrollTop ?? 0;
    viewport = grid;
    grid.append(header(s));
    body = el('div', 'body');
    body.style.height = `${order.length * rowHeight}px`;
    grid.append(body);
    if (order.length === 0) grid.append(el('p', 'muted empty', 'No task matches.'));
    grid.addEventListener('scroll', () => {
      draw();
      host.save({ scrollTop: grid.scrollTop });
    });
    grid.addEventListener('keydown', onKey);
    grid.addEventListener('click', (event) => {
      const cell = (event.target as HTMLElement).closest<HTMLElement>('.cell.trial');
      if (!cell) return;
      setFocus(Number(cell.dataset.row), Number(cell.dataset.column));
      open();
    });
    parts.push(grid);
    root.replaceChildren(...parts);
    grid.scrollTop = previous;
    drawn = { from: -1, to: -1 };
    draw(true);
  } else {
    viewport = undefined;
    body = undefined;
    root.replaceChildren(...parts);
  }
}

function open(): void {
  if (!state) return;
  const index = order[focus.row];
  const cell = index === undefined ? undefined : state.rows[index]!.cells[focus.column];
  if (index !== undefined && cell?.opens) host.post({ type: 'open', row: index, column: focus.column });
}

function setFocus(row: number, column: number, moveFocus = false): void {
  if (!state || !viewport) return;
  focus = { row: Math.max(0, Math.min(order.length - 1, row)), column: Math.max(0, Math.min(state.columns.length - 1, column)) };
  // Scrolled into sight under the sticky header.
  const top = focus.row * rowHeight;
  const head = viewport.querySelector<HTMLElement>('.row.head')?.offsetHeight ?? rowHeight;
  if (top < viewport.scrollTop) viewport.scrollTop = top;
  else if (top + rowHeight > viewport.scrollTop + viewport.clientHeight - head) viewport.scrollTop = top + rowHeight + head - viewport.clientHeight;
  draw(true);
  const target = body?.querySelector<HTMLElement>(`.cell.trial[data-row="${focus.row}"][data-column="${focus.column}"]`);
  if (moveFocus) target?.focus();
}

function onKey(event: KeyboardEvent): void {
  if (!state || !viewport) return;
  const page = Math.max(1, Math.floor(viewport.clientHeight / rowHeight) - 2);
  const moves: Record<string, () => [number, number]> = {
    ArrowDown: () => [focus.row + 1, focus.column],
    ArrowUp: () => [focus.row - 1, focus.column],
    ArrowRight: () => [focus.row, focus.column + 1],
    ArrowLeft: () => [focus.row, focus.column - 1],
    PageDown: () => [focus.row + page, focus.column],
    PageUp: () => [focus.row - page, focus.column],
    Home: () => (event.ctrlKey ? [0, 0] : [focus.row, 0]),
    End: () => (event.ctrlKey ? [order.length - 1, state!.columns.length - 1] : [focus.row, state!.columns.length - 1]),
  };
  const move = moves[event.key];
  if (move) {
    event.preventDefault();
    const [r, c] = move();
    setFocus(r, c, true);
  } else if (event.key === 'Enter' || event.key === ' ') {
    event.preventDefault();
    open();
  }
}

/** For the bench and the UI tests: when the last state was drawn and how long it took from its arrival. */
function stamp(): void {
  const started = arrivedAt;
  // Laid out now, painted at the next frame.
  void document.body.offsetHeight;
  requestAnimationFrame(() => {
    renders++;
    document.body.dataset.renderMs = (performance.now() - started).toFixed(1);
    document.body.dataset.renders = String(renders);
  });
}

function receive(message: ToWebview): void {
  if (message.type === 'order') {
    if (!state) return;
    state = { ...state, order: message.order, query: message.query };
  } else state = message;
  order = state.order;
  if (focus.row >= order.length) focus = { row: Math.max(0, order.length - 1), column: focus.column };
  const active = document.activeElement;
  const hadFocus = active instanceof HTMLElement && active.classList.contains('trial');
  // A control of the toolbar keeps the focus (and a text box its selection) across a redraw.
  const control = (active instanceof HTMLInputElement || active instanceof HTMLSelectElement) && active.id ? active : undefined;
  const selection = control instanceof HTMLInputElement ? [control.selectionStart, control.selectionEnd] : undefined;
  render(state);
  if (hadFocus) setFocus(focus.row, focus.column, true);
  if (control) {
    const again = document.getElementById(control.id);
    again?.focus();
    if (again instanceof HTMLInputElement && selection) again.setSelectionRange(selection[0]!, selection[1]!);
  }
  stamp();
}

