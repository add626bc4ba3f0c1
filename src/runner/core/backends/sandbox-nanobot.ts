// nanobot micro-agents in the bubblewrap sandbox, where no container engine works: one sandbox
// per bot (its workspace, its folders), whose program is the executor, with the sandbox backend's
// model (no network, no capabilities, no new privileges, its own PID namespace that dies with it,
// the allowlisted environment, read-only system folders), its workspace writable at its own path
// (so the envelope's paths hold), its program folders read-only, a private /tmp and home that go
// with it. Nothing else of the host: not the home, not other projects. Each message is one
// command on the executor (its whole tree killed when the message ends); the sandbox ends when
// idle, disposed, or with Belay (the executor's channel ends), as container-nanobot.ts says.
import * as os from 'node:os';
import * as path from 'node:path';
import { executorBinary } from '../../../shared/executor/binary.ts';
import { startExecutor } from '../../../shared/executor/client.ts';
import { programEnvironment } from './backend.ts';
import { environmentLauncher, IDLE_END_MS, type MicroAgentLauncher } from './container-nanobot.ts';
import { EXECUTOR_INSIDE, probeSandbox, realDir, sandboxBaseEnvironment, tooWide, type SandboxOptions } from './sandbox.ts';

export interface SandboxLauncherOptions extends SandboxOptions {
  /** Host folders the bot reads (its program, the runtime its command names), read-only at their paths. */
  agentFolders: readonly string[];
  /** Size of the private /tmp and of the home (memory-backed), in MB. */
  scratchMb?: number;
  /** How long a bot's sandbox stays without a message (default IDLE_END_MS). */
  idleMs?: number;
}

/** Starts micro-agents in the sandbox; throws BackendUnavailableError when bubblewrap cannot run here. */
export async function sandboxLauncher(options: SandboxLauncherOptions): Promise<MicroAgentLauncher> {
  const { bwrap, isolation, system } = await probeSandbox(options);
  const userHome = realDir(os.homedir());
  const scratchBytes = String((options.scratchMb ?? 512) * 1024 * 1024);
  const executor = executorBinary();
  return {
    label: 'sandbox (bubblewrap: only its workspace writable, no network, no capabilities)',
    ...environmentLauncher(options.idleMs ?? IDLE_END_MS, async (spec) => {
      const workspace = path.resolve(spec.cwd);
      const realWorkspace = realDir(workspace);
      if (tooWide(realWorkspace, userHome)) throw new Error(`the micro-agent's workspace ${workspace} would show your whole home folder to it: give it a folder of its own`);
      const folders = [...new Set(options.agentFolders.map((dir) => path.resolve(dir)))]
        .map((dir) => ({ path: dir, source: realDir(dir) }))
        .filter((dir) => dir.path !== workspace && !dir.path.startsWith(`${workspace}/`));
      const wide = folders.find((dir) => tooWide(dir.source, userHome));
      if (wide) throw new Error(`the micro-agent's folder ${wide.path} would show your whole home folder to it: give it a folder of its own`);
      const base = sandboxBaseEnvironment(system);
      const homeInside = base.HOME;
      const key = ['sandbox', bwrap, scratchBytes, workspace, realWorkspace, ...folders.map((dir) => `${dir.path}=${dir.source}`)].join('\0');
      const open = async () => {
        // The private /tmp and home first: the workspace and the bot's folders may lie in either.
        const args = [...isolation, ...system.args, '--size', scratchBytes, '--tmpfs', '/tmp', '--symlink', '../tmp', '/var/tmp'];
        if (homeInside !== '/tmp') args.push('--size', scratchBytes, '--tmpfs', homeInside);
        // The bot's folders before the workspace, which may lie inside one of them.
        for (const dir of folders) args.push('--ro-bind', dir.source, dir.path);
        args.push('--bind', realWorkspace, workspace);
        args.push('--ro-bind', executor, EXECUTOR_INSIDE);
        args.push('--remount-ro', '/', '--chdir', workspace);
        // The sandbox's PID namespace ends with its executor: nothing is left to remove.
        return { executor: await startExecutor({ argv: [bwrap, ...args, '--', EXECUTOR_INSIDE], cwd: '/', env: {} }), remove: async () => undefined };
      };
      return { key, open, command: async () => ({ cwd: workspace, env: programEnvironment(base, spec.env) }) };
    }),
  };
}
