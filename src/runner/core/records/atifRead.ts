// Reading an ATIF trajectory (v1.0 to v1.7) written by anyone: Harbor's trials, other harnesses,
// Belay itself. The file is read bounded, checked against the one schema in atif.ts (with each
// version's rules), and turned into the steps the trajectory view and Compare Runs show: the
// agent's words, its tool calls as commands, the observations as output, the step's metrics, and
// v1.7's embedded subagent trajectories nested after the step that referred to them. What the
// file says is agent text: it stays plain strings here. A file that cannot be read is one line
// naming the file and what is wrong with it.
import { promises as fs } from 'node:fs';
import * as z from 'zod';
import type { TrajectoryStep } from '../../../contracts/trajectoryPage.ts';
import { ATIF_SHELL_TOOL, ATIF_VERSIONS, AtifTrajectorySchema, type AtifTrajectory } from './atif.ts';

/** The largest trajectory file read (a bigger one is refused, not read in part). */
export const ATIF_READ_MAX_BYTES = 32 * 1024 * 1024;
/** The most steps shown of one file, subagents' included (the rest are counted, not shown). */
export const ATIF_VIEW_MAX_STEPS = 5000;
/** The most characters of one step's output or command kept for the view. */
export const ATIF_VIEW_TEXT_CHARS = 20_000;

type AtifStep = AtifTrajectory['steps'][number];

export interface AtifRead {
  file: string;
  trajectory: AtifTrajectory;
  steps: TrajectoryStep[];
  /** Steps not shown: past ATIF_VIEW_MAX_STEPS. */
  skipped: number;
}

/** One line: `file: what is wrong`. */
export class AtifReadError extends Error {}

/** Reads and checks an ATIF file; throws AtifReadError with one line naming the file. */
export async function readAtifFile(file: string, maxBytes = ATIF_READ_MAX_BYTES): Promise<AtifRead> {
  const fail = (what: string): never => {
    throw new AtifReadError(`${file}: ${what}`);
  };
  const stat = await fs.lstat(file).catch((error: NodeJS.ErrnoException) => fail(error.code === 'ENOENT' ? 'no such file' : `cannot be read (${error.code ?? error.message})`));
  if (!stat.isFile()) fail('not a regular file');
  if (stat.size > maxBytes) fail(`${stat.size} bytes, more than the ${maxBytes} bytes Belay reads of a trajectory`);
  const text = await fs.readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => fail(`cannot be read (${error.code ?? error.message})`));
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    fail(`not JSON (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`);
  }
  const trajectory = parseAtif(json, fail);
  const { steps, skipped } = atifViewSteps(trajectory);
  return { file, trajectory, steps, skipped };
}

/** Checks a parsed document against the schema; `fail` gets what is wrong in words. */
export function parseAtif(json: unknown, fail: (what: string) => never): AtifTrajectory {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return fail('not an ATIF trajectory (a JSON object with schema_version and steps)');
  const version = (json as Record<string, unknown>).schema_version;
  if (version === undefined) return fail('not an ATIF trajectory (no schema_version)');
  if (typeof version !== 'string' || !(ATIF_VERSIONS as readonly string[]).includes(version)) {
    return fail(`schema_version ${JSON.stringify(version).slice(0, 40)} is not one Belay reads (${ATIF_VERSIONS[0]} to ${ATIF_VERSIONS.at(-1)})`);
  }
  const parsed = AtifTrajectorySchema.safeParse(json);
  if (!parsed.success) return fail(`not a valid ${version} trajectory: ${issueWords(parsed.error.issues)}`);
  return parsed.data;
}

