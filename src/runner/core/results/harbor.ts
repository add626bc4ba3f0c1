// A Harbor job folder in the Results view. Harbor writes, per job, `config.json` (the job's
// settings: `job_name`, `n_attempts`, `agents`…) and `result.json` (`started_at`, `finished_at`,
// `stats`), and one folder per trial (`<task>__<id>/`) with its own `config.json`, a `result.json`
// once it ended (`task_name`, `trial_name`, `agent_info`, `agent_result` with tokens and
// `cost_usd`, `verifier_result.rewards`, `exception_info`, `started_at`, `finished_at`) and the
// agent's ATIF trajectory in `agent/trajectory.json`. Mapped here to the view's JobView; every
// field is optional on read, a folder that is not a trial is skipped.
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import * as z from 'zod';
import { passAtK } from '../jobs/passAtK.ts';
import type { AgentScore, JobView, TrialView } from './model.ts';
import { atifCommands, parseAtif } from '../records/atifRead.ts';
import { commandsSignals, type Signal } from '../records/signals.ts';

const TRAJECTORY = path.join('agent', 'trajectory.json');
/** ATIF files above this size are not read for their step count (the cell says no steps). */
const MAX_TRAJECTORY_BYTES = 32 * 1024 * 1024;

const loose = <T extends z.ZodRawShape>(shape: T) => z.looseObject(shape).nullish().catch(null);
const text = z.string().nullish().catch(null);
const num = z.number().nullish().catch(null);

const AgentRefSchema = loose({ name: text, model_name: text });
export const HarborTrialConfigSchema = loose({ agent: AgentRefSchema, task: loose({ path: text, name: text }), trial_name: text });
export const HarborTrialResultSchema = loose({
  task_name: text,
  trial_name: text,
  agent_info: loose({ name: text, version: text, model_info: loose({ name: text, provider: text }) }),
  agent_result: loose({ n_input_tokens: num, n_cache_tokens: num, n_output_tokens: num, cost_usd: num }),
  verifier_result: loose({ rewards: z.record(z.string(), z.number().nullable()).nullish().catch(null) }),
  exception_info: loose({ exception_type: text, exception_message: text }),
  started_at: text,
  finished_at: text,
  config: HarborTrialConfigSchema,
});
export const HarborJobConfigSchema = loose({ job_name: text, n_attempts: num });
export const HarborJobResultSchema = loose({ id: text, started_at: text, finished_at: text });
const AtifSchema = loose({
  steps: z.array(loose({ source: text })).nullish().catch(null),
  final_metrics: loose({ total_steps: num }),
});

type TrialResult = NonNullable<z.infer<typeof HarborTrialResultSchema>>;
type TrialConfig = NonNullable<z.infer<typeof HarborTrialConfigSchema>>;

/** One trial folder as read: either JSON file may be missing (a trial still running has no result). */
export interface HarborTrialFiles {
  dir: string;
  config: unknown;
  result: unknown;
  /** The ATIF trajectory's steps, when it was read. */
  trajectory: unknown;
  hasTrajectory: boolean;
}

function agentOf(result: TrialResult | null, config: TrialConfig | null): string {
  const name = result?.agent_info?.name ?? config?.agent?.name ?? result?.config?.agent?.name ?? 'agent';
  // The model as the job named it (what a running trial's config says too), else as the agent reported it.
  const model = config?.agent?.model_name ?? result?.config?.agent?.model_name ?? result?.agent_info?.model_info?.name;
  return model ? `${name} (${model})` : name;
}

/**
 * What Harbor's verifier gave, by Belay's reward rule (verify.ts `ruleOfRewards`): `reward` when
 * named so, else the only metric; several metrics and none named give no single reward (never
 * their mean) and pass only when every one is at 1. No metric: no reward, no pass.
 */
