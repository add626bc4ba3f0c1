// The state of every block of an open answer, derived each time from the files and the records:
// the editor's ledger (a block is applied while its files hold what applying it wrote, so Undo,
// Redo, a revert or Undo Answer show at once) and the session file (an answer the session loop
// processed shows what it gave). Nothing here remembers a state by itself: reopening an answer,
// or a new window, derives the same. Loaded with the first answer document or block command.
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { errorMessage } from '../shared/errors.ts';
import { answerTarget, isOutboxDocument, type AnswerTarget } from './core/answerTarget.ts';
import { blockKeys } from './core/blockKey.ts';
import { blockIds, digest, recordState, type BlockRecord, type Digest, type Ledger } from './core/ledger.ts';
import type { LensState } from './core/lenses.ts';
import { parseAnswer } from './core/parser.ts';
import type { Replay } from './core/plan.ts';
import type { CommandResult } from './core/results.ts';
import { openWorkspace, type Workspace } from './core/sandbox.ts';
import { inOrder, type ParseResult } from './core/syntax.ts';

/** A block that is no longer to apply, and why. */
export interface SettledBlock extends LensState {
  /** What applying it left, for planning the blocks after it. */
  replay?: Replay;
  /** The ledger record it comes from (undefined when the session processed it). */
  record?: BlockRecord;
}

/** An answer document, parsed, with its target folder and each settled block by index. */
export interface AnswerView {
  document: vscode.TextDocument;
  version: number;
  parsed: ParseResult;
  /** Lens keys (see blockKey.ts), by command index. */
  keys: string[];
  /** Ledger ids, by command index. */
  ids: string[];
  target: AnswerTarget;
  workspace: Workspace;
  settled: Map<number, SettledBlock>;
  /** The session that processed this very answer, when one did. */
  processedBy?: { sessionId: string; sequence: number };
  /** The session this answer (in its `inbox/`, named after it) answers, while it waits there. */
  answers?: { root: string; sessionId: string; sequence: number; model: string | undefined };
}

const SESSION_ANSWER = /^([0-9a-f]{8})_answer(\d{4,})/;

