// nanobot terminal protocol v1: one JSON envelope on stdin, then either JSONL frames on
// stdout (rich) or plain output scanned for media paths (plain). With `allowInjection` (rich
// only, the later revision of the fork that carries the protocol), stdin stays open for
// `inject` frames, each restarting the timeout. Log frames never reach the user, whatever
// their level; plain lines in rich mode become one message with the media they name.
import { existsSync, statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import * as path from 'node:path';
import * as z from 'zod';
import { BoundedText, startChild, type ChildOutput, type RunningChild } from '../../../shared/process.ts';
import { shellQuote } from '../../../shared/shell.ts';
import { programEnvironment, shellPath } from '../backends/backend.ts';
import { localBaseEnvironment } from '../backends/local.ts';
import type { TerminalConfig } from '../agents/nanobotConfig.ts';

// The configuration lives apart (the editor reads it without loading the process layer).
export { ProviderConfigSchema, TerminalConfigSchema, type TerminalConfig } from '../agents/nanobotConfig.ts';

/** The envelope on stdin (snake_case). */
export const EnvelopeSchema = z.object({
  version: z.literal(1),
  text: z.string(),
  media: z.array(z.string()).optional(),
  channel: z.string(),
  chat_id: z.string(),
  session_key: z.string(),
  workspace: z.string(),
  user_data_dir: z.string(),
  providers: z
    .record(z.string(), z.object({ api_keys: z.array(z.string()), models: z.array(z.string()).optional(), base_url: z.string().optional() }))
    .optional(),
});
export type Envelope = z.infer<typeof EnvelopeSchema>;

/** The levels a log frame lands at in Belay's log (the spec's four, and trace). */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warning', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const LEVEL_ALIASES: Record<string, LogLevel> = { warn: 'warning', fatal: 'error', critical: 'error', err: 'error', verbose: 'trace', notice: 'info' };

/**
 * A log frame's level as Belay logs it: any case, the usual aliases, Python's numbers (10 debug,
 * 20 info, ...); `undefined` for a level no one knows (the frame is still a log frame).
 */
export function logLevel(raw: unknown): LogLevel | undefined {
  if (raw === undefined || raw === null) return 'debug';
  if (typeof raw === 'number' && Number.isFinite(raw)) return raw <= 5 ? 'trace' : raw <= 10 ? 'debug' : raw <= 20 ? 'info' : raw <= 30 ? 'warning' : 'error';
  if (typeof raw !== 'string') return undefined;
  const name = raw.trim().toLowerCase();
  if ((LOG_LEVELS as readonly string[]).includes(name)) return name as LogLevel;
  return LEVEL_ALIASES[name];
}

export const FrameSchema = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('message'), text: z.string(), media: z.array(z.string()).optional() }),
  z.looseObject({ type: z.literal('progress'), text: z.string() }),
  z.looseObject({ type: z.literal('error'), text: z.string(), code: z.string().optional() }),
  z.looseObject({ type: z.literal('log'), text: z.string(), level: z.enum(LOG_LEVELS).default('debug') }),
]);
export type Frame = z.infer<typeof FrameSchema>;

/** A follow-up line for a running bot (rich mode with `allowInjection`), written to its stdin. */
export const InjectFrameSchema = z.object({ type: z.literal('inject'), version: z.literal(1), text: z.string(), media: z.array(z.string()).optional() });
export type InjectFrame = z.infer<typeof InjectFrameSchema>;

export const MEDIA_EXTENSIONS = ['jpg', 'jpeg', 'png', 'gif', 'webp', 'mp4', 'mov', 'avi', 'mkv', 'webm', 'mp3', 'ogg', 'm4a', 'wav', 'flac', 'pdf'];

export function buildCommand(template: string, text: string): string {
  return template.split('{message}').join(shellQuote(text.trim()));
}

export interface NanobotInput {
  text: string;
  media?: string[];
  channel?: string;
  chatId?: string;
  workspace: string;
}

