// A job's latest regrade as the Results view shows it: per trial the recorded grade and the new
// one (up, down, the same, or not regraded and why), and Harbor's summary line. Read from the run
// folders (<run>/regrade/<stamp>/verification.json, the newest stamp of any trial) and the job's
// report (<job>/regrade.json, for the trials it could not regrade). Every file is checked before
// it is believed: a link, a huge file, broken JSON or a record of another run is one line in
// `problems`, never a grade. What the files say reaches the page only as text.
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type * as z from 'zod';
import { errorMessage } from '../../../shared/errors.ts';
import {
  changeOf,
  JOB_REGRADE_FILE,
  JobRegradeSchema,
  REGRADE_DIR,
  REGRADE_FILE,
  REGRADE_STAMP,
  RegradeRecordSchema,
  stampTime,
  tally,
  tallyLine,
} from '../regrade/regradeRecord.ts';
import type { CellRegrade } from '../../../contracts/resultsPage.ts';
import type { JobView, TrialView } from './model.ts';

/** Larger than any verification Belay writes (its logs are capped): a bigger file is not read. */
export const MAX_REGRADE_FILE_BYTES = 32 * 1024 * 1024;
/** Problems listed one by one; the rest are counted. */
const MAX_PROBLEMS = 5;

/** One trial in a regrade: its grade before and after, or why it was not regraded. */
export type TrialRegradeMark = CellRegrade;

export interface LatestRegrade {
  /** The regrade's folder name; null when only problems were found. */
  stamp: string | null;
  /** When it ran (ISO 8601). */
  regradedAt: string | null;
  /** By trial id. */
  trials: ReadonlyMap<string, TrialRegradeMark>;
  /** Harbor's summary line over the trials of the regrade: "2 changed (0 up, 2 down), mean 1.000 → 0.000". */
  summary: string;
  /** What could not be read, one line each. */
  problems: string[];
}

/** Files read before, by path: read again only when their size or time changed. */
export type RegradeFileCache = Map<string, { mtimeMs: number; size: number; value: unknown }>;

type Read<T> = { ok: true; value: T } | { ok: false; problem: string };

/** Reads a small regular file as JSON and checks it with `schema`; never follows a link. */
async function readChecked<S extends z.ZodType>(file: string, schema: S, cache?: RegradeFileCache): Promise<Read<z.infer<S>>> {
  const name = path.basename(file);
  let stat;
  try {
    stat = await fs.lstat(file);
  } catch (error) {
    return { ok: false, problem: `${name} cannot be read (${errorMessage(error).split('\n')[0]})` };
  }
  if (!stat.isFile()) return { ok: false, problem: `${name} is not a plain file (${stat.isSymbolicLink() ? 'a link' : 'something else'}): not read` };
  if (stat.size > MAX_REGRADE_FILE_BYTES) return { ok: false, problem: `${name} is larger than ${MAX_REGRADE_FILE_BYTES / 1024 / 1024} MB: not read` };
  const cached = cache?.get(file);
  let data: unknown;
  if (cached && cached.mtimeMs === stat.mtimeMs && cached.size === stat.size) data = cached.value;
  else {
    let text: string;
    try {
      // Opened without following a link made since the check, and read no further than the bound.
      const handle = await fs.open(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
      try {
        const buffer = Buffer.alloc(Math.min(stat.size, MAX_REGRADE_FILE_BYTES) + 1);
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
        if (bytesRead > MAX_REGRADE_FILE_BYTES) return { ok: false, problem: `${name} is larger than ${MAX_REGRADE_FILE_BYTES / 1024 / 1024} MB: not read` };
        text = buffer.subarray(0, bytesRead).toString('utf8');
      } finally {
        await handle.close();
      }
    } catch (error) {
      return { ok: false, problem: `${name} cannot be read (${errorMessage(error).split('\n')[0]})` };
    }
    try {
      data = JSON.parse(text);
    } catch {
      return { ok: false, problem: `${name} is not JSON: not read` };
    }
    cache?.set(file, { mtimeMs: stat.mtimeMs, size: stat.size, value: data });
  }
  const parsed = schema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
    return { ok: false, problem: `${name} is not a regrade record${where}: ${issue?.message ?? 'invalid'}`.slice(0, 300) };
  }
  return { ok: true, value: parsed.data };
}

