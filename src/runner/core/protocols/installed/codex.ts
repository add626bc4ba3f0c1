// Codex (OpenAI's coding CLI, `@openai/codex`) as an installed agent. It runs headless as
// `codex exec --json`, speaks the OpenAI Responses API (streamed, `POST /v1/responses`) to a model
// provider of our own that points at Belay's gateway (OPENAI_BASE_URL alone is ignored: Codex then
// tries the public service), reads the run's token from one variable, keeps its state (config,
// sessions, logs, its SQLite files) in CODEX_HOME, and prints one JSON event a line: `thread.*`,
// `turn.*` and `item.*` events whose items are agent messages, reasoning, command executions, file
// changes, tool calls and errors.
//
// Its npm package's `bin/codex.js` is a Node launcher that execs the package's native, statically
// linked binary (`nativeExecutable`): run through `.bin`, it needs Node; run directly, nothing.
import type { EventReader, HeadlessInput, InstalledAgent, InstalledEvent } from './installedAgent.ts';

/** The variable Codex reads the run's token from (kept out of the commands the model runs). */
export const CODEX_TOKEN_VARIABLE = 'BELAY_GATEWAY_TOKEN';

/** The model provider Belay defines for the gateway (a name of ours: never OpenAI's own). */
const PROVIDER = 'belay';

/** A TOML basic string (control characters and DEL escaped, which JSON leaves raw or escapes differently). */
export function tomlString(value: string): string {
  return `"${value.replace(/[\\"\u0000-\u001f\u007f]/g, (c) => (c === '\\' ? '\\\\' : c === '"' ? '\\"' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`))}"`;
}

/**
 * Codex's configuration for one run, as `key = TOML value` pairs: given on the command line with
 * `-c` (which outranks any config file; Codex leaves a task's `.codex/config.toml` unread anyway,
 * the folder being untrusted) and written to `config.toml` in its state folder (kept with the
 * run). `--strict-config` makes Codex refuse a key it does not know, so a misspelt switch fails
 * the run instead of being ignored.
 */
export function codexConfig(input: Pick<HeadlessInput, 'model' | 'baseUrl'>): [string, string][] {
  const provider = [
    `name = ${tomlString('Belay gateway')}`,
    `base_url = ${tomlString(`${input.baseUrl.replace(/\/+$/, '')}/v1`)}`,
    `env_key = ${tomlString(CODEX_TOKEN_VARIABLE)}`,
    'wire_api = "responses"',
    // Its WebSocket transport is the public service's; the gateway speaks HTTP and SSE.
    'supports_websockets = false',
    // The gateway already retries 429/503 behind the key's backoff: one more try each, not five.
    'request_max_retries = 1',
    'stream_max_retries = 1',
  ].join(', ');
  return [
    ['model', tomlString(input.model)],
    ['model_provider', tomlString(PROVIDER)],
    [`model_providers.${PROVIDER}`, `{ ${provider} }`],
    // The commands the model runs inherit Codex's environment but for the run's token (Codex's
    // own default keeps every variable) and Codex's own temp folder (see `environment`).
    ['shell_environment_policy.exclude', `[${tomlString(CODEX_TOKEN_VARIABLE)}, "TMPDIR"]`],
    // Commands run with `bash -c`, not a login shell: a login shell's /etc/profile resets PATH,
    // dropping what the task's image put on it (a toolchain's bin folder).
    ['allow_login_shell', 'false'],
    ['approval_policy', '"never"'],
    ['sandbox_mode', '"danger-full-access"'],
    // Nothing that waits on a network other than the gateway, nothing sent anywhere else.
    ['check_for_update_on_startup', 'false'],
    ['analytics.enabled', 'false'],
    ['feedback.enabled', 'false'],
    ['otel.exporter', '"none"'],
    ['web_search', '"disabled"'],
    ['features.api_key_model_discovery', 'false'],
    ['features.unbounded_connection_retries', 'false'],
    ['features.in_app_updates', 'false'],
    ['features.daemon_auto_start', 'false'],
    ['features.apps', 'false'],
    ['features.plugins', 'false'],
    ['features.remote_plugin', 'false'],
    ['features.tool_suggest', 'false'],
    ['features.skill_mcp_dependency_install', 'false'],
    ['features.workspace_dependencies', 'false'],
    ['features.browser_use', 'false'],
    ['features.computer_use', 'false'],
    ['features.image_generation', 'false'],
    // Sub-agents (`[features].multi_agent` is deprecated in favour of this switch).
    ['agents.enabled', 'false'],
    ['features.goals', 'false'],
    ['features.hooks', 'false'],
  ];
}

/** Longest text kept from one event (a command's output, a message): the rest is cut with a mark. */
const MAX_TEXT_CHARS = 64 * 1024;
/** Lines longer than this are not parsed at all (no event of Codex's is anywhere near it). */
const MAX_LINE_CHARS = 8 * 1024 * 1024;

