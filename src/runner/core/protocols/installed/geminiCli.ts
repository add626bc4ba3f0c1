// Gemini CLI (`@google/gemini-cli`, a Node program: its `gemini` is a `#!/usr/bin/env node` ES
// module, so it is started with Belay's own Node) as an installed agent. Headless with
// `--prompt=… --output-format stream-json --approval-mode yolo --skip-trust`; it speaks the Gemini
// API to `GOOGLE_GEMINI_BASE_URL` with `GEMINI_API_KEY` in `x-goog-api-key`. Its home for
// settings, sessions and logs is `GEMINI_CLI_HOME` (the state folder), where a settings file
// picks the API-key auth (with a base URL set and no settings, 0.61.0 picks its "gateway" auth,
// which its own headless check then refuses as "Invalid auth method selected."), and turns off
// telemetry, usage statistics, update checks, the IDE companion, folder trust and its sandbox.
//
// Its stream-json events, one JSON object a line: `init`; `message` (role user: the prompt; role
// assistant with `delta: true`: a piece of the model's text); `tool_use` {tool_name, tool_id,
// parameters}; `tool_result` {tool_id, status success|error, output, error {type, message}} (no
// exit code: a shell command's output only); `error` {severity warning|error, message}; `result`
// {status success|error, error?, stats}.
import type { EventReader, HeadlessInput, InstalledAgent, InstalledEvent } from './installedAgent.ts';

/** Text pieces held until the turn's text ends (a bounded buffer: beyond it, it is let out). */
const MAX_HELD_CHARS = 64 * 1024;
/** A tool's arguments and output kept in an event. */
const MAX_FIELD_CHARS = 256 * 1024;
const MAX_LINE_CHARS = 300;

