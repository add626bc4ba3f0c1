// Harness overhead per SDK 1.x step: steps of `true` through the whole protocol (request,
// response, command in the backend through its executor, cwd tracking, logs) on each backend,
// against bare spawns of `sh -c true` on this machine through the process layer, in the same run.
// The goals: a local step within 1.3× a bare spawn, a sandbox step within 1.5× a local
// step (a container step within 2× a local step: container.bench.ts). Figures are medians of
// single steps, measured in interleaved rounds (bare spawns, then a run on each backend, ...), so
// that a burst of load from other processes on the machine does not decide a ratio.
import * as path from 'node:path';
import type { Backend } from '../src/runner/core/backends/backend.ts';
import { localBackend } from '../src/runner/core/backends/local.ts';
import { sandboxBackend } from '../src/runner/core/backends/sandbox.ts';
import { loadTask } from '../src/runner/core/tasks/task.ts';
import { runBounded } from '../src/shared/process.ts';
import { harnessSteps } from './harness-steps.ts';
import { percentile, type BenchFile, type Figure } from './lib.ts';

const STEPS = 500;
const ROUNDS = 5;
const PER_ROUND = STEPS / ROUNDS;

/** `count` bare spawns of `sh -c true` on this machine, each timed. */
export async function bareSpawns(count: number, cwd: string): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    const result = await runBounded({ argv: ['/bin/sh', '-c', 'true'], cwd, env: { PATH: '/usr/bin:/bin' }, timeoutMs: 10_000, maxOutputChars: 1000 });
    times.push(performance.now() - t0);
    if (result.exitCode !== 0) throw new Error(`bare spawn failed: ${result.stderr.text('…')}`);
  }
  return times;
}

const bench: BenchFile = {
  title: 'Task runner',
  async run(ctx) {
    const figures: Figure[] = [];
    const backends: Backend[] = [localBackend()];
    try {
      backends.push(await sandboxBackend());
    } catch (error) {
      ctx.log(`sandbox backend skipped: ${(error as Error).message}`);
    }
    const task = await loadTask(path.join(ctx.repoRoot, 'test', 'fixtures', 'runner', 'tasks', 'hello'));
    await bareSpawns(20, ctx.tmpDir);
    const bare: number[] = [];
    const steps = new Map<string, number[]>(backends.map((backend) => [backend.name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      bare.push(...(await bareSpawns(PER_ROUND, ctx.tmpDir)));
      for (const backend of backends) {
        steps.get(backend.name)!.push(...(await harnessSteps(ctx, { backend, runsDir: path.join(ctx.tmpDir, backend.name, 'runs'), task, agentCwd: ctx.repoRoot, steps: PER_ROUND })));
      }
    }
    const baseline = percentile(bare, 50);
    const local = percentile(steps.get('local')!, 50);
    ctx.log(`bare spawn: median ${baseline.toFixed(2)} ms`);
    for (const [name, times] of steps) ctx.log(`${name}: median ${percentile(times, 50).toFixed(2)} ms per SDK 1.x step`);
    figures.push({
      name: `SDK 1.x step of \`true\`, median of ${steps.get('local')!.length} (local backend)`,
      value: local,
      baselineName: `bare spawn of \`sh -c true\` on this machine, median of ${bare.length}`,
      baseline,
      unit: 'ms',
      goal: 1.3,
    });
    const sandbox = steps.get('sandbox');
    if (sandbox) {
      figures.push({
        name: `SDK 1.x step of \`true\`, median of ${sandbox.length} (sandbox backend)`,
        value: percentile(sandbox, 50),
        baselineName: 'the same step on the local backend, same run',
        baseline: local,
        unit: 'ms',
        goal: 1.5,
      });
    }
    return figures;
  },
};

export default bench;
