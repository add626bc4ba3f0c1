// URL-mode elicitations and secrets, for `belay mcp --wrap`. A wrapped server that sends the person
// to a page (sign-in, payment, an API key) asks through a URL: Belay shows a confirm cue naming the
// page's host, and opens the page in the browser only after the person agrees (or prints it where
// no browser opener exists). Only http and https pages without credentials in them are opened.
// A form that asks for a secret is refused: the spec keeps secrets out of forms (URL mode is for
// them), and an answer typed into a cue would sit in the mailbox's history.
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import * as path from 'node:path';
import * as z from 'zod';

export const OPEN_LABEL = 'Open the page';
export const DECLINE_LABEL = 'Decline';

const UrlParams = z.looseObject({ mode: z.literal('url'), message: z.string(), url: z.string() });

export type UrlElicitation = { url: URL; message: string } | { problem: string };

/** The params of a URL-mode elicitation, or why Belay will not open it; undefined when not URL mode. */
export function urlElicitation(params: unknown): UrlElicitation | undefined {
  const parsed = UrlParams.safeParse(params);
  if (!parsed.success) return typeof params === 'object' && params !== null && (params as { mode?: unknown }).mode === 'url' ? { problem: 'its params are malformed (mode, message and url are required)' } : undefined;
  const raw = parsed.data.url;
  if (/[\u0000-\u001f\u007f\s]/.test(raw)) return { problem: 'its URL holds spaces or control characters' };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { problem: 'its URL cannot be read' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { problem: `${url.protocol} URLs are not opened (only http and https)` };
  if (url.username !== '' || url.password !== '') return { problem: 'its URL carries credentials (user:password@)' };
  if (url.hostname === '') return { problem: 'its URL names no host' };
  return { url, message: parsed.data.message };
}

/** The confirm cue for a URL elicitation: the host first, the whole address below it. */
export function urlCue(elicitation: { url: URL; message: string }, source: string): { prompt: string; payloadJson: string } {
  const host = elicitation.url.host;
  const lines = [
    `The MCP server ${source} asks you to open a page on **${host}**.`,
    elicitation.message.trim(),
    `\`${elicitation.url.href.replace(/`/g, '%60')}\``,
    `_Belay opens it in your browser only if you agree (an elicitation in URL mode, through Belay)._`,
  ].filter((line) => line !== '');
  const payload = { type: 'confirm', text: `Open ${host} in the browser?`, confirm_label: OPEN_LABEL, cancel_label: DECLINE_LABEL };
  return { prompt: lines.join('\n\n'), payloadJson: JSON.stringify(payload) };
}

const SECRET_WORDS = /pass(word|phrase|code)?\b|passwd|secret|token|api[\s_-]?key|private[\s_-]?key|access[\s_-]?key|credential|\bpin\b|\botp\b|one[\s_-]?time|\bcvv\b|\bcvc\b|card[\s_-]?number|credit[\s_-]?card|\biban\b|social[\s_-]?security|\bssn\b/i;

/**
 * The field of a form elicitation that asks for a secret (password, token, API key, payment
 * details: the sensitive data the spec sends to URL mode), or undefined. Read from the field's
 * name, title and description, a `password` format, or `writeOnly`.
 */
export function secretField(params: unknown): string | undefined {
  const properties = (params as { requestedSchema?: { properties?: unknown } } | undefined)?.requestedSchema?.properties;
  if (typeof properties !== 'object' || properties === null) return undefined;
  for (const [key, raw] of Object.entries(properties)) {
    const field = (typeof raw === 'object' && raw !== null ? raw : {}) as { title?: unknown; description?: unknown; format?: unknown; writeOnly?: unknown };
    const words = [key.replace(/([a-z])([A-Z])/g, '$1 $2'), field.title, field.description].filter((w): w is string => typeof w === 'string');
    if (field.format === 'password' || field.writeOnly === true || words.some((w) => SECRET_WORDS.test(w))) return key;
  }
  return undefined;
}

/** The one line a refused secret form gets. */
export function secretRefusal(source: string, field: string): string {
  return `the MCP server ${source} asked for a secret ("${field.slice(0, 60)}") in a form; Belay does not pass secrets through forms: URL mode is for that`;
}

/** The program that opens a URL in the person's browser here, or undefined. */
export function browserOpener(env: NodeJS.ProcessEnv, platform: NodeJS.Platform = process.platform): string | undefined {
  const name = platform === 'darwin' ? 'open' : platform === 'win32' ? 'explorer.exe' : 'xdg-open';
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/**
 * Opens `url` with the platform's opener (no shell: the URL is one argument); without an opener,
 * `print` gets the line to show instead. Not through shared/process.ts's startChild: that kills
 * a program's whole group when it exits, and the browser an opener starts must stay. The opener
 * is detached and not waited for (it hands the URL over and exits).
 */
export function openUrl(url: URL, env: NodeJS.ProcessEnv, print: (line: string) => void): void {
  const opener = browserOpener(env);
  if (!opener) return print(`open this page to continue: ${url.href}`);
  try {
    const child = spawn(opener, [url.href], { env, stdio: 'ignore', detached: true, windowsHide: true });
    child.on('error', () => print(`could not start ${path.basename(opener)}; open this page to continue: ${url.href}`));
    child.unref();
  } catch {
    print(`could not start ${path.basename(opener)}; open this page to continue: ${url.href}`);
  }
}
