// Two jobs side by side: which tasks changed outcome from the first to the second (pass → fail,
// fail → pass, flaky, a different reward), with the pair of runs that shows the change best.
// Kinds, outcomes and a task's change are the page's (src/contracts/resultsPage.ts).
import { CHANGE_KINDS, type Comparison } from '../../../contracts/resultsPage.ts';
import type { JobView, TrialView } from './model.ts';

type PageChange = Comparison['tasks'][number];
export type Outcome = PageChange['before'];
export type ChangeKind = PageChange['kind'];

/** A task's change as the page shows it (pass rates are passed / finished, null without a finished trial), and the runs to compare. */
export type TaskChange = Omit<PageChange, 'canCompare'> & {
  /** A run of each job to compare (Belay run folders, or Harbor trials' ATIF files), when both have one. */
  runBefore: string | null;
  runAfter: string | null;
};

/** Two jobs compared, as the page shows them: changed tasks first (broken, fixed, reward, added, removed), then the unchanged. */
export type JobComparison = Omit<Comparison, 'tasks'> & { tasks: TaskChange[] };

const EPSILON = 1e-9;

interface Side {
  finished: TrialView[];
  passRate: number | null;
  reward: number | null;
  outcome: Outcome;
}

function sideOf(trials: readonly TrialView[] | undefined): Side {
  const finished = (trials ?? []).filter((t) => t.state === 'finished');
  if (finished.length === 0) return { finished, passRate: null, reward: null, outcome: 'missing' };
  const passed = finished.filter((t) => t.passed === true).length;
  const passRate = passed / finished.length;
  return {
    finished,
    passRate,
    // Over the trials that gave a single reward; none when every one gave metrics only.
    reward: finished.some((t) => t.reward !== null) ? finished.reduce((a, t) => a + (t.reward ?? 0), 0) / finished.filter((t) => t.reward !== null).length : null,
    outcome: passed === finished.length ? 'passed' : passed === 0 ? 'failed' : 'flaky',
  };
}

function kindOf(a: Side, b: Side): ChangeKind {
  if (a.outcome === 'missing' && b.outcome === 'missing') return 'same';
  if (a.outcome === 'missing') return 'added';
  if (b.outcome === 'missing') return 'removed';
  if (b.passRate! < a.passRate! - EPSILON) return 'broken';
  if (b.passRate! > a.passRate! + EPSILON) return 'fixed';
  if (a.reward === null || b.reward === null) return a.reward === b.reward ? 'same' : 'reward';
  return Math.abs(a.reward - b.reward) > EPSILON ? 'reward' : 'same';
}

/** What opens a trial in the trajectory view: its Belay run folder, else its ATIF trajectory (a Harbor trial). */
const openable = (t: TrialView): string | null => t.runDir ?? t.trajectoryFile;

/** The runs that show the change: a passed run before and a failed one after when it broke, and the reverse when fixed. */
function pairOf(kind: ChangeKind, a: Side, b: Side): [string | null, string | null] {
  const pick = (side: Side, passed: boolean | undefined) =>
    (passed === undefined ? undefined : side.finished.find((t) => (t.passed === true) === passed && openable(t) !== null)) ?? side.finished.find((t) => openable(t) !== null);
  const of = (t: TrialView | undefined) => (t ? openable(t) : null);
  if (kind === 'broken') return [of(pick(a, true)), of(pick(b, false))];
  if (kind === 'fixed') return [of(pick(a, false)), of(pick(b, true))];
  return [of(pick(a, undefined)), of(pick(b, undefined))];
}

/** Changed tasks first, in the contract's order of kinds. */
const ORDER: readonly ChangeKind[] = CHANGE_KINDS;

/** What changed from job `before` to job `after`, task by task (matched by name). */
export function compareJobs(before: JobView, after: JobView): JobComparison {
  const byName = (job: JobView) => {
    const map = new Map<string, TrialView[]>();
    for (const t of job.trials) (map.get(t.taskName) ?? map.set(t.taskName, []).get(t.taskName)!).push(t);
    return map;
  };
  const a = byName(before);
  const b = byName(after);
  const names = [...new Set([...a.keys(), ...b.keys()])];
  const counts = Object.fromEntries(ORDER.map((k) => [k, 0])) as Record<ChangeKind, number>;
  const tasks = names.map((task): TaskChange => {
    const sa = sideOf(a.get(task));
    const sb = sideOf(b.get(task));
    const kind = kindOf(sa, sb);
    counts[kind]++;
    const [runBefore, runAfter] = pairOf(kind, sa, sb);
    return {
      task,
      kind,
      before: sa.outcome,
      after: sb.outcome,
      passRateBefore: sa.passRate,
      passRateAfter: sb.passRate,
      rewardBefore: sa.reward,
      rewardAfter: sb.reward,
      runBefore,
      runAfter,
    };
  });
  tasks.sort((x, y) => ORDER.indexOf(x.kind) - ORDER.indexOf(y.kind) || x.task.localeCompare(y.task));
  return { before: before.id, after: after.id, tasks, counts };
}
