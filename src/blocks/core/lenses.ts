// The CodeLenses' contract: the commands the server's lenses invoke (the editor registers them),
// the arguments a block's lens carries, and what the editor adds to the server's lenses: each
// block's state once handled, and a lock where the workspace is not trusted. Pure, in LSP shapes,
// and light: the editor loads it at activation to register the commands, so the arguments are
// checked with a plain predicate rather than zod (as the settings are).
import type { OutcomeStatus } from './results.ts';

/** Commands the CodeLenses invoke (registered by the extension). */
export const LENS_COMMANDS = {
  apply: 'belay.blocks.apply',
  preview: 'belay.blocks.preview',
  run: 'belay.blocks.run',
  open: 'belay.blocks.openTarget',
  show: 'belay.blocks.showMessage',
  applyAll: 'belay.blocks.applyAll',
  previewAll: 'belay.blocks.previewAll',
  /** A block that cannot be applied as it stands: its lens says why and shows the problem. */
  problem: 'belay.blocks.showProblem',
  applyFilesOnly: 'belay.blocks.applyFilesOnly',
  /** An applied block's lens: opens the file it wrote. */
  openApplied: 'belay.blocks.openApplied',
  undo: 'belay.blocks.undoBlock',
  undoAnswer: 'belay.blocks.undoAnswer',
  runAgain: 'belay.blocks.runAgain',
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

/**
 * A block that is no longer to apply, as its lens shows it: applied from the editor (then perhaps
 * changed since, or applied only in part), run, processed by the session loop, or (from an older
 * record) failed or rejected.
 */
export type BlockStatus = OutcomeStatus | 'changed' | 'partial' | 'ran' | 'ran-failed' | 'session' | 'session-failed';

export interface LensState {
  status: BlockStatus;
  summary: string;
  /** The file its lens opens. */
  open?: string;
}

const TITLES: Record<BlockStatus, string> = {
  applied: '$(check) Applied',
  changed: '$(check) Applied, changed since',
  partial: '$(check) Applied in part',
  ran: '$(check) Ran',
  'ran-failed': '$(error) Failed',
  session: '$(check) Applied',
  'session-failed': '$(error) Failed',
  failed: '$(error) Failed',
  rejected: '$(circle-slash) Rejected',
};

/** States whose files the editor wrote, so Undo can take them back. */
const UNDOABLE = new Set<BlockStatus>(['applied', 'changed', 'partial']);

/**
 * The lenses as the editor shows them. `stateOf` gives a settled block's state; `refusal` says
 * why an action is refused here (undefined where the workspace is trusted). A settled block shows
 * its state (opening what it wrote) in place of its actions, with Undo or Run Again; the counts
 * at the top are of the blocks that can still be applied, and vanish at zero.
 */
export function decorateLenses<R>(
  lenses: ReadonlyArray<LensLike<R>>,
  stateOf: (key: string) => LensState | undefined,
  refusal: (action: LockedAction) => string | undefined,
): Array<LensLike<R>> {
  const locked = (lens: LensLike<R>, title: string, action: LockedAction, why: string): LensLike<R> => ({
    range: lens.range,
    command: { title: `$(lock) ${title} (untrusted workspace)`, command: EXPLAIN_UNTRUSTED, arguments: [action], tooltip: why },
  });
  const result: Array<LensLike<R>> = [];
  let pendingFiles = 0;
  let pendingRuns = 0;
  let undoable = 0;
  for (const lens of lenses) {
    const command = lens.command;
    const args = lensArguments(command?.arguments);
    if (!command || !args) {
      result.push(lens);
      continue;
    }
    const kind = command.command === LENS_COMMANDS.apply ? 'apply' : command.command === LENS_COMMANDS.run ? 'run' : command.command === LENS_COMMANDS.problem ? 'problem' : undefined;
    const state = stateOf(args[2]);
    if (state) {
      // A settled block shows its state in place of its actions (Preview included).
      if (!kind) continue;
      const title = `${TITLES[state.status]}: ${state.summary.split('\n', 1)[0]}`;
      const open = state.open !== undefined ? { command: LENS_COMMANDS.openApplied, arguments: [state.open] } : { command: 'belay.showLog' };
      result.push({ range: lens.range, command: { title, ...open, tooltip: state.summary } });
      if (UNDOABLE.has(state.status)) {
        undoable++;
        const why = refusal('applyBlocks');
        result.push(why === undefined ? { range: lens.range, command: { title: 'Undo', command: LENS_COMMANDS.undo, arguments: args, tooltip: 'Put back what the file held before this block' } } : locked(lens, 'Undo', 'applyBlocks', why));
      }
      if (state.status === 'ran' || state.status === 'ran-failed') {
        const why = refusal('runCommands');
        result.push(why === undefined ? { range: lens.range, command: { title: 'Run Again', command: LENS_COMMANDS.runAgain, arguments: args } } : locked(lens, 'Run Again', 'runCommands', why));
      }
      continue;
    }
    if (!kind || kind === 'problem') {
      result.push(lens);
      continue;
    }
    if (kind === 'run') pendingRuns++;
    else pendingFiles++;
    const action: LockedAction = kind === 'run' ? 'runCommands' : 'applyBlocks';
    const why = refusal(action);
    result.push(why === undefined ? lens : locked(lens, command.title, action, why));
  }
  const pending = pendingFiles + pendingRuns;
  return result.flatMap((lens) => {
    const command = lens.command;
    if (command?.command === LENS_COMMANDS.applyAll) {
      const why = refusal('applyBlocks');
      const top: Array<LensLike<R>> = [];
      if (pending > 0) top.push(why === undefined ? { range: lens.range, command: { ...command, title: `$(check-all) Apply All (${pending})` } } : locked(lens, `Apply All (${pending})`, 'applyBlocks', why));
      if (pendingRuns > 0 && pendingFiles > 0 && why === undefined) {
        top.push({ range: lens.range, command: { title: `Apply Files Only (${pendingFiles})`, command: LENS_COMMANDS.applyFilesOnly, arguments: command.arguments ?? [], tooltip: 'Apply the file blocks; run no command' } });
      }
      if (undoable > 0 && why === undefined) {
        top.push({ range: lens.range, command: { title: '$(discard) Undo Answer', command: LENS_COMMANDS.undoAnswer, arguments: command.arguments ?? [], tooltip: 'Put back every file this answer\'s blocks changed' } });
      }
      return top;
    }
    if (command?.command === LENS_COMMANDS.previewAll) return pendingFiles > 0 ? [{ range: lens.range, command: { ...command, title: '$(diff-multiple) Preview All' } }] : [];
    return [lens];
  });
}
