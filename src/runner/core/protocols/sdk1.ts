// Term Challenge SDK 1.x: one JSON request line on the agent's stdin per step, one JSON
// response line back; the harness runs the command and tracks the working directory.
import * as z from 'zod';
import { availableParallelism } from 'node:os';
import * as path from 'node:path';
import { AgentProcess, type LineResult } from './agent-process.ts';
import { commandArgv } from '../backends/backend.ts';
import { RunFailure } from '../records/events.ts';
import { agentListeners, asksForInstruction, firstJsonObject, SDK3_HINT } from './mismatch.ts';
import { httpRequest, StatusSchema } from './sdk2.ts';
import type { AgentContext, AgentOutcome, AgentProtocol } from './agentProtocol.ts';
import { runFiles, stepOutputFile } from '../records/records.ts';
import { prepareStep, type PreparedStep } from './step.ts';

export const Sdk1RequestSchema = z.object({
  instruction: z.string(),
  step: z.number().int().positive(),
  last_command: z.string().nullable(),
  output: z.string().nullable(),
  exit_code: z.number().int().nullable(),
  cwd: z.string(),
});
export type Sdk1Request = z.infer<typeof Sdk1RequestSchema>;

const nullableString = z.string().nullish();

/** The current form, the `done` alias and the legacy Terminal-Bench form; extra fields are ignored. */
export const Sdk1ResponseSchema = z.looseObject({
  command: nullableString,
  task_complete: z.boolean().nullish(),
  done: z.boolean().nullish(),
  text: nullableString,
  analysis: nullableString,
  plan: nullableString,
  commands: z.array(z.looseObject({ keystrokes: z.string(), duration: z.number().nullish() })).nullish(),
});

export interface Sdk1Response {
  command: string | null;
  taskComplete: boolean;
  text: string | null;
}

/** Parses one response line; undefined when the line holds no valid response. */
export function parseSdk1Response(line: string): { response: Sdk1Response; raw: unknown } | { error: string } {
  const raw = firstJsonObject(line);
  if (raw === undefined) return { error: 'no JSON object in the line' };
  const parsed = Sdk1ResponseSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { error: `field '${issue.path.join('.')}': ${issue.message}` };
  }
  const r = parsed.data;
  let command = r.command ?? null;
  if (command === null && r.commands && r.commands.length > 0) {
    command = r.commands.map((c) => c.keystrokes.replace(/\r?\n$/, '')).join('\n');
  }
  if (command !== null && command.trim() === '') command = null;
  return {
    response: { command, taskComplete: r.task_complete ?? r.done ?? false, text: r.text ?? r.analysis ?? null },
    raw,
  };
}

/** SDK 1.x runs going on in this process (the trials of a job run side by side). */
let activeRuns = 0;

const MAX_INVALID = 3;
const MAX_EMPTY = 3;

/** Term Challenge SDK 1.x: JSON lines on the agent's stdin and stdout. */
export const sdk1: AgentProtocol = { name: 'sdk1', run: runSdk1 };

