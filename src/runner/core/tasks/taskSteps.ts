// Multi-step tasks (Harbor's `[[steps]]`): an ordered list of steps worked through in one run
// workspace, each with its own instruction (steps/<name>/instruction.md, or `instruction` inline),
// its own tests (steps/<name>/tests/ laid over the task's tests/), files merged into the working
// directory before its agent phase (steps/<name>/workdir/, whose setup.sh runs first), its own
// timeouts and `min_reward`. The task's reward comes from the steps by its strategy (mean or final).
// Every path a step names stays inside the task folder: no `..`, no absolute name, no symlink.
import { existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';
import * as z from 'zod';
import { errorMessage } from '../../../shared/errors.ts';
import { verifierSpec, VerifierEnvironmentTomlSchema, type VerifierEnvironmentSpec } from './verifierSpec.ts';
import { checkVerifierEnvironmentNetwork, PhaseNetworkFields, type StepNetworkFields } from '../network/policy.ts';

export const REWARD_STRATEGIES = ['mean', 'final'] as const;
export type RewardStrategy = (typeof REWARD_STRATEGIES)[number];

/** A step's name is its folder's name under steps/ (Harbor's rule: letters, digits, `.`, `_`, `-`). */
const STEP_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const seconds = z.number().positive();

export const StepTomlSchema = z.looseObject({
  name: z.string().min(1),
  /** Belay's addition: the instruction inline instead of steps/<name>/instruction.md. */
  instruction: z.string().optional(),
  agent: z.looseObject({ timeout_sec: seconds.optional() }).optional(),
  verifier: z
    .looseObject({
      timeout_sec: seconds.optional(),
      /** The step's own choice, before the task's `[verifier] environment_mode`. */
      environment_mode: z.enum(['shared', 'separate']).optional(),
      /** Resolved before the task's `[verifier.environment]` (Harbor's order). */
      environment: VerifierEnvironmentTomlSchema.optional(),
      /** The step's verifier network, before its verifier.environment's and the task's. */
      ...PhaseNetworkFields,
    })
    .refine((v) => !(v.environment_mode === 'shared' && v.environment !== undefined), { message: "environment_mode 'shared' cannot have a verifier.environment" })
    .superRefine((v, ctx) => checkVerifierEnvironmentNetwork({ verifier: v }, ctx, ['environment']))
    .optional(),
  /** A number gates the `reward` metric; a table gates each metric it names. */
  min_reward: z.union([z.number(), z.record(z.string(), z.number())]).optional(),
});

export const StepsTomlSchema = {
  multi_step_reward_strategy: z.enum(REWARD_STRATEGIES).optional(),
  steps: z.array(StepTomlSchema).optional(),
};

export interface TaskStep {
  /** 1-based position in the task. */
  index: number;
  name: string;
  /** steps/<name>/ (may be absent when the instruction is inline and the step has no files). */
  dir: string;
  instruction: string;
  /** steps/<name>/instruction.md, or undefined when the instruction is inline in task.toml. */
  instructionFile: string | undefined;
  agentTimeoutSec: number;
  testTimeoutSec: number;
  /** Metric name -> least value for the run to go on to the next step. */
  minReward: Record<string, number> | undefined;
  /** steps/<name>/tests/, staged over the task's tests/, when present. */
  testsDir: string | undefined;
  /** The test script, relative to the staged tests folder. */
  testScript: string;
  /** steps/<name>/workdir/, merged into the working directory before the step's agent phase. */
  workdirDir: string | undefined;
  /** The step's own `verifier.environment_mode` ('separate' too when it has a `verifier.environment` alone); absent: the task's. */
  verifierMode?: 'shared' | 'separate';
  /** The step's own verifier environment (its `verifier.environment`, its tests/Dockerfile), resolved before the task's. */
  verifierEnvironment?: VerifierEnvironmentSpec;
  /** What the step says of its verifier's network (resolved before the task's policy, network/policy.ts). */
  verifierNetwork?: StepNetworkFields;
}

export interface StepsConfig {
  strategy: RewardStrategy;
  steps: TaskStep[];
}

type StepsError = (file: string, detail: string) => Error;

interface StepsInput {
  dir: string;
  config: { multi_step_reward_strategy?: RewardStrategy | undefined; steps?: z.infer<typeof StepTomlSchema>[] | undefined };
  agentTimeoutSec: number;
  testTimeoutSec: number;
  /** The task's own tests/test.sh, when present: a step without its own uses it. */
  taskTestScript: string | undefined;
  fail: StepsError;
}

/** The steps of a task.toml with `[[steps]]`, checked against the folder; undefined for a single-step task. */
export async function loadSteps(input: StepsInput): Promise<StepsConfig | undefined> {
  const { dir, config, fail } = input;
  const toml = path.join(dir, 'task.toml');
  if (config.steps === undefined) {
    if (config.multi_step_reward_strategy !== undefined) throw fail(toml, `multi_step_reward_strategy is set but the task has no [[steps]]`);
    return undefined;
  }
  if (config.steps.length === 0) throw fail(toml, 'field \'steps\': a multi-step task needs at least one [[steps]] entry');
  const root = await fs.realpath(dir);
  const seen = new Set<string>();
  const steps: TaskStep[] = [];
  for (const [i, raw] of config.steps.entries()) {
    const where = `field 'steps.${i}.name'`;
    if (!STEP_NAME.test(raw.name) || raw.name === '.' || raw.name === '..') {
      throw fail(toml, `${where}: '${raw.name.slice(0, 80)}' is not a step folder name (letters, digits, '.', '_', '-'; no path)`);
    }
    if (seen.has(raw.name)) throw fail(toml, `${where}: step '${raw.name}' is named twice`);
    seen.add(raw.name);
    const stepDir = path.join(dir, 'steps', raw.name);
    await refuseLinks(root, dir, stepDir, fail);
    const instructionFile = path.join(stepDir, 'instruction.md');
    let instruction = raw.instruction;
    if (instruction === undefined) {
      if (!existsSync(instructionFile)) throw fail(instructionFile, `missing: step '${raw.name}' has no instruction (this file, or \`instruction\` in its [[steps]] entry)`);
      await refuseLinks(root, dir, instructionFile, fail);
      instruction = await readStepText(instructionFile, fail);
    }
    instruction = instruction.trim();
    if (instruction === '') throw fail(raw.instruction === undefined ? instructionFile : toml, `the instruction of step '${raw.name}' is empty`);
    const testsDir = path.join(stepDir, 'tests');
    const hasTests = existsSync(testsDir);
    if (hasTests) await refuseLinks(root, dir, testsDir, fail);
    const stepTest = path.join(testsDir, 'test.sh');
    if (!(hasTests && existsSync(stepTest)) && input.taskTestScript === undefined) {
      throw fail(stepTest, `missing: step '${raw.name}' has no test script (this file, or tests/test.sh for every step)`);
    }
    const workdirDir = path.join(stepDir, 'workdir');
    const hasWorkdir = existsSync(workdirDir);
    if (hasWorkdir) await refuseLinks(root, dir, workdirDir, fail);
    const ownEnvironment = raw.verifier?.environment !== undefined || (hasTests && existsSync(path.join(testsDir, 'Dockerfile')));
    const verifierMode = raw.verifier?.environment_mode ?? (raw.verifier?.environment !== undefined ? 'separate' : undefined);
    steps.push({
      index: i + 1,
      name: raw.name,
      dir: stepDir,
      instruction,
      instructionFile: raw.instruction === undefined ? instructionFile : undefined,
      agentTimeoutSec: raw.agent?.timeout_sec ?? input.agentTimeoutSec,
      testTimeoutSec: raw.verifier?.timeout_sec ?? input.testTimeoutSec,
      minReward: raw.min_reward === undefined ? undefined : typeof raw.min_reward === 'number' ? { reward: raw.min_reward } : raw.min_reward,
      testsDir: hasTests ? testsDir : undefined,
      testScript: 'test.sh',
      workdirDir: hasWorkdir ? workdirDir : undefined,
      ...(verifierMode ? { verifierMode } : {}),
      ...(ownEnvironment ? { verifierEnvironment: verifierSpec(raw.verifier?.environment, hasTests ? testsDir : undefined, toml) } : {}),
      ...(raw.verifier ? { verifierNetwork: { network_mode: raw.verifier.network_mode, allowed_hosts: raw.verifier.allowed_hosts, environment: raw.verifier.environment } } : {}),
    });
  }
  // Harbor's default strategy is the mean.
  return { strategy: config.multi_step_reward_strategy ?? 'mean', steps };
}

/**
 * Refuses `target` (under `dir`) when it or a folder between `dir` and it is a symlink, or when it
 * resolves outside the task folder: a step's files are the task's, never the host's.
 */
async function refuseLinks(root: string, dir: string, target: string, fail: StepsError): Promise<void> {
  let current = dir;
  for (const part of path.relative(dir, target).split(path.sep)) {
    current = path.join(current, part);
    let stat;
    try {
      stat = await fs.lstat(current);
    } catch {
      return; // absent: the caller says what is missing
    }
    if (stat.isSymbolicLink()) throw fail(current, 'is a symlink: the files of a step must lie in the task folder itself');
  }
  const real = await fs.realpath(target).catch(() => target);
  if (real !== root && !real.startsWith(root + path.sep)) throw fail(target, 'lies outside the task folder');
}

async function readStepText(file: string, fail: StepsError): Promise<string> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch (error) {
    throw fail(file, `cannot read: ${errorMessage(error)}`);
  }
}

/** The first step's `min_reward` the metrics miss, said in one line; undefined when all are met. */
export function minRewardMiss(minReward: Record<string, number> | undefined, metrics: Readonly<Record<string, number>> | undefined): string | undefined {
  for (const [name, least] of Object.entries(minReward ?? {})) {
    const value = metrics?.[name];
    if (value === undefined) return `no metric '${name}' (min_reward ${least})`;
    if (value < least) return `${name} ${round(value)} is below min_reward ${least}`;
  }
  return undefined;
}

/** The task's metrics from its steps' (only steps that were verified count): the mean per metric (absent = 0), or the last step's. */
export function combineMetrics(strategy: RewardStrategy, verified: readonly Readonly<Record<string, number>>[]): Record<string, number> {
  if (verified.length === 0) return {};
  if (strategy === 'final') return { ...verified[verified.length - 1]! };
  const names = [...new Set(verified.flatMap((metrics) => Object.keys(metrics)))];
  return Object.fromEntries(names.map((name) => [name, verified.reduce((sum, metrics) => sum + (metrics[name] ?? 0), 0) / verified.length]));
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}
