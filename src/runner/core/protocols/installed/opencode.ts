// OpenCode (`opencode-ai`, a native binary): headless with `opencode run`, its events as JSON lines
// (`--format json`), every permission allowed (its config's `permission`, and `--auto` for what
// the config leaves to asking). It speaks OpenAI-compatible chat completions (streamed, with
// `stream_options.include_usage`) to a provider its config file names: `belay`, whose base URL is
// the gateway's `/v1` and whose key is the run's token (read from the environment by the config's
// `{env:…}` substitution, so the file holds no secret). Its config, sessions (a SQLite file), logs
// and caches live under the state folder through OPENCODE_CONFIG and the XDG variables.
//
// Kept off the network: update checks (OPENCODE_DISABLE_AUTOUPDATE, `autoupdate: false`), the
// model list it fetches from models.opencode.ai every hour (OPENCODE_DISABLE_MODELS_FETCH), share
// links (`share: "disabled"`), LSP server downloads, default and external plugins, the session
// title (a second model call, skipped when `--title` names one). At every start OpenCode also
// installs `@opencode-ai/plugin` from the npm registry into each config folder that has no
// `node_modules` (in the background, through its bundled npm); the state files give its config
// folder an empty `node_modules` and a lock that lists that package, which is what it checks
// before installing, so it never reaches for npm. The OpenAI-compatible provider
// (`@ai-sdk/openai-compatible`) is bundled in the binary: nothing else has to be installed.
//
// Its home is empty, so what it reads besides is the task's own folder, as wherever it runs:
// AGENTS.md (or CLAUDE.md), skills and an `opencode.json` of the project. It asks for
// `max_tokens: 32000` whatever the model (OPENCODE_EXPERIMENTAL_OUTPUT_TOKEN_MAX lowers it), which
// a model with a smaller output limit refuses. What it needs where it runs: glibc (the binary npm
// installs for Linux is linked against it) and `bash` for its shell tool; its `grep` and `glob`
// tools run `rg` from PATH (else from its cache, else it downloads ripgrep from GitHub, which a run
// cannot: without `rg` those two tools fail, the shell tool still works).
//
// Its events, one JSON object a line: `step_start`, `text` (a finished text part), `reasoning`
// (with `--thinking`), `tool_use` (a tool part once it has completed or failed: its input, output,
// and for `bash` the exit code), `step_finish` (`reason`: `tool-calls` when the loop goes on, else
// the end of the run; the step's tokens), `error` (the session failed: `error.name`,
// `error.data.message`; a context overflow is followed by a compaction and the run goes on, any
// other error ends it, with exit code 1). Each line carries `type`, `timestamp`, `sessionID`, and
// `part` or `error`.
import * as z from 'zod';
import type { EventReader, HeadlessInput, InstalledAgent, InstalledEvent } from './installedAgent.ts';

/** The most characters of one text, command or output kept from one event. */
const MAX_FIELD_CHARS = 64_000;

/** The provider the config file declares: the gateway. */
const PROVIDER = 'belay';
/** The variable the config reads the run's token from. */
const TOKEN_VARIABLE = 'BELAY_GATEWAY_TOKEN';

/** Where, under the state folder, OpenCode keeps each kind of thing (its XDG folders). */
const XDG = { XDG_CONFIG_HOME: 'config', XDG_DATA_HOME: 'data', XDG_CACHE_HOME: 'cache', XDG_STATE_HOME: 'state' } as const;

