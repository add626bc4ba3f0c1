// The container backend's overheads, each beside a baseline measured in the same run:
// - per SDK 1.x step: 500 steps of `true` through the whole protocol in a container (request,
//   response, the command through the container's executor, cwd tracking, records) against the
//   same steps on the local backend, in interleaved rounds of 100 so that a burst of load from
//   other processes does not decide the ratio (the goal: within 2×); the bare
//   `<engine> exec <container> true` that each step cost before the executor is logged beside;
// - a task image with a warm cache (the build context hashed, the image found) against
//   `<engine> image exists` of the same image.
// Needs a working engine and the base image (`belay image build-base`); says so and gives no
// figure otherwise.
import { mkdir, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import type { Backend } from '../src/runner/core/backends/backend.ts';
import { containerBackend } from '../src/runner/core/backends/container.ts';
import { localBackend } from '../src/runner/core/backends/local.ts';
import { detectEngine, type Engine } from '../src/runner/core/backends/engine.ts';
import { BASE_IMAGE } from '../src/runner/core/backends/image-base.ts';
import { imageSource, taskImage } from '../src/runner/core/backends/image-task.ts';
import { loadTask, type Task } from '../src/runner/core/tasks/task.ts';
import { runBounded } from '../src/shared/process.ts';
import { harnessSteps } from './harness-steps.ts';
import { alternatingMedians, percentile, type BenchFile, type Figure } from './lib.ts';

const STEPS = 500;
const ROUNDS = 5;
const PER_ROUND = STEPS / ROUNDS;

/** `count` bare `exec … true` in a container of the task's image, each timed. */
async function bareExecs(engine: Engine, backend: Backend, base: string, count: number, task: Task): Promise<number[]> {
  const folders = {
    workspace: path.join(base, 'app'),
    tests: path.join(base, 'tests'),
    logs: path.join(base, 'logs'),
    control: path.join(base, 'control'),
    scratch: path.join(base, 'scratch'),
    environmentLog: path.join(base, 'environment.log'),
  };
  await mkdir(folders.workspace, { recursive: true });
  const runId = `bench-bare-${process.pid}-${Date.now()}`;
  const session = await backend.open({ runId, task, folders, agentFolders: [], hidden: [] });
  const name = (await engine.check(['ps', '--filter', `label=belay.run=${runId}`, '--format', '{{.Names}}'], { timeoutMs: 60_000 })).trim();
  const times: number[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const t0 = performance.now();
      const result = await runBounded({ argv: engine.argv(['exec', name, 'true']), cwd: '/', env: engine.env, timeoutMs: 30_000, maxOutputChars: 1000 });
      times.push(performance.now() - t0);
      if (result.exitCode !== 0) throw new Error(`bare exec failed: ${result.stderr.text('…')}`);
    }
  } finally {
    await session.close();
  }
  return times;
}

const bench: BenchFile = {
  title: 'Container backend',
  async run(ctx) {
    let engine: Engine;
    let backend: Backend;
    try {
      engine = await detectEngine();
      if (!(await engine.imageExists(BASE_IMAGE))) throw new Error(`${BASE_IMAGE} is not built (belay image build-base)`);
      backend = await containerBackend({ engine: engine.name });
    } catch (error) {
      ctx.log(`container backend skipped: ${(error as Error).message}`);
      return [];
    }
    const figures: Figure[] = [];

    // A task of the base image with a small build context, built once before timing.
    const taskDir = path.join(ctx.tmpDir, 'task');
    await mkdir(path.join(taskDir, 'environment'), { recursive: true });
    await mkdir(path.join(taskDir, 'tests'), { recursive: true });
    await writeFile(path.join(taskDir, 'task.toml'), '[agent]\ntimeout_sec = 600\n');
    await writeFile(path.join(taskDir, 'instruction.md'), 'Run true.\n');
    await writeFile(path.join(taskDir, 'tests', 'test.sh'), 'exit 0\n');
    await writeFile(path.join(taskDir, 'environment', 'Dockerfile'), `FROM ${BASE_IMAGE}\nWORKDIR /app\nCOPY data.txt /app/data.txt\n`);
    await writeFile(path.join(taskDir, 'environment', 'data.txt'), 'x'.repeat(64 * 1024));
    const task = await loadTask(taskDir);
    const source = await imageSource(taskDir, 'current');
    if (source.kind === 'base') throw new Error('the bench task has no Dockerfile');
    const build = (log: string) => taskImage({ engine, taskName: task.name, taskDir, source, logFile: path.join(ctx.tmpDir, log), timeoutMs: 600_000 });
    const { image } = await build('first-build.log');
    try {
      const [exists, warm] = await alternatingMedians(
        () => engine.imageExists(image),
        async () => {
          if (!(await build('warm-build.log')).cached) throw new Error('the warm build built again');
        },
        20,
      );
      ctx.log(`${engine.name}: warm-cache image ${warm.toFixed(1)} ms, image exists ${exists.toFixed(1)} ms`);
      figures.push({ name: `task image with a warm cache (${engine.name})`, value: warm, baselineName: `\`${engine.name} image exists\` of the same image`, baseline: exists, unit: 'ms', goal: 2 });

      const base = path.join(ctx.tmpDir, 'steps');
      await bareExecs(engine, backend, path.join(base, 'warmup'), 20, task);
      const bare: number[] = [];
      const local: number[] = [];
      const steps: number[] = [];
      const agentCwd = path.join(ctx.repoRoot, 'test', 'fixtures', 'runner', 'agents');
      for (let round = 0; round < ROUNDS; round++) {
        bare.push(...(await bareExecs(engine, backend, path.join(base, `bare-${round}`), PER_ROUND / 5, task)));
        local.push(...(await harnessSteps(ctx, { backend: localBackend(), runsDir: path.join(base, 'local'), task, agentCwd, steps: PER_ROUND })));
        steps.push(...(await harnessSteps(ctx, { backend, runsDir: path.join(base, 'runs'), task, agentCwd, steps: PER_ROUND })));
      }
      const value = percentile(steps, 50);
      const baseline = percentile(local, 50);
      ctx.log(`${engine.name}: median ${value.toFixed(2)} ms per SDK 1.x step in a container, ${baseline.toFixed(2)} ms on the local backend, ${percentile(bare, 50).toFixed(1)} ms per bare exec (median of ${bare.length})`);
      figures.push({
        name: `SDK 1.x step of \`true\` in a container, median of ${steps.length} (${engine.name})`,
        value,
        baselineName: `the same step on the local backend, median of ${local.length}`,
        baseline,
        unit: 'ms',
        goal: 2,
      });
    } finally {
      await engine.run(['rmi', '--force', image], { timeoutMs: 120_000 });
    }
    return figures;
  },
};

export default bench;
