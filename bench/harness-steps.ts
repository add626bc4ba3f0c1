// Shared by the runner and container benches: each step's whole cycle of an SDK 1.x run (request,
// response, command, records), step-started to step-started, with a scripted agent running `true`.
import { realpathSync } from 'node:fs';
import * as path from 'node:path';
import type { Backend } from '../src/runner/core/backends/backend.ts';
import { sdk1 } from '../src/runner/core/protocols/sdk1.ts';
import { runTask } from '../src/runner/core/run/run.ts';
import type { Task } from '../src/runner/core/tasks/task.ts';
import type { BenchContext } from './lib.ts';

export async function harnessSteps(ctx: BenchContext, options: { backend: Backend; runsDir: string; task: Task; agentCwd: string; steps: number }): Promise<number[]> {
  const agents = path.join(ctx.repoRoot, 'test', 'fixtures', 'runner', 'agents');
  const starts: number[] = [];
  const result = await runTask({
    task: options.task,
    agentCommand: `'${process.execPath}' '${path.join(agents, 'commands.mjs')}'`,
    agentCwd: options.agentCwd,
    agentFolders: [path.dirname(realpathSync(process.execPath))],
    protocol: sdk1,
    backend: options.backend,
    runsDir: options.runsDir,
    limits: { maxSteps: options.steps + 1, agentTimeoutMs: 600_000 },
    env: { AGENT_COMMANDS: JSON.stringify(Array.from({ length: options.steps }, () => 'true')) },
    onEvent: (event) => {
      if (event.type === 'step-started') starts.push(performance.now());
    },
  });
  if (!result.agent_completed || result.steps !== options.steps + 1) throw new Error(`the bench run failed: ${result.failure_cause}: ${result.error}`);
  return starts.slice(1).map((t, i) => t - starts[i]!);
}