export async function buildEnvelope(config: TerminalConfig, input: NanobotInput): Promise<Envelope> {
  const channel = input.channel ?? 'cli';
  const chatId = input.chatId ?? 'local';
  const workspace = path.resolve(input.workspace);
  const userDataDir = path.join(workspace, 'users', chatId);
  await mkdir(userDataDir, { recursive: true });
  const envelope: Envelope = {
    version: 1,
    text: input.text,
    channel,
    chat_id: chatId,
    session_key: `${channel}:${chatId}`,
    workspace,
    user_data_dir: userDataDir,
  };
  if (config.passMedia && input.media && input.media.length > 0) envelope.media = input.media.map((m) => path.resolve(m));
  const providers = Object.entries(config.providers).filter(([, p]) => p.apiKeys.length > 0);
  if (providers.length > 0) {
    envelope.providers = Object.fromEntries(
      providers.map(([name, p]) => [
        name,
        { api_keys: p.apiKeys, ...(p.models ? { models: p.models } : {}), ...(p.baseUrl ? { base_url: p.baseUrl } : {}) },
      ]),
    );
  }
  return envelope;
}

/** Absolute paths on stdout that exist and have a media extension (plain mode). */
export function detectMedia(text: string): string[] {
  const pattern = new RegExp(`(/[^\\s'"<>|]+\\.(?:${MEDIA_EXTENSIONS.join('|')}))(?![A-Za-z0-9])`, 'gi');
  const found: string[] = [];
  for (const match of text.matchAll(pattern)) {
    const file = match[1]!;
    if (found.includes(file)) continue;
    try {
      if (existsSync(file) && statSync(file).isFile()) found.push(file);
    } catch {
      // unreadable: not media
    }
  }
  return found;
}

export type NanobotEvent =
  | { type: 'progress'; text: string }
  | { type: 'message'; text: string; media: string[] }
  | { type: 'error'; text: string; code?: string }
  | { type: 'log'; text: string; level: LogLevel };

export interface NanobotResult {
  messages: { text: string; media: string[] }[];
  progress: string[];
  logs: { text: string; level: LogLevel }[];
  error: { text: string; code?: string } | undefined;
  exitCode: number | null;
  timedOut: boolean;
  stderr: string;
  /** False when the agent reported an error, exited non-zero, timed out or could not start. */
  ok: boolean;
}

export interface RunNanobotOptions {
  config: TerminalConfig;
  input: NanobotInput;
  /** Bounds each of stdout and stderr in memory. */
  maxOutputChars?: number;
  onEvent?: (event: NanobotEvent) => void;
  signal?: AbortSignal;
  /**
   * Where the micro-agent runs: a launcher (a container, the sandbox; see
   * backends/nanobot-launch.ts), or 'local', a plain child process of Belay, only when the person
   * chose it. Never a default.
   */
  launcher: NanobotLauncher | 'local';
}

/**
 * Runs the micro-agent's program in its environment (one per bot, kept between messages):
 * `start` gives the message's start function (the program's whole tree is killed with it) and
 * `end`, which gives the environment back once the program has ended.
 */
export interface NanobotLauncher {
  /** Where it runs, in words (shown beside the chat). */
  readonly label?: string;
  start(program: { argv: [string, ...string[]]; cwd: string; env: Record<string, string> }): Promise<{
    start(output: ChildOutput): RunningChild;
    end(): Promise<void>;
  }>;
  /** Ends the environments it keeps. */
  dispose?(): Promise<void>;
}

/** Why a follow-up line did not reach the bot; `message` says it in words a chat can show. */
export type InjectRefusal = { reason: 'plain' | 'disabled' | 'ended'; message: string };

