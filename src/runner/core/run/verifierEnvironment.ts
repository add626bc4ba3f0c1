// The verifier in an environment of its own (Harbor 1.4's `[verifier] environment_mode =
// "separate"`, and every regrade): a fresh session of the task's environment, bounded by the
// verifier's resources, whose working folder starts as the recorded final state and nothing
// else: no process of the agent, no file it left outside the working folder, no service, no
// agent folder. Its agent phase is ended at once; the caller stages the tests and verifies.
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { Backend, BackendSession, RunFolders } from '../backends/backend.ts';
import type { Task } from '../tasks/task.ts';
import { copyTreeBounded } from './finalState.ts';

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
    environmentLog: path.join(options.envDir, 'environment.log'),
  };
  await fs.mkdir(options.envDir, { recursive: true });
  for (const folder of [folders.control, folders.scratch, folders.logs]) await fs.mkdir(folder, { recursive: true });
  // The final state was bounded when it was kept; this copy only must not follow what it holds.
  await copyTreeBounded(options.finalDir, folders.workspace, { maxBytes: Number.MAX_SAFE_INTEGER, maxEntries: Number.MAX_SAFE_INTEGER });
  const resources: NonNullable<Task['verifierEnvironment']> = task.verifierEnvironment ?? { cpus: undefined, memoryMb: undefined, storageMb: undefined };
  const verifierTask: Task = {
    ...task,
    environment: {
      ...task.environment,
      ...(resources.cpus !== undefined ? { cpus: resources.cpus } : {}),
      ...(resources.memoryMb !== undefined ? { memoryMb: resources.memoryMb } : {}),
      ...(resources.storageMb !== undefined ? { storageMb: resources.storageMb } : {}),
    },
  };
  const session = await options.backend.open({
    runId: options.runId,
    task: verifierTask,
    folders,
    agentFolders: [],
    hidden: options.hidden,
    services: [],
    seedFromWorkspace: true,
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
