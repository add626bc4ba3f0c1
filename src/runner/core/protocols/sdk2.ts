// Term Challenge SDK 2.0: the agent is an HTTP server on AGENT_PORT; the harness waits for
// /health, sends POST /start, and polls /status until the agent completes or fails.
import * as http from 'node:http';
import * as net from 'node:net';
import type { Duplex } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import * as z from 'zod';
import { errorMessage } from '../../../shared/errors.ts';
import { AgentProcess } from './agent-process.ts';
import { commandArgv, type Endpoint } from '../backends/backend.ts';
import { RunFailure } from '../records/events.ts';
import { asksForInstruction, looksLikeSdk1Response, SDK3_HINT } from './mismatch.ts';
import type { AgentContext, AgentOutcome, AgentProtocol } from './agentProtocol.ts';
import { runFiles } from '../records/records.ts';

export const HistoryEntrySchema = z.looseObject({
  step: z.number().int(),
  command: z.string().nullish(),
  output: z.string().nullish(),
  exit_code: z.number().int().nullish(),
});

export const StatusSchema = z.looseObject({
  status: z.enum(['idle', 'running', 'completed', 'failed']),
  steps: z.number().int().nonnegative().optional(),
  elapsed_secs: z.number().optional(),
  error: z.string().nullish(),
  done: z.boolean().optional(),
  history: z.array(HistoryEntrySchema).optional(),
});
export type AgentStatus = z.infer<typeof StatusSchema>;

/** A port nobody listens on right now on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

interface HttpAnswer {
  status: number;
  body: string;
}

/** An answer the agent got wrong by itself (too big, too slow): named as the agent's fault. */
export class AgentAnswerError extends Error {
  override name = 'AgentAnswerError';
}

/** Where an HTTP request goes: an endpoint on this machine, or a connection a backend opens (`BackendSession.connect`). */
export type HttpTarget = Endpoint | (() => Promise<Duplex>);

/**
 * One HTTP request that ends by `timeoutMs` whatever the server does (an answer trickling in a
 * byte at a time included), with a body of at most `maxBytes`.
 */
export function httpRequest(endpoint: HttpTarget, method: string, pathName: string, timeoutMs: number, body?: string, maxBytes = 4 * 1024 * 1024): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const target: http.RequestOptions =
      typeof endpoint === 'function'
        ? {
            // VS Code's extension host puts its proxy agent on every request that names neither a
            // socket path nor `agent: false` (and an agent ignores `createConnection`): a request
            // naming a socket is left alone, and Node then takes the connection made here.
            socketPath: 'belay-session-connection',
            _vscodeProxySupport: 'off',
            createConnection: (_options, made) => {
              endpoint().then(
                (stream) => made(null, stream),
                (error: unknown) => made(error instanceof Error ? error : new Error(String(error)), undefined as never),
              );
              return undefined;
            },
          } as http.RequestOptions
        : 'socketPath' in endpoint
          ? { socketPath: endpoint.socketPath }
          : { host: endpoint.host, port: endpoint.port };
    let settled = false;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      reject(error);
    };
    const request = http.request(
      {
        ...target,
        method,
        path: pathName,
        // No agent: a fresh connection for each request (with `createConnection`, none is used anyway).
        ...(typeof endpoint === 'function' ? {} : { agent: false }),
        maxHeaderSize: 16 * 1024,
        headers: body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) fail(new AgentAnswerError(`the answer to ${method} ${pathName} is larger than ${maxBytes} bytes`));
          else chunks.push(chunk);
        });
        response.on('end', () => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
        });
        response.on('error', fail);
      },
    );
    // A deadline, not an idle timeout: a byte every now and then does not keep the request alive.
    const timer = setTimeout(() => fail(new AgentAnswerError(`no complete answer to ${method} ${pathName} within ${timeoutMs} ms`)), timeoutMs);
    request.on('error', fail);
    request.end(body);
  });
}

/** Term Challenge SDK 2.0: the agent is an HTTP server; the harness starts it and polls its status. */
export const sdk2: AgentProtocol = { name: 'sdk2', run: runSdk2 };

