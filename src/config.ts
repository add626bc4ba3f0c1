import * as vscode from 'vscode';

/**
 * Belay's settings through one typed accessor. Each setting's default is declared once, in
 * package.json (`contributes.configuration`): VS Code applies it, and a value that fails its check
 * here falls back to it. Resource-scoped settings are read for the folder they apply to.
 *
 * The checks are plain predicates rather than zod schemas: settings are read while Belay
 * activates, and loading zod alone costs more than an empty extension's whole activation.
 */
type Check<T> = (value: unknown) => value is T;
const string = (min = 0): Check<string> => (v): v is string => typeof v === 'string' && v.length >= min;
const boolean: Check<boolean> = (v): v is boolean => typeof v === 'boolean';
const number = (min: number, max: number, integer = false): Check<number> => (v): v is number =>
  typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max && (!integer || Number.isInteger(v));
const oneOf = <T extends string>(...values: T[]): Check<T> => (v): v is T => typeof v === 'string' && (values as string[]).includes(v);
const strings: Check<string[]> = (v): v is string[] => Array.isArray(v) && v.every((item) => typeof item === 'string');
// Agent lists are validated entry by entry by the runner, which names each bad entry.
const anything: Check<unknown> = (v): v is unknown => true;

const schemas = {
  'cues.home': string(),
  'cues.notifications': boolean,
  'cues.terminalPath': boolean,
  'blocks.sessionRoot': string(1),
  'blocks.watchInbox': boolean,
  'blocks.runTimeoutSeconds': number(1, 3600),
  'blocks.commandSandbox': oneOf('sandboxed', 'unsandboxed'),
  'blocks.commandNetwork': oneOf('ask', 'on', 'off'),
  'blocks.openai.baseUrl': string(),
  'blocks.openai.model': string(),
  agents: anything,
  microAgents: anything,
  'runner.backend': oneOf('auto', 'container', 'sandbox', 'local'),
  'runner.containerEngine': oneOf('auto', 'podman', 'docker'),
  'runner.engineHosts': strings,
  'runner.containerCpus': number(0.01, 1024),
  'runner.containerMemoryMB': number(6, 1024 * 1024 * 1024, true),
  'runner.concurrency': number(1, 16, true),
  'runner.runsDir': string(1),
  'runner.jobsDir': string(1),
  'runner.maxSteps': number(1, Number.MAX_SAFE_INTEGER, true),
  'runner.agentCache': string(),
  'runner.logLimitMB': number(0.01, 1024 * 1024),
  'runner.diskBudgetMB': number(1, 1024 * 1024 * 1024),
  'runner.allowPublicNetwork': boolean,
  'runner.wheelhouse': string(),
  // Checked by the runner's core (llmSettings.ts), which names the bad field.
  'runner.llm': anything,
  'runner.llmPrices': anything,
  'walkthrough.openInDemo': boolean,
} as const;

export type SettingKey = keyof typeof schemas;
export type SettingValue<K extends SettingKey> = (typeof schemas)[K] extends Check<infer T> ? T : never;
/** What a resource-scoped setting is read for: a folder, a file in it, or its URI. */
export type SettingScope = vscode.ConfigurationScope | undefined;

export class Config implements vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.ConfigurationChangeEvent>();
  private readonly subscription: vscode.Disposable;
  private readonly warned = new Set<string>();

  private readonly log: vscode.LogOutputChannel | undefined;

  constructor(log?: vscode.LogOutputChannel) {
    this.log = log;
    this.subscription = vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('belay')) this.changed.fire(e);
    });
  }

  /** The setting's value for `scope` (a workspace folder or a file in it, for resource settings). */
  get<K extends SettingKey>(key: K, scope?: SettingScope): SettingValue<K> {
    const section = vscode.workspace.getConfiguration('belay', scope);
    const value = section.get(key);
    if ((schemas[key] as Check<unknown>)(value)) return value as SettingValue<K>;
    const fallback = section.inspect(key)?.defaultValue as SettingValue<K>;
    const note = `belay.${key}: ${JSON.stringify(section.get(key))} is not a valid value, using ${JSON.stringify(fallback)}`;
    if (!this.warned.has(note)) {
      this.warned.add(note);
      this.log?.warn(note);
    }
    return fallback;
  }

  /** Calls `listener` when any of these settings changes (in any scope), and only then. */
  onDidChange(keys: SettingKey | readonly SettingKey[], listener: () => void): vscode.Disposable {
    const watched = (typeof keys === 'string' ? [keys] : keys).map((k) => `belay.${k}`);
    return this.changed.event((e) => {
      if (watched.some((k) => e.affectsConfiguration(k))) listener();
    });
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}
