// The Results view: one webview panel showing a job (or every job) as a matrix of tasks ×
// attempts or × agents, with pass@1 / pass@k, filters and sorts, a comparison with a second job,
// and each cell opening its trial. Jobs are those under the jobs folders (the editor's and
// `belay run --attempts`'s) and folders opened by hand (a Harbor job). It follows the jobs it
// shows: job.json is rewritten as trials start and end, and the view is drawn again. One Belay job
// shows its latest regrade beside the recorded results (the job's regrade.json changes at its end).
import { existsSync, promises as fs, watch, type FSWatcher } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { errorMessage } from '../shared/errors.ts';
import { WebviewHost, type PageMessage } from '../ui/webviewHost.ts';
import { compareJobs, type JobComparison } from './core/results/compareJobs.ts';
import { jobFolderKind, listJobFolders, readJobView, type JobFolder } from './core/results/discover.ts';
import { readLatestRegrade, withRegrade, type LatestRegrade, type RegradeFileCache } from './core/results/latestRegrade.ts';
import { buildMatrix, orderRows, type Matrix } from './core/results/matrix.ts';
import type { JobView } from './core/results/model.ts';
import { toHostSchema, type Query, type Regrade, type State, type ToHost, type ToWebview } from '../contracts/resultsPage.ts';

export interface ResultsActions {
  /** Opens a Belay run folder, or an ATIF trajectory file, in the trajectory view. */
  openRun(runDir: string): Promise<void>;
  /** Opens a file read-only (a Harbor trial's ATIF trajectory, a job.json). */
  openFile(file: string): Promise<void>;
  compareRuns(runDirA: string, runDirB: string): Promise<void>;
  command(name: 'runJob' | 'resumeJob' | 'openJobFolder' | 'regradeJob'): Promise<void>;
}

/** While a job shown runs, it is read again this often even when no file event came (Harbor writes in trial folders). */
const POLL_MS = 2000;
const DEBOUNCE_MS = 150;

export class ResultsPanel implements vscode.Disposable {
  readonly #extensionUri: vscode.Uri;
  readonly #log: vscode.LogOutputChannel;
  readonly #roots: () => string[];
  readonly #actions: ResultsActions;
  #panel: vscode.WebviewPanel | undefined;
  #host: WebviewHost<ToHost, ToWebview> | undefined;
  /** Folders opened by hand, beside those found under the jobs folders. */
  readonly #extra = new Map<string, JobFolder>();
  #folders: JobFolder[] = [];
  #shown: string[] = [];
  #all = false;
  #compareWith: string | null = null;
  /** The newest job found under the jobs folders when the view was last drawn. */
  #newest: string | undefined;
  #query: Query = { filter: 'all', sort: 'task', text: '' };
  /** Job views read, by folder, with the job.json's time they were read at (Belay jobs). */
  readonly #cache = new Map<string, { view: JobView; stamp: number }>();
  #matrix: Matrix | undefined;
  #comparison: JobComparison | undefined;
  #last: State | undefined;
  /** The regrade files read for the job shown (read again only when they change). */
  #regradeFiles: { dir: string; cache: RegradeFileCache } = { dir: '', cache: new Map() };
  /** The latest regrade of the job shown, and the jobs whose regrade of that stamp the person put away. */
  #regrade: { dir: string; stamp: string | null } | undefined;
  readonly #regradeHidden = new Map<string, string | null>();
  #watchers: FSWatcher[] = [];
  #watched = '';
  /** Folders to watch that do not exist yet. */
  #missing = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #poll: NodeJS.Timeout | undefined;
  /** A job shown is running (or a Harbor job not finished). */
  #running = false;
  readonly #updated = new vscode.EventEmitter<void>();
  /** Fires after each state was made for the page (tests wait on it). */
  readonly onDidUpdate = this.#updated.event;

  constructor(extensionUri: vscode.Uri, log: vscode.LogOutputChannel, roots: () => string[], actions: ResultsActions) {
    this.#extensionUri = extensionUri;
    this.#log = log;
    this.#roots = roots;
    this.#actions = actions;
  }

  /** Test seams: the job folders shown and the last state sent. */
  get shown(): readonly string[] {
    return this.#shown;
  }
  get lastState(): State | undefined {
    return this.#last;
  }
  get panel(): vscode.WebviewPanel | undefined {
    return this.#panel;
  }

