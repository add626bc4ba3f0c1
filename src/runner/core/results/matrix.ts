// The Results view's matrix: tasks down, and across either the attempts of one job's agent or
// one column per agent of every job shown. A cell sums up the trials it holds; a row knows what
// the filters and sorts ask (failed, flaky, slowest, most expensive). Pure, so that the webview
// only draws what it is given. Cells, columns, filters and sorts are the page's
// (src/contracts/resultsPage.ts), with what only the host knows beside them (the trial a cell opens).
import type { Cell, Column, Query, Row, State } from '../../../contracts/resultsPage.ts';
import { meanMetrics } from '../jobs/summary.ts';
import type { AgentScore, JobView, TrialView } from './model.ts';
import { signalLines } from '../records/signals.ts';

export type CellResult = Cell['result'];

/**
 * A cell as the page shows it: means over the finished trials (a single trial's own values), the
 * reward over those that gave one, each metric's mean over those that wrote it, the cost summed.
 */
export type MatrixCell = Omit<Cell, 'opens'> & {
  /** The trial a click opens: the first failed one (what people chase), else the first finished, else the running one. */
  open: TrialView | null;
};

/** A column as the page shows it (`detail`: the job and agent under the label), and what it holds. */
export type MatrixColumn = Omit<Column, 'score'> & {
  agent: string;
  jobId: string;
  attempt: number | null;
  score: AgentScore | null;
};

/** A row as the page shows it (`flaky`: some attempts passed and some failed), with what the filters and sorts ask. */
export type MatrixRow = Omit<Row, 'cells'> & {
  key: string;
  cells: (MatrixCell | null)[];
  trials: number;
  failed: number;
  running: number;
  meanReward: number | null;
  /** The slowest finished trial's time. */
  maxDurationSec: number | null;
  /** Summed over the finished trials that reported it. */
  costUsd: number | null;
};

export interface Matrix {
  mode: State['mode'];
  columns: MatrixColumn[];
  rows: MatrixRow[];
}

function mean(values: readonly number[]): number | null {
  return values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length;
}

function sumOrNull(values: readonly (number | null)[]): number | null {
  const present = values.filter((v): v is number => v !== null);
  return present.length === 0 ? null : present.reduce((a, b) => a + b, 0);
}

function maxOrNull(values: readonly (number | null)[]): number | null {
  const present = values.filter((v): v is number => v !== null);
  return present.length === 0 ? null : Math.max(...present);
}

/** The mean reward of the trials that gave one: a trial with metrics and no single reward is not a 0. */
function meanReward(finished: readonly TrialView[]): number | null {
  return mean(finished.flatMap((t) => (t.reward === null ? [] : [t.reward])));
}

export function cellOf(trials: readonly TrialView[]): MatrixCell {
  const finished = trials.filter((t) => t.state === 'finished');
  const passed = finished.filter((t) => t.passed === true).length;
  const running = trials.some((t) => t.state === 'running');
  const result: CellResult =
    finished.length === 0 ? (running ? 'running' : 'pending') : passed === finished.length ? 'passed' : passed === 0 ? 'failed' : 'mixed';
  const failedTrial = finished.find((t) => t.passed !== true);
  return {
    result: running && finished.length > 0 && result !== 'mixed' ? 'running' : result,
    trials: trials.length,
    finished: finished.length,
    passed,
    reward: meanReward(finished),
    metrics: meanMetrics(finished.map((t) => t.metrics)).mean_metrics ?? null,
    steps: mean(finished.flatMap((t) => (t.steps === null ? [] : [t.steps]))),
    durationSec: mean(finished.flatMap((t) => (t.durationSec === null ? [] : [t.durationSec]))),
    costUsd: sumOrNull(finished.map((t) => t.costUsd)),
    failureCause: failedTrial?.failureCause ?? null,
    hosts: [...new Set(trials.flatMap((t) => (t.host ? [t.host] : [])))],
    signals: [...new Set(trials.flatMap((t) => signalLines(t.signals)))].slice(0, 20),
    // A regrade is shown per trial: in a cell of one.
    regrade: trials.length === 1 ? (trials[0]!.regrade ?? null) : null,
    open: failedTrial ?? finished[0] ?? trials.find((t) => t.state === 'running') ?? null,
  };
}

/** Some attempts passed and some failed. */
function isFlaky(trials: readonly TrialView[]): boolean {
  const finished = trials.filter((t) => t.state === 'finished');
  const passed = finished.filter((t) => t.passed === true).length;
  return passed > 0 && passed < finished.length;
}

/**
 * A row of `trials`; `groups` are its trials by agent (and job): flaky means within one agent's
 * attempts, never a task one agent passes and another fails.
 */
function rowOf(key: string, task: string, cells: (MatrixCell | null)[], trials: readonly TrialView[], groups: readonly (readonly TrialView[])[]): MatrixRow {
  const finished = trials.filter((t) => t.state === 'finished');
  const passed = finished.filter((t) => t.passed === true).length;
  return {
    key,
    task,
    cells,
    trials: trials.length,
    finished: finished.length,
    passed,
    failed: finished.length - passed,
    running: trials.filter((t) => t.state === 'running').length,
    flaky: groups.some(isFlaky),
    flagged: trials.some((t) => t.signals.length > 0),
    meanReward: meanReward(finished),
    maxDurationSec: maxOrNull(finished.map((t) => t.durationSec)),
    costUsd: sumOrNull(finished.map((t) => t.costUsd)),
  };
}