function issueWords(issues: readonly z.core.$ZodIssue[]): string {
  const first = issues[0]!;
  const where = first.path.length > 0 ? first.path.map(String).join('.') : 'the document';
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more problem${issues.length === 2 ? '' : 's'})` : '';
  return `${where}: ${first.message}${more}`;
}

function cut(text: string, max = ATIF_VIEW_TEXT_CHARS): string {
  return text.length > max ? `${text.slice(0, max)}\n[… ${text.length - max} more characters]` : text;
}

/** A message or an observation's content as text (images named by their path). */
export function atifText(content: AtifStep['message'] | null | undefined): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' ? (part.text ?? '') : `[image ${part.source?.path ?? ''}]`)).join('\n');
}

/** A tool call as a command: a shell tool's command as written, any other tool as `name {arguments}`. */
export function atifCommand(call: NonNullable<AtifStep['tool_calls']>[number]): string {
  const command = call.arguments.command ?? call.arguments.cmd;
  if (/^(bash|shell|sh|exec_command|run_shell_command|terminal)$/i.test(call.function_name) || call.function_name === ATIF_SHELL_TOOL) {
    if (typeof command === 'string') return command;
    if (Array.isArray(command) && command.every((word) => typeof word === 'string')) return command.join(' ');
  }
  return `${call.function_name} ${JSON.stringify(call.arguments)}`;
}

const num = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);

function viewStep(step: AtifStep, position: number, subagent: string | undefined): TrajectoryStep {
  const extra = step.extra ?? {};
  const calls = step.tool_calls ?? [];
  const results = step.observation?.results ?? [];
  const output = results
    .map((result) => {
      const refs = (result.subagent_trajectory_ref ?? []).map((ref) => `[subagent ${ref.trajectory_id ?? ref.session_id ?? ''}${ref.trajectory_path ? ` in ${ref.trajectory_path}` : ''}]`);
      return [atifText(result.content), ...refs].filter((part) => part !== '').join('\n');
    })
    .join('\n');
  const metrics = step.metrics;
  const llm =
    metrics || step.llm_call_count
      ? { requests: step.llm_call_count ?? 1, inputTokens: metrics?.prompt_tokens ?? 0, outputTokens: metrics?.completion_tokens ?? 0, costUsd: metrics?.cost_usd ?? 0 }
      : null;
  const message = atifText(step.message);
  const reasoning = step.reasoning_content ? `${message ? '\n\n' : ''}(reasoning) ${step.reasoning_content}` : '';
  return {
    step: position,
    agentText: message || reasoning ? cut(message + reasoning) : null,
    command: calls.length > 0 ? cut(calls.map(atifCommand).join('\n')) : null,
    cwd: calls.length === 1 && typeof calls[0]!.arguments.cwd === 'string' ? calls[0]!.arguments.cwd : null,
    exitCode: num(extra.exit_code),
    timedOut: extra.timed_out === true,
    durationMs: num(extra.duration_ms),
    output: cut(output),
    outputKind: 'output',
    hasOutputFile: false,
    llm,
    ...(step.source !== 'agent' ? { source: step.source } : {}),
    ...(subagent !== undefined ? { subagent } : {}),
  };
}

/**
 * The steps to show, in order: each step, then the embedded subagent trajectories its
 * observation refers to (nested, their own subagents likewise), then any embedded subagent no
 * step referred to. Numbered 1, 2, … in the order shown; at most ATIF_VIEW_MAX_STEPS.
 */
export function atifViewSteps(trajectory: AtifTrajectory): { steps: TrajectoryStep[]; skipped: number } {
  const steps: TrajectoryStep[] = [];
  let skipped = 0;
  const add = (step: AtifStep, subagent: string | undefined) => {
    if (steps.length >= ATIF_VIEW_MAX_STEPS) skipped++;
    else steps.push(viewStep(step, steps.length + 1, subagent));
  };
  const walk = (t: AtifTrajectory, trail: string[], depth: number) => {
    const subs = new Map((t.subagent_trajectories ?? []).map((sub) => [sub.trajectory_id ?? '', sub]));
    const shown = new Set<string>();
    const label = trail.length > 0 ? trail.join(' › ') : undefined;
    const nested = (id: string) => {
      const sub = subs.get(id);
      if (!sub || shown.has(id)) return;
      shown.add(id);
      // The schema allows any depth; the view goes 8 deep and counts the rest.
      if (depth >= 8) skipped += countSteps(sub);
      else walk(sub, [...trail, id], depth + 1);
    };
    for (const step of t.steps) {
      add(step, label);
      for (const result of step.observation?.results ?? []) for (const ref of result.subagent_trajectory_ref ?? []) if (ref.trajectory_id) nested(ref.trajectory_id);
    }
    for (const id of subs.keys()) nested(id);
  };
  walk(trajectory, [], 0);
  return { steps, skipped };
}

function countSteps(t: AtifTrajectory): number {
  return t.steps.length + (t.subagent_trajectories ?? []).reduce((sum, sub) => sum + countSteps(sub), 0);
}

/** The trajectory's totals: final_metrics when given, else the steps' metrics added up. */
export function atifTotals(trajectory: AtifTrajectory): { requests: number; inputTokens: number; outputTokens: number; costUsd: number } | null {
  let requests = 0;
  let input = 0;
  let output = 0;
  let cost = 0;
  let any = false;
  const visit = (t: AtifTrajectory) => {
    for (const step of t.steps) {
      if (step.metrics || step.llm_call_count) any = true;
      requests += step.llm_call_count ?? (step.metrics ? 1 : 0);
      input += step.metrics?.prompt_tokens ?? 0;
      output += step.metrics?.completion_tokens ?? 0;
      cost += step.metrics?.cost_usd ?? 0;
    }
    for (const sub of t.subagent_trajectories ?? []) visit(sub);
  };
  visit(trajectory);
  const final = trajectory.final_metrics;
  if (final && (final.total_prompt_tokens !== undefined || final.total_completion_tokens !== undefined || final.total_cost_usd !== undefined)) {
    return { requests, inputTokens: final.total_prompt_tokens ?? input, outputTokens: final.total_completion_tokens ?? output, costUsd: final.total_cost_usd ?? cost };
  }
  return any ? { requests, inputTokens: input, outputTokens: output, costUsd: cost } : null;
}

/** Every tool call of the trajectory and its subagents, as commands (what the reward-hacking signals read). */
export function atifCommands(trajectory: AtifTrajectory): string[] {
  const out: string[] = [];
  const visit = (t: AtifTrajectory) => {
    for (const step of t.steps) for (const call of step.tool_calls ?? []) out.push(atifCommand(call));
    for (const sub of t.subagent_trajectories ?? []) visit(sub);
  };
  visit(trajectory);
  return out;
}
