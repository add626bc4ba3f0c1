// Claude Code as an agent of the editor, tried as a new user would: an entry in belay.agents with
// the claude-code protocol and no command, its model API a scripted Anthropic Messages service on
// 127.0.0.1 (here, in this test) at a model's pace; the real CLI (Belay's pinned install, from the
// tests' cache) runs the task in the sandbox, live in the terminal; then the trajectory view shows
// its tool call, its words and its tokens.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { runPaletteCommand } from '../../scripts/lib/workbench.ts';
import { claudeCode } from '../../src/runner/core/protocols/installed/claudeCode.ts';
import { installedCli, testAgentCache } from '../support/runner/installed.ts';
import { startMessagesUpstream, type MessagesUpstream } from '../support/runner/upstreams/messages.ts';
import { openWorkbench, pick, waitForTerminal, type Workbench } from '../support/workbench.ts';

const SOLVE = "printf 'Hello, world!' > hello.txt";

describe('Claude Code on a task from the editor', () => {
  let wb: Workbench;
  let model: MessagesUpstream;
  before(async () => {
    await installedCli(claudeCode);
    model = await startMessagesUpstream({
      firstByteMs: 2500,
      chunkMs: 40,
      turns: [{ text: 'I will write hello.txt with printf.', tool: 'Bash', input: { command: SOLVE, description: 'Write hello.txt' } }, { text: 'hello.txt now holds the greeting.' }],
    });
    wb = await openWorkbench({
      theme: 'dark',
      settings: {
        'terminal.integrated.gpuAcceleration': 'off',
        'belay.runner.backend': 'sandbox',
        'belay.runner.agentCache': testAgentCache(),
        'belay.agents': [{ name: 'Claude Code', protocol: 'claude-code', llm: { upstream: model.url, api: 'anthropic', model: 'claude-sonnet-4-5' } }],
      },
    });
  });
  after(async () => {
    await wb?.close();
    await model?.close();
  });

  test('the run shows its tool call live, passes, and the trajectory view shows the step', async () => {
    const { page } = wb;
    await runPaletteCommand(page, 'Belay: Run Task with Agent…');
    await pick(page, 'hello-world');
    await pick(page, 'Claude Code');
    await runPaletteCommand(page, 'View: Toggle Maximized Panel');
    const text = await waitForTerminal(page, /PASSED.*model calls: 2 requests/, 180_000);
    assert.match(text, /I will write hello\.txt with printf\./);
    assert.match(text, /\$ printf 'Hello, world!' > hello\.txt/);
    assert.match(text, /model calls: 2 requests · 2\.48k tokens \(2\.40k in, 80 out\)/);
    assert.ok(model.received.some((r) => r.url === '/v1/messages?beta=true' && r.turn === 1), 'the tool result went back to the model');
    await runPaletteCommand(page, 'Notifications: Clear All Notifications');
    await wb.screenshot('runner-terminal-claude-code');
    await runPaletteCommand(page, 'View: Toggle Maximized Panel');

    await runPaletteCommand(page, 'Belay: Open Run Trajectory…');
    await pick(page, 'hello-world');
    const frame = page.frameLocator('iframe.webview.ready').last().frameLocator('#active-frame');
    await frame.locator('h1.title', { hasText: 'hello-world' }).waitFor();
    const step = frame.locator('.step').first();
    await step.locator('.agent-text', { hasText: 'I will write hello.txt with printf.' }).waitFor();
    assert.match((await step.textContent()) ?? '', /printf 'Hello, world!' > hello\.txt/);
    assert.match((await step.locator('.llm').textContent()) ?? '', /^Model calls for this step: 1\.2K tokens/);
    if (await page.locator('.part.panel').isVisible()) await runPaletteCommand(page, 'View: Hide Panel');
    await runPaletteCommand(page, 'Notifications: Clear All Notifications');
    await wb.screenshot('runner-trajectory-claude-code');
  });
});

describe('Claude Code on a model VS Code offers, from the editor', () => {
  let wb: Workbench;
  before(async () => {
    await installedCli(claudeCode);
    wb = await openWorkbench({
      theme: 'light',
      testModels: true,
      settings: {
        'terminal.integrated.gpuAcceleration': 'off',
        'belay.runner.backend': 'sandbox',
        'belay.runner.agentCache': testAgentCache(),
        'belay.agents': [{ name: 'Claude Code on VS Code', protocol: 'claude-code', llm: { upstream: 'vscode-lm', vscodeModel: 'belay-test/scripted' } }],
      },
    });
  });
  after(async () => {
    await wb?.close();
  });

  test('no key: the run is served by the model through the LM API, its tool call round-trips, the trajectory view shows it', async () => {
    const { page } = wb;
    await runPaletteCommand(page, 'Belay: Run Task with Agent…');
    await pick(page, 'hello-world');
    await pick(page, 'Claude Code on VS Code');
    await runPaletteCommand(page, 'View: Toggle Maximized Panel');
    const text = await waitForTerminal(page, /(PASSED|FAILED).*model calls: \d+ requests/, 180_000);
    assert.match(text, /PASSED\s+reward 1 · 1 step/);
    assert.match(text, /model calls: 2 requests/);
    assert.match(text, /\$ printf 'Hello, world!' > hello\.txt/);
    await runPaletteCommand(page, 'Notifications: Clear All Notifications');
    await wb.screenshot('runner-terminal-claude-code-vscode-model');
    await runPaletteCommand(page, 'View: Toggle Maximized Panel');
    await runPaletteCommand(page, 'Belay: Open Run Trajectory…');
    await pick(page, 'hello-world');
    const frame = page.frameLocator('iframe.webview.ready').last().frameLocator('#active-frame');
    await frame.locator('h1.title', { hasText: 'hello-world' }).waitFor();
    const step = frame.locator('.step').first();
    await step.locator('.agent-text', { hasText: 'I will write hello.txt with printf.' }).waitFor();
    assert.match((await step.textContent()) ?? '', /printf 'Hello, world!' > hello\.txt/);
    assert.match((await step.locator('.llm').textContent()) ?? '', /^Model calls for this step: /);
    if (await page.locator('.part.panel').isVisible()) await runPaletteCommand(page, 'View: Hide Panel');
    await runPaletteCommand(page, 'Notifications: Clear All Notifications');
    await wb.screenshot('runner-trajectory-claude-code-vscode-model');
  });
});
