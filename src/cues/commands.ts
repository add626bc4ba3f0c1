import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import type { Selection } from './core/answer.ts';
import { HAP_INSTRUCTIONS, pauseInstruction } from './core/instructions.ts';
import { promptSummary, type Cue } from './core/model.ts';
import type { CuePanels } from './panels.ts';
import type { CuesService } from './service.ts';

type Outcome = { kind: 'answer'; selection: Selection } | { kind: 'cancel' } | undefined;

const END = '$(debug-stop) End (the agent is told to pause)';
const OTHER = '$(edit) Other: type a reply…';

async function askText(title: string, prompt: string): Promise<string | undefined> {
  return vscode.window.showInputBox({ title, prompt, placeHolder: 'Your reply', ignoreFocusOut: true });
}

/** The quick-pick flow for one cue, without the webview. */
async function askCue(cue: Cue): Promise<Outcome> {
  const title = `${cue.agentId}: ${promptSummary(cue.prompt, 80)}`;
  const prompt = promptSummary(cue.prompt, 400);
  const p = cue.payload;
  switch (p.kind) {
    case 'choice': {
      if (p.multiple) {
        const picked = await vscode.window.showQuickPick(p.options.map((label) => ({ label })), { title, placeHolder: prompt, canPickMany: true, ignoreFocusOut: true });
        if (!picked) return undefined;
        if (picked.length === 0) return cancelOrText(title, prompt);
        return { kind: 'answer', selection: { choices: picked.map((i) => i.label) } };
      }
      const picked = await vscode.window.showQuickPick([...p.options, OTHER, END], { title, placeHolder: prompt, ignoreFocusOut: true });
      if (picked === undefined) return undefined;
      if (picked === END) return { kind: 'cancel' };
      if (picked === OTHER) {
        const text = await askText(title, prompt);
        return text?.trim() ? { kind: 'answer', selection: { text } } : undefined;
      }
      return { kind: 'answer', selection: { choices: [picked] } };
    }
    case 'confirm':
    case 'pause': {
      const labels = p.kind === 'confirm' ? [p.confirmLabel, p.cancelLabel] : [p.confirmLabel, END];
      const picked = await vscode.window.showQuickPick(labels, { title, placeHolder: p.text || prompt, ignoreFocusOut: true });
      if (picked === undefined) return undefined;
      return picked === labels[0] ? { kind: 'answer', selection: { confirm: true } } : { kind: 'cancel' };
    }
    case 'form': {
      const fields: Array<[string, string]> = [];
      for (const field of p.fields) {
        if (field.options.length > 0) {
          const picked = await vscode.window.showQuickPick(field.options, { title: `${title}: ${field.label}`, placeHolder: field.label, canPickMany: field.multiple, ignoreFocusOut: true });
          if (picked === undefined) return undefined;
          for (const value of Array.isArray(picked) ? picked : [picked]) fields.push([field.label, value]);
        } else {
          const value = await vscode.window.showInputBox({ title: `${title}: ${field.label}`, prompt: field.label, ignoreFocusOut: true });
          if (value === undefined) return undefined;
          if (value.trim()) fields.push([field.label, value.trim()]);
        }
      }
      return { kind: 'answer', selection: { fields } };
    }
    default:
      return cancelOrText(title, prompt);
  }
}

async function cancelOrText(title: string, prompt: string): Promise<Outcome> {
  const text = await askText(title, prompt);
  return text?.trim() ? { kind: 'answer', selection: { text } } : undefined;
}

/** What "Open in Editor" opens: an agent's conversation, focused on one of its cues when named. */
function editorTarget(arg: unknown): { agentId: string; requestId?: string } | undefined {
  if (typeof arg !== 'object' || arg === null) return undefined;
  const { agentId, requestId } = arg as { agentId?: unknown; requestId?: unknown };
  if (typeof agentId !== 'string') return undefined;
  return typeof requestId === 'string' ? { agentId, requestId } : { agentId };
}

