// A run's trajectory in ATIF, the Agent Trajectory Interchange Format that Harbor and the tools
// around it read (Harbor's RFC 0001, v1.7). Written beside Belay's own records at the
// place Harbor's trials keep it: `agent/trajectory.json` in the run folder. The task's
// instruction is the user step; each Belay step is an agent step whose command is a tool call
// and whose output (what the agent was shown) is the observation; the LLM calls the gateway
// counted in a step are its `llm_call_count`. The schema below is the published one (strict:
// unknown fields are errors, as Harbor's models forbid them) with its rules, each version's
// fields gated on the version that brought them: images (v1.6); `trajectory_id`, embedded
// subagent trajectories, `llm_call_count`, `extra` on tool calls and observation results, and
// an optional `session_id` (v1.7).
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import * as z from 'zod';
import { writeFileAtomic } from '../../../shared/atomic.ts';

/** The version written; the schema reads every version Harbor has published. */
export const ATIF_VERSION = 'ATIF-v1.7';
export const ATIF_VERSIONS = ['ATIF-v1.0', 'ATIF-v1.1', 'ATIF-v1.2', 'ATIF-v1.3', 'ATIF-v1.4', 'ATIF-v1.5', 'ATIF-v1.6', 'ATIF-v1.7'] as const;
type AtifVersion = (typeof ATIF_VERSIONS)[number];
/** The minor version of `version` (ATIF-v1.6 → 6). */
const minor = (version: AtifVersion): number => Number(version.slice('ATIF-v1.'.length));
/** Relative to the run folder, as in a Harbor trial folder. */
export const ATIF_FILE = path.join('agent', 'trajectory.json');
/** The most of one command's output an observation carries (the whole output stays in steps/). */
export const ATIF_OBSERVATION_CHARS = 64 * 1024;
/** The name of the tool a command is a call of. */
export const ATIF_SHELL_TOOL = 'bash';

const Extra = z.record(z.string(), z.unknown());

const ContentPartSchema = z.strictObject({
  type: z.enum(['text', 'image']),
  text: z.string().optional(),
  source: z.strictObject({ media_type: z.enum(['image/jpeg', 'image/png', 'image/gif', 'image/webp']), path: z.string() }).optional(),
});

export const AtifMetricsSchema = z.strictObject({
  prompt_tokens: z.number().int().optional(),
  completion_tokens: z.number().int().optional(),
  cached_tokens: z.number().int().optional(),
  cost_usd: z.number().optional(),
  prompt_token_ids: z.array(z.number().int()).optional(),
  completion_token_ids: z.array(z.number().int()).optional(),
  logprobs: z.array(z.number()).optional(),
  extra: Extra.optional(),
});

export const AtifToolCallSchema = z.strictObject({
  tool_call_id: z.string(),
  function_name: z.string(),
  arguments: Extra,
  extra: Extra.optional(),
});

export const AtifObservationSchema = z.strictObject({
  results: z.array(
    z.strictObject({
      source_call_id: z.string().nullable().optional(),
      content: z.union([z.string(), z.array(ContentPartSchema)]).nullable().optional(),
      subagent_trajectory_ref: z
        .array(z.strictObject({ trajectory_id: z.string().optional(), session_id: z.string().optional(), trajectory_path: z.string().nullable().optional(), extra: Extra.optional() }))
        .nullable()
        .optional(),
      extra: Extra.optional(),
    }),
  ),
});

const AGENT_ONLY = ['model_name', 'reasoning_effort', 'reasoning_content', 'tool_calls', 'metrics', 'llm_call_count'] as const;

export const AtifStepSchema = z
  .strictObject({
    step_id: z.number().int().min(1),
    timestamp: z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'not an ISO 8601 time').optional(),
    source: z.enum(['system', 'user', 'agent']),
    model_name: z.string().optional(),
    reasoning_effort: z.union([z.string(), z.number()]).optional(),
    message: z.union([z.string(), z.array(ContentPartSchema)]),
    reasoning_content: z.string().optional(),
    tool_calls: z.array(AtifToolCallSchema).optional(),
    observation: AtifObservationSchema.optional(),
    metrics: AtifMetricsSchema.optional(),
    /** How many LLM calls made this step (v1.7); 0 for a step no model took (a dispatch), which then has no metrics or reasoning. */
    llm_call_count: z.number().int().min(0).optional(),
    is_copied_context: z.boolean().optional(),
    extra: Extra.optional(),
  })
  .superRefine((step, ctx) => {
    if (step.source === 'agent') {
      if (step.llm_call_count === 0) {
        for (const field of ['metrics', 'reasoning_content'] as const) if (step[field] !== undefined) ctx.addIssue({ code: 'custom', path: [field], message: `a step with llm_call_count 0 has no ${field}` });
      }
      return;
    }
    for (const field of AGENT_ONLY) if (step[field] !== undefined) ctx.addIssue({ code: 'custom', path: [field], message: `only an agent step has ${field}` });
  });

