// Which backend a run uses: the one named, or the best this machine has. The room for a new
// backend is here (its factory) and beside this file (its implementation).
import { BackendUnavailableError, type Backend } from './backend.ts';
import { containerBackend, type ContainerBackendOptions } from './container.ts';
import { localBackend } from './local.ts';
import { sandboxBackend } from './sandbox.ts';

export const BACKEND_NAMES = ['container', 'sandbox', 'local'] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];

/** How the backends are set up where the user says (the container's engine and bounds). */
export interface BackendOptions {
  container?: ContainerBackendOptions;
}

/** Isolating backends, best first, tried when none is named. The local backend is never chosen for the user. */
const AUTOMATIC: { name: BackendName; make: (options: BackendOptions) => Promise<Backend> }[] = [
  { name: 'container', make: (options) => containerBackend(options.container) },
  { name: 'sandbox', make: () => sandboxBackend() },
];

export function isBackendName(name: string): name is BackendName {
  return (BACKEND_NAMES as readonly string[]).includes(name);
}

/**
 * The backend named, or (none named) the first isolating one that works here. Throws
 * BackendUnavailableError saying why each failed (callers add how to choose `local` where they are).
 */
export async function pickBackend(name?: BackendName, options: BackendOptions = {}): Promise<Backend> {
  if (name === 'local') return localBackend();
  if (name !== undefined) return AUTOMATIC.find((candidate) => candidate.name === name)!.make(options);
  const reasons: string[] = [];
  for (const candidate of AUTOMATIC) {
    try {
      return await candidate.make(options);
    } catch (error) {
      if (!(error instanceof BackendUnavailableError)) throw error;
      reasons.push(error.message);
    }
  }
  throw new BackendUnavailableError('isolation', `no isolating backend works here (${reasons.join('; ')})`);
}
