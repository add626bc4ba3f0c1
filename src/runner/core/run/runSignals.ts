// The reward-hacking signals of one run (records/signals.ts), gathered as it goes: the files the
// task's tests name in the working folder hashed before each agent phase and after it, and at the
// end the agent's commands and tool calls (from the trajectory) and the proxy's refusals
// (network.jsonl). The run writes them into result.json.
import * as path from 'node:path';
import type { TrajectoryEntry } from '../records/records.ts';
import { capped, changedInputs, commandsSignals, networkSignals, testsText, verifierInputs, type ProtectedNames, type Signal } from '../records/signals.ts';
import type { Task } from '../tasks/task.ts';

/** The working folder's files the tests read, hashed around each agent phase. */
export class VerifierInputs {
  readonly #task: Task;
  readonly #workspace: string;
  #tests: Promise<string> | undefined;
  #before: Map<string, string> | undefined;
  readonly #changes = new Map<string, Signal>();

  constructor(task: Task, workspace: string) {
    this.#task = task;
    this.#workspace = workspace;
  }

  async before(): Promise<void> {
    this.#tests ??= testsText(this.#task.testsDir).catch(() => '');
    this.#before = await verifierInputs(this.#workspace, await this.#tests).catch(() => undefined);
  }

  async after(): Promise<void> {
    const before = this.#before;
    this.#before = undefined;
    if (!before || before.size === 0) return;
    const now = await verifierInputs(this.#workspace, '', [...before.keys()]).catch(() => undefined);
    if (now) for (const signal of changedInputs(before, now)) this.#changes.set(signal.detail, signal);
  }

  get changes(): Signal[] {
    return [...this.#changes.values()];
  }
}

/** What the task calls its test and solution files (their names), beside the usual folders. */
export function protectedNames(task: Task): ProtectedNames {
  return {
    tests: [path.basename(task.testScript)].filter((name) => name !== '' && name !== '.'),
    solution: task.solutionScript ? [path.basename(task.solutionScript)] : [],
  };
}

/** The commands and tool calls of a Belay trajectory: each command, and an installed CLI's own tool with its arguments. */
export function trajectoryCommands(trajectory: readonly TrajectoryEntry[]): string[] {
  return trajectory.flatMap((entry) => {
    const out = entry.command !== null ? [entry.command] : [];
    const response = entry.response && typeof entry.response === 'object' ? (entry.response as Record<string, unknown>) : {};
    if (typeof response.tool === 'string' && response.input && typeof response.input === 'object') out.push(`${response.tool} ${JSON.stringify(response.input)}`);
    return out;
  });
}

export async function runSignals(task: Task, runDir: string, trajectory: readonly TrajectoryEntry[], inputs: VerifierInputs): Promise<Signal[]> {
  return capped([...commandsSignals(trajectoryCommands(trajectory), protectedNames(task)), ...inputs.changes, ...(await networkSignals(runDir))]);
}
