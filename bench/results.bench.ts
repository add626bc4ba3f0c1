// The Results view in the real workbench: time from a job's state arriving in the webview to the
// matrix drawn (laid out, at the next frame), for a job of 1,000 trials (200 tasks × 5 attempts),
// against an empty job of the same 5 attempts drawn by the same page in the same run. The page
// stamps each render on <body data-render-ms>; switching jobs in its Job picker sends the state.
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { percentile, type BenchContext, type BenchFile, type Figure } from './lib.ts';
import { createJob } from '../src/runner/core/jobs/job.ts';
import { readJob, writeJob } from '../src/runner/core/jobs/schema.ts';
import { summarizeJob } from '../src/runner/core/jobs/summary.ts';
import type { Task } from '../src/runner/core/tasks/task.ts';
import { runPaletteCommand } from '../scripts/lib/workbench.ts';
import { openWorkbench } from '../test/support/workbench.ts';

const TASKS = 200;
const ATTEMPTS = 5;
const ROUNDS = 12;
const GOAL_MS = 300;

/** A finished job of `tasks` × ATTEMPTS with made-up outcomes (no run folders: nothing is opened). */
async function writeFinishedJob(jobsDir: string, jobId: string, tasks: number): Promise<string> {
  const fake = Array.from({ length: tasks }, (_, i) => ({ dir: `/bench/tasks/task-${String(i).padStart(4, '0')}`, name: `task-${String(i).padStart(4, '0')}` }) as Task);
  const jobDir = await createJob({ jobsDir, jobId, tasks: fake, settings: { agent: 'node agent.mjs', agent_name: 'bench agent', protocol: 'sdk1', backend: 'local', attempts: ATTEMPTS, options: {} } });
  const job = await readJob(jobDir);
  job.trials.forEach((t, i) => {
    const passed = (i * 7919) % 10 < 6;
    Object.assign(t, {
      status: 'finished',
      run_id: `run-${t.trial_id}`,
      started_at: '2026-01-01T00:00:00.000Z',
      ended_at: '2026-01-01T00:00:10.000Z',
      passed,
      reward: passed ? 1 : 0,
      duration_sec: 1 + ((i * 31) % 120),
      steps: 1 + (i % 17),
      failure_cause: passed ? null : 'tests_failed',
      llm: { requests: 3, input_tokens: 1000 + i, output_tokens: 200, cost_usd: 0.001 * (i % 50) },
    });
  });
  Object.assign(job, summarizeJob(job.settings, job.trials), { status: 'finished', ended_at: '2026-01-01T00:10:00.000Z' });
  await writeJob(jobDir, job);
  return jobDir;
}

const bench: BenchFile = {
  title: `Results view: job state arrived -> matrix drawn in the real workbench (${TASKS * ATTEMPTS} trials)`,
  async run(ctx: BenchContext): Promise<Figure[]> {
    execFileSync(process.execPath, ['scripts/build.ts'], { cwd: ctx.repoRoot, stdio: 'ignore' });
    const wb = await openWorkbench({ theme: 'dark' });
    const big: number[] = [];
    const empty: number[] = [];
    try {
      const jobsDir = path.join(wb.workspace, '.belay', 'jobs');
      const emptyDir = await writeFinishedJob(jobsDir, '20260101T000000Z-job-empty', 0);
      const bigDir = await writeFinishedJob(jobsDir, '20260101T000001Z-job-big', TASKS);
      await runPaletteCommand(wb.page, 'Belay: Open Results');
      const frame = wb.page.frameLocator('iframe.webview.ready').last().frameLocator('#active-frame');
      await frame.locator('.body .row', { hasText: 'task-0000' }).waitFor({ timeout: 60_000 });
      const body = frame.locator('body');
      const renders = async () => Number((await body.getAttribute('data-renders')) ?? '0');
      const show = async (dir: string): Promise<number> => {
        const before = await renders();
        await frame.locator('#job').selectOption(dir);
        for (let i = 0; i < 400 && (await renders()) <= before; i++) await new Promise((r) => setTimeout(r, 25));
        if ((await renders()) <= before) throw new Error('the Results view never drew the job');
        return Number(await body.getAttribute('data-render-ms'));
      };
      // A warm-up round: the first draw of each pays for loading code paths.
      await show(emptyDir);
      await show(bigDir);
      for (let i = 0; i < ROUNDS; i++) {
        empty.push(await show(emptyDir));
        big.push(await show(bigDir));
      }
    } finally {
      await wb.close();
    }
    const p50 = percentile(big, 50);
    ctx.log(`1,000 trials: p50 ${p50.toFixed(1)} ms, max ${Math.max(...big).toFixed(1)} ms (goal: under ${GOAL_MS} ms); empty job: p50 ${percentile(empty, 50).toFixed(1)} ms`);
    return [
      {
        name: `Results view, job of ${TASKS * ATTEMPTS} trials: state arrived -> drawn (real workbench), p50 of ${ROUNDS}`,
        value: Number(p50.toFixed(2)),
        baselineName: `an empty job of ${ATTEMPTS} attempts, same view, same run, p50`,
        baseline: Number(percentile(empty, 50).toFixed(2)),
        unit: 'ms',
      },
    ];
  },
};

export default bench;
