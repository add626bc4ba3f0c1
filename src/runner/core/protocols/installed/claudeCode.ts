// Claude Code (`@anthropic-ai/claude-code`, a native binary): headless with `-p`, its events as
// JSON lines (`--output-format stream-json --verbose`), every permission skipped (the run is the
// sandbox; as root it allows that only with IS_SANDBOX=1). It speaks Anthropic Messages to
// ANTHROPIC_BASE_URL (`/v1/messages?beta=true`, streamed) with ANTHROPIC_API_KEY: the gateway and
// the run's token. Its state (settings, sessions, shell snapshots) is under CLAUDE_CONFIG_DIR.
// Its events: `system` (init), `assistant` (a model turn's text and tool_use blocks), `user`
// (tool_result blocks), `result` (the end, with its words and whether it failed).
import { isRecord } from '../../gateway/shape.ts';
import type { EventReader, InstalledAgent, InstalledEvent } from './installedAgent.ts';

/** The most characters of one text, command or output kept from one event. */
const MAX_FIELD_CHARS = 64_000;

export const claudeCode: InstalledAgent = {
  name: 'claude-code',
  title: 'Claude Code',
  package: '@anthropic-ai/claude-code',
  version: '2.1.197',
  bin: 'claude',
  needsNode: false,
  api: 'messages',
  defaultModel: 'claude-sonnet-4-5',
  argv: (input) => ['-p', input.instruction, '--output-format', 'stream-json', '--verbose', '--dangerously-skip-permissions', '--model', input.model],
  environment: (input) => ({
    ANTHROPIC_BASE_URL: input.baseUrl,
    ANTHROPIC_API_KEY: input.token,
    CLAUDE_CONFIG_DIR: input.stateDir,
    IS_SANDBOX: '1',
    // Nothing but the model: no telemetry, error reports, update checks or feedback surveys.
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    CLAUDE_CODE_IDE_SKIP_AUTO_INSTALL: '1',
  }),
  stateFiles: () => ({}),
  events: () => new ClaudeCodeEvents(),
};

class ClaudeCodeEvents implements EventReader {
  line(text: string): InstalledEvent[] {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return [];
    }
    if (!isRecord(json)) return [];
    if (json.type === 'assistant' && isRecord(json.message)) return assistantEvents(json.message.content);
    if (json.type === 'user' && isRecord(json.message)) return resultEvents(json.message.content);
    if (json.type === 'result') {
      const failed = json.is_error === true || (typeof json.subtype === 'string' && json.subtype !== 'success');
      const summary = typeof json.result === 'string' ? json.result : typeof json.subtype === 'string' ? json.subtype.replace(/_/g, ' ') : '';
      const events: InstalledEvent[] = [];
      if (failed && typeof json.api_error_status === 'number') events.push({ kind: 'error', message: `the model API answered ${json.api_error_status}${summary ? `: ${clip(summary)}` : ''}` });
      events.push({ kind: 'done', ok: !failed, summary: clip(summary) });
      return events;
    }
    return [];
  }
}

function assistantEvents(content: unknown): InstalledEvent[] {
  if (!Array.isArray(content)) return [];
  const events: InstalledEvent[] = [];
  for (const block of content) {
    if (!isRecord(block)) continue;
    if (block.type === 'text' && typeof block.text === 'string' && block.text.trim()) events.push({ kind: 'text', text: clip(block.text) });
    if (block.type === 'tool_use' && typeof block.id === 'string' && typeof block.name === 'string') {
      const input = isRecord(block.input) ? block.input : {};
      events.push({ kind: 'tool-call', id: block.id, name: block.name, command: clip(toolCommand(block.name, input)), input: clip(JSON.stringify(input)) });
    }
  }
  return events;
}

function resultEvents(content: unknown): InstalledEvent[] {
  if (!Array.isArray(content)) return [];
  const events: InstalledEvent[] = [];
  for (const block of content) {
    if (!isRecord(block) || block.type !== 'tool_result' || typeof block.tool_use_id !== 'string') continue;
    const output = resultText(block.content);
    const isError = block.is_error === true;
    // Claude Code words a failed command's result "Exit code N" on its first line.
    const code = /^Exit code (\d+)/.exec(output);
    events.push({ kind: 'tool-result', id: block.tool_use_id, output: clip(output), exitCode: code ? Number(code[1]) : isError ? null : 0, isError });
  }
  return events;
}

function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : isRecord(part) && part.type === 'image' ? '[an image]' : ''))
    .filter(Boolean)
    .join('\n');
}

/** The shell command a tool runs, or a line saying what it does with what. */
export function toolCommand(name: string, input: Record<string, unknown>): string {
  const field = (key: string) => (typeof input[key] === 'string' ? (input[key] as string) : undefined);
  if (name === 'Bash') return field('command') ?? 'Bash';
  const target = field('file_path') ?? field('notebook_path') ?? field('path') ?? field('pattern') ?? field('url') ?? field('query') ?? field('description') ?? field('prompt');
  return target !== undefined ? `${name} ${target}` : name;
}

function clip(text: string): string {
  return text.length > MAX_FIELD_CHARS ? `${text.slice(0, MAX_FIELD_CHARS)}…` : text;
}
