// Where agents, their commands and the tests run: the contract every backend fulfils (the
// implementations live in backends/). A run has two phases. In the agent phase the agent sees
// its working directory and, read-only, its own program; never the task's tests or solution,
// the run's records or the host's home. The verify phase starts only once everything the agent
// phase started is dead; then the staged tests and a fresh logs folder become visible. Protocols
// and the verifier never know which backend they use.
import { existsSync } from 'node:fs';
import type { Duplex } from 'node:stream';
import { connect as netConnect } from 'node:net';
import { startChild, type RunningChild } from '../../../shared/process.ts';
import type { Task } from '../tasks/task.ts';
import type { VerifierImage } from '../tasks/verifierSpec.ts';

/** The host folders of one run. */
export interface RunFolders {
  /** The working directory agents and tests see (as /app when isolated); kept across phases. */
  workspace: string;
  /** The staged tests: filled by the harness between the phases, shown at `testsDir` in the verify phase only. */
  tests: string;
  /** What verify-phase commands write under `logsDir` (verifier/reward.txt, …) is read here once they end. */
  logs: string;
  /** Harness-private files the agent phase may see (an SDK 2.0 agent's socket). */
  control: string;
  /** The backend's own scratch space on disk (a private /tmp and home), counted in the run's disk budget. */
  scratch: string;
  /** Where preparing the environment logs (an image build), kept with the run. */
  environmentLog: string;
  /**
   * A folder the agent phase may write, kept with the run: an installed CLI's own state (its
   * config, sessions, logs). Shown at `BackendSession.stateDir`; absent, there is none.
   */
  agentState?: string;
}

export interface SessionSpec {
  runId: string;
  task: Task;
  folders: RunFolders;
  /**
   * Host folders the agent needs to read (its program folder, the runtime its command names),
   * shown read-only at the same path in the agent phase only.
   */
  agentFolders: readonly string[];
  /** Host paths never shown, even where they lie under `agentFolders`: task folders, run records. */
  hidden: readonly string[];
  /**
   * Host Unix sockets (HTTP services such as the LLM gateway) the agent phase reaches over TCP at
   * `BackendSession.serviceUrl(name)`; the verify phase and anything outside the run never do (the
   * verify phase gets its own, if any, from `startVerifyPhase`).
   */
  services?: readonly ServiceSpec[];
  /**
   * The working folder must start as `folders.workspace` holds it, whatever the task's image has
   * at its working directory (a verifier's environment given the agent's final state).
   */
  seedFromWorkspace?: boolean;
  /**
   * The environment's own image instead of the task's (a separate verifier's: its tests/Dockerfile
   * or `docker_image`), on a backend whose `images` is true; others ignore it.
   */
  image?: VerifierImage;
  /** Progress worth showing while the environment is prepared (e.g. an image build). */
  onNotice?: (message: string) => void;
  /**
   * The run's disk budget: no file a program of the run writes may grow beyond it
   * (RLIMIT_FSIZE), and what a backend holds outside the run's folders (a container's own
   * layer) is measured against it too.
   */
  diskBudgetBytes?: number;
  /**
   * The backend stopped the agent phase for a bound the run must end with (the container wrote
   * more than the disk budget or its storage limit): the run's cause is `cause`, not the
   * agent's error that follows. Called before the agent phase ends.
   */
  onLimit?: (cause: 'disk_budget' | 'host_lost', message: string) => void;
  signal?: AbortSignal;
}

/** A host service shown to one phase: `name` is how the run asks for it. */
export interface ServiceSpec {
  /** Letters, digits, '-' and '_', starting with a letter; unique in a session. */
  name: string;
  /** Where the service listens on the host; any length (Belay reaches long paths through a short link). */
  socketPath: string;
}

export interface CommandSpec {
  argv: readonly [string, ...string[]];
  /** Working directory as seen inside; the workspace when absent. */
  cwd?: string;
  /**
   * The variables Belay gives the program: the protocol's, the agent's configured env and secrets.
   * The program sees these and the backend's base variables (PATH, HOME, LANG, TERM), nothing else.
   */
  env?: Record<string, string>;
  /** A TCP port inside that the harness must reach (SDK 2.0); see `BackendSession.endpoint`. */
  exposePort?: number;
}

