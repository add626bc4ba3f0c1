// What a run leaves on disk: result.json and trajectory.json with the Term Challenge fields
// (plus Belay's own), beside the agent's logs and every step's full output.
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import * as z from 'zod';
import { writeFileAtomic } from '../../../shared/atomic.ts';
import { errorMessage } from '../../../shared/errors.ts';
import { writeAtif } from './atif.ts';
import { SignalSchema } from './signals.ts';

export const FAILURE_CAUSES = [
  'agent_timeout',
  'test_timeout',
  'parse_error',
  'agent_error',
  'max_steps',
  'tests_failed',
  'setup_error',
  'aborted',
  /** The run folder grew past the run's disk budget. */
  'disk_budget',
  /** Belay itself failed (neither the agent, the tests nor the setup). */
  'harness_error',
  /** The run spent its LLM budget (tokens or USD) through Belay's gateway. */
  'budget_exceeded',
  /** The other machine whose engine held the run stopped answering mid-run (a job runs the trial again elsewhere). */
  'host_lost',
] as const;
export type FailureCause = (typeof FAILURE_CAUSES)[number];

/** The coding CLIs Belay installs and runs headless (protocols/installed/). */
export const INSTALLED_PROTOCOLS = ['claude-code', 'codex', 'gemini-cli', 'opencode'] as const;
export type InstalledProtocol = (typeof INSTALLED_PROTOCOLS)[number];
export const PROTOCOLS = ['sdk1', 'sdk2', 'sdk3', ...INSTALLED_PROTOCOLS] as const;
export type Protocol = (typeof PROTOCOLS)[number];

export const TestResultSchema = z.object({
  name: z.string(),
  status: z.string(),
  duration_ms: z.number().optional(),
  message: z.string().optional(),
});

export const VerificationSchema = z.object({
  success: z.boolean(),
  /**
   * The reward the reward rule gives (verify.ts `ruleOfRewards`); null when the tests wrote
   * several metrics and none is the reward, or a reward file Belay could not read.
   */
  reward: z.number().nullable(),
  /** Which rule made the pass, when the tests wrote a reward file ("every metric at its maximum (1)"). */
  reward_rule: z.string().optional(),
  output: z.string(),
  error: z.string().nullable(),
  timed_out: z.boolean(),
  exit_code: z.number().nullable(),
  test_results: z.array(TestResultSchema),
  /** Every metric the tests wrote (reward.json's named numbers, reward.txt as `reward`). */
  metrics: z.record(z.string(), z.number()).optional(),
});
export type Verification = z.infer<typeof VerificationSchema>;

/** What a run (or one of its steps) spent through Belay's LLM gateway. */
export const LlmUsageSchema = z.object({
  requests: z.number(),
  input_tokens: z.number(),
  output_tokens: z.number(),
  cost_usd: z.number(),
});
export type LlmUsage = z.infer<typeof LlmUsageSchema>;

export const NO_LLM_USAGE: LlmUsage = { requests: 0, input_tokens: 0, output_tokens: 0, cost_usd: 0 };

/** Two spends together (steps of a run, runs of a job). */
export function addLlmUsage(a: LlmUsage, b: LlmUsage): LlmUsage {
  return { requests: a.requests + b.requests, input_tokens: a.input_tokens + b.input_tokens, output_tokens: a.output_tokens + b.output_tokens, cost_usd: a.cost_usd + b.cost_usd };
}

export const TrajectoryEntrySchema = z.object({
  step: z.number(),
  /** Output the agent was shown: which one `screen_of` says. */
  screen: z.string().nullable(),
  /**
   * Which command's output `screen` holds, as the protocol that recorded the step says: the step's
   * own ('own': SDK 2.0 and 3.0 record each step with its output), or the previous step's, what the
   * agent was shown before it answered ('previous': SDK 1.x). Absent in records written before it,
   * and when nothing was recorded as shown; readers then take the step's own output file.
   */
  screen_of: z.enum(['own', 'previous']).optional(),
  /** The agent's answer as parsed (SDK 1.x) or the history entry (SDK 2.0). */
  response: z.unknown(),
  command: z.string().nullable(),
  cwd: z.string().nullable(),
  exit_code: z.number().nullable(),
  timed_out: z.boolean(),
  duration_ms: z.number().nullable(),
  /** The step's full output, relative to the run folder. */
  output_file: z.string().nullable(),
  /** The model calls the agent made for this step (since the previous step ended), when it used the gateway. */
  llm: LlmUsageSchema.optional(),
  /** In a multi-step task: the task step (1-based, see `task_steps`) this agent step belongs to. */
  task_step: z.number().optional(),
});
export type TrajectoryEntry = z.infer<typeof TrajectoryEntrySchema>;

/** What a bounded copy out of the environment kept (the final state, the artifacts): where, how much, what it left out and why. */
export const CapturedFilesSchema = z.object({
  /** Relative to the run folder. */
  dir: z.string(),
  files: z.number(),
  bytes: z.number(),
  skipped: z.array(z.string()),
});
export type CapturedFiles = z.infer<typeof CapturedFilesSchema>;

