// What a task's own settings change in its run's environment: `[environment.env]`'s variables
// under Belay's own in every program of both phases, and each phase's network (network_mode):
// no network as always; `allowlist` (or `public`, when the person allows it) through Belay's
// egress proxy, a host service shown to the phase like the LLM gateway to the agent phase: the
// agent phase and each verify phase have a proxy of their own, each with its phase's policy.
import * as path from 'node:path';
import { errorMessage } from '../../../shared/errors.ts';
import type { BackendSession, ServiceSpec, SpawnSpec } from '../backends/backend.ts';
import { RunFailure } from '../records/events.ts';
import { socketFolder, type SocketFolder } from '../backends/services.ts';
import { describePolicy, NO_NETWORK, stepVerifierNetwork, type PhasePolicy } from '../network/policy.ts';
import { EgressProxy, type LogPhase, type Resolver } from '../network/proxy.ts';
import { configFileName } from '../tasks/layout.ts';
import type { Task } from '../tasks/task.ts';
import type { TaskStep } from '../tasks/taskSteps.ts';

/** The service name the egress proxy has inside a run. */
export const EGRESS_SERVICE = 'egress';
/** Where a run's proxy logs every attempt, in its run folder. */
export const NETWORK_LOG_FILE = 'network.jsonl';

/** A session whose programs get the task's variables under the ones Belay gives each. */
export function withTaskEnv(session: BackendSession, env: Record<string, string> | undefined): BackendSession {
  if (!env || Object.keys(env).length === 0) return session;
  const spawn = (spec: SpawnSpec) => session.spawn({ ...spec, env: { ...env, ...spec.env } });
  return new Proxy(session, {
    get(target, key) {
      if (key === 'spawn') return spawn;
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

export interface RunNetworkOptions {
  task: Task;
  runDir: string;
  /** The person allows `public` (belay.runner.allowPublicNetwork, --allow-public-network). */
  allowPublic: boolean;
  /** Whether the backend can keep the agent's own sockets off the network (the local one cannot). */
  isolated: boolean;
  note: (message: string) => void;
  /** Tests only: names mapped to local servers. */
  resolve?: Resolver;
  /**
   * A grading with no agent phase (a regrade): only the verifier's policy is read, and a refusal
   * ends with these words instead of "the run did not start".
   */
  verifierOnly?: { refused: string };
}

/** One phase's egress: its proxy and how programs find it; no service for a no-network phase. */
export interface PhaseNetwork {
  /** The policy the phase runs under. */
  policy: PhasePolicy;
  /** The proxy's socket, shown to the phase as the service EGRESS_SERVICE. */
  service: ServiceSpec | undefined;
  /** The proxy variables for the phase's programs, given the service's URL inside. */
  environment(serviceUrl: string): Record<string, string>;
  close(): Promise<void>;
}

/** A run's egress: the agent phase's proxy, open for the whole run, and each verify phase's own. */
export interface RunNetwork {
  agent: PhaseNetwork;
  /** The policy every verify phase runs under. */
  verifier: PhasePolicy;
  /**
   * Starts a verify phase's own proxy (nothing for a no-network verifier), under the policy of
   * `step` when it has one of its own. Called once the agent phase is over, so no process of the
   * agent's is alive to reach it; the caller closes it when the phase ends (`close` closes what is
   * still open).
   */
  openVerifier(step?: TaskStep): Promise<PhaseNetwork>;
  close(): Promise<void>;
}

/** Thrown when the task asks for what the person has not allowed; the run does not start. */
export class NetworkRefused extends Error {
  override name = 'NetworkRefused';
}

/**
 * Reads the task's network for this run: refuses `public` unless allowed, says what the backend
 * cannot enforce, and starts the proxy an allowlist (or allowed public) agent phase goes through;
 * a verify phase's own proxy starts when that phase does (`openVerifier`).
 */
export async function openRunNetwork(options: RunNetworkOptions): Promise<RunNetwork> {
  const { task, note } = options;
  const network = task.network ?? NO_NETWORK;
  const config = configFileName(task.layout);
  const policies = { agent: options.verifierOnly ? NO_NETWORK.agent : network.agent, verifier: network.verifier };
  for (const phase of ['agent', 'verifier'] as const) {
    const policy = policies[phase];
    if (policy.mode !== 'public' || options.allowPublic) continue;
    if (!policy.legacy) {
      const field = task.layout === 'repo' ? `the ${PHASE_WORDS[phase]}'s network_mode` : `[${phase}] network_mode`;
      throw new NetworkRefused(`${path.join(task.dir, config)}: ${field} "public" needs the public network, which belay.runner.allowPublicNetwork (--allow-public-network) does not allow; ${options.verifierOnly?.refused ?? 'the run did not start'}`);
    }
    note(`the task says allow_internet = true, but belay.runner.allowPublicNetwork is off: the ${PHASE_WORDS[phase]} has no network`);
    policies[phase] = { mode: 'no-network', allowedHosts: [] };
  }
  for (const phase of ['agent', 'verifier'] as const) {
    const policy = policies[phase];
    if (policy.mode === 'no-network') continue;
    if (!options.isolated) {
      note(`${PHASE_WORDS[phase]} network: ${describePolicy(policy)} — the local backend cannot enforce it: the ${phase === 'agent' ? "agent's" : "tests'"} own connections reach anything; only programs that honour HTTP_PROXY go through Belay's proxy and its log (use the sandbox or container backend to enforce it)`);
    } else {
      note(`${PHASE_WORDS[phase]} network: ${describePolicy(policy)}, through Belay's proxy (HTTP and HTTPS only; every attempt in ${NETWORK_LOG_FILE})`);
    }
  }
  // A multi-step task's step may say its own verifier's network, resolved before the task's.
  const stepPolicies = new Map<number, PhasePolicy>();
  for (const step of task.steps?.steps ?? []) {
    const policy = stepVerifierNetwork(step.verifierNetwork, policies.verifier);
    if (!policy) continue;
    if (policy.mode === 'public' && !options.allowPublic) {
      throw new NetworkRefused(`${path.join(task.dir, config)}: step '${step.name}': verifier network_mode "public" needs the public network, which belay.runner.allowPublicNetwork (--allow-public-network) does not allow; ${options.verifierOnly?.refused ?? 'the run did not start'}`);
    }
    stepPolicies.set(step.index, policy);
    if (policy.mode !== 'no-network') note(`step '${step.name}': verify phase network: ${describePolicy(policy)}${options.isolated ? `, through Belay's proxy (every attempt in ${NETWORK_LOG_FILE})` : ' — the local backend cannot enforce it'}`);
  }
  // One cap on the lines of network.jsonl, whichever phase's proxy writes them.
  const logLines = { count: 0 };
  const open = new Set<PhaseNetwork>();
  const start = async (phase: 'agent' | 'verifier', policy: PhasePolicy = policies[phase]): Promise<PhaseNetwork> => {
    const opened = await phaseNetwork(phase, policy, { ...options, logLines });
    if (opened.service === undefined) return opened;
    open.add(opened);
    return { ...opened, close: () => opened.close().finally(() => open.delete(opened)) };
  };
  const agent = await start('agent');
  return {
    agent,
    verifier: policies.verifier,
    openVerifier: (step) => start('verifier', (step ? stepPolicies.get(step.index) : undefined) ?? policies.verifier),
    close: async () => {
      const closing = await Promise.allSettled([...open].map((phase) => phase.close()));
      open.clear();
      const failed = closing.find((outcome) => outcome.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };
}

/** What opens a verify phase's own proxy (a run's network, or a regrade's). */
export interface VerifierNetworkSource {
  openVerifier(): Promise<PhaseNetwork>;
}

/** A verify phase's network once started: its programs' variables, and the end of its proxy. */
export interface VerifyPhaseNetwork {
  /** The proxy variables for the phase's programs (none for a no-network verifier). */
  env: Record<string, string>;
  /** Closes the phase's proxy; a failure is noted, never thrown. */
  close(): Promise<void>;
}

/**
 * Starts the verify phase with its network, on every grading path (a run's verifier, a regrade's,
 * a repository task's tests): the phase's own proxy started now that nothing of the agent's is
 * alive (none for a no-network verifier), given to the session's verify phase as its only service
 * (never the gateway). The caller closes it when the phase's programs are done.
 */
export async function startVerifyPhase(session: BackendSession, network: VerifierNetworkSource, note: (message: string) => void): Promise<VerifyPhaseNetwork> {
  const phase = await network.openVerifier().catch((error: unknown) => {
    throw new RunFailure('harness_error', `the verify phase's network proxy could not be started: ${errorMessage(error)}`);
  });
  const close = () => phase.close().catch((error: unknown) => note(`the verify phase's network proxy could not be closed: ${errorMessage(error)}`));
  try {
    await session.startVerifyPhase(phase.service ? [phase.service] : []);
    return { env: phase.service ? phase.environment(session.serviceUrl(EGRESS_SERVICE)) : {}, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** `startVerifyPhase`, `body` run with the proxy's variables, and the proxy closed after. */
export async function inVerifyPhase<T>(session: BackendSession, network: VerifierNetworkSource, note: (message: string) => void, body: (env: Record<string, string>) => Promise<T>): Promise<T> {
  const phase = await startVerifyPhase(session, network, note);
  try {
    return await body(phase.env);
  } finally {
    await phase.close();
  }
}

const PHASE_WORDS = { agent: 'agent phase', verifier: 'verify phase' } as const;

/** A phase's proxy on a socket of its own, logging to the run's network.jsonl as `phase`. */
async function phaseNetwork(phase: LogPhase, policy: PhasePolicy, options: RunNetworkOptions & { logLines: { count: number } }): Promise<PhaseNetwork> {
  if (policy.mode === 'no-network') return { policy, service: undefined, environment: () => ({}), close: async () => undefined };
  const folder: SocketFolder = await socketFolder();
  const socketPath = path.join(folder.path, 'egress.sock');
  const proxy = new EgressProxy({ phase, policy, logFile: path.join(options.runDir, NETWORK_LOG_FILE), logLines: options.logLines, ...(options.resolve ? { resolve: options.resolve } : {}) });
  try {
    await proxy.listen(socketPath);
  } catch (error) {
    await folder.remove();
    throw error;
  }
  let closed: Promise<void> | undefined;
  return {
    policy,
    service: { name: EGRESS_SERVICE, socketPath },
    environment: (url) => {
      const noProxy = '127.0.0.1,localhost,::1';
      return { HTTP_PROXY: url, HTTPS_PROXY: url, http_proxy: url, https_proxy: url, NO_PROXY: noProxy, no_proxy: noProxy };
    },
    close: () => {
      closed ??= (async () => {
        await proxy.close();
        if (proxy.unlogged > 0) options.note(`${proxy.unlogged} further network attempts of the ${PHASE_WORDS[phase]} were not written to ${NETWORK_LOG_FILE} (its line limit)`);
        await folder.remove();
      })();
      return closed;
    },
  };
}
