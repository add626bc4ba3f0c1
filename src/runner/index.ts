import * as path from 'node:path';
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { AgentSchema, type Agent, type MicroAgent } from './agents.ts';
import { ChatTerminal, mediaLinkProvider, microAgentTexts } from './chat.ts';
import type { RunResult } from './core/records.ts';
import type { Task } from './core/task.ts';
import { CAUSE_WORDS, EventFormatter } from './format.ts';
import { readBounded, type PastRun } from './history.ts';
import { RunnerService, SECRET_PREFIX } from './service.ts';
import { belayTaskProvider, TASK_TYPE } from './taskProvider.ts';
import { OutputTerminal, createRealTerminal, type TerminalFactory } from './terminal.ts';
import { TaskTests } from './testing.ts';
import { TrajectoryPanels } from './trajectoryPanel.ts';
import { TasksTree, type TaskNode } from './tree.ts';

/** Read-only documents for step outputs and run files. */
const OUTPUT_SCHEME = 'belay-run-output';

/**
 * What Belay's own integration tests reach through the internal command `belay.runner.testHooks`
 * (not contributed, so not in the palette): the terminal factory to replace, the terminals made.
 */
export interface RunnerHooks {
  createTerminal: TerminalFactory;
  readonly service: RunnerService;
  readonly tests: TaskTests;
  readonly tree: TasksTree;
  readonly trajectories: TrajectoryPanels;
  readonly terminals: OutputTerminal[];
  readonly chats: ChatTerminal[];
}

/**
 * The task runner in the editor: the Tasks view (tasks, their runs and steps), the live agent
 * terminal, Test Explorer, the `belay` task type, the trajectory view and the micro-agent chat.
 * Everything starts runs through one RunnerService.
 */