/**
 * The first characters of the program of every helper Belay runs beside an agent in the agent's
 * own process group (the sandbox's port bridge, run as `node -e <program>`). Their sockets (the
 * host services' ports inside the sandbox, 4141 and up) are Belay's, never the agent's: the
 * protocol hints leave out every process whose command line is `<node> -e` with this program.
 */
export const BELAY_HELPER_MARK = "'use strict';/* belay helper */";

/** True when a process's argv is one of Belay's own helpers (see BELAY_HELPER_MARK). */
export function isBelayHelper(argv: readonly string[]): boolean {
  return argv[1] === '-e' && (argv[2] ?? '').startsWith(BELAY_HELPER_MARK);
}

export interface HostCommand {
  argv: [string, ...string[]];
  cwd: string;
  /** The whole environment of the host process (never merged with Belay's own). */
  env: Record<string, string>;
}

/** What a caller of `BackendSession.spawn` does with the process's standard streams. */
export interface SpawnIo {
  /** 'pipe' (default): `write`/`endInput` feed it; 'ignore': its stdin is empty. */
  stdin?: 'pipe' | 'ignore';
  onStdout?(chunk: string): void;
  onStderr?(chunk: string): void;
}

export type SpawnSpec = CommandSpec & SpawnIo;

/** How the harness reaches a port inside the environment. */
export type Endpoint = { host: string; port: number } | { socketPath: string };

export type Phase = 'agent' | 'verify';

/** Starts a host command (the whole environment is the command's) with the caller's streams. */
export function spawnHost(host: HostCommand, io: SpawnIo): RunningChild {
  return startChild({
    argv: host.argv,
    cwd: host.cwd,
    env: host.env,
    stdin: io.stdin ?? 'pipe',
    ...(io.onStdout ? { onStdout: io.onStdout } : {}),
    ...(io.onStderr ? { onStderr: io.onStderr } : {}),
  });
}

/** A connection to an endpoint on this machine; rejects with the socket's error. */
export function connectEndpoint(endpoint: Endpoint): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const socket = 'socketPath' in endpoint ? netConnect(endpoint.socketPath) : netConnect(endpoint.port, endpoint.host);
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

export interface BackendSession {
  readonly backend: string;
  /** The workspace as seen inside. */
  readonly workdir: string;
  /** The staged tests as seen inside (verify phase). */
  readonly testsDir: string;
  /** The logs folder as seen inside (verify phase). */
  readonly logsDir: string;
  readonly phase: Phase;
  /**
   * Why `RunFolders.workspace` does not hold the working folder as the agent phase left it (a
   * container's /app too large to copy out), once that phase ended; absent: it does.
   */
  readonly workspaceNotFinal?: string;
  /**
   * True when the working folder starts as the task's image holds it, not as
   * `RunFolders.workspace` (which holds it only once the agent phase has ended): what is there
   * before the agent runs is read inside, through `spawn`.
   */
  readonly workspaceFromImage?: boolean;
  /** Where agent-phase programs see `RunFolders.agentState` (read-write); undefined when the run gave none. */
  readonly stateDir: string | undefined;
  /** The other machine whose engine holds this session ("ci@build-2"); absent: this one. */
  readonly host?: string;
  /**
   * The shell that runs command strings inside: absent, this machine's (`shellPath()`); null, the
   * environment has none (a task image without a shell), so a command string is run as the
   * program and arguments it names (`commandWords`).
   */
  readonly shell?: string | null;
  /**
   * Starts `spec` inside this environment, in the current phase: its own process group (killed
   * whole by `kill()`), exactly the variables of `programEnvironment`, output handed over as text.
   */
  spawn(spec: SpawnSpec): RunningChild;
  /** A connection to `port` inside, for a command started with `exposePort: port` (SDK 2.0). */
  connect(port: number): Promise<Duplex>;
  /**
   * The base URL (`http://127.0.0.1:<port>`, no trailing slash) at which the current phase's
   * programs reach its service `name` (the agent phase's `SessionSpec.services`, the verify
   * phase's given to `startVerifyPhase`); throws for a name the phase was not given.
   */
  serviceUrl(name: string): string;
  /**
   * Ends the agent phase: resolves once every process started in it is dead (the agent, its
   * commands, and whatever they left running, setsid or not). Idempotent.
   */
  endAgentPhase(): Promise<void>;
  /**
   * Starts the verify phase (after `endAgentPhase`, once the harness has staged the tests in
   * `folders.tests` and emptied `folders.logs`): from now on commands see the tests read-only at
   * `testsDir` and write `logsDir` into `folders.logs`. `services` are the verify phase's own host
   * services (its egress proxy), reached like the agent phase's at `serviceUrl(name)` until
   * `close`; none of the agent phase's is. Without them, the verify phase reaches no service.
   */
  startVerifyPhase(services?: readonly ServiceSpec[]): Promise<void>;
  /** Ends everything the environment still runs and removes what it made (containers, mounts). Idempotent. */
  close(): Promise<void>;
  /**
   * Where the host reads an artifact outside the working folder, once the agent phase has ended:
   * `inside` is an absolute path with no `..`, as the agent phase's programs saw it. The answer is
   * a host folder Belay made or trusts (`root`) and the path's parts below it, which the agent may
   * have made (a link among them is never followed); or why it cannot be collected (one line).
   * The container's engine copies it into `staging` (an empty host folder of the run's only) first.
   * Absent: such artifacts are not collected.
   */
  artifactOutside?(inside: string, staging: string): Promise<ArtifactPlace>;
}