/** Asks which cue or agent to open, waiting cues first. */
async function pickEditorTarget(service: CuesService): Promise<{ agentId: string; requestId?: string } | undefined> {
  const snapshot = service.readNow();
  type Item = vscode.QuickPickItem & { target?: { agentId: string; requestId?: string } };
  const items: Item[] = [];
  const waiting = snapshot.pending.filter((c) => c.state === 'pending');
  if (waiting.length > 0) items.push({ label: 'Waiting for you', kind: vscode.QuickPickItemKind.Separator });
  for (const cue of waiting) items.push({ label: `$(comment) ${promptSummary(cue.prompt, 100)}`, description: cue.agentId, target: { agentId: cue.agentId, requestId: cue.requestId } });
  const agents = snapshot.agents.filter((a) => !a.archived);
  if (agents.length > 0) items.push({ label: 'Conversations', kind: vscode.QuickPickItemKind.Separator });
  for (const agent of agents) items.push({ label: `$(hubot) ${agent.agentId}`, description: [agent.runtime, agent.projectDir].filter(Boolean).join(' · '), target: { agentId: agent.agentId } });
  if (items.length === 0) {
    void vscode.window.showInformationMessage('Belay: no cue or agent to open yet.');
    return undefined;
  }
  return (await vscode.window.showQuickPick(items, { title: 'Belay: Open Cue in Editor', placeHolder: 'A waiting cue, or an agent\'s conversation' }))?.target;
}

export function registerCueCommands(ctx: BelayContext, service: CuesService): void {
  // The editor panels (and the page code they run) load on the first "Open in Editor".
  let panels: CuePanels | undefined;
  ctx.registerCommands({
    'belay.cues.openInEditor': async (arg?: unknown) => {
      const target = editorTarget(arg) ?? (await pickEditorTarget(service));
      if (!target) return;
      const { CuePanels } = await import('./panels.ts');
      panels ??= ctx.own(new CuePanels(ctx, service));
      panels.open(target.agentId, target.requestId);
    },

    'belay.cues.answerNext': async () => {
      const cue = service.readNow().pending.find((c) => c.state === 'pending');
      if (!cue) {
        void vscode.window.showInformationMessage('Belay: no agent is waiting for you.');
        return;
      }
      const outcome = await askCue(cue);
      if (!outcome) return;
      if (outcome.kind === 'cancel') service.cancel(cue.requestId);
      else await service.answer(cue.requestId, outcome.selection, []);
      vscode.window.setStatusBarMessage(`Belay: answered ${cue.agentId}`, 3000);
    },

    'belay.cues.copyInstructions': async () => {
      await vscode.env.clipboard.writeText(HAP_INSTRUCTIONS);
      void vscode.window.showInformationMessage('Belay: the HAP instructions are on the clipboard. Paste them into your agent\'s rules file (AGENTS.md, CLAUDE.md…).');
    },

    'belay.cues.pauseAgent': async (arg?: unknown) => {
      const agents = service.readNow().agents;
      let agentId = typeof arg === 'string' ? arg : undefined;
      if (!agentId) {
        if (agents.length === 0) {
          void vscode.window.showInformationMessage('Belay: no agent has joined the mailbox yet.');
          return;
        }
        const picked = await vscode.window.showQuickPick(
          agents.map((a) => ({ label: a.agentId, description: [a.runtime, a.projectDir].filter(Boolean).join(' · '), detail: a.pendingCount > 0 ? 'waiting for you: its cue is answered with the pause request' : 'the pause request is queued for its next cue' })),
          { title: 'Belay: Pause Agent', placeHolder: 'Which agent should pause until you click Continue?' },
        );
        agentId = picked?.label;
      }
      if (!agentId) return;
      const waiting = service.snapshot.pending.find((c) => c.agentId === agentId && c.state === 'pending');
      if (waiting) {
        await service.answer(waiting.requestId, { text: pauseInstruction(agentId) }, []);
        void vscode.window.showInformationMessage(`Belay: asked ${agentId} to pause.`);
      } else {
        service.queueReply(agentId, pauseInstruction(agentId));
        void vscode.window.showInformationMessage(`Belay: ${agentId} will be asked to pause at its next cue.`);
      }
    },
  });
}
