import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import type { CuesService } from './service.ts';
import { CuesView } from './view.ts';

// "Open in Editor": an agent's conversation, with the cues it waits on, in an editor tab (one per
// agent), where long prompts, tables and code have room. The same page as the sidebar on the one
// webview host, scoped to the agent. Loaded on the first "Open in Editor".

export class CuePanels implements vscode.Disposable {
  static readonly viewType = 'belay.cues.editor';
  readonly #ctx: BelayContext;
  readonly #service: CuesService;
  readonly #open = new Map<string, { panel: vscode.WebviewPanel; page: CuesView }>();

  constructor(ctx: BelayContext, service: CuesService) {
    this.#ctx = ctx;
    this.#service = service;
  }

  /** Shows the agent's panel (making it when there is none) and focuses one of its cues. */
  open(agentId: string, requestId?: string): void {
    let entry = this.#open.get(agentId);
    if (entry) {
      entry.panel.reveal(entry.panel.viewColumn, false);
    } else {
      const panel = vscode.window.createWebviewPanel(CuePanels.viewType, `Cues: ${agentId || 'agent'}`, { viewColumn: vscode.ViewColumn.Active, preserveFocus: false }, { enableFindWidget: true });
      const page = new CuesView(this.#ctx, this.#service, panel, { scope: { agentId } });
      entry = { panel, page };
      this.#open.set(agentId, entry);
      panel.onDidDispose(() => {
        if (this.#open.get(agentId)?.panel === panel) this.#open.delete(agentId);
      });
    }
    if (requestId) entry.page.focus(requestId);
  }

  dispose(): void {
    for (const { panel } of [...this.#open.values()]) panel.dispose();
    this.#open.clear();
  }
}
