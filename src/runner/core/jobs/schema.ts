// job.json: what a job is (its settings, every trial) and what it found (per task and in total).
// Versioned: a reader refuses a version it does not know rather than misreading it. The summary
// is recomputed from the trials on every write, so the trials are the truth and a resumed job
// never double-counts.
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import * as z from 'zod';
import { writeFileAtomic } from '../../../shared/atomic.ts';

export const JOB_FILE = 'job.json';
export const JOB_LOCK_FILE = 'job.lock';
/** Where the partial folders of trials cut short (a killed or stopped job) are moved on resume. */
export const INTERRUPTED_DIR = '.interrupted';
export const JOB_SCHEMA_VERSION = 1;

// A run's use of models through the gateway: result.json's optional `llm`, one schema for both files.
import { LlmUsageSchema, type LlmUsage } from '../records/records.ts';
import { SignalSchema } from '../records/signals.ts';

export { LlmUsageSchema, type LlmUsage };

export const JobTaskRefSchema = z.object({
  /** The task's folder, absolute: two tasks with the same name in different folders stay apart. */
  key: z.string(),
  name: z.string(),
});
export type JobTaskRef = z.infer<typeof JobTaskRefSchema>;

export const JobSettingsSchema = z.object({
  /** The agent's command line (or its name when started by name in the editor). */
  agent: z.string(),
  agent_name: z.string().optional(),
  protocol: z.string(),
  backend: z.string(),
  attempts: z.number().int().min(1),
  tasks: z.array(JobTaskRefSchema),
  /** Whatever else the runs need to be repeated the same way (limits, agent folder, names of variables; never their values). */
  options: z.record(z.string(), z.unknown()).default({}),
});
export type JobSettings = z.infer<typeof JobSettingsSchema>;

export const TRIAL_STATUSES = ['pending', 'running', 'finished'] as const;
export type TrialStatus = (typeof TRIAL_STATUSES)[number];

export const TrialSchema = z.object({
  trial_id: z.string(),
  task_key: z.string(),
  task_name: z.string(),
  /** 1..attempts. */
  attempt: z.number().int().min(1),
  status: z.enum(TRIAL_STATUSES),
  /** The run folder's name (inside the job folder), once started. */
  run_id: z.string().nullable(),
  started_at: z.string().nullable(),
  ended_at: z.string().nullable(),
  passed: z.boolean().nullable(),
  /** null until finished, and when the tests gave several metrics and no single reward (see `metrics`). */
  reward: z.number().nullable(),
  /** Every metric the tests wrote (reward.json), once finished; absent when they wrote no reward file. */
  metrics: z.record(z.string(), z.number()).nullable().optional(),
  duration_sec: z.number().nullable(),
  steps: z.number().nullable(),
  failure_cause: z.string().nullable(),
  llm: LlmUsageSchema.nullable(),
  /** The other machine whose engine ran the trial; absent: this one. */
  host: z.string().optional(),
  /** The run's reward-hacking signals (result.json's `signals`), once finished. */
  signals: z.array(SignalSchema).optional(),
  /** Run folders of this trial cut short by a killed or stopped job, moved to `.interrupted/`. */
  interrupted_runs: z.array(z.string()).default([]),
});
export type Trial = z.infer<typeof TrialSchema>;

const Stats = {
  /** Finished trials (n in pass@k). */
  attempts: z.number(),
  /** Finished trials that passed (c in pass@k). */
  passed: z.number(),
  failed: z.number(),
  /** null until a trial finished. */
  pass_at_1: z.number().nullable(),
  /** pass@k for k = the job's attempts; null until that many trials finished. */
  pass_at_k: z.number().nullable(),
  /** pass@k for every k from 1 to the finished attempts (at most the job's attempts). */
  pass_at: z.record(z.string(), z.number()),
  /** Over the finished trials that gave a single reward; null when none did. */
  mean_reward: z.number().nullable(),
  /** Each metric's mean over the finished trials that wrote it (absent when no trial wrote metrics). */
  mean_metrics: z.record(z.string(), z.number()).optional(),
  mean_duration_sec: z.number().nullable(),
  total_duration_sec: z.number(),
  /** Sums over the trials that reported their models' use; null when none did. */
  llm: LlmUsageSchema.nullable(),
  mean_cost_usd: z.number().nullable(),
};

export const TaskSummarySchema = z.object({ key: z.string(), name: z.string(), planned: z.number(), ...Stats });
export type TaskSummary = z.infer<typeof TaskSummarySchema>;

export const JobTotalsSchema = z.object({
  tasks: z.number(),
  trials: z.number(),
  ...Stats,
});
export type JobTotals = z.infer<typeof JobTotalsSchema>;

export const JOB_STATUSES = ['running', 'finished', 'stopped'] as const;

export const JobRecordSchema = z.object({
  kind: z.literal('belay.job'),
  version: z.literal(JOB_SCHEMA_VERSION),
  job_id: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  ended_at: z.string().nullable(),
  /** `running` in a job.json whose lock holder is dead means the job was killed: resume it. */
  status: z.enum(JOB_STATUSES),
  settings: JobSettingsSchema,
  tasks: z.array(TaskSummarySchema),
  totals: JobTotalsSchema,
  trials: z.array(TrialSchema),
});
export type JobRecord = z.infer<typeof JobRecordSchema>;

export async function readJob(jobDir: string): Promise<JobRecord> {
  const file = path.join(jobDir, JOB_FILE);
  let raw: unknown;
  try {
    raw = JSON.parse(await fs.readFile(file, 'utf8'));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(code === 'ENOENT' ? `${jobDir} is not a job folder (no ${JOB_FILE})` : `${file}: not readable JSON`);
  }
  const version = (raw as { version?: unknown } | null)?.version;
  if (typeof version === 'number' && version !== JOB_SCHEMA_VERSION) throw new Error(`${file}: version ${version} of job.json; this Belay reads version ${JOB_SCHEMA_VERSION}`);
  const parsed = JobRecordSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`${file}: field '${issue.path.join('.')}': ${issue.message}`);
  }
  return parsed.data;
}

/** job.json's text: taken at once, so that a queued write holds the job as it was then. */
export function jobText(job: JobRecord): string {
  return JSON.stringify(job, null, 2) + '\n';
}

export async function writeJob(jobDir: string, job: JobRecord | string): Promise<void> {
  // Atomic (a killed job leaves the old or the new job.json, never a part), not flushed to disk:
  // written twice per trial, and each trial's own records are flushed already.
  await writeFileAtomic(path.join(jobDir, JOB_FILE), typeof job === 'string' ? job : jobText(job), { durable: false });
}
