// Jobs from the editor: "Run Job…" (tasks × attempts with one agent, N trials at a time) and
// "Resume Job…", under a cancellable progress notification, the Results view opening on the job
// and following it. Each trial is a run started by the RunnerService, as a single run is: the
// same trust check, secrets and backend; the job runner (core/jobs/job.ts) writes job.json.
import * as vscode from 'vscode';
import { errorMessage } from '../shared/errors.ts';
import { addAgent } from './agentSettings.ts';
import type { BelayContext } from '../context.ts';
import type { Agent } from './core/agents/agents.ts';
import type { JobRecord } from './core/jobs/schema.ts';
import type { Task } from './core/tasks/task.ts';
import { pickAgent } from './pickers.ts';
import type { Prompts } from './prompts.ts';
import type { ResultsPanel } from './resultsPanel.ts';
import type { RunnerService } from './service.ts';

/** What jobs need of the runner's parts (commands.ts's RunnerParts has them). */
interface RunnerParts {
  readonly ctx: BelayContext;
  readonly service: RunnerService;
  readonly prompts: Prompts;
  readonly results: ResultsPanel;
}

/** What a command's argument may say instead of asking (keybindings, tests). */
interface RunJobArg {
  tasks?: string[];
  agent?: string;
  attempts?: number;
  concurrency?: number;
}

const MAX_ATTEMPTS = 100;

function positive(text: string | undefined, max: number): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text.trim());
  return Number.isInteger(n) && n >= 1 && n <= max ? n : undefined;
}

async function askNumber(parts: RunnerParts, title: string, prompt: string, value: number, max: number): Promise<number | undefined> {
  const answer = await parts.prompts.input({
    title,
    prompt,
    value: String(value),
    validateInput: (text) => (positive(text, max) === undefined ? `a whole number from 1 to ${max}` : undefined),
  });
  return positive(answer, max);
}

/** "Belay: Run Job…": picks tasks, an agent, attempts and concurrency, then runs the job. Resolves with the job's folder. */
export async function runJobCommand(parts: RunnerParts, arg?: unknown): Promise<string | undefined> {
  const { ctx, service } = parts;
  if (!ctx.trust.require('runAgents')) return undefined;
  const given = (typeof arg === 'object' && arg !== null ? arg : {}) as RunJobArg;
  await service.refresh();
  if (service.tasks.length === 0) throw new Error('there is no task in this workspace to run a job of');
  let tasks: Task[];
  if (given.tasks) {
    tasks = given.tasks.map((ref) => {
      const task = service.findTask(ref);
      if (!task) throw new Error(`no task '${ref}' in this workspace`);
      return task;
    });
  } else {
    const picked = await parts.prompts.pickMany(
      service.tasks.map((task) => ({ label: task.name, description: vscode.workspace.asRelativePath(task.dir), picked: true, task })),
      { title: 'Belay: Run Job (1/4): tasks', placeHolder: 'Which tasks? (all are ticked)' },
    );
    if (!picked || picked.length === 0) return undefined;
    tasks = picked.map((p) => p.task);
  }
  let agent: Agent | undefined;
  if (given.agent !== undefined) {
    agent = service.findAgent(given.agent);
    if (!agent) throw new Error(`no agent named '${given.agent}'`);
  } else agent = await pickAgent(service, 'Belay: Run Job (2/4): agent', () => addAgent(ctx, service, parts.prompts));
  if (!agent) return undefined;
  const attempts = given.attempts ?? (await askNumber(parts, 'Belay: Run Job (3/4): attempts', 'How many times to run each task (pass@k is computed for every k up to it)', 3, MAX_ATTEMPTS));
  if (attempts === undefined) return undefined;
  const { createJob, defaultConcurrency } = await import('./core/jobs/job.ts');
  const trials = tasks.length * attempts;
  const concurrency =
    given.concurrency ?? (await askNumber(parts, 'Belay: Run Job (4/4): concurrency', `How many of the ${trials} trials run at once`, Math.min(defaultConcurrency(), trials), 64));
  if (concurrency === undefined) return undefined;
  const backend = await service.backendName();
  const jobDir = await createJob({
    jobsDir: service.jobsDirFor(tasks[0]!.dir),
    tasks,
    settings: {
      agent: agent.command,
      agent_name: agent.name,
      protocol: agent.protocol,
      backend,
      attempts,
      options: { agent_dir: agent.baseDir, concurrency, started_by: 'editor' },
    },
  });
  ctx.log.info(`runner: job ${jobDir}: ${tasks.length} task(s) × ${attempts} attempt(s) with ${agent.name}, ${concurrency} at a time`);
  await executeJob(parts, jobDir, tasks, agent, concurrency);
  return jobDir;
}