/** One step of a multi-step task, as it ran. */
export const TaskStepResultSchema = z.object({
  /** 1-based position in the task. */
  step: z.number(),
  name: z.string(),
  /** sha256 of the instruction the agent got, to tell runs of edited steps apart. */
  instruction_sha256: z.string(),
  reward: z.number().nullable(),
  metrics: z.record(z.string(), z.number()),
  /** The step's reward rule is met and nothing failed. */
  passed: z.boolean(),
  /** Why the run stopped after this step (its min_reward missed), when it did. */
  stopped: z.string().nullable(),
  agent_steps: z.number(),
  duration_sec: z.number(),
  failure_cause: z.enum(FAILURE_CAUSES).nullable(),
  error: z.string().nullable(),
  /** Where the step's records are, relative to the run folder. */
  dir: z.string(),
  /** The working folder as the step's agent left it (final/steps/<name>/workdir), what its verifier graded; absent when not kept. */
  final: CapturedFilesSchema.optional(),
});
export type TaskStepResult = z.infer<typeof TaskStepResultSchema>;

export const RunResultSchema = z.object({
  run_id: z.string(),
  task_name: z.string(),
  task_dir: z.string(),
  /** The agent's name when the run was started by name (the editor); `belay run` gives none. */
  agent: z.string().optional(),
  protocol: z.enum(PROTOCOLS),
  backend: z.string(),
  /** The backend as the user was told, with what it isolates ("sandbox (bubblewrap: …)"). */
  backend_label: z.string().optional(),
  /** The other machine whose engine ran it ("ci@build-2"); absent: this one. */
  host: z.string().optional(),
  started_at: z.string(),
  ended_at: z.string(),
  duration_sec: z.number(),
  steps: z.number(),
  agent_completed: z.boolean(),
  verification: VerificationSchema.nullable(),
  passed: z.boolean(),
  /** The run's one reward; null when the tests gave none (several metrics, none named: see `metrics`). */
  reward: z.number().nullable(),
  /** Every metric the tests wrote, beside the reward (absent when they wrote no reward file). */
  metrics: z.record(z.string(), z.number()).optional(),
  failure_cause: z.enum(FAILURE_CAUSES).nullable(),
  error: z.string().nullable(),
  /** A multi-step task's steps, in order; those after a missed min_reward are absent. */
  task_steps: z.array(TaskStepResultSchema).optional(),
  /** A multi-step task's step count and how the steps' rewards make the run's. */
  task_steps_total: z.number().optional(),
  reward_strategy: z.enum(['mean', 'final']).optional(),
  /** What the harness did that the user should know (leftovers removed, environment notes). */
  notes: z.array(z.string()).optional(),
  /** The model calls of the whole run through Belay's gateway (absent when the run had none). */
  llm: LlmUsageSchema.optional(),
  /** Reward-hacking signals (records/signals.ts): what the agent did that a grader should look at twice; [] when nothing, absent when not looked for. */
  signals: z.array(SignalSchema).optional(),
  run_dir: z.string(),
  /** The working folder as the agent left it (final/workdir), what regrade grades; absent in runs recorded before it was kept. */
  final: CapturedFilesSchema.optional(),
  /** task.toml's `artifacts`, collected after the agent phase. */
  artifacts: CapturedFilesSchema.optional(),
});
export type RunResult = z.infer<typeof RunResultSchema>;

/** The files of one run folder. */
export function runFiles(runDir: string) {
  return {
    result: path.join(runDir, 'result.json'),
    trajectory: path.join(runDir, 'trajectory.json'),
    agentStdout: path.join(runDir, 'agent.stdout.log'),
    agentStderr: path.join(runDir, 'agent.stderr.log'),
    steps: path.join(runDir, 'steps'),
    testOutput: path.join(runDir, 'verifier', 'test-output.log'),
    workspace: path.join(runDir, 'app'),
    tests: path.join(runDir, 'tests'),
    logs: path.join(runDir, 'logs'),
    control: path.join(runDir, 'control'),
    scratch: path.join(runDir, 'scratch'),
    environmentLog: path.join(runDir, 'environment.log'),
    agentState: path.join(runDir, 'agent-state'),
  };
}

export function stepOutputFile(step: number): string {
  return path.posix.join('steps', `${String(step).padStart(4, '0')}.log`);
}

/** `instruction` is the task's, for the ATIF copy of the trajectory (agent/trajectory.json). */
export async function writeRecords(runDir: string, result: RunResult, trajectory: TrajectoryEntry[], instruction?: string): Promise<void> {
  const files = runFiles(runDir);
  await fs.mkdir(runDir, { recursive: true });
  await writeFileAtomic(files.trajectory, JSON.stringify(trajectory, null, 2) + '\n');
  await writeAtif(runDir, { result, trajectory, instruction }).catch((error: unknown) => {
    result.notes = [...(result.notes ?? []), `the ATIF trajectory could not be written: ${errorMessage(error)}`];
  });
  await writeFileAtomic(files.result, JSON.stringify(result, null, 2) + '\n');
}

export async function readResult(runDir: string): Promise<RunResult> {
  const raw: unknown = JSON.parse(await fs.readFile(runFiles(runDir).result, 'utf8'));
  return RunResultSchema.parse(raw);
}
