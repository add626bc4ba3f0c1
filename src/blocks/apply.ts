// Applying an answer's blocks from the editor: the core plans them (planAnswer: the same planning
// as the language server's diagnostics and `belay blocks apply`), once per user action; the editor
// carries the plans out as a WorkspaceEdit so Undo works, and remembers per document which blocks
// were applied, failed or were rejected. Loaded with the first block command, not at activation.
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { answerTarget, isOutboxDocument, type AnswerTarget } from './core/answerTarget.ts';
import { blockKeys } from './core/blockKey.ts';
import { runCommand } from './core/executor.ts';
import { lensArguments } from './core/lenses.ts';
import { parseAnswer } from './core/parser.ts';
import { AnswerState, planAnswer, type AnswerPlan, type Plan, type PlannedBlock } from './core/plan.ts';
import { failure, formatResult, outcomeStatus, type Outcome, type OutcomeStatus } from './core/results.ts';
import { openWorkspace, type Workspace } from './core/sandbox.ts';
import type { ParseResult, TextCommand } from './core/syntax.ts';
import type { PlannedContents } from './preview.ts';

/** A handled block, as its lens shows it. */
export interface BlockOutcome extends Outcome {
  status: OutcomeStatus;
  summary: string;
}

/** What one open answer document has done so far. */
interface Progress {
  state: AnswerState;
  outcomes: Map<string, BlockOutcome>;
}

/** An answer document, parsed, with the folder its blocks act on and what was done so far. */
interface OpenAnswer {
  document: vscode.TextDocument;
  parsed: ParseResult;
  keys: string[];
  workspace: Workspace;
  target: AnswerTarget;
  progress: Progress;
}

const stripBom = (text: string) => (text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);

/** What a plan that changes no file gives once carried out. */
function planOutcome(plan: Plan): Outcome {
  if (plan.kind === 'fail') return { result: plan.result, code: plan.code };
  return { result: 'result' in plan ? plan.result : { commandType: plan.command.type, success: true, summary: '' } };
}

/** Why an EDIT_FILE may edit other lines than the LLM meant (its file changed after the outbox). */
function staleReason(block: PlannedBlock): string {
  const file = block.command.type === 'EDIT_FILE' ? block.command.path : '';
  return `'${file}' changed after ${path.basename(block.staleSince ?? '')} was written, so its line numbers may point at other lines now.`;
}

export class BlockApplier implements vscode.Disposable {
  private readonly progress = new Map<string, Progress>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  /** Fires when a block of the document changed state (lenses show it). */
  readonly onDidChange = this.changed.event;
  private readonly ctx: BelayContext;
  private readonly previews: PlannedContents;

  constructor(ctx: BelayContext, previews: PlannedContents) {
    this.ctx = ctx;
    this.previews = previews;
  }

  dispose(): void {
    this.changed.dispose();
    this.progress.clear();
  }

  forget(uri: vscode.Uri): void {
    this.progress.delete(uri.toString());
  }

  outcome(uri: string, key: string): BlockOutcome | undefined {
    return this.progress.get(uri)?.outcomes.get(key);
  }

  /** The blocks of the document handled so far (applied, failed or rejected). */
  handledKeys(uri: string): string[] {
    return [...(this.progress.get(uri)?.outcomes.keys() ?? [])];
  }

  private progressOf(uri: vscode.Uri): Progress {
    let progress = this.progress.get(uri.toString());
    if (!progress) {
      progress = { state: new AnswerState(), outcomes: new Map() };
      this.progress.set(uri.toString(), progress);
    }
    return progress;
  }

