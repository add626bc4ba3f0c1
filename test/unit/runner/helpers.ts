// Shared by the runner tests: fixture paths, temporary folders, the backends, orphan checks.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Backend } from '../../../src/runner/core/backends/backend.ts';
import { localBackend } from '../../../src/runner/core/backends/local.ts';
import { sandboxBackend } from '../../../src/runner/core/backends/sandbox.ts';
import type { Protocol, RunEvent } from '../../../src/runner/core/records/events.ts';
import { protocolNamed } from '../../../src/runner/core/protocols/index.ts';
import type { RunLimits } from '../../../src/runner/core/protocols/agentProtocol.ts';
import { runTask, type RunTaskOptions } from '../../../src/runner/core/run/run.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const fixtures = path.join(repoRoot, 'test', 'fixtures', 'runner');
export const taskDir = (name: string) => path.join(fixtures, 'tasks', name);
export const agentFile = (name: string) => path.join(fixtures, 'agents', name);
/** The folder of the Node that runs the fixture agents: the agent needs to read it. */
export const nodeDir = path.dirname(realpathSync(process.execPath));
/** The shell command that runs a fixture agent with this Node (22). */
export const nodeAgent = (name: string) => `'${process.execPath}' '${agentFile(name)}'`;

export interface TempDir {
  dir: string;
  remove(): void;
  /** Writes a task folder `name` in this temp folder from relative paths and contents. */
  writeTask(name: string, files: Record<string, string>): string;
}

export function tempDir(prefix = 'belay-runner-'): TempDir {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  return {
    dir,
    remove: () => rmSync(dir, { recursive: true, force: true }),
    writeTask(name, files) {
      const task = path.join(dir, name);
      for (const [file, text] of Object.entries(files)) {
        mkdirSync(path.dirname(path.join(task, file)), { recursive: true });
        writeFileSync(path.join(task, file), text);
      }
      return task;
    },
  };
}

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

/** Processes whose command line contains `token` (Linux /proc). */
export function processesWith(token: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmdline.includes(token) && Number(pid) !== process.pid) found.push(`${pid}: ${cmdline}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}
