// Two runs side by side: their steps aligned by position (the first step of one beside the first
// of the other, whatever numbers the trajectories gave them), every way two aligned steps differ
// (the command, its outcome, its output, the agent's message), and where they first went apart.

/** What a step is compared on (history.ts's StepView has the first three; the view adds the texts). */
export interface ComparableStep {
  command: string | null;
  exitCode: number | null;
  timedOut: boolean;
  /** The agent's words for the step, when compared. */
  agentText?: string | null;
  /** The step's output as shown, when compared. */
  output?: string;
}

/** Why two aligned steps differ; `only_left` / `only_right`: one run has no step there. */
export type DifferenceReason = 'command' | 'timed_out' | 'exit_code' | 'output' | 'message' | 'only_left' | 'only_right';

/** The order differences are named in: what ran, how it ended, what it printed, what the agent said. */
export const DIFFERENCE_ORDER: readonly DifferenceReason[] = ['only_left', 'only_right', 'command', 'timed_out', 'exit_code', 'output', 'message'];

export interface AlignedRow<S> {
  /** 0-based position in both trajectories. */
  index: number;
  left: S | null;
  right: S | null;
  /** The first of `differences`, null when the steps match. */
  difference: DifferenceReason | null;
  /** Every way the two steps differ, in DIFFERENCE_ORDER; empty when they match. */
  differences: DifferenceReason[];
}

export interface Comparison<S> {
  rows: AlignedRow<S>[];
  /** The first row that differs, null when the runs never diverge. */
  firstDivergence: { index: number; reason: DifferenceReason } | null;
  /** Rows that differ in any way. */
  differing: number;
  /** Rows that differ in each way (a row can count under several). */
  counts: Record<DifferenceReason, number>;
}

/** Commands compared as run: only the surrounding whitespace an agent adds is ignored. */
function sameCommand(a: string | null, b: string | null): boolean {
  return (a?.trim() ?? null) === (b?.trim() ?? null);
}

/** Texts compared as shown: only the whitespace at their ends is ignored. */
function sameText(a: string | null | undefined, b: string | null | undefined): boolean {
  return (a?.trim() || null) === (b?.trim() || null);
}

/** Every way two steps at the same position differ, in DIFFERENCE_ORDER. Texts count only when both sides carry them. */
export function stepDifferences(left: ComparableStep | null, right: ComparableStep | null): DifferenceReason[] {
  if (left === null && right === null) return [];
  if (right === null) return ['only_left'];
  if (left === null) return ['only_right'];
  const found: DifferenceReason[] = [];
  if (!sameCommand(left.command, right.command)) found.push('command');
  if (left.timedOut !== right.timedOut) found.push('timed_out');
  else if (left.exitCode !== right.exitCode) found.push('exit_code');
  if (left.output !== undefined && right.output !== undefined && !sameText(left.output, right.output)) found.push('output');
  if (left.agentText !== undefined && right.agentText !== undefined && !sameText(left.agentText, right.agentText)) found.push('message');
  return found;
}

/** How two steps at the same position differ first (command, then the outcome, output, message), or null. */
export function stepDifference(left: ComparableStep | null, right: ComparableStep | null): DifferenceReason | null {
  return stepDifferences(left, right)[0] ?? null;
}

export function compareSteps<S extends ComparableStep>(left: readonly S[], right: readonly S[]): Comparison<S> {
  const rows: AlignedRow<S>[] = [];
  const counts = Object.fromEntries(DIFFERENCE_ORDER.map((reason) => [reason, 0])) as Record<DifferenceReason, number>;
  for (let index = 0; index < Math.max(left.length, right.length); index++) {
    const l = left[index] ?? null;
    const r = right[index] ?? null;
    const differences = stepDifferences(l, r);
    for (const reason of differences) counts[reason]++;
    rows.push({ index, left: l, right: r, difference: differences[0] ?? null, differences });
  }
  const first = rows.find((row) => row.difference !== null);
  return { rows, firstDivergence: first ? { index: first.index, reason: first.difference! } : null, differing: rows.filter((row) => row.difference !== null).length, counts };
}

/** The reason in words, for the view ("A" is the left run, "B" the right). */
export function differenceWords(reason: DifferenceReason): string {
  switch (reason) {
    case 'command':
      return 'a different command';
    case 'timed_out':
      return 'the same command, but only one timed out';
    case 'exit_code':
      return 'the same command with a different exit code';
    case 'only_left':
      return 'only run A went on';
    case 'only_right':
      return 'only run B went on';
    case 'output':
      return 'a different output';
    case 'message':
      return 'a different message from the agent';
  }
}

/** A noun for each way, to list several at once ("the command, the output and the message differ"). */
const NOUNS: Record<DifferenceReason, string> = {
  command: 'the command',
  timed_out: 'the time-out',
  exit_code: 'the exit code',
  output: 'the output',
  message: 'the agent’s message',
  only_left: 'only run A went on',
  only_right: 'only run B went on',
};

/** All of a row's differences in words: one as differenceWords says it, several listed ("the command and the output differ"). */
export function differencesWords(reasons: readonly DifferenceReason[]): string | null {
  if (reasons.length === 0) return null;
  if (reasons.length === 1) return differenceWords(reasons[0]!);
  const nouns = reasons.map((r) => NOUNS[r]);
  return `${nouns.slice(0, -1).join(', ')} and ${nouns.at(-1)} differ`;
}

/** "2 in the command, 1 in the output": how many rows differ in each way, in DIFFERENCE_ORDER. */
export function countsWords(counts: Readonly<Record<DifferenceReason, number>>): string {
  const words: Record<DifferenceReason, string> = {
    command: 'command',
    timed_out: 'time-out',
    exit_code: 'exit code',
    output: 'output',
    message: 'message',
    only_left: 'only in A',
    only_right: 'only in B',
  };
  return DIFFERENCE_ORDER.filter((r) => counts[r] > 0)
    .map((r) => (r === 'only_left' || r === 'only_right' ? `${counts[r]} ${words[r]}` : `${counts[r]} in the ${words[r]}`))
    .join(', ');
}