export function harborReward(rewards: Record<string, number | null> | null | undefined): { reward: number | null; metrics: Record<string, number> | null; passed: boolean } {
  const metrics = Object.fromEntries(Object.entries(rewards ?? {}).filter((entry): entry is [string, number] => typeof entry[1] === 'number' && Number.isFinite(entry[1])));
  const names = Object.keys(metrics);
  if (names.length === 0) return { reward: null, metrics: null, passed: false };
  const single = Object.hasOwn(metrics, 'reward') ? metrics.reward! : names.length === 1 ? metrics[names[0]!]! : null;
  return { reward: single, metrics, passed: single !== null ? single >= 1 : names.every((name) => metrics[name]! >= 1) };
}

function seconds(from: string | null | undefined, to: string | null | undefined): number | null {
  if (!from || !to) return null;
  const ms = Date.parse(to) - Date.parse(from);
  return Number.isFinite(ms) && ms >= 0 ? ms / 1000 : null;
}

/** ATIF steps the agent took (steps from the user or the system are not the agent's). */
export function atifSteps(trajectory: unknown): number | null {
  const parsed = AtifSchema.parse(trajectory);
  if (!parsed) return null;
  if (parsed.steps) return parsed.steps.filter((s) => !s?.source || s.source === 'agent').length;
  return parsed.final_metrics?.total_steps ?? null;
}

/** The signals of a trial's ATIF tool calls (none when the trajectory is missing or not valid ATIF). */
export function atifSignals(trajectory: unknown): Signal[] {
  if (trajectory === undefined) return [];
  try {
    return commandsSignals(
      atifCommands(
        parseAtif(trajectory, (what) => {
          throw new Error(what);
        }),
      ),
    );
  } catch {
    return [];
  }
}

/** A trial folder as a TrialView (attempt 0: numbered by harborJobView). */
export function harborTrialView(files: HarborTrialFiles): TrialView {
  const result = HarborTrialResultSchema.parse(files.result) ?? null;
  const config = HarborTrialConfigSchema.parse(files.config) ?? result?.config ?? null;
  const folder = path.basename(files.dir);
  const taskName = result?.task_name ?? config?.task?.name ?? (config?.task?.path ? path.basename(config.task.path) : null) ?? folder.split('__')[0]!;
  const { reward, metrics, passed: rulePassed } = harborReward(result?.verifier_result?.rewards);
  const exception = result?.exception_info?.exception_type ?? null;
  const usage = result?.agent_result;
  const tokens = usage && (usage.n_input_tokens != null || usage.n_output_tokens != null) ? (usage.n_input_tokens ?? 0) + (usage.n_output_tokens ?? 0) : null;
  const finished = result !== null && (result.finished_at != null || result.verifier_result != null || result.exception_info != null);
  const passed = finished ? rulePassed : null;
  return {
    trialId: result?.trial_name ?? folder,
    taskKey: taskName,
    taskName,
    attempt: 0,
    agent: agentOf(result, config),
    state: finished ? 'finished' : 'running',
    passed,
    reward: finished ? (reward ?? (metrics ? null : 0)) : null,
    metrics: finished ? metrics : null,
    steps: files.hasTrajectory ? atifSteps(files.trajectory) : null,
    durationSec: seconds(result?.started_at, result?.finished_at),
    costUsd: usage?.cost_usd ?? null,
    tokens,
    failureCause: !finished || passed ? null : (exception ?? (metrics === null ? 'no_reward' : 'tests_failed')),
    runDir: null,
    host: null,
    trajectoryFile: files.hasTrajectory ? path.join(files.dir, TRAJECTORY) : null,
    signals: atifSignals(files.trajectory),
  };
}

/** Per agent: pass@1 and pass@k (k = the job's attempts) as the mean over tasks, like job.json's. */
export function scoresOf(trials: readonly TrialView[], k: number): AgentScore[] {
  const agents = [...new Set(trials.map((t) => t.agent))];
  return agents.map((agent) => {
    const perTask = new Map<string, { n: number; c: number }>();
    for (const t of trials) {
      if (t.agent !== agent || t.state !== 'finished') continue;
      const s = perTask.get(t.taskKey) ?? { n: 0, c: 0 };
      s.n++;
      if (t.passed) s.c++;
      perTask.set(t.taskKey, s);
    }
    const meanOf = (kk: number) => {
      const values = [...perTask.values()].flatMap(({ n, c }) => {
        const v = passAtK(n, c, kk);
        return v === undefined ? [] : [v];
      });
      return values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length;
    };
    return { agent, k, passAt1: meanOf(1), passAtK: meanOf(k) };
  });
}

