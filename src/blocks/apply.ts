// Applying an answer's blocks from the editor: the core plans them (planAnswer: the same planning
// as the language server's diagnostics and `belay blocks apply`), once per user action, against the
// files as the editor has them; the editor carries the plans out as a WorkspaceEdit so Undo works,
// and records what each block wrote in the ledger, from which every block's state is derived
// (states.ts). Blocks that cannot succeed are not attempted; each action says why. Loaded with the
// first block command or answer document, not at activation.
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { errorMessage } from '../shared/errors.ts';
import type { ShellPolicy } from '../shared/commandSandbox.ts';
import { BelayPseudoterminal, TerminalOpener } from '../ui/pseudoterminal.ts';
import type { CommandShell } from './commandShell.ts';
import { changesWorkspace } from './core/blockKey.ts';
import { applyHunks, diffLines, type Hunk } from './core/diff.ts';
import { runCommand } from './core/executor.ts';
import { digest, type BlockRecord, type FileChange } from './core/ledger.ts';
import { lensArguments, type LensArguments } from './core/lenses.ts';
import { splitFileLines } from './core/lines.ts';
import { AnswerState, planAnswer, replayOf, type AnswerPlan, type Plan, type PlannedBlock } from './core/plan.ts';
import { commandEcho, commandEnding, failed, failure, formatResult, outcomeStatus, parseErrorOutcome, type CommandResult, type Outcome, type OutcomeStatus } from './core/results.ts';
import { recordAnswer, type StepOutcome } from './core/session.ts';
import type { Workspace } from './core/sandbox.ts';
import { inOrder, type TextCommand } from './core/syntax.ts';
import { PLAN_SCHEME, type PlannedContents } from './preview.ts';
import { currentDigests, currentText, shownPath, type AnswerView, type BlockStates } from './states.ts';

/** A handled block, as the action that handled it reports it. */
export interface BlockOutcome extends Outcome {
  status: OutcomeStatus;
  summary: string;
}