/**
 * The matrix of `jobs`: one job of one agent is shown by attempt (a cell per trial); several jobs
 * or agents by agent (a cell per task and column, summing its attempts). Tasks are rows in the
 * order they first appear; across jobs a task is matched by name (folders differ between machines
 * and Harbor names tasks only).
 */
export function buildMatrix(jobs: readonly JobView[]): Matrix {
  const agentsOf = (job: JobView) => [...new Set(job.trials.map((t) => t.agent))];
  const single = jobs.length === 1 && agentsOf(jobs[0]!).length <= 1;
  if (single) {
    const job = jobs[0]!;
    const byTask = group(job.trials, (t) => t.taskKey);
    const columns: MatrixColumn[] = Array.from({ length: job.attempts }, (_, i) => ({
      label: `Attempt ${i + 1}`,
      detail: job.label,
      agent: job.scores[0]?.agent ?? '',
      jobId: job.id,
      attempt: i + 1,
      score: null,
    }));
    const rows = [...byTask].map(([key, trials]) => {
      const cells = columns.map((c) => {
        const own = trials.filter((t) => t.attempt === c.attempt);
        return own.length === 0 ? null : cellOf(own);
      });
      return rowOf(key, trials[0]!.taskName, cells, trials, [trials]);
    });
    return { mode: 'attempts', columns, rows };
  }
  const columns: MatrixColumn[] = [];
  const cellTrials: TrialView[][][] = [];
  const rowIndex = new Map<string, number>();
  const rowNames: string[] = [];
  const rowTrials: TrialView[][] = [];
  for (const job of jobs) {
    for (const agent of agentsOf(job)) {
      const column = columns.length;
      columns.push({ label: agent, detail: job.label, agent, jobId: job.id, attempt: null, score: job.scores.find((s) => s.agent === agent) ?? null });
      for (const trial of job.trials) {
        if (trial.agent !== agent) continue;
        let row = rowIndex.get(trial.taskName);
        if (row === undefined) {
          row = rowNames.length;
          rowIndex.set(trial.taskName, row);
          rowNames.push(trial.taskName);
          rowTrials.push([]);
          cellTrials.push([]);
        }
        rowTrials[row]!.push(trial);
        ((cellTrials[row]![column] ??= []) as TrialView[]).push(trial);
      }
    }
  }
  const rows = rowNames.map((name, r) =>
    rowOf(
      name,
      name,
      columns.map((_, c) => {
        const own = cellTrials[r]![c];
        return own && own.length > 0 ? cellOf(own) : null;
      }),
      rowTrials[r]!,
      cellTrials[r]!.filter((g) => g !== undefined),
    ),
  );
  return { mode: 'agents', columns, rows };
}

function group<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const map = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = map.get(k);
    if (list) list.push(item);
    else map.set(k, [item]);
  }
  return map;
}

export type RowFilter = Query['filter'];
export type RowSort = Query['sort'];

/** The page's query; `text`, part of a task's name in any case, may be left out for all. */
export type RowQuery = Omit<Query, 'text'> & { text?: string };

const FILTERS: Record<RowFilter, (row: MatrixRow) => boolean> = {
  all: () => true,
  failed: (r) => r.failed > 0,
  flaky: (r) => r.flaky,
  passed: (r) => r.finished > 0 && r.failed === 0,
  unfinished: (r) => r.finished < r.trials,
  flagged: (r) => r.flagged,
};

/** Descending, missing values last. */
function byDesc(value: (row: MatrixRow) => number | null): (a: MatrixRow, b: MatrixRow) => number {
  return (a, b) => {
    const x = value(a);
    const y = value(b);
    if (x === y) return 0;
    if (x === null) return 1;
    if (y === null) return -1;
    return y - x;
  };
}

const SORTS: Record<RowSort, (a: MatrixRow, b: MatrixRow) => number> = {
  task: () => 0,
  // Most failed first: the share of failed attempts, then their number.
  failed: (a, b) => b.failed / Math.max(1, b.finished) - a.failed / Math.max(1, a.finished) || b.failed - a.failed,
  slowest: byDesc((r) => r.maxDurationSec),
  cost: byDesc((r) => r.costUsd),
  // Lowest reward first (the tasks that need looking at).
  reward: byDesc((r) => (r.meanReward === null ? null : -r.meanReward)),
};

/** The rows to show, in order, as indices into `rows` (ties keep the task's name order). */
export function orderRows(rows: readonly MatrixRow[], query: RowQuery): number[] {
  const text = query.text?.trim().toLowerCase() ?? '';
  const keep = FILTERS[query.filter];
  const indices = rows.flatMap((row, i) => (keep(row) && (text === '' || row.task.toLowerCase().includes(text)) ? [i] : []));
  const sort = SORTS[query.sort];
  return indices.sort((a, b) => sort(rows[a]!, rows[b]!) || rows[a]!.task.localeCompare(rows[b]!.task) || a - b);
}
