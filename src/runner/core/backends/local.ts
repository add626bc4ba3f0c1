// The local backend: plain child processes in the run's folders, for machines without a
// sandbox or an engine. Chosen only explicitly and labelled so: the agent can read and write
// whatever the user can, and reach the network. What it still gets from Belay: an environment
// built from the allowlist, and, on Linux, one executor per session (belay-exec on the host, see
// src/shared/executor/) that starts every command and, at the end of the agent phase, kills
// every process it started and whatever they left (setsid and double forks included: each
// command's shepherd is a child subreaper). Elsewhere (or where the executor cannot start) the
// commands are plain children, and the sweep kills what the agent phase left running (processes
// are marked by a variable; a program that drops it escapes the sweep).
// Host services are loopback TCP ports relayed to their sockets, each phase its own (the agent
// phase's closed when it ends, the verify phase's given to `startVerifyPhase`): any local program
// could reach them meanwhile, as it can reach anything of the user's here.
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import * as os from 'node:os';
import { connectEndpoint, programEnvironment, spawnHost, type Backend, type CommandSpec, type HostCommand, type BaseEnvironment, type Phase, type SessionSpec } from './backend.ts';
import { limitFileSize } from './file-size.ts';
import { executorBinary } from '../../../shared/executor/binary.ts';
import { startExecutor } from '../../../shared/executor/client.ts';
import type { Executor } from '../../../shared/executor/contract.ts';
import { checkServices, ServiceRelay, socketFolder, type SocketFolder } from './services.ts';
import { killMarked, type ProcessMark } from './sweep.ts';

/** The session's executor on this machine; undefined where there is none (not Linux, not built, or it would not start). */
async function hostExecutor(platform: NodeJS.Platform = process.platform): Promise<Executor | undefined> {
  if (platform !== 'linux') return undefined;
  try {
    return await startExecutor({ argv: [executorBinary()], cwd: '/', env: {} });
  } catch {
    return undefined;
  }
}

/** The variable that marks the processes of one local session. */
export const SESSION_VARIABLE = 'BELAY_SESSION';

/** Windows programs do not start without these; they hold no secrets. */
const WINDOWS_VARIABLES = ['SystemRoot', 'SystemDrive', 'windir', 'ComSpec', 'PATHEXT', 'TEMP', 'TMP', 'USERPROFILE', 'APPDATA', 'LOCALAPPDATA'];

/** The base variables for a program run here, taken from Belay's own environment. */
export function localBaseEnvironment(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): BaseEnvironment & Record<string, string> {
  const base: BaseEnvironment = {
    PATH: env.PATH ?? env.Path ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: env.HOME ?? os.homedir(),
    LANG: env.LANG ?? 'C.UTF-8',
    TERM: env.TERM ?? 'dumb',
  };
  if (platform !== 'win32') return base;
  const extra = Object.fromEntries(WINDOWS_VARIABLES.flatMap((name) => (env[name] !== undefined ? [[name, env[name]!]] : [])));
  return { ...extra, ...base };
}

export function localBackend(): Backend {
  return {
    name: 'local',
    label: 'local (no isolation: agents can reach the whole filesystem and network)',
    isolated: false,
    keepsWorkBetweenSessions: () => true,
    async open(spec) {
      const { folders } = spec;
      await mkdir(folders.control, { recursive: true });
      await mkdir(folders.logs, { recursive: true });
      if (folders.agentState) await mkdir(folders.agentState, { recursive: true, mode: 0o700 });
      const token = randomBytes(12).toString('hex');
      const mark: ProcessMark = { file: 'environ', text: `${SESSION_VARIABLE}=${token}\0` };
      const base = localBaseEnvironment();
      let sockets: SocketFolder | undefined;
      /** The current phase's services: loopback ports, relayed. */
      const openRelay = async (given: SessionSpec['services']): Promise<ServiceRelay | undefined> => {
        const services = checkServices(given);
        if (services.length === 0) return undefined;
        sockets ??= await socketFolder();
        return ServiceRelay.open(services, { kind: 'tcp' }, sockets.path);
      };
      let relay = await openRelay(spec.services).catch(async (error: unknown) => {
        await sockets?.remove();
        throw error;
      });
      const executor = await hostExecutor();
      // An executor that ended early (an agent may kill it: it runs as the same user) took its
      // commands with it; what escaped it is left to the sweep.
      let executorEnded = false;
      void executor?.closed.then(() => (executorEnded = true));
      const sweep = async () => {
        if (executor && !executorEnded) await executor.killAll();
        if (!executor || executorEnded) await killMarked(mark);
      };
      let phase: Phase = 'agent';
      const hostCommand = (command: CommandSpec): HostCommand => ({
        argv: limitFileSize([...command.argv], spec.diskBudgetBytes),
        cwd: command.cwd ?? folders.workspace,
        env: { ...programEnvironment(base, command.env), [SESSION_VARIABLE]: token },
      });
      return {
        backend: 'local',
        workdir: folders.workspace,
        stateDir: folders.agentState,
        testsDir: folders.tests,
        logsDir: folders.logs,
        get phase() {
          return phase;
        },
        spawn(command) {
          if (!executor) return spawnHost(hostCommand(command), command);
          return executor.spawn({
            argv: command.argv,
            cwd: command.cwd ?? folders.workspace,
            env: { ...programEnvironment(base, command.env), [SESSION_VARIABLE]: token },
            stdin: command.stdin ?? 'pipe',
            ...(spec.diskBudgetBytes !== undefined ? { maxFileBytes: Math.ceil(spec.diskBudgetBytes) } : {}),
            ...(command.onStdout ? { onStdout: command.onStdout } : {}),
            ...(command.onStderr ? { onStderr: command.onStderr } : {}),
          });
        },
        connect: (port) => connectEndpoint({ host: '127.0.0.1', port }),
        serviceUrl(name) {
          if (!relay) throw new Error(`no service named '${name}' in this session (given: none)`);
          return `http://127.0.0.1:${relay.port(name)}`;
        },
        async endAgentPhase() {
          await relay?.close();
          await sweep();
        },
        async startVerifyPhase(services) {
          if (phase === 'verify') return;
          phase = 'verify';
          await relay?.close();
          relay = await openRelay(services);
        },
        async close() {
          await relay?.close();
          await sweep();
          await executor?.close();
          await sockets?.remove();
        },
        // No environment of its own: the path is this machine's, every part of it checked for links.
        artifactOutside: async (inside) => ({ root: '/', parts: inside.split('/').filter((part) => part !== '') }),
      };
    },
  };
}
