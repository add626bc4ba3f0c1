// Shared set-up for UI tests: a real code-server with Belay under development, a headless browser
// on its workbench, screenshots into test-results/ui/.
import type { Page } from 'playwright-core';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { startHost, type Host } from '../../scripts/lib/host.ts';
import { cacheDir, repoRoot, resultsDir } from '../../scripts/lib/paths.ts';
import { launchBrowser, runPaletteCommand, waitForWorkbench, type Browser } from '../../scripts/lib/workbench.ts';

export interface Workbench {
  host: Host;
  browser: Browser;
  page: Page;
  workspace: string;
  screenshot(name: string): Promise<string>;
  close(): Promise<void>;
}

/** The themes' labels in "Preferences: Color Theme". */
export const themes = { dark: 'Dark Modern', light: 'Light Modern', highContrast: 'Dark High Contrast' } as const;
/** The class the workbench carries for each theme's kind. */
const themeClasses: Record<keyof typeof themes, string> = { dark: 'vs-dark', light: 'vs', highContrast: 'hc-black' };

export async function openWorkbench(options: { theme?: 'dark' | 'light'; settings?: Record<string, unknown>; untrusted?: boolean; testModels?: boolean } = {}): Promise<Workbench> {
  await mkdir(cacheDir, { recursive: true });
  const workspace = await mkdtemp(path.join(cacheDir, 'ui-ws-'));
  await cp(path.join(repoRoot, 'demo'), workspace, { recursive: true });
  const theme = options.theme ?? 'dark';
  // An Extension Development Host in the browser does not read the server's user settings:
  // the test's settings go into the workspace, over the demo's own. The Get Started walkthrough
  // that the demo opens on its first start stays shut unless a test asks for it.
  const settings = { 'belay.walkthrough.openInDemo': false, ...options.settings };
  const file = path.join(workspace, '.vscode', 'settings.json');
  const demo = existsSync(file) ? (JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>) : {};
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, JSON.stringify({ ...demo, ...settings }, null, 2));
  const host = await startHost({ folder: workspace, workspaceTrust: options.untrusted ?? false });
  let browser: Browser | undefined;
  let page: Page;
  try {
    // The test chat model (test/fixtures/lm-provider), installed beside Belay; its provider API is proposed in 1.103.
    if (options.testModels) await cp(path.join(repoRoot, 'test', 'fixtures', 'lm-provider'), path.join(host.extensionsDir, 'belay-test.belay-test-models-0.0.1'), { recursive: true });
    browser = await launchBrowser({ colorScheme: theme });
    page = await browser.context.newPage();
    // The first load compiles the workbench on a machine shared with other tests: give it time.
    await page.goto(host.url(workspace, [['extensionDevelopmentPath', host.remoteUri(repoRoot)], ...(options.testModels ? [['enableProposedApi', ''] as [string, string]] : [])]), { timeout: 120_000 });
    if (options.untrusted) {
      // VS Code asks on first open; answer as a careful person does with a folder from elsewhere.
      await page.locator('.monaco-dialog-box a.monaco-button', { hasText: "No, I don't trust the authors" }).click();
    }
    await waitForWorkbench(page);
    await setColorTheme(page, theme);
  } catch (error) {
    // Nothing may outlive a failed start: a running server would keep the test process alive for ever.
    await browser?.close();
    await host.stop();
    await rm(workspace, { recursive: true, force: true });
    await rm(host.stateDir, { recursive: true, force: true });
    throw error;
  }
  const shots = path.join(resultsDir, 'ui');
  await mkdir(shots, { recursive: true });
  return {
    host,
    browser,
    page,
    workspace,
    async screenshot(name) {
      await page.mouse.move(900, 700); // no hover tooltip in the picture
      await page.locator('.monaco-hover:visible').waitFor({ state: 'detached', timeout: 5_000 }).catch(() => undefined);
      const file = path.join(shots, `${name}.png`);
      await page.screenshot({ path: file });
      return file;
    },
    async close() {
      await browser.close();
      await host.stop();
      await rm(workspace, { recursive: true, force: true });
      await rm(host.stateDir, { recursive: true, force: true });
    },
  };
}

/**
 * Picks the colour theme the way a person does, through "Preferences: Color Theme". (An Extension
 * Development Host in the browser starts in Light+ whatever the settings say.)
 */
export async function setColorTheme(page: Page, theme: keyof typeof themes): Promise<void> {
  await runPaletteCommand(page, 'Preferences: Color Theme');
  const input = page.locator('.quick-input-widget input.input');
  await input.fill(themes[theme]);
  await page.locator(`.quick-input-widget .monaco-list-row[aria-label^="${themes[theme]}"]`).first().waitFor();
  await page.keyboard.press('Enter');
  // The workbench carries the theme's kind as a class: vs-dark for dark themes, vs for light ones, hc-black for dark high contrast.
  await page.locator(`.monaco-workbench.${themeClasses[theme]}`).waitFor({ state: 'attached' });
}

/** Opens the Belay container from the activity bar. */
export async function openBelayContainer(page: Page): Promise<void> {
  await page.locator('.activitybar .action-item a[aria-label^="Belay"], .activitybar .action-label[aria-label^="Belay"]').first().click();
  await page.locator('.sidebar .composite.title h2', { hasText: /belay/i }).waitFor();
}

/** The Cues webview's document (two nested iframes). */
export function cuesFrame(page: Page) {
  return page.frameLocator('iframe.webview.ready').first().frameLocator('#active-frame');
}

/** The text of the visible terminal (the DOM renderer: GPU acceleration is off in these settings). */
export async function terminalText(page: Page): Promise<string> {
  return (await page.locator('.terminal-wrapper.active .xterm-rows').first().textContent()) ?? '';
}

/** What waitForTerminal reads in the page. */
interface PageGlobals {
  document: { querySelector(selector: string): { textContent: string | null } | null };
}

export async function waitForTerminal(page: Page, pattern: RegExp, timeout = 30_000): Promise<string> {
  try {
    await page.waitForFunction(
      // Runs in the page (this file is also compiled without the DOM's types, for the benches).
      (source) => new RegExp(source).test((globalThis as unknown as PageGlobals).document.querySelector('.terminal-wrapper.active .xterm-rows')?.textContent ?? ''),
      pattern.source,
      { timeout },
    );
  } catch (error) {
    throw new Error(`the terminal never showed ${pattern}; it shows: ${await terminalText(page).catch(() => '(no terminal)')}`, { cause: error });
  }
  return terminalText(page);
}

/** Picks the row of the open quick pick whose label holds `label`. */
export async function pick(page: Page, label: string): Promise<void> {
  const input = page.locator('.quick-input-widget input.input');
  await input.waitFor();
  await input.fill(label);
  const row = page.locator(`.quick-input-widget .monaco-list-row[aria-label*="${label}"]`).first();
  await row.waitFor();
  await row.click();
}