export async function runSdk1(ctx: AgentContext): Promise<AgentOutcome> {
  const files = runFiles(ctx.runDir);
  const agent = new AgentProcess({
    session: ctx.session,
    command: {
      argv: commandArgv(ctx.session, ctx.agentCommand),
      cwd: ctx.agentCwd,
      env: { ...ctx.env, PYTHONUNBUFFERED: '1' },
    },
    stdin: 'pipe',
    stdoutLog: files.agentStdout,
    stderrLog: files.agentStderr,
    maxLogBytes: ctx.limits.maxLogBytes,
    onStderr: (chunk) => ctx.emit({ type: 'agent-log', chunk }),
  });
  let step = 0;
  let agentCompleted = false;
  let last: { command: string | null; output: string | null; exitCode: number | null } = { command: null, output: null, exitCode: null };
  let cwd = ctx.session.workdir;
  let emptyInARow = 0;
  const probe: MismatchProbe = { ports: [], noticed: false, ruledOut: new Set() };
  // A spare shell is starting while the agent thinks and while the previous command runs, so
  // that spawning (a sandbox costs milliseconds) stays off the step's path. It is speculative (the
  // last one is never used): when this process's runs already outnumber the cores, as in a job,
  // it would only take CPU from the other runs, and each step starts its own shell instead.
  const spare = () => prepareStep({ session: ctx.session, env: ctx.env, excerptChars: ctx.limits.excerptChars });
  const speculate = () => (activeRuns <= availableParallelism() ? spare() : undefined);
  let shell: PreparedStep | undefined;
  activeRuns++;
  try {
    shell = speculate();
    for (;;) {
      step++;
      if (step > ctx.limits.maxSteps) {
        const failure = new RunFailure('max_steps', `the agent did not finish within ${ctx.limits.maxSteps} steps`);
        failure.steps = ctx.limits.maxSteps;
        throw failure;
      }
      ctx.emit({ type: 'step-started', step });
      const request: Sdk1Request = {
        instruction: ctx.task.instruction,
        step,
        last_command: last.command,
        output: last.output,
        exit_code: last.exitCode,
        cwd,
      };
      const { response, raw } = await exchange(ctx, agent, JSON.stringify(request), step, probe);
      if (response.text) ctx.emit({ type: 'agent-text', step, text: response.text });
      const entry = {
        step,
        screen: last.output,
        screen_of: 'previous' as const,
        response: raw,
        command: response.command,
        cwd,
        exit_code: null as number | null,
        timed_out: false,
        duration_ms: null as number | null,
        output_file: null as string | null,
      };
      ctx.trajectory.push(entry);
      if (response.command !== null) {
        emptyInARow = 0;
        ctx.emit({ type: 'command', step, command: response.command, cwd });
        const outputFile = stepOutputFile(step);
        const prepared = shell ?? spare();
        const running = prepared.run({
          command: response.command,
          cwd,
          timeoutMs: Math.max(1, Math.min(ctx.limits.commandTimeoutMs, ctx.remainingMs())),
          outputFile: path.join(ctx.runDir, outputFile),
          outputName: outputFile,
          maxLogBytes: ctx.limits.maxLogBytes,
          onOutput: (chunk) => ctx.emit({ type: 'output', step, chunk }),
          signal: ctx.signal,
        });
        shell = speculate();
        const result = await running;
        ctx.emit({ type: 'step-ended', step, exitCode: result.exitCode, timedOut: result.timedOut, durationMs: result.durationMs });
        Object.assign(entry, { exit_code: result.exitCode, timed_out: result.timedOut, duration_ms: Math.round(result.durationMs), output_file: outputFile });
        if (result.aborted) throw new RunFailure('aborted', 'the run was stopped');
        last = { command: response.command, output: result.observation, exitCode: result.exitCode };
        cwd = result.cwd;
        if (ctx.remainingMs() <= 0) throw agentTimeout(ctx);
      } else {
        ctx.emit({ type: 'step-ended', step, exitCode: null, timedOut: false, durationMs: 0 });
        if (!response.taskComplete && ++emptyInARow >= MAX_EMPTY) {
          throw new RunFailure('agent_error', `the agent answered ${MAX_EMPTY} times in a row with no command and without completing`);
        }
        last = { command: null, output: null, exitCode: null };
      }
      if (response.taskComplete) {
        agentCompleted = true;
        return { steps: step, agentCompleted };
      }
    }
  } catch (error) {
    if (error instanceof RunFailure) error.steps ??= step;
    throw error;
  } finally {
    activeRuns--;
    shell?.discard();
    await agent.kill();
  }
}

function agentTimeout(ctx: AgentContext): RunFailure {
  return new RunFailure('agent_timeout', `the agent did not finish within its time limit of ${Math.round(ctx.limits.agentTimeoutMs / 1000)} s`);
}

/** Sends a request and reads lines until one holds a valid response; retries invalid ones. */
async function exchange(ctx: AgentContext, agent: AgentProcess, request: string, step: number, probe: MismatchProbe): Promise<{ response: Sdk1Response; raw: unknown }> {
  let invalid = 0;
  agent.send(request);
  for (;;) {
    const line = await readLine(ctx, agent, step, probe);
    if (line.text.trim() === '') continue;
    const parsed = line.truncated ? { error: 'the line is too long' } : parseSdk1Response(line.text);
    if ('response' in parsed) return parsed;
    invalid++;
    const excerpt = line.text.length > 200 ? `${line.text.slice(0, 200)}…` : line.text;
    ctx.emit({ type: 'notice', message: `step ${step}: invalid response (${parsed.error}) ${invalid}/${MAX_INVALID}: ${excerpt}` });
    if (invalid >= MAX_INVALID) {
      throw new RunFailure('parse_error', `the agent gave ${MAX_INVALID} invalid responses in a row at step ${step} (last: ${parsed.error}: ${excerpt})`);
    }
    agent.send(request);
  }
}

