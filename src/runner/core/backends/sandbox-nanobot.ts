// nanobot micro-agents in the bubblewrap sandbox, where no container engine works: each message
// runs the bot once in its own sandbox with the sandbox backend's model (no network, no
// capabilities, no new privileges, its own PID namespace that dies with it, the allowlisted
// environment, read-only system folders), its workspace writable at its own path (so the
// envelope's paths hold), its program folders read-only, a private /tmp and home that go with it.
// Nothing else of the host: not the home, not other projects.
import * as os from 'node:os';
import * as path from 'node:path';
import { programEnvironment } from './backend.ts';
import type { MicroAgentLauncher } from './container-nanobot.ts';
import { probeSandbox, realDir, sandboxBaseEnvironment, tooWide, type SandboxOptions } from './sandbox.ts';

export interface SandboxLauncherOptions extends SandboxOptions {
  /** Host folders the bot reads (its program, the runtime its command names), read-only at their paths. */
  agentFolders: readonly string[];
  /** Size of the private /tmp and of the home (memory-backed), in MB. */
  scratchMb?: number;
}

/** Starts micro-agents in the sandbox; throws BackendUnavailableError when bubblewrap cannot run here. */
export async function sandboxLauncher(options: SandboxLauncherOptions): Promise<MicroAgentLauncher> {
  const { bwrap, isolation, system } = await probeSandbox(options);
  const userHome = realDir(os.homedir());
  const scratchBytes = String((options.scratchMb ?? 512) * 1024 * 1024);
  return {
    label: 'sandbox (bubblewrap: only its workspace writable, no network, no capabilities)',
    async start(spec) {
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
      // The private /tmp and home first: the workspace and the bot's folders may lie in either.
      const args = [...isolation, ...system.args, '--size', scratchBytes, '--tmpfs', '/tmp', '--symlink', '../tmp', '/var/tmp'];
      if (homeInside !== '/tmp') args.push('--size', scratchBytes, '--tmpfs', homeInside);
      // The bot's folders before the workspace, which may lie inside one of them.
      for (const dir of folders) args.push('--ro-bind', dir.source, dir.path);
      args.push('--bind', realWorkspace, workspace);
      args.push('--remount-ro', '/', '--chdir', workspace);
      return {
        command: { argv: [bwrap, ...args, '--', ...spec.argv], cwd: '/', env: programEnvironment(base, spec.env) },
        // The sandbox's PID namespace ends with bwrap (killed with its process group, or dying with Belay).
        end: async () => undefined,
      };
    },
  };
}
