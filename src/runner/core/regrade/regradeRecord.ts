// What a regrade leaves and how its change is counted, apart from the running of it (regrade.ts),
// so that the Results view reads and sums a regrade without loading backends or verifiers.
// Per run: <run>/regrade/<stamp>/verification.json (RegradeRecordSchema); per job, the latest
// regrade's report, <job>/regrade.json (JobRegradeSchema), rewritten at the end of each regrade:
// the trials it could not regrade and why, and a file whose change the Results view watches.
import * as z from 'zod';
import { VerificationSchema } from '../records/records.ts';

/** Inside a run folder: one folder per regrade, named by its stamp. */
export const REGRADE_DIR = 'regrade';
export const REGRADE_FILE = 'verification.json';
/** Inside a job folder: the latest regrade's report. */
export const JOB_REGRADE_FILE = 'regrade.json';

/** A regrade's folder name: its time, `20260105T100000.123Z` (sorts as time does). */
export const REGRADE_STAMP = /^\d{8}T\d{6}(\.\d{1,9})?Z$/;

export function regradeStamp(at: Date): string {
  return at.toISOString().replace(/[-:]/g, '');
}

/** A stamp's time as ISO 8601 (`2026-01-05T10:00:00.123Z`), or null for a name that is not one. */
export function stampTime(stamp: string): string | null {
  if (!REGRADE_STAMP.test(stamp)) return null;
  const iso = `${stamp.slice(0, 4)}-${stamp.slice(4, 6)}-${stamp.slice(6, 11)}:${stamp.slice(11, 13)}:${stamp.slice(13)}`;
  return Number.isNaN(Date.parse(iso)) ? null : iso;
}

const GradeSchema = z.object({ reward: z.number().nullable(), passed: z.boolean() });
export type Grade = z.infer<typeof GradeSchema>;

export const RegradeRecordSchema = z.object({
  kind: z.literal('belay.regrade'),
  regraded_at: z.string(),
  run_id: z.string(),
  task_name: z.string(),
  task_dir: z.string(),
  backend: z.string(),
  before: GradeSchema,
  after: GradeSchema,
  verification: VerificationSchema,
});
export type RegradeRecord = z.infer<typeof RegradeRecordSchema>;

/** The job's latest regrade as `<job>/regrade.json` keeps it (more fields may be there: the whole report). */
export const JobRegradeSchema = z.object({
  kind: z.literal('belay.job-regrade'),
  stamp: z.string().regex(REGRADE_STAMP),
  regraded_at: z.string(),
  trials: z
    .array(
      z.object({
        task_name: z.string(),
        attempt: z.number(),
        run_id: z.string(),
        before: GradeSchema,
        after: GradeSchema.optional(),
        skipped: z.string().optional(),
      }),
    )
    .max(100_000),
});
export type JobRegrade = z.infer<typeof JobRegradeSchema>;

/** A grade as one number: the reward, or the pass where the tests gave no single reward. */
export function score(grade: Grade): number {
  return grade.reward ?? (grade.passed ? 1 : 0);
}

export type RegradeChange = 'up' | 'down' | 'same';

export function changeOf(before: Grade, after: Grade): RegradeChange {
  const d = score(after) - score(before);
  return d > 0 ? 'up' : d < 0 ? 'down' : 'same';
}

export interface RegradeTally {
  changed: number;
  up: number;
  down: number;
  /** Means over the trials regraded (a trial with no single reward counts its pass as 1 or 0). */
  mean_before: number | null;
  mean_after: number | null;
  /** Trials the regrade could not grade. */
  skipped: number;
}

/** Harbor's counts over a regrade's trials (those without `after` were not regraded). */
export function tally(trials: readonly { before: Grade; after?: Grade | undefined }[]): RegradeTally {
  const regraded = trials.flatMap((t) => (t.after ? [{ before: t.before, after: t.after }] : []));
  const up = regraded.filter((t) => changeOf(t.before, t.after) === 'up').length;
  const down = regraded.filter((t) => changeOf(t.before, t.after) === 'down').length;
  const mean = (values: number[]) => (values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length);
  return {
    changed: up + down,
    up,
    down,
    mean_before: mean(regraded.map((t) => score(t.before))),
    mean_after: mean(regraded.map((t) => score(t.after))),
    skipped: trials.length - regraded.length,
  };
}

/** Harbor's summary line: "1 changed (0 up, 1 down), mean 1.000 → 0.500" (and how many were not regraded). */
export function tallyLine(counts: RegradeTally): string {
  const mean = (value: number | null) => (value === null ? '-' : value.toFixed(3));
  return `${counts.changed} changed (${counts.up} up, ${counts.down} down), mean ${mean(counts.mean_before)} → ${mean(counts.mean_after)}${counts.skipped > 0 ? `; ${counts.skipped} not regraded` : ''}`;
}
