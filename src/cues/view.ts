import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { webviewHtml, webviewOptions } from '../ui/webviewHtml.ts';
import { toHostSchema, type ToHost, type ToWebview } from '../webviews/cues/protocol.ts';
import { EXPIRE_AFTER_MS, type PanelSnapshot } from './model.ts';
import { describeError, type CuesService } from './service.ts';

const PASTE_TYPES: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/gif': 'gif', 'image/webp': 'webp' };

/** A file the human chose (dialog) or pasted, known to the host by an id the webview only echoes back. */
interface Attachment {
  path: string;
  name: string;
  /** Pasted images live in a temp file removed after the answer. */
  temporary: boolean;
}

/** Only http(s) links with a host are opened from agents' prompts. */
export function safeExternalUrl(raw: string): vscode.Uri | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !url.hostname) return undefined;
  return vscode.Uri.parse(url.href, true);
}

/** The Cues webview view: renders the service's snapshot and turns the human's clicks into answers. */
export class CuesViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  static readonly viewId = 'belay.cues';
  readonly #ctx: BelayContext;
  readonly #service: CuesService;
  #view: vscode.WebviewView | undefined;
  #ready = false;
  #outbox: ToWebview[] = [];
  readonly #attachments = new Map<string, Attachment>();
  readonly #pasteDir: string;
  readonly #visibility = new vscode.EventEmitter<boolean>();
  readonly onDidChangeVisibility = this.#visibility.event;

  constructor(ctx: BelayContext, service: CuesService) {
    this.#ctx = ctx;
    this.#service = service;
    this.#pasteDir = path.join(ctx.extension.globalStorageUri.fsPath, 'pasted');
  }

  get visible(): boolean {
    return this.#view?.visible ?? false;
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    const { extensionUri } = this.#ctx.extension;
    this.#view = view;
    this.#ready = false;
    this.#outbox = [];
    view.webview.options = webviewOptions(extensionUri);
    view.webview.html = webviewHtml(view.webview, extensionUri, 'cues', 'Cues');
    this.#updateBadge(this.#service.snapshot);
    const subscriptions = [
      view.webview.onDidReceiveMessage((raw: unknown) => {
        const parsed = toHostSchema.safeParse(raw);
        if (!parsed.success) {
          this.#ctx.log.warn(`Cues view: ignored a malformed message: ${parsed.error.message}`);
          return;
        }
        void this.#handle(parsed.data);
      }),
      this.#service.onDidChange((snapshot) => {
        this.#updateBadge(snapshot);
        this.#postState();
      }),
      this.#ctx.config.onDidChange(['cues.home'], () => this.#postState()),
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.#postState()),
      view.onDidChangeVisibility(() => this.#visibility.fire(view.visible)),
    ];
    view.onDidDispose(() => {
      subscriptions.forEach((s) => s.dispose());
      if (this.#view === view) this.#view = undefined;
      this.#visibility.fire(false);
    });
    this.#visibility.fire(view.visible);
  }

  /** Shows the panel and, once it is drawn, focuses one cue. */
  async reveal(requestId?: string): Promise<void> {
    await vscode.commands.executeCommand(`${CuesViewProvider.viewId}.focus`);
    if (requestId) this.#post({ type: 'focus', requestId });
  }

  #updateBadge(snapshot: PanelSnapshot): void {
    if (!this.#view) return;
    const n = snapshot.waitingCount;
    // A zero badge rather than `undefined`: clearing with undefined left the container's badge
    // showing while the view was hidden (seen in code-server 4.103); a zero badge is drawn as none.
    this.#view.badge = n > 0 ? { value: n, tooltip: `${n} agent${n === 1 ? ' is' : 's are'} waiting for you` } : { value: 0, tooltip: '' };
  }

  #post(message: ToWebview): void {
    if (!this.#view) return;
    if (!this.#ready) {
      // Until the app says ready only the newest state matters; other messages keep their order.
      if (message.type === 'state') this.#outbox = this.#outbox.filter((m) => m.type !== 'state');
      this.#outbox.push(message);
      return;
    }
    void this.#view.webview.postMessage(message);
  }

  #postState(): void {
    const snapshot = this.#service.snapshot;
    const state: ToWebview = {
      type: 'state',
      mailbox: this.#service.home,
      trusted: vscode.workspace.isTrusted,
      nowMs: Date.now(),
      expireAfterMs: EXPIRE_AFTER_MS,
      pending: snapshot.pending,
      agents: snapshot.agents,
      history: snapshot.history,
    };
    const error = this.#service.error;
    if (error) state.error = error;
    this.#post(state);
  }

  async #handle(message: ToHost): Promise<void> {
    switch (message.type) {
      case 'ready': {
        this.#ready = true;
        this.#postState();
        const queued = this.#outbox.filter((m) => m.type !== 'state');
        this.#outbox = [];
        for (const m of queued) this.#post(m);
        this.#ctx.markViewResolved(CuesViewProvider.viewId);
        return;
      }
      case 'command':
        void vscode.commands.executeCommand(message.command);
        return;
      case 'answer': {
        const files: Attachment[] = [];
        for (const id of message.attachments) {
          const file = this.#attachments.get(id);
          if (!file) return this.#result(message.requestId, false, 'an attachment is no longer available; attach it again');
          files.push(file);
        }
        try {
          await this.#service.answer(message.requestId, message.selection, files.map((f) => f.path));
          this.#result(message.requestId, true);
          for (const id of message.attachments) this.#forget(id);
        } catch (error) {
          this.#result(message.requestId, false, describeError(error));
        }
        return;
      }
      case 'cancel':
        try {
          this.#service.cancel(message.requestId);
          this.#result(message.requestId, true);
        } catch (error) {
          this.#result(message.requestId, false, describeError(error));
        }
        return;
      case 'pickFiles': {
        const uris = await vscode.window.showOpenDialog({ canSelectMany: true, openLabel: 'Attach', title: 'Attach files to your answer' });
        if (!uris || uris.length === 0) return;
        const files = uris.filter((u) => u.scheme === 'file').map((u) => this.#remember({ path: u.fsPath, name: path.basename(u.fsPath), temporary: false }));
        this.#post({ type: 'attachments', requestId: message.requestId, files });
        return;
      }
      case 'pasteImage': {
        const ext = PASTE_TYPES[message.mime];
        if (!ext) return this.#result(message.requestId, false, `pasted ${message.mime} is not an image Belay attaches (png, jpeg, gif, webp)`);
        const data = Buffer.from(message.dataBase64, 'base64');
        if (data.length === 0) return this.#result(message.requestId, false, 'the pasted image is empty');
        mkdirSync(this.#pasteDir, { recursive: true });
        const name = `pasted-${new Date().toISOString().replace(/[:.]/g, '-')}.${ext}`;
        const file = path.join(this.#pasteDir, `${randomBytes(6).toString('hex')}-${name}`);
        writeFileSync(file, data);
        this.#post({ type: 'attachments', requestId: message.requestId, files: [this.#remember({ path: file, name, temporary: true })] });
        return;
      }
      case 'queue':
        this.#service.queueReply(message.agentId, message.text);
        return;
      case 'openLink': {
        const uri = safeExternalUrl(message.url);
        if (!uri) {
          this.#ctx.log.warn(`Cues view: refused to open ${JSON.stringify(message.url.slice(0, 200))}: only http(s) links open`);
          return;
        }
        await vscode.env.openExternal(uri);
        return;
      }
    }
  }

  #remember(file: Attachment): { id: string; name: string } {
    const id = randomBytes(8).toString('hex');
    this.#attachments.set(id, file);
    return { id, name: file.name };
  }

  #forget(id: string): void {
    const file = this.#attachments.get(id);
    this.#attachments.delete(id);
    if (file?.temporary) rmSync(file.path, { force: true });
  }

  #result(requestId: string, ok: boolean, message?: string): void {
    if (!ok && message) this.#ctx.log.warn(`Cues view: ${requestId}: ${message}`);
    this.#post(message === undefined ? { type: 'result', requestId, ok } : { type: 'result', requestId, ok, message });
  }

  dispose(): void {
    for (const id of [...this.#attachments.keys()]) this.#forget(id);
    this.#visibility.dispose();
  }
}
