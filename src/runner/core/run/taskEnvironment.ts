// What a task's own settings change in its run's environment: `[environment.env]`'s variables
// under Belay's own in every program of both phases, and each phase's network (network_mode):
// no network as always; `allowlist` (or `public`, when the person allows it) through Belay's
// egress proxy, a host service shown to the agent phase like the LLM gateway.
import * as path from 'node:path';
import type { BackendSession, SpawnSpec } from '../backends/backend.ts';
import { socketFolder, type SocketFolder } from '../backends/services.ts';
import { describePolicy, NO_NETWORK, type PhasePolicy } from '../network/policy.ts';
import { EgressProxy, type Resolver } from '../network/proxy.ts';
import type { Task } from '../tasks/task.ts';

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
}

/** The agent phase's egress: the proxy and how programs find it; none for a no-network phase. */
export interface RunNetwork {
  /** The policy the agent phase runs under. */
  agent: PhasePolicy;
  /** The proxy's socket, shown to the agent phase as the service EGRESS_SERVICE. */
  service: { name: string; socketPath: string } | undefined;
  /** The proxy variables for agent-phase programs, given the service's URL inside. */
  environment(serviceUrl: string): Record<string, string>;
  close(): Promise<void>;
}

/** Thrown when the task asks for what the person has not allowed; the run does not start. */
export class NetworkRefused extends Error {
  override name = 'NetworkRefused';
}

/**
 * Reads the task's network for this run: refuses `public` unless allowed, says what the backend
 * cannot enforce, and starts the proxy an allowlist (or allowed public) agent phase goes through.
 */
export async function openRunNetwork(options: RunNetworkOptions): Promise<RunNetwork> {
  const { task, note } = options;
  const network = task.network ?? NO_NETWORK;
  const config = task.layout === 'current' ? 'task.toml' : 'task.yaml';
  let agent = network.agent;
  for (const [phase, policy] of [['agent', network.agent], ['verifier', network.verifier]] as const) {
    if (policy.mode !== 'public' || options.allowPublic) continue;
    if (!policy.legacy) {
      throw new NetworkRefused(`${path.join(task.dir, config)}: [${phase}] network_mode "public" needs the public network, which belay.runner.allowPublicNetwork (--allow-public-network) does not allow; the run did not start`);
    }
    if (phase === 'agent') {
      note(`the task says allow_internet = true, but belay.runner.allowPublicNetwork is off: the agent phase has no network`);
      agent = { mode: 'no-network', allowedHosts: [] };
    }
  }
  if (network.verifier.mode !== 'no-network' && !(network.verifier.mode === 'public' && network.verifier.legacy && !options.allowPublic)) {
    note(`the task asks the verify phase for ${describePolicy(network.verifier)}; Belay's verify phase has no network: the tests run with none`);
  }
  if (agent.mode === 'no-network') return { agent, service: undefined, environment: () => ({}), close: async () => undefined };
  if (!options.isolated) {
    note(`agent phase network: ${describePolicy(agent)} — the local backend cannot enforce it: the agent's own connections reach anything; only programs that honour HTTP_PROXY go through Belay's proxy and its log (use the sandbox or container backend to enforce it)`);
  } else {
    note(`agent phase network: ${describePolicy(agent)}, through Belay's proxy (HTTP and HTTPS only; every attempt in ${NETWORK_LOG_FILE})`);
  }
  const folder: SocketFolder = await socketFolder();
  const socketPath = path.join(folder.path, 'egress.sock');
  const proxy = new EgressProxy({ phase: 'agent', policy: agent, logFile: path.join(options.runDir, NETWORK_LOG_FILE), ...(options.resolve ? { resolve: options.resolve } : {}) });
  try {
    await proxy.listen(socketPath);
  } catch (error) {
    await folder.remove();
    throw error;
  }
  let closed: Promise<void> | undefined;
  return {
    agent,
    service: { name: EGRESS_SERVICE, socketPath },
    environment: (url) => {
      const noProxy = '127.0.0.1,localhost,::1';
      return { HTTP_PROXY: url, HTTPS_PROXY: url, http_proxy: url, https_proxy: url, NO_PROXY: noProxy, no_proxy: noProxy };
    },
    close: () => {
      closed ??= (async () => {
        await proxy.close();
        if (proxy.unlogged > 0) note(`${proxy.unlogged} further network attempts were not written to ${NETWORK_LOG_FILE} (its line limit)`);
        await folder.remove();
      })();
      return closed;
    },
  };
}
