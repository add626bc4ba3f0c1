import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { lazy } from '../shared/lazy.ts';
import type { CuesService } from './service.ts';

// Language-model tools: VS Code chat agents cue the human through the Cues mailbox. Registered at
// activation as light objects; what a call does (zod-parsed inputs, the mailbox) is in
// ./toolCalls.ts, loaded on the first call.

const calls = lazy(() => require('./toolCalls.ts') as typeof import('./toolCalls.ts'));

export function registerCueTools(ctx: BelayContext, service: CuesService): void {
  if (typeof vscode.lm?.registerTool !== 'function') {
    ctx.log.info('cues: this editor has no language-model tools API; the join/cue/pause tools are not registered');
    return;
  }
  ctx.own(
    vscode.lm.registerTool<unknown>('belay_join', {
      invoke: (options) => calls().joinTool(service, options.input),
    }),
  );
  ctx.own(
    vscode.lm.registerTool<unknown>('belay_cue', {
      prepareInvocation: () => ({ invocationMessage: 'Waiting for your answer in the Belay Cues panel' }),
      invoke: (options, token) => calls().cueTool(service, options.input, token),
    }),
  );
  ctx.own(
    vscode.lm.registerTool<unknown>('belay_pause', {
      prepareInvocation: () => ({ invocationMessage: 'Paused: click Continue in the Belay Cues panel' }),
      invoke: (options, token) => calls().pauseTool(service, options.input, token),
    }),
  );
}