function clip(text: string): string {
  return text.length > MAX_TEXT_CHARS ? `${text.slice(0, MAX_TEXT_CHARS)}… [${text.length - MAX_TEXT_CHARS} more characters]` : text;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const str = (value: unknown): string => (typeof value === 'string' ? value : '');

/**
 * The words of a command line as a POSIX shell splits them (quotes and backslashes; no
 * expansions), or undefined when it is not plain words (an unterminated quote).
 */
export function shellWords(line: string): string[] | undefined {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) return undefined;
      word += line.slice(i + 1, end);
      inWord = true;
      i = end;
    } else if (c === '"') {
      inWord = true;
      for (i++; ; i++) {
        if (i >= line.length) return undefined;
        const d = line[i]!;
        if (d === '"') break;
        if (d === '\\' && i + 1 < line.length && '"\\$`\n'.includes(line[i + 1]!)) {
          if (line[i + 1] !== '\n') word += line[i + 1];
          i++;
        } else word += d;
      }
    } else if (c === '\\') {
      if (i + 1 < line.length && line[i + 1] !== '\n') word += line[i + 1];
      inWord = true;
      i++;
    } else if (c === ' ' || c === '\t' || c === '\n') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/**
 * The command the model asked for: Codex reports it wrapped in the shell it ran it with
 * (`/bin/bash -lc 'printf hi > a.txt'`); the script inside is what the model wrote. Anything
 * else is shown as Codex reported it.
 */
export function modelCommand(reported: string): string {
  const words = shellWords(reported);
  if (words?.length === 3 && /^(\/usr)?(\/bin\/)?(ba|z|da|k)?sh$/.test(words[0]!) && /^-l?c$/.test(words[1]!)) return words[2]!;
  return reported;
}

/** JSON text of a value, clipped (never throws: a value that cannot be shown is ''). */
function jsonText(value: unknown): string {
  try {
    return clip(JSON.stringify(value) ?? '');
  } catch {
    return '';
  }
}

/** What a finished item said, as events; `started` is true for `item.started`. */
function itemEvents(item: Record<string, unknown>, started: boolean, state: ReaderState): InstalledEvent[] {
  const id = str(item.id);
  switch (item.type) {
    case 'agent_message':
    case 'reasoning': {
      if (started) return [];
      const text = clip(str(item.text));
      if (!text) return [];
      if (item.type === 'agent_message') state.lastMessage = text;
      return [{ kind: 'text', text }];
    }
    case 'command_execution': {
      const events: InstalledEvent[] = [];
      if (!state.called.has(id)) {
        remember(state, id);
        const reported = str(item.command).slice(0, MAX_TEXT_CHARS * 2);
        events.push({ kind: 'tool-call', id, name: 'exec_command', command: clip(modelCommand(reported)), input: jsonText({ command: reported }) });
      }
      if (!started) {
        const exitCode = typeof item.exit_code === 'number' && Number.isInteger(item.exit_code) ? item.exit_code : null;
        const status = str(item.status);
        const isError = status === 'failed' || status === 'declined' || (exitCode !== null && exitCode !== 0);
        events.push({ kind: 'tool-result', id, output: clip(str(item.aggregated_output)), exitCode, isError });
      }
      return events;
    }
    case 'file_change': {
      const changes = Array.isArray(item.changes) ? item.changes.filter(isRecord).slice(0, 1000) : [];
      const line = clip(changes.map((change) => `${str(change.kind) || 'change'} ${str(change.path)}`).join(', '));
      const events: InstalledEvent[] = [];
      if (!state.called.has(id)) {
        remember(state, id);
        events.push({ kind: 'tool-call', id, name: 'apply_patch', command: `apply_patch: ${line || 'no files'}`, input: jsonText({ changes }) });
      }
      if (!started) events.push({ kind: 'tool-result', id, output: line, exitCode: null, isError: str(item.status) === 'failed' });
      return events;
    }
    case 'mcp_tool_call': {
      const name = `${str(item.server)}.${str(item.tool)}`;
      const events: InstalledEvent[] = [];
      if (!state.called.has(id)) {
        remember(state, id);
        events.push({ kind: 'tool-call', id, name, command: clip(`MCP ${name}`), input: jsonText(item.arguments ?? {}) });
      }
      if (!started) {
        const error = isRecord(item.error) ? str(item.error.message) : str(item.error);
        const failed = str(item.status) === 'failed' || error !== '';
        events.push({ kind: 'tool-result', id, output: error ? clip(error) : jsonText(item.result ?? null), exitCode: null, isError: failed });
      }
      return events;
    }
    case 'web_search': {
      if (started) return [];
      return [{ kind: 'tool-call', id, name: 'web_search', command: clip(`web search: ${str(item.query)}`), input: jsonText({ query: item.query }) }];
    }
    case 'todo_list': {
      if (started) return [];
      const items = Array.isArray(item.items) ? item.items.filter(isRecord) : [];
      const text = items.map((todo) => `${todo.completed === true ? '[x]' : '[ ]'} ${str(todo.text)}`).join('\n');
      return text ? [{ kind: 'text', text: clip(text) }] : [];
    }
    case 'error': {
      // A warning Codex shows as an item (an unknown model's metadata, a deprecated setting).
      if (started) return [];
      const message = clip(str(item.message));
      return message ? [{ kind: 'error', message }] : [];
    }
    default:
      return [];
  }
}

