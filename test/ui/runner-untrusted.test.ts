// The task runner in an untrusted workspace: nothing can be started, and the Tasks view says why.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { openWorkbench, type Workbench } from './lib.ts';

describe('the task runner in an untrusted workspace', () => {
  let wb: Workbench;
  before(async () => {
    wb = await openWorkbench({ untrusted: true });
  });
  after(async () => {
    await wb?.close();
  });

  test('the palette offers no way to run a task or a micro-agent, and no run folder appears', async () => {
    const { page } = wb;
    await page.locator('.statusbar-item', { hasText: 'Restricted Mode' }).first().waitFor();
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
      await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'similar commands' }).first().waitFor();
      assert.equal(await rows.filter({ hasText: title.slice('Belay: '.length) }).count(), 0, `${title} is offered`);
    }
    await page.keyboard.press('Escape');
    assert.equal(existsSync(path.join(wb.workspace, '.belay', 'runs')), false);
  });
});
