// Applying an answer's blocks from the editor: the core plans each block (same sandbox and
// semantics as `belay blocks apply`), the editor carries the plan out as a WorkspaceEdit so Undo
// works, and remembers per document which blocks were applied, failed or were rejected.
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { blockKeys } from './blockKey.ts';
import { answerTarget, isOutboxDocument, repliedOutboxTime, type AnswerTarget } from './core/answerTarget.ts';
import { AnswerState, planCommand, runCommand, type Plan } from './core/executor.ts';
import { parseAnswer } from './core/parser.ts';
import { formatResult, type CommandResult } from './core/results.ts';
import { openWorkspace, type Workspace } from './core/sandbox.ts';
import type { Command, TextCommand } from './core/syntax.ts';
import type { PlannedContents } from './preview.ts';

export type OutcomeStatus = 'applied' | 'failed' | 'rejected';
export interface BlockOutcome {
  status: OutcomeStatus;
  summary: string;
  result: CommandResult;
}

/** What one open answer document has done so far. */
interface DocumentAnswer {
  state: AnswerState;
  outcomes: Map<string, BlockOutcome>;
}

interface Located {
  document: vscode.TextDocument;
  command: Command;
  key: string;
  workspace: Workspace;
  target: AnswerTarget;
}

/** Runs a shell command for the editor: tests replace it; the default shows it in a terminal. */
export type CommandRunner = (workspace: Workspace, command: TextCommand, timeoutMs: number) => Promise<CommandResult>;

function outcomeOf(result: CommandResult): BlockOutcome {
  const status: OutcomeStatus = result.success ? 'applied' : result.summary.startsWith('REJECTED') ? 'rejected' : 'failed';
  return { status, summary: result.summary, result };
}

const stripBom = (text: string) => (text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);

export class BlockApplier implements vscode.Disposable {
  private readonly answers = new Map<string, DocumentAnswer>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  /** Fires when a block of the document changed state (lenses show it). */
  readonly onDidChange = this.changed.event;
  runner: CommandRunner;
  private readonly ctx: BelayContext;
  private readonly previews: PlannedContents;

  constructor(ctx: BelayContext, previews: PlannedContents) {
    this.ctx = ctx;
    this.previews = previews;
    this.runner = (workspace, command, timeoutMs) => runInTerminal(workspace, command, timeoutMs);
  }

  dispose(): void {
    this.changed.dispose();
    this.answers.clear();
  }

  forget(uri: vscode.Uri): void {
    this.answers.delete(uri.toString());
  }

  outcome(uri: string, key: string): BlockOutcome | undefined {
    return this.answers.get(uri)?.outcomes.get(key);
  }

  /** The blocks of the document handled so far (applied, failed or rejected). */
  handledKeys(uri: string): string[] {
    return [...(this.answers.get(uri)?.outcomes.keys() ?? [])];
  }

  /** How many blocks that change the workspace are still to apply. */
  pendingCount(uri: string, keys: readonly string[]): number {
    const outcomes = this.answers.get(uri)?.outcomes;
    return keys.filter((k) => !outcomes?.has(k)).length;
  }

  private answer(uri: vscode.Uri): DocumentAnswer {
    let answer = this.answers.get(uri.toString());
    if (!answer) {
      answer = { state: new AnswerState(), outcomes: new Map() };
      this.answers.set(uri.toString(), answer);
    }
    return answer;
  }

  /** Refuses, saying why, when the workspace is not trusted. */
  private requireTrust(what: string): void {
    if (vscode.workspace.isTrusted) return;
    void vscode.window
      .showWarningMessage(`Belay does not ${what} in an untrusted workspace: agent output could change or run anything. Trust the workspace to allow it.`, 'Manage Workspace Trust')
      .then((choice) => choice && vscode.commands.executeCommand('workbench.trust.manage'));
    throw new UntrustedError(what);
  }

