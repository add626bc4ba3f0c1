// Shared by the runner tests: fixture paths, temporary folders, the backends, orphan checks.
import { realpathSync } from 'node:fs';
import * as path from 'node:path';
import type { Backend } from '../../../src/runner/core/backends/backend.ts';
import { localBackend } from '../../../src/runner/core/backends/local.ts';
import { sandboxBackend } from '../../../src/runner/core/backends/sandbox.ts';
import type { Protocol, RunEvent } from '../../../src/runner/core/records/events.ts';
import { protocolNamed } from '../../../src/runner/core/protocols/index.ts';
import type { RunLimits } from '../../../src/runner/core/protocols/agentProtocol.ts';
import { runTask, type RunTaskOptions } from '../../../src/runner/core/run/run.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';
import { repoRoot } from '../../../scripts/lib/paths.ts';

export { repoRoot } from '../../../scripts/lib/paths.ts';
export { processesWith } from '../processes.ts';
export { tempDir, type TempDir } from '../temp.ts';

export const fixtures = path.join(repoRoot, 'test', 'fixtures', 'runner');
export const taskDir = (name: string) => path.join(fixtures, 'tasks', name);
export const agentFile = (name: string) => path.join(fixtures, 'agents', name);
/** The folder of the Node that runs the fixture agents: the agent needs to read it. */
export const nodeDir = path.dirname(realpathSync(process.execPath));
/** The shell command that runs a fixture agent with this Node (22). */
export const nodeAgent = (name: string) => `'${process.execPath}' '${agentFile(name)}'`;

let sandbox: Promise<Backend | Error> | undefined;
/** The sandbox backend, or the reason it cannot run here (probed once per test file). */
export function sandboxOrReason(): Promise<Backend | Error> {
  sandbox ??= sandboxBackend().catch((error: Error) => error);
  return sandbox;
}

export const backends: { name: 'local' | 'sandbox'; get: () => Promise<Backend | Error> }[] = [
  { name: 'local', get: async () => localBackend() },
  { name: 'sandbox', get: sandboxOrReason },
];

/** Short limits so that failures come fast in tests. */
export const fastLimits: Partial<RunLimits> = {
  silenceTimeoutMs: 10_000,
  commandTimeoutMs: 20_000,
  agentTimeoutMs: 60_000,
  mismatchProbeMs: 1_000,
  // The spec's own: a container's Node starts slowly on a machine busy with other Belay tests.
  healthTimeoutMs: 15_000,
};

export async function runFixture(
  backend: Backend,
  runsDir: string,
  agent: string,
  options: Partial<Omit<RunTaskOptions, 'protocol'>> & { taskName?: string; protocol?: Protocol } = {},
): Promise<{ result: Awaited<ReturnType<typeof runTask>>; events: RunEvent[] }> {
  const events: RunEvent[] = [];
  // Output chunks are kept up to a point: the flood test measures the harness, not this list.
  let outputKept = 0;
  const task = options.task ?? (await loadTask(taskDir(options.taskName ?? 'hello')));
  const result = await runTask({
    task,
    agentCommand: agent,
    agentCwd: repoRoot,
    agentFolders: [nodeDir],
    backend,
    runsDir,
    ...options,
    protocol: protocolNamed(options.protocol ?? 'sdk1'),
    limits: { ...fastLimits, ...options.limits },
    onEvent: (event) => {
      if (event.type !== 'output' || (outputKept += event.chunk.length) < 1_000_000) events.push(event);
      options.onEvent?.(event);
    },
  });
  return { result, events };
}
