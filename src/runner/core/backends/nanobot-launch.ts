// Where a nanobot micro-agent runs, chosen by the same chooser as a run's backend (choose.ts): in
// a container when an engine works here (and has the base image), else in the bubblewrap sandbox,
// never on the host unless the person chose `local` by name. The chat and `belay nanobot` both
// come through here.
import { BackendUnavailableError } from './backend.ts';
import { chooseBackend, type BackendName } from './choose.ts';
import { containerLauncher, type MicroAgentLauncher } from './container-nanobot.ts';
import { detectEngine, EngineUnavailableError, type EngineName } from './engine.ts';
import { BASE_IMAGE } from './image-base.ts';
import { sandboxLauncher } from './sandbox-nanobot.ts';

export interface MicroAgentPlace {
  /** The backend asked for; `auto` (or absent): the best isolating one that works here. */
  backend?: BackendName | 'auto';
  engine?: EngineName | 'auto';
  /** Host folders the bot reads (its program, the runtime its command names), read-only at their paths. */
  agentFolders: readonly string[];
  /** The engine client's environment (the CLI's). */
  env?: NodeJS.ProcessEnv;
  /** How long a bot's environment stays without a message (default 5 minutes). */
  idleMs?: number;
}

/** The local label: shown wherever a micro-agent runs unisolated. */
export const LOCAL_MICRO_AGENT_LABEL = 'local (no isolation: the micro-agent reaches your files and the network)';

/**
 * The launcher for the place asked for, or 'local' when `local` was named. Throws
 * BackendUnavailableError (saying why each isolating place failed, and how to choose local)
 * when none works.
 */
export async function microAgentLauncher(place: MicroAgentPlace): Promise<MicroAgentLauncher | 'local'> {
  return chooseBackend<MicroAgentLauncher | 'local'>(
    place.backend,
    {
      container: async (named) => {
        try {
          const engine = await detectEngine({ ...(place.engine && place.engine !== 'auto' ? { engine: place.engine } : {}), ...(place.env ? { env: place.env } : {}) });
          // Named, the container is used as it is (its launch says when the base image is missing); chosen
          // by itself, only with the image it needs.
          if (named || (await engine.imageExists(BASE_IMAGE))) {
            return { label: `container (${engine.label}: no network, no capabilities)`, ...containerLauncher({ engine, agentFolders: place.agentFolders, ...(place.idleMs ? { idleMs: place.idleMs } : {}) }) };
          }
          throw new BackendUnavailableError('container', `${BASE_IMAGE} is not built (belay image build-base)`);
        } catch (error) {
          if (!(error instanceof EngineUnavailableError)) throw error;
          if (named) throw new BackendUnavailableError('container', `${error.message}; choose the sandbox, or local to run the micro-agent without isolation`);
          throw new BackendUnavailableError('container', error.message);
        }
      },
      sandbox: async (named) => {
        try {
          return await sandboxLauncher({ agentFolders: place.agentFolders, ...(place.idleMs ? { idleMs: place.idleMs } : {}) });
        } catch (error) {
          if (!(error instanceof BackendUnavailableError) || !named) throw error;
          throw new BackendUnavailableError('sandbox', `${error.message.replace(/^sandbox unavailable: /, '')}; choose local to run the micro-agent without isolation`);
        }
      },
      local: async () => 'local',
    },
    (reasons) => `no isolated place for the micro-agent works here (${reasons}); choose local to run it without isolation`,
  );
}
