// What the Results view shows of a job, whoever made it: a job of `belay run --attempts` or of the
// editor (job.json), or a Harbor job folder (harbor.ts). One trial per cell of the matrix; the
// view never reads a job's own files, only this.
import * as path from 'node:path';
import type { JobRecord } from '../jobs/schema.ts';
import type { Signal } from '../records/signals.ts';
import type { CellRegrade } from '../../../contracts/resultsPage.ts';

export type TrialState = 'pending' | 'running' | 'finished';

export interface TrialView {
  trialId: string;
  /** The task's identity inside its job (a folder for Belay, the task's name for Harbor). */
  taskKey: string;
  taskName: string;
  attempt: number;
  /** The agent's name (Harbor: agent and model). */
  agent: string;
  state: TrialState;
  passed: boolean | null;
  /** null when unfinished, or when the tests gave several metrics and no single reward (see `metrics`). */
  reward: number | null;
  /** Every metric the tests wrote, when they wrote a reward file. */
  metrics: Readonly<Record<string, number>> | null;
  steps: number | null;
  durationSec: number | null;
  costUsd: number | null;
  tokens: number | null;
  failureCause: string | null;
  /** The other machine whose engine ran the trial (`user@host`), null when it ran here. */
  host: string | null;
  /** The trial's run folder (Belay's trajectory view opens it), once started. */
  runDir: string | null;
  /** An ATIF trajectory to open as a file when the run is not Belay's (Harbor). */
  trajectoryFile: string | null;
  /** Reward-hacking signals: recorded by the run (Belay), or found in the ATIF trajectory's tool calls (Harbor). */
  signals: Signal[];
  /** Its grade in the job's latest regrade, when the view shows it (latestRegrade.ts). */
  regrade?: CellRegrade | null;
}

export interface AgentScore {
  agent: string;
  /** The job's attempts per task: the k of pass@k. */
  k: number;
  passAt1: number | null;
  passAtK: number | null;
}

export interface JobView {
  id: string;
  dir: string;
  source: 'belay' | 'harbor';
  /** A short name: the folder's name. */
  label: string;
  status: 'running' | 'finished' | 'stopped';
  createdAt: string;
  attempts: number;
  scores: AgentScore[];
  trials: TrialView[];
}

/** A job.json as the view sees it. */
export function jobViewFromRecord(job: JobRecord, jobDir: string): JobView {
  const agent = agentLabel(job.settings.agent_name, job.settings.agent);
  return {
    id: job.job_id,
    dir: jobDir,
    source: 'belay',
    label: path.basename(jobDir),
    status: job.status,
    createdAt: job.created_at,
    attempts: job.settings.attempts,
    scores: [{ agent, k: job.settings.attempts, passAt1: job.totals.pass_at_1, passAtK: job.totals.pass_at_k }],
    trials: job.trials.map((t) => ({
      trialId: t.trial_id,
      taskKey: t.task_key,
      taskName: t.task_name,
      attempt: t.attempt,
      agent,
      state: t.status,
      passed: t.passed,
      reward: t.reward,
      metrics: t.metrics ?? null,
      steps: t.steps,
      durationSec: t.duration_sec,
      costUsd: t.llm?.cost_usd ?? null,
      tokens: t.llm ? t.llm.input_tokens + t.llm.output_tokens : null,
      failureCause: t.failure_cause,
      host: t.host ?? null,
      runDir: runFolder(jobDir, t.run_id),
      trajectoryFile: null,
      signals: t.signals ?? [],
    })),
  };
}

/** A trial's run folder: a plain name inside the job folder (a job.json naming a path elsewhere opens nothing). */
function runFolder(jobDir: string, runId: string | null): string | null {
  if (runId === null || runId === '' || runId === '.' || runId === '..' || /[\\/\0]/.test(runId)) return null;
  return path.join(jobDir, runId);
}

/**
 * An agent's name as a column says it: the name given in the editor, else its command line with
 * each path cut to its last part (`'/usr/bin/node' '/x/agent.mjs'` → `node agent.mjs`), shortened.
 */
export function agentLabel(name: string | undefined, command: string): string {
  if (name) return name;
  const words = command.match(/'[^']*'|"[^"]*"|\S+/g) ?? [];
  const flat = words
    .map((word) => word.replace(/^(['"])(.*)\1$/, '$2'))
    .map((word) => (word.includes('/') && !word.endsWith('/') ? word.slice(word.lastIndexOf('/') + 1) : word))
    .join(' ');
  return flat.length > 40 ? `${flat.slice(0, 39)}…` : flat;
}
