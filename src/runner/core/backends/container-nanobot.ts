// nanobot micro-agents in containers: each message runs the bot once in a fresh container of the
// base image (or another image), as the container backend runs agents: no network, no
// capabilities, no new privileges, bounded CPUs, memory and processes, the bot's workspace
// writable at its own path (so the envelope's paths hold), its program folders read-only. The
// container is removed when the message is answered, times out or is stopped; a Belay killed
// meanwhile leaves it labelled for the next start to remove.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { agentMounts, agentRuntimes, containerEnvironment, containerLimits, execEnvironment, imageConfig, LABELS, ownerMark, type ContainerBackendOptions, type ImageConfig } from './container.ts';
import type { Engine } from './engine.ts';
import { BASE_IMAGE } from './image-base.ts';

/** A program to run, as the nanobot protocol starts it. */
export interface LaunchSpec {
  argv: readonly [string, ...string[]];
  /** The bot's workspace: writable inside at the same path. */
  cwd: string;
  env: Record<string, string>;
}

export interface Launched {
  command: { argv: [string, ...string[]]; cwd: string; env: Record<string, string> };
  /** Removes what the launch made; call it once the program has ended, however it ended. */
  end(): Promise<void>;
}

/** Where micro-agents run (a container, the sandbox): what protocols/nanobot.ts calls a NanobotLauncher. */
export interface MicroAgentLauncher {
  /** Where it runs, in words. */
  readonly label: string;
  start(spec: LaunchSpec): Promise<Launched>;
}

export interface ContainerLauncherOptions extends Pick<ContainerBackendOptions, 'cpus' | 'memoryMb' | 'pidsLimit'> {
  engine: Engine;
  /** The image the bot runs in (default: the base image). */
  image?: string;
  /** Host folders the bot reads (its program, the runtime its command names), read-only at their paths. */
  agentFolders: readonly string[];
}

/** Starts micro-agents in containers; `start` gives the host command to run and the clean-up. */
export function containerLauncher(options: ContainerLauncherOptions): { start(spec: LaunchSpec): Promise<Launched> } {
  const { engine } = options;
  const image = options.image ?? BASE_IMAGE;
  let config: Promise<ImageConfig> | undefined;
  return {
    async start(spec) {
      if (!(await engine.imageExists(image))) {
        throw new Error(image === BASE_IMAGE ? `${BASE_IMAGE} is not built yet: run 'belay image build-base' once` : `the image ${image} is not in ${engine.name}'s storage`);
      }
      config ??= imageConfig(engine, image);
      const workspace = path.resolve(spec.cwd);
      if (/[:,]/.test(workspace)) throw new Error(`cannot show ${workspace} in a container: its path holds ':' or ','`);
      const { flags } = agentMounts(
        options.agentFolders.filter((folder) => !path.resolve(folder).startsWith(`${workspace}/`) && path.resolve(folder) !== workspace),
        [],
        '/nonexistent',
      );
      const limits = containerLimits({ cpus: undefined, memoryMb: undefined }, { ...(options.cpus ? { cpus: options.cpus } : {}), ...(options.memoryMb ? { memoryMb: options.memoryMb } : {}), ...(options.pidsLimit ? { pidsLimit: options.pidsLimit } : {}) });
      const name = `belay-nanobot-${randomBytes(6).toString('hex')}`;
      const runtimes = agentRuntimes(options.agentFolders.filter((folder) => existsSync(folder)));
      const env = execEnvironment(engine.env, containerEnvironment(await config, runtimes, spec.env));
      const args = [
        'run',
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
        '--workdir',
        workspace,
        ...env.flags,
        image,
        ...spec.argv,
      ];
      return {
        command: { argv: engine.argv(args), cwd: '/', env: env.env },
        // The client may have been killed (timeout, stop): the container may still run.
        end: async () => void (await engine.run(['rm', '--force', name], { timeoutMs: 60_000 })),
      };
    },
  };
}
