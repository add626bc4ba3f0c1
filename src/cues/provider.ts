import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { capitalize, waitingPhrase, type CuesSnapshot } from './core/model.ts';
import type { CuesService } from './service.ts';
import type { CuesView } from './view.ts';

/**
 * The Cues webview view as activation registers it: its badge, whether it is visible and a way to
 * reveal one cue, which the notifications need from the start. What the page shows and does
 * (./view.ts on the webview host) is loaded when the view is first resolved.
 */
export class CuesViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  static readonly viewId = 'belay.cues';
  readonly #ctx: BelayContext;
  readonly #service: CuesService;
  readonly #subscription: vscode.Disposable;
  #view: vscode.WebviewView | undefined;
  #page: CuesView | undefined;
  /** A cue to focus once the page exists ("Open" from a notification before the view was ever shown). */
  #focusWanted: string | undefined;

  constructor(ctx: BelayContext, service: CuesService) {
    this.#ctx = ctx;
    this.#service = service;
    this.#subscription = service.onDidChange((snapshot) => this.#updateBadge(snapshot));
  }

  get visible(): boolean {
    return this.#view?.visible ?? false;
  }

  async resolveWebviewView(view: vscode.WebviewView): Promise<void> {
    const { CuesView } = await import('./view.ts');
    this.#page?.dispose();
    this.#view = view;
    this.#page = new CuesView(this.#ctx, this.#service, view, { onReady: () => this.#ctx.markViewResolved(CuesViewProvider.viewId) });
    this.#updateBadge(this.#service.snapshot);
    if (this.#focusWanted) this.#page.focus(this.#focusWanted);
    this.#focusWanted = undefined;
    view.onDidDispose(() => {
      if (this.#view !== view) return;
      this.#view = undefined;
      this.#page = undefined;
    });
  }

  /** Shows the view and, once it is drawn, focuses one cue (the page holds it until the card is there). */
  async reveal(requestId?: string): Promise<void> {
    this.#focusWanted = requestId;
    await vscode.commands.executeCommand(`${CuesViewProvider.viewId}.focus`);
    if (requestId && this.#page) {
      this.#page.focus(requestId);
      this.#focusWanted = undefined;
    }
  }

  #updateBadge(snapshot: CuesSnapshot): void {
    if (!this.#view) return;
    const n = snapshot.waitingCount;
    // A zero badge rather than `undefined`: clearing with undefined left the container's badge
    // showing while the view was hidden (seen in code-server 4.103); a zero badge is drawn as none.
    this.#view.badge = n > 0 ? { value: n, tooltip: capitalize(waitingPhrase(n)) } : { value: 0, tooltip: '' };
  }

  dispose(): void {
    this.#subscription.dispose();
    this.#page?.dispose();
  }
}
