// Belay's MCP server in the real workbench: VS Code's own "MCP: List Servers" shows it, with no
// configuration, as chat agents will find it.
import { after, before, describe, test } from 'node:test';
import { runPaletteCommand } from '../../scripts/lib/workbench.ts';
import { openWorkbench, type Workbench } from '../support/workbench.ts';

describe('Belay Cues as an MCP server', () => {
  let wb: Workbench;
  before(async () => {
    wb = await openWorkbench();
  });
  after(async () => {
    await wb?.close();
  });

  test('"MCP: List Servers" lists Belay Cues, provided by the extension', async () => {
    const { page } = wb;
    // The provider registers at activation: wait for Belay's entry in the activity bar first.
    await page.locator('.activitybar .action-item a[aria-label^="Belay"]').first().waitFor();
    await runPaletteCommand(page, 'MCP: List Servers');
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'Belay Cues' }).first().waitFor();
    await wb.screenshot('cues-mcp-list-servers');
  });

  test('VS Code starts it and discovers its four tools', async () => {
    const { page } = wb;
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'Belay Cues' }).first().click();
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'Start Server' }).first().click();
    // VS Code shows the server's log: it ran Belay's command and listed its tools.
    await page.locator('.output-view, .monaco-editor', { hasText: 'Discovered 4 tools' }).first().waitFor({ timeout: 30_000 });
    await runPaletteCommand(page, 'MCP: List Servers');
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: /Belay Cues\s*Running/ }).first().waitFor();
    await wb.screenshot('cues-mcp-running');
    await page.keyboard.press('Escape');
  });
});
