// VS Code's own models as the upstream of runs: a LocalModel (the gateway's neutral interface)
// over `vscode.lm`, the model chosen by `belay.runner.llm` (`"upstream": "vscode-lm"`,
// `"vscodeModel": "vendor/id"`), and the command that picks it from the models VS Code offers.
// Consent is VS Code's: a model Belay may not use refuses the run before it starts, and one the
// person turns down at the first request ends the run (the gateway tells it).
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { errorMessage } from '../shared/errors.ts';
import { VSCODE_LM_UPSTREAM } from './core/agents/llmSettings.ts';
import type { LmErrorCode, LmEvent, LmMessage, LmSendOptions, LmSendResult, LmTool, LocalModel } from './core/gateway/lmModel.ts';
import type { Prompts } from './prompts.ts';

/** What VS Code shows when it asks the person whether Belay may use the model. */
export const JUSTIFICATION = "Belay's task runner sends the agent's model requests (the task, its commands and their output) to this model while the agent runs.";

/** `vendor/id`, as the setting names a model. */
export function modelKey(model: { vendor: string; id: string }): string {
  return `${model.vendor}/${model.id}`;
}

/** The chosen model, ready to serve a run; one line when there is none or Belay may not use it. */
export async function vscodeLocalModel(ctx: BelayContext, key: string): Promise<LocalModel> {
  const slash = key.indexOf('/');
  const [chat] = await vscode.lm.selectChatModels({ vendor: key.slice(0, slash), id: key.slice(slash + 1) });
  if (!chat) {
    const offered = (await vscode.lm.selectChatModels()).map(modelKey);
    throw new Error(`VS Code offers no model ${key} for runs (${offered.length ? `it offers ${offered.join(', ')}` : 'it offers none: install an extension that provides one'}); run Belay: Choose a VS Code Model for Runs…`);
  }
  if (ctx.extension.languageModelAccessInformation.canSendRequest(chat) === false) {
    throw new Error(`Belay may not use the VS Code model ${key}: allow it in the model's access settings (Manage Language Model Access…), or choose another with Belay: Choose a VS Code Model for Runs…`);
  }
  return new VscodeModel(chat, key);
}

function errorCode(error: unknown): LmErrorCode {
  if (!(error instanceof vscode.LanguageModelError)) return 'failed';
  return error.code === 'NoPermissions' ? 'no_permissions' : error.code === 'NotFound' ? 'not_found' : error.code === 'Blocked' ? 'blocked' : 'failed';
}

function failure(error: unknown): { code: LmErrorCode; message: string } {
  const code = errorCode(error);
  const message = errorMessage(error) || (error instanceof vscode.LanguageModelError ? error.code : 'unknown error');
  return { code, message: code === 'no_permissions' && !/consent|permission|allow/i.test(message) ? `Belay may not use this model (${message})` : message };
}

/** A CancellationToken that follows an AbortSignal. */
function tokenOf(signal: AbortSignal): { token: vscode.CancellationToken; dispose: () => void } {
  const source = new vscode.CancellationTokenSource();
  const cancel = () => source.cancel();
  if (signal.aborted) source.cancel();
  else signal.addEventListener('abort', cancel, { once: true });
  return {
    token: source.token,
    dispose: () => {
      signal.removeEventListener('abort', cancel);
      source.dispose();
    },
  };
}

function toMessages(messages: LmMessage[]): vscode.LanguageModelChatMessage[] {
  return messages.map((message) => {
    if (message.role === 'assistant') {
      return vscode.LanguageModelChatMessage.Assistant(
        message.parts.flatMap((part): (vscode.LanguageModelTextPart | vscode.LanguageModelToolCallPart)[] =>
          part.type === 'text' ? [new vscode.LanguageModelTextPart(part.text)] : part.type === 'toolCall' ? [new vscode.LanguageModelToolCallPart(part.callId, part.name, part.input)] : [],
        ),
      );
    }
    return vscode.LanguageModelChatMessage.User(
      message.parts.flatMap((part): (vscode.LanguageModelTextPart | vscode.LanguageModelToolResultPart)[] =>
        part.type === 'text' ? [new vscode.LanguageModelTextPart(part.text)] : part.type === 'toolResult' ? [new vscode.LanguageModelToolResultPart(part.callId, [new vscode.LanguageModelTextPart(part.text)])] : [],
      ),
    );
  });
}

