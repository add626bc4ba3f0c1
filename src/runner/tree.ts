// The Tasks view's data: each task with its past runs (result, reward, steps, time, cause), each
// run with its steps (command, exit code; selecting one opens its full output read-only). The view
// itself, and when it shows the data anew, is views.ts's.
import * as vscode from 'vscode';
import { errorMessage } from '../shared/errors.ts';
import type { Trust } from '../trust.ts';
import { formatDuration, formatTokens, formatUsd, llmLine, rewardWords, round } from './core/records/format.ts';
import { readTrajectory, type PastRun, type StepView } from './core/records/history.ts';
import { latestOutcome, outcomeWords, trialWords, type RunOrTrial, type TaskOutcome } from './core/results/jobRuns.ts';
import { configFileName } from './core/tasks/layout.ts';
import { editorFix } from './core/protocols/mismatch.ts';
import type { RunResult, TaskStepResult } from './core/records/records.ts';
import { brokenTaskLabel, type Task, type TaskError } from './core/tasks/task.ts';
import type { TaskStep } from './core/tasks/taskSteps.ts';
import type { RunnerService } from './service.ts';

export type TaskNode =
  | { kind: 'task'; task: Task }
  | { kind: 'broken'; error: TaskError }
  | { kind: 'run'; task: Task | undefined; run: RunOrTrial }
  | { kind: 'step'; run: RunResult; step: StepView }
  /** A step of a multi-step task, with how it went in the task's last run. */
  | { kind: 'taskStep'; task: Task; step: TaskStep; last: RunResult | undefined }
  /** A step of a multi-step task as one run ran it; its agent steps below. */
  | { kind: 'runStep'; run: RunResult; step: TaskStepResult }
  | { kind: 'note'; text: string };

/** How many past runs each task lists. */
const RUNS_SHOWN = 20;

export class TasksTree implements vscode.TreeDataProvider<TaskNode> {
  readonly #service: RunnerService;
  readonly #trust: Trust;
  readonly #onResolved: () => void;

  constructor(service: RunnerService, trust: Trust, onResolved: () => void) {
    this.#service = service;
    this.#trust = trust;
    this.#onResolved = onResolved;
  }

  getTreeItem(node: TaskNode): vscode.TreeItem {
    switch (node.kind) {
      case 'task':
        return this.#taskItem(node.task);
      case 'broken': {
        const item = new vscode.TreeItem(brokenTaskLabel(node.error));
        item.iconPath = new vscode.ThemeIcon('warning', new vscode.ThemeColor('problemsWarningIcon.foreground'));
        item.description = 'broken task';
        item.tooltip = node.error.message;
        item.contextValue = 'belay.brokenTask';
        item.command = { command: 'vscode.open', title: 'Open', arguments: [vscode.Uri.file(node.error.file)] };
        return item;
      }
      case 'run':
        return runItem(node.run);
      case 'step':
        return stepItem(node.step);
      case 'taskStep':
        return taskStepItem(node.task, node.step, node.last);
      case 'runStep':
        return runStepItem(node.run, node.step);
      case 'note': {
        const item = new vscode.TreeItem(node.text);
        item.iconPath = new vscode.ThemeIcon('info');
        return item;
      }
    }
  }

