import * as vscode from 'vscode';
import * as z from 'zod';

/**
 * Belay's settings through one typed accessor. Each setting's default is declared once, in
 * package.json (`contributes.configuration`): VS Code applies it, and a value that fails its schema
 * here falls back to it. Resource-scoped settings are read for the folder they apply to.
 */
const schemas = {
  'cues.home': z.string(),
  'cues.notifications': z.boolean(),
  'cues.terminalPath': z.boolean(),
  'blocks.sessionRoot': z.string().min(1),
  'blocks.watchInbox': z.boolean(),
  'blocks.runTimeoutSeconds': z.number().min(1).max(3600),
  // Agent lists are validated entry by entry by the runner, which names each bad entry.
  agents: z.unknown(),
  microAgents: z.unknown(),
  'runner.backend': z.enum(['sandbox', 'local']),
  'runner.concurrency': z.number().int().min(1).max(16),
  'runner.runsDir': z.string().min(1),
  'runner.maxSteps': z.number().int().positive(),
} as const;

export type SettingKey = keyof typeof schemas;
export type SettingValue<K extends SettingKey> = z.infer<(typeof schemas)[K]>;
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
    const parsed = schemas[key].safeParse(section.get(key));
    if (parsed.success) return parsed.data as SettingValue<K>;
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