export const opencode: InstalledAgent = {
  name: 'opencode',
  title: 'OpenCode',
  package: 'opencode-ai',
  version: '1.18.33',
  bin: 'opencode',
  needsNode: false,
  api: 'chat',
  defaultModel: 'gpt-4.1',
  argv: (input) => [
    'run',
    '--format',
    'json',
    '--model',
    `${PROVIDER}/${input.model}`,
    '--auto',
    '--thinking',
    '--title',
    'Belay run',
    '--',
    instructionArgument(input.instruction),
  ],
  environment: (input) => ({
    [TOKEN_VARIABLE]: input.token,
    OPENCODE_CONFIG: `${input.stateDir}/opencode.json`,
    ...Object.fromEntries(Object.entries(XDG).map(([name, folder]) => [name, `${input.stateDir}/${folder}`])),
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    OPENCODE_DISABLE_SHARE: '1',
    OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
    OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
    OPENCODE_DISABLE_TERMINAL_TITLE: '1',
    OPENCODE_PURE: '1',
    // Its start makes $TMPDIR/opencode: in the run's state, not a /tmp shared with other runs (local backend).
    TMPDIR: `${input.stateDir}/tmp`,
  }),
  stateFiles: (input) => ({
    'tmp/.belay-keep': '',
    'opencode.json': JSON.stringify(openCodeConfig(input), null, 2) + '\n',
    // OpenCode installs `@opencode-ai/plugin` from the npm registry into its config folder at
    // every start unless `node_modules` is there and the lock lists each package it would add.
    [`${XDG.XDG_CONFIG_HOME}/opencode/package.json`]: JSON.stringify({ private: true }) + '\n',
    [`${XDG.XDG_CONFIG_HOME}/opencode/package-lock.json`]: JSON.stringify({ lockfileVersion: 3, requires: true, packages: { '': { dependencies: { '@opencode-ai/plugin': '1.18.33' } } } }) + '\n',
    [`${XDG.XDG_CONFIG_HOME}/opencode/node_modules/.package-lock.json`]: JSON.stringify({ lockfileVersion: 3, requires: true, packages: {} }) + '\n',
  }),
  events: () => new OpenCodeEvents(),
};

/** OpenCode's config for one run: the gateway as its only provider, everything allowed. */
export function openCodeConfig(input: HeadlessInput): Record<string, unknown> {
  return {
    $schema: 'https://opencode.ai/config.json',
    provider: {
      [PROVIDER]: {
        npm: '@ai-sdk/openai-compatible',
        name: "Belay's gateway",
        options: { baseURL: `${input.baseUrl}/v1`, apiKey: `{env:${TOKEN_VARIABLE}}` },
        models: { [input.model]: { name: input.model, tool_call: true } },
      },
    },
    enabled_providers: [PROVIDER],
    model: `${PROVIDER}/${input.model}`,
    small_model: `${PROVIDER}/${input.model}`,
    autoupdate: false,
    share: 'disabled',
    // Nobody is there to answer: every tool is allowed, but the one that asks the person a question.
    permission: { '*': 'allow', bash: 'allow', edit: 'allow', read: 'allow', webfetch: 'allow', external_directory: 'allow', doom_loop: 'allow', question: 'deny' },
  };
}

/**
 * The instruction as `opencode run`'s message. OpenCode joins its message words with spaces and
 * wraps a word that holds a space in double quotes (as a person typing `opencode run "…"` gets);
 * its argument parser turns a word that looks like a number into one, which OpenCode then fails on,
 * so such an instruction gets a newline after it.
 */
export function instructionArgument(instruction: string): string {
  return /^\s*[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?\s*$/i.test(instruction) || /^0x[0-9a-f]+$/i.test(instruction) ? `${instruction}\n` : instruction;
}

const ToolState = z.looseObject({
  status: z.string(),
  input: z.unknown().optional(),
  output: z.unknown().optional(),
  error: z.unknown().optional(),
  title: z.unknown().optional(),
  metadata: z.unknown().optional(),
});

const Line = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('text'), part: z.looseObject({ text: z.string() }) }),
  z.looseObject({ type: z.literal('reasoning'), part: z.looseObject({ text: z.string() }) }),
  z.looseObject({ type: z.literal('tool_use'), part: z.looseObject({ tool: z.string(), callID: z.string().optional(), id: z.string().optional(), state: ToolState }) }),
  z.looseObject({ type: z.literal('step_finish'), part: z.looseObject({ reason: z.string().optional() }) }),
  z.looseObject({ type: z.literal('error'), error: z.unknown() }),
]);

class OpenCodeEvents implements EventReader {
  /** The model's last words, the run's summary when it ends (bounded by MAX_FIELD_CHARS). */
  private lastText = '';
  /** A `done` was given: a later line may still add events, but never a second `done`. */
  private finished = false;

