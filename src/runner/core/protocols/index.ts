// The protocols Belay speaks with agents that run on tasks, by the name records and settings
// use. The room for a new protocol is here and beside this file.
import type { AgentProtocol } from './agentProtocol.ts';
import { PROTOCOLS, type Protocol } from '../records/records.ts';
import { sdk1 } from './sdk1.ts';
import { sdk2 } from './sdk2.ts';
import { sdk3 } from './sdk3.ts';
import { INSTALLED_AGENTS } from './installed/installedAgents.ts';
import { installedProtocol } from './installedCli.ts';

const BY_NAME: Record<Protocol, AgentProtocol> = {
  sdk1,
  sdk2,
  sdk3,
  ...(Object.fromEntries(Object.values(INSTALLED_AGENTS).map((agent) => [agent.name, installedProtocol(agent)])) as Record<keyof typeof INSTALLED_AGENTS, AgentProtocol>),
};

export function protocolNamed(name: Protocol): AgentProtocol {
  return BY_NAME[name];
}

/** Whether `name` is the name of a protocol Belay speaks. */
export function isProtocol(name: unknown): name is Protocol {
  return (PROTOCOLS as readonly unknown[]).includes(name);
}
