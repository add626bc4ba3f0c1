// The runner's state in the editor: the workspace's tasks, its agents, past and active runs.
// Every view (Tasks tree, Test Explorer, task provider, terminals) reads from here and every run
// starts here, so the trust check, the secrets and the backend are decided in one place.
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { errorMessage } from '../shared/errors.ts';
import {
  AGENTS_FILE,
  AgentSchema,
  expandCommand,
  MicroAgentSchema,
  parseAgentsFile,
  parseList,
  uniqueByName,
  type Agent,
  type MicroAgent,
} from './core/agents/agents.ts';
import type { Backend } from './core/backends/backend.ts';
import type { RunEvent } from './core/records/events.ts';
import { listRuns, runsByTask } from './core/records/history.ts';
import { listJobRuns, newestFirst, type RunOrTrial } from './core/results/jobRuns.ts';
import { TASK_MARKER_FILES } from './core/tasks/layout.ts';
import type { RunResult } from './core/records/records.ts';
import { RunsFolderWatcher } from './core/records/runsWatcher.ts';
import type { HostedGateway, RunLlmOptions } from './core/run/runLlm.ts';
import { fillEnv, MissingSecretError, secretNames } from './core/agents/secrets.ts';
import { discoverTasks, type Task, type TaskError } from './core/tasks/task.ts';

/** Where SecretStorage keeps agent secrets: this prefix, then the name settings refer to. */
const SECRET_PREFIX = 'belay.secret.';

export interface ActiveRun {
  id: string;
  task: Task;
  agent: Agent;
  /** The backend's name (sandbox, local, …). */
  backend: string;
  controller: AbortController;
}

export interface StartOptions {
  onEvent?: (event: RunEvent) => void;
  signal?: AbortSignal;
  /** Where the run folder goes and its name (a job's trial); by default the task's runs folder and a new id. */
  runsDir?: string;
  runId?: string;
}

interface FileAgents {
  agents: Agent[];
  microAgents: MicroAgent[];
  problems: string[];
}

/** Thrown when a run is refused before it starts (trust, secrets, sandbox). */
class RunRefusedError extends Error {
  override name = 'RunRefusedError';
}

export class RunnerService implements vscode.Disposable {
  readonly #ctx: BelayContext;
  readonly #changed = new vscode.EventEmitter<void>();
  /** Fires when tasks, agents, history, active runs or trust change. */
  readonly onDidChange = this.#changed.event;
  readonly #disposables: vscode.Disposable[] = [];
  #tasks: Task[] = [];
  #taskErrors: TaskError[] = [];
  /** Single runs and the trials of jobs, newest first. */
  #runs: RunOrTrial[] = [];
  #fileAgents: FileAgents = { agents: [], microAgents: [], problems: [] };
  #active = new Map<string, ActiveRun>();
  #loaded = false;
  #refreshing: Promise<void> | undefined;
  #refreshAgain = false;
  #timer: NodeJS.Timeout | undefined;
  #backendChoice: Promise<Backend> | undefined;
  /** The window's LLM gateway, started with the first run that calls a model. */
  #gateway: Promise<HostedGateway> | undefined;
  /** Started late when a runs folder appears after activation (see #load). */
  #nodeWatchers: RunsFolderWatcher[] = [];

