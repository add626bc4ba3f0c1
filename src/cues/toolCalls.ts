import * as os from 'node:os';
import * as vscode from 'vscode';
import * as z from 'zod';
import { cueAndWait, join, pauseRequest } from './core/hap.ts';
import { viewPayload } from './core/payload.ts';
import type { CuesService } from './service.ts';

// What the language-model tools do when a chat agent calls them (./tools.ts registers them and
// loads this module on the first call): cue the human through the same mailbox as `cueme`, on the
// cues service's one connection, so the Cues panel answers them too. Inputs come from a model:
// parsed with zod, errors returned as text the model can act on.

const JoinInput = z.object({ agent_runtime: z.string().optional() });
const CueInput = z.object({
  agent_id: z.string().trim().min(1),
  prompt: z.string().trim().min(1),
  payload: z.record(z.string(), z.unknown()).nullish(),
});
const PauseInput = z.object({ agent_id: z.string().trim().min(1), prompt: z.string().optional() });

function text(value: string): vscode.LanguageModelToolResult {
  return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(value)]);
}

function inputError(tool: string, error: z.ZodError): vscode.LanguageModelToolResult {
  const issue = error.issues[0];
  return text(`Invalid input for ${tool}: ${issue ? `${issue.path.join('.') || 'input'}: ${issue.message}` : 'wrong shape'}. Nothing was sent to the human.`);
}

/** Aborts when the chat request is cancelled: the cue is then marked cancelled in the mailbox. */
function signalOf(token: vscode.CancellationToken): AbortSignal {
  const controller = new AbortController();
  if (token.isCancellationRequested) controller.abort();
  token.onCancellationRequested(() => controller.abort());
  return controller.signal;
}

/** belay_join: registers the agent and returns the HAP instructions with its id. */
export function joinTool(service: CuesService, raw: unknown): vscode.LanguageModelToolResult {
  const input = JoinInput.safeParse(raw ?? {});
  if (!input.success) return inputError('belay_join', input.error);
  const { mailbox } = service.connection();
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? os.homedir();
  return text(join(mailbox, input.data.agent_runtime ?? 'vscode', { env: process.env, cwd }).text);
}

/** belay_cue: asks the human and waits for the answer. */
export async function cueTool(service: CuesService, raw: unknown, token: vscode.CancellationToken): Promise<vscode.LanguageModelToolResult> {
  const input = CueInput.safeParse(raw);
  if (!input.success) return inputError('belay_cue', input.error);
  const payload = input.data.payload ?? null;
  const view = viewPayload(payload);
  const note = view.kind === 'invalid' ? `Note: ${view.warning}; the human saw a plain prompt.\n\n` : '';
  const { mailbox, subscribe } = service.connection();
  const outcome = await cueAndWait(mailbox, {
    mode: 'cue',
    agentId: input.data.agent_id,
    prompt: input.data.prompt,
    payloadJson: payload === null ? null : JSON.stringify(payload),
    timeoutMs: service.cueTimeoutMs,
    interrupt: signalOf(token),
    subscribe,
  });
  return text(note + (outcome.kind === 'interrupted' ? 'The cue was cancelled before the human answered.' : outcome.text));
}

/** belay_pause: waits until the human clicks Continue. */
export async function pauseTool(service: CuesService, raw: unknown, token: vscode.CancellationToken): Promise<vscode.LanguageModelToolResult> {
  const input = PauseInput.safeParse(raw);
  if (!input.success) return inputError('belay_pause', input.error);
  const { mailbox, subscribe } = service.connection();
  const outcome = await cueAndWait(mailbox, { mode: 'pause', agentId: input.data.agent_id, ...pauseRequest(input.data.prompt), interrupt: signalOf(token), subscribe });
  return text(outcome.kind === 'interrupted' ? 'The pause was cancelled.' : outcome.text);
}
