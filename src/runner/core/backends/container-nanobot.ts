// nanobot micro-agents in containers: one container per bot (its workspace, its folders, its
// image), whose one program is the executor (src/shared/executor/), with the container backend's
// isolation: no network, no capabilities, no new privileges, bounded CPUs, memory and processes,
// the bot's workspace writable at its own path (so the envelope's paths hold), its program folders
// read-only. Each message is one command on that executor, in its own process group: the whole
// tree is killed when the message ends, times out or is stopped, so nothing the bot started
// outlives its message. The container ends when idle (5 minutes by default), when the launcher is
// disposed, and when Belay dies (the executor's channel ends); a Belay killed meanwhile leaves it
// labelled for the next start to remove. An environment whose executor died is started again.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { executorBinary, hostArch } from '../../../shared/executor/binary.ts';
import { startExecutor, type ChannelExecutor } from '../../../shared/executor/client.ts';
import type { ChildOutput, RunningChild } from '../../../shared/process.ts';
import { agentMounts, agentRuntimes, containerEnvironment, containerLimits, imageConfig, LABELS, ownerMark, type ContainerBackendOptions, type ImageConfig } from './container.ts';
import { failureText, type Engine } from './engine.ts';
import { BASE_IMAGE } from './image-base.ts';

/** A program to run, as the nanobot protocol starts it. */
export interface LaunchSpec {
  argv: readonly [string, ...string[]];
  /** The bot's workspace: writable inside at the same path. */
  cwd: string;
  env: Record<string, string>;
}

export interface Launched {
  /** Starts the message's program in the bot's environment (stdin piped), as the process layer's ChildSource takes it. */
  start(output: ChildOutput): RunningChild;
  /** Gives the environment back; call it once the program has ended, however it ended. */
  end(): Promise<void>;
}

/** Where micro-agents run (a container, the sandbox): what protocols/nanobot.ts calls a NanobotLauncher. */
export interface MicroAgentLauncher {
  /** Where it runs, in words. */
  readonly label: string;
  start(spec: LaunchSpec): Promise<Launched>;
  /** Ends every environment this launcher used (a message still running there is killed). */
  dispose(): Promise<void>;
}

/** How long a bot's environment stays without a message before it ends (default). */
export const IDLE_END_MS = 5 * 60_000;

/** A started environment: its executor, and how to remove what is left of it once the executor ended. */
export interface OpenedEnvironment {
  executor: ChannelExecutor;
  remove(): Promise<void>;
}

interface Entry {
  ready: Promise<OpenedEnvironment>;
  running: number;
  idle: NodeJS.Timeout | undefined;
  ending: Promise<void> | undefined;
}

/**
 * The bots' environments, one per key, shared by every launcher of this process (the chat asks
 * for a launcher per message): started on the first message, ended when idle, disposed, or when
 * their executor died (then started again for the next message).
 */
const environments = new Map<string, Entry>();

function endEntry(key: string, entry: Entry): Promise<void> {
  if (environments.get(key) === entry) environments.delete(key);
  clearTimeout(entry.idle);
  entry.ending ??= (async () => {
    const opened = await entry.ready.catch(() => undefined);
    if (!opened) return;
    await opened.executor.close().catch(() => undefined);
    await opened.remove().catch(() => undefined);
  })();
  return entry.ending;
}

/**
 * Whether a kept environment's executor still answers: a connection to a port nothing listens on
 * is refused by a live executor at once, while one whose container was removed from outside ends
 * its channel instead (which may come a moment after the removal).
 */
async function answers(executor: ChannelExecutor): Promise<boolean> {
  let closed = false;
  void executor.closed.then(() => (closed = true));
  await executor.connect(1).then(
    (stream) => stream.destroy(),
    () => undefined,
  );
  // The channel's end and the refused connection arrive on the same turn: let both settle.
  await new Promise((resolve) => setImmediate(resolve));
  return !closed;
}

/** Takes the environment of `key` (starting it with `open` when there is none that lives) for one message. */
export async function acquireEnvironment(key: string, open: () => Promise<OpenedEnvironment>, idleMs: number): Promise<{ executor: ChannelExecutor; release(): void }> {
  const kept = environments.get(key);
  if (kept !== undefined && kept.running === 0 && !kept.ending) {
    const opened = await kept.ready.catch(() => undefined);
    // Removed from outside since the last message (its executor gone): start another.
    if (opened && !(await answers(opened.executor))) await endEntry(key, kept);
  }
  let entry = environments.get(key);
  if (entry === undefined) {
    const created: Entry = { ready: open(), running: 0, idle: undefined, ending: undefined };
    entry = created;
    environments.set(key, created);
    created.ready.then(
      // Its executor died (killed, the container stopped): the next message starts another.
      (opened) => void opened.executor.closed.then(() => endEntry(key, created)),
      () => environments.get(key) === created && environments.delete(key),
    );
  }
  const taken = entry;
  taken.running += 1;
  clearTimeout(taken.idle);
  let opened;
  try {
    opened = await taken.ready;
  } catch (error) {
    taken.running -= 1;
    throw error;
  }
  let released = false;
  return {
    executor: opened.executor,
    release() {
      if (released) return;
      released = true;
      taken.running -= 1;
      if (taken.running > 0 || taken.ending) return;
      clearTimeout(taken.idle);
      taken.idle = setTimeout(() => void endEntry(key, taken), idleMs);
      // An idle environment does not keep Belay (or `belay nanobot`) running.
      taken.idle.unref();
    },
  };
}