export class BlockStates implements vscode.Disposable {
  private readonly ctx: BelayContext;
  readonly ledger: Ledger;
  /** Keyed by URI, held for one document object: an untitled answer closed and another opened reuse the URI, at version 1 again. */
  private readonly views = new Map<string, { document: vscode.TextDocument; version: number; epoch: number; view: Promise<AnswerView> }>();
  private readonly signatures = new Map<string, string>();
  private epoch = 0;
  /** Files the records of open answers touch (real paths): a change to one may change a state. */
  private tracked = new Set<string>();
  private readonly watchers = new Map<string, vscode.FileSystemWatcher>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  /** Fires when the settled blocks of an open answer changed. */
  readonly onDidChange = this.changed.event;
  private readonly subscriptions: vscode.Disposable[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(ctx: BelayContext, ledger: Ledger) {
    this.ctx = ctx;
    this.ledger = ledger;
    this.subscriptions.push(
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.contentChanges.length > 0 && e.document.uri.scheme === 'file' && this.tracked.has(e.document.uri.fsPath)) this.invalidate();
      }),
      vscode.workspace.onDidSaveTextDocument((d) => this.tracked.has(d.uri.fsPath) && this.invalidate()),
      vscode.workspace.onDidCreateFiles(() => this.invalidate()),
      vscode.workspace.onDidDeleteFiles(() => this.invalidate()),
      vscode.workspace.onDidRenameFiles(() => this.invalidate()),
      vscode.workspace.onDidCloseTextDocument((d) => this.forget(d.uri)),
      ctx.config.onDidChange('blocks.sessionRoot', () => this.invalidate()),
      vscode.workspace.onDidChangeWorkspaceFolders(() => this.invalidate()),
    );
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.subscriptions.splice(0).forEach((s) => s.dispose());
    for (const watcher of this.watchers.values()) watcher.dispose();
    this.watchers.clear();
    this.changed.dispose();
    this.views.clear();
  }

  forget(uri: vscode.Uri): void {
    this.views.delete(uri.toString());
    this.signatures.delete(uri.toString());
  }

  /** Something a state depends on changed: every open answer is derived again (soon, once). */
  invalidate(now = false): void {
    this.epoch++;
    clearTimeout(this.timer);
    const refresh = () => void this.refresh().catch((error: unknown) => this.ctx.log.warn(`block states: ${errorMessage(error)}`));
    if (now) refresh();
    else this.timer = setTimeout(refresh, 80);
  }

  /** Derives the viewed answers again and says which changed. */
  async refresh(): Promise<void> {
    const tracked = new Set<string>();
    for (const [uri] of this.views) {
      const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
      if (!document) {
        this.forget(vscode.Uri.parse(uri));
        continue;
      }
      let view: AnswerView;
      try {
        view = await this.view(document);
      } catch {
        continue;
      }
      // Closed meanwhile: what it showed is not the answer a new document under its URI shows.
      if (document.isClosed) continue;
      for (const settled of view.settled.values()) for (const file of settled.record?.files ?? []) tracked.add(shownPath(view.workspace, file.real));
      const signature = [...view.settled].map(([i, s]) => `${i}:${s.status}:${s.summary}`).join('\n');
      if (this.signatures.get(uri) !== signature) {
        this.signatures.set(uri, signature);
        this.changed.fire(document.uri);
      }
    }
    this.tracked = tracked;
  }

  /** The answer in a document and its blocks' states, derived for its current text and files. */
  view(document: vscode.TextDocument): Promise<AnswerView> {
    const key = document.uri.toString();
    const cached = this.views.get(key);
    if (cached && cached.document === document && cached.version === document.version && cached.epoch === this.epoch) return cached.view;
    const view = this.derive(document);
    this.views.set(key, { document, version: document.version, epoch: this.epoch, view });
    view.then(
      (v) => {
        if (!this.signatures.has(key)) {
          this.signatures.set(key, [...v.settled].map(([i, s]) => `${i}:${s.status}:${s.summary}`).join('\n'));
          // A reopened answer: the language server learns at once which blocks are applied.
          if (v.settled.size > 0) this.changed.fire(document.uri);
        }
        for (const settled of v.settled.values()) for (const file of settled.record?.files ?? []) this.tracked.add(shownPath(v.workspace, file.real));
      },
      () => this.views.delete(key),
    );
    return view;
  }

  private async derive(document: vscode.TextDocument): Promise<AnswerView> {
    const documentPath = document.uri.scheme === 'file' ? document.uri.fsPath : undefined;
    const text = document.getText();
    const version = document.version;
    if (isOutboxDocument(text, documentPath)) {
      throw new Error('This is an outbox: its blocks are the protocol\'s examples, to send to the LLM, not to apply.');
    }
    const parsed = parseAnswer(text);
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const target = await answerTarget(documentPath, folders, this.ctx.config.get('blocks.sessionRoot', document.uri));
    if (!target) throw new Error('Open a folder first: command blocks act on the workspace folder.');
    const workspace = await openWorkspace(target.workspace);
    this.watch(target.sessionRoot ?? workspace.root);
    const ids = blockIds(workspace.realRoot, parsed.commands, text);
    const view: AnswerView = { document, version, parsed, keys: blockKeys(parsed.commands), ids, target, workspace, settled: new Map() };
    if (await this.fromSession(view, documentPath, text)) return view;
    await this.ledger.load();
    const records = new Map<number, BlockRecord>();
    ids.forEach((id, index) => {
      const record = this.ledger.get(id);
      if (record) records.set(index, record);
    });
    const digests = await currentDigests(new Set([...records.values()].flatMap((r) => r.files.map((f) => f.real))), workspace);
    for (const [index, record] of records) {
      const state = recordState(record, (real) => digests.get(real) ?? null);
      if (state === 'undone') continue;
      const ran = record.files.length === 0;
      const file = record.files[0];
      view.settled.set(index, {
        status: ran ? (record.result.success ? 'ran' : 'ran-failed') : state === 'changed' ? 'changed' : record.partial ? 'partial' : 'applied',
        summary: record.partial ? `${record.partial}: ${record.result.summary}` : record.result.summary,
        ...(record.replay ? { replay: record.replay } : {}),
        ...(file && file.after !== null ? { open: shownPath(workspace, file.real) } : {}),
        record,
      });
    }
    return view;
  }

  /** An answer the session loop processed: each block shows what it gave there. */
  private async fromSession(view: AnswerView, documentPath: string | undefined, text: string): Promise<boolean> {
    const root = view.target.sessionRoot;
    const name = documentPath === undefined ? undefined : SESSION_ANSWER.exec(path.basename(documentPath));
    if (root === undefined || !name) return false;
    const { answerDigest, loadSession, sessionLayout } = require('./core/session.ts') as typeof import('./core/session.ts');
    let state;
    try {
      state = await loadSession(sessionLayout(root), name[1]!);
    } catch {
      return false;
    }
    const sha256 = answerDigest(text);
    if (!state.processedAnswers.includes(sha256)) {
      if (!state.isComplete) view.answers = { root, sessionId: state.sessionId, sequence: Number(name[2]), model: state.model };
      return false;
    }
    const entry = state.answers.find((a) => a.sha256 === sha256);
    view.processedBy = { sessionId: state.sessionId, sequence: entry?.sequence ?? 0 };
    const results: Array<CommandResult | undefined> = entry?.results ?? [];
    const indexes = new Map(view.parsed.commands.map((command, index) => [command, index]));
    inOrder(view.parsed).forEach((item, position) => {
      if (!('command' in item)) return;
      const result = results[position];
      const index = indexes.get(item.command)!;
      const where = `session ${state.sessionId}${entry ? ` #${entry.sequence}` : ''}`;
      view.settled.set(index, {
        status: result === undefined || result.success ? 'session' : 'session-failed',
        summary: result ? `${result.summary} (${where})` : `applied by ${where}`,
      });
    });
    return true;
  }

  /** One watcher per folder answers act on: a file changed outside the editor may change a state. */
  private watch(folder: string): void {
    if (this.watchers.has(folder)) return;
    const watcher = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(vscode.Uri.file(folder), '**/*'));
    const changed = () => this.invalidate();
    watcher.onDidChange(changed);
    watcher.onDidCreate(changed);
    watcher.onDidDelete(changed);
    this.watchers.set(folder, watcher);
  }
}

