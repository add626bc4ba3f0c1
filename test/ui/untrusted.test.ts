// An untrusted workspace, as VS Code's trust prompt leaves it when the person says no: Belay shows
// things (highlighting, diagnostics, cues, tasks) and runs or writes nothing, and says why.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runPaletteCommand } from '../../scripts/lib/workbench.ts';
import { cuesFrame, openBelayContainer, openWorkbench, type Workbench } from '../support/workbench.ts';

describe('an untrusted workspace', () => {
  let wb: Workbench;
  before(async () => {
    wb = await openWorkbench({ untrusted: true });
  });
  after(async () => {
    await wb?.close();
  });

  test('the views say that nothing runs here, and why', async () => {
    const { page } = wb;
    await page.locator('.statusbar-item', { hasText: 'Restricted Mode' }).first().waitFor();
    await openBelayContainer(page);
    await page.locator('.welcome-view-content', { hasText: 'This workspace is not trusted, so Belay runs no agent and no task here' }).waitFor();
    await cuesFrame(page).locator('.warning', { hasText: 'This workspace is not trusted' }).waitFor();
    await wb.screenshot('untrusted-views');
  });

  test('an answer is highlighted and checked, but Apply is locked and writes nothing', async () => {
    const { page } = wb;
    await page.keyboard.press('Control+P');
    const input = page.locator('.quick-input-widget input.input');
    await input.fill('example.agent');
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'example.agent' }).first().click();
    await page.locator('.statusbar-item', { hasText: 'CodingAgent' }).first().waitFor();
    const locked = page.locator('.monaco-editor .codelens-decoration a', { hasText: /\(untrusted workspace\)/ });
    await locked.first().waitFor();
    assert.equal(await page.locator('.monaco-editor .codelens-decoration a', { hasText: /^Apply$/ }).count(), 0, 'an unlocked Apply lens is offered');
    const target = path.join(wb.workspace, 'blocks', 'workspace', 'wordcount.py');
    assert.equal(existsSync(target), false, 'the demo answer creates wordcount.py: it must not exist yet');
    await locked.first().click();
    await page.locator('.notifications-toasts .notification-toast', { hasText: /untrusted|not trusted/i }).first().waitFor();
    assert.equal(existsSync(target), false, 'a locked Apply wrote the file');
    await wb.screenshot('untrusted-answer');
  });

  test('the palette offers no way to run a task or a micro-agent, and no run folder appears', async () => {
    const { page } = wb;
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input.input');
    const rows = page.locator('.quick-input-widget .monaco-list-row');
    // The palette filters as expected: a runner command that does not run anything is offered…
    await input.fill('>Belay: Open Run Trajectory');
    await rows.filter({ hasText: 'Open Run Trajectory' }).first().waitFor();
    // …while the ones that run are not.
    for (const title of ['Belay: Run Task with Agent', 'Belay: Chat with Micro-agent']) {
      await input.fill(`>${title}`);
      // With no exact match the palette falls back to "similar commands": the list has settled.
      await rows.filter({ hasText: 'similar commands' }).first().waitFor();
      assert.equal(await rows.filter({ hasText: title.slice('Belay: '.length) }).count(), 0, `${title} is offered`);
    }
    await page.keyboard.press('Escape');
    assert.equal(existsSync(path.join(wb.workspace, '.belay', 'runs')), false);
  });

  test("installing the 'belay' and 'cueme' commands is refused with the reason, and writes nothing", async () => {
    const { page } = wb;
    await runPaletteCommand(page, "Belay: Install 'belay' and 'cueme' Commands in PATH");
    await page.locator('.notifications-toasts .notification-toast', { hasText: 'Belay installs no command on your PATH from an untrusted workspace.' }).first().waitFor();
    assert.equal(await page.locator('.quick-input-widget .monaco-list-row', { hasText: '.local' }).count(), 0, 'the folder picker opened');
    assert.equal(existsSync(path.join(wb.host.stateDir, 'home', '.local', 'bin', 'belay')), false, 'a launcher was written');
    await wb.screenshot('untrusted-install-commands');
  });
});