  /** Opens (or reveals) the view; with a job folder, shows that job (a Belay or a Harbor job). */
  async show(jobDir?: string): Promise<vscode.WebviewPanel> {
    if (jobDir !== undefined) {
      const dir = path.resolve(jobDir.endsWith('job.json') ? path.dirname(jobDir) : jobDir);
      const source = await jobFolderKind(dir);
      if (!source) throw new Error(`${dir} is neither a Belay job (job.json) nor a Harbor job folder`);
      if (!this.#roots().some((root) => path.dirname(dir) === path.resolve(root))) this.#extra.set(dir, { dir, source });
      this.#shown = [dir];
      this.#all = false;
      if (this.#compareWith === dir) this.#compareWith = null;
    }
    if (this.#panel) {
      this.#panel.reveal();
      this.refresh();
      return this.#panel;
    }
    const panel = vscode.window.createWebviewPanel('belay.results', 'Belay Results', vscode.ViewColumn.Active, { retainContextWhenHidden: true });
    this.#panel = panel;
    this.#host = new WebviewHost<ToHost, ToWebview>(panel, {
      app: 'results',
      title: 'Belay Results',
      schema: toHostSchema,
      extensionUri: this.#extensionUri,
      log: this.#log,
      handler: {
        state: () => this.#state(),
        receive: (message) => this.#receive(message),
        dispose: () => this.#closed(),
      },
    });
    this.#poll = setInterval(() => {
      // A job running, or a jobs folder made since (by its first job): no event would say so.
      if (this.#running || [...this.#missing].some((dir) => existsSync(dir))) this.refresh();
    }, POLL_MS);
    return panel;
  }

  /** Reads the jobs again and draws them (soon: calls close together are one). */
  refresh(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#host?.refresh(), DEBOUNCE_MS);
  }

  #closed(): void {
    clearTimeout(this.#timer);
    clearInterval(this.#poll);
    this.#unwatch();
    this.#panel = undefined;
    this.#host = undefined;
    this.#last = undefined;
  }

  async #receive(message: PageMessage<ToHost>): Promise<void> {
    const known = (dir: string) => this.#folders.some((f) => f.dir === dir);
    switch (message.type) {
      case 'show':
        this.#all = message.all;
        this.#shown = message.all ? [] : message.jobs.filter(known).slice(0, 1);
        if (this.#compareWith !== null && this.#shown.includes(this.#compareWith)) this.#compareWith = null;
        this.#host?.refresh();
        return;
      case 'compareWith':
        this.#compareWith = message.job !== null && known(message.job) ? message.job : null;
        this.#host?.refresh();
        return;
      case 'query':
        this.#query = message.query;
        if (this.#matrix) this.#host?.post({ type: 'order', order: orderRows(this.#matrix.rows, this.#query), query: this.#query });
        return;
      case 'open': {
        const trial = this.#matrix?.rows[message.row]?.cells[message.column]?.open;
        if (!trial) return;
        if (trial.runDir && (await exists(trial.runDir))) await this.#actions.openRun(trial.runDir);
        // A Harbor trial's ATIF trajectory opens in the trajectory view as a run does.
        else if (trial.trajectoryFile) await this.#actions.openRun(trial.trajectoryFile);
        else void vscode.window.showInformationMessage(`Belay: the trial ${trial.trialId} has no run to open yet.`);
        return;
      }
      case 'compareRuns': {
        const change = this.#comparison?.tasks[message.task];
        if (change?.runBefore && change.runAfter) await this.#actions.compareRuns(change.runBefore, change.runAfter);
        return;
      }
      case 'showRegrade':
        if (this.#regrade) {
          if (message.show) this.#regradeHidden.delete(this.#regrade.dir);
          else this.#regradeHidden.set(this.#regrade.dir, this.#regrade.stamp);
        }
        this.#host?.refresh();
        return;
      case 'command':
        if (message.command === 'openJobFile') {
          const dir = this.#shown[0];
          const source = this.#folders.find((f) => f.dir === dir)?.source;
          if (dir) await this.#actions.openFile(path.join(dir, source === 'harbor' ? 'result.json' : 'job.json'));
          return;
        }
        await this.#actions.command(message.command);
        return;
    }
  }

  async #read(folder: JobFolder): Promise<JobView> {
    // A Belay job is read again only when its job.json changed.
    const stamp = folder.source === 'belay' ? await fs.stat(path.join(folder.dir, 'job.json')).then((s) => s.mtimeMs, () => -1) : -1;
    const cached = this.#cache.get(folder.dir);
    if (cached && stamp !== -1 && cached.stamp === stamp) return cached.view;
    const view = await readJobView(folder);
    this.#cache.set(folder.dir, { view, stamp });
    return view;
  }

  async #state(): Promise<State> {
    const found = await listJobFolders(this.#roots());
    const folders = [...found, ...[...this.#extra.values()].filter((e) => !found.some((f) => f.dir === e.dir))];
    this.#folders = folders;
    for (const dir of this.#cache.keys()) if (!folders.some((f) => f.dir === dir)) this.#cache.delete(dir);
    this.#shown = this.#shown.filter((dir) => folders.some((f) => f.dir === dir));
    // Showing the newest job follows a newer one (a job just started here or by `belay run`), unless comparing.
    const newest = found[0]?.dir;
    if (!this.#all && newest !== undefined && this.#newest !== undefined && newest !== this.#newest && this.#shown[0] === this.#newest && this.#compareWith === null) this.#shown = [newest];
    this.#newest = newest;
    if (!this.#all && this.#shown.length === 0 && folders.length > 0) this.#shown = [folders[0]!.dir];
    if (this.#compareWith !== null && !folders.some((f) => f.dir === this.#compareWith)) this.#compareWith = null;
    // Every job: oldest to newest, left to right.
    const shownFolders = this.#all ? [...folders].reverse() : folders.filter((f) => this.#shown.includes(f.dir));
    const views: JobView[] = [];
    const problems: string[] = [];
    for (const folder of shownFolders) {
      try {
        views.push(await this.#read(folder));
      } catch (error) {
        problems.push(`${path.basename(folder.dir)}: ${errorMessage(error)}`);
      }
    }
    let comparison: JobComparison | undefined;
    const other = !this.#all && this.#compareWith !== null ? folders.find((f) => f.dir === this.#compareWith) : undefined;
    if (other && views.length === 1) {
      try {
        comparison = compareJobs(await this.#read(other), views[0]!);
      } catch (error) {
        problems.push(`${path.basename(other.dir)}: ${errorMessage(error)}`);
      }
    }
    // One Belay job: its latest regrade beside the recorded results (its report, <job>/regrade.json, is in the folder watched).
    let regrade: Regrade | null = null;
    this.#regrade = undefined;
    if (!this.#all && views.length === 1 && views[0]!.source === 'belay') {
      const view = views[0]!;
      if (this.#regradeFiles.dir !== view.dir) this.#regradeFiles = { dir: view.dir, cache: new Map() };
      let latest: LatestRegrade | null;
      try {
        latest = await readLatestRegrade(view, this.#regradeFiles.cache);
      } catch (error) {
        latest = { stamp: null, regradedAt: null, trials: new Map(), summary: '', problems: [`the latest regrade cannot be read: ${errorMessage(error)}`] };
      }
      if (latest) {
        const shown = latest.stamp !== null && this.#regradeHidden.get(view.dir) !== latest.stamp;
        this.#regrade = { dir: view.dir, stamp: latest.stamp };
        if (shown) views[0] = withRegrade(view, latest);
        regrade = { at: latest.regradedAt, summary: latest.summary, shown, problems: latest.problems };
      }
    }
    this.#watch([...this.#roots(), ...shownFolders.map((f) => f.dir)]);
    const matrix = buildMatrix(views);
    this.#matrix = matrix;
    this.#running = views.some((v) => v.status === 'running');
    this.#comparison = comparison;
    const notice =
      folders.length === 0
        ? `No job yet. Run one with "Belay: Run Job…" (or \`belay run TASK_DIR… --attempts K\` in a terminal), or open a job folder (Belay or Harbor).\nJobs are looked for in: ${this.#roots().join(', ') || '(no workspace folder)'}`
        : problems.length > 0
          ? `Could not read: ${problems.join('; ')}`
          : null;
    const byDir = new Map(folders.map((f) => [f.dir, f]));
    const state: State = {
      type: 'state',
      jobs: folders.map((f) => ({ dir: f.dir, label: path.basename(f.dir), detail: f.source === 'harbor' ? 'Harbor job' : 'Belay job' })),
      shown: shownFolders.map((f) => f.dir),
      all: this.#all,
      compareWith: other?.dir ?? null,
      summary: summaryOf(views, byDir),
      scores: views.flatMap((v) => v.scores.map((s) => ({ agent: s.agent, job: v.label, k: s.k, passAt1: s.passAt1, passAtK: s.passAtK }))),
      mode: matrix.mode,
      columns: matrix.columns.map((c) => ({ label: c.label, detail: c.detail, score: c.score ? { k: c.score.k, passAt1: c.score.passAt1, passAtK: c.score.passAtK } : null })),
      rows: matrix.rows.map((r) => ({
        task: r.task,
        flaky: r.flaky,
        flagged: r.flagged,
        finished: r.finished,
        passed: r.passed,
        // A matrix cell is the page's cell with the trial it opens: the page learns only whether it opens one.
        cells: r.cells.map((c) => {
          if (c === null) return null;
          const { open, ...shown } = c;
          return { ...shown, opens: open !== null && (open.runDir !== null || open.trajectoryFile !== null) };
        }),
      })),
      order: orderRows(matrix.rows, this.#query),
      query: this.#query,
      comparison: comparison
        ? {
            before: path.basename(other!.dir),
            after: views[0]!.label,
            counts: comparison.counts,
            tasks: comparison.tasks.map((t) => ({
              task: t.task,
              kind: t.kind,
              before: t.before,
              after: t.after,
              passRateBefore: t.passRateBefore,
              passRateAfter: t.passRateAfter,
              rewardBefore: t.rewardBefore,
              rewardAfter: t.rewardAfter,
              canCompare: t.runBefore !== null && t.runAfter !== null,
            })),
          }
        : null,
      regrade,
      notice,
    };
    this.#last = state;
    this.#updated.fire();
    return state;
  }

  /** Watches the jobs folders (new jobs) and the jobs shown (their job.json, new trial folders). */
  #watch(dirs: string[]): void {
    // A folder that appears is watched from then on.
    const key = [...new Set(dirs)]
      .sort()
      .map((dir) => (existsSync(dir) ? dir : `${dir} (missing)`))
      .join('\n');
    if (key === this.#watched) return;
    this.#unwatch();
    this.#watched = key;
    this.#missing = new Set([...new Set(dirs)].filter((dir) => !existsSync(dir)));
    for (const dir of new Set(dirs)) {
      try {
        const watcher = watch(dir, () => this.refresh());
        watcher.on('error', () => watcher.close());
        this.#watchers.push(watcher);
      } catch {
        // Not there (yet): a jobs folder appears with the first job, and the poll sees it.
      }
    }
  }

  #unwatch(): void {
    for (const w of this.#watchers.splice(0)) w.close();
    this.#watched = '';
  }

  dispose(): void {
    this.#panel?.dispose();
    this.#closed();
    this.#updated.dispose();
  }
}

async function exists(file: string): Promise<boolean> {
  return fs.access(file).then(
    () => true,
    () => false,
  );
}

/** "job-x (Belay, finished): 40/40 trials done, 31 passed, 9 failed · 10 tasks × 4 attempts". */
function summaryOf(views: readonly JobView[], folders: Map<string, JobFolder>): string {
  return views
    .map((v) => {
      const total = v.trials.length;
      const finished = v.trials.filter((t) => t.state === 'finished');
      const passed = finished.filter((t) => t.passed).length;
      const running = v.trials.filter((t) => t.state === 'running').length;
      const tasks = new Set(v.trials.map((t) => t.taskKey)).size;
      const source = folders.get(v.dir)?.source === 'harbor' ? 'Harbor' : 'Belay';
      const live = running > 0 ? `, ${running} running` : '';
      return `${v.label} (${source}, ${v.status}): ${finished.length}/${total} trials done, ${passed} passed, ${finished.length - passed} failed${live} · ${tasks} task${tasks === 1 ? '' : 's'} × ${v.attempts} attempt${v.attempts === 1 ? '' : 's'}`;
    })
    .join('\n');
}