  private async document(uriText: string | undefined): Promise<vscode.TextDocument> {
    if (uriText === undefined) {
      const editor = vscode.window.activeTextEditor;
      if (!editor || editor.document.languageId !== 'codingagent') throw new Error('Open an LLM answer (a CodingAgent document) first.');
      return editor.document;
    }
    const uri = vscode.Uri.parse(uriText);
    return vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString()) ?? vscode.workspace.openTextDocument(uri);
  }

  /** `belay.blocks.runTimeoutSeconds` for the folder the command runs in. */
  private timeoutSeconds(folder: string): number {
    return this.ctx.config.get('blocks.runTimeoutSeconds', vscode.Uri.file(folder));
  }

  async targetOf(document: vscode.TextDocument): Promise<{ workspace: Workspace; target: AnswerTarget }> {
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const target = await answerTarget(document.uri.scheme === 'file' ? document.uri.fsPath : undefined, folders, this.ctx.config.get('blocks.sessionRoot', document.uri));
    if (!target) throw new Error('Open a folder first: command blocks act on the workspace folder.');
    return { target, workspace: await openWorkspace(target.workspace) };
  }

  private commandsOf(document: vscode.TextDocument): { commands: Command[]; keys: string[] } {
    const text = document.getText();
    if (isOutboxDocument(text, document.uri.scheme === 'file' ? document.uri.fsPath : undefined)) {
      throw new Error('This is an outbox: its blocks are the protocol\'s examples, to send to the LLM, not to apply.');
    }
    const { commands } = parseAnswer(text);
    return { commands, keys: blockKeys(commands) };
  }

  private async locate(uriText: unknown, line: unknown, key: unknown): Promise<Located> {
    const document = await this.document(typeof uriText === 'string' ? uriText : undefined);
    const { commands, keys } = this.commandsOf(document);
    let index = keys.indexOf(String(key));
    if (index === -1 && typeof line === 'number') index = commands.findIndex((c) => c.openTag.range.start.line === line);
    if (index === -1) throw new Error('That block is no longer in the answer; it was edited meanwhile.');
    const { workspace, target } = await this.targetOf(document);
    return { document, command: commands[index]!, key: keys[index]!, workspace, target };
  }

  /** A file is stale when it changed after the outbox the answer replies to was written. */
  private async staleReason(located: Located, real: string): Promise<string | undefined> {
    if (located.command.type !== 'EDIT_FILE' || located.target.sessionRoot === undefined) return undefined;
    if (this.answer(located.document.uri).state.history(real)) return undefined;
    const answerMtime = located.document.uri.scheme === 'file' ? await fs.stat(located.document.uri.fsPath).then((s) => s.mtimeMs, () => undefined) : undefined;
    const outbox = await repliedOutboxTime(located.target.sessionRoot, answerMtime);
    const mtime = await fs.stat(real).then((s) => s.mtimeMs, () => undefined);
    if (!outbox || mtime === undefined || mtime <= outbox.mtimeMs) return undefined;
    return `'${located.command.type === 'EDIT_FILE' ? located.command.path : ''}' changed after ${path.basename(outbox.file)} was written, so its line numbers may point at other lines now.`;
  }

  private record(located: Located, plan: Plan | undefined, result: CommandResult): BlockOutcome {
    const answer = this.answer(located.document.uri);
    if (plan && result.success) answer.state.record(plan);
    const outcome = outcomeOf(result);
    answer.outcomes.set(located.key, outcome);
    this.ctx.log.info(`${path.basename(located.document.uri.path)}: ${formatResult(result)}`);
    this.changed.fire(located.document.uri);
    return outcome;
  }

  /** Apply one block (Apply lens). Resolves with its outcome; undefined when the user declined. */
  async apply(uriText: unknown, line: unknown, key: unknown): Promise<BlockOutcome | undefined> {
    this.requireTrust('apply command blocks');
    const located = await this.locate(uriText, line, key);
    const answer = this.answer(located.document.uri);
    const done = answer.outcomes.get(located.key);
    if (done) {
      void vscode.window.showInformationMessage(`This block was handled already (${done.status}): ${done.summary}`);
      return done;
    }
    if (located.command.type === 'RUN_COMMAND') return this.run(uriText, line, key);
    const plan = await planCommand(located.workspace, located.command, answer.state);
    if (plan.kind === 'fail') {
      const outcome = this.record(located, plan, plan.result);
      void vscode.window.showErrorMessage(`${located.command.type} not applied: ${plan.result.summary}`);
      return outcome;
    }
    if (plan.kind === 'write' || plan.kind === 'delete') {
      const stale = await this.staleReason(located, plan.target.real);
      if (stale) {
        const choice = await vscode.window.showWarningMessage(`${stale} Apply anyway?`, { modal: true }, 'Apply');
        if (choice !== 'Apply') return undefined;
      }
      await this.requireSaved([plan.target.real]);
      const edit = new vscode.WorkspaceEdit();
      await addFileEdit(edit, plan.target.real, plan.kind === 'write' ? plan.after : null, undefined);
      const result = await applyAndSave(edit, [plan.target.real]);
      return this.record(located, plan, result ? plan.result : { commandType: plan.command.type, success: false, summary: 'The editor refused the edit' });
    }
    return this.record(located, plan, 'result' in plan ? plan.result : { commandType: located.command.type, success: true, summary: '' });
  }

  /** Preview one block: a diff of the target before and after, nothing written. */
  async preview(uriText: unknown, line: unknown, key: unknown): Promise<Plan> {
    const located = await this.locate(uriText, line, key);
    const plan = await planCommand(located.workspace, located.command, this.answer(located.document.uri).state);
    if (plan.kind === 'fail') {
      void vscode.window.showErrorMessage(`${located.command.type} would fail: ${plan.result.summary}`);
      return plan;
    }
    if (plan.kind !== 'write' && plan.kind !== 'delete') {
      void vscode.window.showInformationMessage(`${located.command.type} changes no file.`);
      return plan;
    }
    const name = path.basename(plan.target.real);
    const planned = this.previews.create(name, plan.kind === 'write' ? stripBom(plan.after) : '');
    const exists = await fs.stat(plan.target.real).then(() => true, () => false);
    const left = exists ? vscode.Uri.file(plan.target.real) : this.previews.create(name, '');
    const verb = plan.kind === 'delete' ? 'deleted' : exists ? 'after this block' : 'created';
    await vscode.commands.executeCommand('vscode.diff', left, planned, `${plan.target.relative} (${verb}, preview: nothing written)`, { preview: true });
    return plan;
  }

  /** Run one RUN_COMMAND block after a modal confirmation. */
  async run(uriText: unknown, line: unknown, key: unknown): Promise<BlockOutcome | undefined> {
    this.requireTrust('run commands');
    const located = await this.locate(uriText, line, key);
    if (located.command.type !== 'RUN_COMMAND') throw new Error('Only RUN_COMMAND blocks run.');
    const done = this.answer(located.document.uri).outcomes.get(located.key);
    if (done) {
      void vscode.window.showInformationMessage(`This command ran already: ${done.summary}`);
      return done;
    }
    const choice = await vscode.window.showWarningMessage(
      'Run this command from the LLM answer?',
      { modal: true, detail: `${located.command.body.text}\n\nin ${located.workspace.root}, stopped after ${this.timeoutSeconds(located.workspace.root)} s` },
      'Run',
    );
    if (choice !== 'Run') return undefined;
    const result = await this.runner(located.workspace, located.command, this.timeoutSeconds(located.workspace.root) * 1000);
    return this.record(located, { kind: 'run', command: located.command }, result);
  }

  /**
   * Applies every block not handled yet, in order, as `belay blocks apply` does: file changes go
   * as one WorkspaceEdit per stretch between shell commands (which need the files written before
   * them), each shell command after one confirmation for all.
   */
  async applyAll(uriText?: unknown, runsConfirmed = false): Promise<BlockOutcome[] | undefined> {
    this.requireTrust('apply command blocks');
    const document = await this.document(typeof uriText === 'string' ? uriText : undefined);
    const { commands, keys } = this.commandsOf(document);
    const { workspace, target } = await this.targetOf(document);
    const answer = this.answer(document.uri);
    const pending = commands.map((command, i) => ({ command, key: keys[i]! })).filter((p) => !answer.outcomes.has(p.key));
    if (pending.length === 0) {
      void vscode.window.showInformationMessage('Every block of this answer was handled already.');
      return [];
    }
    const runs = pending.filter((p) => p.command.type === 'RUN_COMMAND');
    if (runs.length > 0 && !runsConfirmed) {
      const list = runs.map((r) => `$ ${(r.command as TextCommand).body.text}`).join('\n');
      const choice = await vscode.window.showWarningMessage(
        `Apply ${pending.length} blocks, running ${runs.length} command${runs.length === 1 ? '' : 's'}?`,
        { modal: true, detail: `${list}\n\nin ${workspace.root}` },
        'Apply and Run',
      );
      if (choice !== 'Apply and Run') return undefined;
    }
    if (!runsConfirmed) {
      const stale: string[] = [];
      for (const item of pending) {
        if (item.command.type !== 'EDIT_FILE') continue;
        const located: Located = { document, command: item.command, key: item.key, workspace, target };
        const plan = await planCommand(workspace, item.command, answer.state);
        const reason = plan.kind === 'write' ? await this.staleReason(located, plan.target.real) : undefined;
        if (reason) stale.push(reason);
      }
      if (stale.length > 0) {
        const choice = await vscode.window.showWarningMessage('Some files changed since the LLM saw them. Apply anyway?', { modal: true, detail: stale.join('\n') }, 'Apply');
        if (choice !== 'Apply') return undefined;
      }
    }
    const outcomes: BlockOutcome[] = [];
    let stretch: typeof pending = [];
    const flush = async () => {
      if (stretch.length === 0) return;
      outcomes.push(...(await this.applyStretch(document, workspace, target, stretch, false)));
      stretch = [];
    };
    for (const item of pending) {
      if (item.command.type === 'RUN_COMMAND') {
        await flush();
        const located: Located = { document, command: item.command, key: item.key, workspace, target };
        const result = await this.runner(workspace, item.command, this.timeoutSeconds(workspace.root) * 1000);
        outcomes.push(this.record(located, { kind: 'run', command: item.command }, result));
      } else {
        stretch.push(item);
      }
    }
    await flush();
    const failed = outcomes.filter((o) => o.status !== 'applied').length;
    const message = `Applied ${outcomes.length - failed} of ${outcomes.length} blocks${failed ? `; ${failed} failed (see the lenses)` : ''}.`;
    if (failed) void vscode.window.showWarningMessage(message);
    else void vscode.window.showInformationMessage(message);
    return outcomes;
  }

  /** Preview All: the whole answer as one reviewable change (refactor preview, a checkbox per file). */
  async previewAll(uriText?: unknown): Promise<boolean> {
    const document = await this.document(typeof uriText === 'string' ? uriText : undefined);
    const { commands, keys } = this.commandsOf(document);
    const { workspace, target } = await this.targetOf(document);
    const answer = this.answer(document.uri);
    const pending = commands.map((command, i) => ({ command, key: keys[i]! })).filter((p) => !answer.outcomes.has(p.key) && p.command.type !== 'RUN_COMMAND');
    if (pending.length === 0) {
      void vscode.window.showInformationMessage('No file changes left to preview in this answer.');
      return false;
    }
    if (!vscode.workspace.isTrusted) {
      void vscode.window.showWarningMessage('This workspace is not trusted: Preview All shows the planned files without applying them.');
    }
    const outcomes = await this.applyStretch(document, workspace, target, pending, true);
    return outcomes.some((o) => o.status === 'applied');
  }

  /** Plans the items on a fork of the answer state and applies their file changes as one edit. */
  private async applyStretch(document: vscode.TextDocument, workspace: Workspace, target: AnswerTarget, items: Array<{ command: Command; key: string }>, confirm: boolean): Promise<BlockOutcome[]> {
    const answer = this.answer(document.uri);
    const simulation = answer.state.fork();
    const planned: Array<{ item: { command: Command; key: string }; plan: Plan }> = [];
    for (const item of items) {
      const plan = await planCommand(workspace, item.command, simulation);
      simulation.record(plan);
      planned.push({ item, plan });
    }
    const files = new Map<string, string[]>();
    for (const { item, plan } of planned) {
      if (plan.kind !== 'write' && plan.kind !== 'delete') continue;
      const labels = files.get(plan.target.real) ?? [];
      labels.push(`${item.command.type} line ${item.command.openTag.range.start.line + 1}`);
      files.set(plan.target.real, labels);
    }
    const edit = new vscode.WorkspaceEdit();
    if (!confirm && vscode.workspace.isTrusted) await this.requireSaved([...files.keys()]);
    for (const [real, labels] of files) {
      const final = simulation.simulated(real);
      await addFileEdit(edit, real, final === undefined ? null : final, confirm ? { needsConfirmation: true, label: path.relative(workspace.realRoot, real), description: labels.join(', ') } : undefined);
    }
    // With the refactor preview's checkboxes some files may be left out: below, a block counts as
    // applied only when its file now holds what was planned.
    const applied = files.size === 0 ? true : await applyAndSave(edit, [...files.keys()]);
    const outcomes: BlockOutcome[] = [];
    for (const { item, plan } of planned) {
      const located: Located = { document, command: item.command, key: item.key, workspace, target };
      if (plan.kind === 'write' || plan.kind === 'delete') {
        if (!applied) continue;
        const final = simulation.simulated(plan.target.real);
        const now = await currentText(plan.target.real);
        const matches = final === null ? now === null : now !== null && stripBom(now) === stripBom(final ?? '');
        if (!matches) {
          if (confirm) continue;
          outcomes.push(this.record(located, undefined, { commandType: item.command.type, success: false, summary: 'The editor did not apply this change' }));
          continue;
        }
      } else if (confirm && plan.kind !== 'fail') {
        continue;
      }
      const result = 'result' in plan ? plan.result : { commandType: item.command.type, success: true, summary: '' };
      outcomes.push(this.record(located, plan, result));
    }
    return outcomes;
  }

  /** READ_FILE's target, for the Open File lens. */
  async readTarget(uriText: unknown, line: unknown, key: unknown): Promise<string> {
    const located = await this.locate(uriText, line, key);
    const plan = await planCommand(located.workspace, located.command, this.answer(located.document.uri).state);
    if (plan.kind !== 'read') throw new Error(plan.kind === 'fail' ? plan.result.summary : 'Not a READ_FILE block.');
    return plan.target.real;
  }

  /** MESSAGE and DONE: their text, shown. */
  async showMessage(uriText: unknown, line: unknown, key: unknown): Promise<void> {
    const located = await this.locate(uriText, line, key);
    if (located.command.type !== 'MESSAGE' && located.command.type !== 'DONE') return;
    const text = located.command.body.text || (located.command.type === 'DONE' ? 'Task complete' : '(empty message)');
    void vscode.window.showInformationMessage(`${located.command.type === 'DONE' ? 'The LLM says the task is done: ' : 'The LLM says: '}${text}`);
  }

  /** Belay plans from the files on disk: an open file with unsaved changes must be saved first. */
  private async requireSaved(reals: readonly string[]): Promise<void> {
    const dirty = vscode.workspace.textDocuments.filter((d) => d.isDirty && d.uri.scheme === 'file' && reals.includes(d.uri.fsPath));
    if (dirty.length > 0) throw new Error(`Save or revert ${dirty.map((d) => `'${path.basename(d.uri.fsPath)}'`).join(', ')} first: Belay plans from the files on disk.`);
  }
}