/** A bot that is running: follow-up lines, the end of its input, and its result. */
export interface NanobotSession {
  /**
   * Writes `{"type":"inject","version":1,"text":…}` to the bot's stdin and restarts its timeout;
   * returns why not (plain mode, injection off, the bot has ended or its input was closed).
   */
  inject(text: string, media?: readonly string[]): InjectRefusal | undefined;
  /** Closes the bot's stdin (with injection on it stays open until this or the bot's exit). */
  endInput(): void;
  /** Whether `inject` can reach the bot now. */
  readonly accepting: boolean;
  readonly result: Promise<NanobotResult>;
}

export async function runNanobot(options: RunNanobotOptions): Promise<NanobotResult> {
  return (await startNanobot(options)).result;
}

/** Starts the bot once with a fresh envelope; resolves once it runs (its answer: `result`). */
export async function startNanobot(options: RunNanobotOptions): Promise<NanobotSession> {
  const { config } = options;
  const envelope = await buildEnvelope(config, options.input);
  const emit = (event: NanobotEvent) => options.onEvent?.(event);
  const messages: NanobotResult['messages'] = [];
  const progress: string[] = [];
  const logs: NanobotResult['logs'] = [];
  let error: NanobotResult['error'];
  const plainLines: string[] = [];
  let plainChars = 0;
  const maxChars = options.maxOutputChars ?? 1_000_000;
  let partial = '';

  const takeLine = (line: string) => {
    const frame = parseFrame(line);
    if (frame === undefined) {
      if (plainChars < maxChars) {
        plainLines.push(line);
        plainChars += line.length + 1;
      }
      return;
    }
    if (frame === null) return; // a valid frame of a type this version does not know: skipped
    if (frame.type === 'progress') {
      progress.push(frame.text);
      emit({ type: 'progress', text: frame.text });
    } else if (frame.type === 'message') {
      const message = { text: frame.text, media: frame.media ?? [] };
      messages.push(message);
      emit({ type: 'message', ...message });
    } else if (frame.type === 'error') {
      error = { text: frame.text, ...(frame.code ? { code: frame.code } : {}) };
    } else {
      logs.push({ text: frame.text, level: frame.level });
      emit({ type: 'log', text: frame.text, level: frame.level });
    }
  };

  const rich = config.protocol === 'rich';
  const injecting = rich && config.allowInjection;
  const program = { argv: [shellPath(), '-c', buildCommand(config.command, options.input.text)] as [string, ...string[]], cwd: envelope.workspace, env: config.env };
  const launched = options.launcher === 'local' ? undefined : await options.launcher.start(program);
  const stdout = new BoundedText(maxChars);
  const stderrText = new BoundedText(maxChars);
  const output: ChildOutput = {
    onStdout: (chunk) => {
      stdout.append(chunk);
      if (!rich) return;
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      if (partial.length > maxChars) partial = partial.slice(0, maxChars);
      for (const line of lines) takeLine(line);
    },
    onStderr: (chunk) => stderrText.append(chunk),
  };
  // Local: the micro-agent's own variables and the base ones, never the editor's environment.
  const child = launched ? launched.start(output) : startChild({ ...program, env: programEnvironment(localBaseEnvironment(), config.env), ...output });
  let timedOut = false;
  let aborted = false;
  let inputOpen = injecting;
  let ended = false;
  let timer: NodeJS.Timeout | undefined;
  // Each follow-up line gives the bot its whole time again (as the fork that introduced them does).
  const armTimeout = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timedOut = true;
      child.kill();
    }, config.timeout * 1000);
  };
  const onAbort = () => {
    aborted = true;
    child.kill();
  };
  armTimeout();
  if (options.signal?.aborted) onAbort();
  options.signal?.addEventListener('abort', onAbort);
  child.write(`${JSON.stringify(envelope)}\n`);
  if (!injecting) child.endInput();

  const result = (async (): Promise<NanobotResult> => {
    let end;
    try {
      end = await child.ended;
    } finally {
      ended = true;
      inputOpen = false;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      await launched?.end();
    }
    if (rich && partial !== '') takeLine(partial);
    const stderr = stderrText.text('[… stderr cut …]');
    const exitCode = end.exitCode;

    if (end.spawnError) error ??= { text: `could not start: ${end.spawnError.message}` };
    if (timedOut) error = { text: `Timed out after ${config.timeout} s`, code: 'TIMEOUT' };
    if (rich) {
      const plain = plainLines.join('\n').trim();
      if (messages.length === 0 && plain !== '' && !timedOut) {
        // Plain lines become one message, with media found in them as plain mode finds them.
        const message = { text: plain, media: detectMedia(plain) };
        messages.push(message);
        emit({ type: 'message', ...message });
      }
      if (error && exitCode !== 0 && exitCode !== null && !timedOut) error.text += ` (exit code ${exitCode})`;
      if (!error && exitCode !== 0 && exitCode !== null) error = { text: `Exit code: ${exitCode}${stderr.trim() ? `\nSTDERR:\n${stderr.trim()}` : ''}` };
    } else if (!timedOut) {
      const out = stdout.text('[… output cut …]').trim();
      const parts: string[] = [];
      if (out) parts.push(out);
      if (stderr.trim()) parts.push(`STDERR:\n${stderr.trim()}`);
      if (exitCode !== 0 && exitCode !== null) parts.push(`Exit code: ${exitCode}`);
      const message = { text: parts.length > 0 ? parts.join('\n') : '(no output)', media: detectMedia(out) };
      messages.push(message);
      emit({ type: 'message', ...message });
    }
    if (error) emit({ type: 'error', ...error });
    return {
      messages,
      progress,
      logs,
      error,
      exitCode,
      timedOut,
      stderr,
      ok: error === undefined && exitCode === 0 && !aborted,
    };
  })();

  return {
    get accepting() {
      return inputOpen && !ended;
    },
    inject(text, media) {
      if (!rich) return { reason: 'plain', message: 'this micro-agent speaks the plain protocol, which takes no follow-up lines while it runs' };
      if (!config.allowInjection) return { reason: 'disabled', message: 'this micro-agent does not take follow-up lines while it runs (allowInjection is off)' };
      if (ended || !inputOpen) return { reason: 'ended', message: ended ? 'the micro-agent has already ended' : 'the micro-agent’s input is closed' };
      const frame: InjectFrame = { type: 'inject', version: 1, text, ...(media && media.length > 0 ? { media: media.map((m) => path.resolve(m)) } : {}) };
      child.write(`${JSON.stringify(frame)}\n`);
      armTimeout();
      return undefined;
    },
    endInput() {
      if (!inputOpen) return;
      inputOpen = false;
      child.endInput();
    },
    result,
  };
}