/** Ends the environments of these keys; resolves once they are gone. */
export async function endEnvironments(keys: Iterable<string>): Promise<void> {
  const ends: Promise<void>[] = [];
  for (const key of keys) {
    const entry = environments.get(key);
    if (entry) ends.push(endEntry(key, entry));
  }
  await Promise.all(ends);
}

/** A launcher's `start` and `dispose` over the shared environments: `environment` says the key and how to open it. */
export function environmentLauncher(
  idleMs: number,
  environment: (spec: LaunchSpec) => Promise<{ key: string; open(): Promise<OpenedEnvironment>; command(executor: ChannelExecutor): Promise<{ cwd: string; env: Record<string, string> }> }>,
): Pick<MicroAgentLauncher, 'start' | 'dispose'> {
  const used = new Set<string>();
  return {
    async start(spec) {
      const { key, open, command } = await environment(spec);
      used.add(key);
      const { executor, release } = await acquireEnvironment(key, open, idleMs);
      let run;
      try {
        run = await command(executor);
      } catch (error) {
        release();
        throw error;
      }
      return {
        start: (output) => executor.spawn({ argv: spec.argv, cwd: run.cwd, env: run.env, stdin: 'pipe', onStdout: output.onStdout, onStderr: output.onStderr }),
        end: async () => release(),
      };
    },
    dispose: () => endEnvironments(used),
  };
}

export interface ContainerLauncherOptions extends Pick<ContainerBackendOptions, 'cpus' | 'memoryMb' | 'pidsLimit'> {
  engine: Engine;
  /** The image the bot runs in (default: the base image). */
  image?: string;
  /** Host folders the bot reads (its program, the runtime its command names), read-only at their paths. */
  agentFolders: readonly string[];
  /** How long a bot's container stays without a message (default IDLE_END_MS). */
  idleMs?: number;
}

/** The image's configuration (PATH, home) of each container's executor, read once when it starts. */
const configs = new WeakMap<ChannelExecutor, ImageConfig>();

/** Where the executor is inside a micro-agent's container. */
const EXECUTOR_INSIDE = '/.belay/exec';

/** Starts micro-agents in containers, one per bot, each message a command on its executor. */
export function containerLauncher(options: ContainerLauncherOptions): Pick<MicroAgentLauncher, 'start' | 'dispose'> {
  const { engine } = options;
  const image = options.image ?? BASE_IMAGE;
  return environmentLauncher(options.idleMs ?? IDLE_END_MS, async (spec) => {
    const workspace = path.resolve(spec.cwd);
    if (/[:,]/.test(workspace)) throw new Error(`cannot show ${workspace} in a container: its path holds ':' or ','`);
    const folders = options.agentFolders.filter((folder) => !path.resolve(folder).startsWith(`${workspace}/`) && path.resolve(folder) !== workspace);
    const runtimes = agentRuntimes(options.agentFolders.filter((folder) => existsSync(folder)));
    const key = ['container', engine.name, engine.label, image, workspace, ...folders.map((folder) => path.resolve(folder))].join('\0');
    // Asked of the engine when the container starts, not for each message.
    const open = async (): Promise<OpenedEnvironment> => {
      if (!(await engine.imageExists(image))) {
        throw new Error(image === BASE_IMAGE ? `${BASE_IMAGE} is not built yet: run 'belay image build-base' once` : `the image ${image} is not in ${engine.name}'s storage`);
      }
      const config = await imageConfig(engine, image);
      const { flags } = agentMounts(folders, [], '/nonexistent');
      const limits = containerLimits({ cpus: undefined, memoryMb: undefined }, { ...(options.cpus ? { cpus: options.cpus } : {}), ...(options.memoryMb ? { memoryMb: options.memoryMb } : {}), ...(options.pidsLimit ? { pidsLimit: options.pidsLimit } : {}) });
      const name = `belay-nanobot-${randomBytes(6).toString('hex')}`;
      const remove = async () => void (await engine.run(['rm', '--force', name], { timeoutMs: 60_000 }));
      const created = await engine.run(
        [
          'create',
          '--rm',
          '--interactive',
          '--init',
          '--name',
          name,
          '--label',
          `${LABELS.run}=${name}`,
          '--label',
          `${LABELS.owner}=${ownerMark()}`,
          ...engine.isolationFlags(),
          '--cap-drop=all',
          '--security-opt=no-new-privileges',
          ...engine.resourceFlags(limits),
          '--volume',
          `${workspace}:${workspace}:rw`,
          ...flags,
          '--volume',
          `${executorBinary(hostArch(engine.remote?.arch))}:${EXECUTOR_INSIDE}:ro`,
          '--workdir',
          workspace,
          '--entrypoint',
          EXECUTOR_INSIDE,
          image,
        ],
        { timeoutMs: 120_000 },
      );
      if (created.exitCode !== 0) {
        await remove().catch(() => undefined);
        throw new Error(`${engine.name} create: ${failureText(created, 120_000)}`);
      }
      try {
        const executor = await startExecutor({ argv: engine.argv(['start', '--attach', '--interactive', name]), cwd: '/', env: engine.env }, { readyTimeoutMs: 120_000 });
        configs.set(executor, config);
        return { executor, remove };
      } catch (error) {
        await remove().catch(() => undefined);
        throw new Error(`${engine.name} start: ${error instanceof Error ? error.message : String(error)}`);
      }
    };
    const command = async (executor: ChannelExecutor) => {
      const config = configs.get(executor);
      if (!config) throw new Error(`the micro-agent's container for ${workspace} has no image configuration`);
      return { cwd: workspace, env: containerEnvironment(config, runtimes, spec.env) };
    };
    return { key, open, command };
  });
}
