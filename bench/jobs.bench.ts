// A job against single runs: 40 trivial trials (the hello task, a scripted three-step SDK 1.x
// agent, the local backend) as one job at concurrency 4, against the same 40 runs one after
// another, in the same bench run and in alternating rounds. The job does all a job does
// (job.json written atomically after every trial, the lock, the summary).
import { realpathSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { localBackend } from '../src/runner/core/backends/local.ts';
import { createJob, runJob } from '../src/runner/core/jobs/job.ts';
import { sdk1 } from '../src/runner/core/protocols/sdk1.ts';
import { runTask, type RunTaskOptions } from '../src/runner/core/run/run.ts';
import { loadTask } from '../src/runner/core/tasks/task.ts';
import { alternatingMedians, type BenchFile } from './lib.ts';

const TRIALS = 40;
const CONCURRENCY = 4;

const bench: BenchFile = {
  title: 'Jobs',
  async run(ctx) {
    const fixtures = path.join(ctx.repoRoot, 'test', 'fixtures', 'runner');
    const task = await loadTask(path.join(fixtures, 'tasks', 'hello'));
    const backend = localBackend();
    const common: Omit<RunTaskOptions, 'runsDir'> = {
      task,
      agentCommand: `'${process.execPath}' '${path.join(fixtures, 'agents', 'multi-step.mjs')}'`,
      agentCwd: ctx.repoRoot,
      agentFolders: [path.dirname(realpathSync(process.execPath))],
      protocol: sdk1,
      backend,
    };
    let round = 0;
    const sequential = async () => {
      const runsDir = path.join(ctx.tmpDir, `single-${round}`);
      for (let i = 0; i < TRIALS; i++) {
        const result = await runTask({ ...common, runsDir });
        if (!result.passed) throw new Error(`a single run failed: ${result.error}`);
      }
    };
    const job = async () => {
      const jobDir = await createJob({ jobsDir: path.join(ctx.tmpDir, `jobs-${round++}`), tasks: [task], settings: { agent: common.agentCommand, protocol: 'sdk1', backend: 'local', attempts: TRIALS, options: {} } });
      const record = await runJob({ jobDir, tasks: [task], concurrency: CONCURRENCY, runTrial: ({ runsDir, runId, signal, onEvent }) => runTask({ ...common, runsDir, runId, signal, onEvent }) });
      if (record.totals.passed !== TRIALS) throw new Error(`the job passed ${record.totals.passed}/${TRIALS}`);
    };
    const [baseline, value] = await alternatingMedians(sequential, job, 2);
    const cores = os.availableParallelism();
    ctx.log(`${TRIALS} trials: job at concurrency ${CONCURRENCY} ${(value / 1000).toFixed(2)} s, one after another ${(baseline / 1000).toFixed(2)} s: ${(baseline / value).toFixed(2)}× faster on ${cores} core(s)`);
    return [
      {
        name: `job of ${TRIALS} trivial trials at concurrency ${CONCURRENCY} (${cores} cores)`,
        value,
        baselineName: `${TRIALS} single runs one after another`,
        baseline,
        unit: 'ms',
        // The goal: at least 3× faster on 4 cores, 1.6× on 2.
        goal: cores >= 4 ? 1 / 3 : 1 / 1.6,
      },
    ];
  },
};

export default bench;
