import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { cuesFrame, openBelayContainer, openWorkbench, type Workbench } from '../support/workbench.ts';

for (const theme of ['dark', 'light'] as const) {
  describe(`the Belay container (${theme} theme)`, () => {
    let wb: Workbench;
    before(async () => {
      wb = await openWorkbench({ theme });
    });
    after(async () => {
      await wb?.close();
    });

    test('shows Cues, Tasks and Sessions: an empty mailbox, the demo tasks and the demo session', async () => {
      const { page } = wb;
      await openBelayContainer(page);
      const headers = page.locator('.sidebar .pane-header h3.title');
      await headers.filter({ hasText: 'Sessions' }).waitFor();
      const titles = (await headers.allTextContents()).map((t) => t.trim().toUpperCase());
      assert.deepEqual(titles, ['CUES', 'TASKS', 'SESSIONS']);

      // The Cues webview rendered its empty state through the typed protocol (ready -> state).
      const cues = cuesFrame(page);
      await cues.getByRole('heading', { name: 'No agent is waiting for you' }).waitFor();
      const mailbox = await cues.locator('.detail code').textContent();
      assert.match(mailbox ?? '', /\.cue$/, 'the empty state names the mailbox folder');

      // The trees show what the demo workspace holds: its tasks and its session (blocks/).
      await page.locator('.sidebar .monaco-list-row[aria-label^="hello-world"]').waitFor();
      await page.locator('.sidebar .monaco-list-row', { hasText: 'Write a word-count script' }).waitFor();
      await wb.screenshot(`belay-container-${theme}`);
    });

    test('the Cues webview runs under a strict content security policy', async () => {
      const csp = await cuesFrame(wb.page).locator('meta[http-equiv="Content-Security-Policy"]').getAttribute('content');
      assert.ok(csp, 'no CSP meta tag');
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /script-src 'nonce-[A-Za-z0-9+/=]{16,}'/);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    });
  });
}
