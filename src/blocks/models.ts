// Send to Model: a session's latest outbox goes to a chat model, through VS Code's Language Model
// API (any provider extension: the person picks the model) or an OpenAI-compatible endpoint from
// the settings (its key in SecretStorage). The answer lands in the session's `inbox/` as an
// `.agent` file (the inbox watcher leaves it alone) and opens with its lenses: nothing is applied
// without a click, unless the session auto-applies file blocks; commands always wait for one.
// Loaded on first use (the chat client checks what arrives with zod).
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { writeFileAtomic } from '../shared/atomic.ts';
import { errorMessage } from '../shared/errors.ts';
import type { BlockApplier } from './apply.ts';
import { chat } from './core/chat.ts';
import { answerFileName, outboxPath, sessionLayout, updateSession, type SessionState } from './core/session.ts';
import { sessionIdOf, type SessionsView } from './sessions.ts';

/** An answer longer than this is refused (whichever model sends it). */
const MAX_ANSWER_CHARS = 20_000_000;

/** Where the OpenAI-compatible endpoint's key is kept (never in settings). */
export const API_KEY_SECRET = 'belay.blocks.openai.apiKey';

/** A model the person can pick: one of VS Code's chat models, or the configured endpoint. */
interface ModelChoice extends vscode.QuickPickItem {
  /** `lm:<vendor>/<id>` or `openai:<model>`, as the session remembers it. */
  id: string;
}

export class ModelSender {
  private readonly ctx: BelayContext;
  private readonly sessions: SessionsView;
  private readonly applier: () => BlockApplier;

  constructor(ctx: BelayContext, sessions: SessionsView, applier: () => BlockApplier) {
    this.ctx = ctx;
    this.sessions = sessions;
    this.applier = applier;
  }

  /** Set Model API Key…: stored in VS Code's secret storage; an empty entry removes it. */
  async setKey(given?: unknown): Promise<boolean> {
    const key =
      typeof given === 'string'
        ? given
        : await vscode.window.showInputBox({
            title: 'Belay: API key of the OpenAI-compatible endpoint',
            prompt: `Kept in VS Code's secret storage and sent only to ${this.endpoint()?.baseUrl || 'belay.blocks.openai.baseUrl'}. Leave empty to remove it.`,
            password: true,
            ignoreFocusOut: true,
          });
    if (key === undefined) return false;
    if (key.trim() === '') await this.ctx.extension.secrets.delete(API_KEY_SECRET);
    else await this.ctx.extension.secrets.store(API_KEY_SECRET, key.trim());
    return true;
  }

  private endpoint(): { baseUrl: string; model: string } | undefined {
    const folder = vscode.workspace.workspaceFolders?.[0];
    const baseUrl = this.ctx.config.get('blocks.openai.baseUrl', folder).trim();
    const model = this.ctx.config.get('blocks.openai.model', folder).trim();
    return baseUrl && model ? { baseUrl, model } : undefined;
  }

  /** The models there are now: VS Code's chat models, then the configured endpoint. */
  private async choices(): Promise<ModelChoice[]> {
    const models = await Promise.resolve(vscode.lm.selectChatModels()).catch(() => [] as vscode.LanguageModelChat[]);
    const choices: ModelChoice[] = models.map((m) => ({ label: m.name, description: `${m.vendor} · ${m.family}`, id: `lm:${m.vendor}/${m.id}` }));
    const endpoint = this.endpoint();
    if (endpoint) choices.push({ label: endpoint.model, description: `OpenAI-compatible · ${endpoint.baseUrl}`, id: `openai:${endpoint.model}` });
    return choices;
  }

  /** The session's model while it is still there; otherwise (or when asked) the person picks one. */
  private async chooseModel(session: SessionState, root: string, pick: boolean): Promise<ModelChoice | undefined> {
    const choices = await this.choices();
    const remembered = choices.find((c) => c.id === session.model);
    if (remembered && !pick) return remembered;
    if (choices.length === 0) {
      const configure = 'Configure an Endpoint';
      const choice = await vscode.window.showWarningMessage(
        'No chat model is available: install an extension that provides one (GitHub Copilot, for one), or set belay.blocks.openai.baseUrl and belay.blocks.openai.model for an OpenAI-compatible endpoint.',
        configure,
      );
      if (choice) await vscode.commands.executeCommand('workbench.action.openSettings', 'belay.blocks.openai');
      return undefined;
    }
    const picked = await vscode.window.showQuickPick(choices, {
      title: `Send session ${session.sessionId} to which model?`,
      placeHolder: 'The session keeps using the model you pick (Choose Model for Session… changes it)',
      matchOnDescription: true,
    });
    if (picked && picked.id !== session.model) await updateSession(root, session.sessionId, { model: picked.id });
    return picked;
  }