export function registerRunner(ctx: BelayContext): void {
  const service = ctx.own(new RunnerService(ctx));
  const tree = ctx.own(new TasksTree(service, () => ctx.markViewResolved('belay.tasks')));
  const untrustedTree: vscode.TreeDataProvider<TaskNode> = {
    getTreeItem: (node) => tree.getTreeItem(node),
    getChildren: (node) => {
      if (!vscode.workspace.isTrusted) {
        // Empty, so the view's welcome content says why nothing runs here.
        ctx.markViewResolved('belay.tasks');
        return [];
      }
      return tree.getChildren(node);
    },
    onDidChangeTreeData: tree.onDidChangeTreeData,
  };
  const view = ctx.own(vscode.window.createTreeView('belay.tasks', { treeDataProvider: untrustedTree, showCollapseAll: true }));
  const tests = ctx.own(new TaskTests(service, () => ctx.config.get('runner.concurrency'), ctx.log));
  const chatTerminals = new WeakSet<vscode.Terminal>();
  const hooks: RunnerHooks = { createTerminal: createRealTerminal, service, tests, tree, trajectories: undefined!, terminals: [], chats: [] };
  const remember = <T>(list: T[], item: T) => {
    list.push(item);
    if (list.length > 20) list.shift();
  };

  const openOutput = async (file: string) => {
    const uri = vscode.Uri.from({ scheme: OUTPUT_SCHEME, path: file });
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: true });
  };
  const trajectories = ctx.own(
    new TrajectoryPanels(ctx.extension.extensionUri, { openOutput, repeat: (run) => repeatRun(run).then(() => undefined) }, ctx.log),
  );
  (hooks as { trajectories: TrajectoryPanels }).trajectories = trajectories;

  ctx.own(
    vscode.workspace.registerTextDocumentContentProvider(OUTPUT_SCHEME, {
      provideTextDocumentContent: async (uri) => (await readBounded(uri.path, 5_000_000)) || '(empty output)',
    }),
  );
  ctx.own(vscode.tasks.registerTaskProvider(TASK_TYPE, belayTaskProvider(service)));
  ctx.own(vscode.window.registerTerminalLinkProvider(mediaLinkProvider((t) => chatTerminals.has(t))));
  ctx.own(
    service.onDidChange(() => {
      tree.refresh();
      void vscode.commands.executeCommand('setContext', 'belay.runner.running', service.activeRuns.length > 0);
    }),
  );
  ctx.own(vscode.workspace.onDidGrantWorkspaceTrust(() => tree.refresh()));
  // Runs made outside the editor (`belay run` in a terminal) show up at the latest when the view is looked at.
  ctx.own(view.onDidChangeVisibility((e) => e.visible && service.refreshSoon()));
  void service.refresh();

  const pickTask = async (): Promise<Task | undefined> => {
    await service.refresh();
    if (service.tasks.length === 0) throw new Error('there is no task in this workspace (a folder with task.toml or task.yaml)');
    const picked = await vscode.window.showQuickPick(
      service.tasks.map((task) => ({ label: task.name, description: vscode.workspace.asRelativePath(task.dir), detail: task.instruction.replace(/\s+/g, ' ').slice(0, 120), task })),
      { title: 'Belay: Run Task with Agent', placeHolder: 'Which task?' },
    );
    return picked?.task;
  };
  const pickAgent = async (title: string): Promise<Agent | undefined> => {
    const agents = service.agents;
    const add = { label: '$(add) Add Agent…', description: 'configure a command and its protocol', agent: undefined };
    const items = [
      ...agents.map((agent) => ({ label: agent.name, description: agent.protocol === 'sdk1' ? 'SDK 1.x (JSON lines)' : 'SDK 2.0 (HTTP)', detail: agent.command, agent })),
      add,
    ];
    const picked = await vscode.window.showQuickPick(items, { title, placeHolder: agents.length > 0 ? 'Which agent?' : 'No agent is configured yet' });
    if (!picked) return undefined;
    if (picked.agent) return picked.agent;
    const name = await addAgent();
    return name ? service.findAgent(name) : undefined;
  };
  const taskFromArg = async (arg: unknown): Promise<Task | undefined> => {
    if (arg instanceof vscode.Uri) {
      await service.refresh();
      const found = service.tasks.find((t) => arg.fsPath === t.dir || arg.fsPath.startsWith(t.dir + path.sep));
      if (!found) throw new Error(`${vscode.workspace.asRelativePath(arg)} is not inside a task folder`);
      return found;
    }
    const node = arg as Partial<TaskNode> & { task?: unknown } | undefined;
    if (node && typeof node === 'object' && 'task' in node && node.task && typeof node.task === 'object') return node.task as Task;
    if (node && typeof node === 'object' && typeof (node as { task?: unknown }).task === 'string') {
      await service.refresh();
      const found = service.findTask((node as { task: string }).task);
      if (!found) throw new Error(`no task '${(node as { task: string }).task}' in this workspace`);
      return found;
    }
    return pickTask();
  };

  /** Runs in a live terminal; resolves with the result (undefined when the person cancelled a picker). */
  const runInTerminal = async (task: Task, agent: Agent): Promise<RunResult> => {
    const refusal = service.refusal();
    if (refusal) throw new Error(refusal);
    const stop = new AbortController();
    const pty = new OutputTerminal({ closeWhenDone: false, onStop: () => stop.abort() });
    remember(hooks.terminals, pty);
    hooks.createTerminal({ name: `Belay: ${task.name} · ${agent.name}`, pty, iconPath: new vscode.ThemeIcon('beaker') });
    const formatter = new EventFormatter();
    try {
      const result = await service.start(task, agent, { startedBy: 'editor', signal: stop.signal, onEvent: (e) => pty.write(formatter.format(e)) });
      pty.end(result.passed ? 0 : 1);
      const words = result.passed ? 'passed' : `failed: ${CAUSE_WORDS[result.failure_cause ?? ''] ?? result.failure_cause}`;
      const show = result.passed ? vscode.window.showInformationMessage : vscode.window.showWarningMessage;
      void show(`Belay: ${task.name} with ${agent.name} ${words}.`, 'Open Trajectory').then((choice) => {
        if (choice) void trajectories.show(result.run_dir).catch((e: Error) => ctx.log.error(e.message));
      });
      return result;
    } catch (error) {
      pty.write(`\x1b[31mBelay: ${(error as Error).message}\x1b[0m\n`);
      pty.end(2);
      throw error;
    }
  };

  const repeatRun = async (run: PastRun): Promise<RunResult | undefined> => {
    await service.refresh();
    const task = service.tasks.find((t) => t.dir === run.result.task_dir) ?? service.findTask(run.result.task_name);
    if (!task) throw new Error(`the task ${run.result.task_name} is no longer in this workspace`);
    const agent = (run.origin && service.findAgent(run.origin.agent)) || (await pickAgent(`Belay: Repeat ${task.name}`));
    return agent ? runInTerminal(task, agent) : undefined;
  };

  const addAgent = async (): Promise<string | undefined> => {
    const name = await vscode.window.showInputBox({ title: 'Belay: Add Agent (1/3)', prompt: 'A name for the agent', placeHolder: 'my-agent', validateInput: (v) => (v.trim() ? undefined : 'a name is needed') });
    if (!name) return undefined;
    const command = await vscode.window.showInputBox({
      title: 'Belay: Add Agent (2/3)',
      prompt: 'The shell command that starts it (run from the workspace folder). ${node} is the editor’s Node.',
      placeHolder: 'python3 agent.py',
      validateInput: (v) => (v.trim() ? undefined : 'a command is needed'),
    });
    if (!command) return undefined;
    const protocol = await vscode.window.showQuickPick(
      [
        { label: 'sdk1', description: 'SDK 1.x', detail: 'The agent reads one JSON request per line on stdin and answers with one JSON line; Belay runs its commands.' },
        { label: 'sdk2', description: 'SDK 2.0', detail: 'The agent is an HTTP server on AGENT_PORT (/health, /start, /status) and runs its own commands.' },
      ],
      { title: 'Belay: Add Agent (3/3)', placeHolder: 'Which protocol does it speak? (never guessed: the wrong one fails at step 0)' },
    );
    if (!protocol) return undefined;
    const env: Record<string, string> = {};
    const keyVar = await vscode.window.showInputBox({
      title: 'Belay: Add Agent: API key (optional)',
      prompt: 'If it needs an API key, the environment variable to pass it in (e.g. OPENROUTER_API_KEY); leave empty for none. The key goes to VS Code’s secret storage, never into settings.',
    });
    if (keyVar?.trim()) {
      const value = await vscode.window.showInputBox({ title: `Belay: ${keyVar.trim()}`, prompt: 'The key (stored in secret storage)', password: true });
      if (value) {
        const secretName = keyVar.trim();
        await ctx.extension.secrets.store(SECRET_PREFIX + secretName, value);
        env[secretName] = `\${secret:${secretName}}`;
      }
    }
    const entry = AgentSchema.parse({ name: name.trim(), command: command.trim(), protocol: protocol.label, env });
    const config = vscode.workspace.getConfiguration('belay');
    const current = config.get<unknown[]>('agents') ?? [];
    const kept = current.filter((a) => (a as { name?: unknown })?.name !== entry.name);
    const target = vscode.workspace.workspaceFolders?.length ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
    await config.update('agents', [...kept, entry], target);
    void vscode.window.showInformationMessage(`Belay: agent '${entry.name}' added to the belay.agents setting.`);
    return entry.name;
  };

  const setSecret = async (nameArg?: unknown, valueArg?: unknown): Promise<void> => {
    if (typeof nameArg === 'string' && typeof valueArg === 'string') {
      // Programmatic use (write-only: no command ever reads a secret back).
      if (!/^[A-Za-z0-9_.-]+$/.test(nameArg)) throw new Error(`'${nameArg}' is not a secret name (letters, digits, _ . -)`);
      if (valueArg === '') await ctx.extension.secrets.delete(SECRET_PREFIX + nameArg);
      else await ctx.extension.secrets.store(SECRET_PREFIX + nameArg, valueArg);
      return;
    }
    const referenced = new Set<string>();
    for (const agent of service.agents) for (const v of Object.values(agent.env)) for (const m of v.matchAll(/\$\{secret:([A-Za-z0-9_.-]+)\}/g)) referenced.add(m[1]!);
    for (const agent of service.microAgents) for (const v of microAgentTexts(agent)) for (const m of v.matchAll(/\$\{secret:([A-Za-z0-9_.-]+)\}/g)) referenced.add(m[1]!);
    let name = typeof nameArg === 'string' ? nameArg : undefined;
    if (!name) {
      const items = [...referenced].map((label) => ({ label, description: 'referenced by an agent' }));
      const pick = await vscode.window.showQuickPick([...items, { label: '$(add) Another name…', description: '' }], { title: 'Belay: Set Agent Secret', placeHolder: 'Which secret? Agents refer to it as ${secret:NAME}' });
      if (!pick) return;
      name = pick.label.startsWith('$(add)') ? await vscode.window.showInputBox({ prompt: 'Secret name (letters, digits, _ . -)', validateInput: (v) => (/^[A-Za-z0-9_.-]+$/.test(v) ? undefined : 'letters, digits, _ . - only') }) : pick.label;
      if (!name) return;
    }
    const value = await vscode.window.showInputBox({ title: `Belay: secret ${name}`, prompt: 'The value (kept in VS Code’s secret storage). Empty removes it.', password: true });
    if (value === undefined) return;
    if (value === '') await ctx.extension.secrets.delete(SECRET_PREFIX + name);
    else await ctx.extension.secrets.store(SECRET_PREFIX + name, value);
  };

  const openChat = async (arg?: unknown): Promise<ChatTerminal | undefined> => {
    const refusal = service.refusal();
    if (refusal) throw new Error(refusal);
    await service.refresh();
    const agents = service.microAgents;
    let agent: MicroAgent | undefined = typeof arg === 'string' ? agents.find((a) => a.name === arg) : undefined;
    if (!agent) {
      if (agents.length === 0) throw new Error('no micro-agent is configured: add one to the belay.microAgents setting (command, protocol rich or plain, timeout, env, providers)');
      agent = (await vscode.window.showQuickPick(agents.map((a) => ({ label: a.name, description: `${a.protocol}, timeout ${a.timeout} s`, detail: a.command, agent: a })), { title: 'Belay: Chat with Micro-agent' }))?.agent;
      if (!agent) return undefined;
    }
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? agent.baseDir;
    const chosen = agent;
    const chat = new ChatTerminal({
      agent: chosen,
      workspace: path.join(folder, '.belay', 'micro-agents', chosen.name.replace(/[^A-Za-z0-9._-]/g, '_')),
      secrets: () => service.secretsFor(microAgentTexts(chosen)),
      refusal: () => service.refusal(),
      log: ctx.log,
    });
    remember(hooks.chats, chat);
    const terminal = hooks.createTerminal({ name: `Belay chat: ${chosen.name}`, pty: chat, iconPath: new vscode.ThemeIcon('comment-discussion') });
    if (terminal) chatTerminals.add(terminal);
    return chat;
  };

  ctx.registerCommand('belay.runner.refresh', () => service.refresh());
  ctx.registerCommand('belay.runner.runTask', async (arg?: unknown) => {
    const task = await taskFromArg(arg);
    if (!task) return undefined;
    const agentName = typeof (arg as { agent?: unknown } | undefined)?.agent === 'string' ? (arg as { agent: string }).agent : undefined;
    const agent = agentName ? service.findAgent(agentName) : await pickAgent(`Belay: Run ${task.name} with…`);
    if (agentName && !agent) throw new Error(`no agent named '${agentName}'`);
    return agent ? runInTerminal(task, agent) : undefined;
  });
  ctx.registerCommand('belay.runner.stopRun', async (arg?: unknown) => {
    const node = arg as TaskNode | undefined;
    if (node?.kind === 'task') return service.stop(service.activeRunOf(node.task)?.id ?? '\0');
    const active = service.activeRuns;
    if (active.length <= 1) return service.stop();
    const picked = await vscode.window.showQuickPick(
      [{ label: 'All runs', id: undefined as string | undefined }, ...active.map((r) => ({ label: `${r.task.name} · ${r.agent.name}`, id: r.id as string | undefined }))],
      { title: 'Belay: Stop Run' },
    );
    return picked ? service.stop(picked.id) : 0;
  });
  ctx.registerCommand('belay.runner.repeatRun', async (arg?: unknown) => {
    const node = arg as TaskNode | undefined;
    if (node?.kind !== 'run') throw new Error('choose a run in the Tasks view to repeat');
    return repeatRun(node.run);
  });
  ctx.registerCommand('belay.runner.openTrajectory', async (arg?: unknown) => {
    let runDir: string | undefined;
    const node = arg as TaskNode | undefined;
    if (typeof arg === 'string') runDir = arg;
    else if (node?.kind === 'run') runDir = node.run.result.run_dir;
    else if (node?.kind === 'step') runDir = node.run.run_dir;
    else {
      await service.refresh();
      const runs = service.allRuns;
      if (runs.length === 0) throw new Error(`no run yet: runs are kept in ${ctx.config.get('runner.runsDir')} of the workspace folder`);
      const picked = await vscode.window.showQuickPick(
        runs.map((run) => ({
          label: `$(${run.result.passed ? 'pass' : 'error'}) ${run.result.task_name}`,
          description: `${new Date(run.result.started_at).toLocaleString()} · ${run.result.steps} steps${run.result.failure_cause ? ` · ${run.result.failure_cause}` : ''}`,
          runDir: run.result.run_dir,
        })),
        { title: 'Belay: Open Run Trajectory', placeHolder: 'Which run?' },
      );
      runDir = picked?.runDir;
    }
    if (runDir) await trajectories.show(runDir, node?.kind === 'step' ? node.step.step : undefined);
  });
  ctx.registerCommand('belay.runner.openStepOutput', async (arg?: unknown) => {
    const file = typeof arg === 'string' ? arg : (arg as TaskNode | undefined)?.kind === 'step' ? (arg as Extract<TaskNode, { kind: 'step' }>).step.outputFile : undefined;
    if (!file) throw new Error('this step kept no output');
    await openOutput(file);
  });
  ctx.registerCommand('belay.runner.openTask', async (arg?: unknown) => {
    const task = await taskFromArg(arg);
    if (!task) return;
    const file = task.layout === 'legacy' ? path.join(task.dir, 'task.yaml') : path.join(task.dir, 'instruction.md');
    await vscode.window.showTextDocument(vscode.Uri.file(file), { preview: true });
  });
  ctx.registerCommand('belay.runner.addAgent', () => addAgent());
  ctx.registerCommand('belay.runner.setSecret', (name?: unknown, value?: unknown) => setSecret(name, value));
  ctx.registerCommand('belay.runner.chat', (name?: unknown) => openChat(name));
  ctx.own(vscode.commands.registerCommand('belay.runner.testHooks', () => hooks));
}
