// `belay run --attempts K` and `belay run --resume DIR/<job-id>`: a job of every task × K
// attempts. On stderr one line per finished trial and a progress line (redrawn in place on a
// terminal, a plain line after each trial otherwise); on stdout the per-task table (or job.json).
import * as os from 'node:os';
import * as path from 'node:path';
import { errorMessage } from '../shared/errors.ts';
import { shellQuote } from '../shared/shell.ts';
import { neutraliseControls } from '../shared/terminalText.ts';
import { rewardWords } from '../runner/core/records/format.ts';
import { parseEnvOptions } from '../runner/core/agents/agents.ts';
import { BackendUnavailableError, type Backend } from '../runner/core/backends/backend.ts';
import { isBackendName, pickBackend } from '../runner/core/backends/choose.ts';
import type { Protocol } from '../runner/core/records/events.ts';
import { createJob, defaultConcurrency, JobLockedError, runJob, type JobEvent } from '../runner/core/jobs/job.ts';
import { progressText } from '../runner/core/jobs/progress.ts';
import { readJob, type JobRecord } from '../runner/core/jobs/schema.ts';
import type { RunLimits } from '../runner/core/protocols/agentProtocol.ts';
import { isProtocol, protocolNamed } from '../runner/core/protocols/index.ts';
import { runTask } from '../runner/core/run/run.ts';
import { loadTask, type Task } from '../runner/core/tasks/task.ts';
import { onSignals, UsageError, type CliIO } from './io.ts';
import { checkLlmKey, startLlm, storedLlmFlags, type LlmFlags } from './llm.ts';

/** What the runs of a job need beyond the task: kept in job.json's settings.options. */
interface TrialSettings {
  agent: string;
  agentCwd: string;
  protocol: Protocol;
  backend: Backend;
  limits: Partial<RunLimits>;
  env: Record<string, string>;
  hidden: string[];
  /** The model flags (no key: the variable's name, read again on resume). */
  llm: LlmFlags | undefined;
  /** --allow-public-network: a task's `public` network is allowed (kept with the job). */
  allowPublicNetwork: boolean;
  /** --wheelhouse: where a Python agent's requirements come from (kept with the job). */
  wheelhouse?: string;
}

export interface NewJobOptions extends Omit<TrialSettings, 'agent'> {
  jobsDir: string;
  tasks: readonly Task[];
  attempts: number;
  concurrency: number | undefined;
  agent: string | undefined;
  engine: string | undefined;
  /** --engine-host as given (kept with the job: a resume goes to the same hosts). */
  engineHosts?: readonly string[];
  /** The --env options as given: values are never stored, names given alone are read again on resume. */
  envOptions: readonly string[];
  json: boolean;
}

export async function newJob(options: NewJobOptions, io: CliIO): Promise<number> {
  const tasks = uniqueByFolder(options.tasks);
  const jobDir = await createJob({
    jobsDir: options.jobsDir,
    tasks,
    settings: {
      agent: options.agent!,
      protocol: options.protocol,
      backend: options.backend.name,
      attempts: options.attempts,
      options: {
        agent_dir: options.agentCwd,
        ...(options.engine !== undefined ? { engine: options.engine } : {}),
        ...(options.engineHosts && options.engineHosts.length > 0 ? { engine_hosts: [...options.engineHosts] } : {}),
        limits: options.limits,
        env_names: Object.keys(options.env),
        // KEY alone means "from this shell": safe to keep, and read again on resume.
        env_from_shell: options.envOptions.filter((option) => !option.includes('=')),
        hidden: [...new Set(options.hidden)],
        ...(options.llm ? { llm: options.llm } : {}),
        ...(options.allowPublicNetwork ? { allow_public_network: true } : {}),
        ...(options.wheelhouse !== undefined ? { wheelhouse: options.wheelhouse } : {}),
      },
    },
  });
  io.stderr.write(`belay run: job ${path.basename(jobDir)}: ${tasks.length} task(s) × ${options.attempts} attempt(s), protocol ${options.protocol}, backend ${options.backend.label}\n`);
  const settings: TrialSettings = { ...options, agent: options.agent! };
  return execute(jobDir, tasks, settings, options.concurrency, options.json, io);
}

