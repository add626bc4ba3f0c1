// One protocol for every installed coding CLI (installedAgent.ts describes each): the CLI runs once,
// headless, in the task's working folder, with the task's instruction, its model reached only
// through Belay's gateway with the run's token, and its own state in the run's agent-state folder.
// Its stdout is its event stream: each tool call it makes is a step of the run (the command, its
// output and exit code, the model's words before it), shown live and kept in the trajectory, with
// the model calls charged to the step they led to. Like SDK 3.0, its exit is not a failure: the
// tests decide; `agent_completed` says whether it said it finished. At its time limit, or past the
// run's step limit, the whole tree is ended.
import { writeFile, mkdir } from 'node:fs/promises';
import * as path from 'node:path';
import { shellPath } from '../backends/backend.ts';
import { RunFailure } from '../records/events.ts';
import { runFiles, stepOutputFile } from '../records/records.ts';
import type { AgentContext, AgentOutcome, AgentProtocol } from './agentProtocol.ts';
import { AgentProcess, describeExit, stderrClause, type ExitInfo } from './agent-process.ts';
import type { HeadlessInput, InstalledAgent, InstalledEvent } from './installed/installedAgent.ts';

/** An event line longer than this is cut (and then not read): the log keeps it whole. */
const MAX_EVENT_LINE_CHARS = 4_000_000;

export function installedProtocol(agent: InstalledAgent): AgentProtocol {
  return { name: agent.name, keepsState: true, run: (ctx) => runInstalled(agent, ctx) };
}

/** The shell script that starts the CLI's command with the arguments given after it (never spliced into the script). */
export function installedScript(agentCommand: string): string {
  return `exec ${agentCommand} "$@"`;
}

interface OpenCall {
  step: number;
  name: string;
  command: string;
  input: string;
  said: string;
  started: number;
}

