// The real coding CLIs for the tests: installed through Belay's own install path (install.ts) into
// the repository's .cache (which CI keeps between its steps), pinned as Belay pins them.
import * as path from 'node:path';
import { ensureInstalled, type InstalledCli } from '../../../src/runner/core/protocols/installed/install.ts';
import type { InstalledAgent } from '../../../src/runner/core/protocols/installed/installedAgent.ts';
import { repoRoot } from './helpers.ts';

/** The tests' cache of installed CLIs (BELAY_AGENT_CACHE overrides it). */
export function testAgentCache(): string {
  return process.env.BELAY_AGENT_CACHE ?? path.join(repoRoot, '.cache', 'belay', 'agents');
}

/** `agent`'s pinned CLI, installed first when the cache lacks it. */
export function installedCli(agent: InstalledAgent): Promise<InstalledCli> {
  return ensureInstalled(agent, { cache: testAgentCache() });
}
