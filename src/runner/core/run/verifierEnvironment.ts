// The verifier in an environment of its own (Harbor 1.4's `[verifier] environment_mode =
// "separate"`, and every regrade): a fresh session, bounded by the verifier's resources, whose
// working folder starts as the recorded final state and nothing else: no process of the agent,
// no file it left outside the working folder, no service, no agent folder. Its image is the
// verifier's own where the task gives one (`[verifier.environment] docker_image`, else
// tests/Dockerfile built with tests/ as its context) and the backend runs images; else the
// task's. A multi-step task's step resolves its own `verifier.environment` before the task's.
// Its agent phase is ended at once; the caller stages the tests and verifies.
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { Backend, BackendSession, RunFolders } from '../backends/backend.ts';
import type { Task } from '../tasks/task.ts';
import type { TaskStep } from '../tasks/taskSteps.ts';
import type { VerifierEnvironmentSpec, VerifierImage } from '../tasks/verifierSpec.ts';
import { copyTreeBounded } from './finalState.ts';

/**
 * The verifier environment a task (or its step) asks for, step first (Harbor's order: a step's
 * `verifier.environment` before the task's `[verifier.environment]`, which falls back to
 * `[environment]` when opened); undefined: the tests run where the agent ran.
 */
export function resolveVerifierEnvironment(task: Pick<Task, 'verifierEnvironment'>, step?: Pick<TaskStep, 'verifierMode' | 'verifierEnvironment'>): VerifierEnvironmentSpec | undefined {
  const separate = step?.verifierMode !== undefined ? step.verifierMode === 'separate' : task.verifierEnvironment !== undefined;
  if (!separate) return undefined;
  const own = step?.verifierEnvironment;
  const base = task.verifierEnvironment;
  const buildTimeoutSec = own?.buildTimeoutSec ?? base?.buildTimeoutSec;
  const image = own?.image ?? base?.image;
  return {
    cpus: own?.cpus ?? base?.cpus,
    memoryMb: own?.memoryMb ?? base?.memoryMb,
    storageMb: own?.storageMb ?? base?.storageMb,
    ...(buildTimeoutSec !== undefined ? { buildTimeoutSec } : {}),
    ...(image ? { image } : {}),
  };
}

/** The verifier's image in words, relative to the task folder: "tests/Dockerfile", "the image x". */
export function verifierImageWords(image: VerifierImage, taskDir: string): string {
  return image.kind === 'image' ? `the image ${image.image}` : path.relative(taskDir, image.dockerfile) || image.dockerfile;
}

export interface VerifierEnvironmentOptions {
  backend: Backend;
  task: Task;
  /** Names the environment (its container's label). */
  runId: string;
  /** The recorded final state (a run's final/workdir). */
  finalDir: string;
  /** Where this environment's own folders go (its working folder, scratch, environment log); removed by `dispose`. */
  envDir: string;
  /** Where the tests are staged and the verifier's logs written. */
  tests: string;
  logs: string;
  /** Host paths never shown (the task folders, the run records). */
  hidden: readonly string[];
  /** The environment to open; absent: the one the task itself asks for (the task's own image when it asks for none). */
  spec?: VerifierEnvironmentSpec;
  /** Where preparing it logs (its image's build), kept; `verifier-environment.log` beside `envDir` when absent. */
  environmentLog?: string;
  diskBudgetBytes?: number;
  onNotice?: (message: string) => void;
  signal?: AbortSignal;
}

/** Opens the environment with the final state in its working folder and ends its (empty) agent phase. */
export async function openVerifierEnvironment(options: VerifierEnvironmentOptions): Promise<BackendSession> {
  const { task } = options;
  const folders: RunFolders = {
    workspace: path.join(options.envDir, 'app'),
    tests: options.tests,
    logs: options.logs,
    control: path.join(options.envDir, 'control'),
    scratch: path.join(options.envDir, 'scratch'),
    environmentLog: options.environmentLog ?? path.join(path.dirname(options.envDir), 'verifier-environment.log'),
  };
  await fs.mkdir(options.envDir, { recursive: true });
  for (const folder of [folders.control, folders.scratch, folders.logs]) await fs.mkdir(folder, { recursive: true });
  // The final state was bounded when it was kept; this copy only must not follow what it holds.
  await copyTreeBounded(options.finalDir, folders.workspace, { maxBytes: Number.MAX_SAFE_INTEGER, maxEntries: Number.MAX_SAFE_INTEGER });
  const resources: VerifierEnvironmentSpec = options.spec ?? resolveVerifierEnvironment(task) ?? { cpus: undefined, memoryMb: undefined, storageMb: undefined };
  const verifierTask: Task = {
    ...task,
    environment: {
      ...task.environment,
      ...(resources.cpus !== undefined ? { cpus: resources.cpus } : {}),
      ...(resources.memoryMb !== undefined ? { memoryMb: resources.memoryMb } : {}),
      ...(resources.storageMb !== undefined ? { storageMb: resources.storageMb } : {}),
      ...(resources.buildTimeoutSec !== undefined ? { buildTimeoutSec: resources.buildTimeoutSec } : {}),
    },
  };
  // A backend without images (the sandbox, the local one) verifies in the task's environment, and says so.
  const image = resources.image && options.backend.images ? resources.image : undefined;
  if (resources.image && !image) {
    options.onNotice?.(`the ${options.backend.name} backend has no images: the verifier runs in the task's environment, not in ${verifierImageWords(resources.image, task.dir)} (use the container backend for it)`);
  }
  const session = await options.backend.open({
    runId: options.runId,
    task: verifierTask,
    folders,
    agentFolders: [],
    hidden: options.hidden,
    services: [],
    seedFromWorkspace: true,
    ...(image ? { image } : {}),
    ...(options.diskBudgetBytes !== undefined ? { diskBudgetBytes: options.diskBudgetBytes } : {}),
    ...(options.onNotice ? { onNotice: options.onNotice } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  try {
    await session.endAgentPhase();
  } catch (error) {
    await session.close().catch(() => undefined);
    throw error;
  }
  return session;
}

/** Removes what the environment's folders held (the copy of the final state, its scratch). */
export async function removeVerifierEnvironment(envDir: string): Promise<void> {
  await fs.rm(envDir, { recursive: true, force: true });
}
