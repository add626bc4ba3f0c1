import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { webviewHtml, webviewOptions } from '../ui/webviewHtml.ts';
import { toHostSchema, type ToWebview } from '../webviews/cues/protocol.ts';

/** Cues in the editor. For now: the Cues panel with its empty state. */
export function registerCues(ctx: BelayContext): void {
  ctx.own(vscode.window.registerWebviewViewProvider('belay.cues', new CuesViewProvider(ctx)));
}

function mailboxFolder(setting: string): string {
  if (setting) return setting.replace(/^~(?=$|\/)/, os.homedir());
  return process.env.CUE_HOME || path.join(os.homedir(), '.cue');
}

class CuesViewProvider implements vscode.WebviewViewProvider {
  private readonly ctx: BelayContext;

  constructor(ctx: BelayContext) {
    this.ctx = ctx;
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    const { extensionUri } = this.ctx.extension;
    view.webview.options = webviewOptions(extensionUri);
    view.webview.html = webviewHtml(view.webview, extensionUri, 'cues', 'Cues');
    const post = (message: ToWebview) => void view.webview.postMessage(message);
    const sendState = () =>
      post({ type: 'state', mailbox: mailboxFolder(this.ctx.config.settings.cuesHome), trusted: vscode.workspace.isTrusted });
    const subscriptions = [
      view.webview.onDidReceiveMessage((raw: unknown) => {
        const parsed = toHostSchema.safeParse(raw);
        if (!parsed.success) {
          this.ctx.log.warn(`Cues view: ignored a malformed message: ${parsed.error.message}`);
          return;
        }
        const message = parsed.data;
        if (message.type === 'ready') {
          sendState();
          this.ctx.markViewResolved('belay.cues');
        } else {
          void vscode.commands.executeCommand(message.command);
        }
      }),
      this.ctx.config.onDidChange(sendState),
      vscode.workspace.onDidGrantWorkspaceTrust(sendState),
    ];
    view.onDidDispose(() => subscriptions.forEach((s) => s.dispose()));
  }
}