const TrajectoryFields = {
  schema_version: z.enum(ATIF_VERSIONS),
  /** Required up to v1.6; optional and run-scoped from v1.7. */
  session_id: z.string().optional(),
  /** This document's id (v1.7): required on an embedded subagent, unique among its siblings. */
  trajectory_id: z.string().min(1).optional(),
  agent: z.strictObject({
    name: z.string(),
    version: z.string(),
    model_name: z.string().optional(),
    tool_definitions: z.array(Extra).optional(),
    extra: Extra.optional(),
  }),
  steps: z.array(AtifStepSchema).min(1),
  notes: z.string().optional(),
  final_metrics: z
    .strictObject({
      total_prompt_tokens: z.number().int().optional(),
      total_completion_tokens: z.number().int().optional(),
      total_cached_tokens: z.number().int().optional(),
      total_cost_usd: z.number().optional(),
      total_steps: z.number().int().min(0).optional(),
      extra: Extra.optional(),
    })
    .optional(),
  continued_trajectory_ref: z.string().optional(),
  extra: Extra.optional(),
};

/** A trajectory as written, subagents embedded (v1.7) included. */
export interface AtifTrajectory extends z.infer<z.ZodObject<typeof TrajectoryFields>> {
  subagent_trajectories?: AtifTrajectory[] | undefined;
}

export const AtifTrajectorySchema: z.ZodType<AtifTrajectory> = z
  .strictObject({
    ...TrajectoryFields,
    get subagent_trajectories() {
      return z.array(AtifTrajectorySchema).optional();
    },
  })
  .superRefine((trajectory, ctx) => checkRules(trajectory, ctx));

/** The published rules the field types do not say: sequence, references, and what each version allows. */
function checkRules(trajectory: AtifTrajectory, ctx: z.RefinementCtx): void {
  const version = minor(trajectory.schema_version);
  const since = (v: number, where: PropertyKey[], what: string) => {
    if (version < v) ctx.addIssue({ code: 'custom', path: where, message: `${what} came with ATIF-v1.${v}; this trajectory says ${trajectory.schema_version}` });
  };
  if (version < 7 && trajectory.session_id === undefined) ctx.addIssue({ code: 'custom', path: ['session_id'], message: `required before ATIF-v1.7` });
  if (trajectory.trajectory_id !== undefined) since(7, ['trajectory_id'], 'trajectory_id');
  if (trajectory.subagent_trajectories !== undefined) {
    since(7, ['subagent_trajectories'], 'subagent_trajectories');
    const seen = new Set<string>();
    trajectory.subagent_trajectories.forEach((sub, s) => {
      if (sub.trajectory_id === undefined) ctx.addIssue({ code: 'custom', path: ['subagent_trajectories', s, 'trajectory_id'], message: 'an embedded subagent trajectory needs a trajectory_id' });
      else if (seen.has(sub.trajectory_id)) ctx.addIssue({ code: 'custom', path: ['subagent_trajectories', s, 'trajectory_id'], message: `'${sub.trajectory_id}' is the id of an earlier subagent trajectory` });
      else seen.add(sub.trajectory_id);
    });
  }
  const embedded = new Set((trajectory.subagent_trajectories ?? []).flatMap((sub) => (sub.trajectory_id ? [sub.trajectory_id] : [])));
  trajectory.steps.forEach((step, index) => {
    if (step.llm_call_count !== undefined) since(7, ['steps', index, 'llm_call_count'], 'llm_call_count');
    if (Array.isArray(step.message)) since(6, ['steps', index, 'message'], 'a message of content parts');
    step.tool_calls?.forEach((call, c) => {
      if (call.extra !== undefined) since(7, ['steps', index, 'tool_calls', c, 'extra'], 'extra on a tool call');
    });
    step.observation?.results.forEach((result, r) => {
      const where = ['steps', index, 'observation', 'results', r];
      if (result.extra !== undefined) since(7, [...where, 'extra'], 'extra on an observation result');
      if (Array.isArray(result.content)) since(6, [...where, 'content'], 'content parts');
      result.subagent_trajectory_ref?.forEach((ref, f) => {
        if (ref.trajectory_id !== undefined) {
          since(7, [...where, 'subagent_trajectory_ref', f, 'trajectory_id'], 'trajectory_id on a subagent reference');
          if (ref.trajectory_path == null && !embedded.has(ref.trajectory_id)) ctx.addIssue({ code: 'custom', path: [...where, 'subagent_trajectory_ref', f, 'trajectory_id'], message: `'${ref.trajectory_id}' is neither embedded nor given a trajectory_path` });
        } else if (ref.session_id === undefined) ctx.addIssue({ code: 'custom', path: [...where, 'subagent_trajectory_ref', f], message: 'a subagent reference names a trajectory_id or a session_id' });
      });
    });
    if (step.step_id !== index + 1) ctx.addIssue({ code: 'custom', path: ['steps', index, 'step_id'], message: `expected ${index + 1} (sequential from 1)` });
    const calls = new Set((step.tool_calls ?? []).map((call) => call.tool_call_id));
    step.observation?.results.forEach((result, r) => {
      if (result.source_call_id != null && !calls.has(result.source_call_id)) {
        ctx.addIssue({ code: 'custom', path: ['steps', index, 'observation', 'results', r, 'source_call_id'], message: `'${result.source_call_id}' is not a tool call of this step` });
      }
    });
  });
}
type AtifStep = z.infer<typeof AtifStepSchema>;

