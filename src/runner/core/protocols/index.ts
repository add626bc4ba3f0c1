// The protocols Belay speaks with agents that run on tasks, by the name records and settings
// use. The room for a new protocol is here and beside this file.
import type { AgentProtocol } from '../protocol.ts';
import type { Protocol } from '../records.ts';
import { sdk1 } from './sdk1.ts';
import { sdk2 } from './sdk2.ts';

const BY_NAME: Record<Protocol, AgentProtocol> = { sdk1, sdk2 };

export function protocolNamed(name: Protocol): AgentProtocol {
  return BY_NAME[name];
}
