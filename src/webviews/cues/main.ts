// The Cues panel app (runs in the webview, never imports host code). Text is set with
// textContent only: nothing from outside is ever parsed as HTML.
import { toWebviewSchema, type ToHost, type ToWebview } from './protocol.ts';
import './style.css';

interface VsCodeApi {
  postMessage(message: ToHost): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function render(state: Extract<ToWebview, { type: 'state' }>): void {
  const root = document.getElementById('root');
  if (!root) return;
  const empty = el('section', 'empty');
  empty.setAttribute('aria-live', 'polite');
  empty.append(el('span', 'codicon codicon-comment-discussion icon'));
  empty.append(el('h2', 'title', 'No agent is waiting for you'));
  empty.append(el('p', 'lead', 'Agents ask you questions by running "cueme cue". When one does, its question appears here with buttons to answer it.'));
  const mailbox = el('p', 'detail');
  mailbox.append('Mailbox: ', el('code', '', state.mailbox));
  empty.append(mailbox);
  if (!state.trusted) empty.append(el('p', 'warning', 'This workspace is not trusted: Belay shows cues but will not put its cueme on the terminal PATH.'));
  const log = el('button', 'link', 'Open Belay Log');
  log.type = 'button';
  log.addEventListener('click', () => vscode.postMessage({ type: 'command', command: 'belay.showLog' }));
  empty.append(log);
  root.replaceChildren(empty);
}

window.addEventListener('message', (event: MessageEvent<unknown>) => {
  const parsed = toWebviewSchema.safeParse(event.data);
  if (!parsed.success) {
    console.warn('Belay cues: ignored a malformed message', parsed.error.issues);
    return;
  }
  if (parsed.data.type === 'state') render(parsed.data);
});

vscode.postMessage({ type: 'ready' });