  private async document(uriText: unknown): Promise<vscode.TextDocument> {
    if (typeof uriText !== 'string') {
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

  /** The answer in the document (the active editor's without a URI), parsed and targeted. */
  private async open(uriText: unknown): Promise<OpenAnswer> {
    const document = await this.document(uriText);
    const documentPath = document.uri.scheme === 'file' ? document.uri.fsPath : undefined;
    const text = document.getText();
    if (isOutboxDocument(text, documentPath)) {
      throw new Error('This is an outbox: its blocks are the protocol\'s examples, to send to the LLM, not to apply.');
    }
    const parsed = parseAnswer(text);
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const target = await answerTarget(documentPath, folders, this.ctx.config.get('blocks.sessionRoot', document.uri));
    if (!target) throw new Error('Open a folder first: command blocks act on the workspace folder.');
    const workspace = await openWorkspace(target.workspace);
    return { document, parsed, keys: blockKeys(parsed.commands), workspace, target, progress: this.progressOf(document.uri) };
  }

  /** The block a lens names: by its key, else (edited meanwhile) by the line of its opening tag. */
  private async locate(args: readonly unknown[]): Promise<{ answer: OpenAnswer; index: number }> {
    const lens = lensArguments(args);
    if (!lens) throw new Error('This command runs from the CodeLens above a block.');
    const [uri, line, key] = lens;
    const answer = await this.open(uri);
    let index = answer.keys.indexOf(key);
    if (index === -1) index = answer.parsed.commands.findIndex((c) => c.openTag.range.start.line === line);
    if (index === -1) throw new Error('That block is no longer in the answer; it was edited meanwhile.');
    return { answer, index };
  }

  private handled(answer: OpenAnswer, index: number): BlockOutcome | undefined {
    return answer.progress.outcomes.get(answer.keys[index]!);
  }

  /**
   * Plans the answer's blocks that `skip` leaves, from where the answer stands; with `checkStale`,
   * edits of files changed since the outbox the answer replies to are marked.
   */
  private planBlocks(answer: OpenAnswer, skip: (index: number) => boolean, checkStale = false): Promise<AnswerPlan> {
    const documentPath = answer.document.uri.scheme === 'file' ? answer.document.uri.fsPath : undefined;
    return planAnswer(answer.workspace, answer.parsed, {
      state: answer.progress.state,
      skip,
      ...(checkStale ? { stale: { target: answer.target, answerPath: documentPath } } : {}),
    });
  }

  private async planBlock(answer: OpenAnswer, index: number, checkStale = false): Promise<PlannedBlock> {
    return (await this.planBlocks(answer, (i) => i !== index, checkStale)).blocks[0]!;
  }

  private record(answer: OpenAnswer, block: { index: number; plan?: Plan }, outcome: Outcome): BlockOutcome {
    if (block.plan && outcome.result.success) answer.progress.state.record(block.plan);
    const recorded: BlockOutcome = { ...outcome, status: outcomeStatus(outcome), summary: outcome.result.summary };
    answer.progress.outcomes.set(answer.keys[block.index]!, recorded);
    this.ctx.log.info(`${path.basename(answer.document.uri.path)}: ${formatResult(outcome.result)}`);
    this.changed.fire(answer.document.uri);
    return recorded;
  }

  /** Apply one block (Apply lens). Resolves with its outcome; undefined when the user declined. */
  async apply(args: readonly unknown[]): Promise<BlockOutcome | undefined> {
    this.ctx.trust.assert('applyBlocks');
    const { answer, index } = await this.locate(args);
    const done = this.handled(answer, index);
    if (done) {
      void vscode.window.showInformationMessage(`This block was handled already (${done.status}): ${done.summary}`);
      return done;
    }
    if (answer.parsed.commands[index]!.type === 'RUN_COMMAND') return this.runBlock(answer, index);
    const block = await this.planBlock(answer, index, true);
    const { command, plan } = block;
    if (plan.kind === 'fail') {
      const outcome = this.record(answer, block, planOutcome(plan));
      void vscode.window.showErrorMessage(`${command.type} not applied: ${plan.result.summary}`);
      return outcome;
    }
    if (plan.kind === 'write' || plan.kind === 'delete') {
      if (block.staleSince !== undefined) {
        const choice = await vscode.window.showWarningMessage(`${staleReason(block)} Apply anyway?`, { modal: true }, 'Apply');
        if (choice !== 'Apply') return undefined;
      }
      await this.requireSaved([plan.target.real]);
      const edit = new vscode.WorkspaceEdit();
      await addFileEdit(edit, plan.target.real, plan.kind === 'write' ? plan.after : null, undefined);
      const applied = await applyAndSave(edit, [plan.target.real]);
      return this.record(answer, block, applied ? { result: plan.result } : failure('editor-refused', plan.command.type, 'The editor refused the edit'));
    }
    return this.record(answer, block, planOutcome(plan));
  }

  /** Preview one block: a diff of the target before and after, nothing written. */
  async preview(args: readonly unknown[]): Promise<Plan> {
    const { answer, index } = await this.locate(args);
    const { command, plan } = await this.planBlock(answer, index);
    if (plan.kind === 'fail') {
      void vscode.window.showErrorMessage(`${command.type} would fail: ${plan.result.summary}`);
      return plan;
    }
    if (plan.kind !== 'write' && plan.kind !== 'delete') {
      void vscode.window.showInformationMessage(`${command.type} changes no file.`);
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

  /** Run one RUN_COMMAND block (Run lens) after a modal confirmation. */
  async run(args: readonly unknown[]): Promise<BlockOutcome | undefined> {
    this.ctx.trust.assert('runCommands');
    const { answer, index } = await this.locate(args);
    if (answer.parsed.commands[index]!.type !== 'RUN_COMMAND') throw new Error('Only RUN_COMMAND blocks run.');
    const done = this.handled(answer, index);
    if (done) {
      void vscode.window.showInformationMessage(`This command ran already: ${done.summary}`);
      return done;
    }
    return this.runBlock(answer, index);
  }

  private async runBlock(answer: OpenAnswer, index: number): Promise<BlockOutcome | undefined> {
    this.ctx.trust.assert('runCommands');
    const command = answer.parsed.commands[index] as TextCommand;
    const seconds = this.timeoutSeconds(answer.workspace.root);
    const choice = await vscode.window.showWarningMessage(
      'Run this command from the LLM answer?',
      { modal: true, detail: `${command.body.text}\n\nin ${answer.workspace.root}, stopped after ${seconds} s` },
      'Run',
    );
    if (choice !== 'Run') return undefined;
    return this.runConfirmed(answer, index, command);
  }

  private async runConfirmed(answer: OpenAnswer, index: number, command: TextCommand): Promise<BlockOutcome> {
    const outcome = await runInTerminal(answer.workspace, command, this.timeoutSeconds(answer.workspace.root) * 1000);
    return this.record(answer, { index, plan: { kind: 'run', command } }, outcome);
  }

  /**
   * Applies every block not handled yet, in order, as `belay blocks apply` does: file changes go
   * as one WorkspaceEdit per stretch between shell commands (which need the files written before
   * them), each shell command after one confirmation for all. The answer is planned once; only a
   * shell command, which may change any file, has what follows it planned again after it ran.
   * `runsConfirmed`: the caller (a test) has asked about the commands and stale files already.
   */
  async applyAll(uriText: unknown, runsConfirmed: boolean): Promise<BlockOutcome[] | undefined> {
    this.ctx.trust.assert('applyBlocks');
    const answer = await this.open(uriText);
    const attempted = new Set<number>();
    const skip = (index: number) => attempted.has(index) || this.handled(answer, index) !== undefined;
    const pending = (await this.planBlocks(answer, skip, !runsConfirmed)).blocks;
    if (pending.length === 0) {
      void vscode.window.showInformationMessage('Every block of this answer was handled already.');
      return [];
    }
    const runs = pending.filter((b) => b.command.type === 'RUN_COMMAND');
    if (runs.length > 0 && !runsConfirmed) {
      const list = runs.map((r) => `$ ${(r.command as TextCommand).body.text}`).join('\n');
      const choice = await vscode.window.showWarningMessage(
        `Apply ${pending.length} blocks, running ${runs.length} command${runs.length === 1 ? '' : 's'}?`,
        { modal: true, detail: `${list}\n\nin ${answer.workspace.root}` },
        'Apply and Run',
      );
      if (choice !== 'Apply and Run') return undefined;
    }
    const stale = pending.filter((b) => b.staleSince !== undefined).map(staleReason);
    if (stale.length > 0) {
      const choice = await vscode.window.showWarningMessage('Some files changed since the LLM saw them. Apply anyway?', { modal: true, detail: stale.join('\n') }, 'Apply');
      if (choice !== 'Apply') return undefined;
    }
    const outcomes: BlockOutcome[] = [];
    let blocks = pending;
    while (blocks.length > 0) {
      const next = blocks.findIndex((b) => b.command.type === 'RUN_COMMAND');
      const stretch = next === -1 ? blocks : blocks.slice(0, next);
      for (const block of stretch) attempted.add(block.index);
      if (stretch.length > 0) outcomes.push(...(await this.applyStretch(answer, stretch, false)));
      if (next === -1) break;
      const run = blocks[next]!;
      attempted.add(run.index);
      outcomes.push(await this.runConfirmed(answer, run.index, run.command as TextCommand));
      blocks = next + 1 < blocks.length ? (await this.planBlocks(answer, skip)).blocks : [];
    }
    const failed = outcomes.filter((o) => o.status !== 'applied').length;
    const message = `Applied ${outcomes.length - failed} of ${outcomes.length} blocks${failed ? `; ${failed} failed (see the lenses)` : ''}.`;
    if (failed) void vscode.window.showWarningMessage(message);
    else void vscode.window.showInformationMessage(message);
    return outcomes;
  }

  /** Preview All: the whole answer as one reviewable change (refactor preview, a checkbox per file). */
  async previewAll(uriText: unknown): Promise<boolean> {
    const answer = await this.open(uriText);
    const skip = (index: number) => this.handled(answer, index) !== undefined || answer.parsed.commands[index]!.type === 'RUN_COMMAND';
    const { blocks } = await this.planBlocks(answer, skip);
    if (blocks.length === 0) {
      void vscode.window.showInformationMessage('No file changes left to preview in this answer.');
      return false;
    }
    if (!this.ctx.trust.trusted) {
      void vscode.window.showWarningMessage('This workspace is not trusted: Preview All shows the planned files without applying them.');
    }
    const outcomes = await this.applyStretch(answer, blocks, true);
    return outcomes.some((o) => o.status === 'applied');
  }

  /**
   * Applies the file changes of planned blocks (no shell command among them) as one edit, each file
   * going straight to its final text; `confirm` shows it in the refactor preview first.
   */
  private async applyStretch(answer: OpenAnswer, blocks: readonly PlannedBlock[], confirm: boolean): Promise<BlockOutcome[]> {
    /** Each touched file's text after the stretch (null: deleted), and the blocks that touch it. */
    const finals = new Map<string, { text: string | null; labels: string[] }>();
    for (const { command, plan } of blocks) {
      if (plan.kind !== 'write' && plan.kind !== 'delete') continue;
      const labels = finals.get(plan.target.real)?.labels ?? [];
      labels.push(`${command.type} line ${command.openTag.range.start.line + 1}`);
      finals.set(plan.target.real, { text: plan.kind === 'write' ? plan.after : null, labels });
    }
    const reals = [...finals.keys()];
    if (!confirm) await this.requireSaved(reals);
    const edit = new vscode.WorkspaceEdit();
    for (const [real, { text, labels }] of finals) {
      await addFileEdit(edit, real, text, confirm ? { needsConfirmation: true, label: path.relative(answer.workspace.realRoot, real), description: labels.join(', ') } : undefined);
    }
    // With the refactor preview's checkboxes some files may be left out: below, a block counts as
    // applied only when its file now holds what was planned.
    const applied = finals.size === 0 ? true : await applyAndSave(edit, reals);
    const outcomes: BlockOutcome[] = [];
    for (const block of blocks) {
      const { command, plan } = block;
      if (plan.kind === 'write' || plan.kind === 'delete') {
        if (!applied) continue;
        const final = finals.get(plan.target.real)!.text;
        const now = await currentText(plan.target.real);
        const matches = final === null ? now === null : now !== null && stripBom(now) === stripBom(final);
        if (!matches) {
          if (confirm) continue;
          outcomes.push(this.record(answer, { index: block.index }, failure('not-applied', command.type, 'The editor did not apply this change')));
          continue;
        }
      } else if (confirm && plan.kind !== 'fail') {
        continue;
      }
      outcomes.push(this.record(answer, block, planOutcome(plan)));
    }
    return outcomes;
  }

  /** READ_FILE's target, for the Open File lens. */
  async readTarget(args: readonly unknown[]): Promise<string> {
    const { answer, index } = await this.locate(args);
    const { plan } = await this.planBlock(answer, index);
    if (plan.kind !== 'read') throw new Error(plan.kind === 'fail' ? plan.result.summary : 'Not a READ_FILE block.');
    return plan.target.real;
  }

  /** MESSAGE and DONE: their text, shown. */
  async showMessage(args: readonly unknown[]): Promise<void> {
    const { answer, index } = await this.locate(args);
    const command = answer.parsed.commands[index]!;
    if (command.type !== 'MESSAGE' && command.type !== 'DONE') return;
    const text = command.body.text || (command.type === 'DONE' ? 'Task complete' : '(empty message)');
    void vscode.window.showInformationMessage(`${command.type === 'DONE' ? 'The LLM says the task is done: ' : 'The LLM says: '}${text}`);
  }

  /** Belay plans from the files on disk: an open file with unsaved changes must be saved first. */
  private async requireSaved(reals: readonly string[]): Promise<void> {
    const dirty = vscode.workspace.textDocuments.filter((d) => d.isDirty && d.uri.scheme === 'file' && reals.includes(d.uri.fsPath));
    if (dirty.length > 0) throw new Error(`Save or revert ${dirty.map((d) => `'${path.basename(d.uri.fsPath)}'`).join(', ')} first: Belay plans from the files on disk.`);
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
function runInTerminal(workspace: Workspace, command: TextCommand, timeoutMs: number): Promise<Outcome> {
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
        void runCommand(workspace, command.body.text, { runTimeoutMs: timeoutMs, signal: abort.signal }).then((outcome) => {
          finished = true;
          const { result } = outcome;
          write.fire(crlf(`${result.output ? `${result.output}\n` : ''}\n${formatResult({ ...result, output: undefined })}\n\nPress any key to close.\n`));
          resolve(outcome);
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