  #taskItem(task: Task): vscode.TreeItem {
    const runs = this.#service.runsOf(task);
    const active = this.#service.activeRunOf(task);
    const item = new vscode.TreeItem(task.name, runs.length > 0 || active || task.steps ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
    item.id = `task:${task.dir}`;
    const outcome = latestOutcome(runs);
    if (active) {
      item.iconPath = new vscode.ThemeIcon('loading~spin');
      item.description = `running with ${active.agent.name} (${active.backend})…`;
      item.contextValue = 'belay.task.running';
    } else {
      // The latest outcome, whether a single run or a job (then: passed of its attempts).
      item.iconPath = outcomeIcon(outcome);
      item.description = outcome.kind === 'none' ? (task.layout === 'legacy' ? configFileName(task.layout) : '') : `${outcome.kind === 'job' ? 'job: ' : 'last run '}${outcomeWords(outcome)}`;
      item.contextValue = 'belay.task';
    }
    const tooltip = new vscode.MarkdownString(undefined, true);
    tooltip.appendMarkdown(`**${escapeMd(task.name)}** (${configFileName(task.layout)} layout)\n\n`);
    const latest = outcomeTooltip(outcome, runs);
    if (latest) tooltip.appendMarkdown(`${escapeMd(latest)}\n\n`);
    if (task.steps) tooltip.appendMarkdown(`${task.steps.steps.length} steps, reward by ${task.steps.strategy === 'mean' ? 'their mean' : 'the final step'}\n\n`);
    tooltip.appendText(task.instruction.slice(0, 400));
    item.tooltip = tooltip;
    item.resourceUri = vscode.Uri.file(task.dir);
    item.command = { command: 'belay.runner.openTask', title: 'Open Instruction', arguments: [{ kind: 'task', task }] };
    return item;
  }

  async getChildren(node?: TaskNode): Promise<TaskNode[]> {
    if (!this.#trust.trusted) {
      // Empty, so the view's welcome content says why nothing runs here.
      this.#onResolved();
      return [];
    }
    if (!node) {
      if (!this.#service.loaded) await this.#service.refresh();
      this.#onResolved();
      return [
        ...this.#service.tasks.map((task): TaskNode => ({ kind: 'task', task })),
        ...this.#service.taskErrors.map((error): TaskNode => ({ kind: 'broken', error })),
      ];
    }
    if (node.kind === 'task') {
      const runs = this.#service.runsOf(node.task).slice(0, RUNS_SHOWN);
      const children: TaskNode[] = runs.map((run) => ({ kind: 'run', task: node.task, run }));
      const active = this.#service.activeRunOf(node.task);
      if (active) children.unshift({ kind: 'note', text: `Running with ${active.agent.name}: its terminal shows it live.` });
      const last = runs[0]?.result;
      const steps = (node.task.steps?.steps ?? []).map((step): TaskNode => ({ kind: 'taskStep', task: node.task, step, last }));
      return [...steps, ...children];
    }
    if (node.kind === 'run') {
      try {
        const result = node.run.result;
        if (result.task_steps) return result.task_steps.map((step): TaskNode => ({ kind: 'runStep', run: result, step }));
        const { steps } = await readTrajectory(result.run_dir);
        return steps.map((step): TaskNode => ({ kind: 'step', run: result, step }));
      } catch (error) {
        return [{ kind: 'note', text: `No steps: ${errorMessage(error)}` }];
      }
    }
    if (node.kind === 'runStep') {
      try {
        const { steps } = await readTrajectory(node.run.run_dir);
        return steps.filter((step) => step.taskStep === node.step.step).map((step): TaskNode => ({ kind: 'step', run: node.run, step }));
      } catch (error) {
        return [{ kind: 'note', text: `No steps: ${errorMessage(error)}` }];
      }
    }
    return [];
  }

  getParent(): undefined {
    return undefined;
  }
}

function escapeMd(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, '\\$&');
}

function outcomeIcon(outcome: TaskOutcome): vscode.ThemeIcon {
  if (outcome.kind === 'none') return new vscode.ThemeIcon('beaker');
  if (outcome.kind === 'run') return resultIcon(outcome.run.result);
  if (outcome.verdict === 'passed') return new vscode.ThemeIcon('pass', new vscode.ThemeColor('testing.iconPassed'));
  if (outcome.verdict === 'failed') return new vscode.ThemeIcon('error', new vscode.ThemeColor('testing.iconFailed'));
  return new vscode.ThemeIcon('warning', new vscode.ThemeColor('testing.iconQueued'));
}