/**
 * What the step-1 probe found: the agent's own TCP listeners (never Belay's helpers'). Listening
 * is no proof (an SDK 1.x agent may run a server of its own while its model thinks): it is a
 * notice, and the hint in the error if the agent then times out. Only an agent that answers SDK
 * 2.0's GET /health and GET /status on such a port is certainly an HTTP agent: that ends the run.
 */
interface MismatchProbe {
  ports: number[];
  noticed: boolean;
  /** Ports whose server answered, not as SDK 2.0: not asked again. */
  ruledOut: Set<number>;
}

/**
 * Whether 127.0.0.1:port answers as an SDK 2.0 agent does (/health says ok, /status has an SDK
 * 2.0 status): 'yes', 'no' (it answered otherwise), or 'unknown' (no answer yet).
 */
async function servesSdk2(port: number): Promise<'yes' | 'no' | 'unknown'> {
  const endpoint = { host: '127.0.0.1', port };
  try {
    const health = await httpRequest(endpoint, 'GET', '/health', 1000, undefined, 64 * 1024);
    if (health.status !== 200 || !/ok/i.test(health.body)) return 'no';
    const status = await httpRequest(endpoint, 'GET', '/status', 1000, undefined, 64 * 1024);
    if (status.status !== 200) return 'no';
    return StatusSchema.safeParse(JSON.parse(status.body)).success ? 'yes' : 'no';
  } catch {
    return 'unknown';
  }
}

const listenHint = (ports: number[]) => `; it listens on TCP port ${ports.join(', ')} and has not answered the SDK 1.x request on stdin: if it is an SDK 2.0 (HTTP) agent, run it with --protocol sdk2`;

async function readLine(ctx: AgentContext, agent: AgentProcess, step: number, probe: MismatchProbe): Promise<{ text: string; truncated: boolean }> {
  const silenceDeadline = Date.now() + ctx.limits.silenceTimeoutMs;
  // Until the first answer, the agent is checked now and then for an HTTP server instead.
  const probing = step === 1;
  for (;;) {
    const silence = silenceDeadline - Date.now();
    const wait = Math.min(silence, ctx.remainingMs(), probing ? ctx.limits.mismatchProbeMs : Infinity);
    const result: LineResult = await agent.nextLine(Math.max(0, wait), ctx.signal);
    if (result.kind === 'line') return result;
    if (result.kind === 'aborted') throw new RunFailure('aborted', 'the run was stopped');
    if (result.kind === 'eof') {
      const exit = await agent.exited;
      const how = exit.spawnError ? `could not start: ${exit.spawnError.message}` : `exited with ${exit.code !== null ? `code ${exit.code}` : exit.signal}`;
      const tail = agent.stderrTail.text('…').trim();
      const hint = asksForInstruction(tail) ? SDK3_HINT : '';
      throw new RunFailure('agent_error', `the agent ${how} before answering step ${step}${tail ? `; its stderr ends with: ${tail.slice(-500)}` : ''}${hint}`);
    }
    const hint = probe.ports.length > 0 ? listenHint(probe.ports) : '';
    if (probing && silence > ctx.limits.mismatchProbeMs && ctx.remainingMs() > 0) {
      const listeners = agent.pid !== undefined ? agentListeners(agent.pid) : [];
      if (listeners.length > 0) {
        for (const listener of listeners) {
          if (!listener.reachable || probe.ruledOut.has(listener.port)) continue;
          const answer = await servesSdk2(listener.port);
          if (answer === 'no') probe.ruledOut.add(listener.port);
          if (answer === 'yes') {
            throw new RunFailure(
              'agent_error',
              `protocol mismatch: the agent serves SDK 2.0 on TCP port ${listener.port} (GET /health and GET /status answer) and has not answered the SDK 1.x request on stdin: run it with --protocol sdk2`,
            );
          }
        }
        // A port that answered HTTP, not as SDK 2.0, is no hint at all.
        probe.ports = listeners.map((listener) => listener.port).filter((port) => !probe.ruledOut.has(port));
        if (!probe.noticed && probe.ports.length > 0) {
          probe.noticed = true;
          ctx.emit({ type: 'notice', message: `step 1: no answer yet${listenHint(probe.ports)}; waiting for it (a model may take minutes)` });
        }
      }
      continue;
    }
    if (ctx.remainingMs() <= 0) {
      const failure = agentTimeout(ctx);
      failure.message += hint;
      throw failure;
    }
    throw new RunFailure('agent_timeout', `the agent sent nothing for ${Math.round(ctx.limits.silenceTimeoutMs / 1000)} s at step ${step}${hint}`);
  }
}