const stripBom = (text: string) => (text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** What a plan that changes no file gives once carried out. */
function planOutcome(plan: Plan): Outcome {
  if (plan.kind === 'fail') return { result: plan.result, code: plan.code };
  return { result: 'result' in plan ? plan.result : { commandType: plan.command.type, success: true, summary: '' } };
}

function asBlockOutcome(outcome: Outcome): BlockOutcome {
  return { ...outcome, status: outcomeStatus(outcome), summary: outcome.result.summary };
}

/** Why an EDIT_FILE may edit other lines than the LLM meant (its file changed after the outbox). */
function staleReason(block: PlannedBlock): string {
  const file = block.command.type === 'EDIT_FILE' ? block.command.path : '';
  return `'${file}' changed since the LLM saw it (${path.basename(block.staleSince ?? '')}), so its line numbers may point at other lines now.`;
}

/** A name for what one action applies together: Undo Answer and the log refer to it. */
function newBatch(): string {
  return `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}

function isFileChange(plan: Plan): plan is Extract<Plan, { kind: 'write' | 'delete' }> {
  return plan.kind === 'write' || plan.kind === 'delete';
}

export class BlockApplier implements vscode.Disposable {
  private readonly ctx: BelayContext;
  private readonly previews: PlannedContents;
  private readonly states: BlockStates;
  /** How RUN_COMMAND runs (sandboxed or not, the network) and the questions asked about it. */
  readonly shell: CommandShell;
  /** Where RUN_COMMAND's terminals open (tests may replace `terminals.create`); closed with the applier. */
  readonly terminals = new TerminalOpener();

  constructor(ctx: BelayContext, previews: PlannedContents, states: BlockStates, shell: CommandShell) {
    this.ctx = ctx;
    this.previews = previews;
    this.states = states;
    this.shell = shell;
  }

  dispose(): void {
    // The states and previews have owners of their own.
    this.terminals.dispose();
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

  /** The answer in the document (the active editor's without a URI), with its blocks' states. */
  private async open(uriText: unknown): Promise<AnswerView> {
    return this.states.view(await this.document(uriText));
  }

  /** The block a lens names: by its key, else (edited meanwhile) by the line of its opening tag. */
  private async locate(args: readonly unknown[]): Promise<{ view: AnswerView; index: number }> {
    const lens = lensArguments(args);
    if (!lens) throw new Error('This command runs from the CodeLens above a block.');
    const [uri, line, key] = lens;
    const view = await this.open(uri);
    let index = view.keys.indexOf(key);
    if (index === -1) index = view.parsed.commands.findIndex((c) => c.openTag.range.start.line === line);
    if (index === -1) throw new Error('That block is no longer in the answer; it was edited meanwhile.');
    return { view, index };
  }

  /**
   * Plans the answer's blocks that are not settled and that `skip` leaves, from where the answer
   * stands (settled blocks replayed), against the files as the editor has them (unsaved documents
   * included); with `checkStale`, edits of files changed since the outbox are marked.
   */
  private async planBlocks(view: AnswerView, skip: (index: number) => boolean, checkStale = false): Promise<AnswerPlan> {
    const documentPath = view.document.uri.scheme === 'file' ? view.document.uri.fsPath : undefined;
    return planAnswer(view.workspace, view.parsed, {
      state: new AnswerState({ texts: await unsavedTexts() }),
      settled: (index) => view.settled.get(index)?.replay,
      skip: (index) => view.settled.has(index) || skip(index),
      ...(checkStale ? { stale: { target: view.target, answerPath: documentPath } } : {}),
    });
  }

  private async planBlock(view: AnswerView, index: number, checkStale = false): Promise<PlannedBlock> {
    const block = (await this.planBlocks(view, (i) => i !== index, checkStale)).blocks[0];
    if (!block) throw new Error('That block is applied already.');
    return block;
  }

  /** Apply one block (Apply lens). Resolves with its outcome; undefined when the user declined. */
  async apply(args: readonly unknown[]): Promise<BlockOutcome | undefined> {
    this.ctx.trust.assert('applyBlocks');
    const { view, index } = await this.locate(args);
    const settled = view.settled.get(index);
    if (settled) {
      void vscode.window.showInformationMessage(`This block is applied already: ${settled.summary}`);
      return { result: { commandType: view.parsed.commands[index]!.type, success: true, summary: settled.summary }, status: 'applied', summary: settled.summary };
    }
    if (view.parsed.commands[index]!.type === 'RUN_COMMAND') return this.runBlock(view, index);
    const block = await this.planBlock(view, index, true);
    const { command, plan } = block;
    if (plan.kind === 'fail') {
      void vscode.window.showErrorMessage(`${command.type} cannot be applied: ${plan.result.summary}`);
      return asBlockOutcome(planOutcome(plan));
    }
    if (!isFileChange(plan)) return asBlockOutcome(planOutcome(plan));
    if (block.staleSince !== undefined) {
      const choice = await vscode.window.showWarningMessage(`${staleReason(block)} Apply anyway?`, { modal: true }, 'Apply');
      if (choice !== 'Apply') return undefined;
    }
    const [outcome] = await this.applyFiles(view, [block], newBatch(), false);
    return outcome;
  }

  /** Preview one block: a diff of the target before and after, from which it can be applied. */
  async preview(args: readonly unknown[]): Promise<Plan> {
    const { view, index } = await this.locate(args);
    const { command, plan } = await this.planBlock(view, index);
    if (plan.kind === 'fail') {
      void vscode.window.showErrorMessage(`${command.type} would fail: ${plan.result.summary}`);
      return plan;
    }
    if (!isFileChange(plan)) {
      void vscode.window.showInformationMessage(`${command.type} changes no file.`);
      return plan;
    }
    const name = path.basename(plan.target.real);
    const lens: LensArguments = [view.document.uri.toString(), command.openTag.range.start.line, view.keys[index]!];
    const planned = this.previews.create(name, plan.kind === 'write' ? stripBom(plan.after) : '', lens);
    const exists = (await currentText(plan.target.real, view.workspace)) !== null;
    const left = exists ? vscode.Uri.file(shownPath(view.workspace, plan.target.real)) : this.previews.create(name, '');
    const verb = plan.kind === 'delete' ? 'deleted' : exists ? 'after this block' : 'created';
    await vscode.commands.executeCommand('vscode.diff', left, planned, `${plan.target.relative} (${verb}, preview: nothing written yet)`, { preview: true });
    return plan;
  }

  /**
   * From a block's preview: applies the whole block, or (`pick`) the changes the person picks, or
   * (`cursor`) the change under the cursor. The block is planned again first: if its result is no
   * longer what the preview shows, the preview is refreshed instead.
   */
  async applyPreviewed(uri: unknown, how: 'all' | 'pick' | 'cursor'): Promise<BlockOutcome | undefined> {
    this.ctx.trust.assert('applyBlocks');
    const editor = vscode.window.activeTextEditor;
    const previewUri = uri instanceof vscode.Uri ? uri : editor?.document.uri.scheme === PLAN_SCHEME ? editor.document.uri : undefined;
    const lens = previewUri && this.previews.blockOf(previewUri);
    if (!previewUri || !lens) throw new Error('Open a block\'s preview (its Preview lens) first.');
    const outcome = await this.applyFromPreview(previewUri, lens, how, editor);
    // The preview showed what was to be written: once written, it has nothing left to show.
    if (outcome?.status === 'applied') await closeDiffOf(previewUri);
    return outcome;
  }

  private async applyFromPreview(previewUri: vscode.Uri, lens: LensArguments, how: 'all' | 'pick' | 'cursor', editor: vscode.TextEditor | undefined): Promise<BlockOutcome | undefined> {
    if (how === 'all') return this.apply(lens);
    const { view, index } = await this.locate(lens);
    if (view.settled.has(index)) return this.apply(lens);
    const block = await this.planBlock(view, index, true);
    const { plan } = block;
    if (plan.kind !== 'write') return this.apply(lens);
    const shown = (await vscode.workspace.openTextDocument(previewUri)).getText();
    if (shown !== stripBom(plan.after)) {
      await this.preview(lens);
      throw new Error('The file changed since this preview was made: the preview shows what the block does now.');
    }
    const before = (await currentText(plan.target.real, view.workspace)) ?? '';
    const oldLines = splitFileLines(before);
    const newLines = splitFileLines(plan.after);
    const unit = (f: ReturnType<typeof splitFileLines>) => f.lines.map((line, i) => line + f.eols[i]!);
    const a = unit(oldLines);
    const b = unit(newLines);
    const hunks = diffLines(a, b);
    if (hunks.length === 0) return this.apply(lens);
    let chosen: Set<number>;
    if (how === 'cursor') {
      const shown = editor?.document.uri.toString() === previewUri.toString() ? editor : vscode.window.visibleTextEditors.find((e) => e.document.uri.toString() === previewUri.toString());
      const line = shown ? shown.selection.active.line : -1;
      const at = hunks.findIndex((h) => line >= h.afterStart && line < Math.max(h.afterEnd, h.afterStart + 1));
      if (at === -1) throw new Error('Put the cursor on a change of the preview (its right side) first.');
      chosen = new Set([at]);
    } else {
      const picked = await vscode.window.showQuickPick(
        hunks.map((hunk, i) => ({ label: hunkLabel(hunk, a, b), description: hunkLines(hunk), picked: true, index: i })),
        { canPickMany: true, title: `Apply changes to ${plan.target.relative}`, placeHolder: 'The changes ticked are applied; the others are left out' },
      );
      if (!picked || picked.length === 0) return undefined;
      chosen = new Set(picked.map((p) => p.index));
    }
    if (chosen.size === hunks.length) return this.apply(lens);
    // Each unit is a line with its own ending, so the endings of the lines kept stay as they are.
    const text = (newLines.bom ? '\ufeff' : '') + applyHunks(a, b, hunks, chosen).join('');
    const partial = `${chosen.size} of ${plural(hunks.length, 'change')}`;
    const [outcome] = await this.applyFiles(view, [{ ...block, plan: { ...plan, after: text } }], newBatch(), false, partial);
    return outcome;
  }

  /** Run one RUN_COMMAND block (Run lens) after a modal confirmation. */
  async run(args: readonly unknown[], again = false): Promise<BlockOutcome | undefined> {
    this.ctx.trust.assert('runCommands');
    const { view, index } = await this.locate(args);
    if (view.parsed.commands[index]!.type !== 'RUN_COMMAND') throw new Error('Only RUN_COMMAND blocks run.');
    const settled = view.settled.get(index);
    if (settled && !again) {
      void vscode.window.showInformationMessage(`This command ran already: ${settled.summary}`);
      return { result: { commandType: 'RUN_COMMAND', success: settled.status === 'ran', summary: settled.summary }, status: settled.status === 'ran' ? 'applied' : 'failed', summary: settled.summary };
    }
    return this.runBlock(view, index);
  }

  private async runBlock(view: AnswerView, index: number): Promise<BlockOutcome | undefined> {
    this.ctx.trust.assert('runCommands');
    const command = view.parsed.commands[index] as TextCommand;
    const seconds = this.timeoutSeconds(view.workspace.root);
    // The confirmation first; the network question (once per workspace) only when the person runs.
    const pending = await this.shell.networkPending();
    const choice = await this.shell.questions.ask(
      'Run this command from the LLM answer?',
      { modal: true, detail: `${command.body.text}\n\nin ${view.workspace.root}, stopped after ${seconds} s\n${await this.shell.describe((await this.shell.policy(false))!, pending)}` },
      'Run',
    );
    if (choice !== 'Run') return undefined;
    const shell = await this.shell.policy(true);
    if (!shell) return undefined;
    return this.runConfirmed(view, index, command, newBatch(), shell, await this.shell.describe(shell));
  }

  private async runConfirmed(view: AnswerView, index: number, command: TextCommand, batch: string, shell: ShellPolicy, how: string): Promise<BlockOutcome> {
    const outcome = await runInTerminal(this.terminals, view.workspace, command, this.timeoutSeconds(view.workspace.root) * 1000, shell, how);
    await this.states.ledger.add([{ id: view.ids[index]!, files: [], replay: { kind: 'run' }, result: outcome.result, batch, at: Date.now() }], new Map());
    this.ctx.log.info(`${path.basename(view.document.uri.path)}: ${formatResult(outcome.result)}`);
    await this.settle();
    return asBlockOutcome(outcome);
  }

  /** The states changed through Belay: derive them now, so the next action sees them. */
  private async settle(): Promise<void> {
    this.states.invalidate(true);
    await this.states.refresh();
    await this.closeAppliedPreviews();
  }

  /**
   * Closes the preview tabs of blocks that are applied now (by Apply All, a lens, the preview's own
   * buttons or the session loop): a preview says "nothing written yet", which is then untrue.
   */
  private async closeAppliedPreviews(): Promise<void> {
    const done: vscode.Tab[] = [];
    for (const { tab, preview } of previewTabs()) {
      const lens = this.previews.blockOf(preview);
      if (!lens) continue;
      try {
        const view = await this.open(lens[0]);
        const index = view.keys.indexOf(lens[2]);
        if (index !== -1 && view.settled.has(index)) done.push(tab);
      } catch (error) {
        // The answer is gone or cannot be read: its preview stays, as it stood.
        this.ctx.log.debug(`previews: ${errorMessage(error)}`);
      }
    }
    if (done.length > 0) await vscode.window.tabGroups.close(done);
  }

  /**
   * Applies every block that can still be applied, in order, as `belay blocks apply` does: file
   * changes go as one WorkspaceEdit per stretch between shell commands (which need the files
   * written before them), each shell command after one confirmation for all. Blocks that cannot
   * succeed are not attempted (their outcome says why). `confirmed`: the caller (a test) has asked
   * about the commands and stale files already; `filesOnly`: no command runs.
   */
  async applyAll(uriText: unknown, options: { confirmed?: boolean; filesOnly?: boolean } = {}): Promise<BlockOutcome[] | undefined> {
    this.ctx.trust.assert('applyBlocks');
    const view = await this.open(uriText);
    let filesOnly = options.filesOnly === true;
    const attempted = new Set<number>();
    const skip = (index: number) => attempted.has(index) || (filesOnly && view.parsed.commands[index]!.type === 'RUN_COMMAND');
    const first = (await this.planBlocks(view, skip, !options.confirmed)).blocks;
    const actionable = first.filter((b) => changesWorkspace(b.command));
    const cannot = actionable.filter((b) => b.plan.kind === 'fail');
    const toApply = actionable.filter((b) => b.plan.kind !== 'fail');
    const skipped = cannot.map((b) => `${b.command.type} line ${b.command.openTag.range.start.line + 1}: ${(b.plan as { result: { summary: string } }).result.summary}`);
    if (toApply.length === 0) {
      void vscode.window.showInformationMessage(
        cannot.length > 0 ? `Nothing to apply: ${plural(cannot.length, 'block')} cannot succeed as ${cannot.length === 1 ? 'it stands' : 'they stand'} (see the Problems view).` : 'Every block of this answer is applied already.',
      );
      return [];
    }
    const runs = toApply.filter((b) => b.command.type === 'RUN_COMMAND');
    if (runs.length > 0 && !options.confirmed && !filesOnly) {
      const list = runs.map((r) => `$ ${(r.command as TextCommand).body.text}`).join('\n');
      const files = toApply.length - runs.length;
      const how = await this.shell.describe((await this.shell.policy(false))!, await this.shell.networkPending());
      const choice = await this.shell.questions.ask(
        `Apply ${plural(toApply.length, 'block')}, running ${plural(runs.length, 'command')}?`,
        { modal: true, detail: `${list}\n\nin ${view.workspace.root}\n${how}${skipped.length ? `\n\nNot applied (cannot succeed):\n${skipped.join('\n')}` : ''}` },
        'Apply and Run',
        ...(files > 0 ? [`Apply Files Only (${files})`] : []),
      );
      if (choice === undefined) return undefined;
      if (choice !== 'Apply and Run') filesOnly = true;
    }
    // How the commands run, the network asked now (once per workspace) when they will run;
    // confirmed callers (tests) are never asked.
    const shell = runs.length > 0 && !filesOnly ? await this.shell.policy(!options.confirmed) : undefined;
    if (runs.length > 0 && !filesOnly && !shell) return undefined;
    const how = shell ? await this.shell.describe(shell) : '';
    const stale = toApply.filter((b) => b.staleSince !== undefined).map(staleReason);
    if (stale.length > 0 && !options.confirmed) {
      const choice = await vscode.window.showWarningMessage('Some files changed since the LLM saw them. Apply anyway?', { modal: true, detail: stale.join('\n') }, 'Apply');
      if (choice !== 'Apply') return undefined;
    }
    const batch = newBatch();
    const outcomes: BlockOutcome[] = [];
    let blocks = filesOnly ? first.filter((b) => b.command.type !== 'RUN_COMMAND') : first;
    let applied = 0;
    let tried = 0;
    let failedLater = 0;
    while (blocks.length > 0) {
      const next = blocks.findIndex((b) => b.command.type === 'RUN_COMMAND');
      const stretch = next === -1 ? blocks : blocks.slice(0, next);
      for (const block of stretch) attempted.add(block.index);
      const files = stretch.filter((b) => isFileChange(b.plan));
      const results = files.length > 0 ? await this.applyFiles(view, files, batch, false) : [];
      tried += files.length;
      applied += results.filter((o) => o.status === 'applied').length;
      const byIndex = new Map(files.map((b, i) => [b.index, results[i]]));
      for (const block of stretch) outcomes.push(byIndex.get(block.index) ?? asBlockOutcome(planOutcome(block.plan)));
      if (next === -1) break;
      const run = blocks[next]!;
      attempted.add(run.index);
      const ran = await this.runConfirmed(await this.open(view.document.uri.toString()), run.index, run.command as TextCommand, batch, shell!, how);
      outcomes.push(ran);
      tried++;
      if (ran.status === 'applied') applied++;
      else failedLater++;
      blocks = next + 1 < blocks.length ? (await this.planBlocks(await this.open(view.document.uri.toString()), skip)).blocks : [];
    }
    const notRun = filesOnly ? runs.length : 0;
    const parts = [`Applied ${applied} of ${plural(tried, 'block')}.`];
    if (tried - applied - failedLater > 0 || failedLater > 0) parts.push(`${plural(tried - applied, 'block')} failed (see the lenses).`);
    if (cannot.length > 0) parts.push(`${plural(cannot.length, 'block')} cannot succeed and ${cannot.length === 1 ? 'was' : 'were'} not applied (see the Problems view).`);
    if (notRun > 0) parts.push(`${plural(notRun, 'command')} not run.`);
    const message = parts.join(' ');
    this.ctx.log.info(`${path.basename(view.document.uri.path)}: ${message}`);
    if (applied < tried || cannot.length > 0) void vscode.window.showWarningMessage(message, 'Undo Answer').then((c) => c && this.undoAnswer(view.document.uri.toString()));
    else void vscode.window.showInformationMessage(message, 'Undo Answer').then((c) => c && this.undoAnswer(view.document.uri.toString()));
    return outcomes;
  }

  /**
   * Preview All: the whole answer as one reviewable change (the refactor preview, a checkbox per
   * file). In an untrusted workspace nothing may be applied: read-only diffs instead.
   */
  async previewAll(uriText: unknown): Promise<boolean> {
    const view = await this.open(uriText);
    const { blocks } = await this.planBlocks(view, (index) => view.parsed.commands[index]!.type === 'RUN_COMMAND');
    const files = blocks.filter((b) => isFileChange(b.plan));
    if (files.length === 0) {
      void vscode.window.showInformationMessage('No file changes left to preview in this answer.');
      return false;
    }
    if (!this.ctx.trust.trusted) {
      await this.showReadOnlyChanges(view.workspace, files);
      return false;
    }
    const outcomes = await this.applyFiles(view, files, newBatch(), true);
    return outcomes.some((o) => o.status === 'applied');
  }

  /** Every planned file beside what it holds now, in one multi-file diff that cannot write anything. */
  private async showReadOnlyChanges(workspace: Workspace, blocks: readonly PlannedBlock[]): Promise<void> {
    const finals = new Map<string, string | null>();
    for (const { plan } of blocks) if (isFileChange(plan)) finals.set(plan.target.real, plan.kind === 'write' ? plan.after : null);
    const resources: Array<[vscode.Uri, vscode.Uri, vscode.Uri]> = [];
    for (const [real, text] of finals) {
      const name = path.basename(real);
      const now = (await currentText(real, workspace)) ?? '';
      resources.push([vscode.Uri.file(shownPath(workspace, real)), this.previews.create(name, stripBom(now)), this.previews.create(name, text === null ? '' : stripBom(text))]);
    }
    void vscode.window.showWarningMessage(this.ctx.trust.refusal('applyBlocks') ?? '', 'Manage Workspace Trust').then((choice) => {
      if (choice) void vscode.commands.executeCommand('workbench.trust.manage');
    });
    await vscode.commands.executeCommand('vscode.changes', 'Preview All (read-only: untrusted workspace)', resources);
  }

  /**
   * Applies the file changes of planned blocks (no shell command among them) as one edit, each file
   * going straight to its final text, and records what each block wrote; `confirm` shows the edit in
   * the refactor preview first (where files may be left out: a block counts as applied only when
   * its file then holds what was planned). `partial` says which part of the block was applied.
   */
  private async applyFiles(view: AnswerView, blocks: readonly PlannedBlock[], batch: string, confirm: boolean, partial?: string): Promise<BlockOutcome[]> {
    /** Each touched file's text after the stretch (null: deleted), its text before, the blocks that touch it. */
    const finals = new Map<string, { text: string | null; labels: string[]; relative: string }>();
    for (const { command, plan } of blocks) {
      if (!isFileChange(plan)) continue;
      const labels = finals.get(plan.target.real)?.labels ?? [];
      labels.push(`${command.type} line ${command.openTag.range.start.line + 1}`);
      finals.set(plan.target.real, { text: plan.kind === 'write' ? plan.after : null, labels, relative: plan.target.relative });
    }
    const reals = [...finals.keys()];
    const shown = (real: string) => shownPath(view.workspace, real);
    const before = new Map<string, string | null>();
    for (const real of reals) before.set(real, await currentText(real, view.workspace));
    const edit = new vscode.WorkspaceEdit();
    for (const [real, { text, labels, relative }] of finals) {
      await addFileEdit(edit, shown(real), text, confirm ? { needsConfirmation: true, label: relative, description: labels.join(', ') } : undefined);
    }
    const applied = finals.size === 0 ? true : await applyAndSave(edit, reals.map(shown));
    const after = await currentDigests(reals, view.workspace);
    const outcomes: BlockOutcome[] = [];
    const records: BlockRecord[] = [];
    const texts = new Map<string, string>();
    for (const block of blocks) {
      const { command, plan } = block;
      if (!isFileChange(plan)) {
        if (!confirm) outcomes.push(asBlockOutcome(planOutcome(plan)));
        continue;
      }
      const real = plan.target.real;
      const final = finals.get(real)!.text;
      const matches = applied && after.get(real) === digest(final);
      if (!matches) {
        if (confirm && applied) continue;
        outcomes.push(asBlockOutcome(applied ? failure('not-applied', command.type, 'The editor did not apply this change') : failure('editor-refused', command.type, 'The editor refused the edit')));
        continue;
      }
      const was = before.get(real) ?? null;
      if (was !== null) texts.set(digest(was)!, was);
      const change: FileChange = { real, relative: plan.target.relative, before: digest(was), after: digest(final) };
      const replay = replayOf(plan);
      records.push({ id: view.ids[block.index]!, files: [change], ...(replay ? { replay } : {}), result: plan.result, ...(partial ? { partial } : {}), batch, at: Date.now() });
      outcomes.push(asBlockOutcome({ result: plan.result }));
      this.ctx.log.info(`${path.basename(view.document.uri.path)}: ${formatResult(plan.result)}${partial ? ` (${partial})` : ''}`);
    }
    if (records.length > 0) await this.states.ledger.add(records, texts);
    await this.settle();
    return outcomes;
  }

  /** Undo lens: puts back what the block's files held before it (asking first if they changed since). */
  async undoBlock(args: readonly unknown[]): Promise<boolean> {
    this.ctx.trust.assert('applyBlocks');
    const { view, index } = await this.locate(args);
    const record = view.settled.get(index)?.record;
    if (!record || record.files.length === 0) throw new Error('This block wrote no file to put back.');
    return this.restore(view, [record], 'this block');
  }

  /** Undo Answer: puts back every file this answer's blocks changed from the editor. */
  async undoAnswer(uriText: unknown): Promise<boolean> {
    this.ctx.trust.assert('applyBlocks');
    const view = await this.open(uriText);
    const records = [...view.settled.values()].map((s) => s.record).filter((r): r is BlockRecord => r !== undefined && r.files.length > 0);
    if (records.length === 0) {
      void vscode.window.showInformationMessage('No file of this answer is applied: nothing to undo.');
      return false;
    }
    return this.restore(view, records, 'this answer');
  }

  /** Puts each file the records touched back to what it held before the earliest of them. */
  private async restore(view: AnswerView, records: readonly BlockRecord[], what: string): Promise<boolean> {
    const files = new Map<string, { relative: string; before: string | null; after: string | null }>();
    for (const record of [...records].sort((a, b) => a.at - b.at)) {
      for (const file of record.files) {
        const known = files.get(file.real);
        files.set(file.real, { relative: file.relative, before: known ? known.before : file.before, after: file.after });
      }
    }
    const now = await currentDigests(files.keys(), view.workspace);
    const changed = [...files].filter(([real, f]) => now.get(real) !== f.after && now.get(real) !== f.before).map(([, f]) => f.relative);
    let onlyUnchanged = false;
    if (changed.length > 0) {
      const all = 'Put Back All';
      const some = 'Only the Unchanged Files';
      const choice = await vscode.window.showWarningMessage(
        `${plural(changed.length, 'file')} changed since ${what} was applied. Put back what ${changed.length === 1 ? 'it' : 'they'} held before anyway?`,
        { modal: true, detail: changed.join('\n') },
        all,
        ...(changed.length < files.size ? [some] : []),
      );
      if (choice === undefined) return false;
      onlyUnchanged = choice === some;
    }
    const edit = new vscode.WorkspaceEdit();
    const missing: string[] = [];
    const reals: string[] = [];
    for (const [real, file] of files) {
      if (now.get(real) === file.before) continue;
      if (onlyUnchanged && now.get(real) !== file.after) continue;
      let text: string | null = null;
      if (file.before !== null) {
        const kept = await this.states.ledger.text(file.before);
        if (kept === undefined) {
          missing.push(file.relative);
          continue;
        }
        text = kept;
      }
      reals.push(shownPath(view.workspace, real));
      await addFileEdit(edit, shownPath(view.workspace, real), text, undefined);
    }
    const ok = reals.length === 0 || (await applyAndSave(edit, reals));
    await this.settle();
    if (!ok) throw new Error('The editor refused to put the files back.');
    const message = `Put back ${plural(reals.length, 'file')} as ${reals.length === 1 ? 'it was' : 'they were'} before ${what}.${missing.length ? ` Not kept, so not put back: ${missing.join(', ')}.` : ''}`;
    this.ctx.log.info(`${path.basename(view.document.uri.path)}: ${message}`);
    void vscode.window.showInformationMessage(message);
    return true;
  }

  /**
   * Continue Session: what the person did with this session answer's blocks (applied, run, left
   * out, or what stops them) becomes the session's step, in order; the next outbox carries it.
   * The answer moves to `inbox/processed/` and is shown from there. `confirmed`: the caller (a
   * test) has asked about the blocks left out already.
   */
  async continueSession(uriText: unknown, confirmed = false): Promise<StepOutcome | undefined> {
    this.ctx.trust.assert('continueSession');
    const view = await this.open(uriText);
    const answers = view.answers;
    if (!answers) {
      throw new Error(view.processedBy ? `Session ${view.processedBy.sessionId} has this answer already.` : 'This answer is not waiting in a session\'s inbox: use Paste LLM Answer to give it to a session.');
    }
    const { blocks } = await this.planBlocks(view, () => false);
    const planned = new Map(blocks.map((b) => [b.index, b.plan]));
    const indexes = new Map(view.parsed.commands.map((command, index) => [command, index]));
    const results: CommandResult[] = [];
    const reads: string[] = [];
    const leftOut: string[] = [];
    let done = false;
    for (const item of inOrder(view.parsed)) {
      if ('error' in item) {
        results.push(parseErrorOutcome(item.error).result);
        continue;
      }
      const index = indexes.get(item.command)!;
      const record = view.settled.get(index)?.record;
      if (record) {
        results.push(record.result);
        continue;
      }
      const plan = planned.get(index);
      if (!plan) continue;
      if (plan.kind === 'read') reads.push(plan.target.relative);
      if (plan.kind === 'done') done = true;
      if (plan.kind === 'read' || plan.kind === 'message' || plan.kind === 'done' || plan.kind === 'fail') {
        results.push(plan.result);
        continue;
      }
      leftOut.push(`${item.command.type} line ${item.command.openTag.range.start.line + 1}`);
      results.push(failed(item.command.type, 'Not applied: the person left this block out'));
    }
    if (leftOut.length > 0 && !confirmed) {
      const choice = await vscode.window.showWarningMessage(
        `${plural(leftOut.length, 'block')} of this answer ${leftOut.length === 1 ? 'is' : 'are'} not applied. Continue, telling the model ${leftOut.length === 1 ? 'it was' : 'they were'} left out?`,
        { modal: true, detail: leftOut.join('\n') },
        'Continue',
      );
      if (choice !== 'Continue') return undefined;
    }
    const documentPath = view.document.uri.scheme === 'file' ? view.document.uri.fsPath : undefined;
    if (view.document.isDirty) await view.document.save();
    const outcome = await recordAnswer(answers.root, view.document.getText(), { sessionId: answers.sessionId, results, readFileRequests: reads, done, ...(documentPath ? { source: documentPath } : {}) });
    this.ctx.log.info(`session ${answers.sessionId}: answer #${answers.sequence} continued from the editor\n${results.map((r) => formatResult(r)).join('\n')}`);
    if (outcome.processedPath) {
      // The file moved: show it where it is now (its lenses then say what the session recorded).
      const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === view.document.uri.toString());
      await vscode.window.tabGroups.close(tabs);
      await vscode.window.showTextDocument(vscode.Uri.file(outcome.processedPath), { preview: true, preserveFocus: true });
    }
    return outcome;
  }

  /** READ_FILE's target, for the Open File lens. */
  async readTarget(args: readonly unknown[]): Promise<string> {
    const { view, index } = await this.locate(args);
    const { plan } = await this.planBlock(view, index);
    if (plan.kind !== 'read') throw new Error(plan.kind === 'fail' ? plan.result.summary : 'Not a READ_FILE block.');
    return plan.target.real;
  }

  /** MESSAGE and DONE: their text, shown. */
  async showMessage(args: readonly unknown[]): Promise<void> {
    const { view, index } = await this.locate(args);
    const command = view.parsed.commands[index]!;
    if (command.type !== 'MESSAGE' && command.type !== 'DONE') return;
    const text = command.body.text || (command.type === 'DONE' ? 'Task complete' : '(empty message)');
    void vscode.window.showInformationMessage(`${command.type === 'DONE' ? 'The LLM says the task is done: ' : 'The LLM says: '}${text}`);
  }

  /** A block that cannot be applied: its problem, in the Problems view and at the block. */
  async showProblem(args: readonly unknown[]): Promise<void> {
    const { view, index } = await this.locate(args);
    const command = view.parsed.commands[index]!;
    const editor = await vscode.window.showTextDocument(view.document, { preview: true });
    const start = new vscode.Position(command.openTag.range.start.line, command.openTag.range.start.character);
    editor.selection = new vscode.Selection(start, start);
    editor.revealRange(new vscode.Range(start, start), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    await vscode.commands.executeCommand('workbench.actions.view.problems');
  }
}

