// Past runs on disk (`.belay/runs/<run-id>/`, written by the editor or by `belay run`): listed
// for the Tasks view and read step by step for the trajectory view.
import { existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';
import type * as z from 'zod';
import { errorMessage } from '../../../shared/errors.ts';
import { runFiles, RunResultSchema, TrajectoryEntrySchema, type LlmUsage, type RunResult, type TrajectoryEntry } from './records.ts';

/** A finished run as its result.json says (`result.agent` names the agent of runs the editor started). */
export interface PastRun {
  result: RunResult;
}

/** Every finished run under `runsDir`, newest first; folders without a readable result.json are skipped. */
export async function listRuns(runsDir: string): Promise<PastRun[]> {
  let names: string[];
  try {
    names = await fs.readdir(runsDir);
  } catch {
    return [];
  }
  const runs: PastRun[] = [];
  await Promise.all(
    names.map(async (name) => {
      const dir = path.join(runsDir, name);
      const result = await readJson(runFiles(dir).result, RunResultSchema);
      if (!result) return;
      // A run folder that was moved keeps its records: trust where it is now.
      result.run_dir = dir;
      runs.push({ result });
    }),
  );
  runs.sort((a, b) => b.result.started_at.localeCompare(a.result.started_at) || b.result.run_id.localeCompare(a.result.run_id));
  return runs;
}

async function readJson<T>(file: string, schema: z.ZodType<T>): Promise<T | undefined> {
  try {
    const parsed = schema.safeParse(JSON.parse(await fs.readFile(file, 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Runs grouped by task folder (falling back to the task's name for moved tasks). */
export function runsByTask(runs: readonly PastRun[], tasks: readonly { name: string; dir: string }[]): Map<string, PastRun[]> {
  const byDir = new Map<string, PastRun[]>();
  for (const task of tasks) byDir.set(task.dir, []);
  for (const run of runs) {
    const key = byDir.has(run.result.task_dir) ? run.result.task_dir : tasks.find((t) => t.name === run.result.task_name)?.dir;
    if (key !== undefined) byDir.get(key)!.push(run);
  }
  return byDir;
}

/** One step as the trajectory view and the Tasks view show it. */
export interface StepView {
  step: number;
  agentText: string | null;
  command: string | null;
  cwd: string | null;
  exitCode: number | null;
  timedOut: boolean;
  durationMs: number | null;
  /** What the agent saw before this step (the previous output as sent to it). */
  screen: string | null;
  /** Absolute path of the step's full output, when it was kept. */
  outputFile: string | null;
  /** The model calls made for this step through Belay's gateway, when any. */
  llm: LlmUsage | null;
  /** In a multi-step task: the task step (1-based) this agent step belongs to. */
  taskStep?: number;
}

/** The agent's words in a step's response: `text`, else `analysis` (SDK 1.x), else nothing. */
export function agentTextOf(response: unknown): string | null {
  if (typeof response !== 'object' || response === null) return null;
  const r = response as Record<string, unknown>;
  for (const key of ['text', 'analysis', 'plan']) if (typeof r[key] === 'string' && r[key] !== '') return r[key];
  return null;
}

export function stepViews(runDir: string, entries: readonly TrajectoryEntry[]): StepView[] {
  return entries.map((e) => ({
    step: e.step,
    agentText: agentTextOf(e.response),
    command: e.command,
    cwd: e.cwd,
    exitCode: e.exit_code,
    timedOut: e.timed_out,
    durationMs: e.duration_ms,
    screen: e.screen,
    outputFile: e.output_file && existsSync(path.join(runDir, e.output_file)) ? path.join(runDir, e.output_file) : null,
    llm: e.llm ?? null,
    ...(e.task_step !== undefined ? { taskStep: e.task_step } : {}),
  }));
}

/** trajectory.json of a run, read leniently: bad entries are skipped and counted. */
export async function readTrajectory(runDir: string): Promise<{ steps: StepView[]; skipped: number }> {
  let raw: unknown;
  try {
    raw = JSON.parse(await fs.readFile(runFiles(runDir).trajectory, 'utf8'));
  } catch (error) {
    throw new Error(`${runFiles(runDir).trajectory}: ${errorMessage(error)}`);
  }
  if (!Array.isArray(raw)) throw new Error(`${runFiles(runDir).trajectory}: expected a list of steps`);
  const entries: TrajectoryEntry[] = [];
  let skipped = 0;
  for (const item of raw) {
    const parsed = TrajectoryEntrySchema.safeParse(item);
    if (parsed.success) entries.push(parsed.data);
    else skipped++;
  }
  return { steps: stepViews(runDir, entries), skipped };
}

/** The first `maxChars` of a file (with a note when cut), '' when it cannot be read. */
export async function readBounded(file: string | null, maxChars: number): Promise<string> {
  if (!file) return '';
  try {
    const handle = await fs.open(file, 'r');
    try {
      const buffer = Buffer.alloc(maxChars * 2);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      const size = (await handle.stat()).size;
      const text = buffer.subarray(0, bytesRead).toString('utf8').slice(0, maxChars);
      return size > bytesRead || text.length === maxChars ? `${text}\n[… cut: open the full output for the rest …]` : text;
    } finally {
      await handle.close();
    }
  } catch {
    return '';
  }
}
