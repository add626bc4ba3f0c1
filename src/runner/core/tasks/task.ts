// Term Challenge / Terminal-Bench tasks, in the current layout (task.toml, instruction.md,
// tests/test.sh, environment/, solution/) and the older one (task.yaml, run-tests.sh + tests/,
// solution.sh). Both load into one Task; a broken task names the file and the field.
import { existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';
import * as z from 'zod';
import { errorMessage } from '../../../shared/errors.ts';
import { DOCKER_FILES, LAYOUT_FILES, type TaskLayout } from './layout.ts';
import { loadSteps, StepsTomlSchema, type StepsConfig, type TaskStep } from './taskSteps.ts';
import { checkVerifierEnvironmentNetwork, PhaseNetworkFields, TaskEnvSchema, taskNetwork, type TaskNetwork } from '../network/policy.ts';
import { ImageName, verifierSpec, VerifierEnvironmentTomlSchema, type VerifierEnvironmentSpec } from './verifierSpec.ts';
import { commandTests, listTestFiles, REPO_TIMEOUTS, repoSpec, WorkspaceYamlSchema, type RepoSpec } from './repoTask.ts';

/** One artifact of task.toml: a path in the environment and where it goes under the run's artifacts/. */
export interface ArtifactSpec {
  source: string;
  destination?: string;
}

export class TaskError extends Error {
  override name = 'TaskError';
  readonly file: string;
  constructor(file: string, detail: string) {
    super(`${file}: ${detail}`);
    this.file = file;
  }
}

/** How a broken task is named in lists: its folder's name. */
export function brokenTaskLabel(error: TaskError): string {
  return path.basename(path.dirname(error.file)) || error.file;
}

const seconds = z.number().positive();
const ArtifactPath = z.string().min(1).max(1000).refine((v) => !v.split('/').includes('..'), { message: "an artifact's path must not contain '..'" });
const ArtifactDestination = z
  .string()
  .min(1)
  .max(1000)
  .refine((v) => !v.startsWith('/') && !v.includes('\\') && !v.split('/').includes('..'), { message: "an artifact's destination must be a relative path without '..'" });

export const TaskTomlSchema = z.looseObject({
  version: z.union([z.string(), z.number()]).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  agent: z.looseObject({ timeout_sec: seconds.optional(), ...PhaseNetworkFields }).optional(),
  verifier: z
    .looseObject({
      timeout_sec: seconds.optional(),
      reward_metric: z.string().min(1).max(200).optional(),
      ...PhaseNetworkFields,
      /** Harbor 1.4: 'separate' runs the verifier in a fresh environment holding only the agent's final working folder. */
      environment_mode: z.enum(['shared', 'separate']).optional(),
      environment: VerifierEnvironmentTomlSchema.optional(),
    })
    .refine((v) => !(v.environment_mode === 'shared' && v.environment !== undefined), { message: "environment_mode 'shared' cannot have a [verifier.environment]" })
    .optional(),
  /** Harbor 1.4: paths in the environment collected into the run after the agent phase. */
  artifacts: z.array(z.union([ArtifactPath, z.looseObject({ source: ArtifactPath, destination: ArtifactDestination.optional() })])).max(100).optional(),
  environment: z
    .looseObject({
      cpus: z.number().positive().optional(),
      memory_mb: z.number().positive().optional(),
      /** An older spelling: "2G", "512M" (a number is megabytes). */
      memory: z.union([z.string(), z.number().positive()]).optional(),
      storage_mb: z.number().positive().optional(),
      build_timeout_sec: seconds.optional(),
      /** Harbor: a prebuilt image used instead of building environment/Dockerfile (Belay never pulls it). */
      docker_image: ImageName.optional(),
      allow_internet: z.boolean().optional(),
      ...PhaseNetworkFields,
      env: TaskEnvSchema.optional(),
    })
    .optional(),
  ...StepsTomlSchema,
}).superRefine(checkVerifierEnvironmentNetwork);

export const TaskYamlSchema = z.looseObject({
  instruction: z.string().min(1),
  difficulty: z.string().optional(),
  category: z.string().optional(),
  tags: z.array(z.string()).optional(),
  max_agent_timeout_sec: seconds.optional(),
  max_test_timeout_sec: seconds.optional(),
  run_tests_in_same_shell: z.boolean().optional(),
});

export interface Task {
  /** The folder's name. */
  name: string;
  dir: string;
  layout: TaskLayout;
  instruction: string;
  agentTimeoutSec: number;
  testTimeoutSec: number;
  /** The folder whose files seed the run's working directory. */
  environmentDir: string;
  /** Names (relative to environmentDir) that are not copied: Docker files, tests, solutions. */
  seedExclude: string[];
  /** Files staged as the tests folder after the agent finishes. */
  testsDir: string | undefined;
  /** The test script, relative to the staged tests folder. */
  testScript: string;
  /** A reference solution script, when the task has one. */
  solutionScript: string | undefined;
  metadata: Record<string, unknown>;
  environment: TaskEnvironment;
  /** A multi-step task's steps (task.toml's `[[steps]]`) and how their rewards make the task's. */
  steps?: StepsConfig;
  /** The metric of reward.json that is the reward and decides the pass (task.toml `[verifier] reward_metric`). */
  rewardMetric?: string;
  /** Each phase's network (task.toml's `network_mode`, `allowed_hosts`); absent: none in either phase. */
  network?: TaskNetwork;
  /** `[environment.env]`: variables both phases' programs get, under Belay's own. */
  env?: Record<string, string>;
  /** A Term Challenge repository task (workspace.yaml): the repository, its base commit, install, tests/*.sh. */
  repo?: RepoSpec;
  /** Paths in the environment collected into the run's artifacts/ after the agent phase (task.toml `artifacts`). */
  artifacts?: ArtifactSpec[];
  /**
   * The verifier runs in a fresh environment of its own (task.toml `[verifier] environment_mode =
   * "separate"`), bounded as given, of its own image when `[verifier.environment] docker_image` or
   * tests/Dockerfile gives one.
   */
  verifierEnvironment?: VerifierEnvironmentSpec;
}

/** How the task's environment is built and bounded (task.toml's [environment], the Docker files). */
export interface TaskEnvironment {
  /** The Dockerfile that builds the task's image, when the task has one. */
  dockerfile: string | undefined;
  /** docker-compose.yaml (older layout), when present: its main service describes the image. */
  composeFile: string | undefined;
  cpus: number | undefined;
  memoryMb: number | undefined;
  storageMb: number | undefined;
  buildTimeoutSec: number | undefined;
  /** A prebuilt image ([environment] docker_image), used when the engine holds it. */
  dockerImage?: string;
  /** false unless the task says otherwise. */
  allowInternet: boolean;
}

/** Defaults of the harnesses (Harbor for the current layout, Terminal-Bench for the older one). */
export const DEFAULT_TIMEOUTS = {
  current: { agent: 600, test: 600 },
  legacy: { agent: 360, test: 60 },
} as const;

function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `field '${issue.path.join('.') || '(top level)'}': ${issue.message}`)
    .join('; ');
}