/** What the mapping reads of Belay's records (result.json and trajectory.json), all of it optional beyond the basics. */
export interface AtifSource {
  result: {
    run_id: string;
    task_name: string;
    agent?: string | undefined;
    protocol: string;
    backend: string;
    started_at: string;
    passed: boolean;
    reward: number | null;
    metrics?: Record<string, number> | undefined;
    failure_cause: string | null;
    error: string | null;
    llm?: unknown;
  };
  trajectory: readonly {
    step: number;
    screen: string | null;
    screen_of?: 'own' | 'previous' | undefined;
    response: unknown;
    command: string | null;
    cwd: string | null;
    exit_code: number | null;
    timed_out: boolean;
    duration_ms: number | null;
    output_file: string | null;
    llm?: unknown;
  }[];
  /** The task's instruction (the user step). */
  instruction?: string | undefined;
  /** Reads a step's output file (relative to the run folder) when no later step shows it; at most `max` characters. */
  readOutput?: (file: string, max: number) => Promise<string | undefined>;
}

const UsageSchema = z.object({ requests: z.number().int().min(0).optional(), input_tokens: z.number(), output_tokens: z.number(), cost_usd: z.number() });

function agentText(response: unknown): string {
  if (typeof response === 'string') return response;
  if (response && typeof response === 'object') {
    const r = response as Record<string, unknown>;
    for (const field of ['text', 'analysis', 'message', 'explanation']) if (typeof r[field] === 'string') return r[field];
  }
  return '';
}

function cap(text: string): string {
  return text.length > ATIF_OBSERVATION_CHARS ? `${text.slice(0, ATIF_OBSERVATION_CHARS)}\n[… ${text.length - ATIF_OBSERVATION_CHARS} more characters in the step's output file]` : text;
}

