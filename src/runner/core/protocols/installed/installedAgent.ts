// The coding CLIs people evaluate (Claude Code, Codex, Gemini CLI, OpenCode) as protocols: each is
// described once here (its package and pinned version, how it runs headless with the task's
// instruction, which model API it speaks, how its event stream is read) and run by one protocol
// (../installedCli.ts). A CLI reaches its model only through Belay's gateway, with the run's
// token: its update checks, telemetry and anything else that would wait on a network are off.
// Pure data and pure readers: nothing here starts a process.
import type { InstalledProtocol } from '../../records/records.ts';

/** The model API a CLI speaks to the gateway. */
export type InstalledApi = 'messages' | 'responses' | 'gemini' | 'chat';

/** What a CLI's start gets from the run, all as seen inside the run's environment. */
export interface HeadlessInput {
  /** The task's instruction, whole. */
  instruction: string;
  /** The model the CLI asks for (the gateway maps it to the run's upstream). */
  model: string;
  /** The gateway's base URL as the run sees it (`http://127.0.0.1:PORT`, no trailing slash). */
  baseUrl: string;
  /** The run's gateway token: the only key the CLI ever gets. */
  token: string;
  /** The CLI's own state folder (its home for config, sessions, logs), kept with the run. */
  stateDir: string;
  /** The task's working folder. */
  workdir: string;
}

/** One thing the agent did, read from its event stream. */
export type InstalledEvent =
  /** Text the model wrote to the person (a turn's answer, or its thinking shown as text). */
  | { kind: 'text'; text: string }
  /**
   * The model called a tool. `command` is the shell command when the tool runs one (Bash,
   * exec_command, run_shell_command); otherwise a short line saying what it does ("Write
   * /app/hello.txt"). `input` is the tool's arguments as JSON text.
   */
  | { kind: 'tool-call'; id: string; name: string; command: string; input: string }
  /** A tool's result, matched to its call by `id`. */
  | { kind: 'tool-result'; id: string; output: string; exitCode: number | null; isError: boolean }
  /** Something went wrong that the CLI reported (an API error, a refused tool). */
  | { kind: 'error'; message: string }
  /** The CLI finished: `ok` false when it says it failed; `summary` its final words. */
  | { kind: 'done'; ok: boolean; summary: string };

/** Reads a CLI's stdout, a line at a time; a line it does not understand gives nothing (never throws). */
export interface EventReader {
  line(text: string): InstalledEvent[];
  /**
   * Optional: what the reader still holds when the stream ends. A CLI that streams its text in
   * pieces (Gemini CLI's `delta` messages) is read a turn's text at a time, so a run cut off in
   * the middle of a turn leaves that text here.
   */
  end?(): InstalledEvent[];
}

export interface InstalledAgent {
  /** The protocol name (records, settings, `--protocol`). */
  readonly name: InstalledProtocol;
  readonly title: string;
  /** The npm package and the version Belay pins and tests. */
  readonly package: string;
  readonly version: string;
  /** The executable's name in the install's `node_modules/.bin`. */
  readonly bin: string;
  /** True when the executable is a Node program (it is then run with Belay's own Node, shown read-only). */
  readonly needsNode: boolean;
  /**
   * Optional: the native executable in the install (path relative to its folder) for a platform
   * and architecture (`process.platform`, `process.arch`), which may be started in place of
   * `.bin/<bin>` when that is only a Node launcher for it (Codex's `bin/codex.js` execs its
   * statically linked binary): started directly it needs no Node, so a task image without Node can
   * run it. Absent, or undefined for a platform: start `.bin/<bin>`.
   */
  nativeExecutable?(platform: string, arch: string): string | undefined;
  readonly api: InstalledApi;
  /** The model asked for when the run names none. */
  readonly defaultModel: string;
  /** The arguments after the executable: headless, the instruction, the model, permissions skipped, events as JSON lines on stdout. */
  argv(input: HeadlessInput): string[];
  /** The variables the CLI gets (gateway URL and token, its state folder, network-free switches). */
  environment(input: HeadlessInput): Record<string, string>;
  /** Files written into the state folder before the start (its config), by path relative to it. */
  stateFiles(input: HeadlessInput): Record<string, string>;
  /** A reader for one run's event stream. */
  events(): EventReader;
}
