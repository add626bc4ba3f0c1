// Which backend a run uses: the one named, or the best this machine has. Each backend is
// described once, here (its name, what it is, whether it isolates, whether it is tried when none
// is named, its factory); the settings, the command lines' help and the micro-agents' launcher
// read this table, and one chooser serves runs and micro-agents. The room for a new backend is a
// row here and its implementation beside this file.
import { BackendUnavailableError, type Backend } from './backend.ts';
import { containerBackend, type ContainerBackendOptions } from './container.ts';
import { localBackend } from './local.ts';
import { sandboxBackend } from './sandbox.ts';

/** How the backends are set up where the user says (the container's engine and bounds). */
export interface BackendOptions {
  container?: ContainerBackendOptions;
}

export interface BackendDescriptor {
  readonly name: string;
  /** In the settings: package.json's `enumDescriptions` of `belay.runner.backend`. */
  readonly description: string;
  /** In `belay run --help`: what `--backend <name>` means. */
  readonly usage: string;
  /** Whether agents cannot reach the host's files, network or privileges (the backend's `isolated`). */
  readonly isolated: boolean;
  /** Tried, in the table's order, when no backend is named. Never a backend that does not isolate. */
  readonly automatic: boolean;
  readonly make: (options: BackendOptions) => Promise<Backend>;
}

export const BACKENDS = [
  {
    name: 'container',
    description:
      "A container of the task's image (podman or docker, see belay.runner.containerEngine): /app, the agent's own folder read-only, no network, no capabilities, bounded CPUs, memory and processes, none of your environment or files; the tests run after everything the agent started is dead, out of its reach.",
    usage: "a container of the task's image (podman or docker), /app, no network, no capabilities, bounded CPUs, memory and processes",
    isolated: true,
    automatic: true,
    make: (options) => containerBackend(options.container),
  },
  {
    name: 'sandbox',
    description: "bubblewrap: only /app writable, the agent's own folder read-only, no network, no capabilities, none of your environment or files; the tests run after the agent, out of its reach.",
    usage: 'bubblewrap, only /app writable, no network, no capabilities',
    isolated: true,
    automatic: true,
    make: () => sandboxBackend(),
  },
  {
    name: 'local',
    description: 'Plain child processes: no isolation (agents reach the whole file system and the network); they still get only the allowlisted environment, capped logs and the timeouts.',
    usage: 'plain child processes, no isolation (only when asked for)',
    isolated: false,
    automatic: false,
    make: async () => localBackend(),
  },
] as const satisfies readonly BackendDescriptor[];

export type BackendName = (typeof BACKENDS)[number]['name'];
export const BACKEND_NAMES: readonly BackendName[] = BACKENDS.map((backend) => backend.name);

/** What `auto` (no backend named) means, in the settings. */
export const AUTOMATIC_DESCRIPTION = 'The best isolating backend that works here: a container when podman or docker runs, else the bubblewrap sandbox; never local (a run is refused instead, saying how to choose local).';

export function isBackendName(name: string): name is BackendName {
  return (BACKEND_NAMES as readonly string[]).includes(name);
}

export function backendDescriptor(name: BackendName): BackendDescriptor {
  return BACKENDS.find((backend) => backend.name === name)!;
}

/** Whether the place chosen by `name` isolates (`auto` chooses only backends that do). */
export function isolates(name: BackendName | 'auto'): boolean {
  return name === 'auto' || backendDescriptor(name).isolated;
}

/**
 * The one choice of a place to run, for runs and micro-agents alike: the backend named (`make`
 * is told it was named, to say how to choose another), or else each automatic backend in the
 * table's order until one works. A backend that does not work here throws
 * BackendUnavailableError; when none works, the error says why each failed (`noneWorks` words it).
 */
export async function chooseBackend<T>(name: BackendName | 'auto' | undefined, make: Record<BackendName, (named: boolean) => Promise<T>>, noneWorks: (reasons: string) => string): Promise<T> {
  if (name !== undefined && name !== 'auto') return make[name](true);
  const reasons: string[] = [];
  for (const candidate of BACKENDS) {
    if (!candidate.automatic) continue;
    try {
      return await make[candidate.name](false);
    } catch (error) {
      if (!(error instanceof BackendUnavailableError)) throw error;
      reasons.push(error.message);
    }
  }
  throw new BackendUnavailableError('isolation', noneWorks(reasons.join('; ')));
}

/**
 * The backend named, or (none named) the first isolating one that works here. Throws
 * BackendUnavailableError saying why each failed (callers add how to choose `local` where they are).
 */
export async function pickBackend(name?: BackendName, options: BackendOptions = {}): Promise<Backend> {
  const make = Object.fromEntries(BACKENDS.map((backend) => [backend.name, () => backend.make(options)])) as Record<BackendName, () => Promise<Backend>>;
  return chooseBackend(name, make, (reasons) => `no isolating backend works here (${reasons})`);
}
