// What the editor adds to the server's CodeLenses: each block's state once handled, and a lock
// where the workspace is not trusted. Pure (no `vscode` import): the same shapes as LSP lenses.
import { LENS_COMMANDS, lensArgumentsSchema } from '../server/protocol.ts';
import type { OutcomeStatus } from './apply.ts';

export interface LensLike<R> {
  range: R;
  command?: { title: string; command: string; arguments?: unknown[]; tooltip?: string };
}

export const EXPLAIN_UNTRUSTED = 'belay.blocks.explainUntrusted';

const ICONS: Record<OutcomeStatus, string> = { applied: '$(check)', failed: '$(error)', rejected: '$(circle-slash)' };
const LABELS: Record<OutcomeStatus, string> = { applied: 'Applied', failed: 'Failed', rejected: 'Rejected' };

export function decorateLenses<R>(
  lenses: ReadonlyArray<LensLike<R>>,
  outcomeOf: (key: string) => { status: OutcomeStatus; summary: string } | undefined,
  trusted: boolean,
): Array<LensLike<R>> {
  const result: Array<LensLike<R>> = [];
  let pending = 0;
  for (const lens of lenses) {
    const command = lens.command;
    const parsed = lensArgumentsSchema.safeParse(command?.arguments);
    if (!command || !parsed.success) {
      result.push(lens);
      continue;
    }
    const outcome = outcomeOf(parsed.data[2]);
    const acts = command.command === LENS_COMMANDS.apply || command.command === LENS_COMMANDS.run;
    if (outcome) {
      // A handled block shows its state in place of its actions (Preview included).
      if (!acts) continue;
      const title = `${ICONS[outcome.status]} ${LABELS[outcome.status]}: ${outcome.summary.split('\n', 1)[0]}`;
      result.push({ range: lens.range, command: { title, command: 'belay.showLog', tooltip: outcome.summary } });
      continue;
    }
    if (acts) pending++;
    if (acts && !trusted) {
      result.push({ range: lens.range, command: { title: `$(lock) ${command.title} (untrusted workspace)`, command: EXPLAIN_UNTRUSTED, tooltip: 'Belay applies and runs nothing in an untrusted workspace' } });
      continue;
    }
    result.push(lens);
  }
  return result.map((lens) => {
    const command = lens.command;
    if (command?.command === LENS_COMMANDS.applyAll) {
      return {
        range: lens.range,
        command: trusted
          ? { ...command, title: `$(check-all) Apply All (${pending})` }
          : { title: `$(lock) Apply All (${pending}) (untrusted workspace)`, command: EXPLAIN_UNTRUSTED, tooltip: 'Belay applies and runs nothing in an untrusted workspace' },
      };
    }
    if (command?.command === LENS_COMMANDS.previewAll) return { range: lens.range, command: { ...command, title: '$(diff-multiple) Preview All' } };
    return lens;
  });
}
