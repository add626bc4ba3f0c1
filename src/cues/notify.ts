import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { errorMessage } from '../shared/errors.ts';
import { capitalize, promptSummary, waitingPhrase, type Cue, type CuesSnapshot } from './core/model.ts';
import type { CuesViewProvider } from './provider.ts';
import type { CuesService } from './service.ts';

/** At most this many choice options become notification buttons (beside "Open"). */
const NOTIFICATION_CHOICES = 3;

/** The buttons a notification offers for a cue, and what each one does. */
function notificationActions(cue: Cue): Array<{ label: string; action: { kind: 'choice'; label: string } | { kind: 'confirm' } | { kind: 'cancel' } | { kind: 'open' } }> {
  const open = { label: 'Open', action: { kind: 'open' as const } };
  switch (cue.payload.kind) {
    case 'confirm':
      return [{ label: cue.payload.confirmLabel, action: { kind: 'confirm' } }, { label: cue.payload.cancelLabel, action: { kind: 'cancel' } }, open];
    case 'pause':
      return [{ label: cue.payload.confirmLabel, action: { kind: 'confirm' } }, open];
    case 'choice':
      if (cue.payload.multiple) return [open];
      return [...cue.payload.options.slice(0, NOTIFICATION_CHOICES).map((label) => ({ label, action: { kind: 'choice' as const, label } })), open];
    default:
      return [open];
  }
}

/**
 * The pending count on the status bar, and a notification for each new cue while the panel is not
 * visible (turned off by `belay.cues.notifications`).
 */
export function registerNotifications(ctx: BelayContext, service: CuesService, view: CuesViewProvider): void {
  const item = ctx.own(vscode.window.createStatusBarItem('belay.cues.pending', vscode.StatusBarAlignment.Left, 100));
  item.name = 'Belay Cues';
  item.command = 'belay.cues.focus';
  const seen = new Set<string>(service.snapshot.pending.map((c) => c.requestId));
  let baseline = false;

  const update = (snapshot: CuesSnapshot) => {
    const n = snapshot.waitingCount;
    if (n > 0) {
      item.text = `$(comment-discussion) ${n}`;
      item.tooltip = `${capitalize(waitingPhrase(n))}: click to open the Cues panel`;
      item.accessibilityInformation = { label: `Belay: ${waitingPhrase(n)}`, role: 'button' };
      item.show();
    } else {
      item.hide();
    }
    const fresh = snapshot.pending.filter((c) => c.state === 'pending' && !seen.has(c.requestId));
    for (const cue of snapshot.pending) seen.add(cue.requestId);
    // Cues already waiting when the editor started (the first read) are announced by the badge and
    // the status bar, not by one notification each.
    if (!baseline) {
      baseline = service.loaded;
      return;
    }
    if (view.visible || !ctx.config.get('cues.notifications')) return;
    for (const cue of fresh) void notify(cue);
  };

  const notify = async (cue: Cue) => {
    const actions = notificationActions(cue);
    const picked = await vscode.window.showInformationMessage(`${cue.agentId} asks: ${promptSummary(cue.prompt)}`, ...actions.map((a) => a.label));
    const action = actions.find((a) => a.label === picked)?.action;
    if (!action) return;
    try {
      switch (action.kind) {
        case 'open':
          await view.reveal(cue.requestId);
          return;
        case 'confirm':
          await service.answer(cue.requestId, { confirm: true }, []);
          return;
        case 'choice':
          await service.answer(cue.requestId, { choices: [action.label] }, []);
          return;
        case 'cancel':
          service.cancel(cue.requestId);
          return;
      }
    } catch (error) {
      void vscode.window.showWarningMessage(`Belay: ${errorMessage(error)}`);
    }
  };

  ctx.own(service.onDidChange(update));
  update(service.snapshot);
}