/** The regrade stamps of one run folder (the folder itself must be a real folder, not a link). */
async function stampsOf(runDir: string): Promise<Read<string[]>> {
  const dir = path.join(runDir, REGRADE_DIR);
  const stat = await fs.lstat(dir).catch(() => undefined);
  if (!stat) return { ok: true, value: [] };
  if (!stat.isDirectory()) return { ok: false, problem: `its ${REGRADE_DIR} folder is not a folder (${stat.isSymbolicLink() ? 'a link' : 'something else'}): not read` };
  const names = await fs.readdir(dir).catch(() => [] as string[]);
  return { ok: true, value: names.filter((n) => REGRADE_STAMP.test(n)) };
}

const who = (trial: TrialView) => `${trial.taskName} (attempt ${trial.attempt})`;

/**
 * The latest regrade of the job `view` shows (a Belay job), or null when it was never regraded.
 * The latest is the newest stamp of any of its runs or of the job's report; its trials are those
 * with a record of that stamp, and those the report says it could not regrade.
 */
export async function readLatestRegrade(view: JobView, cache?: RegradeFileCache): Promise<LatestRegrade | null> {
  const problems: string[] = [];
  const trials = view.trials.filter((t): t is TrialView & { runDir: string } => t.runDir !== null);
  const stamps = new Map<TrialView, string[]>();
  for (const trial of trials) {
    const found = await stampsOf(trial.runDir);
    if (found.ok) stamps.set(trial, found.value);
    else problems.push(`${who(trial)}: ${found.problem}`);
  }
  const reportFile = path.join(view.dir, JOB_REGRADE_FILE);
  const hasReport = await fs.lstat(reportFile).then(
    () => true,
    () => false,
  );
  const report = hasReport ? await readChecked(reportFile, JobRegradeSchema, cache) : undefined;
  if (report && !report.ok) problems.push(`the job's ${report.problem}`);
  const all = [...[...stamps.values()].flat(), ...(report?.ok ? [report.value.stamp] : [])];
  const latest = all.length === 0 ? null : all.reduce((a, b) => (a > b ? a : b));
  if (latest === null) return problems.length === 0 ? null : { stamp: null, regradedAt: null, trials: new Map(), summary: tallyLine(tally([])), problems: shorten(problems) };
  const marks = new Map<string, TrialRegradeMark>();
  for (const trial of trials) {
    if (!stamps.get(trial)?.includes(latest)) continue;
    const read = await readChecked(path.join(trial.runDir, REGRADE_DIR, latest, REGRADE_FILE), RegradeRecordSchema, cache);
    if (!read.ok) {
      problems.push(`${who(trial)}: ${REGRADE_DIR}/${latest}/${read.problem}`);
      continue;
    }
    if (read.value.run_id !== path.basename(trial.runDir)) {
      problems.push(`${who(trial)}: ${REGRADE_DIR}/${latest}/${REGRADE_FILE} is the record of another run: not read`);
      continue;
    }
    const { before, after } = read.value;
    marks.set(trial.trialId, { change: changeOf(before, after), before, after, reason: null });
  }
  const sameRegrade = report?.ok && report.value.stamp === latest ? report.value : undefined;
  for (const entry of sameRegrade?.trials ?? []) {
    if (entry.after || entry.skipped === undefined) continue;
    const trial = trials.find((t) => path.basename(t.runDir) === entry.run_id);
    if (trial && !marks.has(trial.trialId)) marks.set(trial.trialId, { change: 'skipped', before: entry.before, after: null, reason: entry.skipped.split('\n')[0]!.slice(0, 500) });
  }
  const regradedAt = sameRegrade && !Number.isNaN(Date.parse(sameRegrade.regraded_at)) ? new Date(sameRegrade.regraded_at).toISOString() : stampTime(latest);
  return {
    stamp: latest,
    regradedAt,
    trials: marks,
    summary: tallyLine(tally([...marks.values()].map((m) => (m.after ? { before: m.before, after: m.after } : { before: m.before })))),
    problems: shorten(problems),
  };
}

function shorten(problems: string[]): string[] {
  return problems.length <= MAX_PROBLEMS ? problems : [...problems.slice(0, MAX_PROBLEMS), `and ${problems.length - MAX_PROBLEMS} more`];
}

/** The job with each trial's mark of `regrade` beside its recorded grade (the view is not changed). */
export function withRegrade(view: JobView, regrade: LatestRegrade): JobView {
  return { ...view, trials: view.trials.map((t) => ({ ...t, regrade: regrade.trials.get(t.trialId) ?? null })) };
}