  /** Choose Model for Session…: picks (and remembers) the model without sending anything. */
  async chooseModelFor(arg?: unknown): Promise<string | undefined> {
    const chosen = await this.sessions.sessionMeant(sessionIdOf(arg), 'Choose the model of which session?');
    if (!chosen) return undefined;
    return (await this.chooseModel(chosen.session, chosen.root, true))?.id;
  }

  /**
   * Send to Model: the latest outbox of the session meant (named, focused, or picked) goes to its
   * model; resolves with the answer's file once it is open.
   */
  async send(arg?: unknown): Promise<string | undefined> {
    const chosen = await this.sessions.sessionMeant(sessionIdOf(arg), 'Send which session to a model?');
    if (!chosen) return undefined;
    const { root, session } = chosen;
    if (session.isComplete) {
      void vscode.window.showInformationMessage(`Session ${session.sessionId} is complete: there is nothing to send.`);
      return undefined;
    }
    const model = await this.chooseModel(session, root, false);
    if (!model) return undefined;
    const layout = sessionLayout(root);
    const outbox = outboxPath(layout, session);
    const text = await fs.readFile(outbox, 'utf8');
    const answer = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Belay: ${path.basename(outbox)} → ${model.label}`, cancellable: true },
      (progress, token) => this.ask(model, text, token, (chars) => progress.report({ message: `${chars} characters so far` })),
    );
    if (answer === undefined) return undefined;
    if (answer.trim() === '') throw new Error(`${model.label} answered nothing.`);
    const file = path.join(layout.inbox, answerFileName(session.sessionId, session.sequenceNumber, Date.now(), 'agent'));
    await fs.mkdir(layout.inbox, { recursive: true });
    await writeFileAtomic(file, answer);
    this.ctx.log.info(`session ${session.sessionId}: ${model.label} answered outbox #${session.sequenceNumber} (${answer.length} characters): ${file}`);
    const document = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
    await vscode.window.showTextDocument(document, { preview: false });
    // File blocks apply at once where the session says so (and the workspace is trusted); commands wait.
    if (session.autoApplyFiles && this.ctx.trust.trusted) await this.applier().applyAll(document.uri.toString(), { filesOnly: true });
    return file;
  }

  /** The model's answer to the outbox, streamed; undefined when cancelled. */
  private async ask(model: ModelChoice, outbox: string, token: vscode.CancellationToken, progress: (chars: number) => void): Promise<string | undefined> {
    let answer = '';
    const got = (piece: string) => {
      answer += piece;
      if (answer.length > MAX_ANSWER_CHARS) throw new Error(`the answer is longer than ${MAX_ANSWER_CHARS} characters`);
      progress(answer.length);
    };
    try {
      if (model.id.startsWith('lm:')) {
        const [vendor, ...rest] = model.id.slice(3).split('/');
        const id = rest.join('/');
        const [chatModel] = await vscode.lm.selectChatModels({ vendor: vendor!, id });
        if (!chatModel) throw new Error(`${model.label} is no longer available.`);
        const response = await chatModel.sendRequest([vscode.LanguageModelChatMessage.User(outbox)], { justification: 'Belay sends your session\'s outbox (the task, the workspace listing, results and files the model asked for) to get its next answer.' }, token);
        for await (const piece of response.text) got(piece);
      } else {
        const endpoint = this.endpoint();
        if (!endpoint) throw new Error('Set belay.blocks.openai.baseUrl and belay.blocks.openai.model first.');
        const abort = new AbortController();
        const subscription = token.onCancellationRequested(() => abort.abort());
        try {
          const apiKey = await this.ctx.extension.secrets.get(API_KEY_SECRET);
          await chat({ ...endpoint, ...(apiKey ? { apiKey } : {}) }, [{ role: 'user', content: outbox }], { signal: abort.signal, onText: got, maxChars: MAX_ANSWER_CHARS });
        } finally {
          subscription.dispose();
        }
      }
    } catch (error) {
      if (token.isCancellationRequested) return undefined;
      const reason = error instanceof vscode.LanguageModelError ? `${error.message} (${error.code})` : errorMessage(error);
      throw new Error(`${model.label} could not answer: ${reason}`);
    }
    return token.isCancellationRequested ? undefined : answer;
  }

  /** Auto-apply of file blocks for a session: on or off. */
  async toggleAutoApply(arg?: unknown): Promise<boolean | undefined> {
    const chosen = await this.sessions.sessionMeant(sessionIdOf(arg), 'Auto-apply file blocks in which session?');
    if (!chosen) return undefined;
    const on = !chosen.session.autoApplyFiles;
    if (on && !this.ctx.trust.require('applyBlocks')) return undefined;
    await updateSession(chosen.root, chosen.session.sessionId, { autoApplyFiles: on || undefined });
    this.sessions.refresh();
    void vscode.window.showInformationMessage(
      on
        ? `Session ${chosen.session.sessionId}: file blocks of answers from the model are applied as they arrive (Undo Answer takes them back). Commands still wait for your click.`
        : `Session ${chosen.session.sessionId}: nothing from the model is applied without your click.`,
    );
    return on;
  }
}
