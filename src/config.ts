import * as vscode from 'vscode';
import * as z from 'zod';

/** Belay's settings as one typed, validated object; invalid values fall back to the defaults. */
const settingsSchema = z.object({
  cuesHome: z.string().catch(''),
  cuesNotifications: z.boolean().catch(true),
  cuesTerminalPath: z.boolean().catch(true),
  sessionRoot: z.string().min(1).catch('.belay/agent'),
  watchInbox: z.boolean().catch(false),
  runTimeoutSeconds: z.number().min(1).max(3600).catch(30),
  // The task runner: agent lists are validated entry by entry in src/runner/agents.ts.
  agents: z.unknown(),
  microAgents: z.unknown(),
  runnerBackend: z.enum(['sandbox', 'local']).catch('sandbox'),
  runnerConcurrency: z.number().int().min(1).max(16).catch(2),
  runnerRunsDir: z.string().min(1).catch('.belay/runs'),
  runnerMaxSteps: z.number().int().positive().catch(200),
});
export type Settings = z.infer<typeof settingsSchema>;

export class Config implements vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<Settings>();
  /** Fires with the new settings whenever a `belay.*` setting changes. */
  readonly onDidChange = this.changed.event;
  private readonly subscription: vscode.Disposable;
  private current: Settings;

  constructor() {
    this.current = Config.read();
    this.subscription = vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration('belay')) return;
      this.current = Config.read();
      this.changed.fire(this.current);
    });
  }

  get settings(): Settings {
    return this.current;
  }

  private static read(): Settings {
    const c = vscode.workspace.getConfiguration('belay');
    return settingsSchema.parse({
      cuesHome: c.get('cues.home'),
      cuesNotifications: c.get('cues.notifications'),
      cuesTerminalPath: c.get('cues.terminalPath'),
      sessionRoot: c.get('blocks.sessionRoot'),
      watchInbox: c.get('blocks.watchInbox'),
      runTimeoutSeconds: c.get('blocks.runTimeoutSeconds'),
      agents: c.get('agents'),
      microAgents: c.get('microAgents'),
      runnerBackend: c.get('runner.backend'),
      runnerConcurrency: c.get('runner.concurrency'),
      runnerRunsDir: c.get('runner.runsDir'),
      runnerMaxSteps: c.get('runner.maxSteps'),
    });
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}
