import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type * as z from 'zod';
import { errorMessage } from '../shared/errors.ts';

// The one host of Belay's webviews (a WebviewView or a WebviewPanel): it writes the page, parses
// what the page sends, answers the ready handshake and holds messages until then. A feature only
// supplies a handler. The app side is src/webviews/shared/connect.ts.

type Ready = { type: 'ready' };
/** A message from the page other than `ready`, which the host answers itself. */
export type PageMessage<ToHost> = Exclude<ToHost, Ready>;

/** What a feature supplies for its webview. */
export interface WebviewHandler<ToHost extends { type: string }, ToWebview> {
  /** Everything the page shows: sent on each `ready` (the first load and every reload), before anything held. */
  state(): ToWebview | Promise<ToWebview>;
  /** Each message from the page that fits the app's schema (`ready` is the host's). */
  receive(message: PageMessage<ToHost>): void | Promise<void>;
  /** After each `ready` was answered. */
  ready?(): void;
  /** When the webview goes away. */
  dispose?(): void;
}

export interface WebviewHostOptions<ToHost extends { type: string }, ToWebview> {
  /** The app's bundle: dist/webviews/<app>.js and <app>.css. */
  app: string;
  /** The page's title. */
  title: string;
  /** The app's `toHostSchema` (src/contracts/<app>Page.ts). */
  schema: z.ZodType<ToHost>;
  handler: WebviewHandler<ToHost, ToWebview>;
  extensionUri: vscode.Uri;
  log: vscode.LogOutputChannel;
}

export class WebviewHost<ToHost extends { type: string }, ToWebview> implements vscode.Disposable {
  readonly #webview: vscode.Webview;
  readonly #options: WebviewHostOptions<ToHost, ToWebview>;
  readonly #subscriptions: vscode.Disposable[];
  #ready = false;
  #held: ToWebview[] = [];
  #disposed = false;

  constructor(owner: vscode.WebviewView | vscode.WebviewPanel, options: WebviewHostOptions<ToHost, ToWebview>) {
    this.#webview = owner.webview;
    this.#options = options;
    this.#subscriptions = [owner.webview.onDidReceiveMessage((raw: unknown) => void this.#receive(raw)), owner.onDidDispose(() => this.dispose())];
    // A hidden webview loses its page (unless told to keep it) and reloads it when shown again: what
    // is sent meanwhile would be lost, so it is held until the reloaded page says `ready`.
    const keepsPage = 'reveal' in owner && owner.options.retainContextWhenHidden === true;
    if (!keepsPage) {
      const onHidden = () => {
        if (!owner.visible) this.#ready = false;
      };
      this.#subscriptions.push('onDidChangeViewState' in owner ? owner.onDidChangeViewState(onHidden) : owner.onDidChangeVisibility(onHidden));
    }
    owner.webview.options = { enableScripts: true, localResourceRoots: [assetsRoot(options.extensionUri)] };
    owner.webview.html = webviewHtml(owner.webview, options.extensionUri, options.app, options.title);
  }

  /** Sends `message` now, or after the page's `ready` when it has not said it yet. */
  post(message: ToWebview): void {
    if (this.#disposed) return;
    if (this.#ready) void this.#webview.postMessage(message);
    else this.#held.push(message);
  }

  /** Sends the handler's state again; before `ready` there is nothing to do, since `ready` sends it. */
  refresh(): void {
    if (this.#ready) void this.#sendState();
  }

  async #sendState(): Promise<boolean> {
    try {
      const state = await this.#options.handler.state();
      if (!this.#disposed) void this.#webview.postMessage(state);
      return true;
    } catch (error) {
      this.#options.log.error(`${this.#options.app} view: ${errorMessage(error)}`);
      return false;
    }
  }

  async #receive(raw: unknown): Promise<void> {
    const parsed = this.#options.schema.safeParse(raw);
    if (!parsed.success) {
      this.#options.log.warn(`${this.#options.app} view: dropped a malformed message: ${describeIssues(raw, parsed.error)}`);
      return;
    }
    const message = parsed.data;
    if (message.type === 'ready') {
      // A reload of the page says ready again: it gets the whole state anew.
      if (!(await this.#sendState())) return;
      this.#ready = true;
      for (const held of this.#held.splice(0)) void this.#webview.postMessage(held);
      this.#options.handler.ready?.();
      return;
    }
    try {
      await this.#options.handler.receive(message as PageMessage<ToHost>);
    } catch (error) {
      this.#options.log.error(`${this.#options.app} view: ${errorMessage(error)}`);
      void vscode.window.showErrorMessage(`Belay: ${errorMessage(error)}`);
    }
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#held = [];
    this.#subscriptions.forEach((s) => s.dispose());
    this.#options.handler.dispose?.();
  }
}

/** One line for a message the schema refused: its type (when it has one) and the first problem. */
function describeIssues(raw: unknown, error: z.ZodError): string {
  const type = typeof raw === 'object' && raw !== null && typeof (raw as { type?: unknown }).type === 'string' ? `"${(raw as { type: string }).type}"` : 'without a type';
  const issue = error.issues[0];
  const where = issue && issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
  const more = error.issues.length > 1 ? ` (and ${error.issues.length - 1} more)` : '';
  return `${type}, ${where}${issue?.message ?? 'wrong shape'}${more}`;
}

function assetsRoot(extensionUri: vscode.Uri): vscode.Uri {
  return vscode.Uri.joinPath(extensionUri, 'dist', 'webviews');
}

/** Text for the page's markup (a title may name a task, and task names come from files). */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * The page: a strict CSP (nothing but this render's nonce-tagged script, the app's own stylesheet
 * and the codicon font), the app bundle from dist/webviews/, no content: the app builds the page
 * from typed messages, and sets agents' text as text.
 */
function webviewHtml(webview: vscode.Webview, extensionUri: vscode.Uri, app: string, title: string): string {
  const nonce = randomBytes(18).toString('base64');
  const asset = (file: string) => webview.asWebviewUri(vscode.Uri.joinPath(assetsRoot(extensionUri), file)).toString();
  const csp = [
    "default-src 'none'",
    `img-src ${webview.cspSource} data:`,
    `style-src ${webview.cspSource}`,
    `font-src ${webview.cspSource}`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="${asset('codicon.css')}">
<link rel="stylesheet" href="${asset(`${app}.css`)}">
</head>
<body>
<main id="root"></main>
<script nonce="${nonce}" src="${asset(`${app}.js`)}"></script>
</body>
</html>`;
}