export async function resumeJob(options: { jobDir: string; concurrency: number | undefined; envOptions: readonly string[]; json: boolean }, io: CliIO): Promise<number> {
  let job: JobRecord;
  try {
    job = await readJob(options.jobDir);
  } catch (error) {
    throw new UsageError(`--resume: ${errorMessage(error)}`);
  }
  const stored = job.settings.options as { agent_dir?: string; engine?: string; engine_hosts?: unknown; limits?: Partial<RunLimits>; env_names?: string[]; env_from_shell?: string[]; hidden?: string[]; llm?: unknown; allow_public_network?: unknown; wheelhouse?: unknown };
  let llm: LlmFlags | undefined;
  try {
    llm = storedLlmFlags(stored.llm);
  } catch (error) {
    throw new UsageError(`--resume: the job's model settings: ${errorMessage(error)}`);
  }
  if (llm) checkLlmKey(llm, io.env);
  let env: Record<string, string>;
  try {
    env = parseEnvOptions([...(stored.env_from_shell ?? []).filter((name) => !options.envOptions.some((o) => o.split('=')[0] === name)), ...options.envOptions]);
  } catch (error) {
    throw new UsageError(`--env: ${errorMessage(error)}`);
  }
  const missing = (stored.env_names ?? []).filter((name) => env[name] === undefined);
  if (missing.length > 0) io.stderr.write(`belay run: the job's agent had ${missing.join(', ')}; give ${missing.length > 1 ? 'them' : 'it'} again with --env to pass ${missing.length > 1 ? 'them' : 'it'} on\n`);
  const tasks: Task[] = [];
  for (const ref of job.settings.tasks) {
    if (job.trials.every((t) => t.task_key !== ref.key || t.status === 'finished')) continue;
    try {
      tasks.push(await loadTask(ref.key));
    } catch (error) {
      io.stderr.write(`belay run: the job's task ${ref.key} cannot be loaded: ${errorMessage(error)}\n`);
      return 1;
    }
  }
  if (!isProtocol(job.settings.protocol)) throw new UsageError(`--resume: the job's protocol '${job.settings.protocol}' is not one this Belay runs`);
  if (!isBackendName(job.settings.backend)) throw new UsageError(`--resume: the job's backend '${job.settings.backend}' is not one this Belay has`);
  const engine = stored.engine === 'podman' || stored.engine === 'docker' ? stored.engine : undefined;
  let backend: Backend;
  try {
    const engineHosts = Array.isArray(stored.engine_hosts) ? stored.engine_hosts.filter((host): host is string => typeof host === 'string') : [];
    backend = await pickBackend(job.settings.backend, { container: { ...(engine !== undefined ? { engine } : {}), ...(engineHosts.length > 0 ? { engineHosts } : {}) } });
  } catch (error) {
    if (!(error instanceof BackendUnavailableError)) throw error;
    io.stderr.write(`belay run: ${error.message}\n`);
    return 1;
  }
  const done = job.trials.filter((t) => t.status === 'finished').length;
  io.stderr.write(`belay run: resuming job ${job.job_id}: ${done}/${job.trials.length} trial(s) finished before, backend ${backend.label}\n`);
  const settings: TrialSettings = {
    agent: job.settings.agent,
    agentCwd: stored.agent_dir ?? io.cwd,
    protocol: job.settings.protocol,
    backend,
    limits: stored.limits ?? {},
    env,
    hidden: stored.hidden ?? job.settings.tasks.map((t) => t.key),
    llm,
    allowPublicNetwork: stored.allow_public_network === true,
    ...(typeof stored.wheelhouse === 'string' ? { wheelhouse: stored.wheelhouse } : {}),
  };
  return execute(path.resolve(options.jobDir), tasks, settings, options.concurrency, options.json, io);
}

function uniqueByFolder(tasks: readonly Task[]): Task[] {
  const seen = new Set<string>();
  return tasks.filter((task) => !seen.has(path.resolve(task.dir)) && seen.add(path.resolve(task.dir)) !== undefined);
}

async function execute(jobDir: string, tasks: readonly Task[], settings: TrialSettings, concurrency: number | undefined, json: boolean, io: CliIO): Promise<number> {
  const controller = new AbortController();
  const onSigint = () => {
    io.stderr.write('\nbelay run: stopping the job (its running trials are run again on --resume)...\n');
    controller.abort();
  };
  const offSigint = onSignals(['SIGINT'], onSigint);
  const labels = taskLabels(tasks, io.cwd);
  const progress = progressWriter(io.stderr);
  // One gateway for every trial of the job: their 429 backoff is shared, each has its own token and budget.
  const llm = settings.llm ? await startLlm(settings.llm, io.env) : undefined;
  let job: JobRecord;
  try {
    job = await runJob({
      jobDir,
      tasks,
      concurrency: concurrency ?? defaultConcurrency(),
      signal: controller.signal,
      onEvent: (event) => progress.event(event, labels),
      runTrial: ({ task, runId, runsDir, signal, onEvent }) =>
        runTask({
          task,
          agentCommand: settings.agent,
          agentCwd: settings.agentCwd,
          agentFolders: [path.dirname(process.execPath)],
          // Other jobs beside this one hold tests and answers too (this job's folder is hidden as the runs' folder).
          hidden: [...settings.hidden, ...(inside(settings.agentCwd, path.dirname(jobDir)) ? [] : [path.dirname(jobDir)])],
          protocol: protocolNamed(settings.protocol),
          backend: settings.backend,
          runsDir,
          runId,
          limits: settings.limits,
          env: settings.env,
          ...(llm ? { llm: llm.options } : {}),
          allowPublicNetwork: settings.allowPublicNetwork,
          ...(settings.wheelhouse !== undefined ? { wheelhouse: settings.wheelhouse } : {}),
          onEvent,
          signal,
        }),
    });
  } catch (error) {
    if (error instanceof JobLockedError) {
      io.stderr.write(`belay run: ${error.message}\n`);
      return 1;
    }
    throw error;
  } finally {
    progress.done();
    offSigint();
    await llm?.host.close();
  }
  if (json) io.stdout.write(JSON.stringify(job, null, 2) + '\n');
  else io.stdout.write(jobTable(job, io.cwd));
  io.stderr.write(`belay run: job ${job.status}: ${path.join(jobDir, 'job.json')}\n`);
  if (job.status !== 'finished') io.stderr.write(`belay run: go on with: belay run --resume ${shellQuote(path.relative(io.cwd, jobDir) || jobDir)}\n`);
  return job.status === 'finished' && job.totals.failed === 0 ? 0 : 1;
}

