// The trajectory view: one webview panel per run, stepping through trajectory.json of runs made
// by the editor or by `belay run`, and one per pair of runs compared side by side (steps aligned,
// the first divergence highlighted). A message handler on the webview host (src/ui/webviewHost.ts);
// messages follow src/contracts/trajectoryPage.ts. A target that is a file rather than a run
// folder is an ATIF trajectory (a Harbor trial's agent/trajectory.json), read by
// core/results/harborTrajectory.ts and shown, or compared, the same way.
import { existsSync, statSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { compareSteps, countsWords, differenceWords, differencesWords, type DifferenceReason } from './core/records/compareRuns.ts';
import { CAUSE_WORDS, rewardWords } from './core/records/format.ts';
import { runFiles, type LlmUsage } from './core/records/records.ts';
import { readBounded, readTrajectory, listRuns, type PastRun, type StepView } from './core/records/history.ts';
import { editorFix, suggestedProtocol } from './core/protocols/mismatch.ts';
import { readTrajectoryFile, type TrajectoryFileView } from './core/results/harborTrajectory.ts';
import { errorMessage } from '../shared/errors.ts';
import { WebviewHost, type PageMessage } from '../ui/webviewHost.ts';
import { toHostSchema, type LlmUsageView, type RunSummary, type ToHost, type ToWebview, type TrajectoryStep } from '../contracts/trajectoryPage.ts';

/** Characters of each step's output sent to the view (the full output opens read-only). */
const STEP_OUTPUT_CHARS = 20_000;
/** Less in a comparison, which shows every step of two runs at once. */
const COMPARED_OUTPUT_CHARS = 4_000;

export interface TrajectoryActions {
  openOutput(file: string): Promise<void>;
  repeat(run: PastRun): Promise<void>;
  openAgentSettings(agent: string): Promise<void>;
}

export class TrajectoryPanels implements vscode.Disposable {
  readonly #panels = new Map<string, vscode.WebviewPanel>();
  /** Comparisons, by their two run folders joined with a newline. */
  readonly #comparisons = new Map<string, vscode.WebviewPanel>();
  readonly #extensionUri: vscode.Uri;
  readonly #actions: TrajectoryActions;
  readonly #log: vscode.LogOutputChannel;

  constructor(extensionUri: vscode.Uri, actions: TrajectoryActions, log: vscode.LogOutputChannel) {
    this.#extensionUri = extensionUri;
    this.#actions = actions;
    this.#log = log;
  }

  /** The run folders whose panels are open (for tests and for refreshes). */
  get openRuns(): string[] {
    return [...this.#panels.keys()];
  }

  /** The pairs of run folders compared in open panels (left, right). */
  get openComparisons(): [string, string][] {
    return [...this.#comparisons.keys()].map((key) => key.split('\n') as [string, string]);
  }

  async show(runDir: string, focusStep?: number): Promise<vscode.WebviewPanel> {
    const existing = this.#panels.get(runDir);
    if (existing) {
      existing.reveal();
      return existing;
    }
    if (isFile(runDir)) {
      const view = await readTrajectoryFile(runDir);
      return this.#open(this.#panels, runDir, `Trajectory: ${view.run.task} · ${view.run.agent ?? view.run.protocol}`, {
        state: async () => {
          try {
            const fresh = await readTrajectoryFile(runDir);
            return { type: 'run', run: fresh.run, steps: fresh.steps };
          } catch (error) {
            return { type: 'error', message: errorMessage(error) };
          }
        },
        receive: (message) => this.#receiveFiles([runDir], message),
      });
    }
    const run = await findRun(runDir);
    // The step asked for is shown on the first load; a reload keeps the step the page saved.
    let focus = focusStep;
    return this.#open(this.#panels, runDir, `Run: ${runTitle(run)}`, {
      state: async () => {
        const message = await this.#message(run, focus);
        focus = undefined;
        return message;
      },
      receive: (message) => this.#receive([run], message),
    });
  }

  /** Two runs side by side, opening at their first divergence. */
  async compare(leftDir: string, rightDir: string): Promise<vscode.WebviewPanel> {
    const key = `${leftDir}\n${rightDir}`;
    const existing = this.#comparisons.get(key);
    if (existing) {
      existing.reveal();
      return existing;
    }
    if (isFile(leftDir) || isFile(rightDir)) {
      const [l, r] = await Promise.all([this.#side(leftDir), this.#side(rightDir)]);
      const title = l.run.task === r.run.task ? `Compare: ${l.run.task} · ${l.run.agent ?? l.run.runId} ↔ ${r.run.agent ?? r.run.runId}` : `Compare: ${l.run.task} ↔ ${r.run.task}`;
      return this.#open(this.#comparisons, key, title, {
        state: async () => {
          try {
            return compared(await this.#side(leftDir), await this.#side(rightDir));
          } catch (error) {
            return { type: 'error', message: errorMessage(error) };
          }
        },
        receive: (message) => this.#receiveFiles([leftDir, rightDir], message),
      });
    }
    const [left, right] = await Promise.all([findRun(leftDir), findRun(rightDir)]);
    const l = left.result;
    const r = right.result;
    // Titled by the two runs (when each started), so that two comparisons of one task are told apart.
    const title = l.task_name === r.task_name ? `Compare: ${l.task_name} · ${startedAt(l.started_at)} ↔ ${startedAt(r.started_at)}` : `Compare: ${l.task_name} ↔ ${r.task_name}`;
    return this.#open(this.#comparisons, key, title, {
      state: () => this.#comparison(left, right),
      receive: (message) => this.#receive([left, right], message),
    });
  }

  #open(panels: Map<string, vscode.WebviewPanel>, key: string, title: string, handler: { state: () => Promise<ToWebview>; receive: (message: PageMessage<ToHost>) => Promise<void> }): vscode.WebviewPanel {
    const panel = vscode.window.createWebviewPanel('belay.trajectory', title, vscode.ViewColumn.Active, { retainContextWhenHidden: false });
    panels.set(key, panel);
    panel.onDidDispose(() => panels.delete(key));
    // The host disposes itself with the panel.
    new WebviewHost<ToHost, ToWebview>(panel, { app: 'trajectory', title, schema: toHostSchema, extensionUri: this.#extensionUri, log: this.#log, handler });
    return panel;
  }

  /** One side of a comparison: an ATIF file, or a Belay run folder. */
  async #side(target: string): Promise<TrajectoryFileView> {
    if (isFile(target)) return readTrajectoryFile(target);
    const run = await findRun(target);
    const read = await readTrajectory(target);
    return { run: runSummary(run, read.skipped), steps: await stepsForView(read.steps, COMPARED_OUTPUT_CHARS) };
  }

  /** What a page of ATIF files may ask: the file itself, the trial's result.json, one side on its own. */
  async #receiveFiles(targets: readonly string[], message: PageMessage<ToHost>): Promise<void> {
    const target = 'side' in message && message.side === 'right' ? targets[1]! : targets[0]!;
    switch (message.type) {
      case 'openRun':
        await this.show(target);
        return;
      case 'openFile': {
        if (!isFile(target)) return;
        const trial = path.basename(path.dirname(target)) === 'agent' ? path.dirname(path.dirname(target)) : path.dirname(target);
        const file = message.file === 'trajectory' ? target : message.file === 'result' ? path.join(trial, 'result.json') : undefined;
        if (file && existsSync(file)) await this.#actions.openOutput(file);
        else void vscode.window.showInformationMessage(`Belay: this trial has no ${message.file === 'testOutput' ? 'test output' : message.file === 'agentLog' ? 'agent log' : message.file} Belay can open.`);
        return;
      }
      default:
        // Steps of an ATIF file have no output files, and a trial Belay did not run cannot be repeated here.
        void vscode.window.showInformationMessage('Belay: this trajectory is not a Belay run; only its files can be opened.');
        return;
    }
  }

  /** `runs`: the one run shown, or the left and right runs of a comparison. */
  async #receive(runs: readonly PastRun[], message: PageMessage<ToHost>): Promise<void> {
    const run = 'side' in message && message.side === 'right' ? runs[1]! : runs[0]!;
    const runDir = run.result.run_dir;
    switch (message.type) {
      case 'openOutput': {
        const { steps } = await readTrajectory(runDir);
        const file = steps.find((s) => s.step === message.step)?.outputFile;
        if (file) await this.#actions.openOutput(file);
        return;
      }
      case 'openFile': {
        const files = runFiles(runDir);
        const file = { result: files.result, trajectory: files.trajectory, testOutput: files.testOutput, agentLog: files.agentStderr }[message.file];
        if (existsSync(file)) await this.#actions.openOutput(file);
        else void vscode.window.showInformationMessage(`Belay: this run has no ${path.basename(file)}.`);
        return;
      }
      case 'repeat':
        await this.#actions.repeat(run);
        return;
      case 'openAgentSettings':
        await this.#actions.openAgentSettings(message.agent);
        return;
      case 'openRun':
        await this.show(runDir);
        return;
    }
  }

  async #message(run: PastRun, focus?: number): Promise<ToWebview> {
    let read: Awaited<ReturnType<typeof readTrajectory>>;
    try {
      read = await readTrajectory(run.result.run_dir);
    } catch (error) {
      return { type: 'error', message: `Cannot read the run's steps: ${errorMessage(error)}` };
    }
    return { type: 'run', run: runSummary(run, read.skipped), steps: await stepsForView(read.steps, STEP_OUTPUT_CHARS), ...(focus !== undefined ? { focus } : {}) };
  }

  async #comparison(left: PastRun, right: PastRun): Promise<ToWebview> {
    let reads: Awaited<ReturnType<typeof readTrajectory>>[];
    try {
      reads = await Promise.all([readTrajectory(left.result.run_dir), readTrajectory(right.result.run_dir)]);
    } catch (error) {
      return { type: 'error', message: `Cannot read the runs' steps: ${errorMessage(error)}` };
    }
    const [l, r] = reads as [(typeof reads)[0], (typeof reads)[0]];
    const [leftSteps, rightSteps] = await Promise.all([stepsForView(l.steps, COMPARED_OUTPUT_CHARS), stepsForView(r.steps, COMPARED_OUTPUT_CHARS)]);
    // Compared as shown: every part the page shows (command, status, output, the agent's words) counts.
    const { rows, firstDivergence, counts } = compareSteps(leftSteps, rightSteps);
    return {
      type: 'compare',
      left: { run: runSummary(left, l.skipped), steps: leftSteps },
      right: { run: runSummary(right, r.skipped), steps: rightSteps },
      rows: rows.map((row) => ({ index: row.index, difference: differencesWords(row.differences), parts: partsOf(row.differences) })),
      firstDivergence: firstDivergence ? { index: firstDivergence.index, words: differencesWords(rows[firstDivergence.index]!.differences) ?? differenceWords(firstDivergence.reason) } : null,
      countsWords: countsWords(counts),
    };
  }

  dispose(): void {
    for (const panel of [...this.#panels.values(), ...this.#comparisons.values()]) panel.dispose();
  }
}

/** Whether a target is a file (an ATIF trajectory) rather than a run folder. */
function isFile(target: string): boolean {
  try {
    return statSync(target).isFile();
  } catch {
    return false;
  }
}

/** Two sides as the comparison page shows them. */
function compared(left: TrajectoryFileView, right: TrajectoryFileView): ToWebview {
  const { rows, firstDivergence, counts } = compareSteps(left.steps, right.steps);
  return {
    type: 'compare',
    left,
    right,
    rows: rows.map((row) => ({ index: row.index, difference: differencesWords(row.differences), parts: partsOf(row.differences) })),
    firstDivergence: firstDivergence ? { index: firstDivergence.index, words: differencesWords(rows[firstDivergence.index]!.differences) ?? differenceWords(firstDivergence.reason) } : null,
    countsWords: countsWords(counts),
  };
}

/** When a run started, as the Tasks view says it (its id when the time is unreadable). */
function startedAt(iso: string): string {
  const when = new Date(iso);
  return Number.isNaN(when.getTime()) ? iso : when.toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' });
}

/** "hello-world · Demo SDK 1.x agent · 27/11/2026, 16:05:12": which run a tab shows (task, agent, when). */
export function runTitle(run: PastRun): string {
  const r = run.result;
  return [r.task_name, r.agent ?? `${r.protocol} (belay run)`, startedAt(r.started_at)].join(' · ');
}

async function findRun(runDir: string): Promise<PastRun> {
  const run = (await listRuns(path.dirname(runDir))).find((r) => r.result.run_dir === runDir);
  if (!run) throw new Error(`no finished run in ${runDir} (result.json is missing or unreadable)`);
  return run;
}

/** The parts of a row the page marks as different. */
function partsOf(reasons: readonly DifferenceReason[]): ('command' | 'status' | 'output' | 'message')[] {
  const parts = { command: 'command', timed_out: 'status', exit_code: 'status', output: 'output', message: 'message' } as const;
  return reasons.flatMap((r) => (r in parts ? [parts[r as keyof typeof parts]] : []));
}

function runSummary(run: PastRun, skippedEntries: number): RunSummary {
  const r = run.result;
  // A run the editor made names its agent: its fix is in the agent's setting, not a flag.
  const fixed = r.agent !== undefined && r.error ? editorFix(r.error, r.agent) : r.error;
  const protocol = r.agent !== undefined ? suggestedProtocol(r.error) : undefined;
  return {
    runId: r.run_id,
    task: r.task_name,
    agent: r.agent ?? null,
    protocol: r.protocol,
    backend: r.backend,
    startedAt: r.started_at,
    durationSec: r.duration_sec,
    passed: r.passed,
    reward: r.reward,
    rewardText: rewardWords(r.reward, r.metrics),
    failureCause: r.failure_cause,
    causeWords: r.passed ? null : (CAUSE_WORDS[r.failure_cause ?? ''] ?? r.failure_cause ?? 'the run failed'),
    error: fixed,
    failedTests: (r.verification?.test_results ?? []).filter((t) => !['passed', 'skipped', 'pending'].includes(t.status)).map((t) => ({ name: t.name, status: t.status, message: t.message ?? null })),
    protocolFix: protocol && r.agent !== undefined ? { agent: r.agent, protocol } : null,
    testOutput: r.verification?.output ?? '',
    skippedEntries,
    llm: usageView(r.llm ?? null),
  };
}

function stepsForView(steps: readonly StepView[], outputChars: number): Promise<TrajectoryStep[]> {
  return Promise.all(
    steps.map(async (s) => ({
      step: s.step,
      agentText: s.agentText,
      command: s.command,
      cwd: s.cwd,
      exitCode: s.exitCode,
      timedOut: s.timedOut,
      durationMs: s.durationMs,
      output: s.outputFile ? await readBounded(s.outputFile, outputChars) : (s.screen ?? ''),
      outputKind: s.outputFile ? ('output' as const) : ('screen' as const),
      hasOutputFile: s.outputFile !== null,
      llm: usageView(s.llm),
    })),
  );
}

function usageView(usage: LlmUsage | null): LlmUsageView | null {
  return usage ? { requests: usage.requests, inputTokens: usage.input_tokens, outputTokens: usage.output_tokens, costUsd: usage.cost_usd } : null;
}
