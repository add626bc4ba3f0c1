// An agent that calls a model, tried as a new user would: its model API set on the agent in
// belay.agents (a local server that needs no key: the key path through SecretStorage is in the
// host tests), the run in the live terminal, then tokens and cost in the terminal summary, the
// Tasks view and the trajectory view. The model is a real HTTP server on 127.0.0.1 in this test.
import assert from 'node:assert/strict';
import { cp, mkdir } from 'node:fs/promises';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runPaletteCommand } from '../../scripts/lib/workbench.ts';
import { repoRoot } from '../../scripts/lib/paths.ts';
import { openBelayContainer, openWorkbench, pick, waitForTerminal, type Workbench } from '../support/workbench.ts';

/** A chat completions server: every answer solves hello-world, with the usage a provider reports. */
async function startModel(): Promise<{ url: string; requests: string[]; close: () => Promise<void> }> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests.push(`${req.method} ${req.url}`);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ id: 'c1', object: 'chat.completion', model: 'gpt-4o', choices: [{ index: 0, message: { role: 'assistant', content: "printf 'Hello, world!' > hello.txt" }, finish_reason: 'stop' }], usage: { prompt_tokens: 1234, completion_tokens: 321, total_tokens: 1555 } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, requests, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('an agent calling a model through Belay’s gateway, in the workbench', () => {
  let wb: Workbench;
  let model: Awaited<ReturnType<typeof startModel>>;
  before(async () => {
    model = await startModel();
    wb = await openWorkbench({
      theme: 'dark',
      settings: {
        'terminal.integrated.gpuAcceleration': 'off',
        'belay.agents': [{ name: 'Model agent', command: '${node} llm-sdk1.mjs chat', protocol: 'sdk1', cwd: 'model-agent', llm: { upstream: model.url, budgetUsd: 1 } }],
      },
    });
    // The agent's files, as a user keeps them in the workspace.
    const agentDir = path.join(wb.workspace, 'model-agent');
    await mkdir(agentDir, { recursive: true });
    for (const file of ['llm-sdk1.mjs', 'llm-client.mjs', 'sdk1-lib.mjs']) await cp(path.join(repoRoot, 'test', 'fixtures', 'runner', 'agents', file), path.join(agentDir, file));
  });
  after(async () => {
    await wb?.close();
    await model?.close();
  });

  test('the terminal summary, the Tasks view and the trajectory view show what the model calls cost', async () => {
    const { page } = wb;
    await runPaletteCommand(page, 'Belay: Run Task with Agent…');
    await pick(page, 'hello-world');
    await pick(page, 'Model agent');
    await runPaletteCommand(page, 'View: Toggle Maximized Panel');
    const text = await waitForTerminal(page, /PASSED.*model calls: 1 request/, 60_000);
    assert.match(text, /PASSED\s+reward 1 · 2 steps · [\d.]+ (ms|s) · 1\.55k tokens · \$0\.\d{4}/);
    assert.match(text, /model calls: 1 request · 1\.55k tokens \(1\.23k in, 321 out\) · \$0\.\d{4}/);
    assert.deepEqual(model.requests, ['POST /v1/chat/completions']);
    await runPaletteCommand(page, 'Notifications: Clear All Notifications');
    await wb.screenshot('runner-terminal-llm');
    await runPaletteCommand(page, 'View: Toggle Maximized Panel');

    await page.keyboard.press('Escape');
    await openBelayContainer(page);
    const task = page.locator('.sidebar .monaco-list-row[aria-label^="hello-world"]');
    // A click on a task opens its instruction; the twistie expands it.
    if ((await task.getAttribute('aria-expanded')) !== 'true') await task.locator('.monaco-tl-twistie').click();
    const run = page.locator('.sidebar .monaco-list-row[aria-level="2"]', { hasText: 'Model agent' }).first();
    await run.waitFor();
    assert.match((await run.textContent()) ?? '', /1\.55k tokens · \$0\.\d{4}/);
    await wb.screenshot('runner-tasks-llm');

    await runPaletteCommand(page, 'Belay: Open Run Trajectory…');
    await pick(page, 'hello-world');
    const frame = page.frameLocator('iframe.webview.ready').last().frameLocator('#active-frame');
    await frame.locator('h1.title', { hasText: 'hello-world' }).waitFor();
    const total = (await frame.locator('header .llm').textContent()) ?? '';
    assert.match(total, /^Model calls: 1\.6K tokens \(1\.2K in, 321 out\) · \$0\.\d{4} · 1 request$/);
    const step = (await frame.locator('.step .llm').textContent()) ?? '';
    assert.match(step, /^Model calls for this step: 1\.6K tokens/);
    if (await page.locator('.part.panel').isVisible()) await runPaletteCommand(page, 'View: Hide Panel');
    await wb.screenshot('runner-trajectory-llm');
  });
});
