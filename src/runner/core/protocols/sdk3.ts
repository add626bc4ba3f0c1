// Term Challenge SDK 3.0: the agent is a program run once as `COMMAND --instruction "<text>"` in
// the task's working directory (/app when isolated), with LLM_PROXY_URL, TERM_TASK_ID and
// EVALUATION_MODE=true; it runs its own commands and prints `[DONE]` on stdout when finished.
// What Term Challenge's harness does, and what Belay does where it chooses:
// - The agent phase ends when the process exits; its exit (any code) is not a failure: the tests
//   decide, as in the validator (which first required `[DONE]`, then counted any exit as done).
//   `agent_completed` says whether it printed `[DONE]`; an exit without it is noted.
// - `[DONE]` counts at the start of a line (after blanks), as the SDK's examples print it
//   ("[DONE]", "[DONE] Task completed"); inside a line (an LLM stream's "data: [DONE]" echoed,
//   say) it does not. An agent still running `doneGraceMs` after `[DONE]` is ended, completed.
// - At its time limit the whole tree is killed: `agent_timeout`; the tests still run.
// - The trajectory is one step: the command, and what the agent printed (its head and tail).
import * as path from 'node:path';
import { BoundedText } from '../../../shared/process.ts';
import { shellPath } from '../backends/backend.ts';
import { RunFailure } from '../records/events.ts';
import type { AgentContext, AgentOutcome, AgentProtocol } from './agentProtocol.ts';
import { runFiles } from '../records/records.ts';
import { AgentProcess, describeExit, stderrClause, type ExitInfo } from './agent-process.ts';
import { listeningPorts, looksLikeSdk1Response } from './mismatch.ts';

export const DONE_MARKER = '[DONE]';
/** Output shown live (events) at most; the rest is in the agent's stdout log. */
const LIVE_OUTPUT_CHARS = 1_000_000;

/**
 * Finds `[DONE]` at the start of a stdout line, across chunk boundaries, keeping only the
 * start of the current line in memory.
 */
export class DoneMarker {
  #head = '';
  #lineStart = true;
  #seen = false;

  get seen(): boolean {
    return this.#seen;
  }

