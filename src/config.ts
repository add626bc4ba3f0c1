import * as vscode from 'vscode';
import { z } from 'zod';

/** Belay's settings as one typed, validated object; invalid values fall back to the defaults. */
const settingsSchema = z.object({
  cuesHome: z.string().catch(''),
  sessionRoot: z.string().min(1).catch('.belay/agent'),
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
      sessionRoot: c.get('blocks.sessionRoot'),
    });
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}
