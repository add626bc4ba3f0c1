// Test Explorer: one test item per task (a multi-step task's steps, then the tests its ctrf.json
// names, as its children), one run profile per configured agent. A run carries the failure cause
// and the tests' output as the message, the duration, and the live output, attributed to its task
// (whole lines, so concurrent tasks do not mix in the run's output); each step of a multi-step
// task and each ctrf test gets its own state.
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { errorMessage } from '../shared/errors.ts';
import { toTerminalNewlines } from '../shared/terminalOutput.ts';
import type { Agent } from './core/agents/agents.ts';
import { failureMessage, rewardWords } from './core/records/format.ts';
import type { RunResult, Verification } from './core/records/records.ts';
import { configFileName, instructionFile, testScriptFile } from './core/tasks/layout.ts';
import { brokenTaskLabel, type Task } from './core/tasks/task.ts';
import type { RunnerService } from './service.ts';
import { runWithOutput } from './terminal.ts';
import { LineOutput } from './core/records/lineOutput.ts';
import { editorFix } from './core/protocols/mismatch.ts';

/** What one task's test ended as (the Test API gives extensions no way to read results back). */
export interface TaskTestReport {
  id: string;
  state: 'passed' | 'failed' | 'errored' | 'skipped';
  message?: string;
  durationMs?: number;
}

export class TaskTests implements vscode.Disposable {
  readonly controller: vscode.TestController;
  readonly #reported = new vscode.EventEmitter<TaskTestReport>();
  readonly onDidReport = this.#reported.event;
  readonly #service: RunnerService;
  readonly #ctx: BelayContext;
  #profiles: vscode.TestRunProfile[] = [];
  #profileKey = '';
  readonly #subscription: vscode.Disposable;

  /** `controller` was made with the runner (index.ts), with the handlers that load the runner. */
  constructor(controller: vscode.TestController, service: RunnerService, ctx: BelayContext) {
    this.controller = controller;
    this.#service = service;
    this.#ctx = ctx;
    this.#subscription = service.onDidChange(() => this.sync());
    this.sync();
  }

  /** Mirrors the service: items for tasks (and broken tasks), profiles for agents. */
  sync(): void {
    const items: vscode.TestItem[] = [];
    for (const task of this.#service.tasks) {
      const item = this.controller.createTestItem(task.dir, task.name, vscode.Uri.file(instructionFile(task)));
      item.description = task.layout === 'legacy' ? configFileName(task.layout) : undefined;
      // The tests of the task's last run (ctrf.json names them only once they ran).
      const tests = this.#service.runsOf(task)[0]?.result.verification?.test_results ?? [];
      item.children.replace([
        ...(task.steps?.steps ?? []).map((step) => this.controller.createTestItem(stepItemId(task, step.name), `${step.index}. ${step.name}`, vscode.Uri.file(step.instructionFile ?? path.join(task.dir, configFileName(task.layout))))),
        ...this.#ctrfItems(task, tests),
      ]);
      items.push(item);
    }
    for (const error of this.#service.taskErrors) {
      const item = this.controller.createTestItem(`broken:${error.file}`, brokenTaskLabel(error), vscode.Uri.file(error.file));
      item.error = error.message;
      items.push(item);
    }
    this.controller.items.replace(items);
    // An untrusted workspace offers no way to run: no profile.
    const agents = this.#ctx.trust.trusted ? this.#service.agents : [];
    const key = JSON.stringify(agents.map((a) => [a.name, a.protocol]));
    if (key === this.#profileKey) return;
    this.#profileKey = key;
    for (const profile of this.#profiles.splice(0)) profile.dispose();
    agents.forEach((agent, index) => {
      this.#profiles.push(
        this.controller.createRunProfile(agent.name, vscode.TestRunProfileKind.Run, (request, token) => this.run(request, token, agent.name), index === 0),
      );
    });
  }

  /** One item per test ctrf.json named (a name twice is one item), under the task's test script. */
  #ctrfItems(task: Task, tests: Verification['test_results']): vscode.TestItem[] {
    const names = [...new Set(tests.map((t) => t.name))];
    return names.map((name) => {
      const child = this.controller.createTestItem(ctrfItemId(task, name), name, vscode.Uri.file(testScriptFile(task)));
      child.description = 'ctrf';
      return child;
    });
  }