async function readText(file: string): Promise<string> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch (error) {
    throw new TaskError(file, `cannot read: ${errorMessage(error)}`);
  }
}

/** Reads, parses and validates a task file; every mistake names the file (and line or field). */
async function readTaskFile<T>(file: string, format: 'toml' | 'yaml', schema: z.ZodType<T>): Promise<T> {
  const text = await readText(file);
  // Loaded on the first task read: the parsers are the heaviest libraries of the runner.
  const formats = await import('./taskFormats.ts');
  let raw: unknown;
  try {
    raw = format === 'toml' ? formats.parseTaskToml(text) : formats.parseTaskYaml(text);
  } catch (error) {
    throw new TaskError(file, errorMessage(error));
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new TaskError(file, describeIssues(parsed.error));
  return parsed.data;
}

export function isTaskDir(dir: string): boolean {
  return existsSync(path.join(dir, LAYOUT_FILES.current.config)) || existsSync(path.join(dir, LAYOUT_FILES.legacy.config)) || existsSync(path.join(dir, LAYOUT_FILES.repo.config));
}

export async function loadTask(taskDir: string): Promise<Task> {
  const dir = path.resolve(taskDir);
  const name = path.basename(dir);
  const toml = path.join(dir, LAYOUT_FILES.current.config);
  if (existsSync(toml)) return loadCurrent(dir, name, toml);
  const yaml = path.join(dir, LAYOUT_FILES.legacy.config);
  if (existsSync(yaml)) return loadLegacy(dir, name, yaml);
  const workspace = path.join(dir, LAYOUT_FILES.repo.config);
  if (existsSync(workspace)) return loadRepo(dir, name, workspace);
  throw new TaskError(dir, `not a task: none of ${LAYOUT_FILES.current.config}, ${LAYOUT_FILES.legacy.config} or ${LAYOUT_FILES.repo.config} is there`);
}

async function loadCurrent(dir: string, name: string, file: string): Promise<Task> {
  const files = LAYOUT_FILES.current;
  const config = await readTaskFile(file, 'toml', TaskTomlSchema);
  const multiStep = config.steps !== undefined;
  const instructionFile = path.join(dir, files.instruction);
  // A multi-step task's own instruction.md is optional: each step has its instruction.
  let instruction = multiStep && !existsSync(instructionFile) ? '' : (await readText(instructionFile)).trim();
  if (instruction === '' && !multiStep) throw new TaskError(instructionFile, 'the instruction is empty');
  const testScript = path.join(dir, files.testScript);
  const hasTestScript = existsSync(testScript);
  if (!hasTestScript && !multiStep) throw new TaskError(testScript, `missing: the current layout runs ${files.testScript}`);
  const agentTimeoutSec = config.agent?.timeout_sec ?? DEFAULT_TIMEOUTS.current.agent;
  const testTimeoutSec = config.verifier?.timeout_sec ?? DEFAULT_TIMEOUTS.current.test;
  const steps = await loadSteps({
    dir,
    config,
    agentTimeoutSec,
    testTimeoutSec,
    taskTestScript: hasTestScript ? testScript : undefined,
    fail: (at, detail) => new TaskError(at, detail),
  });
  if (steps && instruction === '') instruction = stepsOverview(steps.steps);
  const solution = path.join(dir, files.solution);
  return {
    name,
    dir,
    layout: 'current',
    instruction,
    agentTimeoutSec,
    testTimeoutSec,
    environmentDir: path.join(dir, files.environment),
    seedExclude: DOCKER_FILES,
    testsDir: path.join(dir, files.tests),
    testScript: path.posix.relative(files.tests, files.testScript),
    solutionScript: existsSync(solution) ? solution : undefined,
    metadata: config.metadata ?? {},
    environment: taskEnvironment(path.join(dir, files.environment), config.environment),
    ...(steps ? { steps } : {}),
    ...(config.verifier?.reward_metric !== undefined ? { rewardMetric: config.verifier.reward_metric } : {}),
    network: taskNetwork(config),
    ...(config.environment?.env && Object.keys(config.environment.env).length > 0 ? { env: config.environment.env } : {}),
    ...(config.artifacts?.length ? { artifacts: config.artifacts.map((a) => (typeof a === 'string' ? { source: a } : { source: a.source, ...(a.destination !== undefined ? { destination: a.destination } : {}) })) } : {}),
    ...(config.verifier?.environment_mode === 'separate' || (config.verifier?.environment !== undefined && config.verifier.environment_mode === undefined)
      ? { verifierEnvironment: verifierSpec(config.verifier.environment, path.join(dir, files.tests), file) }
      : {}),
  };
}

/** What a multi-step task without its own instruction.md shows as its instruction: its steps'. */
function stepsOverview(steps: readonly TaskStep[]): string {
  return steps.map((step) => `Step ${step.index} (${step.name}): ${step.instruction}`).join('\n\n');
}

async function loadLegacy(dir: string, name: string, file: string): Promise<Task> {
  const files = LAYOUT_FILES.legacy;
  const config = await readTaskFile(file, 'yaml', TaskYamlSchema);
  const runTests = path.join(dir, files.testScript);
  if (!existsSync(runTests)) throw new TaskError(runTests, `missing: the older layout runs ${files.testScript}`);
  const solution = path.join(dir, files.solution);
  const { instruction, difficulty, category, tags } = config;
  return {
    name,
    dir,
    layout: 'legacy',
    instruction: instruction.trim(),
    agentTimeoutSec: config.max_agent_timeout_sec ?? DEFAULT_TIMEOUTS.legacy.agent,
    testTimeoutSec: config.max_test_timeout_sec ?? DEFAULT_TIMEOUTS.legacy.test,
    environmentDir: dir,
    seedExclude: [...DOCKER_FILES, ...files.notSeeded],
    testsDir: existsSync(path.join(dir, files.tests)) ? path.join(dir, files.tests) : undefined,
    testScript: files.testScript,
    solutionScript: existsSync(solution) ? solution : undefined,
    metadata: { difficulty, category, tags },
    environment: taskEnvironment(dir, undefined),
  };
}

async function loadRepo(dir: string, name: string, file: string): Promise<Task> {
  const files = LAYOUT_FILES.repo;
  const config = await readTaskFile(file, 'yaml', WorkspaceYamlSchema);
  const promptFile = path.join(dir, files.instruction);
  if (!existsSync(promptFile)) throw new TaskError(promptFile, `missing: a repository task's issue is ${files.instruction}`);
  const instruction = (await readText(promptFile)).trim();
  if (instruction === '') throw new TaskError(promptFile, 'the issue is empty');
  const testsDir = path.join(dir, files.tests);
  const tests = await listTestFiles(testsDir);
  if (tests.refused.length > 0) throw new TaskError(path.join(testsDir, tests.refused[0]!), 'not a regular file: the tests are copied, never followed');
  const checksFile = path.join(dir, 'checks.txt');
  const generated = tests.scripts.length > 0 ? [] : commandTests(config, existsSync(checksFile) ? await readText(checksFile) : undefined);
  if (tests.scripts.length === 0 && generated.length === 0) throw new TaskError(testsDir, 'no test: a repository task runs every tests/*.sh (or the commands of checks.txt, or of fail_to_pass and pass_to_pass)');
  return {
    name,
    dir,
    layout: 'repo',
    instruction,
    agentTimeoutSec: config.agent_timeout_sec ?? REPO_TIMEOUTS.agent,
    testTimeoutSec: config.test_timeout_sec ?? REPO_TIMEOUTS.test,
    // The workspace is the checkout; nothing of the task folder is copied into it.
    environmentDir: path.join(dir, files.environment, '.none'),
    seedExclude: DOCKER_FILES,
    testsDir,
    testScript: tests.scripts[0] ?? generated[0]!.name,
    solutionScript: undefined,
    metadata: { repo: config.repo, ...(config.base_commit !== undefined ? { base_commit: config.base_commit } : {}), ...(config.difficulty !== undefined ? { difficulty: config.difficulty } : {}), ...(config.language !== undefined ? { language: config.language } : {}) },
    environment: taskEnvironment(path.join(dir, files.environment), undefined),
    repo: repoSpec(config, tests, generated),
    // Term Challenge gives none: Belay's own fields, read as task.toml's tables are (no network unless said).
    network: taskNetwork({
      environment: { network_mode: config.network_mode, allowed_hosts: config.allowed_hosts },
      agent: { network_mode: config.agent_network_mode, allowed_hosts: config.agent_allowed_hosts },
      verifier: { network_mode: config.verifier_network_mode, allowed_hosts: config.verifier_allowed_hosts },
    }),
  };
}

/** The first of `names` that exists in `dir`. */
function firstFile(dir: string, names: readonly string[]): string | undefined {
  return names.map((name) => path.join(dir, name)).find((file) => existsSync(file));
}

function memoryMb(value: string | number | undefined): number | undefined {
  if (typeof value === 'number') return value;
  const match = value?.trim().match(/^(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?$/i);
  if (!match) return undefined;
  const scale = { '': 1 / (1024 * 1024), k: 1 / 1024, m: 1, g: 1024, t: 1024 * 1024 }[match[2]!.toLowerCase() as '' | 'k' | 'm' | 'g' | 't'];
  return Number(match[1]) * scale;
}

function taskEnvironment(dockerDir: string, config: z.infer<typeof TaskTomlSchema>['environment']): TaskEnvironment {
  return {
    dockerfile: firstFile(dockerDir, ['Dockerfile']),
    composeFile: firstFile(dockerDir, ['docker-compose.yaml', 'docker-compose.yml']),
    cpus: config?.cpus,
    memoryMb: config?.memory_mb ?? memoryMb(config?.memory),
    storageMb: config?.storage_mb,
    buildTimeoutSec: config?.build_timeout_sec,
    ...(config?.docker_image !== undefined ? { dockerImage: config.docker_image } : {}),
    allowInternet: config?.allow_internet ?? false,
  };
}

/**
 * Every task under the given folders (a folder that is a task counts as one), sorted by path.
 * Broken tasks are returned as errors beside the good ones, so one bad task does not hide the rest.
 */
export async function discoverTasks(roots: readonly string[]): Promise<{ tasks: Task[]; errors: TaskError[] }> {
  const dirs: string[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    if (isTaskDir(dir)) {
      dirs.push(dir);
      return;
    }
    if (depth > 6) return;
    let entries;
    try {
      entries = await fs.readdir(dir, { withFileTypes: true });
    } catch (error) {
      throw new TaskError(dir, `cannot read the folder: ${errorMessage(error)}`);
    }
    for (const entry of entries) {
      if (entry.isDirectory() && !entry.name.startsWith('.') && entry.name !== 'node_modules') {
        await walk(path.join(dir, entry.name), depth + 1);
      }
    }
  };
  for (const root of roots) await walk(path.resolve(root), 0);
  dirs.sort();
  const tasks: Task[] = [];
  const errors: TaskError[] = [];
  for (const dir of [...new Set(dirs)]) {
    try {
      tasks.push(await loadTask(dir));
    } catch (error) {
      if (error instanceof TaskError) errors.push(error);
      else throw error;
    }
  }
  return { tasks, errors };
}

/** Copies the task's environment files into a fresh working directory (the Dockerfile is not run). */
export async function seedWorkspace(task: Task, workspace: string): Promise<void> {
  await fs.mkdir(workspace, { recursive: true });
  if (!existsSync(task.environmentDir)) return;
  for (const entry of await fs.readdir(task.environmentDir)) {
    if (task.seedExclude.includes(entry)) continue;
    await fs.cp(path.join(task.environmentDir, entry), path.join(workspace, entry), { recursive: true, verbatimSymlinks: true });
  }
}

/**
 * Stages the tests (and, in the older layout, run-tests.sh) into the folder the verifier sees. For a
 * step of a multi-step task, the step's tests are laid over the task's (same names: the step's win).
 */
export async function stageTests(task: Task, testsDir: string, step?: TaskStep): Promise<void> {
  // Whatever is there already did not come from the task.
  await fs.rm(testsDir, { recursive: true, force: true });
  await fs.mkdir(testsDir, { recursive: true });
  if (task.testsDir && existsSync(task.testsDir)) await fs.cp(task.testsDir, testsDir, { recursive: true, verbatimSymlinks: true });
  if (step?.testsDir) await fs.cp(step.testsDir, testsDir, { recursive: true, verbatimSymlinks: true, force: true });
  if (task.layout === 'legacy') await fs.copyFile(path.join(task.dir, LAYOUT_FILES.legacy.testScript), path.join(testsDir, task.testScript));
}