/** The open diff tabs whose right side is a block's preview. */
function previewTabs(): Array<{ tab: vscode.Tab; preview: vscode.Uri }> {
  return vscode.window.tabGroups.all
    .flatMap((group) => group.tabs)
    .flatMap((tab) => (tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.scheme === PLAN_SCHEME ? [{ tab, preview: tab.input.modified }] : []));
}

/** Closes the diff editors whose right side is this preview. */
async function closeDiffOf(preview: vscode.Uri): Promise<void> {
  const tabs = vscode.window.tabGroups.all.flatMap((group) => group.tabs).filter((tab) => tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.toString() === preview.toString());
  if (tabs.length > 0) await vscode.window.tabGroups.close(tabs);
}

function hunkLines(hunk: Hunk): string {
  const removed = hunk.beforeEnd - hunk.beforeStart;
  const added = hunk.afterEnd - hunk.afterStart;
  const where = removed > 0 ? `lines ${hunk.beforeStart + 1}-${hunk.beforeEnd}` : `after line ${hunk.beforeStart}`;
  return `${where}: -${removed} +${added}`;
}

function hunkLabel(hunk: Hunk, before: readonly string[], after: readonly string[]): string {
  const sample = (after[hunk.afterStart] ?? before[hunk.beforeStart] ?? '').trim();
  const sign = hunk.afterEnd > hunk.afterStart ? '+' : '-';
  return `${sign} ${sample.length > 70 ? `${sample.slice(0, 67)}...` : sample || '(blank line)'}`;
}