/** Belay's records as an ATIF trajectory (valid against AtifTrajectorySchema). */
export async function toAtif(source: AtifSource): Promise<AtifTrajectory> {
  const { result, trajectory } = source;
  const steps: AtifStep[] = [
    {
      step_id: 1,
      timestamp: result.started_at,
      source: 'user',
      message: source.instruction ?? '',
      ...(source.instruction === undefined ? { extra: { note: `the instruction of task ${result.task_name} was not recorded` } } : {}),
    },
  ];
  for (const [index, entry] of trajectory.entries()) {
    const callId = `call_${entry.step}`;
    const next = trajectory[index + 1];
    // The record says whose output a step's screen is: its own, or the previous step's (then a
    // command's output is the next step's screen). A step that does not say is read from its own
    // output file, never guessed from the protocol's name.
    const shown =
      entry.screen_of === 'own' ? entry.screen : entry.screen_of === 'previous' && next?.screen_of === 'previous' && next.step === entry.step + 1 ? next.screen : undefined;
    let output: string | null | undefined = shown;
    if (output == null && entry.command !== null && entry.output_file) output = await source.readOutput?.(entry.output_file, ATIF_OBSERVATION_CHARS + 1);
    const usage = UsageSchema.safeParse(entry.llm);
    const response = entry.response && typeof entry.response === 'object' ? (entry.response as Record<string, unknown>) : {};
    steps.push({
      step_id: steps.length + 1,
      source: 'agent',
      message: agentText(entry.response),
      // An installed CLI's step is one of its own tools (Bash, Write, exec_command, …), with the arguments the model gave it.
      ...(entry.command !== null
        ? {
            tool_calls: [
              typeof response.tool === 'string' && response.input && typeof response.input === 'object'
                ? { tool_call_id: callId, function_name: response.tool, arguments: response.input as Record<string, unknown> }
                : { tool_call_id: callId, function_name: ATIF_SHELL_TOOL, arguments: { command: entry.command, ...(entry.cwd !== null ? { cwd: entry.cwd } : {}) } },
            ],
          }
        : {}),
      ...(entry.command !== null && output != null ? { observation: { results: [{ source_call_id: callId, content: cap(output) }] } } : {}),
      ...(usage.success && usage.data.requests !== undefined ? { llm_call_count: usage.data.requests } : {}),
      ...(usage.success && usage.data.requests !== 0 ? { metrics: { prompt_tokens: Math.round(usage.data.input_tokens), completion_tokens: Math.round(usage.data.output_tokens), cost_usd: usage.data.cost_usd } } : {}),
      extra: {
        belay_step: entry.step,
        exit_code: entry.exit_code,
        timed_out: entry.timed_out,
        duration_ms: entry.duration_ms,
        output_file: entry.output_file,
        ...(typeof response.task_complete === 'boolean' ? { task_complete: response.task_complete } : {}),
      },
    });
  }
  const total = UsageSchema.safeParse(result.llm);
  return {
    schema_version: ATIF_VERSION,
    session_id: result.run_id,
    trajectory_id: result.run_id,
    agent: { name: result.agent ?? 'unnamed-agent', version: 'unknown', extra: { protocol: result.protocol, harness: 'belay' } },
    steps,
    notes: 'Written by Belay from trajectory.json and result.json: step 1 is the task instruction; each later step is one step of the agent, its command a bash tool call whose observation is the output the agent was shown next.',
    final_metrics: {
      total_steps: steps.length,
      ...(total.success ? { total_prompt_tokens: Math.round(total.data.input_tokens), total_completion_tokens: Math.round(total.data.output_tokens), total_cost_usd: total.data.cost_usd } : {}),
    },
    extra: { task_name: result.task_name, backend: result.backend, passed: result.passed, reward: result.reward, ...(result.metrics ? { metrics: result.metrics } : {}), failure_cause: result.failure_cause, error: result.error },
  };
}

/** Writes `agent/trajectory.json` in the run folder. */
export async function writeAtif(runDir: string, source: Omit<AtifSource, 'readOutput'>): Promise<void> {
  const readOutput = async (file: string, max: number) => {
    const target = path.resolve(runDir, file);
    if (path.relative(runDir, target).startsWith('..')) return undefined;
    const handle = await fs.open(target, 'r').catch(() => undefined);
    if (!handle) return undefined;
    try {
      const buffer = Buffer.alloc(max * 4);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      return buffer.subarray(0, bytesRead).toString('utf8');
    } finally {
      await handle.close();
    }
  };
  const atif = await toAtif({ ...source, readOutput });
  await fs.mkdir(path.join(runDir, path.dirname(ATIF_FILE)), { recursive: true });
  // A copy made from trajectory.json, which is flushed: this one need not be.
  await writeFileAtomic(path.join(runDir, ATIF_FILE), JSON.stringify(atif, null, 2) + '\n', { durable: false });
}
