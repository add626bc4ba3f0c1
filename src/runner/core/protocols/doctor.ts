// `belay agent doctor`: which protocol does an agent speak, and what does it get wrong? Each
// protocol is tried in a probe of its own (a fresh backend session, the sandbox unless the user
// asked for none), bounded in time, and everything the probe started is killed when it ends.
// The probes: SDK 1.x (a first request on stdin, a JSON answer with command/task_complete on
// stdout), SDK 2.0 (an HTTP server on AGENT_PORT answering /health), SDK 3.0 (`CMD --instruction
// "<text>"` printing [DONE]), nanobot (an envelope on stdin; JSON frames with a type mean rich).
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { errorMessage } from '../../../shared/errors.ts';
import { programText } from '../../../shared/programText.ts';
import { shellQuote } from '../../../shared/shell.ts';
import { shellPath, type Backend, type BackendSession, type CommandSpec, type RunFolders } from '../backends/backend.ts';
import { PROTOCOL_DESCRIPTORS, protocolDescriptors } from './descriptors.ts';
import { AgentProcess, type ExitInfo, type LineResult } from './agent-process.ts';
import { firstJsonObject, listeningPorts, looksLikeSdk1Response } from './mismatch.ts';
import { buildCommand, logLevel, parseFrame, type Envelope } from './nanobot.ts';
import { parseSdk1Response } from './sdk1.ts';
import { freePort, httpRequest, StatusSchema } from './sdk2.ts';
import { loadTask, type Task } from '../tasks/task.ts';

/** What the doctor can tell apart, in the order a clear answer is preferred. */
export const DOCTOR_PROTOCOLS = ['sdk2', 'sdk1', 'sdk3', 'nanobot-rich', 'nanobot-plain'] as const;
export type DoctorProtocol = (typeof DOCTOR_PROTOCOLS)[number];

export const PROTOCOL_TITLES: Record<DoctorProtocol, string> = {
  sdk1: PROTOCOL_DESCRIPTORS.sdk1.longTitle,
  sdk2: PROTOCOL_DESCRIPTORS.sdk2.longTitle,
  sdk3: PROTOCOL_DESCRIPTORS.sdk3.longTitle,
  'nanobot-rich': 'nanobot terminal protocol, rich (JSON frames)',
  'nanobot-plain': 'nanobot terminal protocol, plain (text output)',
};

/** The task every probe gives the agent: harmless, and says what is going on. */
export const PROBE_INSTRUCTION = 'This is a protocol check by belay agent doctor. Create a file named doctor.txt containing the word ok, then finish.';

export type ProbeName = 'sdk1' | 'sdk2' | 'sdk3' | 'nanobot';

export interface ProbeReport {
  probe: ProbeName;
  /** The protocol this probe recognised, if any. */
  matched: DoctorProtocol | undefined;
  /** One line: what the probe saw. */
  summary: string;
  /** What the agent does wrong for this protocol (meaningful when it matched). */
  problems: string[];
}

export interface DoctorReport {
  /** The protocol the agent speaks, or 'none'. */
  protocol: DoctorProtocol | 'none';
  /** Exactly one protocol matched (or only plain nanobot, with nothing else seen). */
  clear: boolean;
  /** Other protocols the agent also answered, which makes the answer unclear. */
  alsoMatched: DoctorProtocol[];
  backend: string;
  isolated: boolean;
  /** What it does wrong in the protocol found. */
  problems: string[];
  probes: ProbeReport[];
}

export interface DoctorOptions {
  /** The agent's shell command, run from `agentCwd`. */
  agentCommand: string;
  agentCwd: string;
  backend: Backend;
  /** Each probe's time (default 10 s). */
  timeoutMs?: number;
  /** Host folders the agent reads besides `agentCwd` (the runtime its command names), read-only. */
  agentFolders?: readonly string[];
  signal?: AbortSignal;
  /** Which probes to run (all by default). */
  probes?: readonly ProbeName[];
  onProgress?: (message: string) => void;
}