  constructor(ctx: BelayContext) {
    this.#ctx = ctx;
    const watch = (glob: vscode.GlobPattern, into = this.#disposables) => {
      const watcher = vscode.workspace.createFileSystemWatcher(glob);
      const soon = () => this.refreshSoon();
      into.push(watcher, watcher.onDidCreate(soon), watcher.onDidChange(soon), watcher.onDidDelete(soon));
    };
    watch(`**/{${TASK_MARKER_FILES.join(',')}}`);
    watch(`**/${AGENTS_FILE}`);
    // A removed folder is reported as itself, not as the task files inside it.
    const deletions = vscode.workspace.createFileSystemWatcher('**/*', true, true, false);
    this.#disposables.push(
      deletions,
      deletions.onDidDelete((uri) => {
        const gone = uri.fsPath;
        if (this.#tasks.some((t) => t.dir === gone || t.dir.startsWith(gone + path.sep))) this.refreshSoon();
      }),
    );
    // Run folders are written by the editor and by `belay run` in a terminal: watched directly,
    // since the workspace-wide watcher may not report dot folders.
    const runWatchers: vscode.Disposable[] = [];
    const watchRuns = () => {
      for (const d of runWatchers.splice(0)) d.dispose();
      this.#nodeWatchers = [];
      for (const folder of this.#folders()) {
        const runsDir = this.#runsDirOf(folder);
        watch(new vscode.RelativePattern(vscode.Uri.file(runsDir), '*/result.json'), runWatchers);
        // Trials of jobs: job.json is written again as each trial ends.
        watch(new vscode.RelativePattern(vscode.Uri.file(this.#jobsDirOf(folder)), '*/job.json'), runWatchers);
        const nodeWatcher = new RunsFolderWatcher(runsDir, () => this.refreshSoon());
        nodeWatcher.start();
        this.#nodeWatchers.push(nodeWatcher);
        runWatchers.push(nodeWatcher);
      }
    };
    watchRuns();
    this.#disposables.push({ dispose: () => runWatchers.splice(0).forEach((d) => d.dispose()) });
    this.#disposables.push(vscode.workspace.onDidChangeWorkspaceFolders(watchRuns), ctx.config.onDidChange(['runner.runsDir', 'runner.jobsDir'], watchRuns));
    this.#disposables.push(
      vscode.workspace.onDidChangeWorkspaceFolders(() => this.refreshSoon()),
      ctx.trust.onDidGrant(() => this.#changed.fire()),
      ctx.config.onDidChange(['agents', 'microAgents', 'runner.backend', 'runner.containerEngine', 'runner.engineHosts', 'runner.containerCpus', 'runner.containerMemoryMB', 'runner.runsDir', 'runner.jobsDir'], () => {
        this.#backendChoice = undefined;
        this.refreshSoon();
      }),
      this.#changed,
    );
  }

  get loaded(): boolean {
    return this.#loaded;
  }
  get tasks(): readonly Task[] {
    return this.#tasks;
  }
  get taskErrors(): readonly TaskError[] {
    return this.#taskErrors;
  }
  get activeRuns(): readonly ActiveRun[] {
    return [...this.#active.values()];
  }

  /** Past runs of a task (single runs and trials of jobs), newest first. */
  runsOf(task: Task): RunOrTrial[] {
    return runsByTask(this.#runs, [task]).get(task.dir) ?? [];
  }
  /** Every past run: single runs and trials of jobs, newest first. */
  get allRuns(): readonly RunOrTrial[] {
    return this.#runs;
  }

  get agents(): Agent[] {
    return uniqueByName([this.#agentSettings().items, this.#fileAgents.agents]);
  }
  get microAgents(): MicroAgent[] {
    return uniqueByName([this.#microAgentSettings().items, this.#fileAgents.microAgents]);
  }
  /** Mistakes in agent settings or files, one line each (for the log). */
  #agentProblems(): string[] {
    return [...this.#agentSettings().problems, ...this.#microAgentSettings().problems, ...this.#fileAgents.problems];
  }

  #agentSettings() {
    return parseList(this.#ctx.config.get('agents'), AgentSchema, 'setting belay.agents', this.#firstFolder());
  }
  #microAgentSettings() {
    return parseList(this.#ctx.config.get('microAgents'), MicroAgentSchema, 'setting belay.microAgents', this.#firstFolder());
  }

  #folders(): string[] {
    return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
  }
  /** Where agents from settings run (their commands are relative to it). */
  #firstFolder(): string {
    return this.#folders()[0] ?? process.cwd();
  }

  /** The runs folder setting of one workspace folder, resolved against it. */
  #runsDirOf(folder: string): string {
    return path.resolve(folder, this.#ctx.config.get('runner.runsDir', vscode.Uri.file(folder)));
  }

  /** The workspace folder that holds `dir` (the first folder otherwise). */
  #folderOf(dir: string): string {
    const folders = this.#folders();
    return folders.find((f) => dir === f || dir.startsWith(f + path.sep)) ?? folders[0] ?? path.dirname(dir);
  }

  /** The runs folder of the workspace folder that holds `dir` (the first folder otherwise). */
  runsDirFor(dir: string): string {
    return this.#runsDirOf(this.#folderOf(dir));
  }

  #jobsDirOf(folder: string): string {
    return path.resolve(folder, this.#ctx.config.get('runner.jobsDir', vscode.Uri.file(folder)));
  }

  /** The jobs folder of the workspace folder that holds `dir` (the first folder otherwise). */
  jobsDirFor(dir: string): string {
    return this.#jobsDirOf(this.#folderOf(dir));
  }

  /** Every workspace folder's jobs folder (the editor's and `belay run --attempts`'s default). */
  get jobsDirs(): string[] {
    return [...new Set(this.#folders().map((f) => this.#jobsDirOf(f)))];
  }

  /** The backend runs use now (decided once, as for a run): regrades use it too. */
  backend(): Promise<Backend> {
    return this.#backend();
  }

  /** The name of the backend runs use now (decided once, as for a run). */
  async backendName(): Promise<string> {
    return (await this.#backend()).name;
  }

  refreshSoon(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.refresh(), 150);
  }

  /** Re-reads tasks, agent files and history; concurrent calls coalesce into one more pass. */
  refresh(): Promise<void> {
    if (this.#refreshing) {
      this.#refreshAgain = true;
      return this.#refreshing;
    }
    this.#refreshing = (async () => {
      do {
        this.#refreshAgain = false;
        try {
          await this.#load();
        } catch (error) {
          this.#ctx.log.error(`runner: could not read the workspace: ${errorMessage(error)}`);
        }
      } while (this.#refreshAgain);
    })().finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  async #load(): Promise<void> {
    const folders = this.#folders();
    const { tasks, errors } = await discoverTasks(folders);
    const runsDirs = [...new Set(folders.map((f) => this.#runsDirOf(f)))];
    const jobsDirs = [...new Set(folders.map((f) => this.#jobsDirOf(f)))];
    const [single, trials] = await Promise.all([Promise.all(runsDirs.map((d) => listRuns(d))), listJobRuns(jobsDirs)]);
    const runs = newestFirst<RunOrTrial>([...single.flat(), ...trials]);
    const fileAgents: FileAgents = { agents: [], microAgents: [], problems: [] };
    const files = await vscode.workspace.findFiles(`**/${AGENTS_FILE}`, '**/node_modules/**', 50);
    for (const uri of files.sort((a, b) => a.fsPath.localeCompare(b.fsPath))) {
      try {
        const parsed = parseAgentsFile(await fs.readFile(uri.fsPath, 'utf8'), uri.fsPath);
        fileAgents.agents.push(...parsed.agents.items);
        fileAgents.microAgents.push(...parsed.microAgents.items);
        fileAgents.problems.push(...parsed.agents.problems, ...parsed.microAgents.problems);
      } catch (error) {
        fileAgents.problems.push(`${uri.fsPath}: ${errorMessage(error)}`);
      }
    }
    for (const watcher of this.#nodeWatchers) watcher.start();
    this.#tasks = tasks;
    this.#taskErrors = errors;
    this.#runs = runs;
    this.#fileAgents = fileAgents;
    for (const problem of [...errors.map((e) => e.message), ...this.#agentProblems()]) this.#ctx.log.warn(`runner: ${problem}`);
    this.#loaded = true;
    void vscode.commands.executeCommand('setContext', 'belay.tasks.empty', tasks.length === 0 && errors.length === 0);
    void vscode.commands.executeCommand('setContext', 'belay.tasks.loaded', true);
    this.#changed.fire();
  }

  findTask(ref: string): Task | undefined {
    const folders = this.#folders();
    return this.#tasks.find((t) => t.dir === ref || t.name === ref || folders.some((f) => path.resolve(f, ref) === t.dir));
  }
  findAgent(name: string): Agent | undefined {
    return this.agents.find((a) => a.name === name);
  }

  /** Secrets named by `${secret:…}` in these texts, read from SecretStorage. */
  async secretsFor(texts: string[]): Promise<Map<string, string>> {
    const secrets = new Map<string, string>();
    for (const name of secretNames(texts)) {
      const value = await this.#ctx.extension.secrets.get(SECRET_PREFIX + name);
      if (value !== undefined) secrets.set(name, value);
    }
    return secrets;
  }

  /** The secrets holding model keys (`keySecret` of `belay.runner.llm` and of agents' own `llm`). */
  llmKeySecrets(): string[] {
    const fallback = this.#ctx.config.get('runner.llm') as { keySecret?: unknown } | null;
    const names = [...this.agents.map((agent) => agent.llm?.keySecret), fallback?.keySecret];
    return [...new Set(names.filter((name): name is string => typeof name === 'string' && name.trim() !== ''))];
  }

  /** Stores a secret agents refer to as `${secret:NAME}`; an empty value removes it. */
  async storeSecret(name: string, value: string): Promise<void> {
    if (value === '') await this.#ctx.extension.secrets.delete(SECRET_PREFIX + name);
    else await this.#ctx.extension.secrets.store(SECRET_PREFIX + name, value);
  }

  async #backend(): Promise<Backend> {
    // The backends (and the process layer under them) load with the first run, not at activation.
    const { pickBackend, isBackendName } = await import('./core/backends/choose.ts');
    const { BackendUnavailableError } = await import('./core/backends/backend.ts');
    const setting = this.#ctx.config.get('runner.backend');
    const engine = this.#ctx.config.get('runner.containerEngine');
    const engineHosts = this.#ctx.config.get('runner.engineHosts');
    const container = { ...(engine !== 'auto' ? { engine } : {}), ...(engineHosts.length > 0 ? { engineHosts } : {}), cpus: this.#ctx.config.get('runner.containerCpus'), memoryMb: this.#ctx.config.get('runner.containerMemoryMB') };
    this.#backendChoice ??= pickBackend(isBackendName(setting) ? setting : undefined, { container });
    try {
      return await this.#backendChoice;
    } catch (error) {
      this.#backendChoice = undefined;
      if (error instanceof BackendUnavailableError) {
        throw new RunRefusedError(`${error.message}. Set "belay.runner.backend" to "local" to run agents without isolation.`);
      }
      throw error;
    }
  }

  /**
   * The model `agent` may call through Belay's gateway (its own `llm`, else `belay.runner.llm`),
   * with the real key from SecretStorage; none when no upstream is set. One gateway serves every
   * run of the window (started with the first that needs it), so their 429 backoff is shared.
   */
  async #llm(agent: Agent): Promise<RunLlmOptions | undefined> {
    const { chooseLlm, parsePrices } = await import('./core/agents/llmSettings.ts');
    const owner = `agent '${agent.name}'`;
    let choice: ReturnType<typeof chooseLlm>;
    let prices: ReturnType<typeof parsePrices>;
    try {
      choice = chooseLlm(agent.llm, this.#ctx.config.get('runner.llm'), owner);
      prices = parsePrices(this.#ctx.config.get('runner.llmPrices'));
    } catch (error) {
      throw new RunRefusedError(errorMessage(error));
    }
    if (!choice) return undefined;
    if ('vscodeModel' in choice) {
      const { vscodeLocalModel } = await import('./vscodeModels.ts');
      let local: Awaited<ReturnType<typeof vscodeLocalModel>>;
      try {
        local = await vscodeLocalModel(this.#ctx, choice.vscodeModel);
      } catch (error) {
        throw new RunRefusedError(errorMessage(error));
      }
      const host = await this.#hostGateway();
      return { gateway: host.gateway, socketPath: host.socketPath, upstream: { local }, budget: choice.budget, prices };
    }
    let key = '';
    if (choice.keySecret) {
      key = (await this.#ctx.extension.secrets.get(SECRET_PREFIX + choice.keySecret)) ?? '';
      if (key === '') throw new RunRefusedError(new MissingSecretError(choice.keySecret, owner).message);
    }
    const host = await this.#hostGateway();
    return { gateway: host.gateway, socketPath: host.socketPath, upstream: { baseUrl: choice.baseUrl, key, api: choice.api, ...(choice.model ? { model: choice.model } : {}) }, budget: choice.budget, prices };
  }

  /** The window's one gateway, started with the first run that needs it. */
  async #hostGateway(): Promise<HostedGateway> {
    const { hostGateway } = await import('./core/run/runLlm.ts');
    this.#gateway ??= hostGateway().catch((error: unknown) => {
      this.#gateway = undefined;
      throw new RunRefusedError(`Belay's LLM gateway could not start: ${errorMessage(error)}`);
    });
    return this.#gateway;
  }

  /**
   * An installed CLI's protocol with no command: Belay's pinned CLI, installed into the cache first
   * (with progress) when it is not there. Undefined for every other agent.
   */
  async #installedCli(agent: Agent, llm: RunLlmOptions | undefined): Promise<{ command: string; folder: string } | undefined> {
    const { installedAgent } = await import('./core/protocols/installed/installedAgents.ts');
    const described = installedAgent(agent.protocol);
    if (!described) return undefined;
    if (!llm) throw new RunRefusedError(`agent '${agent.name}' runs ${described.title}, which reaches its model only through Belay's gateway: set its "llm" (or belay.runner.llm) to an upstream`);
    if (agent.command !== '') return undefined;
    const { defaultAgentCache, ensureInstalled, findInstalled, InstallError, launchCommand } = await import('./core/protocols/installed/install.ts');
    const cache = this.#ctx.config.get('runner.agentCache').trim() || defaultAgentCache();
    const install = () => ensureInstalled(described, { cache, onProgress: (message) => this.#ctx.log.info(`runner: ${message}`) });
    try {
      const cli =
        findInstalled(described, cache) ??
        (await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Belay: installing ${described.title} ${described.version} from the npm registry…` }, install));
      return { command: launchCommand(described, cli), folder: cli.folder };
    } catch (error) {
      if (error instanceof InstallError) throw new RunRefusedError(error.message);
      throw error;
    }
  }

  /** Runs `agent` on `task`; resolves with the result (also when the run failed or was stopped). */
  async start(task: Task, agent: Agent, options: StartOptions = {}): Promise<RunResult> {
    const refusal = this.#ctx.trust.refusal('runAgents');
    if (refusal) throw new RunRefusedError(refusal);
    const secrets = await this.secretsFor(Object.values(agent.env));
    const env = fillEnv(agent.env, secrets, `agent '${agent.name}'`);
    const llm = await this.#llm(agent);
    const backend = await this.#backend();
    // Every task of the workspace stays out of the agent's sight, not only this one.
    const hidden = [...this.#tasks.map((t) => t.dir), ...this.#taskErrors.map((e) => path.dirname(e.file)), ...this.#folders().flatMap((f) => [this.#runsDirOf(f), this.#jobsDirOf(f)])];
    // The agent's folder: its cwd setting, else its program's folder, else where it was declared; never the home folder or /.
    const { AgentFolderError, resolveAgentFolder } = await import('./core/agents/agentFolder.ts');
    const installed = await this.#installedCli(agent, llm);
    let folder;
    try {
      folder = resolveAgentFolder({
        command: installed?.command ?? expandCommand(agent.command, process.execPath, agent.baseDir),
        base: agent.baseDir,
        given: installed?.folder ?? agent.cwd,
        hidden,
        option: `"cwd" in agent '${agent.name}'`,
        isolated: backend.isolated,
      });
    } catch (error) {
      if (error instanceof AgentFolderError) throw new RunRefusedError(error.message);
      throw error;
    }
    const { newRunId, runTask } = await import('./core/run/run.ts');
    const { protocolNamed } = await import('./core/protocols/index.ts');
    const runId = options.runId ?? newRunId(task.name);
    const controller = new AbortController();
    const abort = () => controller.abort();
    if (options.signal?.aborted) controller.abort();
    options.signal?.addEventListener('abort', abort);
    const active: ActiveRun = { id: runId, task, agent, backend: backend.name, controller };
    this.#active.set(runId, active);
    this.#changed.fire();
    const runsDir = options.runsDir ?? this.runsDirFor(task.dir);
    this.#ctx.log.info(`runner: ${task.name} with ${agent.name} (${agent.protocol}, ${backend.name}) → ${path.join(runsDir, runId)}`);
    try {
      const result = await runTask({
        task,
        agentCommand: folder.command,
        agentCwd: folder.dir,
        // `${node}`: the editor's own runtime.
        agentFolders: [path.dirname(process.execPath)],
        hidden,
        protocol: protocolNamed(agent.protocol),
        agentName: agent.name,
        backend,
        runsDir,
        runId,
        env,
        ...(llm ? { llm } : {}),
        allowPublicNetwork: this.#ctx.config.get('runner.allowPublicNetwork'),
        ...wheelhouseSetting(this.#ctx.config.get('runner.wheelhouse')),
        limits: {
          maxSteps: this.#ctx.config.get('runner.maxSteps'),
          maxLogBytes: this.#ctx.config.get('runner.logLimitMB') * 1024 * 1024,
          diskBudgetBytes: this.#ctx.config.get('runner.diskBudgetMB') * 1024 * 1024,
        },
        signal: controller.signal,
        onEvent: (event) => {
          if (event.type === 'agent-log') this.#ctx.log.trace(`[${task.name}] ${event.chunk.trimEnd()}`);
          options.onEvent?.(event);
        },
      });
      this.#ctx.log.info(`runner: ${task.name} ${result.passed ? 'passed' : `failed (${result.failure_cause}: ${result.error ?? ''})`}`);
      return result;
    } finally {
      options.signal?.removeEventListener('abort', abort);
      this.#active.delete(runId);
      await this.refresh();
    }
  }

  /** Stops one run (or every run) and everything it started. */
  stop(runId?: string): number {
    const targets = runId ? [this.#active.get(runId)].filter((r) => r !== undefined) : [...this.#active.values()];
    for (const run of targets) run.controller.abort();
    return targets.length;
  }

  activeRunOf(task: Task): ActiveRun | undefined {
    return [...this.#active.values()].find((r) => r.task.dir === task.dir);
  }

  dispose(): void {
    clearTimeout(this.#timer);
    this.stop();
    void this.#gateway?.then((host) => host.close()).catch(() => undefined);
    for (const d of this.#disposables.splice(0)) d.dispose();
  }
}

/** belay.runner.wheelhouse as a run option: empty is none; `~/` is the home folder. */
function wheelhouseSetting(value: string): { wheelhouse?: string } {
  const text = value.trim();
  if (text === '') return {};
  return { wheelhouse: text === '~' || text.startsWith('~/') ? path.join(os.homedir(), text.slice(1)) : text };
}
