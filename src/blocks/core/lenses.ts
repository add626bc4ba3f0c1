// The CodeLenses' contract: the commands the server's lenses invoke (the editor registers them),
// the arguments a block's lens carries, and what the editor adds to the server's lenses: each
// block's state once handled, and a lock where the workspace is not trusted. Pure, in LSP shapes,
// and light: the editor loads it at activation to register the commands, so the arguments are
// checked with a plain predicate rather than zod (as the settings are).
import type { OutcomeStatus } from './results.ts';

/** Commands the server's CodeLenses invoke (registered by the extension). */
export const LENS_COMMANDS = {
  apply: 'belay.blocks.apply',
  preview: 'belay.blocks.preview',
  run: 'belay.blocks.run',
  open: 'belay.blocks.openTarget',
  show: 'belay.blocks.showMessage',
  applyAll: 'belay.blocks.applyAll',
  previewAll: 'belay.blocks.previewAll',
} as const;

/** What a locked lens invokes, with the capability it needs: it says why it is locked. */
export const EXPLAIN_UNTRUSTED = 'belay.blocks.explainUntrusted';

/** The arguments every block CodeLens command carries. */
export type LensArguments = [documentUri: string, openTagLine: number, blockKey: string];

/** `args` as a block lens's arguments, or undefined when they are not. */
export function lensArguments(args: unknown): LensArguments | undefined {
  if (!Array.isArray(args) || args.length !== 3) return undefined;
  const [uri, line, key] = args as unknown[];
  return typeof uri === 'string' && typeof line === 'number' && Number.isInteger(line) && line >= 0 && typeof key === 'string' ? [uri, line, key] : undefined;
}

/** What a locked lens would do (the trust capability it needs). */
export type LockedAction = 'applyBlocks' | 'runCommands';

export interface LensLike<R> {
  range: R;
  command?: { title: string; command: string; arguments?: unknown[]; tooltip?: string };
}

const ICONS: Record<OutcomeStatus, string> = { applied: '$(check)', failed: '$(error)', rejected: '$(circle-slash)' };
const LABELS: Record<OutcomeStatus, string> = { applied: 'Applied', failed: 'Failed', rejected: 'Rejected' };

/**
 * The lenses as the editor shows them. `outcomeOf` gives a handled block's state; `refusal` says
 * why an action is refused here (undefined where the workspace is trusted).
 */
export function decorateLenses<R>(
  lenses: ReadonlyArray<LensLike<R>>,
  outcomeOf: (key: string) => { status: OutcomeStatus; summary: string } | undefined,
  refusal: (action: LockedAction) => string | undefined,
): Array<LensLike<R>> {
  const locked = (lens: LensLike<R>, title: string, action: LockedAction, why: string): LensLike<R> => ({
    range: lens.range,
    command: { title: `$(lock) ${title} (untrusted workspace)`, command: EXPLAIN_UNTRUSTED, arguments: [action], tooltip: why },
  });
  const result: Array<LensLike<R>> = [];
  let pending = 0;
  for (const lens of lenses) {
    const command = lens.command;
    const args = lensArguments(command?.arguments);
    if (!command || !args) {
      result.push(lens);
      continue;
    }
    const outcome = outcomeOf(args[2]);
    const action: LockedAction | undefined = command.command === LENS_COMMANDS.apply ? 'applyBlocks' : command.command === LENS_COMMANDS.run ? 'runCommands' : undefined;
    if (outcome) {
      // A handled block shows its state in place of its actions (Preview included).
      if (!action) continue;
      const title = `${ICONS[outcome.status]} ${LABELS[outcome.status]}: ${outcome.summary.split('\n', 1)[0]}`;
      result.push({ range: lens.range, command: { title, command: 'belay.showLog', tooltip: outcome.summary } });
      continue;
    }
    if (!action) {
      result.push(lens);
      continue;
    }
    pending++;
    const why = refusal(action);
    result.push(why === undefined ? lens : locked(lens, command.title, action, why));
  }
  return result.map((lens) => {
    const command = lens.command;
    if (command?.command === LENS_COMMANDS.applyAll) {
      const why = refusal('applyBlocks');
      return why === undefined ? { range: lens.range, command: { ...command, title: `$(check-all) Apply All (${pending})` } } : locked(lens, `Apply All (${pending})`, 'applyBlocks', why);
    }
    if (command?.command === LENS_COMMANDS.previewAll) return { range: lens.range, command: { ...command, title: '$(diff-multiple) Preview All' } };
    return lens;
  });
}