  line(text: string): InstalledEvent[] {
    if (!text.startsWith('{')) return [];
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return [];
    }
    const parsed = Line.safeParse(json);
    if (!parsed.success) return [];
    const event = parsed.data;
    switch (event.type) {
      case 'text':
      case 'reasoning': {
        if (!event.part.text.trim()) return [];
        const words = clip(event.part.text);
        if (event.type === 'text') this.lastText = words;
        return [{ kind: 'text', text: words }];
      }
      case 'tool_use':
        return toolEvents(event.part.tool, event.part.callID ?? event.part.id ?? '', event.part.state);
      case 'step_finish': {
        const reason = event.part.reason ?? '';
        // `tool-calls`: the model called tools and the loop goes on to its next step.
        if (reason === 'tool-calls' || reason === '' || this.finished) return [];
        this.finished = true;
        const ok = reason === 'stop';
        const summary = ok ? this.lastText : `${stopReason(reason)}${this.lastText ? `: ${this.lastText}` : ''}`;
        return [{ kind: 'done', ok, summary: clip(summary) }];
      }
      case 'error': {
        const message = clip(errorText(event.error));
        // A context overflow is not the end: OpenCode compacts the session and asks again.
        if (this.finished || (isRecord(event.error) && event.error.name === 'ContextOverflowError')) return [{ kind: 'error', message }];
        this.finished = true;
        return [
          { kind: 'error', message },
          { kind: 'done', ok: false, summary: message },
        ];
      }
    }
  }
}

function toolEvents(tool: string, id: string, state: z.infer<typeof ToolState>): InstalledEvent[] {
  const input = isRecord(state.input) ? state.input : {};
  const metadata = isRecord(state.metadata) ? state.metadata : {};
  const failed = state.status === 'error';
  const exit = typeof metadata.exit === 'number' && Number.isInteger(metadata.exit) ? metadata.exit : null;
  const output = failed ? textOf(state.error) : typeof state.output === 'string' ? state.output : textOf(state.output);
  const exitCode = tool === 'bash' ? exit : failed ? null : 0;
  return [
    { kind: 'tool-call', id: clip(id), name: clip(tool), command: clip(toolCommand(tool, input, state.title)), input: clip(JSON.stringify(input)) },
    { kind: 'tool-result', id: clip(id), output: clip(output), exitCode, isError: failed || (exitCode !== null && exitCode !== 0) },
  ];
}

/** The shell command a tool runs (OpenCode's `bash`), or a line saying what it does with what. */
export function toolCommand(tool: string, input: Record<string, unknown>, title?: unknown): string {
  const field = (key: string) => (typeof input[key] === 'string' ? (input[key] as string) : undefined);
  if (tool === 'bash') return field('command') ?? 'bash';
  // OpenCode answers a call of a tool it does not have with its `invalid` tool.
  if (tool === 'invalid' && field('tool')) return `${field('tool')} (no such tool)`;
  if (field('pattern') && field('path')) return `${tool} ${field('pattern')} in ${field('path')}`;
  const target = field('filePath') ?? field('path') ?? field('pattern') ?? field('url') ?? field('query') ?? field('description') ?? field('prompt') ?? (typeof title === 'string' && title ? title : undefined);
  return target !== undefined ? `${tool} ${target}` : tool;
}

function stopReason(reason: string): string {
  if (reason === 'length') return 'the model stopped at its output limit';
  if (reason === 'content-filter') return "the model's answer was filtered";
  return `the model stopped (${reason})`;
}

/** OpenCode's error in words: `{ name, data: { message } }`, or whatever text it holds. */
function errorText(error: unknown): string {
  if (isRecord(error)) {
    const data = isRecord(error.data) ? error.data : {};
    const message = typeof data.message === 'string' ? data.message : typeof error.message === 'string' ? error.message : '';
    const name = typeof error.name === 'string' ? error.name : '';
    if (message) return name && name !== 'UnknownError' ? `${name}: ${message}` : message;
    if (name) return name;
  }
  return textOf(error) || 'OpenCode reported an error without saying what it was';
}

function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) return '';
  try {
    return JSON.stringify(value);
  } catch {
    return '';
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function clip(text: string): string {
  return text.length > MAX_FIELD_CHARS ? `${text.slice(0, MAX_FIELD_CHARS)}…` : text;
}
