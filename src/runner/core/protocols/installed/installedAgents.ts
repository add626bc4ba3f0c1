// The installed coding CLIs by protocol name: a new one is a file beside this one, its name in
// records.ts's INSTALLED_PROTOCOLS, a row here and its descriptor's row.
import type { InstalledProtocol } from '../../records/records.ts';
import { claudeCode } from './claudeCode.ts';
import { codex } from './codex.ts';
import { geminiCli } from './geminiCli.ts';
import { opencode } from './opencode.ts';
import type { InstalledAgent } from './installedAgent.ts';

export const INSTALLED_AGENTS: Readonly<Record<InstalledProtocol, InstalledAgent>> = {
  'claude-code': claudeCode,
  codex,
  'gemini-cli': geminiCli,
  opencode,
};

/** The installed CLI a protocol names, or undefined for the SDK protocols. */
export function installedAgent(protocol: string): InstalledAgent | undefined {
  return (INSTALLED_AGENTS as Record<string, InstalledAgent | undefined>)[protocol];
}
