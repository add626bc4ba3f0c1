// `belay mcp` for clients of MCP 2026-07-28: each request stands alone, its `_meta` saying the
// revision and what the client can do. A cue that needs the human is answered in the way the
// client supports best: as a task of the tasks extension (`input_required` while the human has
// not answered, with the cue as an elicitation when the client shows them), as an
// `InputRequiredResult` whose elicitation the client shows (the retry's `requestState` is sealed
// by this process, so a client cannot point it at another cue), or, for a client with neither,
// by waiting as the 2025-11-25 server does. In every way the cue is in the mailbox too, so the
// panel or any HAP console may answer it; the first answer wins.
import { createHash, randomUUID } from 'node:crypto';
import * as z from 'zod';
import { errorMessage } from '../shared/errors.ts';
import { MailboxError } from '../cues/core/errors.ts';
import type { CueResponse } from '../cues/core/store.ts';
import { answerFromElicitation, cueElicitation } from './mcpCueElicit.ts';
import type { MailboxLink } from './mcpMailbox.ts';
import {
  complete,
  createTaskResult,
  discoverResult,
  ElicitResult,
  ErrorCode,
  errorResponse,
  getTaskResult,
  inputRequired,
  missingCapability,
  readEnvelope,
  response,
  RetryParams,
  StateSeal,
  supportsFormElicitation,
  supportsTasks,
  TASKS_EXTENSION,
  TaskIdParams,
  TaskUpdateParams,
  TERMINAL,
  type Envelope,
  type RequestId,
  type RpcError,
  type TaskView,
} from './mcpModern.ts';
import {
  humanRequest,
  INSTRUCTIONS,
  joinResult,
  recallResult,
  responseResult,
  SERVER_NAME,
  SERVER_TITLE,
  serverVersion,
  textResult,
  toolList,
  waitForHuman,
  type HumanRequest,
} from './mcpTools.ts';

/** The key of the one input request a cue makes. */
export const CUE_INPUT_KEY = 'human';
/** How often a client polling a task is asked to come back. */
export const TASK_POLL_MS = 1000;
/** How long a finished task stays readable. */
export const TASK_KEEP_MS = 10 * 60 * 1000;

const CallParams = z.looseObject({ name: z.string(), arguments: z.record(z.string(), z.unknown()).optional() });
/** What a sealed `requestState` holds: the mailbox request, and which call it belongs to. */
const SealedCue = z.object({ rid: z.string(), mode: z.enum(['cue', 'pause']), call: z.string(), payload: z.string().nullable(), prompt: z.string() });

interface Task {
  view: TaskView;
  requestId?: string;
  payloadJson: string | null;
  prompt: string;
  stop: AbortController;
}

export interface ModernServerOptions {
  link: MailboxLink;
  env: NodeJS.ProcessEnv;
  cwd: string;
  timeoutMs: number;
  write: (line: string) => void;
  seal?: StateSeal;
}

/** A digest of the call (tool and arguments) a requestState may be echoed on. */
function callDigest(name: string, args: unknown): string {
  return createHash('sha256').update(JSON.stringify([name, args ?? {}])).digest('base64url');
}

export class ModernServer {
  readonly #options: ModernServerOptions;
  readonly #seal: StateSeal;
  /** Calls under way, by JSON of their id: aborted by `notifications/cancelled`. */
  readonly #calls = new Map<string, AbortController>();
  readonly #tasks = new Map<string, Task>();
  /** Cues asked through InputRequiredResults and not settled yet: closed when they expire or Belay stops. */
  readonly #asked = new Map<string, NodeJS.Timeout | undefined>();
  readonly #running = new Set<Promise<void>>();

  constructor(options: ModernServerOptions) {
    this.#options = options;
    this.#seal = options.seal ?? new StateSeal();
  }

