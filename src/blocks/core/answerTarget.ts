// Which folder an answer document's blocks act on, and what kind of document it is. Shared by the
// language server and the editor layer, so both always agree (no `vscode` import).
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { SECTION } from './protocol.ts';

export interface AnswerTarget {
  /** The folder the blocks act on (the sandbox root). */
  workspace: string;
  /** The session root when the document lives in one (`…/inbox/x.txt`, `…/answers/x.agent`). */
  sessionRoot?: string;
}

async function isFolder(folder: string): Promise<boolean> {
  try {
    return (await fs.stat(folder)).isDirectory();
  } catch {
    return false;
  }
}

/** A session root has `workspace/` and `sessions/` folders (see session.ts). */
async function isSessionRoot(folder: string): Promise<boolean> {
  return (await isFolder(path.join(folder, 'workspace'))) && (await isFolder(path.join(folder, 'sessions')));
}

/**
 * The target of a document: the `workspace/` of the nearest session root above it (never for a
 * file inside that `workspace/` itself); for any other document, the configured session root's
 * `workspace/` when it exists, else the first workspace folder.
 */
export async function answerTarget(documentPath: string | undefined, workspaceFolders: readonly string[], sessionRootSetting: string): Promise<AnswerTarget | undefined> {
  if (documentPath !== undefined) {
    let folder = path.dirname(path.resolve(documentPath));
    for (let depth = 0; depth < 6; depth++) {
      if (await isSessionRoot(folder)) {
        const workspace = path.join(folder, 'workspace');
        if (!isWithin(workspace, documentPath)) return { workspace, sessionRoot: folder };
      }
      const parent = path.dirname(folder);
      if (parent === folder) break;
      folder = parent;
    }
  }
  const first = workspaceFolders[0];
  if (first === undefined) return undefined;
  const configured = path.resolve(first, sessionRootSetting);
  if (await isSessionRoot(configured)) return { workspace: path.join(configured, 'workspace'), sessionRoot: configured };
  return { workspace: first };
}

function isWithin(folder: string, file: string): boolean {
  const relative = path.relative(folder, path.resolve(file));
  return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative);
}

/** Outbox messages quote the protocol's own example blocks: they are shown, never applied. */
export function isOutboxDocument(text: string, documentPath?: string): boolean {
  if (documentPath !== undefined && /[\\/]outbox[\\/][0-9a-f]{8}_seq\d{4}\.txt$/.test(documentPath)) return true;
  return text.trimStart().startsWith(SECTION.header);
}

/**
 * The outbox an answer replies to: the one its name says (`{id}_answer{NNNN}…` answers outbox
 * `{id}_seq{NNNN}.txt`), else the newest outbox of the session root not newer than the answer
 * itself (the newest of all for an answer without a file).
 */
export async function repliedOutbox(sessionRoot: string, answerPath: string | undefined): Promise<string | undefined> {
  const folder = path.join(sessionRoot, 'outbox');
  const named = answerPath === undefined ? null : /^([0-9a-f]{8})_answer(\d{4,})/.exec(path.basename(answerPath));
  if (named) {
    const file = path.join(folder, `${named[1]}_seq${named[2]}.txt`);
    if (await fs.stat(file).then((s) => s.isFile(), () => false)) return file;
  }
  const answerMtimeMs = answerPath === undefined ? undefined : await fs.stat(answerPath).then((s) => s.mtimeMs, () => undefined);
  let names: string[];
  try {
    names = await fs.readdir(folder);
  } catch {
    return undefined;
  }
  let best: { file: string; mtimeMs: number } | undefined;
  for (const name of names) {
    if (!/^[0-9a-f]{8}_seq\d{4}\.txt$/.test(name)) continue;
    const file = path.join(folder, name);
    try {
      const { mtimeMs } = await fs.stat(file);
      if (answerMtimeMs !== undefined && mtimeMs > answerMtimeMs) continue;
      if (best === undefined || mtimeMs > best.mtimeMs) best = { file, mtimeMs };
    } catch {
      // Gone meanwhile.
    }
  }
  return best?.file;
}

/** A line that opens a command block, and one that closes one: both make a text an LLM answer. */
const OPENING = /^[ \t]*\[(CREATE_FILE|EDIT_FILE|DELETE_FILE|READ_FILE|RUN_COMMAND)[ \t\]]/m;
const CLOSING = /^[ \t]*\[\/(CREATE_FILE|EDIT_FILE|RUN_COMMAND)\][ \t]*$/m;
const ONE_LINE = /^[ \t]*\[(DELETE_FILE|READ_FILE)\b[^\]\n]*\]/m;
/** Content detection looks at this much of a document at most. */
const DETECT_CHARS = 200_000;

/** Whether a plain text looks like an LLM answer with command blocks (content detection). */
export function looksLikeAnswer(text: string): boolean {
  const head = text.length > DETECT_CHARS ? text.slice(0, DETECT_CHARS) : text;
  return OPENING.test(head) && (CLOSING.test(head) || ONE_LINE.test(head));
}
