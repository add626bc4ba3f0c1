// The executor: one small static program (native/executor.c, built for Linux x64 and arm64)
// started once per session inside an environment (the sandbox, a container, the host for the
// local backend, a remote host's container), which runs every command Belay sends over one
// channel: its stdin and stdout, carried by whatever started it (a pipe, bwrap, `podman exec -i`,
// an engine's remote connection over SSH, a pod's exec stream). This file is the contract the
// backends code against; `client.ts` implements it.
import type { Duplex } from 'node:stream';
import type { RunningChild } from '../process.ts';

/** One command for the executor: the whole of what the process gets. */
export interface ExecutorCommand {
  argv: readonly [string, ...string[]];
  /** The working folder as seen inside; a folder that does not exist fails the start in one line. */
  cwd: string;
  /** Exactly the environment of the process (nothing is inherited from the executor). */
  env: Record<string, string>;
  /** 'pipe' (default): `write`/`endInput` feed it; 'ignore': stdin is /dev/null. */
  stdin?: 'pipe' | 'ignore';
  /** The whole tree is killed this long after the start, inside, even if Belay's side stalls. */
  timeoutMs?: number;
  /** RLIMIT_FSIZE for the process and what it starts. */
  maxFileBytes?: number;
  onStdout?(chunk: string): void;
  onStderr?(chunk: string): void;
}

export interface Executor {
  /**
   * Starts a command in its own process group; the handle is the process layer's. `kill()` ends
   * the whole tree, processes that left the group (setsid, double forks) included; `ended`
   * settles once the command exited, the rest of its tree is dead and its output is read.
   */
  spawn(command: ExecutorCommand): RunningChild;
  /** A TCP connection to 127.0.0.1:`port` inside the environment, carried over the channel. */
  connect(port: number): Promise<Duplex>;
  /**
   * Listens on 127.0.0.1:`port` inside; each connection made there arrives here as a stream
   * (the host services: the LLM gateway, an SDK 2.0 socket). Resolves once listening.
   */
  listen(port: number, onConnection: (stream: Duplex) => void): Promise<{ close(): Promise<void> }>;
  /** Kills every process started through this executor and whatever they left; resolves when all are dead. */
  killAll(): Promise<void>;
  /** `killAll`, then ends the executor and its channel. Idempotent. */
  close(): Promise<void>;
  /**
   * Ends the channel at once without asking the executor anything (its transport is killed):
   * for a channel that can no longer carry an answer (a remote host that vanished). Everything
   * still running there ends when the executor sees its channel close.
   */
  abandon(reason: string): void;
  /** Settles when the channel ends (the executor exited, was killed, or its transport broke), with why in one line. */
  readonly closed: Promise<{ reason: string }>;
}

/** How the executor is started: a host program whose stdin and stdout are the channel. */
export interface ExecutorTransport {
  argv: readonly [string, ...string[]];
  cwd: string;
  env: Record<string, string>;
}
