import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ChatTerminal } from '../../src/runner/chat.ts';
import type { JobRecord } from '../../src/runner/core/jobs/schema.ts';
import type { RunResult } from '../../src/runner/core/records/records.ts';
import type { RunnerTestApi } from '../../src/runner/index.ts';
import type { TerminalFactory } from '../../src/ui/pseudoterminal.ts';
import type { TaskTestReport } from '../../src/runner/testing.ts';
import { activateBelay, waitFor } from './helpers.ts';
import { processesWith } from '../support/processes.ts';

const SDK1 = 'Demo SDK 1.x agent';

interface Made {
  name: string;
  pty: vscode.Pseudoterminal;
}

/** Every process whose command line mentions `needle` (the host's /proc). */
/** Writes a task's files (relative paths to their text) under dir, making the folders. */
async function writeFiles(dir: string, files: Record<string, string>): Promise<void> {
  const { mkdir, writeFile } = await import('node:fs/promises');
  for (const [file, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await writeFile(path.join(dir, file), text);
  }
}

/** Collects what a pseudoterminal writes, as VS Code would receive it. */
function record(pty: vscode.Pseudoterminal): { text: () => string; changed: vscode.Event<void>; dispose: () => void } {
  let text = '';
  const changed = new vscode.EventEmitter<void>();
  const sub = pty.onDidWrite((data) => {
    text += data;
    changed.fire();
  });
  return { text: () => text, changed: changed.event, dispose: () => (sub.dispose(), changed.dispose()) };
}

/** This process's children (on Linux) whose command line has the argument `name`. */
function childrenNamed(name: string): number[] {
  const children = readdirSync('/proc/self/task').flatMap((task) => readFileSync(`/proc/self/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number));
  return children.filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(name);
    } catch {
      return false;
    }
  });
}

suite('Belay runner', () => {
  let runner: RunnerTestApi;
  const made: Made[] = [];
  let realFactory: TerminalFactory;
  const workspace = () => vscode.workspace.workspaceFolders![0]!.uri.fsPath;

  suiteSetup(async () => {
    const { api } = await activateBelay();
    // The runner's test seams are part of the API only when the extension runs under these tests.
    assert.ok(api.test?.runner, 'the API has no runner test seams (is the extension in test mode?)');
    runner = api.test.runner as RunnerTestApi;
    realFactory = runner.terminals.create;
    runner.terminals.create = ({ name, pty }) => {
      made.push({ name, pty });
      return undefined;
    };
    await runner.service.refresh();
  });
  suiteTeardown(() => {
    if (runner) runner.terminals.create = realFactory;
  });

  test('lists the demo tasks in the Tasks view and Test Explorer, with one run profile per agent', async () => {
    const names = runner.service.tasks.map((t) => t.name);
    assert.deepEqual(names, ['count-words', 'hello-world', 'line-report']);
    const roots = await runner.tree.getChildren();
    assert.deepEqual(roots.map((n) => (n.kind === 'task' ? n.task.name : n.kind)), ['count-words', 'hello-world', 'line-report']);
    const items: string[] = [];
    runner.tests.controller.items.forEach((item) => items.push(item.label));
    assert.deepEqual(items.sort(), ['count-words', 'hello-world', 'line-report']);
    const agents = runner.service.agents.map((a) => a.name);
    assert.ok(agents.includes(SDK1) && agents.includes('Demo SDK 2.0 agent'), `agents: ${agents.join(', ')}`);
    assert.deepEqual(runner.tests.profiles.map((p) => p.label), agents);
  });

  test('runs hello-world with the SDK 1.x agent in a terminal that buffers until opened, then shows the run in the view', async () => {
    // The sandbox backend by name (where an engine works the default is the container backend,
    // which the micro-agent test below covers).
    const settings = vscode.workspace.getConfiguration('belay');
    await settings.update('runner.backend', 'sandbox', vscode.ConfigurationTarget.Workspace);
    try {
      await runHelloWorldInSandbox();
    } finally {
      await settings.update('runner.backend', undefined, vscode.ConfigurationTarget.Workspace);
    }
  });

  async function runHelloWorldInSandbox(): Promise<void> {
    const before = made.length;
    const result = (await vscode.commands.executeCommand('belay.runner.runTask', { task: 'tasks/hello-world', agent: SDK1 })) as RunResult;
    assert.equal(result.passed, true, `${result.failure_cause}: ${result.error}`);
    const terminal = made[before]!;
    assert.equal(terminal.name, 'Belay: hello-world', 'one terminal per task, named by the task');
    // Nothing was opened yet: everything written so far comes out at open(), with \r\n.
    const out = record(terminal.pty);
    terminal.pty.open(undefined);
    const text = out.text();
    out.dispose();
    const plain = text.replace(/\x1b\[[0-9;]*m/g, '');
    for (const expected of [`──────── with ${SDK1} · `, '── step 1 ──', '» I will write the greeting', "$ printf '%s\\n' 'Hello, world!' > hello.txt", 'Hello, world!', '[exit 0', '── running the tests ──', 'PASSED  reward 1 · 3 steps']) {
      assert.ok(plain.includes(expected), `the terminal lacks ${JSON.stringify(expected)}:\n${plain}`);
    }
    assert.match(text, /\x1b\[32m\x1b\[1mPASSED/, 'the result is green');
    assert.doesNotMatch(text, /[^\r]\n/, 'every newline is \\r\\n');
    // A key closes it with the run's exit code.
    const closed = new Promise<number | void>((resolve) => terminal.pty.onDidClose!(resolve));
    terminal.pty.handleInput!('q');
    assert.equal(await closed, 0);

    const task = runner.service.findTask('hello-world')!;
    const runs = runner.service.runsOf(task);
    assert.equal(runs[0]?.result.run_id, result.run_id);
    assert.equal(runs[0]?.result.agent, SDK1);
    const taskNode = (await runner.tree.getChildren()).find((n) => n.kind === 'task' && n.task.name === 'hello-world')!;
    const runNodes = await runner.tree.getChildren(taskNode);
    const runNode = runNodes.find((n) => n.kind === 'run' && n.run.result.run_id === result.run_id)!;
    const runItem = runner.tree.getTreeItem(runNode);
    // The row leads with the result, then the agent and the time; what the run took follows.
    assert.match(String(runItem.label), /^Passed · Demo SDK 1\.x agent · \S/);
    assert.match(String(runItem.description), /^reward 1 · 3 steps · .* · sandbox$/, 'the run names its backend');
    assert.match(String(runItem.tooltip), /sdk1, sandbox \(bubblewrap: only \/app writable/);
    assert.equal(result.backend, 'sandbox');
    assert.match(plain, /^backend sandbox \(bubblewrap/m);
    const steps = await runner.tree.getChildren(runNode);
    const labels = steps.map((s) => String(runner.tree.getTreeItem(s).label));
    assert.equal(labels.length, 3);
    assert.match(labels[0]!, /^1\. \$ printf/);
    const firstStep = runner.tree.getTreeItem(steps[0]!);
    assert.equal(firstStep.description, 'exit 0');

    // Selecting a step opens its full output, read-only.
    await vscode.commands.executeCommand(firstStep.command!.command, ...(firstStep.command!.arguments ?? []));
    const stepTwo = runner.tree.getTreeItem(steps[1]!);
    await vscode.commands.executeCommand(stepTwo.command!.command, ...(stepTwo.command!.arguments ?? []));
    await waitFor('the step output to open', () => vscode.window.activeTextEditor?.document.uri.scheme === 'belay-run-output', [vscode.window.onDidChangeActiveTextEditor]);
    assert.match(vscode.window.activeTextEditor!.document.getText(), /Hello, world!/);
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');

    // The extension host forked none of the run's programs itself: the spawn helper (this
    // runtime's binary run as Node) did, and it is still there for the next run.
    if (process.platform === 'linux') assert.equal(childrenNamed('belay-spawn-host').length, 1, 'one spawn helper under the extension host');
  }

  test('a failing agent ends red with its cause and the tests’ output, in Test Explorer too', async () => {
    const reports: TaskTestReport[] = [];
    const sub = runner.tests.onDidReport((r) => reports.push(r));
    try {
      const task = runner.service.findTask('hello-world')!;
      const profile = runner.tests.profiles.find((p) => p.label === 'Demo failing agent')!;
      const item = runner.tests.controller.items.get(task.dir)!;
      const cancel = new vscode.CancellationTokenSource();
      await runner.tests.run(new vscode.TestRunRequest([item], undefined, profile), cancel.token, profile.label);
      cancel.dispose();
      // The task, then the one test its ctrf.json names, as a child with its own result.
      assert.deepEqual(reports.map((r) => r.id), [task.dir, `${task.dir}#ctrf:hello.txt holds the greeting`]);
      assert.equal(reports[0]!.state, 'failed');
      assert.match(reports[0]!.message!, /^tests_failed: the tests failed/);
      assert.match(reports[0]!.message!, /expected 'Hello, world!', found: 'Hello, moon!'/);
      assert.ok((reports[0]!.durationMs ?? 0) > 0);
      assert.equal(reports[1]!.state, 'failed');
      const child = item.children.get(`${task.dir}#ctrf:hello.txt holds the greeting`);
      assert.equal(child?.label, 'hello.txt holds the greeting');
      assert.equal(child?.uri?.fsPath, path.join(task.dir, 'tests', 'test.sh'));
    } finally {
      sub.dispose();
    }
  });

  test('Test Explorer runs every task with a profile, green for the SDK 2.0 agent', async () => {
    const reports: TaskTestReport[] = [];
    const sub = runner.tests.onDidReport((r) => reports.push(r));
    try {
      const profile = runner.tests.profiles.find((p) => p.label === 'Demo SDK 2.0 agent')!;
      let most = 0;
      const watch = runner.service.onDidChange(() => (most = Math.max(most, runner.service.activeRuns.length)));
      const cancel = new vscode.CancellationTokenSource();
      await runner.tests.run(new vscode.TestRunRequest(undefined, undefined, profile), cancel.token, profile.label);
      cancel.dispose();
      watch.dispose();
      assert.equal(most, 2, 'two tasks ran at once (belay.runner.concurrency is 2 by default)');
      // Each task, and the ctrf tests of hello-world and line-report (verified in an environment of its own) as their children.
      assert.deepEqual(
        reports.map((r) => [path.basename(r.id), r.state]).sort(),
        [
          ['count-words', 'passed'],
          ['hello-world#ctrf:hello.txt holds the greeting', 'passed'],
          ['hello-world', 'passed'],
          ['line-report#ctrf:lines.txt holds the line count', 'passed'],
          ['line-report', 'passed'],
        ],
        JSON.stringify(reports),
      );
    } finally {
      sub.dispose();
    }
  });

  test('Stop ends a run that hangs and leaves no process behind', async () => {
    const before = made.length;
    const running = vscode.commands.executeCommand('belay.runner.runTask', { task: 'hello-world', agent: 'Demo stuck agent' }) as Thenable<RunResult>;
    await waitFor('the terminal to be created', () => made.length > before, [runner.service.onDidChange]);
    const pty = made[before]!.pty;
    const out = record(pty);
    pty.open(undefined);
    await waitFor('the hanging command to start', () => out.text().includes('sleep 600'), [out.changed]);
    const active = runner.service.activeRuns[0];
    assert.ok(active, 'the run is active');
    const runDir = path.join(runner.service.runsDirFor(active.task.dir), active.id);
    // A sandbox's processes name the run folder, a container's (engine clients, conmon) the run id in its name.
    assert.ok(processesWith(active.id).length > 0, 'the run has processes (the isolated agent and its command)');
    await vscode.commands.executeCommand('belay.runner.stopRun');
    const result = await running;
    assert.equal(result.failure_cause, 'aborted');
    assert.ok(out.text().includes('aborted'), out.text());
    out.dispose();
    assert.deepEqual(processesWith('sleep 600'), []);
    assert.equal(result.run_dir, runDir);
    assert.deepEqual(processesWith(active.id), []);
    assert.equal(runner.service.activeRuns.length, 0);
  });

  test('a run is repeated from history with the same agent', async () => {
    const task = runner.service.findTask('hello-world')!;
    const before = runner.service.runsOf(task).length;
    const first = runner.service.runsOf(task).find((r) => r.result.agent === SDK1)!;
    const result = (await vscode.commands.executeCommand('belay.runner.repeatRun', { kind: 'run', task, run: first })) as RunResult;
    assert.equal(result.passed, true);
    assert.notEqual(result.run_id, first.result.run_id);
    assert.equal(runner.service.runsOf(task).length, before + 1);
    assert.equal(runner.service.runsOf(task)[0]!.result.agent, SDK1);
  });

  test('the Tasks view follows the files: a new task appears, a removed one goes', async () => {
    const dir = path.join(workspace(), 'tasks', 'added-later');
    const { mkdir, writeFile, rm } = await import('node:fs/promises');
    await mkdir(path.join(dir, 'tests'), { recursive: true });
    await writeFile(path.join(dir, 'instruction.md'), 'Do nothing.\n');
    await writeFile(path.join(dir, 'tests', 'test.sh'), 'exit 0\n');
    await writeFile(path.join(dir, 'task.toml'), 'version = "1.0"\n');
    const names = () => runner.service.tasks.map((t) => t.name);
    await waitFor('the new task', () => names().includes('added-later'), [runner.service.onDidChange]);
    assert.ok(runner.tests.controller.items.get(dir), 'Test Explorer lists it too');
    await rm(dir, { recursive: true, force: true });
    await waitFor('the task to go', () => !names().includes('added-later'), [runner.service.onDidChange]);
  });

  test('a multi-step task shows its steps in the Tasks view and Test Explorer, each with how it went', async () => {
    const dir = path.join(workspace(), 'tasks', 'greet-in-steps');
    const { rm } = await import('node:fs/promises');
    const files: Record<string, string> = {
      'task.toml': 'version = "1.0"\nmulti_step_reward_strategy = "final"\n\n[[steps]]\nname = "01-greet"\nmin_reward = 1.0\n\n[[steps]]\nname = "02-count"\n',
      'steps/01-greet/instruction.md': 'Create hello.txt holding "Hello, world!".\n',
      'steps/01-greet/tests/test.sh': '[ "$(cat hello.txt)" = "Hello, world!" ]\n',
      'steps/02-count/instruction.md': 'Count the words of words.txt into count.txt.\n',
      'steps/02-count/tests/test.sh': 'mkdir -p "$LOGS_DIR/verifier"\necho \'{"reward": 0.5, "style": 1}\' > "$LOGS_DIR/verifier/reward.json"\n',
    };
    await writeFiles(dir, files);
    const settings = vscode.workspace.getConfiguration('belay');
    await settings.update('runner.backend', 'sandbox', vscode.ConfigurationTarget.Workspace);
    const reports: TaskTestReport[] = [];
    const sub = runner.tests.onDidReport((r) => reports.push(r));
    try {
      await waitFor('the multi-step task', () => runner.service.findTask('greet-in-steps') !== undefined, [runner.service.onDidChange]);
      const taskNode = async () => (await runner.tree.getChildren()).find((n) => n.kind === 'task' && n.task.name === 'greet-in-steps')!;
      const labelsOf = async () => (await runner.tree.getChildren(await taskNode())).map((n) => [String(runner.tree.getTreeItem(n).label), String(runner.tree.getTreeItem(n).description ?? '')]);
      assert.deepEqual(await labelsOf(), [['1. 01-greet', ''], ['2. 02-count', '']]);
      // Test Explorer: the steps are the task's children; asking for one step runs the whole task.
      const item = runner.tests.controller.items.get(dir)!;
      const children: string[] = [];
      item.children.forEach((child) => children.push(child.label));
      assert.deepEqual(children, ['1. 01-greet', '2. 02-count']);
      const profile = runner.tests.profiles.find((p) => p.label === SDK1)!;
      const cancel = new vscode.CancellationTokenSource();
      await runner.tests.run(new vscode.TestRunRequest([item.children.get(`${dir}#step:02-count`)!], undefined, profile), cancel.token, profile.label);
      cancel.dispose();
      assert.deepEqual(reports.map((r) => [r.id.slice(dir.length), r.state]), [['', 'failed'], ['#step:01-greet', 'passed'], ['#step:02-count', 'failed']], JSON.stringify(reports));
      assert.match(reports[2]!.message!, /^tests_failed: reward 0\.5/);
      // The Tasks view: each step with the last run's result, then the run, whose children are the steps.
      await waitFor('the run in the view', () => runner.service.runsOf(runner.service.findTask('greet-in-steps')!).length === 1, [runner.service.onDidChange]);
      const after = await labelsOf();
      assert.deepEqual(after.slice(0, 2), [['1. 01-greet', 'reward 1'], ['2. 02-count', 'reward 0.5 · style 1 · tests_failed']]);
      assert.match(after[2]?.[1] ?? "", /^reward 0\.5 · \d+ steps · /);
      const runNode = (await runner.tree.getChildren(await taskNode()))[2]!;
      const runSteps = await runner.tree.getChildren(runNode);
      assert.deepEqual(runSteps.map((n) => String(runner.tree.getTreeItem(n).label)), ['1. 01-greet', '2. 02-count']);
      const greetSteps = await runner.tree.getChildren(runSteps[0]!);
      assert.match(String(runner.tree.getTreeItem(greetSteps[0]!).label), /^1\. \$ printf/);
    } finally {
      sub.dispose();
      await settings.update('runner.backend', undefined, vscode.ConfigurationTarget.Workspace);
      await rm(dir, { recursive: true, force: true });
    }
    await waitFor('the task to go', () => runner.service.findTask('greet-in-steps') === undefined, [runner.service.onDidChange]);
  });

  test('a task whose tests write several metrics and no reward shows them metric by metric, and no reward is made up', async () => {
    const dir = path.join(workspace(), 'tasks', 'two-metrics');
    const { rm } = await import('node:fs/promises');
    const files: Record<string, string> = {
      'task.toml': 'version = "1.0"\n',
      'instruction.md': 'Do nothing.\n',
      // The Harbor cookbook's multi-reward task, failed on both metrics, by a script that exits 0.
      'tests/test.sh': 'mkdir -p "$LOGS_DIR/verifier"\necho \'{"correctness": 0, "performance": 0}\' > "$LOGS_DIR/verifier/reward.json"\nexit 0\n',
    };
    await writeFiles(dir, files);
    const settings = vscode.workspace.getConfiguration('belay');
    await settings.update('runner.backend', 'sandbox', vscode.ConfigurationTarget.Workspace);
    try {
      await waitFor('the task', () => runner.service.findTask('two-metrics') !== undefined, [runner.service.onDidChange]);
      const task = runner.service.findTask('two-metrics')!;
      const result = await runner.service.start(task, runner.service.findAgent(SDK1)!);
      assert.equal(result.passed, false);
      assert.equal(result.reward, null);
      assert.deepEqual(result.metrics, { correctness: 0, performance: 0 });
      await waitFor('the run in the view', () => runner.service.runsOf(task).length === 1, [runner.service.onDidChange]);
      const taskNode = (await runner.tree.getChildren()).find((n) => n.kind === 'task' && n.task.name === 'two-metrics')!;
      const [runNode] = await runner.tree.getChildren(taskNode);
      assert.match(String(runner.tree.getTreeItem(runNode!).description), /^correctness 0, performance 0 · \d+ steps? · /);
      assert.match(String(runner.tree.getTreeItem(runNode!).tooltip), /not every metric is at its maximum \(1\): correctness 0, performance 0/);
    } finally {
      await settings.update('runner.backend', undefined, vscode.ConfigurationTarget.Workspace);
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('an agent from settings gets its API key from secret storage, never from the settings file', async () => {
    const config = vscode.workspace.getConfiguration('belay');
    // The agent checks the key it got without the settings file ever holding the value.
    const agent = { name: 'Keyed agent', command: `test "$DEMO_KEY" = "$(printf 's%dcret-value' 3)" && exec \${node} agents/sdk1-agent.mjs`, protocol: 'sdk1', env: { DEMO_KEY: '${secret:demo-key}' } };
    await config.update('agents', [agent], vscode.ConfigurationTarget.Workspace);
    try {
      await waitFor('the agent from settings', () => runner.service.findAgent('Keyed agent') !== undefined, [runner.service.onDidChange]);
      await vscode.commands.executeCommand('belay.runner.setSecret', 'demo-key', '');
      // Without the secret the run is refused, naming the secret and what to do.
      const refused = await runner.service.start(runner.service.findTask('hello-world')!, runner.service.findAgent('Keyed agent')!).then(
        () => undefined,
        (error: Error) => error.message,
      );
      assert.match(refused ?? '', /needs the secret 'demo-key'.*Set Agent Secret/);
      await vscode.commands.executeCommand('belay.runner.setSecret', 'demo-key', 's3cret-value');
      const result = (await vscode.commands.executeCommand('belay.runner.runTask', { task: 'hello-world', agent: 'Keyed agent' })) as RunResult;
      assert.equal(result.passed, true, `${result.failure_cause}: ${result.error}`);
      const settingsFile = path.join(workspace(), '.vscode', 'settings.json');
      assert.ok(readFileSync(settingsFile, 'utf8').includes('${secret:demo-key}'));
      assert.ok(!readFileSync(settingsFile, 'utf8').includes('s3cret-value'), 'the key is not in settings');
    } finally {
      await config.update('agents', undefined, vscode.ConfigurationTarget.Workspace);
      await vscode.commands.executeCommand('belay.runner.setSecret', 'demo-key', '');
    }
  });

  test('an agent’s model key goes from secret storage to the gateway, never into the run; usage lands in result.json', async () => {
    const seen: { authorization: string | undefined; url: string | undefined }[] = [];
    const model = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        seen.push({ authorization: req.headers.authorization, url: req.url });
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-4o', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' } }], usage: { prompt_tokens: 40, completion_tokens: 2 } }));
      });
    });
    await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve));
    const upstream = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`;
    const config = vscode.workspace.getConfiguration('belay');
    // One model call with what the run was given, a check that the key is not among it, then the demo agent.
    const call = `fetch(process.env.OPENAI_BASE_URL+'/chat/completions',{method:'POST',headers:{authorization:'Bearer '+process.env.OPENAI_API_KEY,'content-type':'application/json'},body:JSON.stringify({model:'gpt-4o',messages:[]})}).then((r)=>process.exit(r.ok?0:9),()=>process.exit(8))`;
    const agent = { name: 'Model-keyed agent', command: `\${node} -e "${call}" && ! env | grep -q \"$(printf 'model-key-%s' value)\" && exec \${node} agents/sdk1-agent.mjs`, protocol: 'sdk1', llm: { upstream, keySecret: 'model-key' } };
    await config.update('agents', [agent], vscode.ConfigurationTarget.Workspace);
    try {
      await waitFor('the agent from settings', () => runner.service.findAgent('Model-keyed agent') !== undefined, [runner.service.onDidChange]);
      await vscode.commands.executeCommand('belay.runner.setSecret', 'model-key', '');
      const refused = await runner.service.start(runner.service.findTask('hello-world')!, runner.service.findAgent('Model-keyed agent')!).then(
        () => undefined,
        (error: Error) => error.message,
      );
      assert.match(refused ?? '', /needs the secret 'model-key'.*Set Agent Secret/);
      assert.deepEqual(seen, []);
      await vscode.commands.executeCommand('belay.runner.setSecret', 'model-key', 'model-key-value');
      const result = (await vscode.commands.executeCommand('belay.runner.runTask', { task: 'hello-world', agent: 'Model-keyed agent' })) as RunResult;
      assert.equal(result.passed, true, `${result.failure_cause}: ${result.error}`);
      assert.deepEqual(seen, [{ authorization: 'Bearer model-key-value', url: '/v1/chat/completions' }]);
      assert.deepEqual(result.llm, { requests: 1, input_tokens: 40, output_tokens: 2, cost_usd: result.llm!.cost_usd });
      const settingsFile = path.join(workspace(), '.vscode', 'settings.json');
      assert.ok(!readFileSync(settingsFile, 'utf8').includes('model-key-value'), 'the key is not in settings');
    } finally {
      await config.update('agents', undefined, vscode.ConfigurationTarget.Workspace);
      await vscode.commands.executeCommand('belay.runner.setSecret', 'model-key', '');
      model.close();
    }
  });

  test('the trajectory view opens for a run made by the editor', async () => {
    const task = runner.service.findTask('hello-world')!;
    // The runs the editor made alone: a job's trials are listed among a task's runs too.
    const run = runner.service.runsOf(task).find((r) => r.result.passed && !r.job && r.result.agent === SDK1)!;
    await vscode.commands.executeCommand('belay.runner.openTrajectory', run.result.run_dir);
    assert.deepEqual(runner.trajectories.openRuns, [run.result.run_dir]);
    const labels = () => vscode.window.tabGroups.all.flatMap((g) => g.tabs).map((t) => t.label);
    // Titled by the run: task, agent and when it started (two runs' tabs are told apart).
    const title = new RegExp(`^Run: hello-world · ${SDK1.replace(/\./g, '\\.')} · .*\\d:\\d\\d:\\d\\d`);
    await waitFor('the trajectory tab titled by its run', () => labels().some((l) => title.test(l)), [vscode.window.tabGroups.onDidChangeTabs]);
    const other = runner.service.runsOf(task).find((r) => !r.job && r.result.agent === SDK1 && r.result.run_dir !== run.result.run_dir && r.result.started_at !== run.result.started_at);
    assert.ok(other, 'the tests above left two runs of hello-world');
    await vscode.commands.executeCommand('belay.runner.openTrajectory', other.result.run_dir);
    await waitFor('a second run in a tab of its own', () => labels().filter((l) => l.startsWith('Run: hello-world · ')).length === 2, [vscode.window.tabGroups.onDidChangeTabs]);
    assert.equal(new Set(labels().filter((l) => l.startsWith('Run: hello-world · '))).size, 2, `two runs, two titles: ${labels().join(', ')}`);
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  test('two runs open side by side, from the command and from a run’s “Compare with…”', async () => {
    const task = runner.service.findTask('hello-world')!;
    const runs = runner.service.runsOf(task);
    const passed = runs.find((r) => r.result.passed)!;
    const failed = runs.find((r) => r.result.failure_cause === 'tests_failed')!;
    assert.ok(passed && failed, 'the tests above left a passed and a failed run of hello-world');
    await vscode.commands.executeCommand('belay.runner.compareRuns', passed.result.run_dir, failed.result.run_dir);
    assert.deepEqual(runner.trajectories.openComparisons, [[passed.result.run_dir, failed.result.run_dir]]);
    const labels = () => vscode.window.tabGroups.all.flatMap((g) => g.tabs).map((t) => t.label);
    await waitFor('the comparison tab', () => labels().some((l) => /^Compare: hello-world · .+ ↔ .+/.test(l)), [vscode.window.tabGroups.onDidChangeTabs]);
    // From the Tasks view: the run is A, the other is picked (the runs of the same task first).
    const realPick = vscode.window.showQuickPick;
    let offered: string[] = [];
    let offeredDirs: (string | undefined)[] = [];
    (vscode.window as { showQuickPick: unknown }).showQuickPick = async (items: readonly (vscode.QuickPickItem & { runDir?: string })[]) => {
      offered = items.map((i) => `${i.label} | ${i.description ?? ''}`);
      offeredDirs = items.map((i) => i.runDir);
      return items.find((i) => i.runDir === passed.result.run_dir);
    };
    try {
      await vscode.commands.executeCommand('belay.runner.compareWith', { kind: 'run', task, run: failed });
    } finally {
      (vscode.window as { showQuickPick: unknown }).showQuickPick = realPick;
    }
    assert.deepEqual(runner.trajectories.openComparisons.at(-1), [failed.result.run_dir, passed.result.run_dir]);
    assert.equal(offered[0], 'runs of hello-world | ', 'the same task’s runs come first');
    assert.ok(!offeredDirs.includes(failed.result.run_dir), 'the run is not offered against itself');
    // The pickers say the result, the agent and when.
    assert.ok(offered.some((o) => /^\$\(pass\) hello-world \| passed · Demo SDK 1\.x agent · /.test(o)), offered.join('\n'));
    // A run against itself is refused (the command says why).
    const open = runner.trajectories.openComparisons.length;
    await vscode.commands.executeCommand('belay.runner.compareRuns', passed.result.run_dir, passed.result.run_dir);
    assert.equal(runner.trajectories.openComparisons.length, open);
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    assert.deepEqual(runner.trajectories.openComparisons, []);
  });

  test('a repeated run reuses its task’s terminal once idle, with any agent, and never takes over a running one', async () => {
    const shown: string[] = [];
    const saved = runner.terminals.create;
    const settings = vscode.workspace.getConfiguration('belay');
    await settings.update('runner.backend', 'sandbox', vscode.ConfigurationTarget.Workspace);
    let made = 0;
    runner.terminals.create = ({ name }) => {
      made++;
      return { name, show: () => shown.push(name) } as unknown as vscode.Terminal;
    };
    try {
      const run = () => vscode.commands.executeCommand('belay.runner.runTask', { task: 'hello-world', agent: SDK1 }) as Thenable<RunResult>;
      await run();
      assert.equal(made, 1);
      await run();
      assert.equal(made, 1, 'the idle terminal of hello-world was reused');
      assert.equal(shown.length, 1, 'and shown');
      // Another agent on the same task: the same terminal, once idle.
      await vscode.commands.executeCommand('belay.runner.runTask', { task: 'hello-world', agent: 'Demo SDK 2.0 agent' });
      assert.equal(made, 1, 'one terminal per task, whatever the agent');
      assert.equal(shown.length, 2);
      // Two at once: the second gets its own terminal.
      await Promise.all([run(), run()]);
      assert.equal(made, 2);
    } finally {
      runner.terminals.create = saved;
      await settings.update('runner.backend', undefined, vscode.ConfigurationTarget.Workspace);
    }
  });

  test('runs made by `belay run` appear under their task and open in the trajectory view', async () => {
    const cli = path.join(vscode.extensions.getExtension('belay.belay')!.extensionPath, 'dist', 'cli.js');
    const ws = workspace();
    const { execFile } = await import('node:child_process');
    const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) =>
      execFile(process.execPath, [cli, 'run', 'tasks/count-words', '--agent', `'${process.execPath}' agents/sdk1-agent.mjs`, '--protocol', 'sdk1', '--backend', 'local', '--json'], { cwd: ws, timeout: 60_000 }, (error, out) =>
        error && error.code !== 1 ? reject(error) : resolve({ stdout: out }),
      ),
    );
    const runId = (JSON.parse(stdout) as { results: RunResult[] }).results[0]!.run_id;
    const task = runner.service.findTask('count-words')!;
    await waitFor('the CLI run in the Tasks view', () => runner.service.runsOf(task).some((r) => r.result.run_id === runId), [runner.service.onDidChange]);
    const run = runner.service.runsOf(task).find((r) => r.result.run_id === runId)!;
    assert.equal(run.result.agent, undefined, 'the CLI names no agent');
    assert.equal(runner.tree.getTreeItem({ kind: 'run', task, run }).contextValue, 'belay.run');
    await vscode.commands.executeCommand('belay.runner.openTrajectory', run.result.run_dir);
    assert.ok(runner.trajectories.openRuns.includes(run.result.run_dir));
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  test('Run Job runs every task × attempts into job.json and opens the Results view, which follows it', async () => {
    const ws = workspace();
    const jobDir = (await vscode.commands.executeCommand('belay.runner.runJob', { tasks: ['hello-world', 'count-words'], agent: SDK1, attempts: 2, concurrency: 2 })) as string;
    assert.equal(path.dirname(jobDir), path.join(ws, '.belay', 'jobs'));
    const job = JSON.parse(readFileSync(path.join(jobDir, 'job.json'), 'utf8')) as JobRecord;
    assert.equal(job.status, 'finished');
    assert.equal(job.settings.agent_name, SDK1);
    assert.equal(job.settings.attempts, 2);
    assert.deepEqual(job.trials.map((t) => `${t.task_name}.a${t.attempt}:${t.status}`).sort(), ['count-words.a1:finished', 'count-words.a2:finished', 'hello-world.a1:finished', 'hello-world.a2:finished']);
    for (const trial of job.trials) assert.ok(existsSync(path.join(jobDir, trial.run_id!, 'result.json')), `${trial.trial_id} has its run folder`);
    assert.equal(job.totals.attempts, 4);
    assert.equal(job.totals.pass_at_1, job.totals.passed / 4);
    // The Results view opened on the job and shows it finished.
    assert.deepEqual(runner.results.shown, [jobDir]);
    const labels = () => vscode.window.tabGroups.all.flatMap((g) => g.tabs).map((t) => t.label);
    await waitFor('the Results tab', () => labels().includes('Belay Results'), [vscode.window.tabGroups.onDidChangeTabs]);
    await waitFor('the Results view showing the finished job', () => /4\/4 trials done/.test(runner.results.lastState?.summary ?? ''), [runner.results.onDidUpdate], 20_000);
    const state = runner.results.lastState!;
    assert.equal(state.mode, 'attempts');
    assert.deepEqual(state.columns.map((c) => c.label), ['Attempt 1', 'Attempt 2']);
    assert.deepEqual(state.rows.map((r) => r.task).sort(), ['count-words', 'hello-world']);
    assert.ok(state.rows.every((r) => r.cells.every((c) => c !== null && c.finished === 1 && c.opens)));
    assert.deepEqual(state.scores.map((s) => [s.agent, s.k]), [[SDK1, 2]]);
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  test('Regrade on the job the Results view shows grades its trials again on their kept final states, beside the old records', async () => {
    // The job Run Job made above: the newest in the jobs folder, shown in the Results view.
    const jobsDir = path.join(workspace(), '.belay', 'jobs');
    const jobDir = path.join(jobsDir, readdirSync(jobsDir).filter((n) => existsSync(path.join(jobsDir, n, 'job.json'))).sort().at(-1)!);
    const job = JSON.parse(readFileSync(path.join(jobDir, 'job.json'), 'utf8')) as JobRecord;
    await vscode.commands.executeCommand('belay.runner.openResults', jobDir);
    assert.deepEqual(runner.results.shown, [jobDir]);
    const results = job.trials.map((t) => readFileSync(path.join(jobDir, t.run_id!, 'result.json'), 'utf8'));
    for (const t of job.trials) assert.ok(existsSync(path.join(jobDir, t.run_id!, 'final', 'workdir')), `${t.trial_id} kept its final state`);
    // No argument: the job the Results view shows, as its Regrade button does.
    const report = (await vscode.commands.executeCommand('belay.runner.regradeJob')) as { trials: { run_id: string; before: { passed: boolean }; after?: { passed: boolean }; file?: string }[]; changed: number };
    assert.equal(report.trials.length, 4);
    // The verifiers did not change: every trial grades as it did.
    assert.equal(report.changed, 0);
    for (const trial of report.trials) {
      assert.deepEqual(trial.after?.passed, trial.before.passed, trial.run_id);
      assert.ok(trial.file && existsSync(path.join(jobDir, trial.file)), `${trial.run_id}'s new verification is written`);
    }
    assert.deepEqual(job.trials.map((t) => readFileSync(path.join(jobDir, t.run_id!, 'result.json'), 'utf8')), results, 'result.json is never changed');
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  test('the Tasks view shows each task’s latest outcome from the job, and Compare Runs offers its trials by job and attempt', async () => {
    // The job Run Job made just above: the newest in the jobs folder.
    const jobsDir = path.join(workspace(), '.belay', 'jobs');
    const jobDir = path.join(jobsDir, readdirSync(jobsDir).filter((n) => existsSync(path.join(jobsDir, n, 'job.json'))).sort().at(-1)!);
    const job = JSON.parse(readFileSync(path.join(jobDir, 'job.json'), 'utf8')) as JobRecord;
    assert.equal(job.status, 'finished');
    await runner.service.refresh();
    // The Tasks view shows each task's latest outcome from the job: passed of its attempts.
    for (const name of ['hello-world', 'count-words']) {
      const passed = job.trials.filter((t) => t.task_name === name && t.passed === true).length;
      const taskNode = (await runner.tree.getChildren()).find((n) => n.kind === 'task' && n.task.name === name)!;
      await waitFor(`${name} showing the job`, () => runner.tree.getTreeItem(taskNode).description === `job: ${passed}/2 passed`, [runner.service.onDidChange]);
      const icon = runner.tree.getTreeItem(taskNode).iconPath as vscode.ThemeIcon;
      assert.equal(icon.id, passed === 2 ? 'pass' : passed === 0 ? 'error' : 'warning', name);
      // The tooltip is Markdown: read without its escapes.
      const tooltip = String((runner.tree.getTreeItem(taskNode).tooltip as vscode.MarkdownString).value).replace(/\\(.)/g, '$1');
      assert.ok(tooltip.includes(`Latest: job ${job.job_id}, ${passed} of 2 attempts passed.`), tooltip);
      // Its trials are among its runs, each saying which attempt it was.
      const runNodes = (await runner.tree.getChildren(taskNode)).filter((n) => n.kind === 'run' && path.dirname(n.run.result.run_dir) === jobDir);
      assert.deepEqual(runNodes.map((n) => String(runner.tree.getTreeItem(n).label).match(/attempt (\d) of 2/)?.[1]).sort(), ['1', '2'], name);
    }
    // Compare Runs offers the job's trials, labelled by job and attempt.
    const realPick = vscode.window.showQuickPick;
    let offered: (vscode.QuickPickItem & { runDir?: string })[] = [];
    (vscode.window as { showQuickPick: unknown }).showQuickPick = async (items: readonly (vscode.QuickPickItem & { runDir?: string })[]) => {
      offered = [...items];
      return undefined;
    };
    try {
      await vscode.commands.executeCommand('belay.runner.compareRuns');
    } finally {
      (vscode.window as { showQuickPick: unknown }).showQuickPick = realPick;
    }
    const trials = offered.filter((i) => i.runDir !== undefined && path.dirname(i.runDir) === jobDir);
    assert.equal(trials.length, 4, offered.map((i) => `${i.label} | ${i.description}`).join('\n'));
    for (const t of job.trials) assert.ok(trials.some((i) => i.runDir === path.join(jobDir, t.run_id!) && i.description!.includes(`attempt ${t.attempt} of 2 in job ${job.job_id}`)), t.trial_id);
  });

  test('cancelling Run Job’s notification stops the job; Resume Job runs what it left, every trial once; a Harbor job folder opens in the Results view', async function () {
    // Two jobs of real agents in sandboxes: near a minute on a loaded two-core machine.
    this.timeout(180_000);
    const ws = workspace();
    const realProgress = runner.prompts.progress;
    const lines: string[] = [];
    // Cancel the notification as soon as one trial has finished.
    runner.prompts.progress = (title, task) => {
      const controller = new AbortController();
      return task((message) => {
        lines.push(message);
        if (/^[1-9]\d*\/4 done/.test(message)) controller.abort();
      }, controller.signal);
    };
    let jobDir: string;
    try {
      jobDir = (await vscode.commands.executeCommand('belay.runner.runJob', { tasks: ['hello-world', 'count-words'], agent: SDK1, attempts: 2, concurrency: 1 })) as string;
    } finally {
      runner.prompts.progress = realProgress;
    }
    assert.ok(lines.some((l) => /^0\/4 done \(0 passed, 0 failed\), 1 running/.test(l)), lines.join('\n'));
    const stopped = JSON.parse(readFileSync(path.join(jobDir, 'job.json'), 'utf8')) as JobRecord;
    assert.equal(stopped.status, 'stopped');
    const doneBefore = stopped.trials.filter((t) => t.status === 'finished').map((t) => t.run_id);
    assert.ok(doneBefore.length >= 1 && doneBefore.length < 4, `${doneBefore.length} trial(s) finished before the stop`);
    assert.equal(await vscode.commands.executeCommand('belay.runner.resumeJob', jobDir), jobDir);
    const job = JSON.parse(readFileSync(path.join(jobDir, 'job.json'), 'utf8')) as JobRecord;
    assert.equal(job.status, 'finished');
    assert.deepEqual(job.trials.map((t) => t.status), ['finished', 'finished', 'finished', 'finished']);
    // The trials finished before the stop were kept, not run again.
    for (const runId of doneBefore) assert.ok(job.trials.some((t) => t.run_id === runId));
    const runFolders = readdirSync(jobDir).filter((name) => existsSync(path.join(jobDir, name, 'result.json')));
    assert.equal(runFolders.length, 4, `one run folder per trial: ${runFolders.join(', ')}`);
    assert.equal(path.dirname(jobDir), path.join(ws, '.belay', 'jobs'));
    const harbor = path.join(vscode.extensions.getExtension('belay.belay')!.extensionPath, 'test', 'fixtures', 'runner', 'harbor-job', '2026-01-05__10-00-00');
    await vscode.commands.executeCommand('belay.runner.openJobFolder', harbor);
    assert.deepEqual(runner.results.shown, [harbor]);
    await waitFor('the Harbor job in the Results view', () => runner.results.lastState?.shown[0] === harbor, [runner.results.onDidUpdate], 20_000);
    const state = runner.results.lastState!;
    assert.deepEqual(state.rows.map((r) => r.task), ['hello-world', 'count-words']);
    assert.ok(state.jobs.some((j) => j.dir === harbor && j.detail === 'Harbor job'));
    assert.ok(state.jobs.some((j) => j.dir === jobDir));
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  test('the micro-agent chat shows progress, then the message, media as files, and remembers the user', async () => {
    const chat = (await vscode.commands.executeCommand('belay.runner.chat', 'Demo micro-agent')) as ChatTerminal;
    chat.open();
    await chat.send('please draw a cat');
    const text = chat.transcript.replace(/\x1b\[[0-9;]*m/g, '');
    const progress = text.indexOf('⏳ Thinking…');
    const message = text.indexOf('You said "please draw a cat". That is message #1');
    assert.ok(progress >= 0 && message > progress, text);
    const media = /media: (\/\S+\.png)/.exec(text);
    assert.ok(media && existsSync(media[1]!), text);
    await chat.send('again');
    assert.match(chat.transcript, /message #2 from you/);
    const memory = path.join(workspace(), '.belay', 'micro-agents', 'Demo_micro-agent', 'users', 'vscode', 'memory.json');
    assert.deepEqual(JSON.parse(readFileSync(memory, 'utf8')), { messages: 2 });
    chat.close();
  });

  test('a micro-agent with allowInjection gets the lines typed while it runs; logs stay out of the chat', async () => {
    const chat = (await vscode.commands.executeCommand('belay.runner.chat', 'Demo follow-up chat')) as ChatTerminal;
    chat.open();
    const plain = () => chat.transcript.replace(/\x1b\[[0-9;]*[mK]/g, '');
    const replied = chat.send('hello');
    await waitFor('the first answer', () => plain().includes('You said "hello"'), [chat.onDidWrite]);
    chat.handleInput('and more\r');
    await waitFor('the answer to the follow-up', () => plain().includes('You added "and more" (line 2)'), [chat.onDidWrite]);
    chat.handleInput('bye\r');
    await replied;
    const text = plain();
    assert.match(text, /Bye after 3 lines\./, text);
    assert.doesNotMatch(text, /conversation started|inject 2/, 'log frames never reach the chat');
    // Injection needs a running rich agent with allowInjection: the other demo bot keeps the line.
    const other = (await vscode.commands.executeCommand('belay.runner.chat', 'Demo micro-agent')) as ChatTerminal;
    other.open();
    const answered = other.send('draw something');
    other.handleInput('late line\r');
    await answered;
    const otherText = other.transcript.replace(/\x1b\[[0-9;]*[mK]/g, '');
    assert.ok(/Not sent: (this micro-agent does not take follow-up lines while it runs \(allowInjection is off\)|the micro-agent is still starting)/.test(otherText), otherText);
    assert.match(otherText, /you › late line$/, 'the line is kept at the next prompt');
    chat.close();
    other.close();
  });

  test('Add Agent finds the protocol with the agent doctor (sandboxed), for an agent and for a micro-agent', async () => {
    const prompts = runner.prompts;
    const real = { input: prompts.input, pick: prompts.pick, progress: prompts.progress };
    const settings = vscode.workspace.getConfiguration('belay');
    const before = { agents: settings.inspect('agents')?.workspaceValue, microAgents: settings.inspect('microAgents')?.workspaceValue };
    const asked: string[] = [];
    let inputs: string[] = [];
    let picks: ((items: readonly vscode.QuickPickItem[]) => vscode.QuickPickItem | undefined)[] = [];
    prompts.input = async (options) => {
      asked.push(`input ${options.title}`);
      return inputs.shift();
    };
    prompts.pick = async <T extends vscode.QuickPickItem>(items: readonly T[], options: vscode.QuickPickOptions) => {
      asked.push(`pick ${options.placeHolder}`);
      return picks.shift()?.(items) as T | undefined;
    };
    const progressLines: string[] = [];
    prompts.progress = (title, task) => real.progress(title, (report, signal) => task((line) => (progressLines.push(line), report(line)), signal));
    try {
      inputs = ['Doctor-found agent', '${node} agents/sdk1-agent.mjs', ''];
      let offered: readonly vscode.QuickPickItem[] = [];
      picks = [
        (items) => items.find((i) => i.label.includes('agent doctor')),
        (items) => ((offered = items), items[0]),
      ];
      const name = await vscode.commands.executeCommand('belay.runner.addAgent');
      assert.equal(name, 'Doctor-found agent', asked.join('\n'));
      assert.equal(offered[0]?.label, 'sdk1');
      assert.match(offered[0]?.description ?? '', /found by the agent doctor/);
      assert.ok(progressLines.some((line) => /^sdk1: answered the first request/.test(line)), progressLines.join('\n'));
      const agents = vscode.workspace.getConfiguration('belay').get<{ name: string; protocol: string; command: string }[]>('agents') ?? [];
      assert.deepEqual(agents.find((a) => a.name === 'Doctor-found agent'), { name: 'Doctor-found agent', command: '${node} agents/sdk1-agent.mjs', protocol: 'sdk1', env: {} });

      // No command: a coding CLI Belay installs, its model API and model asked, its key kept in secret storage.
      inputs = ['Claude via Belay', '', 'https://api.anthropic.com', 'claude-sonnet-4-5', 'sk-ant-add-agent-test'];
      let clis: readonly vscode.QuickPickItem[] = [];
      picks = [(items) => ((clis = items), items.find((i) => i.label === 'Claude Code'))];
      assert.equal(await vscode.commands.executeCommand('belay.runner.addAgent'), 'Claude via Belay', asked.join('\n'));
      assert.deepEqual(clis.map((i) => i.label), ['Claude Code', 'Codex', 'Gemini CLI', 'OpenCode']);
      const added = (vscode.workspace.getConfiguration('belay').get<unknown[]>('agents') ?? []).find((a) => (a as { name?: string }).name === 'Claude via Belay');
      assert.deepEqual(added, { name: 'Claude via Belay', protocol: 'claude-code', llm: { upstream: 'https://api.anthropic.com', api: 'anthropic', keySecret: 'ANTHROPIC_API_KEY', model: 'claude-sonnet-4-5' } });
      assert.ok(!JSON.stringify(vscode.workspace.getConfiguration('belay').inspect('agents')).includes('sk-ant-add-agent-test'), 'the key went into settings');

      // A nanobot bot: offered as a micro-agent, written to belay.microAgents.
      inputs = ['Doctor-found bot', '${node} agents/micro-agent.mjs'];
      picks = [(items) => items.find((i) => i.label.includes('agent doctor')), (items) => items.find((i) => i.label === 'Add as a micro-agent')];
      assert.equal(await vscode.commands.executeCommand('belay.runner.addAgent'), undefined);
      const bots = vscode.workspace.getConfiguration('belay').get<{ name: string; protocol: string }[]>('microAgents') ?? [];
      assert.deepEqual(
        bots.filter((b) => b.name === 'Doctor-found bot').map((b) => [b.name, b.protocol]),
        [['Doctor-found bot', 'rich']],
      );
    } finally {
      Object.assign(prompts, real);
      await settings.update('agents', before.agents, vscode.ConfigurationTarget.Workspace);
      await settings.update('microAgents', before.microAgents, vscode.ConfigurationTarget.Workspace);
    }
  });

  test('with the container backend named, the micro-agent answers from a container', async () => {
    const settings = vscode.workspace.getConfiguration('belay');
    await settings.update('runner.backend', 'container', vscode.ConfigurationTarget.Workspace);
    const since = new Date(Date.now() - 1000).toISOString();
    try {
      const chat = (await vscode.commands.executeCommand('belay.runner.chat', 'Demo micro-agent')) as ChatTerminal;
      chat.open();
      await chat.send('draw where you are');
      const text = chat.transcript.replace(/\x1b\[[0-9;]*m/g, '');
      assert.match(text, /You said "draw where you are"/, text);
      const media = /media: (\/\S+\.png)/.exec(text);
      assert.ok(media && existsSync(media[1]!), `the workspace is shared at its own path: ${text}`);
      chat.close();
      // The engine saw the bot's container come and go (and none is left).
      const created = execFileSync('podman', ['events', '--stream=false', '--since', since, '--filter', 'event=create', '--format', '{{.Name}}'], { encoding: 'utf8' });
      assert.match(created, /^belay-nanobot-[0-9a-f]+$/m);
      // The bot's environment (kept between its messages) ends with the chat: its container goes.
      const names = () => execFileSync('podman', ['ps', '--all', '--format', '{{.Names}}'], { encoding: 'utf8' });
      const deadline = Date.now() + 60_000;
      while (/belay-nanobot-/.test(names()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 250));
      assert.doesNotMatch(names(), /belay-nanobot-/);
    } finally {
      await settings.update('runner.backend', undefined, vscode.ConfigurationTarget.Workspace);
    }
  });

  test('a `belay` task from tasks.json runs and ends with exit code 0', async () => {
    const tasks = await vscode.tasks.fetchTasks({ type: 'belay' });
    const task = tasks.find((t) => t.definition.task === path.join('tasks', 'hello-world') && t.definition.agent === SDK1);
    assert.ok(task, tasks.map((t) => t.name).join(', '));
    const ended = new Promise<number | undefined>((resolve) => {
      const sub = vscode.tasks.onDidEndTaskProcess((e) => {
        if (e.execution.task.definition.agent === SDK1) {
          sub.dispose();
          resolve(e.exitCode);
        }
      });
    });
    await vscode.tasks.executeTask(task);
    assert.equal(await ended, 0);
  });
});