export class UntrustedError extends Error {
  constructor(what: string) {
    super(`Belay does not ${what} in an untrusted workspace.`);
    this.name = 'UntrustedError';
  }
}

async function currentText(real: string): Promise<string | null> {
  const open = vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && d.uri.fsPath === real);
  if (open) return open.getText();
  try {
    return await fs.readFile(real, 'utf8');
  } catch {
    return null;
  }
}

/** The change that turns `real` into `final` (null: deleted), through documents so Undo works. */
async function addFileEdit(edit: vscode.WorkspaceEdit, real: string, final: string | null, metadata: vscode.WorkspaceEditEntryMetadata | undefined): Promise<void> {
  const uri = vscode.Uri.file(real);
  const exists = await fs.lstat(real).then(() => true, () => false);
  if (final === null) {
    if (exists) edit.deleteFile(uri, { ignoreIfNotExists: true }, metadata);
    return;
  }
  const text = stripBom(final);
  if (!exists) {
    edit.createFile(uri, { ignoreIfExists: true }, metadata);
    if (text !== '') edit.insert(uri, new vscode.Position(0, 0), text, metadata);
    return;
  }
  let document: vscode.TextDocument;
  try {
    document = await vscode.workspace.openTextDocument(uri);
  } catch {
    // Not text the editor can open (binary): replaced whole, without Undo.
    edit.createFile(uri, { overwrite: true, contents: new TextEncoder().encode(final) }, metadata);
    return;
  }
  const all = new vscode.Range(new vscode.Position(0, 0), document.lineAt(document.lineCount - 1).range.end);
  if (document.getText() !== text) edit.replace(uri, all, text, metadata);
}