/** "Latest: job …, 5 of 6 attempts passed" and how all the task's runs went. */
function outcomeTooltip(outcome: TaskOutcome, runs: readonly RunOrTrial[]): string {
  if (outcome.kind === 'none') return '';
  const latest =
    outcome.kind === 'job'
      ? `Latest: job ${outcome.job.id}, ${outcome.passed} of ${outcome.finished} attempt${outcome.finished === 1 ? '' : 's'} passed${outcome.finished < outcome.job.attempts ? ` (${outcome.job.attempts} planned)` : ''}.`
      : `Latest: a single run, ${outcomeWords(outcome)}.`;
  const passed = runs.filter((r) => r.result.passed).length;
  return `${latest} All runs: ${passed} of ${runs.length} passed.`;
}

function resultIcon(result: RunResult): vscode.ThemeIcon {
  if (result.passed) return new vscode.ThemeIcon('pass', new vscode.ThemeColor('testing.iconPassed'));
  if (result.failure_cause === 'aborted') return new vscode.ThemeIcon('circle-slash', new vscode.ThemeColor('testing.iconSkipped'));
  return new vscode.ThemeIcon('error', new vscode.ThemeColor('testing.iconFailed'));
}

/** A run's row leads with how it ended, then who ran it and when; what it took follows. */
function runItem(run: RunOrTrial): vscode.TreeItem {
  const r = run.result;
  const when = new Date(r.started_at);
  const time = Number.isNaN(when.getTime()) ? r.run_id : when.toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' });
  const outcome = r.passed ? 'Passed' : r.failure_cause === 'aborted' ? 'Stopped' : `Failed: ${r.failure_cause ?? 'unknown'}`;
  // Runs of `belay run` name no agent: their protocol says what ran. A job's trial says which attempt it was.
  // The attempt comes before the agent: it is what tells a job's trials apart in a narrow view.
  const label = [outcome, ...(run.job ? [`attempt ${run.job.attempt} of ${run.job.attempts}`] : []), r.agent ?? `${r.protocol} (belay run)`, time].join(' · ');
  const item = new vscode.TreeItem(label, r.steps > 0 ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
  item.id = `run:${r.run_dir}`;
  item.iconPath = resultIcon(r);
  const facts = [rewardWords(r.reward, r.metrics), `${r.steps} step${r.steps === 1 ? '' : 's'}`, formatDuration(r.duration_sec * 1000)];
  if (r.llm && r.llm.requests > 0) facts.push(`${formatTokens(r.llm.input_tokens + r.llm.output_tokens)} tokens`, formatUsd(r.llm.cost_usd));
  facts.push(r.backend);
  item.description = facts.join(' · ');
  const error = r.error && r.agent !== undefined ? editorFix(r.error, r.agent) : r.error;
  const verdict = r.passed ? 'Passed' : `Failed: ${r.failure_cause ?? ''}${error ? ` — ${error}` : ''}`;
  const notes = (r.notes ?? []).map((note) => `\n! ${note}`).join('');
  const llm = r.llm && r.llm.requests > 0 ? `\nmodel calls: ${llmLine(r.llm)}` : '';
  const trial = run.job ? `\n${trialWords(run.job)}` : '';
  item.tooltip = `${verdict}\n${r.protocol}, ${r.backend_label ?? r.backend}${r.host !== undefined ? `, ran on ${r.host}` : ''}${r.agent !== undefined ? `, agent ${r.agent}` : ''}${trial}${llm}${notes}\n${r.run_dir}`;
  item.contextValue = r.agent !== undefined ? 'belay.run.repeatable' : 'belay.run';
  item.command = { command: 'belay.runner.openTrajectory', title: 'Open Trajectory', arguments: [{ kind: 'run', run }] };
  return item;
}

function stepItem(step: StepView): vscode.TreeItem {
  const command = step.command?.replace(/\s+/g, ' ').trim();
  const item = new vscode.TreeItem(`${step.step}. ${command ? `$ ${command}` : (step.agentText?.replace(/\s+/g, ' ').slice(0, 80) ?? '(no command)')}`);
  item.iconPath = new vscode.ThemeIcon(
    step.timedOut ? 'watch' : step.exitCode === null ? 'comment' : step.exitCode === 0 ? 'terminal' : 'error',
    step.exitCode !== null && step.exitCode !== 0 ? new vscode.ThemeColor('testing.iconFailed') : undefined,
  );
  const status = step.timedOut ? 'timed out' : step.exitCode === null ? '' : `exit ${step.exitCode}`;
  item.description = [status, step.llm && step.llm.requests > 0 ? `${formatTokens(step.llm.input_tokens + step.llm.output_tokens)} tokens` : ''].filter(Boolean).join(' · ');
  item.tooltip = [step.agentText ? `» ${step.agentText}` : '', command ? `$ ${command}` : '', step.cwd ? `in ${step.cwd}` : '', step.durationMs !== null ? formatDuration(step.durationMs) : '', step.llm && step.llm.requests > 0 ? `model calls: ${llmLine(step.llm)}` : '']
    .filter(Boolean)
    .join('\n');
  item.contextValue = 'belay.step';
  if (step.outputFile) {
    item.command = { command: 'belay.runner.openStepOutput', title: 'Open Output', arguments: [step.outputFile] };
  }
  return item;
}

/** How a task step went in the last run: passed, failed (with its reward and cause), or not reached. */
function taskStepItem(task: Task, step: TaskStep, last: RunResult | undefined): vscode.TreeItem {
  const item = new vscode.TreeItem(`${step.index}. ${step.name}`);
  item.id = `taskStep:${task.dir}:${step.name}`;
  const ran = last?.task_steps?.find((s) => s.name === step.name);
  if (!last) {
    item.iconPath = new vscode.ThemeIcon('list-ordered');
    item.description = '';
  } else if (!ran) {
    item.iconPath = new vscode.ThemeIcon('circle-slash', new vscode.ThemeColor('testing.iconSkipped'));
    item.description = 'not reached in the last run';
  } else {
    item.iconPath = ran.passed ? new vscode.ThemeIcon('pass', new vscode.ThemeColor('testing.iconPassed')) : new vscode.ThemeIcon('error', new vscode.ThemeColor('testing.iconFailed'));
    item.description = stepFacts(ran).join(' · ');
  }
  const gate = step.minReward ? `\nmin_reward: ${Object.entries(step.minReward).map(([name, least]) => `${name} ≥ ${least}`).join(', ')}` : '';
  item.tooltip = `${step.instruction.slice(0, 400)}${gate}${ran?.stopped ? `\n${ran.stopped}` : ''}`;
  item.contextValue = 'belay.taskStep';
  item.command = { command: 'vscode.open', title: 'Open Instruction', arguments: [vscode.Uri.file(step.instructionFile ?? `${task.dir}/${configFileName(task.layout)}`)] };
  return item;
}

function runStepItem(run: RunResult, step: TaskStepResult): vscode.TreeItem {
  const item = new vscode.TreeItem(`${step.step}. ${step.name}`, step.agent_steps > 0 ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
  item.id = `runStep:${run.run_dir}:${step.name}`;
  item.iconPath = step.passed ? new vscode.ThemeIcon('pass', new vscode.ThemeColor('testing.iconPassed')) : new vscode.ThemeIcon('error', new vscode.ThemeColor('testing.iconFailed'));
  item.description = stepFacts(step).join(' · ');
  item.tooltip = [step.error ?? (step.passed ? 'Passed' : ''), step.stopped ?? '', Object.entries(step.metrics).map(([name, value]) => `${name} ${round(value)}`).join(', ')].filter(Boolean).join('\n');
  item.contextValue = 'belay.runStep';
  return item;
}

function stepFacts(step: TaskStepResult): string[] {
  const facts = [rewardWords(step.reward, step.metrics)];
  const others = Object.entries(step.metrics).filter(([name]) => name !== 'reward');
  if (others.length > 0 && step.reward !== null) facts.push(others.map(([name, value]) => `${name} ${round(value)}`).join(', '));
  if (step.failure_cause) facts.push(step.failure_cause);
  if (step.stopped) facts.push('stopped the run');
  return facts;
}

