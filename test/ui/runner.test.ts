// The task runner tried as a new user would, in the real workbench: the demo tasks in the Tasks
// view, a run in the live terminal, Stop, Test Explorer, the trajectory view, the micro-agent chat.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { runPaletteCommand } from '../../scripts/lib/workbench.ts';
import { openBelayContainer, openWorkbench, pick, setColorTheme, terminalText, waitForTerminal, type Workbench } from '../support/workbench.ts';
import { processesWith } from '../support/processes.ts';

/** Room for a view: the panel (terminal, test results) hidden when it shows. */
async function hidePanel(page: Page): Promise<void> {
  if (await page.locator('.part.panel').isVisible()) await runPaletteCommand(page, 'View: Hide Panel');
}

/** Picks the first row of the open quick pick whose text (label or description) holds `text`. */
async function pickByText(page: Page, text: string): Promise<void> {
  const input = page.locator('.quick-input-widget input.input');
  await input.waitFor();
  await input.fill(text);
  const row = page.locator('.quick-input-widget .monaco-list-row', { hasText: text }).first();
  await row.waitFor();
  await row.click();
}

describe('the task runner in the workbench', () => {
  let wb: Workbench;
  before(async () => {
    wb = await openWorkbench({ theme: 'dark', settings: { 'terminal.integrated.gpuAcceleration': 'off', 'belay.runner.concurrency': 2 } });
  });
  after(async () => {
    await wb?.close();
  });

  test('the Tasks view lists the demo tasks', async () => {
    await openBelayContainer(wb.page);
    await wb.page.locator('.sidebar .monaco-list-row[aria-label^="hello-world"]').waitFor();
    await wb.page.locator('.sidebar .monaco-list-row[aria-label^="count-words"]').waitFor();
  });

  test('a run with a hanging agent shows live in a terminal and Stop ends it with nothing left behind', async () => {
    const { page } = wb;
    await runPaletteCommand(page, 'Belay: Run Task with Agent…');
    await pick(page, 'hello-world');
    await pick(page, 'Demo stuck agent');
    await waitForTerminal(page, /sleep 600/);
    // Room for the whole run on screen.
    await runPaletteCommand(page, 'View: Toggle Maximized Panel');
    const live = await waitForTerminal(page, /Belay: hello-world.*step 1.*sleep 600/);
    assert.match(live, /Looking around first\./);
    // Where the agent runs is said before anything else: the container backend where an engine
    // works (the default), else the sandbox.
    assert.match(
      live,
      /Belay: hello-world \(sdk1\)backend (container \((podman|docker) [\d.]+( \(runc\))?: the task's image, no network, no capabilities\)|sandbox \(bubblewrap: only \/app writable, no network, no capabilities\))run folder/,
    );
    await wb.screenshot('runner-terminal-during-run');
    // The run's id names its folder; a sandbox's processes name the folder, a container's (engine
    // clients, conmon) the id in the container's name.
    const runId = readdirSync(wb.workspace + '/.belay/runs/').sort().at(-1)!;
    assert.ok(processesWith(runId).length > 0, 'the run has processes');
    await runPaletteCommand(page, 'Belay: Stop Run');
    const ended = await waitForTerminal(page, /FAILED .*aborted/);
    assert.match(ended, /the run was stopped/);
    assert.deepEqual(processesWith(runId), []);
    assert.deepEqual(processesWith('sleep 600'), []);
    await runPaletteCommand(page, 'View: Toggle Maximized Panel');
  });

  test('hello-world with the demo SDK 1.x agent, from the editor action of its instruction.md, shows its steps and passes', async () => {
    const { page } = wb;
    await runPaletteCommand(page, 'Go to File...');
    await pick(page, 'instruction.md');
    await page.locator('.tab.active', { hasText: 'instruction.md' }).waitFor();
    await page.locator('.editor-actions .action-label[aria-label^="Run Task with Agent"]').click();
    await pick(page, 'Demo SDK 1.x agent');
    await waitForTerminal(page, /PASSED/);
    await runPaletteCommand(page, 'View: Toggle Maximized Panel');
    const text = await waitForTerminal(page, /Belay: hello-world.*step 1.*\$ printf.*PASSED/);
    assert.match(text, /tests passed \(reward 1\)/);
    await runPaletteCommand(page, 'Notifications: Clear All Notifications');
    await wb.screenshot('runner-terminal-passed');
    await runPaletteCommand(page, 'View: Toggle Maximized Panel');
  });

  test('a failing agent started from the Tasks view ends red with its cause', async () => {
    const { page } = wb;
    // The activity-bar entry toggles: click it only when Belay is not the open side bar.
    if (!(await page.locator('.sidebar .composite.title h2', { hasText: /belay/i }).isVisible())) await openBelayContainer(page);
    const row = page.locator('.sidebar .monaco-list-row[aria-label^="hello-world"]');
    await row.hover();
    await row.locator('.action-label[aria-label^="Run Task with Agent"]').click();
    await pick(page, 'Demo failing agent');
    const text = await waitForTerminal(page, /FAILED .*tests_failed/);
    assert.match(text, /expected 'Hello, world!', found: 'Hello, moon!'/);
    await runPaletteCommand(page, 'Notifications: Clear All Notifications');
    await wb.screenshot('runner-terminal-failed');
  });

  test('Test Explorer lists the tasks and runs them green with the default agent', async () => {
    const { page } = wb;
    await runPaletteCommand(page, 'Testing: Focus on Test Explorer View');
    const explorer = page.locator('.test-explorer');
    await explorer.locator('.monaco-list-row', { hasText: 'hello-world' }).waitFor();
    await explorer.locator('.monaco-list-row', { hasText: 'count-words' }).waitFor();
    await runPaletteCommand(page, 'Test: Run All Tests');
    await explorer.locator('.monaco-list-row', { hasText: 'hello-world' }).locator('.codicon-testing-passed-icon').waitFor({ timeout: 60_000 });
    await explorer.locator('.monaco-list-row', { hasText: 'count-words' }).locator('.codicon-testing-passed-icon').waitFor({ timeout: 60_000 });
    await runPaletteCommand(page, 'Notifications: Clear All Notifications');
    await wb.screenshot('runner-test-explorer');
  });

  test('the trajectory view steps through a run', async () => {
    const { page } = wb;
    await runPaletteCommand(page, 'Belay: Open Run Trajectory…');
    await pick(page, 'hello-world');
    const frame = page.frameLocator('iframe.webview.ready').last().frameLocator('#active-frame');
    await frame.locator('h1.title', { hasText: 'hello-world' }).waitFor();
    await frame.locator('.step-title', { hasText: 'Step 1' }).waitFor();
    await frame.locator('#next').click();
    await frame.locator('.step-title', { hasText: 'Step 2' }).waitFor();
    assert.match((await frame.locator('.command').textContent()) ?? '', /cat hello\.txt/);
    assert.match((await frame.locator('.step .output').textContent()) ?? '', /Hello, world!/);
    await wb.screenshot('runner-trajectory');
    await frame.locator('#previous').click();
    await frame.locator('.step-title', { hasText: 'Step 1' }).waitFor();
    await frame.locator('#jump').selectOption({ index: 2 });
    await frame.locator('.step-title', { hasText: 'Step 3' }).waitFor();
    const csp = await page.frameLocator('iframe.webview.ready').last().frameLocator('#active-frame').locator('meta[http-equiv="Content-Security-Policy"]').getAttribute('content');
    assert.match(csp ?? '', /default-src 'none'/);
  });

  test('Test Explorer runs a task with another agent’s profile and shows it red with the cause', async () => {
    const { page } = wb;
    await runPaletteCommand(page, 'Testing: Focus on Test Explorer View');
    const explorer = page.locator('.test-explorer');
    const row = explorer.locator('.monaco-list-row', { hasText: 'hello-world' });
    // The context menu sometimes closes before its click lands (focus moving from the webview): retry.
    const profiles = page.locator('.quick-input-widget .monaco-list-row[aria-label*="Demo failing agent"]');
    for (let attempt = 0; attempt < 6 && !(await profiles.first().isVisible()); attempt++) {
      await page.keyboard.press('Escape');
      await row.click({ button: 'right' });
      const item = page.locator('.context-view .action-label', { hasText: 'Execute Using Profile' });
      await item.waitFor();
      // A hover over the row can swallow the click on the menu: let it go first.
      await page.mouse.move(900, 700);
      await page.locator('.monaco-hover:visible').waitFor({ state: 'detached', timeout: 5_000 }).catch(() => undefined);
      // Choose the item from the keyboard: a click can land while the menu is still settling.
      await item.hover();
      await page.keyboard.press('Enter');
      await profiles.first().waitFor({ timeout: 5_000 }).catch(() => undefined);
    }
    await profiles.first().click();
    await row.locator('.codicon-testing-failed-icon').waitFor({ timeout: 60_000 });
    await runPaletteCommand(page, 'Test: Show Output');
    await page.locator('.monaco-workbench', { hasText: 'tests_failed: the tests failed' }).first().waitFor();
    await runPaletteCommand(page, 'Notifications: Clear All Notifications');
    await wb.screenshot('runner-test-explorer-failed');
  });

  test('the Tasks view shows each run with its result and its steps', async () => {
    const { page } = wb;
    await page.keyboard.press('Escape');
    await openBelayContainer(page);
    const task = page.locator('.sidebar .monaco-list-row[aria-label^="hello-world"]');
    // A click on a task opens its instruction; the twistie expands it.
    if ((await task.getAttribute('aria-expanded')) !== 'true') await task.locator('.monaco-tl-twistie').click();
    const runs = page.locator('.sidebar .monaco-list-row[aria-level="2"]');
    await runs.first().waitFor();
    assert.match((await runs.first().textContent()) ?? '', /reward \d/);
    // A click on a run opens its trajectory; the twistie only expands it.
    await runs.first().locator('.monaco-tl-twistie').click();
    await page.locator('.sidebar .monaco-list-row[aria-level="3"]').first().waitFor();
    await wb.screenshot('runner-tasks-view');
  });

  test('the trajectory of a failed run leads with why it failed', async () => {
    const { page } = wb;
    await runPaletteCommand(page, 'Belay: Open Run Trajectory…');
    await pickByText(page, 'failed: tests_failed · Demo failing agent');
    const frame = page.frameLocator('iframe.webview.ready').last().frameLocator('#active-frame');
    const reason = frame.locator('.run .reason');
    await reason.waitFor();
    assert.match((await reason.locator('.reason-title').textContent()) ?? '', /^Failed: the tests failed$/);
    assert.match((await reason.textContent()) ?? '', /hello\.txt holds the greeting/);
    // The reason comes before the steps, right under the title.
    const order = await frame.locator('#root').evaluate((root) => [...root.querySelectorAll('h1.title, .reason, .stepper')].map((e) => e.className));
    assert.deepEqual(order, ['title', 'reason', 'stepper']);
    assert.match((await reason.locator('.reason-output').textContent()) ?? '', /expected 'Hello, world!', found: 'Hello, moon!'/);
    await runPaletteCommand(page, 'Notifications: Clear All Notifications');
    await hidePanel(page);
    await wb.screenshot('runner-trajectory-failed');
    await runPaletteCommand(page, 'View: Close All Editors');
  });

  test('two runs compared side by side open at their first divergence, highlighted', async () => {
    const { page } = wb;
    await runPaletteCommand(page, 'Belay: Compare Runs…');
    await pickByText(page, 'failed: tests_failed · Demo failing agent');
    await pickByText(page, 'passed · Demo SDK 1.x agent');
    const frame = page.frameLocator('iframe.webview.ready').last().frameLocator('#active-frame');
    const first = frame.locator('#first-divergence');
    await first.waitFor();
    assert.match((await first.getAttribute('class')) ?? '', /\bdivergence\b/);
    assert.match((await first.locator('.row-difference').textContent()) ?? '', /^First divergence: /);
    assert.equal(await frame.locator('.row.divergence').count(), 1, 'one row is the first divergence');
    assert.match((await frame.locator('.divergence-banner').textContent()) ?? '', /The runs first diverge at step \d+: /);
    // Both runs, each with its result, agent and the reason it failed.
    assert.match((await frame.locator('.side-left').textContent()) ?? '', /failed.*agent Demo failing agent/);
    assert.match((await frame.locator('.side-right').textContent()) ?? '', /passed.*agent Demo SDK 1\.x agent/);
    await frame.locator('.side-left .reason').waitFor();
    // The first divergence is step 1 here: the page opens at the top, summaries and divergence in view.
    await runPaletteCommand(page, 'Notifications: Clear All Notifications');
    await hidePanel(page);
    await wb.screenshot('runner-compare');
    await setColorTheme(page, 'light');
    await wb.screenshot('runner-compare-light');
    await setColorTheme(page, 'dark');
    // Scrolled away, the button brings the divergence back into view.
    await frame.locator('body').evaluate(() => window.scrollTo(0, document.body.scrollHeight));
    await frame.locator('#jump-divergence').click();
    // Frame by frame until the scroll settled (a smooth scroll takes a few).
    await first.evaluate(
      (row) =>
        new Promise<void>((resolve, reject) => {
          let frames = 0;
          const check = () => {
            const top = row.getBoundingClientRect().top;
            if (top >= 0 && top < window.innerHeight) resolve();
            else if (++frames > 120) reject(new Error(`the divergence stays at ${top}, outside the view`));
            else requestAnimationFrame(check);
          };
          check();
        }),
    );
    await wb.screenshot('runner-compare-jumped');
    await runPaletteCommand(page, 'View: Close All Editors');
  });

  test('the micro-agent chat shows progress, then its message', async () => {
    const { page } = wb;
    await runPaletteCommand(page, 'Belay: Chat with Micro-agent');
    await pick(page, 'Demo micro-agent');
    await waitForTerminal(page, /you ›/);
    await page.locator('.terminal-wrapper.active .xterm').click();
    await page.keyboard.type('draw a cat');
    await page.keyboard.press('Enter');
    const text = await waitForTerminal(page, /Here is your drawing/);
    assert.ok(text.indexOf('⏳ Thinking') < text.indexOf('You said "draw a cat"'), text);
    await wb.screenshot('runner-chat');
  });
});