  get profiles(): readonly vscode.TestRunProfile[] {
    return this.#profiles;
  }

  async run(request: vscode.TestRunRequest, token: vscode.CancellationToken, agentName: string): Promise<void> {
    const run = this.controller.createTestRun(request, `Belay: ${agentName}`);
    const stop = new AbortController();
    const cancel = token.onCancellationRequested(() => stop.abort());
    try {
      const excluded = new Set((request.exclude ?? []).map((i) => i.id));
      const queue: { item: vscode.TestItem; task: Task }[] = [];
      const items: vscode.TestItem[] = request.include ? [...request.include] : [];
      if (!request.include) this.controller.items.forEach((item) => items.push(item));
      // A step runs only after the steps before it, a ctrf test with its task's: asking for one runs its whole task.
      const wanted = [...new Map(items.map((item) => (item.parent && isTaskPart(item) ? item.parent : item)).map((item) => [item.id, item])).values()];
      for (const item of wanted) {
        if (excluded.has(item.id)) continue;
        const task = this.#service.tasks.find((t) => t.dir === item.id);
        if (!task) {
          run.errored(item, new vscode.TestMessage(item.error ? String(item.error) : 'this task is no longer in the workspace'));
          continue;
        }
        run.enqueued(item);
        queue.push({ item, task });
      }
      const agent: Agent | undefined = this.#service.findAgent(agentName);
      if (!agent) {
        for (const { item } of queue) run.errored(item, new vscode.TestMessage(`the agent '${agentName}' is no longer configured`));
        return;
      }
      const refusal = this.#ctx.trust.refusal('runAgents');
      if (refusal) {
        for (const { item } of queue) run.errored(item, new vscode.TestMessage(refusal));
        return;
      }
      let next = 0;
      const workers = Math.max(1, Math.min(this.#ctx.config.get('runner.concurrency'), queue.length));
      const worker = async () => {
        while (next < queue.length) {
          const { item, task } = queue[next++]!;
          if (stop.signal.aborted) {
            run.skipped(item);
            continue;
          }
          await this.#runOne(run, item, task, agent, stop.signal, workers > 1);
        }
      };
      await Promise.all(Array.from({ length: workers }, worker));
    } finally {
      cancel.dispose();
      run.end();
    }
  }

  /** `concurrent`: other tasks write to the same run meanwhile. */
  async #runOne(run: vscode.TestRun, item: vscode.TestItem, task: Task, agent: Agent, signal: AbortSignal, concurrent: boolean): Promise<void> {
    run.started(item);
    item.children.forEach((child) => run.started(child));
    const output = new LineOutput(concurrent ? task.name : undefined, (text) => run.appendOutput(toTerminalNewlines(text), undefined, item));
    try {
      const result = await runWithOutput(this.#service, task, agent, { signal, write: (text) => output.write(text) });
      output.flush();
      const durationMs = result.duration_sec * 1000;
      if (result.passed) {
        run.passed(item, durationMs);
        this.#reported.fire({ id: item.id, state: 'passed', durationMs });
      } else if (result.failure_cause === 'aborted') {
        run.skipped(item);
        item.children.forEach((child) => run.skipped(child));
        this.#reported.fire({ id: item.id, state: 'skipped' });
      } else {
        const text = failureMessage(result.error ? { ...result, error: editorFix(result.error, agent.name) } : result);
        const message = new vscode.TestMessage(text);
        message.location = new vscode.Location(vscode.Uri.file(testScriptFile(task)), new vscode.Position(0, 0));
        run.failed(item, message, durationMs);
        this.#reported.fire({ id: item.id, state: 'failed', message: text, durationMs });
      }
      if (result.failure_cause !== 'aborted') {
        this.#reportSteps(run, item, task, result);
        this.#reportTests(run, item, task, result);
      }
    } catch (error) {
      output.flush();
      const message = errorMessage(error);
      this.#ctx.log.error(`runner: ${task.name}: ${message}`);
      run.errored(item, new vscode.TestMessage(message));
      item.children.forEach((child) => run.skipped(child));
      this.#reported.fire({ id: item.id, state: 'errored', message });
    }
  }

  /** Each step item of a multi-step task: passed, failed with its own error, or skipped when the run never reached it. */
  #reportSteps(run: vscode.TestRun, item: vscode.TestItem, task: Task, result: RunResult): void {
    for (const step of task.steps?.steps ?? []) {
      const child = item.children.get(stepItemId(task, step.name));
      if (!child) continue;
      const ran = result.task_steps?.find((s) => s.name === step.name);
      const durationMs = ran ? ran.duration_sec * 1000 : undefined;
      if (!ran) {
        run.skipped(child);
        this.#reported.fire({ id: child.id, state: 'skipped' });
      } else if (ran.passed) {
        run.passed(child, durationMs);
        this.#reported.fire({ id: child.id, state: 'passed', ...(durationMs !== undefined ? { durationMs } : {}) });
      } else {
        const text = [`${ran.failure_cause ?? 'failed'}: ${rewardWords(ran.reward, ran.metrics)}`, ran.error, ran.stopped].filter(Boolean).join('\n');
        run.failed(child, new vscode.TestMessage(text), durationMs);
        this.#reported.fire({ id: child.id, state: 'failed', message: text, ...(durationMs !== undefined ? { durationMs } : {}) });
      }
    }
  }

  /** Each test of the run's ctrf.json as a child of its task, with its own state and message. */
  #reportTests(run: vscode.TestRun, item: vscode.TestItem, task: Task, result: RunResult): void {
    const tests = result.verification?.test_results ?? [];
    const fresh = this.#ctrfItems(task, tests);
    // The task's children: its steps, then the tests of this run (those of an earlier run that this one did not name go).
    const kept: vscode.TestItem[] = [];
    item.children.forEach((child) => {
      if (!isCtrfItem(child)) kept.push(child);
    });
    item.children.replace([...kept, ...fresh]);
    for (const test of tests) {
      const child = item.children.get(ctrfItemId(task, test.name));
      if (!child) continue;
      const durationMs = test.duration_ms;
      const state = test.status === 'passed' ? 'passed' : test.status === 'skipped' || test.status === 'pending' ? 'skipped' : 'failed';
      if (state === 'passed') run.passed(child, durationMs);
      else if (state === 'skipped') run.skipped(child);
      else {
        const text = test.message ?? (test.status === 'failed' ? 'failed' : `ended as '${test.status}'`);
        const message = new vscode.TestMessage(text);
        message.location = new vscode.Location(vscode.Uri.file(testScriptFile(task)), new vscode.Position(0, 0));
        run.failed(child, message, durationMs);
      }
      this.#reported.fire({ id: child.id, state, ...(state === 'failed' ? { message: test.message ?? test.status } : {}), ...(durationMs !== undefined && state !== 'skipped' ? { durationMs } : {}) });
    }
  }

  dispose(): void {
    this.#reported.dispose();
    this.#subscription.dispose();
    for (const profile of this.#profiles.splice(0)) profile.dispose();
  }
}

/** A step's test item id: its task's, then the step's name (names are unique in a task). */
function stepItemId(task: Task, stepName: string): string {
  return `${task.dir}${STEP_MARK}${stepName}`;
}

/** A ctrf test's item id: its task's, then the test's name. */
function ctrfItemId(task: Task, testName: string): string {
  return `${task.dir}${CTRF_MARK}${testName}`;
}

const STEP_MARK = '#step:';
const CTRF_MARK = '#ctrf:';

function isCtrfItem(item: vscode.TestItem): boolean {
  return item.id.includes(CTRF_MARK);
}

/** A step or a ctrf test of a task: running it runs the task. */
function isTaskPart(item: vscode.TestItem): boolean {
  return item.id.includes(STEP_MARK) || isCtrfItem(item);
}
