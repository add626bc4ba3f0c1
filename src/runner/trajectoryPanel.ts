// The trajectory view: one webview panel per run, stepping through trajectory.json of runs made
// by the editor or by `belay run`. Messages follow src/webviews/trajectory/protocol.ts.
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { runFiles } from './core/records.ts';
import { readBounded, readTrajectory, listRuns, type PastRun } from './core/history.ts';
import { webviewHtml, webviewOptions } from '../ui/webviewHtml.ts';
import { toHostSchema, type ToWebview, type TrajectoryStep } from '../webviews/trajectory/protocol.ts';

/** Characters of each step's output sent to the view (the full output opens read-only). */
const STEP_OUTPUT_CHARS = 20_000;

export interface TrajectoryActions {
  openOutput(file: string): Promise<void>;
  repeat(run: PastRun): Promise<void>;
}

export class TrajectoryPanels implements vscode.Disposable {
  readonly #panels = new Map<string, vscode.WebviewPanel>();
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

  async show(runDir: string, focusStep?: number): Promise<vscode.WebviewPanel> {
    const existing = this.#panels.get(runDir);
    if (existing) {
      existing.reveal();
      return existing;
    }
    const run = (await listRuns(path.dirname(runDir))).find((r) => r.result.run_dir === runDir);
    if (!run) throw new Error(`no finished run in ${runDir} (result.json is missing or unreadable)`);
    const panel = vscode.window.createWebviewPanel('belay.trajectory', `Run: ${run.result.task_name}`, vscode.ViewColumn.Active, {
      ...webviewOptions(this.#extensionUri),
      retainContextWhenHidden: false,
    });
    this.#panels.set(runDir, panel);
    let ready = false;
    const queue: ToWebview[] = [];
    const post = (message: ToWebview) => (ready ? void panel.webview.postMessage(message) : queue.push(message));
    const subscriptions: vscode.Disposable[] = [];
    panel.onDidDispose(() => {
      this.#panels.delete(runDir);
      subscriptions.forEach((s) => s.dispose());
    });
    subscriptions.push(
      panel.webview.onDidReceiveMessage(async (raw: unknown) => {
        const parsed = toHostSchema.safeParse(raw);
        if (!parsed.success) {
          this.#log.warn(`trajectory view: ignored a malformed message: ${parsed.error.message}`);
          return;
        }
        const message = parsed.data;
        try {
          if (message.type === 'ready') {
            // A reload of the webview says ready again: send the run anew.
            ready = true;
            if (queue.length === 0) post(await this.#message(run));
            for (const m of queue.splice(0)) void panel.webview.postMessage(m);
          } else if (message.type === 'openOutput') {
            const { steps } = await readTrajectory(runDir);
            const file = steps.find((s) => s.step === message.step)?.outputFile;
            if (file) await this.#actions.openOutput(file);
          } else if (message.type === 'openFile') {
            const files = runFiles(runDir);
            const file = { result: files.result, trajectory: files.trajectory, testOutput: files.testOutput, agentLog: files.agentStderr }[message.file];
            if (existsSync(file)) await this.#actions.openOutput(file);
            else void vscode.window.showInformationMessage(`Belay: this run has no ${path.basename(file)}.`);
          } else if (message.type === 'repeat') await this.#actions.repeat(run);
        } catch (error) {
          this.#log.error(`trajectory view: ${(error as Error).message}`);
          void vscode.window.showErrorMessage(`Belay: ${(error as Error).message}`);
        }
      }),
    );
    panel.webview.html = webviewHtml(panel.webview, this.#extensionUri, 'trajectory', `Run: ${run.result.task_name}`);
    post(await this.#message(run, focusStep));
    return panel;
  }

  async #message(run: PastRun, focus?: number): Promise<ToWebview> {
    const r = run.result;
    let read: Awaited<ReturnType<typeof readTrajectory>>;
    try {
      read = await readTrajectory(r.run_dir);
    } catch (error) {
      return { type: 'error', message: `Cannot read the run's steps: ${(error as Error).message}` };
    }
    const steps: TrajectoryStep[] = await Promise.all(
      read.steps.map(async (s) => ({
        step: s.step,
        agentText: s.agentText,
        command: s.command,
        cwd: s.cwd,
        exitCode: s.exitCode,
        timedOut: s.timedOut,
        durationMs: s.durationMs,
        output: s.outputFile ? await readBounded(s.outputFile, STEP_OUTPUT_CHARS) : (s.screen ?? ''),
        outputKind: s.outputFile ? ('output' as const) : ('screen' as const),
        hasOutputFile: s.outputFile !== null,
      })),
    );
    return {
      type: 'run',
      run: {
        runId: r.run_id,
        task: r.task_name,
        agent: r.agent ?? null,
        protocol: r.protocol,
        backend: r.backend,
        startedAt: r.started_at,
        durationSec: r.duration_sec,
        passed: r.passed,
        reward: r.reward,
        failureCause: r.failure_cause,
        error: r.error,
        testOutput: r.verification?.output ?? '',
        skippedEntries: read.skipped,
      },
      steps,
      ...(focus !== undefined ? { focus } : {}),
    };
  }

  dispose(): void {
    for (const panel of [...this.#panels.values()]) panel.dispose();
  }
}
