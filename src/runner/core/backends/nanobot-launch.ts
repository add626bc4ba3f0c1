// Where a nanobot micro-agent runs, chosen as a run's backend is: in a container when an engine
// works here (and has the base image), else in the bubblewrap sandbox, never on the host unless
// the person chose `local` by name. The chat and `belay nanobot` both come through here.
import { BackendUnavailableError } from './backend.ts';
import type { BackendName } from './choose.ts';
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
}

/** The local label: shown wherever a micro-agent runs unisolated. */
export const LOCAL_MICRO_AGENT_LABEL = 'local (no isolation: the micro-agent reaches your files and the network)';

/**
 * The launcher for the place asked for, or 'local' when `local` was named. Throws
 * BackendUnavailableError (saying why each isolating place failed, and how to choose local)
 * when none works.
 */
export async function microAgentLauncher(place: MicroAgentPlace): Promise<MicroAgentLauncher | 'local'> {
  const backend = place.backend ?? 'auto';
  if (backend === 'local') return 'local';
  const reasons: string[] = [];
  if (backend === 'auto' || backend === 'container') {
    try {
      const engine = await detectEngine({ ...(place.engine && place.engine !== 'auto' ? { engine: place.engine } : {}), ...(place.env ? { env: place.env } : {}) });
      // Named, the container is used as it is (its launch says when the base image is missing); chosen
      // by itself, only with the image it needs.
      if (backend === 'container' || (await engine.imageExists(BASE_IMAGE))) {
        return { label: `container (${engine.label}: no network, no capabilities)`, ...containerLauncher({ engine, agentFolders: place.agentFolders }) };
      }
      reasons.push(`container: ${BASE_IMAGE} is not built (belay image build-base)`);
    } catch (error) {
      if (!(error instanceof EngineUnavailableError)) throw error;
      if (backend === 'container') throw new BackendUnavailableError('container', `${error.message}; choose the sandbox, or local to run the micro-agent without isolation`);
      reasons.push(`container: ${error.message}`);
    }
  }
  try {
    return await sandboxLauncher({ agentFolders: place.agentFolders });
  } catch (error) {
    if (!(error instanceof BackendUnavailableError)) throw error;
    if (backend === 'sandbox') throw new BackendUnavailableError('sandbox', `${error.message.replace(/^sandbox unavailable: /, '')}; choose local to run the micro-agent without isolation`);
    reasons.push(error.message);
  }
  throw new BackendUnavailableError('isolation', `no isolated place for the micro-agent works here (${reasons.join('; ')}); choose local to run it without isolation`);
}