const UNPREPARED = 'could not prepare the probe: ';

/** How long an agent may take to exit once it said it was done, or its input closed. */
const EXIT_GRACE_MS = 5000;
/** A /health slower than this is close to the validator's limit: worth a word. (A slow first SDK 1.x
 * answer is not: an agent waiting on its model takes seconds to minutes, and Belay waits for it.) */
const SLOW_HEALTH_MS = 10_000;
/** The SDK 2.0 validator's /health wait. */
const HEALTH_LIMIT_MS = 15_000;

export async function diagnoseAgent(options: DoctorOptions): Promise<DoctorReport> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'belay-doctor-'));
  try {
    const task = await probeTask(root);
    const names = options.probes ?? [...protocolDescriptors().flatMap((d) => (d.probe ? [d.probe] : [])), 'nanobot' as const];
    const run: Record<ProbeName, (probe: Probe) => Promise<ProbeReport>> = { sdk1: probeSdk1, sdk2: probeSdk2, sdk3: probeSdk3, nanobot: probeNanobot };
    // Each probe in its own session, all at once: the slowest bounds the wait.
    const probes = await Promise.all(
      names.map(async (name) => {
        const report = await withProbe(options, root, task, name, run[name]);
        options.onProgress?.(`${name}: ${report.summary}`);
        return report;
      }),
    );
    // A backend that cannot open a session here (an agent folder it refuses to show, say) fails
    // every probe the same way: that is the answer, not "no protocol".
    const unprepared = probes.filter((p) => p.summary.startsWith(UNPREPARED));
    if (unprepared.length === probes.length && probes.length > 0) throw new Error(unprepared[0]!.summary.slice(UNPREPARED.length));
    return decide(probes, options.backend);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** The verdict from the probes' reports. */
export function decide(probes: ProbeReport[], backend: Pick<Backend, 'name' | 'isolated'>): DoctorReport {
  const matched = DOCTOR_PROTOCOLS.filter((protocol) => probes.some((p) => p.matched === protocol));
  const strong = matched.filter((p) => p !== 'nanobot-plain');
  const protocol = strong[0] ?? matched[0] ?? 'none';
  const problems = protocol === 'none' ? [] : probes.find((p) => p.matched === protocol)!.problems;
  return {
    protocol,
    clear: strong.length === 1 || (strong.length === 0 && matched.length === 1),
    alsoMatched: strong.slice(1),
    backend: backend.name,
    isolated: backend.isolated,
    problems,
    probes,
  };
}

async function probeTask(root: string): Promise<Task> {
  const dir = path.join(root, 'task');
  await mkdir(path.join(dir, 'tests'), { recursive: true });
  await writeFile(path.join(dir, 'task.toml'), 'version = "1.0"\n');
  await writeFile(path.join(dir, 'instruction.md'), `${PROBE_INSTRUCTION}\n`);
  await writeFile(path.join(dir, 'tests', 'test.sh'), '#!/bin/sh\ntest "$(cat doctor.txt)" = ok\n');
  return loadTask(dir);
}

/** One probe's session, its agent, and the deadline. */
interface Probe {
  session: BackendSession;
  folders: RunFolders;
  options: DoctorOptions;
  timeoutMs: number;
  /** Starts the agent (its command, plus `extraArgs`), marked so that what it leaves running is found. */
  start(spec: { extraArgs?: string; command?: string; env?: Record<string, string>; stdin: 'pipe' | 'ignore'; exposePort?: number }): Started;
}

interface Started {
  agent: AgentProcess;
  /** When it was started (ms, performance.now()). */
  at: number;
  /** Processes it left running when it exited on its own ("pid command"). */
  leftovers(): string[];
}

async function withProbe(options: DoctorOptions, root: string, task: Task, name: ProbeName, body: (probe: Probe) => Promise<ProbeReport>): Promise<ProbeReport> {
  const base = path.join(root, name);
  const folders: RunFolders = {
    workspace: path.join(base, 'workspace'),
    tests: path.join(base, 'tests'),
    logs: path.join(base, 'logs'),
    control: path.join(base, 'control'),
    scratch: path.join(base, 'scratch'),
    environmentLog: path.join(base, 'environment.log'),
  };
  for (const dir of [folders.workspace, folders.scratch]) await mkdir(dir, { recursive: true });
  let session: BackendSession;
  try {
    session = await options.backend.open({
      runId: `doctor-${name}-${randomBytes(4).toString('hex')}`,
      task,
      folders,
      agentFolders: [options.agentCwd, ...(options.agentFolders ?? [])],
      hidden: [task.dir],
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (error) {
    return { probe: name, matched: undefined, summary: `${UNPREPARED}${errorMessage(error)}`, problems: [] };
  }
  const agents: AgentProcess[] = [];
  const probe: Probe = {
    session,
    folders,
    options,
    timeoutMs: options.timeoutMs ?? 10_000,
    start(spec) {
      const mark = randomBytes(8).toString('hex');
      const report = `.belay-doctor-left-${mark}`;
      const command: CommandSpec = {
        argv: [shellPath(), '-c', LEFTOVER_WRAPPER, 'belay-doctor', mark, path.posix.join(session.workdir, report), shellPath(), '-c', spec.command ?? `${options.agentCommand}${spec.extraArgs ?? ''}`],
        cwd: options.agentCwd,
        env: spec.env ?? {},
        ...(spec.exposePort !== undefined ? { exposePort: spec.exposePort } : {}),
      };
      const agent = new AgentProcess({
        session,
        command,
        stdin: spec.stdin,
        stdoutLog: path.join(base, `stdout-${mark}.log`),
        stderrLog: path.join(base, `stderr-${mark}.log`),
        maxLogBytes: 1024 * 1024,
        maxQueuedLines: 200,
        maxLineChars: 100_000,
      });
      agents.push(agent);
      if (options.signal?.aborted) void agent.kill();
      return {
        agent,
        at: performance.now(),
        leftovers: () => {
          const file = path.join(folders.workspace, report);
          if (!existsSync(file)) return [];
          return readFileSync(file, 'utf8').split('\n').map((line) => line.trim()).filter(Boolean);
        },
      };
    },
  };
  const abort = () => agents.forEach((agent) => void agent.kill());
  options.signal?.addEventListener('abort', abort);
  try {
    return await body(probe);
  } catch (error) {
    return { probe: name, matched: undefined, summary: `the probe failed: ${errorMessage(error)}`, problems: [] };
  } finally {
    options.signal?.removeEventListener('abort', abort);
    await Promise.all(agents.map((agent) => agent.kill()));
    await session.endAgentPhase().catch(() => undefined);
    await session.close().catch(() => undefined);
  }
}

/** The agent's wrapper that reports what it left running (programs/leftover-wrapper.sh). */
const LEFTOVER_WRAPPER = programText(import.meta.url, './programs/leftover-wrapper.sh');

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const excerpt = (text: string, max = 80) => JSON.stringify(text.length > max ? `${text.slice(0, max)}…` : text);

/** Waits for the process to end, at most `ms`; undefined when it is still running. */
async function exitWithin(agent: AgentProcess, ms: number): Promise<ExitInfo | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  try {
    return await Promise.race([agent.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}

function exitWords(exit: ExitInfo): string {
  if (exit.spawnError) return `could not start: ${exit.spawnError.message}`;
  return exit.code !== null ? `exited with code ${exit.code}` : `was ended by ${exit.signal}`;
}

/** Tail of stderr worth quoting when a probe saw nothing. */
function stderrHint(agent: AgentProcess): string {
  const lines = agent.stderrTail.text('…').split('\n').map((line) => line.trim()).filter(Boolean);
  // The error's own line says more than the end of a stack trace ("Node.js v22…", "  at …").
  const said = lines.findLast((line) => /\b\w*(Error|Exception)\b|^error\b/i.test(line)) ?? lines.at(-1);
  return said ? ` (stderr: ${excerpt(said, 100)})` : '';
}

function leftoverProblem(started: Started): string[] {
  const left = started.leftovers();
  return left.length > 0 ? [`leaves ${left.length} process(es) running after it exits: ${left.slice(0, 3).join('; ')}`] : [];
}

// SDK 1.x: a realistic first request, then a second, then the end of its input.
async function probeSdk1(probe: Probe): Promise<ProbeReport> {
  const { session, timeoutMs } = probe;
  const started = probe.start({ stdin: 'pipe', env: { PYTHONUNBUFFERED: '1' } });
  const { agent } = started;
  const problems: string[] = [];
  const request = (step: number, last: string | null, output: string | null, exitCode: number | null) =>
    JSON.stringify({ instruction: PROBE_INSTRUCTION, step, last_command: last, output, exit_code: exitCode, cwd: session.workdir });
  const other: string[] = [];
  let wrapped = false;
  /** The next SDK 1.x answer; other lines are kept to be reported. */
  const answer = async (deadline: number): Promise<{ line: string; command: string | null; complete: boolean } | LineResult['kind']> => {
    for (;;) {
      const next = await agent.nextLine(Math.max(0, deadline - performance.now()));
      if (next.kind !== 'line') return next.kind;
      if (looksLikeSdk1Response(next.text)) {
        const parsed = parseSdk1Response(next.text);
        if ('error' in parsed) {
          problems.push(`answers with a malformed response (${parsed.error}): ${excerpt(next.text)}`);
          continue;
        }
        const bare = next.text.trim();
        if (!bare.startsWith('{') || !bare.endsWith('}')) wrapped = true;
        return { line: next.text, command: parsed.response.command, complete: parsed.response.taskComplete };
      }
      other.push(next.text);
    }
  };
  agent.send(request(1, null, null, null));
  let first = await answer(started.at + timeoutMs);
  let closedEarly = false;
  if (first === 'timeout') {
    // Perhaps it reads stdin to its end before answering.
    agent.closeStdin();
    closedEarly = true;
    first = await answer(performance.now() + EXIT_GRACE_MS);
    if (typeof first === 'object') problems.push('answers only once its stdin is closed: it reads stdin to its end instead of line by line (SDK 1.x keeps stdin open between steps)');
  }
  const nonJson = other.filter((line) => firstJsonObject(line) === undefined && line.trim() !== '');
  if (typeof first !== 'object') {
    const exit = agent.exit;
    const why = first === 'eof' && exit ? exitWords(exit) : `no answer within ${seconds(timeoutMs)} (an agent waiting on its model may need a longer --timeout)`;
    const json = other.find((line) => firstJsonObject(line) !== undefined);
    const saw = json ? `; wrote JSON without command or task_complete: ${excerpt(json)}` : nonJson[0] ? `; wrote ${excerpt(nonJson[0])}` : '';
    return { probe: 'sdk1', matched: undefined, summary: `no SDK 1.x answer to the first request: ${why}${saw}${stderrHint(agent)}`, problems };
  }
  const firstMs = performance.now() - started.at;
  let summary = `answered the first request after ${seconds(firstMs)}: ${excerpt(first.line)}`;
  if (wrapped) problems.push('writes text around its JSON answer on the same line (accepted, but stdout should hold only the JSON)');
  if (!closedEarly && !first.complete) {
    agent.send(request(2, first.command, 'ok\n', 0));
    const second = await answer(performance.now() + timeoutMs);
    if (second === 'eof') problems.push(`${agent.exit ? exitWords(agent.exit) : 'exited'} after its first answer: the process must stay alive between steps`);
    else if (second === 'timeout') problems.push(`does not answer the second request within ${seconds(timeoutMs)}`);
    else summary += '; answered the second too';
  }
  if (nonJson.length > 0) problems.push(`writes lines that are not JSON to stdout (${nonJson.length}, e.g. ${excerpt(nonJson[0]!)}): stdout is the protocol; log to stderr`);
  if (!closedEarly) agent.closeStdin();
  const exit = await exitWithin(agent, EXIT_GRACE_MS);
  if (!exit) problems.push(`ignores the end of its stdin: still running ${seconds(EXIT_GRACE_MS)} after it closed`);
  else {
    if (exit.code !== 0 && exit.code !== null) problems.push(`exits with code ${exit.code} when its stdin closes`);
    problems.push(...leftoverProblem(started));
  }
  return { probe: 'sdk1', matched: 'sdk1', summary, problems };
}

// SDK 2.0: /health on AGENT_PORT, then /start and /status.
async function probeSdk2(probe: Probe): Promise<ProbeReport> {
  const { session, timeoutMs } = probe;
  const port = await freePort();
  const started = probe.start({
    stdin: 'ignore',
    env: { AGENT_PORT: String(port), EVALUATION_MODE: 'true', FORCE_HTTP_SERVER: '1', PYTHONUNBUFFERED: '1', TERM_TASK_ID: 'belay-doctor-probe' },
    exposePort: port,
  });
  const { agent } = started;
  const endpoint = () => session.connect(port);
  const problems: string[] = [];
  const deadline = started.at + timeoutMs;
  let healthyAt: number | undefined;
  let lastAnswer: string | undefined;
  while (performance.now() < deadline && !agent.exit) {
    try {
      const answer = await httpRequest(endpoint, 'GET', '/health', 2000, undefined, 64 * 1024);
      if (answer.status === 200 && /ok/i.test(answer.body)) {
        healthyAt = performance.now();
        break;
      }
      lastAnswer = `HTTP ${answer.status} ${excerpt(answer.body, 60)}`;
      if (answer.status === 200) {
        problems.push(`/health answers 200 without "ok" in its body (${excerpt(answer.body, 60)})`);
        healthyAt = performance.now();
        break;
      }
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (healthyAt === undefined) {
    const pid = agent.pid;
    const ports = pid !== undefined ? listeningPorts(pid).filter((p) => p !== port) : [];
    const why = agent.exit ? exitWords(agent.exit) : `nothing answered /health on AGENT_PORT within ${seconds(timeoutMs)}`;
    const elsewhere = ports.length > 0 ? `; it listens on port ${ports.join(', ')} instead of AGENT_PORT` : '';
    return { probe: 'sdk2', matched: undefined, summary: `not an SDK 2.0 server: ${why}${lastAnswer ? ` (last answer: ${lastAnswer})` : ''}${elsewhere}${stderrHint(agent)}`, problems: [] };
  }
  const healthMs = healthyAt - started.at;
  if (healthMs > HEALTH_LIMIT_MS) problems.push(`/health answers only after ${seconds(healthMs)}: the validator gives up after ${seconds(HEALTH_LIMIT_MS)}`);
  else if (healthMs > SLOW_HEALTH_MS) problems.push(`/health is slow: it answers only after ${seconds(healthMs)} (the validator waits ${seconds(HEALTH_LIMIT_MS)})`);
  let summary = `/health answered after ${seconds(healthMs)}`;
  try {
    const start = await httpRequest(endpoint, 'POST', '/start', 10_000, JSON.stringify({ instruction: PROBE_INSTRUCTION, max_steps: 5, timeout_secs: Math.ceil(timeoutMs / 1000) }));
    if (start.status !== 200) problems.push(`POST /start answers HTTP ${start.status}: ${excerpt(start.body)}`);
  } catch (error) {
    problems.push(`POST /start: ${errorMessage(error)} (the validator waits 10 s)`);
    return { probe: 'sdk2', matched: 'sdk2', summary, problems };
  }
  let lastStatus: string | undefined;
  const statusDeadline = performance.now() + timeoutMs;
  let idleAfterStart = 0;
  while (performance.now() < statusDeadline) {
    let status;
    try {
      const answer = await httpRequest(endpoint, 'GET', '/status', 5000);
      let body: unknown;
      try {
        body = JSON.parse(answer.body);
      } catch {
        problems.push(`/status does not answer JSON: ${excerpt(answer.body)}`);
        break;
      }
      const parsed = StatusSchema.safeParse(body);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        problems.push(`/status answers an unexpected shape (${issue.path.join('.') || 'value'}: ${issue.message}): ${excerpt(answer.body)}`);
        break;
      }
      status = parsed.data;
    } catch (error) {
      problems.push(`GET /status: ${errorMessage(error)}`);
      break;
    }
    lastStatus = status.status;
    if (status.status === 'idle' && ++idleAfterStart > 10) {
      problems.push('/status stays idle after POST /start');
      break;
    }
    if (status.status === 'completed' || status.status === 'failed' || status.done === true) {
      summary += `; /status said ${status.status}${status.done ? ' (done)' : ''}${status.error ? `: ${excerpt(status.error)}` : ''} after ${status.steps ?? 0} step(s)`;
      if (status.status === 'completed' && status.done === false) problems.push('/status says completed with done: false');
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  if (lastStatus === 'running') summary += `; still running when the probe ended (${seconds(timeoutMs)})`;
  if (agent.exit) problems.push(`its server ${exitWords(agent.exit)} while the harness still polls /status`);
  return { probe: 'sdk2', matched: 'sdk2', summary, problems };
}

// SDK 3.0: `CMD --instruction "<text>"`, [DONE] on stdout, then exit 0.
async function probeSdk3(probe: Probe): Promise<ProbeReport> {
  const { timeoutMs } = probe;
  const started = probe.start({
    extraArgs: ` --instruction ${shellQuote(PROBE_INSTRUCTION)}`,
    stdin: 'ignore',
    // No model is reachable from a probe: the proxy address leads nowhere, as it says.
    env: { LLM_PROXY_URL: 'http://127.0.0.1:9', TERM_TASK_ID: 'belay-doctor-probe', EVALUATION_MODE: 'true', PYTHONUNBUFFERED: '1' },
  });
  const { agent } = started;
  const problems: string[] = [];
  let doneAt: number | undefined;
  let firstLine: string | undefined;
  for (;;) {
    const next = await agent.nextLine(Math.max(0, started.at + timeoutMs - performance.now()));
    if (next.kind !== 'line') break;
    firstLine ??= next.text;
    if (next.text.includes('[DONE]')) {
      doneAt = performance.now();
      if (next.text.trim() !== '[DONE]') problems.push(`prints [DONE] inside a longer line (${excerpt(next.text)}): put it on a line of its own`);
      break;
    }
  }
  if (doneAt === undefined) {
    const exit = agent.exit ?? (await exitWithin(agent, 0));
    const why = exit ? `${exitWords(exit)} without printing [DONE]` : `no [DONE] within ${seconds(timeoutMs)}`;
    return { probe: 'sdk3', matched: undefined, summary: `${why}${firstLine ? `; first line ${excerpt(firstLine)}` : ''}${stderrHint(agent)}`, problems: [] };
  }
  const doneMs = doneAt - started.at;
  const exit = await exitWithin(agent, EXIT_GRACE_MS);
  if (!exit) problems.push(`prints [DONE] but keeps running (${seconds(EXIT_GRACE_MS)} later)`);
  else {
    if (exit.code !== 0) problems.push(`prints [DONE] but ${exitWords(exit)}`);
    problems.push(...leftoverProblem(started));
  }
  return { probe: 'sdk3', matched: 'sdk3', summary: `printed [DONE] after ${seconds(doneMs)}`, problems };
}

const KNOWN_FRAMES = ['message', 'progress', 'error', 'log'];

// nanobot: one envelope on stdin, then stdin closed (terminal protocol v1).
async function probeNanobot(probe: Probe): Promise<ProbeReport> {
  const { session, folders, timeoutMs } = probe;
  const text = 'hello from belay agent doctor';
  await mkdir(path.join(folders.workspace, 'users', 'doctor'), { recursive: true });
  const envelope: Envelope = {
    version: 1,
    text,
    channel: 'cli',
    chat_id: 'doctor',
    session_key: 'cli:doctor',
    workspace: session.workdir,
    user_data_dir: path.posix.join(session.workdir, 'users', 'doctor'),
  };
  const started = probe.start({ command: buildCommand(probe.options.agentCommand, text), stdin: 'pipe' });
  const { agent } = started;
  agent.send(JSON.stringify(envelope));
  agent.closeStdin();
  const problems: string[] = [];
  let frames = 0;
  let messages = 0;
  let errorFrame = false;
  const plain: string[] = [];
  let timedOut = false;
  for (;;) {
    const next = await agent.nextLine(Math.max(0, started.at + timeoutMs - performance.now()));
    if (next.kind === 'timeout') {
      timedOut = true;
      break;
    }
    if (next.kind !== 'line') break;
    const frame = parseFrame(next.text);
    if (frame === undefined) {
      const raw = firstJsonObject(next.text) as { type?: unknown } | undefined;
      if (raw && typeof raw.type === 'string' && KNOWN_FRAMES.includes(raw.type)) {
        frames++;
        problems.push(`a '${raw.type}' frame without its text is shown as plain text: ${excerpt(next.text)}`);
      } else if (next.text.trim() !== '') plain.push(next.text);
      continue;
    }
    frames++;
    if (frame === null) problems.push(`writes frames of a type nanobot does not know (skipped): ${excerpt(next.text)}`);
    else if (frame.type === 'message') messages++;
    else if (frame.type === 'error') errorFrame = true;
    else if (frame.type === 'log') {
      const level = (firstJsonObject(next.text) as { level?: unknown }).level;
      if (level !== undefined && logLevel(level) === undefined) problems.push(`a log frame's level ${JSON.stringify(level)} is none of debug, info, warning, error`);
    }
  }
  const exit = timedOut ? undefined : await exitWithin(agent, EXIT_GRACE_MS);
  const rich = frames > 0;
  if (timedOut || !exit) {
    const summary = `did not finish within ${seconds(timeoutMs)} of its envelope (nanobot kills it at its timeout)`;
    if (!rich) return { probe: 'nanobot', matched: undefined, summary: `${summary}${plain[0] ? `; first line ${excerpt(plain[0])}` : ''}${stderrHint(agent)}`, problems: [] };
    return { probe: 'nanobot', matched: 'nanobot-rich', summary, problems: [...problems, `does not exit within ${seconds(timeoutMs)} of its envelope`] };
  }
  if (exit.spawnError) return { probe: 'nanobot', matched: undefined, summary: exitWords(exit), problems: [] };
  if (rich) {
    if (messages === 0 && !errorFrame) problems.push(plain.length > 0 ? 'sends no message frame: only its plain lines reach the user' : 'sends no message frame: the user gets no answer');
    if (messages > 0 && plain.length > 0) problems.push(`writes plain lines among its frames (${excerpt(plain[0]!)}): they are dropped once a message frame came`);
    if (exit.code !== 0 && !errorFrame) problems.push(`${exitWords(exit)} without an error frame`);
    problems.push(...leftoverProblem(started));
    return { probe: 'nanobot', matched: 'nanobot-rich', summary: `answered the envelope with ${frames} frame(s), ${messages} message(s), then ${exitWords(exit)}`, problems };
  }
  if (exit.code !== 0) return { probe: 'nanobot', matched: undefined, summary: `${exitWords(exit)} after its envelope${plain[0] ? `; first line ${excerpt(plain[0])}` : ''}${stderrHint(agent)}`, problems: [] };
  if (agent.stderrTail.length > 0) problems.push('writes to stderr: nanobot shows it to the user after STDERR:');
  if (plain.length === 0) problems.push('prints nothing: the user gets "(no output)"');
  problems.push(...leftoverProblem(started));
  return { probe: 'nanobot', matched: 'nanobot-plain', summary: `printed ${plain.length} line(s) and exited 0 (any program that prints and exits looks like this)`, problems };
}
