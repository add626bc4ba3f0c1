// Agents and micro-agents as the editor knows them: from settings (`belay.agents`,
// `belay.microAgents`) and from `belay-agents.json` files in the workspace.
// Secrets never live here: an env value (or a provider key) may say `${secret:NAME}` (secrets.ts),
// filled in from SecretStorage at the moment a run starts.
import * as path from 'node:path';
import * as z from 'zod';
import { errorMessage } from '../../../shared/errors.ts';
import { shellQuote } from '../../../shared/shell.ts';
import { LlmSettingSchema } from './llmSettings.ts';
import { TerminalConfigSchema, type TerminalConfig } from './nanobotConfig.ts';
import { INSTALLED_PROTOCOLS, PROTOCOLS } from '../records/records.ts';
import { fillEnv, fillSecrets } from './secrets.ts';

/** Agents declared in the workspace, beside the settings: `{ "agents": [...], "microAgents": [...] }`. */
export const AGENTS_FILE = 'belay-agents.json';

const nameSchema = z.string().trim().min(1, 'an agent needs a name');

export const AgentSchema = z.object({
  name: nameSchema,
  /**
   * Shell command; `${node}`: the Node that runs VS Code's extension host; `${dir}`: the declaring
   * folder. Left out (empty) only for an installed CLI's protocol: Belay installs the pinned CLI.
   */
  command: z.string().trim().default(''),
  /** Never guessed: agents started in the wrong mode fail at step 0. */
  protocol: z.enum(PROTOCOLS),
  env: z.record(z.string(), z.string()).default({}),
  /** Working directory of the agent; relative to the workspace folder (or the agents file). */
  cwd: z.string().optional(),
  /** This agent's model API through the gateway, over `belay.runner.llm`. */
  llm: LlmSettingSchema.optional(),
}).superRefine((agent, context) => {
  if (agent.command === '' && !(INSTALLED_PROTOCOLS as readonly string[]).includes(agent.protocol)) context.addIssue({ code: 'custom', path: ['command'], message: 'an agent needs a command' });
});
export type AgentSetting = z.infer<typeof AgentSchema>;

export const MicroAgentSchema = TerminalConfigSchema.omit({ enabled: true }).extend({
  name: nameSchema,
  command: z.string().trim().min(1, 'a micro-agent needs a command'),
  cwd: z.string().optional(),
});
export type MicroAgentSetting = z.infer<typeof MicroAgentSchema>;

export const AgentsFileSchema = z.object({
  agents: z.array(z.unknown()).default([]),
  microAgents: z.array(z.unknown()).default([]),
});

/** An agent ready to run: where it came from and the folder its command runs in. */
export interface Agent extends AgentSetting {
  source: string;
  baseDir: string;
}
export interface MicroAgent extends MicroAgentSetting {
  source: string;
  baseDir: string;
}

export interface Parsed<T> {
  items: T[];
  /** What was wrong and where, one line each. */
  problems: string[];
}

