import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';

/**
 * The HTML shell of a Belay webview: a strict CSP (nothing but this render's nonce-tagged script,
 * the app's own stylesheet and the codicon font), the app bundle from dist/webviews/, no inline HTML
 * content: the app builds the page from typed messages.
 */
export function webviewHtml(webview: vscode.Webview, extensionUri: vscode.Uri, app: string, title: string): string {
  const nonce = randomBytes(18).toString('base64');
  const asset = (file: string) => webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'dist', 'webviews', file)).toString();
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
<title>${title}</title>
<link rel="stylesheet" href="${asset('codicon.css')}">
<link rel="stylesheet" href="${asset(`${app}.css`)}">
</head>
<body>
<main id="root"></main>
<script nonce="${nonce}" src="${asset(`${app}.js`)}"></script>
</body>
</html>`;
}

/** Webview options that allow scripts and only the extension's built webview assets. */
export function webviewOptions(extensionUri: vscode.Uri): vscode.WebviewOptions {
  return { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist', 'webviews')] };
}