/** "Belay: Resume Job…": goes on with a job that was stopped or whose editor or process ended. */
export async function resumeJobCommand(parts: RunnerParts, arg?: unknown): Promise<string | undefined> {
  const { ctx, service } = parts;
  if (!ctx.trust.require('runAgents')) return undefined;
  const { readJob } = await import('./core/jobs/schema.ts');
  const { jobHolder, defaultConcurrency } = await import('./core/jobs/job.ts');
  const jobDir = typeof arg === 'string' ? arg : await pickUnfinishedJob(parts);
  if (!jobDir) return undefined;
  const job = await readJob(jobDir);
  if (job.status === 'finished') throw new Error(`the job ${job.job_id} has finished: every trial ran`);
  const holder = await jobHolder(jobDir);
  if (holder !== undefined) throw new Error(`the job ${job.job_id} is being run by process ${holder}`);
  await service.refresh();
  const name = job.settings.agent_name;
  const agent = name !== undefined ? service.findAgent(name) : undefined;
  if (!agent) {
    throw new Error(
      name === undefined
        ? `the job ${job.job_id} was started by \`belay run\`: resume it there with \`belay run --resume ${jobDir}\``
        : `the job's agent '${name}' is no longer configured: add it again under that name to resume the job`,
    );
  }
  const { loadTask } = await import('./core/tasks/task.ts');
  const tasks: Task[] = [];
  for (const ref of job.settings.tasks) {
    if (job.trials.every((t) => t.task_key !== ref.key || t.status === 'finished')) continue;
    tasks.push(service.tasks.find((t) => t.dir === ref.key) ?? (await loadTask(ref.key)));
  }
  const stored = (job.settings.options as { concurrency?: unknown }).concurrency;
  const concurrency = typeof stored === 'number' && Number.isInteger(stored) && stored >= 1 ? stored : defaultConcurrency();
  await executeJob(parts, jobDir, tasks, agent, concurrency);
  return jobDir;
}

async function pickUnfinishedJob(parts: RunnerParts): Promise<string | undefined> {
  const { listJobFolders } = await import('./core/results/discover.ts');
  const { readJob } = await import('./core/jobs/schema.ts');
  const { jobHolder } = await import('./core/jobs/job.ts');
  const folders = (await listJobFolders(parts.service.jobsDirs)).filter((f) => f.source === 'belay');
  const items: (vscode.QuickPickItem & { dir: string })[] = [];
  for (const folder of folders) {
    const job = await readJob(folder.dir).catch(() => undefined);
    if (!job || job.status === 'finished' || (await jobHolder(folder.dir)) !== undefined) continue;
    const done = job.trials.filter((t) => t.status === 'finished').length;
    items.push({
      label: job.job_id,
      description: `${done}/${job.trials.length} trials done · ${job.settings.agent_name ?? job.settings.agent}`,
      detail: job.settings.tasks.map((t) => t.name).join(', '),
      dir: folder.dir,
    });
  }
  if (items.length === 0) throw new Error('no stopped job to resume: every job in the jobs folder has finished or is running');
  return (await parts.prompts.pick(items, { title: 'Belay: Resume Job', placeHolder: 'Which job?' }))?.dir;
}

function percent(value: number | null): string {
  return value === null ? '–' : `${(value * 100).toFixed(1)}%`;
}

/** Runs (or resumes) the job under a cancellable notification, the Results view showing it. */
async function executeJob(parts: RunnerParts, jobDir: string, tasks: readonly Task[], agent: Agent, concurrency: number): Promise<JobRecord | undefined> {
  const { ctx, service, results } = parts;
  const { runJob, JobLockedError } = await import('./core/jobs/job.ts');
  const { progressText } = await import('./core/jobs/progress.ts');
  void results.show(jobDir).catch((error: unknown) => ctx.log.error(`results: ${errorMessage(error)}`));
  const name = jobDir.split(/[\\/]/).at(-1)!;
  let job: JobRecord;
  try {
    job = await parts.prompts.progress(`Belay: job ${name}`, (report, signal) =>
      runJob({
        jobDir,
        tasks,
        concurrency,
        signal,
        onEvent: (event) => {
          if (event.type === 'progress') report(progressText(event.progress));
          if (event.type === 'trial-started' || event.type === 'trial-ended' || event.type === 'job-ended') results.refresh();
          // The Tasks view and the pickers show trials as runs.
          if (event.type === 'trial-ended') service.refreshSoon();
        },
        runTrial: ({ task, runId, runsDir, signal: stop, onEvent }) => service.start(task, agent, { runId, runsDir, signal: stop, onEvent }),
      }),
    );
  } catch (error) {
    if (error instanceof JobLockedError) {
      void vscode.window.showWarningMessage(`Belay: ${error.message}.`);
      return undefined;
    }
    throw error;
  }
  results.refresh();
  const done = job.trials.filter((t) => t.status === 'finished').length;
  const k = job.settings.attempts;
  if (job.status === 'finished') {
    const scores = `pass@1 ${percent(job.totals.pass_at_1)}${k > 1 ? `, pass@${k} ${percent(job.totals.pass_at_k)}` : ''}`;
    void vscode.window.showInformationMessage(`Belay: job ${name} finished: ${job.totals.passed}/${done} trials passed, ${scores}.`, 'Open Results').then((choice) => {
      if (choice) void results.show(jobDir);
    });
  } else {
    void vscode.window
      .showWarningMessage(`Belay: job ${name} stopped with ${done} of ${job.trials.length} trials done. "Belay: Resume Job…" goes on with it.`, 'Resume Job')
      .then((choice) => {
        // The command's own function, with the command's boundary for its errors.
        if (choice) resumeJobCommand(parts, jobDir).catch((error: unknown) => ctx.reportError('belay.runner.resumeJob', error));
      });
  }
  return job;
}