interface ReaderState {
  /** Ids of the calls already reported (so `item.started` then `item.completed` give one call). */
  called: Set<string>;
  lastMessage: string;
  /** The last error reported on its own (`turn.failed` repeats it). */
  lastError: string;
}

/** Ids kept to pair a call's start with its end: a call ends soon, so the oldest are let go. */
const MAX_OPEN_CALLS = 1024;

function remember(state: ReaderState, id: string): void {
  state.called.add(id);
  if (state.called.size > MAX_OPEN_CALLS) state.called.delete(state.called.values().next().value as string);
}

/** Reads `codex exec --json` output, a line at a time. */
export function codexEvents(): EventReader {
  const state: ReaderState = { called: new Set(), lastMessage: '', lastError: '' };
  return {
    line(text) {
      if (text.length > MAX_LINE_CHARS) return [];
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        return [];
      }
      if (!isRecord(json)) return [];
      switch (json.type) {
        case 'item.started':
        case 'item.updated':
        case 'item.completed':
          return isRecord(json.item) ? itemEvents(json.item, json.type !== 'item.completed', state) : [];
        case 'error': {
          const message = clip(str(json.message));
          if (!message) return [];
          state.lastError = message;
          return [{ kind: 'error', message }];
        }
        case 'turn.failed': {
          const message = clip((isRecord(json.error) ? str(json.error.message) : '') || 'the turn failed');
          const done: InstalledEvent = { kind: 'done', ok: false, summary: message };
          return message === state.lastError ? [done] : [{ kind: 'error', message }, done];
        }
        case 'turn.completed':
          // `codex exec` runs one turn: its end is the CLI's end.
          return [{ kind: 'done', ok: true, summary: state.lastMessage }];
        default:
          return [];
      }
    },
  };
}

/** Codex's native build for each platform it ships one for (Linux builds are static, musl). */
const NATIVE_TARGETS: Record<string, string> = {
  'linux-x64': 'x86_64-unknown-linux-musl',
  'linux-arm64': 'aarch64-unknown-linux-musl',
  'darwin-x64': 'x86_64-apple-darwin',
  'darwin-arm64': 'aarch64-apple-darwin',
};

export const codex: InstalledAgent = {
  name: 'codex',
  title: 'Codex',
  package: '@openai/codex',
  version: '0.171.0',
  bin: 'codex',
  needsNode: true,
  nativeExecutable(platform, arch) {
    // The platform packages the launcher picks from (bin/codex.js): npm installs the one that fits.
    const target = NATIVE_TARGETS[`${platform}-${arch}`];
    return target && `node_modules/@openai/codex-${platform}-${arch}/vendor/${target}/bin/codex`;
  },
  api: 'responses',
  defaultModel: 'gpt-5.5',
  argv(input) {
    const overrides = codexConfig(input).flatMap(([key, value]) => ['-c', `${key}=${value}`]);
    return [
      'exec',
      '--json',
      '--color',
      'never',
      '--strict-config',
      '--skip-git-repo-check',
      '--dangerously-bypass-approvals-and-sandbox',
      '--cd',
      input.workdir,
      '--model',
      input.model,
      ...overrides,
      // `--` so an instruction starting with a dash is the prompt, not an option.
      '--',
      input.instruction,
    ];
  },
  environment(input) {
    return {
      CODEX_HOME: input.stateDir,
      [CODEX_TOKEN_VARIABLE]: input.token,
      // Codex puts its helper commands (`apply_patch`, which models also call from the shell) in
      // CODEX_HOME/tmp and puts them on the commands' PATH, but refuses to when CODEX_HOME lies in
      // the system's temp folder (a run's state folder may): its temp folder is its own instead.
      TMPDIR: `${input.stateDir.replace(/\/+$/, '')}/tmp`,
      NO_COLOR: '1',
    };
  },
  stateFiles(input) {
    const lines = codexConfig(input).map(([key, value]) => {
      // A dotted key is a table in a file: `a.b = v` is valid TOML too (dotted keys).
      return `${key} = ${value}`;
    });
    return { 'config.toml': `# Written by Belay for this run (the same settings are given with -c).\n${lines.join('\n')}\n` };
  },
  events: codexEvents,
};
