// A run in the real extension host served by a model VS Code offers: the test model provider
// (test/fixtures/lm-provider, VS Code 1.103's proposed chatProvider API) behind Belay's gateway,
// chosen with Belay: Choose a VS Code Model for Runs…, no key anywhere. The agent's tool call
// round-trips through the harness and the model; tokens are the provider's own counts.
import * as assert from 'node:assert/strict';
import { copyFile, mkdir, rm } from 'node:fs/promises';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { RunnerTestApi } from '../../src/runner/index.ts';
import { activateBelay, EXTENSION_ID, waitFor } from './helpers.ts';

interface TestModels {
  answers: unknown[];
  calls: { messages: { role: string; parts: Record<string, unknown>[] }[]; tools: string[]; toolMode: string }[];
  counts: number[];
}

const MODEL = 'belay-test/scripted';
const SOLVE = "printf 'Hello, world!' > hello.txt";

suite('Belay runner on a VS Code Model', () => {
  let runner: RunnerTestApi;
  let models: TestModels;
  const workspace = () => vscode.workspace.workspaceFolders![0]!.uri.fsPath;

  suiteSetup(async () => {
    const { api } = await activateBelay();
    runner = api.test!.runner as RunnerTestApi;
    const provider = vscode.extensions.getExtension<TestModels>('belay-test.belay-test-models');
    assert.ok(provider, 'the test model provider is not installed in this host');
    models = await provider.activate();
    await modelOffered();
  });

  /** Resolves once VS Code offers the test model (its provider registers as it activates). */
  async function modelOffered(): Promise<void> {
    const offered = async () => (await vscode.lm.selectChatModels({ vendor: 'belay-test' })).length > 0;
    if (await offered()) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => (sub.dispose(), reject(new Error('VS Code never offered the test model'))), 20_000);
      const sub = vscode.lm.onDidChangeChatModels(async () => {
        if (!(await offered())) return;
        clearTimeout(timer);
        sub.dispose();
        resolve();
      });
    });
  }

  test('the agent’s tool call round-trips through the VS Code model; its tokens are the provider’s counts', async function () {
    this.timeout(120_000);
    const settings = vscode.workspace.getConfiguration('belay');
    const before = { llm: settings.inspect('runner.llm')?.globalValue, agents: settings.inspect('agents')?.workspaceValue };
    await settings.update('runner.backend', 'sandbox', vscode.ConfigurationTarget.Workspace);
    const realPick = runner.prompts.pick;
    const agentFile = path.join(workspace(), 'agents', 'lm-host.mjs');
    try {
      // The picker lists what VS Code offers; picking writes the setting.
      let listed: string[] = [];
      runner.prompts.pick = (async (items: readonly (vscode.QuickPickItem & { key?: string })[]) => {
        listed = items.map((item) => String(item.key));
        return items.find((item) => item.key === MODEL);
      }) as RunnerTestApi['prompts']['pick'];
      const chosen = await vscode.commands.executeCommand('belay.runner.chooseVscodeModel');
      assert.equal(chosen, MODEL);
      assert.ok(listed.includes(MODEL), `the picker listed ${listed.join(', ')}`);
      assert.deepEqual(vscode.workspace.getConfiguration('belay').get('runner.llm'), { ...((before.llm as object | undefined) ?? {}), upstream: 'vscode-lm', vscodeModel: MODEL });

      const extensionPath = vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath;
      await mkdir(path.dirname(agentFile), { recursive: true });
      await copyFile(path.join(extensionPath, 'test', 'fixtures', 'runner', 'agents', 'lm-host.mjs'), agentFile);
      await settings.update('agents', [{ name: 'VS Code model agent', command: '${node} agents/lm-host.mjs', protocol: 'sdk1' }], vscode.ConfigurationTarget.Workspace);
      await waitFor('the agent from settings', () => runner.service.findAgent('VS Code model agent') !== undefined, [runner.service.onDidChange]);

      models.answers.push({ parts: [{ text: 'I will write the file.' }, { toolCall: { callId: 'call_host_1', name: 'shell', input: { command: SOLVE } } }] }, { parts: [{ text: 'hello.txt is written.' }] });
      const calls = models.calls.length;
      const counts = models.counts.length;
      const result = await runner.service.start(runner.service.findTask('hello-world')!, runner.service.findAgent('VS Code model agent')!);
      assert.equal(result.passed, true, `${result.failure_cause}: ${result.error}`);

      const [first, second] = models.calls.slice(calls);
      assert.equal(models.calls.length - calls, 2);
      assert.deepEqual(first!.tools, ['shell']);
      assert.equal(first!.messages[0]!.role, 'user');
      const parts = second!.messages.flatMap((m) => m.parts.map((p) => ({ role: m.role, ...p })));
      assert.deepEqual(parts.find((p) => 'toolCall' in p), { role: 'assistant', toolCall: { callId: 'call_host_1', name: 'shell', input: { command: SOLVE } } });
      const answer = parts.find((p) => 'toolResult' in p) as { role: string; toolResult: { callId: string; text: string } } | undefined;
      assert.equal(answer?.role, 'user');
      assert.equal(answer?.toolResult.callId, 'call_host_1');
      assert.match(answer?.toolResult.text ?? '', /^exit 0/);

      // Two counts per request (input, then output), each by the provider's counter.
      const made = models.counts.slice(counts);
      assert.equal(made.length, 4);
      assert.deepEqual(result.llm, { requests: 2, input_tokens: made[0]! + made[2]!, output_tokens: made[1]! + made[3]!, cost_usd: 0 });
    } finally {
      runner.prompts.pick = realPick;
      await settings.update('runner.llm', before.llm, vscode.ConfigurationTarget.Global);
      await settings.update('agents', before.agents, vscode.ConfigurationTarget.Workspace);
      await settings.update('runner.backend', undefined, vscode.ConfigurationTarget.Workspace);
      await rm(agentFile, { force: true });
    }
  });

  test('a model VS Code does not offer refuses the run in one line, before anything starts', async () => {
    const settings = vscode.workspace.getConfiguration('belay');
    const before = settings.inspect('runner.llm')?.globalValue;
    try {
      await settings.update('runner.llm', { upstream: 'vscode-lm', vscodeModel: 'nobody/nothing' }, vscode.ConfigurationTarget.Global);
      const refused = await runner.service.start(runner.service.findTask('hello-world')!, runner.service.findAgent('Demo SDK 1.x agent')!).then(
        () => undefined,
        (error: Error) => error.message,
      );
      assert.match(refused ?? '', /^VS Code offers no model nobody\/nothing for runs \(it offers [^)]*belay-test\/scripted[^)]*\); run Belay: Choose a VS Code Model for Runs…$/);
    } finally {
      await settings.update('runner.llm', before, vscode.ConfigurationTarget.Global);
    }
  });
});