export async function runInstalled(agent: InstalledAgent, ctx: AgentContext): Promise<AgentOutcome> {
  if (!ctx.llm) throw new RunFailure('setup_error', `${agent.title} needs a model, and its one way to a model is Belay's gateway: give the run an upstream (belay run --llm-upstream URL, or the agent's llm setting)`);
  const stateDir = ctx.session.stateDir;
  const stateFolder = ctx.stateFolder;
  if (stateDir === undefined || stateFolder === undefined) throw new RunFailure('harness_error', `the ${ctx.session.backend} backend gave ${agent.title} no state folder`);
  const files = runFiles(ctx.runDir);
  const input: HeadlessInput = { instruction: ctx.task.instruction, model: ctx.llm.model ?? agent.defaultModel, baseUrl: ctx.llm.baseUrl, token: ctx.llm.token, stateDir, workdir: ctx.session.workdir };
  for (const [name, text] of Object.entries(agent.stateFiles(input))) {
    const target = path.join(stateFolder, name);
    if (!target.startsWith(stateFolder + path.sep)) throw new RunFailure('harness_error', `${agent.title}'s state file ${name} would leave its state folder`);
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, text, { mode: 0o600 });
  }
  await mkdir(files.steps, { recursive: true });
  const reader = agent.events();
  const shown = `${agent.bin} ${agent.argv({ ...input, instruction: '…', token: '…' }).join(' ')}`;
  ctx.emit({ type: 'notice', message: `${agent.title} runs headless (${shown.length > 200 ? `${shown.slice(0, 199)}…` : shown}); its model calls go through Belay's gateway` });
  const agentProcess = new AgentProcess({
    session: ctx.session,
    command: {
      argv: [shellPath(), '-c', installedScript(ctx.agentCommand), agent.name, ...agent.argv(input)],
      cwd: ctx.session.workdir,
      env: { ...ctx.env, ...agent.environment(input), ...(agent.needsNode ? { ELECTRON_RUN_AS_NODE: '1' } : {}) },
    },
    stdin: 'ignore',
    stdoutLog: files.agentStdout,
    stderrLog: files.agentStderr,
    maxLogBytes: ctx.limits.maxLogBytes,
    maxLineChars: MAX_EVENT_LINE_CHARS,
    maxQueuedLines: 10_000,
    onStderr: (chunk) => ctx.emit({ type: 'agent-log', chunk }),
  });
  const open = new Map<string, OpenCall>();
  /** Each step's output file, written as its result comes: all on disk before the run's records are. */
  const writes: Promise<unknown>[] = [];
  let steps = 0;
  let said = '';
  let done: Extract<InstalledEvent, { kind: 'done' }> | undefined;
  let ending: 'eof' | 'timeout' | 'aborted' | 'max_steps' = 'eof';

  const closeCall = (id: string, output: string, exitCode: number | null, timedOut: boolean) => {
    const call = open.get(id);
    if (!call) return;
    open.delete(id);
    const durationMs = Date.now() - call.started;
    if (output) ctx.emit({ type: 'output', step: call.step, chunk: output.endsWith('\n') ? output : `${output}\n` });
    ctx.emit({ type: 'step-ended', step: call.step, exitCode, timedOut, durationMs });
    const outputFile = stepOutputFile(call.step);
    writes.push(writeFile(path.join(ctx.runDir, outputFile), output).catch(() => undefined));
    ctx.trajectory.push({
      step: call.step,
      screen: null,
      response: { tool: call.name, input: safeJson(call.input), ...(call.said ? { text: call.said } : {}) },
      command: call.command,
      cwd: ctx.session.workdir,
      exit_code: exitCode,
      timed_out: timedOut,
      duration_ms: durationMs,
      output_file: outputFile,
    });
  };

  const take = (event: InstalledEvent) => {
    switch (event.kind) {
      case 'text':
        said = said ? `${said}\n${event.text}` : event.text;
        ctx.emit({ type: 'agent-text', step: steps + 1, text: event.text });
        break;
      case 'tool-call':
        if (open.has(event.id)) break;
        steps++;
        open.set(event.id, { step: steps, name: event.name, command: event.command, input: event.input, said, started: Date.now() });
        said = '';
        ctx.emit({ type: 'step-started', step: steps });
        ctx.emit({ type: 'command', step: steps, command: event.command, cwd: ctx.session.workdir });
        break;
      case 'tool-result':
        closeCall(event.id, event.output, event.exitCode, false);
        break;
      case 'error':
        ctx.emit({ type: 'notice', message: `${agent.title}: ${event.message}` });
        break;
      case 'done':
        done = event;
        break;
    }
  };

  try {
    for (;;) {
      const next = await agentProcess.nextLine(Math.max(0, ctx.remainingMs()), ctx.signal);
      if (next.kind !== 'line') {
        ending = next.kind;
        break;
      }
      for (const event of reader.line(next.text)) take(event);
      if (steps > ctx.limits.maxSteps) {
        ending = 'max_steps';
        break;
      }
    }
    // What the reader still holds (a turn's text cut short) comes out now.
    for (const event of reader.end?.() ?? []) take(event);
    if (ending === 'aborted') throw new RunFailure('aborted', 'the run was stopped');
    // Its stdout closed: it has a moment to exit by itself (within its time), then it is ended.
    const exit = ending === 'eof' ? await exitWithin(agentProcess, Math.min(ctx.limits.doneGraceMs, Math.max(0, ctx.remainingMs()))) : await agentProcess.kill();
    // Calls left without a result: the CLI was ended (or ended itself) while they ran.
    for (const id of [...open.keys()]) closeCall(id, '', null, ending === 'timeout');
    if (said) ctx.trajectory.push({ step: steps + 1, screen: null, response: { text: said, done: done?.ok ?? false }, command: null, cwd: ctx.session.workdir, exit_code: null, timed_out: false, duration_ms: null, output_file: null });
    if (ending === 'timeout') {
      const failure = new RunFailure('agent_timeout', `${agent.title} did not finish within its time limit of ${Math.round(ctx.limits.agentTimeoutMs / 1000)} s`);
      failure.steps = steps;
      throw failure;
    }
    if (ending === 'max_steps') {
      const failure = new RunFailure('max_steps', `${agent.title} made more than ${ctx.limits.maxSteps} tool calls: it was ended`);
      failure.steps = steps;
      throw failure;
    }
    // A program that could not be started here (a binary for another C library, a missing runtime).
    if (steps === 0 && !done && (exit?.code === 126 || exit?.code === 127)) {
      throw new RunFailure('setup_error', `${agent.title} could not start in the ${ctx.session.backend} environment (exit ${exit.code}${stderrClause(agentProcess)}): a task's image must provide glibc and /bin/sh for it`);
    }
    if (!done) ctx.emit({ type: 'notice', message: `${agent.title} exited ${describeExit(exit)} without saying it had finished: the tests decide${stderrClause(agentProcess)}` });
    else if (!done.ok) ctx.emit({ type: 'notice', message: `${agent.title} says it failed${done.summary ? `: ${done.summary.slice(0, 300)}` : ''}` });
    return { steps, agentCompleted: done?.ok === true };
  } finally {
    await agentProcess.kill();
    await Promise.all(writes);
  }
}

async function exitWithin(agent: AgentProcess, ms: number): Promise<ExitInfo> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  const exit = await Promise.race([agent.exited, late]);
  clearTimeout(timer);
  return exit ?? (await agent.kill());
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}


