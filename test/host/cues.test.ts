// Cues inside the real extension host: the mailbox setting, the language-model tools, Pause Agent
// with the reply queue, the editor tabs, HAP instructions on the clipboard, and Belay's cueme on
// terminals' PATH.
import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { Mailbox } from '../../src/cues/core/store.ts';
import { waitForChange } from '../../src/cues/core/watch.ts';
import { activateBelay } from './helpers.ts';

function until<T>(mailbox: Mailbox, what: string, ready: () => T | undefined, timeoutMs = 20_000): Promise<T> {
  return waitForChange((onChange) => mailbox.watch(onChange), ready, AbortSignal.timeout(timeoutMs)).then((value) => {
    if (value === undefined) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    return value;
  });
}

function textOf(result: vscode.LanguageModelToolResult): string {
  return result.content.map((part) => (part instanceof vscode.LanguageModelTextPart ? part.value : '')).join('');
}

suite('Belay cues', () => {
  let dir: string;
  let mailbox: Mailbox;

  suiteSetup(async () => {
    await activateBelay();
    dir = mkdtempSync(path.join(os.tmpdir(), 'belay-cues-host-'));
    // The test's own mailbox, handed to Belay through its setting (Belay re-opens on the change).
    await vscode.workspace.getConfiguration('belay').update('cues.home', path.join(dir, '.cue'), vscode.ConfigurationTarget.Workspace);
    mailbox = Mailbox.open({ home: path.join(dir, '.cue') });
  });

  suiteTeardown(async () => {
    mailbox?.close();
    await vscode.workspace.getConfiguration('belay').update('cues.home', undefined, vscode.ConfigurationTarget.Workspace);
    rmSync(dir, { recursive: true, force: true });
  });

  test('the join, cue and pause tools are registered for chat agents', () => {
    const names = vscode.lm.tools.map((t) => t.name);
    for (const name of ['belay_join', 'belay_cue', 'belay_pause']) assert.ok(names.includes(name), `${name} missing from ${names.join(', ')}`);
  });

  test('a chat agent joins and cues through the tools; the answer written to the mailbox is its result', async () => {
    const joined = textOf(await vscode.lm.invokeTool('belay_join', { input: { agent_runtime: 'VS Code Chat' }, toolInvocationToken: undefined }));
    const agentId = /^agent_id=(\w+)$/m.exec(joined)?.[1];
    assert.ok(agentId, joined);
    assert.match(joined, /^agent_runtime=vs_code_chat$/m);

    const payload = { type: 'choice', options: ['Yes', 'No'] };
    const result = vscode.lm.invokeTool('belay_cue', { input: { agent_id: agentId, prompt: 'Proceed?', payload }, toolInvocationToken: undefined });
    const request = await until(mailbox, 'the tool cue', () => mailbox.listRequests({ pendingOnly: true, agentId })[0]);
    assert.equal(request.prompt, 'Proceed?');
    assert.equal(request.payload.kind, 'choice');
    await mailbox.answer(request.requestId, { text: 'Yes' });
    const text = textOf(await result);
    assert.match(text, /instructions:\n\nYes\n/);
  });

  test('a tool input without an agent_id is refused with a message and writes nothing', async () => {
    const before = mailbox.listRequests().length;
    const text = textOf(await vscode.lm.invokeTool('belay_cue', { input: { prompt: 'hi' }, toolInvocationToken: undefined }));
    assert.match(text, /Invalid input for belay_cue: agent_id/);
    assert.equal(mailbox.listRequests().length, before);
  });

  test("Pause Agent answers the agent's waiting cue with the pause request", async () => {
    const { requestId } = mailbox.createRequest({ agentId: 'waitingagent', prompt: 'Shall I go on?', payloadJson: null });
    await vscode.commands.executeCommand('belay.cues.pauseAgent', 'waitingagent');
    const answered = mailbox.getResponse(requestId)?.text;
    assert.match(answered ?? '', /run `cueme pause waitingagent`/);
  });

  test("Pause Agent with no waiting cue queues the request for the agent's next cue", async () => {
    await vscode.commands.executeCommand('belay.cues.pauseAgent', 'lateagent');
    const { requestId } = mailbox.createRequest({ agentId: 'lateagent', prompt: 'Done. Anything else?', payloadJson: null });
    const response = await until(mailbox, 'the queued reply to be delivered', () => mailbox.getResponse(requestId));
    assert.equal(response.cancelled, false);
    assert.match(response.text, /run `cueme pause lateagent`/);
    // Delivered once: the next cue waits for the human.
    const second = mailbox.createRequest({ agentId: 'lateagent', prompt: 'Still there?', payloadJson: null });
    await until(mailbox, 'the second cue to be listed', () => mailbox.getRequest(second.requestId));
    assert.equal(mailbox.getResponse(second.requestId), undefined);
    mailbox.cancel(second.requestId);
  });

  test('Open Cue in Editor opens one editor tab per agent, and reveals it again rather than a second one', async () => {
    const tabs = (agentId = 'paneltestagent') => vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => t.label === `Cues: ${agentId}`);
    // The tab model follows the workbench's events: wait for them, not for time.
    const tabCount = (n: number, agentId?: string) =>
      new Promise<void>((resolve, reject) => {
        if (tabs(agentId).length === n) return resolve();
        const timer = setTimeout(() => reject(new Error(`expected ${n} tab(s), have ${tabs(agentId).length}`)), 10_000);
        const sub = vscode.window.tabGroups.onDidChangeTabs(() => {
          if (tabs(agentId).length !== n) return;
          clearTimeout(timer);
          sub.dispose();
          resolve();
        });
      });
    await vscode.commands.executeCommand('belay.cues.openInEditor', { agentId: 'paneltestagent' });
    await tabCount(1);
    assert.ok(tabs()[0]?.input instanceof vscode.TabInputWebview, 'a webview tab');
    await vscode.commands.executeCommand('belay.cues.openInEditor', { agentId: 'paneltestagent', requestId: 'req_000000000000' });
    // Another agent gets its own tab; once it is there, a second tab for the first would be too.
    await vscode.commands.executeCommand('belay.cues.openInEditor', { agentId: 'otherpanelagent' });
    await tabCount(1, 'otherpanelagent');
    assert.equal(tabs().length, 1, 'the same tab, revealed');
    await vscode.window.tabGroups.close([...tabs(), ...tabs('otherpanelagent')]);
    await tabCount(0);
  });

  test('Copy HAP Instructions puts the protocol text on the clipboard', async () => {
    await vscode.env.clipboard.writeText('');
    await vscode.commands.executeCommand('belay.cues.copyInstructions');
    const text = await vscode.env.clipboard.readText();
    assert.match(text, /cueme join <agent_runtime>/);
    assert.match(text, /cueme cue <agent_id> -/);
    assert.match(text, /<cueme_prompt>/);
  });

  test("integrated terminals run Belay's cueme on VS Code's own runtime, with the mailbox setting", async () => {
    const out = path.join(dir, 'terminal-out.txt');
    const script = `command -v cueme > '${out}'; cueme --version >> '${out}'; echo "CUE_HOME=$CUE_HOME" >> '${out}'`;
    const terminal = vscode.window.createTerminal({ name: 'belay-cueme-check', shellPath: '/bin/sh', shellArgs: ['-c', script] });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the terminal did not finish within 20 s')), 20_000);
      const sub = vscode.window.onDidCloseTerminal((t) => {
        if (t !== terminal) return;
        clearTimeout(timer);
        sub.dispose();
        resolve();
      });
    });
    assert.ok(existsSync(out), 'the terminal wrote nothing');
    const lines = readFileSync(out, 'utf8').trim().split('\n');
    assert.match(lines[0] ?? '', /[/\\]bin[/\\]cueme$/, `cueme resolved to ${lines[0]}`);
    assert.ok(!lines[0]?.includes('node_modules'), 'the launcher is Belay\'s, not an npm one');
    assert.match(lines[1] ?? '', /^\d+\.\d+\.\d+/, `cueme --version printed ${lines[1]}`);
    assert.equal(lines[2], `CUE_HOME=${path.join(dir, '.cue')}`);
    const launcher = readFileSync(lines[0]!, 'utf8');
    assert.ok(launcher.includes(process.execPath), 'the launcher runs the extension host\'s own runtime');
  });
});
