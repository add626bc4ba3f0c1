import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { errorMessage } from '../shared/errors.ts';
import { WebviewHost, type PageMessage } from '../ui/webviewHost.ts';
import { safeHref, toHostSchema, type ToHost, type ToWebview } from '../contracts/cuesPage.ts';
import type { CuesService } from './service.ts';

// The Cues page: a message handler on the webview host that shows the service's snapshot and turns
// the human's clicks into answers. The same page runs in the sidebar view (./provider.ts, loaded
// when the view is first resolved) and in editor panels showing one agent (./panels.ts).

const PASTE_TYPES: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/gif': 'gif', 'image/webp': 'webp' };

/** A file the human chose (dialog) or pasted, known to the host by an id the page only echoes back. */
interface Attachment {
  path: string;
  name: string;
  /** Pasted images live in a temp file removed after the answer. */
  temporary: boolean;
}

export interface CuesViewOptions {
  /** In an editor panel: the one agent it shows. */
  scope?: { agentId: string };
  /** After each `ready` of the page. */
  onReady?: () => void;
}

export class CuesView implements vscode.Disposable {
  readonly #ctx: BelayContext;
  readonly #service: CuesService;
  readonly #host: WebviewHost<ToHost, ToWebview>;
  readonly #attachments = new Map<string, Attachment>();
  readonly #pasteDir: string;
  readonly #subscriptions: vscode.Disposable[];
  readonly #scope: { agentId: string } | undefined;

  constructor(ctx: BelayContext, service: CuesService, view: vscode.WebviewView | vscode.WebviewPanel, options: CuesViewOptions = {}) {
    this.#ctx = ctx;
    this.#service = service;
    this.#scope = options.scope;
    this.#pasteDir = path.join(ctx.extension.globalStorageUri.fsPath, 'pasted');
    this.#host = new WebviewHost<ToHost, ToWebview>(view, {
      app: 'cues',
      title: options.scope ? `Cues: ${options.scope.agentId}` : 'Cues',
      schema: toHostSchema,
      extensionUri: ctx.extension.extensionUri,
      log: ctx.log,
      handler: {
        state: () => this.#state(),
        receive: (message) => this.#receive(message),
        ready: () => options.onReady?.(),
        dispose: () => this.#release(),
      },
    });
    const refresh = () => this.#host.refresh();
    this.#subscriptions = [service.onDidChange(refresh), ctx.config.onDidChange('cues.home', refresh), ctx.trust.onDidGrant(refresh)];
  }

  /** Scrolls to one cue and focuses it (once the page is there). */
  focus(requestId: string): void {
    this.#host.post({ type: 'focus', requestId });
  }

  /** The page's state from the service's snapshot, whose cues and agents are the contract's own types (core/model.ts). */
  #state(): ToWebview {
    const snapshot = this.#service.snapshot;
    const state: ToWebview = {
      type: 'state',
      mailbox: this.#service.home,
      nowMs: Date.now(),
      pending: snapshot.pending,
      agents: snapshot.agents,
      history: snapshot.history,
    };
    if (this.#scope) state.scope = this.#scope;
    const untrusted = this.#ctx.trust.refusal('terminalPath');
    if (untrusted) state.untrusted = untrusted;
    const error = this.#service.error;
    if (error) state.error = error;
    return state;
  }

  async #receive(message: PageMessage<ToHost>): Promise<void> {
    switch (message.type) {
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
          this.#result(message.requestId, false, errorMessage(error));
        }
        return;
      }
      case 'cancel':
        try {
          this.#service.cancel(message.requestId);
          this.#result(message.requestId, true);
        } catch (error) {
          this.#result(message.requestId, false, errorMessage(error));
        }
        return;
      case 'pickFiles': {
        const uris = await vscode.window.showOpenDialog({ canSelectMany: true, openLabel: 'Attach', title: 'Attach files to your answer' });
        if (!uris || uris.length === 0) return;
        const files = uris.filter((u) => u.scheme === 'file').map((u) => this.#remember({ path: u.fsPath, name: path.basename(u.fsPath), temporary: false }));
        this.#host.post({ type: 'attachments', requestId: message.requestId, files });
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
        this.#host.post({ type: 'attachments', requestId: message.requestId, files: [this.#remember({ path: file, name, temporary: true })] });
        return;
      }
      case 'queue':
        this.#service.queueReply(message.agentId, message.text);
        return;
      case 'archive':
        this.#service.archiveAgents(message.agentIds);
        return;
      case 'unarchive':
        this.#service.unarchiveAgents(message.agentIds);
        return;
      case 'openInEditor':
        await vscode.commands.executeCommand('belay.cues.openInEditor', { agentId: message.agentId, requestId: message.requestId });
        return;
      case 'openLink': {
        // The schema let only http(s) links through.
        const href = safeHref(message.url);
        if (href) await vscode.env.openExternal(vscode.Uri.parse(href, true));
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
    if (!ok && message) this.#ctx.log.warn(`cues view: ${requestId}: ${message}`);
    this.#host.post(message === undefined ? { type: 'result', requestId, ok } : { type: 'result', requestId, ok, message });
  }

  /** When the view goes away (the host calls this): stop listening, remove pasted images. */
  #release(): void {
    this.#subscriptions.forEach((s) => s.dispose());
    for (const id of [...this.#attachments.keys()]) this.#forget(id);
  }

  dispose(): void {
    this.#host.dispose();
  }
}