export async function runSdk2(ctx: AgentContext): Promise<AgentOutcome> {
  const files = runFiles(ctx.runDir);
  const port = await freePort();
  let sdk1Line: string | undefined;
  const agent = new AgentProcess({
    session: ctx.session,
    command: {
      argv: commandArgv(ctx.session, ctx.agentCommand),
      cwd: ctx.agentCwd,
      env: {
        ...ctx.env,
        AGENT_PORT: String(port),
        EVALUATION_MODE: 'true',
        FORCE_HTTP_SERVER: '1',
        PYTHONUNBUFFERED: '1',
      },
      exposePort: port,
    },
    stdin: 'ignore',
    stdoutLog: files.agentStdout,
    stderrLog: files.agentStderr,
    maxLogBytes: ctx.limits.maxLogBytes,
    maxQueuedLines: 50,
    onStderr: (chunk) => ctx.emit({ type: 'agent-log', chunk }),
    onStdout: (chunk) => {
      if (sdk1Line === undefined) sdk1Line = chunk.split('\n').find((line) => looksLikeSdk1Response(line));
    },
  });
  const endpoint = () => ctx.session.connect(port);
  const stop = ctx.signal;
  // SDK 1.x JSON on stdout counts only until the HTTP server answers: an SDK 2.0 agent may well
  // print its model's JSON answers while it works.
  let healthy = false;
  const gone = (what: string): RunFailure => {
    if (sdk1Line !== undefined && !healthy) {
      return new RunFailure(
        'agent_error',
        `protocol mismatch: the agent wrote SDK 1.x JSON on stdout (${sdk1Line.slice(0, 120)}) instead of serving HTTP on AGENT_PORT; run it with --protocol sdk1`,
      );
    }
    const exit = agent.exit;
    const how = !exit ? 'is still running' : exit.spawnError ? `could not start: ${exit.spawnError.message}` : `exited with ${exit.code !== null ? `code ${exit.code}` : exit.signal}`;
    const tail = agent.stderrTail.text('…').trim().slice(-500);
    const hint = exit && asksForInstruction(tail) ? SDK3_HINT : '';
    return new RunFailure('agent_error', `the agent ${how} ${what}${tail ? `; its stderr ends with: ${tail}` : ''}${hint}`);
  };
  const history = new Map<number, z.infer<typeof HistoryEntrySchema>>();
  // Every request ends by the agent's deadline at the latest.
  const within = (ms: number) => Math.max(1, Math.min(ms, ctx.remainingMs()));
  const agentTimeout = () => new RunFailure('agent_timeout', `the agent did not finish within its time limit of ${Math.round(ctx.limits.agentTimeoutMs / 1000)} s`);
  try {
    // 1. Health: every healthIntervalMs until healthTimeoutMs.
    const healthDeadline = Date.now() + ctx.limits.healthTimeoutMs;
    let lastProblem = 'no answer';
    let noticed = false;
    for (;;) {
      if (stop.aborted) throw new RunFailure('aborted', 'the run was stopped');
      if (agent.exit) {
        throw gone(`before its HTTP server answered /health on AGENT_PORT=${port}; an SDK 1.x agent reads requests on stdin instead (use --protocol sdk1)`);
      }
      if (ctx.remainingMs() <= 0) throw agentTimeout();
      try {
        // A request may take the rest of the startup window: an agent busy loading (or a container
        // starting an `exec` per connection on a busy machine) answers late, and late is not never.
        const window = Math.max(100, ctx.limits.healthIntervalMs * 5, healthDeadline - Date.now());
        const answer = await httpRequest(endpoint, 'GET', '/health', within(window), undefined, ctx.limits.maxResponseBytes);
        if (answer.status === 200 && answer.body.includes('ok')) {
          healthy = true;
          break;
        }
        lastProblem = `HTTP ${answer.status}`;
      } catch (error) {
        lastProblem = errorMessage(error);
      }
      // A line of SDK 1.x JSON and no HTTP server yet: a hint, not proof (a slow server may
      // print JSON while it starts). Said at once; the run ends at the health timeout.
      if (sdk1Line !== undefined && !noticed) {
        noticed = true;
        ctx.emit({ type: 'notice', message: `the agent wrote SDK 1.x JSON on stdout (${sdk1Line.slice(0, 120)}) and does not serve HTTP on AGENT_PORT yet: if it is an SDK 1.x agent, run it with --protocol sdk1` });
      }
      if (Date.now() >= healthDeadline) {
        if (sdk1Line !== undefined) throw gone('');
        throw new RunFailure(
          'agent_error',
          `the agent did not answer GET /health on AGENT_PORT=${port} within ${ctx.limits.healthTimeoutMs / 1000} s (last: ${lastProblem}); is it an SDK 2.0 agent?`,
        );
      }
      await delay(ctx.limits.healthIntervalMs, undefined, { signal: stop }).catch(() => undefined);
    }
    // 2. Start.
    const startBody = JSON.stringify({
      instruction: ctx.task.instruction,
      max_steps: ctx.limits.maxSteps,
      timeout_secs: Math.max(1, Math.round(ctx.remainingMs() / 1000)),
    });
    let started: HttpAnswer;
    try {
      started = await httpRequest(endpoint, 'POST', '/start', within(ctx.limits.startTimeoutMs), startBody, ctx.limits.maxResponseBytes);
    } catch (error) {
      if (ctx.remainingMs() <= 0) throw agentTimeout();
      throw new RunFailure('agent_error', `POST /start failed: ${errorMessage(error)}${error instanceof AgentAnswerError ? " (the agent's fault)" : ''}`);
    }
    if (started.status !== 200) throw new RunFailure('agent_error', `POST /start answered HTTP ${started.status}: ${started.body.slice(0, 300)}`);
    // 3. Poll.
    let errorsInARow = 0;
    for (;;) {
      await delay(ctx.limits.pollIntervalMs, undefined, { signal: stop }).catch(() => undefined);
      if (stop.aborted) throw new RunFailure('aborted', 'the run was stopped');
      if (ctx.remainingMs() <= 0) throw agentTimeout();
      if (agent.exit) throw gone('while the task was running');
      let status: AgentStatus;
      try {
        const answer = await httpRequest(endpoint, 'GET', '/status', within(ctx.limits.statusTimeoutMs), undefined, ctx.limits.maxResponseBytes);
        if (answer.status !== 200) throw new Error(`HTTP ${answer.status}`);
        const parsed = StatusSchema.safeParse(JSON.parse(answer.body));
        if (!parsed.success) throw new Error(`field '${parsed.error.issues[0]!.path.join('.')}': ${parsed.error.issues[0]!.message}`);
        status = parsed.data;
        errorsInARow = 0;
      } catch (error) {
        if (ctx.remainingMs() <= 0) throw agentTimeout();
        if (error instanceof AgentAnswerError && /larger than/.test(error.message)) {
          throw new RunFailure('agent_error', `GET /status: ${error.message} (the agent's fault: the protocol keeps the history short)`);
        }
        errorsInARow++;
        ctx.emit({ type: 'notice', message: `GET /status failed (${errorsInARow}/${ctx.limits.maxConsecutiveErrors}): ${errorMessage(error)}` });
        if (errorsInARow >= ctx.limits.maxConsecutiveErrors) {
          const fault = error instanceof AgentAnswerError ? " (the agent's fault)" : '';
          throw new RunFailure('agent_error', `GET /status failed ${errorsInARow} times in a row (last: ${errorMessage(error)})${fault}`);
        }
        continue;
      }
      record(ctx, history, status);
      // Not Math.max(...keys): spreading a long history overflows the stack.
      let steps = status.steps ?? 0;
      for (const step of history.keys()) if (step > steps) steps = step;
      if (status.status === 'failed') {
        const message = status.error ?? 'the agent reported failure without an error';
        const failure = new RunFailure(/max steps/i.test(message) ? 'max_steps' : /timeout/i.test(message) ? 'agent_timeout' : 'agent_error', `the agent failed: ${message}`);
        failure.steps = steps;
        throw failure;
      }
      // As Term Challenge's validator: `done: true` ends the agent phase whatever the status says, unless it says failed.
      if (status.status === 'completed' || status.done === true) return { steps, agentCompleted: true };
    }
  } finally {
    await agent.kill();
  }
}

/** Turns history entries not seen before into step events and trajectory entries. */
function record(ctx: AgentContext, history: Map<number, z.infer<typeof HistoryEntrySchema>>, status: AgentStatus): void {
  for (const entry of status.history ?? []) {
    // Steps the agent was not given do not count: the trajectory stays within the step limit.
    if (entry.step < 1 || entry.step > ctx.limits.maxSteps || history.has(entry.step)) continue;
    history.set(entry.step, entry);
    const command = entry.command ?? null;
    ctx.emit({ type: 'step-started', step: entry.step });
    if (command !== null) ctx.emit({ type: 'command', step: entry.step, command, cwd: '' });
    if (entry.output) ctx.emit({ type: 'output', step: entry.step, chunk: entry.output });
    ctx.emit({ type: 'step-ended', step: entry.step, exitCode: entry.exit_code ?? null, timedOut: false, durationMs: 0 });
    ctx.trajectory.push({
      step: entry.step,
      screen: entry.output ?? null,
      screen_of: 'own',
      response: entry,
      command,
      cwd: null,
      exit_code: entry.exit_code ?? null,
      timed_out: false,
      duration_ms: null,
      output_file: null,
    });
  }
}