/** Applies the edit, then saves what it touched, so the files on disk are what `belay blocks apply` would write. */
async function applyAndSave(edit: vscode.WorkspaceEdit, reals: readonly string[]): Promise<boolean> {
  const ok = await vscode.workspace.applyEdit(edit);
  if (!ok) return false;
  for (const document of vscode.workspace.textDocuments) {
    if (document.uri.scheme === 'file' && document.isDirty && reals.includes(document.uri.fsPath)) await document.save();
  }
  return true;
}

/** Runs the command with the core's bounded runner, its output shown in a terminal. */
function runInTerminal(workspace: Workspace, command: TextCommand, timeoutMs: number): Promise<CommandResult> {
  return new Promise((resolve) => {
    const write = new vscode.EventEmitter<string>();
    const close = new vscode.EventEmitter<number | void>();
    const abort = new AbortController();
    let finished = false;
    const crlf = (text: string) => text.replace(/\r?\n/g, '\r\n');
    const pty: vscode.Pseudoterminal = {
      onDidWrite: write.event,
      onDidClose: close.event,
      open: () => {
        write.fire(crlf(`$ ${command.body.text}\n`));
        void runCommand(workspace, command.body.text, { runTimeoutMs: timeoutMs, signal: abort.signal }).then((result) => {
          finished = true;
          write.fire(crlf(`${result.output ? `${result.output}\n` : ''}\n${formatResult({ ...result, output: undefined })}\n\nPress any key to close.\n`));
          resolve(result);
        });
      },
      close: () => {
        if (!finished) abort.abort();
      },
      handleInput: () => {
        if (finished) close.fire();
      },
    };
    const terminal = vscode.window.createTerminal({ name: 'Belay: RUN_COMMAND', pty, isTransient: true });
    terminal.show(true);
  });
}