  /** Feeds a chunk of stdout; true once the marker has been seen. */
  feed(chunk: string): boolean {
    for (const c of chunk) {
      if (this.#seen) break;
      if (c === '\n') {
        this.#head = '';
        this.#lineStart = true;
        continue;
      }
      if (!this.#lineStart) continue;
      if (this.#head === '' && (c === ' ' || c === '\t' || c === '\r')) continue;
      this.#head += c;
      if (this.#head === DONE_MARKER) this.#seen = true;
      else if (!DONE_MARKER.startsWith(this.#head)) this.#lineStart = false;
    }
    return this.#seen;
  }
}

/** The shell script that runs the agent's command with the instruction (taken from the environment, unquoted nowhere). */
export function sdk3Script(agentCommand: string): string {
  return `belay_instruction=$BELAY_INSTRUCTION; unset BELAY_INSTRUCTION\n${agentCommand} --instruction "$belay_instruction"`;
}

/** Term Challenge SDK 3.0: a command run once with --instruction; [DONE] on stdout marks completion. */
export const sdk3: AgentProtocol = { name: 'sdk3', run: runSdk3 };

export async function runSdk3(ctx: AgentContext): Promise<AgentOutcome> {
  const files = runFiles(ctx.runDir);
  const marker = new DoneMarker();
  const screen = new BoundedText(ctx.limits.excerptChars, ctx.limits.excerptChars);
  let live = 0;
  let sdk1Line: string | undefined;
  let onDone: () => void = () => undefined;
  const done = new Promise<'done'>((resolve) => (onDone = () => resolve('done')));
  const shown = `${ctx.agentCommand} --instruction …`;
  ctx.emit({ type: 'step-started', step: 1 });
  ctx.emit({ type: 'command', step: 1, command: shown, cwd: ctx.session.workdir });
  const started = Date.now();
  const agent = new AgentProcess({
    session: ctx.session,
    command: {
      argv: [shellPath(), '-c', sdk3Script(ctx.agentCommand)],
      cwd: ctx.session.workdir,
      env: { ...ctx.env, EVALUATION_MODE: 'true', PYTHONUNBUFFERED: '1', BELAY_INSTRUCTION: ctx.task.instruction },
    },
    stdin: 'ignore',
    stdoutLog: files.agentStdout,
    stderrLog: files.agentStderr,
    maxLogBytes: ctx.limits.maxLogBytes,
    // Lines are never read one by one here: keep next to none.
    maxLineChars: 1000,
    maxQueuedLines: 1,
    onStdout: (chunk) => {
      screen.append(chunk);
      if (live < LIVE_OUTPUT_CHARS) {
        ctx.emit({ type: 'output', step: 1, chunk: chunk.slice(0, LIVE_OUTPUT_CHARS - live) });
        live += chunk.length;
        if (live >= LIVE_OUTPUT_CHARS) ctx.emit({ type: 'notice', message: `the agent printed more than ${LIVE_OUTPUT_CHARS} characters: the rest is in ${path.basename(files.agentStdout)}` });
      }
      if (!marker.seen && marker.feed(chunk)) onDone();
      if (sdk1Line === undefined && !marker.seen) sdk1Line = chunk.split('\n').find((line) => looksLikeSdk1Response(line));
    },
    onStderr: (chunk) => ctx.emit({ type: 'agent-log', chunk }),
  });
  const stop = ctx.signal;
  let timer: NodeJS.Timeout | undefined;
  let graceTimer: NodeJS.Timeout | undefined;
  let probe: NodeJS.Timeout | undefined;
  let onAbort: () => void = () => undefined;
  try {
    const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), Math.max(0, ctx.remainingMs()))));
    const aborted = new Promise<'aborted'>((resolve) => {
      onAbort = () => resolve('aborted');
      if (stop.aborted) onAbort();
      else stop.addEventListener('abort', onAbort, { once: true });
    });
    const exited = agent.exited.then(() => 'exited' as const);
    // Silent on stdout and listening on a port: perhaps an SDK 2.0 agent waiting for POST /start.
    // A notice only (an SDK 3.0 agent may serve something while its model thinks), checked now
    // and then until it prints or is seen listening; Belay's own helpers' ports never count.
    probe = setInterval(() => {
      if (live > 0) return clearInterval(probe);
      const ports = agent.pid !== undefined ? listeningPorts(agent.pid) : [];
      if (ports.length === 0) return;
      clearInterval(probe);
      ctx.emit({ type: 'notice', message: `the agent listens on TCP port ${ports.join(', ')} and has printed nothing: if it is an SDK 2.0 (HTTP) agent, run it with --protocol sdk2` });
    }, ctx.limits.mismatchProbeMs);
    let first: 'exited' | 'timeout' | 'aborted' | 'done' | 'grace' = await Promise.race([exited, timedOut, aborted, done]);
    if (first === 'done') {
      // Time to exit by itself after saying it is done; then it is ended, still completed.
      const grace = new Promise<'grace'>((resolve) => (graceTimer = setTimeout(() => resolve('grace'), ctx.limits.doneGraceMs)));
      first = await Promise.race([exited, timedOut, aborted, grace]);
      if (first === 'grace') ctx.emit({ type: 'notice', message: `the agent printed ${DONE_MARKER} but was still running ${Math.round(ctx.limits.doneGraceMs / 1000)} s later: it was ended` });
      if (first === 'timeout' || first === 'grace') first = 'done';
    }
    if (first === 'aborted') throw new RunFailure('aborted', 'the run was stopped');
    const exit = first === 'exited' ? agent.exit : await agent.kill();
    record(ctx, shown, screen, marker.seen, first === 'timeout', exit, Date.now() - started, files.agentStdout);
    if (first === 'timeout') {
      const failure = new RunFailure('agent_timeout', `the agent did not finish within its time limit of ${Math.round(ctx.limits.agentTimeoutMs / 1000)} s`);
      failure.steps = 1;
      throw failure;
    }
    if (!marker.seen) {
      const hint = sdk1Line !== undefined ? `; it printed SDK 1.x JSON (${sdk1Line.slice(0, 120)}): run it with --protocol sdk1` : '';
      ctx.emit({ type: 'notice', message: `the agent exited ${describeExit(exit)} without printing ${DONE_MARKER}: the tests decide, as in Term Challenge${stderrClause(agent)}${hint}` });
    }
    return { steps: 1, agentCompleted: marker.seen };
  } finally {
    clearTimeout(timer);
    clearTimeout(graceTimer);
    clearInterval(probe);
    stop.removeEventListener('abort', onAbort);
    await agent.kill();
  }
}



function record(ctx: AgentContext, command: string, screen: BoundedText, done: boolean, timedOut: boolean, exit: ExitInfo | undefined, durationMs: number, stdoutLog: string): void {
  const exitCode = exit?.code ?? null;
  ctx.emit({ type: 'step-ended', step: 1, exitCode, timedOut, durationMs });
  ctx.trajectory.push({
    step: 1,
    screen: screen.text(`[... the middle is in ${path.basename(stdoutLog)} ...]`),
    screen_of: 'own',
    response: { done, exit_code: exitCode, signal: exit?.signal ?? null },
    command,
    cwd: ctx.session.workdir,
    exit_code: exitCode,
    timed_out: timedOut,
    duration_ms: durationMs,
    output_file: path.relative(ctx.runDir, stdoutLog),
  });
}
