// The Results view's message protocol, shared by the extension host and the webview app. The app
// says `ready` first (src/webviews/shared/connect.ts); the host answers with the whole state, and sends it
// again whenever a job shown changes. Task and agent names come from files: plain strings here,
// shown with textContent only. The page names cells and jobs by index or by the folder the host
// offered; the host never opens a path the page made up.
import * as z from 'zod';

export const ROW_FILTERS = ['all', 'failed', 'flaky', 'passed', 'unfinished', 'flagged'] as const;
export const ROW_SORTS = ['task', 'failed', 'slowest', 'cost', 'reward'] as const;

export const querySchema = z.object({
  filter: z.enum(ROW_FILTERS),
  sort: z.enum(ROW_SORTS),
  text: z.string().max(200),
});
export type Query = z.infer<typeof querySchema>;

const gradeSchema = z.object({ reward: z.number().nullable(), passed: z.boolean() });

/** How a regrade changed a trial's grade (a score: the reward, or the pass as 1 or 0); `skipped`: not regraded. */
export const REGRADE_CHANGES = ['up', 'down', 'same', 'skipped'] as const;

/** A trial's grade in the job's latest regrade, beside the one recorded. */
export const cellRegradeSchema = z.object({
  change: z.enum(REGRADE_CHANGES),
  before: gradeSchema,
  after: gradeSchema.nullable(),
  /** Why it was not regraded (one line), for `skipped`. */
  reason: z.string().nullable(),
});
export type CellRegrade = z.infer<typeof cellRegradeSchema>;

/** The job's latest regrade, above the matrix. */
export const regradeSchema = z.object({
  /** When it ran (ISO 8601), null when only problems were found. */
  at: z.string().nullable(),
  /** Harbor's summary line: "2 changed (0 up, 2 down), mean 1.000 → 0.000". */
  summary: z.string(),
  /** Whether the cells show it (else the recorded results alone). */
  shown: z.boolean(),
  /** What could not be read, one line each. */
  problems: z.array(z.string()),
});
export type Regrade = z.infer<typeof regradeSchema>;

export const cellSchema = z.object({
  result: z.enum(['passed', 'failed', 'mixed', 'running', 'pending']),
  trials: z.number(),
  finished: z.number(),
  passed: z.number(),
  /** null when no trial gave a single reward (several metrics, none named: see `metrics`). */
  reward: z.number().nullable(),
  /** Each metric's mean, when the tests wrote metrics. */
  metrics: z.record(z.string(), z.number()).nullable(),
  steps: z.number().nullable(),
  durationSec: z.number().nullable(),
  costUsd: z.number().nullable(),
  failureCause: z.string().nullable(),
  /** The other machines whose engines ran the cell's trials (`user@host`); empty when all ran here. */
  hosts: z.array(z.string()),
  /** Whether a click opens something (a run, or a Harbor trial's trajectory). */
  opens: z.boolean(),
  /** Reward-hacking signals of the cell's trials, one line each ("read the tests: cat /tests/x"); empty when none. */
  signals: z.array(z.string()).default([]),
  /** The trial's grade in the job's latest regrade, when it is shown (a cell of one trial). */
  regrade: cellRegradeSchema.nullable().default(null),
});
export type Cell = z.infer<typeof cellSchema>;

export const rowSchema = z.object({
  task: z.string(),
  flaky: z.boolean(),
  /** Some trial of the row has reward-hacking signals. */
  flagged: z.boolean().default(false),
  finished: z.number(),
  passed: z.number(),
  cells: z.array(cellSchema.nullable()),
});
export type Row = z.infer<typeof rowSchema>;

const scoreSchema = z.object({ k: z.number(), passAt1: z.number().nullable(), passAtK: z.number().nullable() });

export const columnSchema = z.object({
  label: z.string(),
  detail: z.string(),
  score: scoreSchema.nullable(),
});
export type Column = z.infer<typeof columnSchema>;

export const jobChoiceSchema = z.object({
  dir: z.string(),
  label: z.string(),
  /** "belay" or "harbor", status, agent: one line under the label. */
  detail: z.string(),
});
export type JobChoice = z.infer<typeof jobChoiceSchema>;

/** How a task changed from one job to the other, in the order tasks are listed: changed ones first. */
export const CHANGE_KINDS = ['broken', 'fixed', 'reward', 'added', 'removed', 'same'] as const;
const outcome = z.enum(['passed', 'failed', 'flaky', 'missing']);

export const comparisonSchema = z.object({
  before: z.string(),
  after: z.string(),
  counts: z.record(z.enum(CHANGE_KINDS), z.number()),
  tasks: z.array(
    z.object({
      task: z.string(),
      kind: z.enum(CHANGE_KINDS),
      before: outcome,
      after: outcome,
      passRateBefore: z.number().nullable(),
      passRateAfter: z.number().nullable(),
      rewardBefore: z.number().nullable(),
      rewardAfter: z.number().nullable(),
      canCompare: z.boolean(),
    }),
  ),
});
export type Comparison = z.infer<typeof comparisonSchema>;

export const stateSchema = z.object({
  type: z.literal('state'),
  jobs: z.array(jobChoiceSchema),
  /** The job folders shown; empty when there is no job, every job's folder for "all jobs". */
  shown: z.array(z.string()),
  all: z.boolean(),
  compareWith: z.string().nullable(),
  /** The jobs' names, status and progress, one line. */
  summary: z.string(),
  /** Per agent: pass@1 / pass@k (and the job it ran in). */
  scores: z.array(z.object({ agent: z.string(), job: z.string(), ...scoreSchema.shape })),
  mode: z.enum(['attempts', 'agents']),
  columns: z.array(columnSchema),
  rows: z.array(rowSchema),
  /** Rows to show, in order (indices into rows). */
  order: z.array(z.number()),
  query: querySchema,
  comparison: comparisonSchema.nullable(),
  /** The job's latest regrade (one Belay job shown), else null. */
  regrade: regradeSchema.nullable().default(null),
  /** Said instead of the matrix (no job yet, a job that cannot be read). */
  notice: z.string().nullable(),
});
export type State = z.infer<typeof stateSchema>;

export const toWebviewSchema = z.discriminatedUnion('type', [
  stateSchema,
  z.object({ type: z.literal('order'), order: z.array(z.number()), query: querySchema }),
]);
export type ToWebview = z.infer<typeof toWebviewSchema>;

export const toHostSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready') }),
  /** Show these job folders (from `jobs`), or every job (`all`). */
  z.object({ type: z.literal('show'), jobs: z.array(z.string()).max(1000), all: z.boolean() }),
  z.object({ type: z.literal('compareWith'), job: z.string().nullable() }),
  z.object({ type: z.literal('query'), query: querySchema }),
  /** Open the trial of a cell: the row's index in `rows`, the column's in `columns`. */
  z.object({ type: z.literal('open'), row: z.number().int().min(0), column: z.number().int().min(0) }),
  /** Compare the two runs of the comparison's task at this index. */
  z.object({ type: z.literal('compareRuns'), task: z.number().int().min(0) }),
  /** Show the latest regrade beside the recorded results, or the recorded results alone. */
  z.object({ type: z.literal('showRegrade'), show: z.boolean() }),
  z.object({ type: z.literal('command'), command: z.enum(['runJob', 'resumeJob', 'openJobFolder', 'openJobFile', 'regradeJob']) }),
]);
export type ToHost = z.infer<typeof toHostSchema>;