  /** Handles one request that carries the 2026-07-28 envelope; its answer is written when ready. */
  handle(message: { id: RequestId; method: string; params?: unknown }): void {
    const key = JSON.stringify(message.id);
    const controller = new AbortController();
    this.#calls.set(key, controller);
    const work = this.#dispatch(message, controller.signal)
      .then(
        (result) => ('code' in result ? errorResponse(message.id, result) : response(message.id, result)),
        (error: unknown) => errorResponse(message.id, { code: ErrorCode.internal, message: errorMessage(error) }),
      )
      // A cancelled request gets no answer (the client has stopped waiting for it).
      .then((line) => (controller.signal.aborted ? undefined : this.#options.write(line)))
      .finally(() => {
        this.#calls.delete(key);
        this.#running.delete(work);
      });
    this.#running.add(work);
  }

  /** `notifications/cancelled` for `requestId`: true when it was one of this server's calls. */
  cancel(requestId: unknown): boolean {
    const controller = this.#calls.get(JSON.stringify(requestId));
    controller?.abort();
    return controller !== undefined;
  }

  /** Resolves once every call under way has written its answer. */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }

  /** Ends the tasks still waiting (their client closed its input: nobody polls them any more). */
  endTasks(): void {
    for (const task of this.#tasks.values()) task.stop.abort();
  }

  /** Ends every task and closes every cue still waiting for an answer nobody will collect. */
  async close(): Promise<void> {
    for (const controller of this.#calls.values()) controller.abort();
    for (const task of this.#tasks.values()) task.stop.abort();
    await Promise.allSettled([...this.#running]);
    for (const [requestId, timer] of this.#asked) {
      clearTimeout(timer);
      this.#closeCue(requestId);
    }
    this.#asked.clear();
  }

  async #dispatch(message: { method: string; params?: unknown }, signal: AbortSignal): Promise<object | RpcError> {
    const read = readEnvelope(message.params);
    if ('error' in read) return read.error;
    const { envelope } = read;
    switch (message.method) {
      case 'server/discover':
        return discoverResult({ name: SERVER_NAME, title: SERVER_TITLE, version: serverVersion(), instructions: INSTRUCTIONS, tasks: true });
      case 'ping':
        return complete({});
      case 'tools/list':
        return complete({ tools: toolList(), ttlMs: 0, cacheScope: 'public' });
      case 'tools/call':
        return this.#call(message.params, envelope, signal);
      case 'tasks/get':
      case 'tasks/update':
      case 'tasks/cancel':
        if (!supportsTasks(envelope.capabilities)) return missingCapability({ extensions: { [TASKS_EXTENSION]: {} } }, `${message.method} needs the ${TASKS_EXTENSION} extension declared in the request's client capabilities`);
        return this.#taskMethod(message.method, message.params);
      default:
        return { code: ErrorCode.methodNotFound, message: `Method not found: ${message.method.slice(0, 80)}` };
    }
  }

  async #call(rawParams: unknown, envelope: Envelope, signal: AbortSignal): Promise<object | RpcError> {
    const params = CallParams.safeParse(rawParams);
    if (!params.success) return { code: ErrorCode.invalidParams, message: 'tools/call needs params.name (a string) and params.arguments (an object)' };
    const { name, arguments: args } = params.data;
    const retry = RetryParams.safeParse(rawParams);
    if (!retry.success) return { code: ErrorCode.invalidParams, message: 'params.inputResponses must be an object and params.requestState a string' };
    const { inputResponses, requestState } = retry.data;
    if (name !== 'cue' && name !== 'pause' && (inputResponses !== undefined || requestState !== undefined)) {
      return { code: ErrorCode.invalidParams, message: `${name.slice(0, 40)} never asks for input: inputResponses and requestState do not apply` };
    }
    switch (name) {
      case 'join':
        return complete(await joinResult(this.#options.link, envelope.clientInfo?.name, { env: this.#options.env, cwd: this.#options.cwd }));
      case 'recall': {
        const hints = z.object({ hints: z.string() }).safeParse(args ?? {});
        if (!hints.success) return complete(textResult('recall takes hints (text). Nothing was looked up.', true));
        return complete(await recallResult(this.#options.link, hints.data.hints));
      }
      case 'cue':
      case 'pause':
        break;
      default:
        return { code: ErrorCode.invalidParams, message: `Unknown tool: ${name.slice(0, 80)}; the tools are join, recall, cue and pause` };
    }
    if (requestState !== undefined) return this.#retry(name, args, requestState, inputResponses ?? {});
    if (inputResponses !== undefined) {
      return { code: ErrorCode.invalidParams, message: 'inputResponses without requestState answer no request of this server: call the tool without them, then retry with the requestState it returns' };
    }
    const made = humanRequest(name, args, this.#options.timeoutMs);
    if ('error' in made) return complete(made.error);
    const { request } = made;
    const capabilities = envelope.capabilities;
    if (supportsTasks(capabilities)) return this.#startTask(request, supportsFormElicitation(capabilities));
    if (supportsFormElicitation(capabilities)) return this.#ask(name, args, request);
    return complete(await waitForHuman(this.#options.link, request, signal));
  }

  /** The cue goes into the mailbox and, as an elicitation, to the client; its answer comes on the retry. */
  async #ask(name: string, args: unknown, request: HumanRequest): Promise<object | RpcError> {
    const created = await this.#options.link.use((mailbox) => mailbox.createRequest({ agentId: request.agentId, prompt: request.prompt, payloadJson: request.payloadJson, timeoutMs: request.timeoutMs }));
    const rid = created.requestId;
    // Nobody may come back: the cue closes when the timeout would have ended a waiting one.
    this.#asked.set(rid, request.timeoutMs === undefined ? undefined : setTimeout(() => this.#expire(rid), request.timeoutMs).unref());
    return this.#inputRequired({ rid, mode: request.mode, call: callDigest(name, args), payload: request.payloadJson, prompt: request.prompt }, '');
  }

  #inputRequired(sealed: z.infer<typeof SealedCue>, problem: string): object {
    const elicitation = cueElicitation(problem ? `${problem}\n\n${sealed.prompt}` : sealed.prompt, sealed.payload);
    // A pause waits without limit: its state lasts a day; a cue's as long as the cue can be answered.
    const ttl = sealed.mode === 'pause' ? 24 * 60 * 60 * 1000 : this.#options.timeoutMs + 60_000;
    return inputRequired({ [CUE_INPUT_KEY]: { method: 'elicitation/create', params: elicitation.params } }, this.#seal.seal(sealed, ttl));
  }

  async #retry(name: string, args: unknown, requestState: string, inputResponses: Record<string, unknown>): Promise<object | RpcError> {
    const opened = this.#seal.open(requestState);
    if ('problem' in opened) return { code: ErrorCode.invalidParams, message: `${opened.problem}: call ${name} again without requestState` };
    const sealed = SealedCue.safeParse(opened.value);
    if (!sealed.success || sealed.data.call !== callDigest(name, args) || sealed.data.mode !== name) {
      return { code: ErrorCode.invalidParams, message: `requestState belongs to another call: retry with the same tool and arguments, or call ${name} again without it` };
    }
    const state = sealed.data;
    const settled = (response: CueResponse) => {
      this.#forget(state.rid);
      return responseResult(state.mode, response).then(complete);
    };
    const existing = await this.#options.link.use((mailbox) => mailbox.getRequest(state.rid));
    if (!existing) return { code: ErrorCode.invalidParams, message: 'the cue of this requestState is no longer in the mailbox: call the tool again' };
    if (existing.response) return settled(existing.response);
    // Keys this server never asked for are ignored, as the spec says; the one it asked is read.
    const given = inputResponses[CUE_INPUT_KEY];
    if (given === undefined) return this.#inputRequired(state, '');
    const result = ElicitResult.safeParse(given);
    if (!result.success) return this.#inputRequired(state, 'The answer could not be read as an elicitation result; please answer again.');
    const answer = answerFromElicitation(state.payload, result.data);
    if ('problem' in answer) return this.#inputRequired(state, `Your answer did not fit: ${answer.problem}. Please answer again.`);
    try {
      await this.#options.link.use(async (mailbox) => ('cancelled' in answer ? mailbox.cancel(state.rid) : mailbox.answer(state.rid, { text: answer.text })));
    } catch (error) {
      // Answered in the panel meanwhile: that answer stands.
      if (!(error instanceof MailboxError)) throw error;
    }
    const stored = await this.#options.link.use((mailbox) => mailbox.getResponse(state.rid));
    if (!stored) return { code: ErrorCode.internal, message: 'the answer could not be stored in the mailbox' };
    return settled(stored);
  }

  #forget(requestId: string): void {
    const timer = this.#asked.get(requestId);
    if (timer) clearTimeout(timer);
    this.#asked.delete(requestId);
  }

  #expire(requestId: string): void {
    this.#asked.delete(requestId);
    this.#closeCue(requestId);
  }

  #closeCue(requestId: string): void {
    try {
      this.#options.link.mailbox().closeUnanswered(requestId);
    } catch {
      // The mailbox is gone or busy: a console's own expiry ends the cue.
    }
  }

  #startTask(request: HumanRequest, elicit: boolean): object {
    const now = new Date().toISOString();
    const taskId = randomUUID();
    const task: Task = {
      view: { taskId, status: 'working', statusMessage: 'Asking the human', createdAt: now, lastUpdatedAt: now, ttlMs: (request.timeoutMs ?? 0) + TASK_KEEP_MS, pollIntervalMs: TASK_POLL_MS },
      payloadJson: request.payloadJson,
      prompt: request.prompt,
      stop: new AbortController(),
    };
    if (request.timeoutMs === undefined) task.view.ttlMs = null;
    this.#tasks.set(taskId, task);
    const update = (change: Partial<TaskView>) => {
      task.view = { ...task.view, ...change, lastUpdatedAt: new Date().toISOString() };
      if (change.status !== 'input_required') delete task.view.inputRequests;
    };
    const onRequest = (requestId: string) => {
      task.requestId = requestId;
      update(
        elicit
          ? { status: 'input_required', statusMessage: 'Waiting for the human', inputRequests: { [`${CUE_INPUT_KEY}-1`]: { method: 'elicitation/create', params: cueElicitation(request.prompt, request.payloadJson).params } } }
          : { status: 'working', statusMessage: 'Waiting for the human to answer in Belay or a HAP console' },
      );
    };
    const work = waitForHuman(this.#options.link, request, task.stop.signal, onRequest).then(
      (result) => update(task.stop.signal.aborted ? { status: 'cancelled', statusMessage: 'Cancelled before the human answered' } : { status: 'completed', statusMessage: 'Answered', result: complete(result) }),
      (error: unknown) => update({ status: 'failed', statusMessage: errorMessage(error), error: { code: ErrorCode.internal, message: errorMessage(error) } }),
    );
    const running = work.finally(() => {
      this.#running.delete(running);
      setTimeout(() => this.#tasks.delete(taskId), TASK_KEEP_MS).unref();
    });
    this.#running.add(running);
    return createTaskResult(task.view);
  }

  async #taskMethod(method: string, rawParams: unknown): Promise<object | RpcError> {
    const ids = TaskIdParams.safeParse(rawParams);
    const task = ids.success ? this.#tasks.get(ids.data.taskId) : undefined;
    if (!task) return { code: ErrorCode.invalidParams, message: `Failed to retrieve task: ${ids.success ? 'no task with this taskId' : 'params.taskId (a string) is required'}` };
    if (method === 'tasks/get') return getTaskResult(task.view);
    if (method === 'tasks/cancel') {
      if (!TERMINAL.has(task.view.status)) task.stop.abort();
      return complete({});
    }
    const update = TaskUpdateParams.safeParse(rawParams);
    if (!update.success) return { code: ErrorCode.invalidParams, message: 'tasks/update needs params.inputResponses (an object)' };
    const keys = Object.keys(task.view.inputRequests ?? {});
    // Responses to keys not outstanding are ignored (never asked, or answered already).
    const given = keys.map((key) => update.data.inputResponses[key]).find((value) => value !== undefined);
    if (given === undefined || task.requestId === undefined) return complete({});
    const result = ElicitResult.safeParse(given);
    const answer = result.success ? answerFromElicitation(task.payloadJson, result.data) : { problem: 'not an elicitation result' };
    if ('problem' in answer) {
      // Asked again under a new key: a key is never reused within a task.
      const next = `${CUE_INPUT_KEY}-${keys.length > 0 ? Number(keys[0]!.split('-')[1]) + 1 : 1}`;
      const params = cueElicitation(`Your answer did not fit: ${answer.problem}. Please answer again.\n\n${task.prompt}`, task.payloadJson).params;
      task.view = { ...task.view, inputRequests: { [next]: { method: 'elicitation/create', params } }, lastUpdatedAt: new Date().toISOString() };
      return complete({});
    }
    const requestId = task.requestId;
    task.view = { ...task.view, status: 'working', statusMessage: 'Answered; finishing', lastUpdatedAt: new Date().toISOString() };
    delete task.view.inputRequests;
    try {
      await this.#options.link.use(async (mailbox) => ('cancelled' in answer ? mailbox.cancel(requestId) : mailbox.answer(requestId, { text: answer.text })));
    } catch (error) {
      if (!(error instanceof MailboxError)) throw error;
    }
    return complete({});
  }
}
