// Drives the real VS Code workbench (served by code-server) in Debian's headless Chromium.
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { mkdtemp, rm } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Host } from './host.ts';
import { ensureSystemPackages } from './system.ts';

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchBrowser(options: { width?: number; height?: number; colorScheme?: 'dark' | 'light' } = {}): Promise<Browser> {
  ensureSystemPackages(['chromium']);
  const profile = await mkdtemp(path.join(os.tmpdir(), 'belay-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    viewport: { width: options.width ?? 1280, height: options.height ?? 800 },
    colorScheme: options.colorScheme ?? 'dark',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** Waits until the workbench has drawn itself and Belay's activity-bar entry is there. */
export async function waitForWorkbench(page: Page, timeoutMs = 60_000): Promise<void> {
  await page.locator('.monaco-workbench').waitFor({ timeout: timeoutMs });
  await page.locator('.activitybar .action-item a[aria-label^="Belay"], .activitybar .action-label[aria-label^="Belay"]').first().waitFor({ timeout: timeoutMs });
}

/** Runs a command from the palette by its full title ("Belay: Show Log"). */
export async function runPaletteCommand(page: Page, title: string): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt++) {
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input.input');
    await input.waitFor();
    const row = page.locator(`.quick-input-widget .monaco-list-row[aria-label^="${title.replace(/"/g, '\\"')}"]`).first();
    try {
      // The palette can close under the test (a webview taking the focus as it loads): then it is
      // opened again, as a person would press F1 again.
      await input.fill(`>${title}`, { timeout: 5_000 });
      await row.waitFor({ timeout: 5_000 });
      await row.click();
      return;
    } catch {
      await page.keyboard.press('Escape');
    }
  }
  throw new Error(`command "${title}" did not appear in the palette`);
}

export interface ExtensionTestRun {
  exitCode: number;
  consoleLines: string[];
}

/**
 * Loads the extension under development into the host's workbench and runs the test module at
 * `testsPath` in its extension host; resolves with the code the workbench exits with.
 */
export async function runExtensionTests(
  host: Host,
  options: { extensionPath: string; testsPath: string; folder: string; timeoutMs?: number; enableProposedApi?: boolean },
): Promise<ExtensionTestRun> {
  const browser = await launchBrowser();
  const consoleLines: string[] = [];
  try {
    const page = await browser.context.newPage();
    page.on('console', (m) => consoleLines.push(m.text()));
    let exit!: (code: number) => void;
    const exited = new Promise<number>((resolve) => (exit = resolve));
    await page.exposeFunction('codeAutomationExit', (code: number) => exit(code));
    const url = host.url(options.folder, [
      ['extensionDevelopmentPath', host.remoteUri(options.extensionPath)],
      ['extensionTestsPath', host.remoteUri(options.testsPath)],
      ...(options.enableProposedApi ? [['enableProposedApi', ''] as [string, string]] : []),
    ]);
    // A loaded machine (the suites run side by side) can take well past the default 30 s to serve the workbench.
    await page.goto(url, { timeout: 180_000 });
    const timeoutMs = options.timeoutMs ?? 300_000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<number>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`extension tests did not finish within ${timeoutMs / 1000} s`)), timeoutMs);
    });
    try {
      return { exitCode: await Promise.race([exited, timeout]), consoleLines };
    } finally {
      clearTimeout(timer);
    }
  } finally {
    await browser.close();
  }
}