/** Where an artifact outside the working folder is read on the host, or why it is not. */
export type ArtifactPlace = { root: string; parts: string[] } | { refused: string };

export interface Backend {
  readonly name: string;
  /** Shown to the user beside every run, e.g. "local (no isolation)". */
  readonly label: string;
  /** True when the agent cannot reach the host's files, network or privileges. */
  readonly isolated: boolean;
  /**
   * Whether a session opened for `task` starts from the run's workspace, so an earlier session's
   * work (a multi-step task's earlier steps) is there. The container's does not when the task
   * brings its own image: the session's /app is the image's.
   */
  keepsWorkBetweenSessions(task: Task): boolean;
  /** True when its environments are made of images (it builds and runs them): only then does `SessionSpec.image` count. */
  readonly images?: boolean;
  open(spec: SessionSpec): Promise<BackendSession>;
}

/** A backend that cannot run on this machine; the message says why and what to do. */
export class BackendUnavailableError extends Error {
  override name = 'BackendUnavailableError';
  readonly backend: string;
  constructor(backend: string, reason: string) {
    super(`${backend} unavailable: ${reason}`);
    this.backend = backend;
  }
}

/** The shell that runs command strings: bash where present (agents assume it), else sh. */
export function shellPath(): string {
  return existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh';
}

/**
 * The words of a command string for an environment with no shell: split at blanks, with '…' and
 * "…" quoting and backslash escapes; nothing is expanded, redirected or piped.
 */
export function commandWords(command: string): string[] {
  const words: string[] = [];
  let word = '';
  let started = false;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!;
    if (quote === "'") {
      if (c === "'") quote = undefined;
      else word += c;
    } else if (c === '\\' && i + 1 < command.length && (quote === undefined || '"\\$`'.includes(command[i + 1]!))) {
      word += command[++i]!;
      started = true;
    } else if (quote === '"') {
      if (c === '"') quote = undefined;
      else word += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      started = true;
    } else if (/\s/.test(c)) {
      if (started) words.push(word);
      word = '';
      started = false;
    } else {
      word += c;
      started = true;
    }
  }
  if (started) words.push(word);
  return words;
}

/** How `command` (a command string) runs in `session`: its shell's `-c`, or its words where it has no shell. */
export function commandArgv(session: Pick<BackendSession, 'shell'>, command: string): [string, ...string[]] {
  if (session.shell !== null) return [session.shell ?? shellPath(), '-c', command];
  const words = commandWords(command);
  return words.length > 0 ? (words as [string, ...string[]]) : ['true'];
}

/** The variables every backend passes besides Belay's own; their values are the backend's choice. */
export const BASE_VARIABLES = ['PATH', 'HOME', 'LANG', 'TERM'] as const;
export type BaseEnvironment = Record<(typeof BASE_VARIABLES)[number], string>;

/**
 * The environment a program gets: the base variables, then Belay's (`spec.env`). Nothing is
 * inherited: the editor's and the shell's variables (API keys, tokens) stay out. SHLVL=1 keeps
 * bash from taking a socket on its stdin for a remote login, which makes it read ~/.bashrc.
 */
export function programEnvironment(base: BaseEnvironment, env: Record<string, string> | undefined): Record<string, string> {
  return { SHLVL: '1', ...base, ...env };
}