function describe(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || 'value'}: ${i.message}`).join('; ');
}

/** Parses a list of entries; a bad entry is reported (with its index) and the rest kept. */
export function parseList<S extends z.ZodType>(
  raw: unknown,
  schema: S,
  source: string,
  baseDir: string,
): Parsed<z.infer<S> & { source: string; baseDir: string }> {
  const items: (z.infer<S> & { source: string; baseDir: string })[] = [];
  const problems: string[] = [];
  if (raw === undefined || raw === null) return { items, problems };
  if (!Array.isArray(raw)) return { items, problems: [`${source}: expected a list`] };
  raw.forEach((entry, index) => {
    const parsed = schema.safeParse(entry);
    if (parsed.success) items.push({ ...(parsed.data as object), source, baseDir } as z.infer<S> & { source: string; baseDir: string });
    else problems.push(`${source}[${index}]: ${describe(parsed.error)}`);
  });
  return { items, problems };
}

/** A `belay-agents.json` file: its agents and micro-agents, relative to its folder. */
export function parseAgentsFile(text: string, file: string): { agents: Parsed<Agent>; microAgents: Parsed<MicroAgent> } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    const problem = `${file}: not valid JSON (${errorMessage(error)})`;
    return { agents: { items: [], problems: [problem] }, microAgents: { items: [], problems: [] } };
  }
  const parsed = AgentsFileSchema.safeParse(raw);
  if (!parsed.success) {
    return { agents: { items: [], problems: [`${file}: ${describe(parsed.error)}`] }, microAgents: { items: [], problems: [] } };
  }
  const dir = path.dirname(file);
  return {
    agents: parseList(parsed.data.agents, AgentSchema, `${file} agents`, dir),
    microAgents: parseList(parsed.data.microAgents, MicroAgentSchema, `${file} microAgents`, dir),
  };
}

/** Later sources do not replace earlier ones with the same name: settings come first. */
export function uniqueByName<T extends { name: string }>(lists: T[][]): T[] {
  const seen = new Set<string>();
  const out: T[] = [];
  for (const list of lists) {
    for (const item of list) {
      if (seen.has(item.name)) continue;
      seen.add(item.name);
      out.push(item);
    }
  }
  return out;
}

/**
 * `${node}` becomes the quoted path of the Node that runs the extension host (so scripted agents
 * need nothing installed), `${dir}` the quoted folder the agent was declared in.
 */
export function expandCommand(command: string, nodePath: string, dir: string): string {
  return command.split('${node}').join(nodeInvocation(nodePath)).split('${dir}').join(shellQuote(dir));
}

/**
 * How a command starts the editor's own runtime. Desktop VS Code runs extensions on Electron,
 * which behaves as Node only with ELECTRON_RUN_AS_NODE set; code-server runs on Node itself.
 */
export function nodeInvocation(nodePath: string, isElectron = process.versions.electron !== undefined): string {
  return isElectron ? `ELECTRON_RUN_AS_NODE=1 ${shellQuote(nodePath)}` : shellQuote(nodePath);
}

export function resolveDir(baseDir: string, cwd: string | undefined): string {
  return cwd === undefined ? baseDir : path.resolve(baseDir, cwd);
}

/** Every text of a micro-agent that may hold `${secret:…}`: env values and provider keys. */
export function microAgentSecretTexts(agent: MicroAgentSetting): string[] {
  return [...Object.values(agent.env), ...Object.values(agent.providers).flatMap((p) => p.apiKeys)];
}

/** The core's terminal config for a micro-agent, with secrets filled and `${node}` expanded. */
export function terminalConfig(agent: MicroAgentSetting & { baseDir: string }, secrets: ReadonlyMap<string, string>, nodePath: string): TerminalConfig {
  const owner = `micro-agent '${agent.name}'`;
  return {
    enabled: true,
    command: expandCommand(agent.command, nodePath, agent.baseDir),
    timeout: agent.timeout,
    protocol: agent.protocol,
    passMedia: agent.passMedia,
    allowInjection: agent.allowInjection,
    env: fillEnv(agent.env, secrets, owner),
    providers: Object.fromEntries(
      Object.entries(agent.providers).map(([name, p]) => [name, { ...p, apiKeys: p.apiKeys.map((k) => fillSecrets(k, secrets, owner)) }]),
    ),
  };
}

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * `--env` values: `KEY=VALUE`, or `KEY` alone to pass that variable on from Belay's own
 * environment (an API key set in the shell, say). Throws with the offending text.
 */
export function parseEnvOptions(options: readonly string[], own: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const option of options) {
    const eq = option.indexOf('=');
    const name = eq < 0 ? option : option.slice(0, eq);
    if (!VARIABLE_NAME.test(name)) throw new Error(`'${option}' is not KEY=VALUE or KEY (a variable name: letters, digits, _)`);
    if (eq >= 0) env[name] = option.slice(eq + 1);
    else if (own[name] !== undefined) env[name] = own[name]!;
    else throw new Error(`${name} is not set in this environment (give it as ${name}=VALUE)`);
  }
  return env;
}