/** The CLI's settings for a run: API-key auth, nothing that reaches a network but the model. */
export function geminiSettings(input: HeadlessInput): Record<string, unknown> {
  return {
    security: { auth: { selectedType: 'gemini-api-key' }, folderTrust: { enabled: false } },
    general: {
      enableAutoUpdate: false,
      enableAutoUpdateNotification: false,
      // Its own retries of a failed request (the gateway already retries 429 and 503 behind the key's gate).
      maxAttempts: 3,
      checkpointing: { enabled: false },
    },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false, logPrompts: false },
    ide: { enabled: false },
    tools: { sandbox: false },
    model: { name: input.model },
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function str(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function oneLine(text: string): string {
  return cut(text.replace(/\s+/g, ' ').trim(), MAX_LINE_CHARS);
}

/** A line saying what a tool call does: its shell command, or the tool's words for it. */
export function describeToolCall(name: string, parameters: Record<string, unknown>): string {
  const p = (key: string) => str(parameters[key]);
  switch (name) {
    case 'run_shell_command':
      return p('command') || name;
    case 'write_file':
      return oneLine(`Write ${p('file_path')}`);
    case 'read_file':
      return oneLine(`Read ${p('file_path')}`);
    case 'read_many_files':
      return oneLine(`Read ${Array.isArray(parameters.include) ? parameters.include.filter((x) => typeof x === 'string').join(' ') : p('paths')}`);
    case 'replace':
      return oneLine(`Edit ${p('file_path')}`);
    case 'list_directory':
      return oneLine(`List ${p('dir_path') || p('path')}`);
    case 'glob':
      return oneLine(`Find files ${p('pattern')}`);
    case 'grep_search':
    case 'search_file_content':
      return oneLine(`Search ${p('pattern')}${p('dir_path') ? ` in ${p('dir_path')}` : ''}`);
    case 'web_fetch':
      return oneLine(`Fetch ${p('prompt') || p('url')}`);
    case 'google_web_search':
      return oneLine(`Search the web for ${p('query')}`);
    case 'write_todos':
      return 'Update the to-do list';
    default: {
      const description = p('description');
      return oneLine(description ? `${name}: ${description}` : `${name} ${JSON.stringify(parameters)}`);
    }
  }
}

/**
 * An error line as the CLI words it, with an API error's JSON body ("[API Error: {"error":
 * {"code":400,"message":…}}]") said as its status and message.
 */
export function apiErrorLine(message: string): string {
  const api = /^\[API Error: ([\s\S]*)\]$/.exec(message.trim());
  if (api) {
    try {
      const body: unknown = JSON.parse(api[1]!);
      const error = isRecord(body) && isRecord(body.error) ? body.error : undefined;
      if (error && typeof error.message === 'string') return oneLine(`API error${typeof error.code === 'number' ? ` ${error.code}` : ''}: ${error.message}`);
    } catch {
      // not JSON: the CLI's own words
    }
    return oneLine(`API error: ${api[1]}`);
  }
  return oneLine(message);
}

export function geminiEvents(): EventReader {
  let held = '';
  /** The text since the last tool call: the final words when the run ends. */
  let lastWords = '';
  const flush = (): InstalledEvent[] => {
    if (!held) return [];
    const text = held;
    held = '';
    return [{ kind: 'text', text }];
  };
  const read = (json: Record<string, unknown>): InstalledEvent[] => {
    switch (json.type) {
      case 'message': {
        if (json.role !== 'assistant' || typeof json.content !== 'string') return [];
        if (json.delta !== true) {
          lastWords = cut(json.content, MAX_HELD_CHARS);
          return [...flush(), { kind: 'text', text: cut(json.content, MAX_FIELD_CHARS) }];
        }
        held += json.content;
        lastWords = (lastWords + json.content).slice(-MAX_HELD_CHARS);
        return held.length >= MAX_HELD_CHARS ? flush() : [];
      }
      case 'tool_use': {
        const name = str(json.tool_name) || 'tool';
        const parameters = isRecord(json.parameters) ? json.parameters : {};
        lastWords = '';
        return [...flush(), { kind: 'tool-call', id: str(json.tool_id), name, command: cut(describeToolCall(name, parameters), MAX_FIELD_CHARS), input: cut(JSON.stringify(parameters), MAX_FIELD_CHARS) }];
      }
      case 'tool_result': {
        const isError = json.status === 'error';
        const error = isRecord(json.error) ? str(json.error.message) : '';
        const output = str(json.output) || error;
        return [...flush(), { kind: 'tool-result', id: str(json.tool_id), output: cut(output, MAX_FIELD_CHARS), exitCode: null, isError }];
      }
      case 'error': {
        const message = oneLine(str(json.message)) || 'Gemini CLI reported an error';
        return [...flush(), { kind: 'error', message: json.severity === 'warning' ? `warning: ${message}` : message }];
      }
      case 'result': {
        const events = flush();
        if (json.status === 'success') return [...events, { kind: 'done', ok: true, summary: lastWords.trim() }];
        const message = isRecord(json.error) ? apiErrorLine(str(json.error.message)) : '';
        return [...events, { kind: 'error', message: message || 'Gemini CLI failed without saying why' }, { kind: 'done', ok: false, summary: message || lastWords.trim() }];
      }
      default:
        return [];
    }
  };
  return {
    line(text) {
      if (!text.startsWith('{')) return [];
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        return [];
      }
      return isRecord(json) ? read(json) : [];
    },
    end: flush,
  };
}

export const geminiCli: InstalledAgent = {
  name: 'gemini-cli',
  title: 'Gemini CLI',
  package: '@google/gemini-cli',
  version: '0.61.0',
  bin: 'gemini',
  needsNode: true,
  api: 'gemini',
  defaultModel: 'gemini-2.5-pro',
  argv(input) {
    // `--prompt=` keeps an instruction that starts with '-' from being read as an option.
    return [`--prompt=${input.instruction}`, `--model=${input.model}`, '--output-format', 'stream-json', '--approval-mode', 'yolo', '--skip-trust'];
  },
  environment(input) {
    return {
      GOOGLE_GEMINI_BASE_URL: input.baseUrl,
      GEMINI_API_KEY: input.token,
      GEMINI_CLI_HOME: input.stateDir,
      // Its crash and API error reports go to the temporary folder: keep them with the run.
      TMPDIR: input.stateDir,
      // It would start itself again as a child Node with a larger heap; one process is enough.
      GEMINI_CLI_NO_RELAUNCH: 'true',
      GEMINI_SANDBOX: 'false',
      GEMINI_TELEMETRY_ENABLED: 'false',
      NO_COLOR: '1',
    };
  },
  stateFiles(input) {
    return { '.gemini/settings.json': `${JSON.stringify(geminiSettings(input), null, 2)}\n` };
  },
  events: geminiEvents,
};
