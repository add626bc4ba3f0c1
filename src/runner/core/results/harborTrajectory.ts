// A trajectory file that is not a Belay run (a Harbor trial's `agent/trajectory.json`, or any ATIF
// file) as the trajectory view shows it: the steps read by records/atifRead.ts, and the run's
// summary from the trial folder's result.json when there is one (the outcome, reward, time),
// else from the trajectory alone.
import * as path from 'node:path';
import type { RunSummary, TrajectoryStep } from '../../../contracts/trajectoryPage.ts';
import { atifTotals, readAtifFile } from '../records/atifRead.ts';
import { rewardWords } from '../records/format.ts';
import { harborTrialView, readTrial } from './harbor.ts';

export interface TrajectoryFileView {
  run: RunSummary;
  steps: TrajectoryStep[];
}

/** The trial folder of a trajectory at `<trial>/agent/trajectory.json`, else the file's own folder. */
function trialFolder(file: string): string {
  const dir = path.dirname(file);
  return path.basename(dir) === 'agent' ? path.dirname(dir) : dir;
}

/** Reads an ATIF file for the view; throws one line naming the file when it cannot. */
export async function readTrajectoryFile(file: string): Promise<TrajectoryFileView> {
  const read = await readAtifFile(file);
  const t = read.trajectory;
  const files = await readTrial(trialFolder(file)).catch(() => undefined);
  const trial = files ? harborTrialView(files) : null;
  const finished = trial?.state === 'finished';
  const passed = finished ? trial.passed === true : false;
  return {
    run: {
      runId: t.trajectory_id ?? t.session_id ?? path.basename(trialFolder(file)),
      task: trial?.taskName ?? path.basename(trialFolder(file)),
      agent: trial?.agent ?? (t.agent.model_name ? `${t.agent.name} (${t.agent.model_name})` : t.agent.name),
      protocol: t.schema_version,
      backend: trial ? 'Harbor trial' : 'ATIF file',
      startedAt: read.trajectory.steps[0]?.timestamp ?? '',
      durationSec: trial?.durationSec ?? 0,
      passed,
      reward: trial?.reward ?? null,
      rewardText: finished ? rewardWords(trial.reward, trial.metrics ?? undefined) : 'no result recorded',
      failureCause: finished && !passed ? trial.failureCause : null,
      causeWords: finished ? (passed ? null : (trial.failureCause ?? 'the trial failed')) : 'no result.json beside the trajectory',
      error: null,
      failedTests: [],
      protocolFix: null,
      testOutput: '',
      skippedEntries: read.skipped,
      llm: atifTotals(t),
      kind: 'atif',
    },
    steps: read.steps,
  };
}