class VscodeModel implements LocalModel {
  readonly id: string;
  readonly name: string;
  readonly maxInputTokens: number;
  readonly #chat: vscode.LanguageModelChat;

  constructor(chat: vscode.LanguageModelChat, key: string) {
    this.#chat = chat;
    this.id = key;
    this.name = chat.name;
    this.maxInputTokens = chat.maxInputTokens;
  }

  async countTokens(text: string, signal: AbortSignal): Promise<number> {
    const cancel = tokenOf(signal);
    try {
      return await this.#chat.countTokens(text, cancel.token);
    } finally {
      cancel.dispose();
    }
  }

  async send(messages: LmMessage[], tools: LmTool[], options: LmSendOptions, signal: AbortSignal): Promise<LmSendResult> {
    const cancel = tokenOf(signal);
    let response: vscode.LanguageModelChatResponse;
    try {
      response = await this.#chat.sendRequest(
        toMessages(messages),
        {
          justification: JUSTIFICATION,
          modelOptions: options.modelOptions,
          ...(tools.length
            ? {
                tools: tools.map((tool) => ({ name: tool.name, description: tool.description, ...(tool.inputSchema ? { inputSchema: tool.inputSchema } : {}) })),
                toolMode: options.toolMode === 'required' ? vscode.LanguageModelChatToolMode.Required : vscode.LanguageModelChatToolMode.Auto,
              }
            : {}),
        },
        cancel.token,
      );
    } catch (error) {
      cancel.dispose();
      return { ok: false, error: signal.aborted ? { code: 'cancelled', message: 'the request was cancelled' } : failure(error) };
    }
    async function* parts(): AsyncGenerator<LmEvent> {
      try {
        for await (const part of response.stream) {
          if (part instanceof vscode.LanguageModelTextPart) yield { type: 'text', text: part.value };
          else if (part instanceof vscode.LanguageModelToolCallPart) yield { type: 'toolCall', callId: part.callId, name: part.name, input: part.input as Record<string, unknown> };
        }
      } catch (error) {
        if (!signal.aborted) yield { type: 'error', error: failure(error) };
      } finally {
        cancel.dispose();
      }
    }
    return { ok: true, parts: parts() };
  }
}

/** Belay: Choose a VS Code Model for Runs…: the models VS Code offers; the pick goes into `belay.runner.llm`. */
export async function chooseVscodeModel(ctx: BelayContext, prompts: Prompts): Promise<string | undefined> {
  const models = await vscode.lm.selectChatModels();
  if (models.length === 0) {
    void vscode.window.showWarningMessage('Belay: VS Code offers no language model: install an extension that provides one (GitHub Copilot, for one), then choose it here.');
    return undefined;
  }
  const current = vscode.workspace.getConfiguration('belay').get<Record<string, unknown>>('runner.llm') ?? {};
  const chosen = current.upstream === VSCODE_LM_UPSTREAM ? current.vscodeModel : undefined;
  const picked = await prompts.pick(
    models.map((model) => ({ label: model.name, description: `${modelKey(model)}${modelKey(model) === chosen ? ' · chosen' : ''}`, detail: `${model.vendor} · ${model.family} · up to ${model.maxInputTokens} input tokens`, key: modelKey(model) })),
    { title: 'Belay: Choose a VS Code Model for Runs', placeHolder: "Agents' model requests go to this model through Belay's gateway (no key needed)", matchOnDescription: true },
  );
  if (!picked) return undefined;
  // The rest (budgets, and a URL's api and keySecret for a later switch back) stays as it was.
  await vscode.workspace.getConfiguration('belay').update('runner.llm', { ...current, upstream: VSCODE_LM_UPSTREAM, vscodeModel: picked.key }, vscode.ConfigurationTarget.Global);
  ctx.log.info(`runner: runs use the VS Code model ${picked.key}`);
  void vscode.window.showInformationMessage(`Belay: runs now use ${picked.label} (${picked.key}); VS Code asks once whether Belay may use it.`);
  return picked.key;
}