/** A frame, null for a frame type this version does not know, undefined for plain text. */
export function parseFrame(line: string): Frame | null | undefined {
  const trimmed = line.trim();
  if (!trimmed.startsWith('{')) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(trimmed);
  } catch {
    return undefined;
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || typeof (raw as { type?: unknown }).type !== 'string') return undefined;
  if ((raw as { type: string }).type === 'log') return logFrame(raw as Record<string, unknown>);
  const parsed = FrameSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const known = ['message', 'progress', 'error', 'log'].includes((raw as { type: string }).type);
  return known ? undefined : null;
}

/**
 * A log frame goes to the log whatever its level or shape (it is never shown as text): an
 * unknown level is logged at debug with its name kept, a frame without text logs its fields.
 */
function logFrame(raw: Record<string, unknown>): Frame {
  const { type: _type, level: rawLevel, text: rawText, ...rest } = raw;
  let text = typeof rawText === 'string' ? rawText : JSON.stringify(rawText === undefined ? rest : { text: rawText, ...rest });
  const level = logLevel(rawLevel);
  if (level === undefined) text = `(level ${typeof rawLevel === 'string' ? rawLevel : JSON.stringify(rawLevel)}) ${text}`;
  return { type: 'log', text, level: level ?? 'debug' };
}