function inside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** Task names, or `parent/name` where two tasks share a name (their whole folder if that is not enough). */
function taskLabels(tasks: readonly { name: string; dir: string }[], cwd: string): Map<string, string> {
  const counted = (labels: string[]) => labels.map((label) => labels.filter((other) => other === label).length);
  const names = tasks.map((t) => t.name);
  const short = tasks.map((t, i) => (counted(names)[i]! > 1 ? `${path.basename(path.dirname(path.resolve(t.dir)))}/${t.name}` : t.name));
  const shortCounts = counted(short);
  return new Map(tasks.map((t, i) => [path.resolve(t.dir), shortCounts[i]! > 1 ? path.relative(cwd, t.dir) || t.dir : short[i]!]));
}

/** The progress line, redrawn in place on a terminal; trial lines printed above it. */
export function progressWriter(stderr: NodeJS.WritableStream) {
  const tty = (stderr as { isTTY?: boolean }).isTTY === true;
  let shown = false;
  let last = '';
  const clear = () => {
    if (tty && shown) stderr.write('\r\x1b[K');
    shown = false;
  };
  const draw = () => {
    if (tty) {
      stderr.write(`\r\x1b[K${last}`);
      shown = true;
    }
  };
  return {
    event(event: JobEvent, labels: Map<string, string>) {
      const label = (key: string, name: string, attempt: number) => `[${labels.get(key) ?? name} #${attempt}]`;
      switch (event.type) {
        case 'job-started':
          if (event.rerun.length > 0) {
            clear();
            stderr.write(`belay run: ${event.rerun.length} trial(s) cut short run again (their partial folders are in .interrupted/)\n`);
          }
          break;
        case 'trial-ended': {
          const { trial, result } = event;
          clear();
          const outcome = trial.passed ? 'PASSED' : `FAILED: ${trial.failure_cause ?? 'failed'}${result.error ? `: ${neutraliseControls(result.error.replace(/\s+/g, ' ').slice(0, 120))}` : ''}`;
          stderr.write(`${label(trial.task_key, trial.task_name, trial.attempt)} ${outcome} (${neutraliseControls(rewardWords(trial.reward, trial.metrics ?? undefined))}, ${trial.steps} steps, ${(trial.duration_sec ?? 0).toFixed(1)}s${trial.host ? `, on ${neutraliseControls(trial.host)}` : ''}) ${result.run_dir}\n`);
          // Without a terminal the progress is a plain line after each finished trial.
          if (!tty) stderr.write(`${last}\n`);
          draw();
          break;
        }
        case 'progress':
          last = `belay run: ${progressText(event.progress)}`;
          draw();
          break;
        default:
          break;
      }
    },
    done() {
      clear();
    },
  };
}

function fixed(value: number | null, digits = 2): string {
  return value === null ? '-' : value.toFixed(digits);
}

/** One row per task (pass@1, pass@k, mean reward, mean time, cost), then the job's totals. */
export function jobTable(job: JobRecord, cwd: string): string {
  const k = job.settings.attempts;
  const labels = taskLabels(job.settings.tasks.map((t) => ({ name: t.name, dir: t.key })), cwd);
  const row = (name: string, s: JobRecord['totals'] | JobRecord['tasks'][number]) => [
    name,
    `${s.passed}/${s.attempts}`,
    fixed(s.pass_at_1),
    fixed(s.pass_at_k),
    // Without a single reward (several metrics, none named), each metric's mean.
    s.mean_reward === null && s.mean_metrics ? neutraliseControls(rewardWords(null, s.mean_metrics)) : fixed(s.mean_reward),
    s.mean_duration_sec === null ? '-' : `${s.mean_duration_sec.toFixed(1)}s`,
    s.llm ? `$${s.llm.cost_usd.toFixed(4)}` : '-',
  ];
  const full = [['task', 'passed', 'pass@1', `pass@${k}`, 'reward', 'time', 'cost'], ...job.tasks.map((t) => row(labels.get(t.key) ?? t.name, t)), row('(job)', job.totals)];
  // With one attempt pass@k is pass@1: one column, not the same one twice.
  const rows = k === 1 ? full.map((r) => r.filter((_, i) => i !== 3)) : full;
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const lines = rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd());
  lines.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '));
  lines.splice(lines.length - 1, 0, widths.map((w) => '-'.repeat(w)).join('  '));
  return `${lines.join(os.EOL)}${os.EOL}`;
}