/** A Harbor job folder's files as a JobView; attempts are numbered per task and agent in the order they started. */
export function harborJobView(jobDir: string, job: { config: unknown; result: unknown }, trialFiles: readonly HarborTrialFiles[]): JobView {
  const config = HarborJobConfigSchema.parse(job.config);
  const result = HarborJobResultSchema.parse(job.result);
  const started = new Map<string, string>();
  // Trials not started yet (no result) come last.
  for (const f of trialFiles) started.set(f.dir, HarborTrialResultSchema.parse(f.result)?.started_at ?? '\uffff');
  const ordered = [...trialFiles].sort((a, b) => started.get(a.dir)!.localeCompare(started.get(b.dir)!) || a.dir.localeCompare(b.dir));
  const counters = new Map<string, number>();
  const trials = ordered.map((f) => {
    const view = harborTrialView(f);
    const key = `${view.agent}\0${view.taskKey}`;
    view.attempt = (counters.get(key) ?? 0) + 1;
    counters.set(key, view.attempt);
    return view;
  });
  const attempts = Math.max(1, config?.n_attempts ?? 0, ...counters.values());
  const finished = result?.finished_at != null && trials.every((t) => t.state === 'finished');
  return {
    id: config?.job_name ?? result?.id ?? path.basename(jobDir),
    dir: jobDir,
    source: 'harbor',
    label: path.basename(jobDir),
    status: finished ? 'finished' : 'running',
    createdAt: result?.started_at ?? '',
    attempts,
    scores: scoresOf(trials, attempts),
    trials,
  };
}

async function readJsonFile(file: string): Promise<unknown> {
  try {
    return JSON.parse(await fs.readFile(file, 'utf8'));
  } catch {
    return undefined;
  }
}

/** A folder is a trial when it holds a Harbor trial's config.json or result.json. */
export async function readTrial(dir: string): Promise<HarborTrialFiles | undefined> {
  const [config, result] = await Promise.all([readJsonFile(path.join(dir, 'config.json')), readJsonFile(path.join(dir, 'result.json'))]);
  const isTrial = [config, result].some((v) => typeof v === 'object' && v !== null && ('task_name' in v || 'trial_name' in v || ('agent' in v && 'task' in v)));
  if (!isTrial) return undefined;
  const file = path.join(dir, TRAJECTORY);
  const size = await fs.stat(file).then((s) => s.size, () => -1);
  const trajectory = size >= 0 && size <= MAX_TRAJECTORY_BYTES ? await readJsonFile(file) : undefined;
  return { dir, config, result, trajectory, hasTrajectory: size >= 0 };
}

/** Whether `dir` looks like a Harbor job folder: no job.json, and a config.json with `job_name` or a trial folder. */
export async function isHarborJob(dir: string): Promise<boolean> {
  if (await fs.access(path.join(dir, 'job.json')).then(() => true, () => false)) return false;
  const config = await readJsonFile(path.join(dir, 'config.json'));
  if (typeof config === 'object' && config !== null && 'job_name' in config) return true;
  const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries.slice(0, 20)) if (e.isDirectory() && (await readTrial(path.join(dir, e.name)))) return true;
  return false;
}

/** Reads a Harbor job folder. */
export async function readHarborJob(jobDir: string): Promise<JobView> {
  const entries = await fs.readdir(jobDir, { withFileTypes: true });
  const trials = (await Promise.all(entries.filter((e) => e.isDirectory()).map((e) => readTrial(path.join(jobDir, e.name))))).filter((t) => t !== undefined);
  if (trials.length === 0 && !(await isHarborJob(jobDir))) throw new Error(`${jobDir} is neither a Belay job (job.json) nor a Harbor job folder`);
  const [config, result] = await Promise.all([readJsonFile(path.join(jobDir, 'config.json')), readJsonFile(path.join(jobDir, 'result.json'))]);
  return harborJobView(jobDir, { config, result }, trials);
}
