// The packaged extension, installed into a separate VS Code as a user installs it (what `npm start`
// does), works without the development checkout.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { installVsix, startHost, type Host } from '../../scripts/lib/host.ts';
import { packagedFiles, packageVsix, stagingDir } from '../../scripts/lib/package.ts';
import { cacheDir, repoRoot, resultsDir } from '../../scripts/lib/paths.ts';
import { launchBrowser, waitForWorkbench, type Browser } from '../../scripts/lib/workbench.ts';
import { cuesFrame, openBelayContainer } from '../support/workbench.ts';

test('the .vsix holds only what runs', async () => {
  const files = await packagedFiles();
  for (const required of ['package.json', 'README.md', 'LICENSE', 'dist/extension.cjs', 'dist/cli.js', 'dist/cueme.js', 'dist/webviews/cues.js', 'media/belay.svg']) {
    assert.ok(files.includes(required), `${required} is missing from the .vsix`);
  }
  const allowed = /^(package\.json|README\.md|LICENSE|language-configuration\.json|dist\/.+|syntaxes\/.+|media\/.+|screenshots\/.+\.png)$/;
  assert.deepEqual(files.filter((f) => !allowed.test(f) || f.endsWith('.map') || f.endsWith('.ts')), []);
  // The Marketplace page is the user-facing README, not the developers' one.
  const readme = await readFile(path.join(stagingDir(), 'README.md'), 'utf8');
  assert.match(readme, /## Settings/);
  assert.doesNotMatch(readme, /npm test/);
});

test('every file in the .vsix is used: named by package.json, the README, or the code that loads it', async () => {
  const files = await packagedFiles();
  const staging = stagingDir();
  const texts = await Promise.all(
    files.filter((f) => /\.(json|md|c?js|css)$/.test(f)).map(async (f) => ({ file: f, text: await readFile(path.join(staging, f), 'utf8') })),
  );
  const unused = files.filter((file) => {
    if (['package.json', 'README.md', 'LICENSE', 'dist/package.json'].includes(file)) return false;
    const base = path.posix.basename(file);
    // A webview app (`dist/webviews/<app>.js` and `.css`) is loaded by its name, which the host code quotes.
    const app = /^dist\/webviews\/(\w+)\.(js|css)$/.exec(file)?.[1];
    const named = texts.some((t) => t.file !== file && (t.text.includes(file) || t.text.includes(base)));
    const appNamed = app !== undefined && texts.some((t) => t.file.startsWith('dist/') && !t.file.startsWith('dist/webviews/') && [`"${app}"`, `'${app}'`].some((q) => t.text.includes(q)));
    return !named && !appNamed;
  });
  assert.deepEqual(unused, []);
});

describe('the .vsix installed into a separate VS Code', () => {
  let dir: string;
  let host: Host;
  let browser: Browser;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'belay-vsix-'));
    const vsix = await packageVsix(dir);
    const stateDir = await mkdtemp(path.join(cacheDir, 'vsix-host-'));
    await installVsix(vsix, stateDir);
    // The installed extension reads user settings: the demo's Get Started walkthrough, which opens by
    // itself on its first start (walkthroughFirstStart.test.ts), stays shut so the Cues panel's page
    // is the only webview here.
    host = await startHost({ folder: path.join(repoRoot, 'demo'), stateDir, settings: { 'belay.walkthrough.openInDemo': false } });
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await host?.stop();
    if (host) await rm(host.stateDir, { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
  });

  test('shows the Belay container with its three views, the Cues panel rendered', async () => {
    const page = await browser.context.newPage();
    await page.goto(host.url(path.join(repoRoot, 'demo')), { timeout: 180_000 });
    await waitForWorkbench(page);
    await openBelayContainer(page);
    const headers = page.locator('.sidebar .pane-header h3.title');
    await headers.nth(2).waitFor();
    assert.deepEqual((await headers.allTextContents()).map((t) => t.trim().toUpperCase()), ['CUES', 'TASKS', 'SESSIONS']);
    // The webview app ran: its document has content built by the script, not just the HTML shell.
    try {
      await cuesFrame(page).locator('#root:not(:empty)').waitFor({ state: 'attached' });
    } finally {
      await mkdir(path.join(resultsDir, 'ui'), { recursive: true });
      await page.screenshot({ path: path.join(resultsDir, 'ui', 'vsix-installed.png') });
    }
  });
});
