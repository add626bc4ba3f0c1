// Each protocol an agent on a task may speak, described once: its name (as records and settings
// use it), its titles and descriptions, how the doctor probes it and what it needs of a backend.
// package.json's settings (checked against this table by a unit test), the editor's pickers, the
// command lines' help and the doctor all read it. Pure data: loading it loads no protocol.
import type { BackendSession } from '../backends/backend.ts';
import type { Protocol } from '../records/records.ts';

export interface ProtocolDescriptor {
  readonly name: Protocol;
  /** Its short title: "SDK 1.x". */
  readonly title: string;
  /** How it talks, in a few words, after the title in pickers: "JSON lines". */
  readonly manner: string;
  /** The doctor's name for it, and the report's. */
  readonly longTitle: string;
  /** In the settings: package.json's `enumDescriptions` of an agent's `protocol`. */
  readonly description: string;
  /** In Add Agent's pick of a protocol. */
  readonly detail: string;
  /** In `belay run --help`: what `--protocol <name>` means. */
  readonly usage: string;
  /** In `belay agent --help`: what its probe does. */
  readonly probeUsage: string;
  /** The doctor's probe that recognises it (doctor.ts); an installed CLI is named, not recognised. */
  readonly probe?: 'sdk1' | 'sdk2' | 'sdk3';
  /** An installed coding CLI (protocols/installed/): Belay installs it and runs it headless. */
  readonly installed?: true;
  /** What it asks of the backend's session: a new backend provides these for the protocol to work on it. */
  readonly needs: readonly (keyof BackendSession)[];
}

/** The table: a new protocol is a file beside this one, its name in records.ts and a row here. */
export const PROTOCOL_DESCRIPTORS: Readonly<Record<Protocol, ProtocolDescriptor>> = {
  sdk1: {
    name: 'sdk1',
    title: 'SDK 1.x',
    manner: 'JSON lines',
    longTitle: 'Term Challenge SDK 1.x (JSON lines on stdin/stdout)',
    description: 'SDK 1.x: one JSON request per line on stdin, one JSON answer per line on stdout; Belay runs the commands.',
    detail: 'The agent reads one JSON request per line on stdin and answers with one JSON line; Belay runs its commands.',
    usage: 'JSON lines on stdin/stdout',
    probeUsage: 'a first request on its stdin; a JSON answer with command/task_complete on stdout',
    probe: 'sdk1',
    needs: ['spawn', 'workdir'],
  },
  sdk2: {
    name: 'sdk2',
    title: 'SDK 2.0',
    manner: 'HTTP',
    longTitle: 'Term Challenge SDK 2.0 (HTTP server on AGENT_PORT)',
    description: 'SDK 2.0: an HTTP server on AGENT_PORT that runs its own commands.',
    detail: 'The agent is an HTTP server on AGENT_PORT (/health, /start, /status) and runs its own commands.',
    usage: 'HTTP server on AGENT_PORT',
    probeUsage: 'an HTTP server on AGENT_PORT answering /health, then /start and /status',
    probe: 'sdk2',
    needs: ['spawn', 'connect'],
  },
  sdk3: {
    name: 'sdk3',
    title: 'SDK 3.0',
    manner: 'instruction',
    longTitle: 'Term Challenge SDK 3.0 (--instruction, [DONE] on stdout)',
    description: "SDK 3.0: run once as COMMAND --instruction \"TEXT\" in the task's working folder; runs its own commands and prints [DONE] when finished.",
    detail: 'The agent runs as COMMAND --instruction "<task>", runs its own commands and prints [DONE] when finished.',
    usage: "run once as COMMAND --instruction \"TEXT\" in the task's working folder (/app when isolated: name the agent's files by absolute path), prints [DONE] when finished",
    probeUsage: 'run as COMMAND --instruction "<text>"; prints [DONE] when finished',
    probe: 'sdk3',
    needs: ['spawn', 'workdir'],
  },
  'claude-code': {
    name: 'claude-code',
    title: 'Claude Code',
    manner: 'installed CLI',
    longTitle: 'Claude Code (the CLI, headless, through Belay\'s gateway)',
    description: "Claude Code: Belay installs the pinned CLI (or runs the one the agent's command names) and runs it headless on the task; it speaks Anthropic Messages through Belay's gateway.",
    detail: 'The Claude Code CLI, headless with the task\'s instruction; its tool calls are the run\'s steps. Needs an Anthropic upstream.',
    usage: "Claude Code, headless (installed by Belay when --agent is left out; needs --llm-upstream, an Anthropic API)",
    probeUsage: 'installed? its version; one step through the gateway',
    installed: true,
    needs: ['spawn', 'workdir', 'stateDir', 'serviceUrl'],
  },
  codex: {
    name: 'codex',
    title: 'Codex',
    manner: 'installed CLI',
    longTitle: 'Codex (the CLI, headless, through Belay\'s gateway)',
    description: "Codex: Belay installs the pinned CLI (a static native binary) and runs it headless on the task; it speaks the OpenAI Responses API through Belay's gateway.",
    detail: 'The Codex CLI (codex exec), headless with the task\'s instruction; its commands are the run\'s steps. Needs an OpenAI-compatible upstream with the Responses API.',
    usage: 'Codex, headless (installed by Belay when --agent is left out; needs --llm-upstream, an OpenAI Responses API)',
    probeUsage: 'installed? its version; one step through the gateway',
    installed: true,
    needs: ['spawn', 'workdir', 'stateDir', 'serviceUrl'],
  },
  'gemini-cli': {
    name: 'gemini-cli',
    title: 'Gemini CLI',
    manner: 'installed CLI',
    longTitle: 'Gemini CLI (the CLI, headless, through Belay\'s gateway)',
    description: "Gemini CLI: Belay installs the pinned CLI (a Node program, run with Belay's own Node) and runs it headless on the task; it speaks the Gemini API through Belay's gateway.",
    detail: 'The Gemini CLI, headless with the task\'s instruction; its tool calls are the run\'s steps. Needs a Gemini upstream.',
    usage: 'Gemini CLI, headless (installed by Belay when --agent is left out; needs --llm-upstream with --llm-api gemini)',
    probeUsage: 'installed? its version; one step through the gateway',
    installed: true,
    needs: ['spawn', 'workdir', 'stateDir', 'serviceUrl'],
  },
  opencode: {
    name: 'opencode',
    title: 'OpenCode',
    manner: 'installed CLI',
    longTitle: 'OpenCode (the CLI, headless, through Belay\'s gateway)',
    description: "OpenCode: Belay installs the pinned CLI (a native binary) and runs it headless on the task; it speaks OpenAI-compatible chat completions through Belay's gateway.",
    detail: 'The OpenCode CLI (opencode run), headless with the task\'s instruction; its tool calls are the run\'s steps. Needs an OpenAI-compatible upstream.',
    usage: 'OpenCode, headless (installed by Belay when --agent is left out; needs --llm-upstream, an OpenAI-compatible API)',
    probeUsage: 'installed? its version; one step through the gateway',
    installed: true,
    needs: ['spawn', 'workdir', 'stateDir', 'serviceUrl'],
  },
};

/** The descriptors in the order the settings list them. */
export function protocolDescriptors(): ProtocolDescriptor[] {
  return Object.values(PROTOCOL_DESCRIPTORS);
}
