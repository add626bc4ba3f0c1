// Harness overhead per SDK 1.x step: 500 steps of `true` through the whole protocol (request,
// response, command in the backend, cwd tracking, logs), against 500 bare spawns of
// `sh -c true` through the same backend, in the same run. Both figures are medians of single
// steps, measured in interleaved rounds (100 bare spawns, a 100-step run, ...), so that a burst
// of load from other processes on the machine does not decide the ratio.
import { mkdir } from 'node:fs/promises';
import * as path from 'node:path';
import type { Backend } from '../src/runner/core/backends/backend.ts';
import { localBackend } from '../src/runner/core/backends/local.ts';
import { sandboxBackend } from '../src/runner/core/backends/sandbox.ts';
import { loadTask, type Task } from '../src/runner/core/tasks/task.ts';
import { runBounded } from '../src/shared/process.ts';
import { harnessSteps } from './harness-steps.ts';
import { percentile, type BenchFile, type Figure } from './lib.ts';

const STEPS = 500;
const ROUNDS = 5;
const PER_ROUND = STEPS / ROUNDS;

async function bareSpawns(backend: Backend, base: string, count: number, task: Task): Promise<number[]> {
  const workspace = path.join(base, 'app');
  await mkdir(workspace, { recursive: true });
  const folders = {
    workspace,
    tests: path.join(base, 'tests'),
    logs: path.join(base, 'logs'),
    control: path.join(base, 'control'),
    scratch: path.join(base, 'scratch'),
    environmentLog: path.join(base, 'environment.log'),
  };
  const session = await backend.open({ runId: 'bench', task, folders, agentFolders: [], hidden: [] });
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    const result = await runBounded({ start: (output) => session.spawn({ argv: ['/bin/sh', '-c', 'true'], ...output }), timeoutMs: 10_000, maxOutputChars: 1000 });
    times.push(performance.now() - t0);
    if (result.exitCode !== 0) throw new Error(`bare spawn failed: ${result.stderr.text('…')}`);
  }
  await session.close();
  return times;
}

const bench: BenchFile = {
  title: 'Task runner',
  async run(ctx) {
    const figures: Figure[] = [];
    const backends: Backend[] = [localBackend()];
    try {
      backends.unshift(await sandboxBackend());
    } catch (error) {
      ctx.log(`sandbox backend skipped: ${(error as Error).message}`);
    }
    const task = await loadTask(path.join(ctx.repoRoot, 'test', 'fixtures', 'runner', 'tasks', 'hello'));
    for (const backend of backends) {
      const base = path.join(ctx.tmpDir, backend.name);
      await bareSpawns(backend, path.join(base, 'bare'), 20, task);
      const bare: number[] = [];
      const steps: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        bare.push(...(await bareSpawns(backend, path.join(base, 'bare'), PER_ROUND, task)));
        steps.push(...(await harnessSteps(ctx, { backend, runsDir: path.join(base, 'runs'), task: await loadTask(path.join(ctx.repoRoot, 'test', 'fixtures', 'runner', 'tasks', 'hello')), agentCwd: ctx.repoRoot, steps: PER_ROUND })));
      }
      const value = percentile(steps, 50);
      const baseline = percentile(bare, 50);
      ctx.log(`${backend.name}: median ${value.toFixed(2)} ms per SDK 1.x step, ${baseline.toFixed(2)} ms per bare spawn`);
      figures.push({
        name: `SDK 1.x step of \`true\`, median of ${steps.length} (${backend.name} backend)`,
        value,
        baselineName: `bare spawn of \`sh -c true\` in the same backend, median of ${bare.length}`,
        baseline,
        unit: 'ms',
        goal: 1.3,
      });
    }
    return figures;
  },
};

export default bench;
