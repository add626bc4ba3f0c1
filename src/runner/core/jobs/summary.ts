// A job's findings recomputed from its trials: per task (kept apart by folder, not by name) and
// for the whole job. A job's pass@k is the mean of its tasks' pass@k, as in the papers and Harbor.
import { addLlmUsage } from '../records/records.ts';
import { passAtK, passAtKs } from './passAtK.ts';
import type { JobSettings, JobTotals, LlmUsage, TaskSummary, Trial } from './schema.ts';

type Stats = Omit<TaskSummary, 'key' | 'name' | 'planned'>;

function mean(values: readonly number[]): number | null {
  return values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length;
}

function sumLlm(trials: readonly Trial[]): LlmUsage | null {
  const reported = trials.map((t) => t.llm).filter((u): u is LlmUsage => u !== null);
  if (reported.length === 0) return null;
  return reported.reduce(addLlmUsage);
}

/** Each metric's mean over the trials that wrote it, or nothing when none wrote any. */
export function meanMetrics(all: readonly (Readonly<Record<string, number>> | null | undefined)[]): { mean_metrics?: Record<string, number> } {
  const sums = new Map<string, { sum: number; n: number }>();
  for (const metrics of all) {
    for (const [name, value] of Object.entries(metrics ?? {})) {
      const entry = sums.get(name) ?? { sum: 0, n: 0 };
      entry.sum += value;
      entry.n++;
      sums.set(name, entry);
    }
  }
  if (sums.size === 0) return {};
  return { mean_metrics: Object.fromEntries([...sums].map(([name, { sum, n }]) => [name, sum / n])) };
}

/** What the finished trials say, apart from pass@k (whose meaning differs per task and per job). */
function trialStats(finished: readonly Trial[]): Omit<Stats, 'pass_at_1' | 'pass_at_k' | 'pass_at'> {
  const durations = finished.map((t) => t.duration_sec ?? 0);
  const llm = sumLlm(finished);
  const costs = finished.flatMap((t) => (t.llm ? [t.llm.cost_usd] : []));
  return {
    attempts: finished.length,
    passed: finished.filter((t) => t.passed).length,
    failed: finished.filter((t) => !t.passed).length,
    // A trial without a single reward (several metrics, none named) counts in its metrics, never as a made-up 0.
    mean_reward: mean(finished.flatMap((t) => (t.reward === null ? [] : [t.reward]))),
    ...meanMetrics(finished.map((t) => t.metrics)),
    mean_duration_sec: mean(durations),
    total_duration_sec: durations.reduce((a, b) => a + b, 0),
    llm,
    mean_cost_usd: mean(costs),
  };
}

export function summarizeJob(settings: JobSettings, trials: readonly Trial[]): { tasks: TaskSummary[]; totals: JobTotals } {
  const k = settings.attempts;
  // Grouped once: a job of a thousand tasks is summarized after every trial.
  const byTask = new Map<string, Trial[]>();
  for (const trial of trials) {
    const list = byTask.get(trial.task_key);
    if (list) list.push(trial);
    else byTask.set(trial.task_key, [trial]);
  }
  const tasks: TaskSummary[] = settings.tasks.map((ref) => {
    const own = byTask.get(ref.key) ?? [];
    const finished = own.filter((t) => t.status === 'finished');
    const { attempts, passed, ...rest } = trialStats(finished);
    const stats = { attempts, passed };
    return {
      key: ref.key,
      name: ref.name,
      planned: own.length,
      attempts: stats.attempts,
      passed: stats.passed,
      pass_at_1: passAtK(stats.attempts, stats.passed, 1) ?? null,
      pass_at_k: passAtK(stats.attempts, stats.passed, k) ?? null,
      pass_at: passAtKs(stats.attempts, stats.passed, k),
      ...rest,
    };
  });
  const passAt: Record<string, number> = {};
  for (let i = 1; i <= k; i++) {
    const value = mean(tasks.flatMap((t) => (t.pass_at[String(i)] !== undefined ? [t.pass_at[String(i)]!] : [])));
    if (value !== null) passAt[String(i)] = value;
  }
  const finished = trials.filter((t) => t.status === 'finished');
  const { attempts, passed, ...rest } = trialStats(finished);
  const totals: JobTotals = {
    tasks: tasks.length,
    trials: trials.length,
    attempts,
    passed,
    pass_at_1: passAt['1'] ?? null,
    // Over the tasks that have all their attempts (a stopped job's others have no pass@k yet).
    pass_at_k: passAt[String(k)] ?? null,
    pass_at: passAt,
    ...rest,
  };
  return { tasks, totals };
}