/** The text of every unsaved file document, by real path: planning reads what the person sees. */
async function unsavedTexts(): Promise<Map<string, string>> {
  const texts = new Map<string, string>();
  for (const document of vscode.workspace.textDocuments) {
    if (document.uri.scheme !== 'file' || !document.isDirty) continue;
    const real = await fs.realpath(document.uri.fsPath).catch(() => document.uri.fsPath);
    texts.set(real, document.getText());
  }
  return texts;
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

/**
 * A RUN_COMMAND block's terminal: runs the command with the core's bounded runner once VS Code has
 * opened it, shows its output and result, and closes (exit code 0 when the command succeeded, 1
 * otherwise) at the next key press. Closing it before the command ends stops the command.
 */
class CommandTerminal extends BelayPseudoterminal {
  readonly #abort = new AbortController();
  readonly #run: () => Promise<Outcome>;
  readonly #done: (outcome: Outcome) => void;
  #finished: Outcome | undefined;

  constructor(run: (signal: AbortSignal) => Promise<Outcome>, done: (outcome: Outcome) => void) {
    super();
    this.#run = () => run(this.#abort.signal);
    this.#done = done;
  }

  protected override onOpen(): void {
    void this.#run().then((outcome) => {
      this.#finished = outcome;
      const { result } = outcome;
      this.write(commandEnding(result));
      this.#done(outcome);
    });
  }

  protected override onClosedByPerson(): void {
    if (!this.#finished) this.#abort.abort();
  }

  override handleInput(): void {
    if (this.#finished) this.exit(this.#finished.result.success ? 0 : 1);
  }
}

/** Runs the command in a terminal opened by `terminals`; resolves when the command has ended. */
function runInTerminal(terminals: TerminalOpener, workspace: Workspace, command: TextCommand, timeoutMs: number, shell: ShellPolicy, how: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const pty = new CommandTerminal((signal) => runCommand(workspace, command.body.text, { runTimeoutMs: timeoutMs, signal, shell }), resolve);
    // The header names how it runs: sandboxed (and the network), or the unsandboxed shell.
    pty.write(`# ${how}\n`);
    pty.write(commandEcho(command.body.text));
    terminals.open('Belay: RUN_COMMAND', pty);
  });
}