/**
 * Where the person sees a file of the workspace: under the workspace folder as opened, not under
 * its real path (they differ when the folder is reached through a symbolic link). Edits and
 * lookups of open documents use this path, so they meet the documents the person has open.
 */
export function shownPath(workspace: Workspace, real: string): string {
  if (workspace.root === workspace.realRoot) return real;
  const relative = path.relative(workspace.realRoot, real);
  return relative.startsWith('..') || path.isAbsolute(relative) ? real : path.join(workspace.root, relative);
}

/** Each file's digest as the editor sees it: an open document's text, else the disk's (null: missing). */
export async function currentDigests(reals: Iterable<string>, workspace: Workspace): Promise<Map<string, Digest>> {
  const out = new Map<string, Digest>();
  await Promise.all(
    [...reals].map(async (real) => {
      const text = await readCurrent(shownPath(workspace, real), true);
      // Something that is not a regular file matches no record.
      out.set(real, text === NOT_A_FILE ? 'not a file' : digest(text));
    }),
  );
  return out;
}

const NOT_A_FILE = Symbol('not a file');

/**
 * A file's text as the editor sees it: an open document's, else the disk's; null when missing.
 * Only regular files are read (a FIFO would never answer).
 */
export function currentText(real: string, workspace: Workspace): Promise<string | null> {
  return readCurrent(shownPath(workspace, real), false) as Promise<string | null>;
}

async function readCurrent(file: string, allowOther: boolean): Promise<string | null | typeof NOT_A_FILE> {
  const open = vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && d.uri.fsPath === file);
  if (open) return open.getText();
  try {
    const stats = await fs.stat(file);
    if (!stats.isFile()) return allowOther ? NOT_A_FILE : null;
    return await fs.readFile(file, 'utf8');
  } catch {
    return null;
  }
}
