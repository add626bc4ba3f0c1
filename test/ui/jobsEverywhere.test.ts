// Runs of jobs where single runs are, and the quiet details, tried as a new user would in the real
// workbench: a failed single run of hello-world, then a job of 3 attempts that all pass (both by
// `belay run`); the Tasks view shows the job's outcome, Compare Runs offers the job's trials by
// job and attempt and counts every difference it shows (the demo's moon against world), the
// trajectory tab is titled by its run; and a Cues panel whose cue.db is a folder says so plainly.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runPaletteCommand } from '../../scripts/lib/workbench.ts';
import { cacheDir, repoRoot } from '../../scripts/lib/paths.ts';
import { cuesFrame, openBelayContainer, openWorkbench, type Workbench } from '../support/workbench.ts';
import { pastSecondOf } from '../support/clock.ts';

const cli = path.join(repoRoot, 'dist', 'cli.js');

/** `belay run tasks/hello-world` with the demo's SDK 1.x agent (DEMO_MODE=wrong writes the moon). */
function belayRun(workspace: string, extra: string[]): void {
  const args = [cli, 'run', 'tasks/hello-world', '--agent', `'${process.execPath}' agents/sdk1-agent.mjs`, '--protocol', 'sdk1', '--backend', 'local', ...extra];
  try {
    execFileSync(process.execPath, args, { cwd: workspace, stdio: 'pipe', timeout: 120_000 });
  } catch (error) {
    // Exit 1: the run failed, as meant for the moon.
    if ((error as { status?: number }).status !== 1) throw error;
  }
}

describe('jobs where runs are, in the workbench', () => {
  let wb: Workbench;
  let mailboxHome: string;
  before(async () => {
    // The Cues panel's mailbox: a folder where cue.db, the file, should be.
    mailboxHome = mkdtempSync(path.join(cacheDir, 'ui-cuedb-folder-'));
    mkdirSync(path.join(mailboxHome, 'cue.db'));
    wb = await openWorkbench({ theme: 'dark', settings: { 'belay.cues.home': mailboxHome } });
    belayRun(wb.workspace, ['--env', 'DEMO_MODE=wrong']);
    // Run ids and job ids start with the time to the second: the job must start after the run.
    await pastSecondOf(readdirSync(path.join(wb.workspace, '.belay', 'runs')).sort().at(-1)!);
    belayRun(wb.workspace, ['--attempts', '3', '--concurrency', '3']);
  });
  after(async () => {
    await wb?.close();
    if (mailboxHome) rmSync(mailboxHome, { recursive: true, force: true });
  });

  const jobId = () => readdirSync(path.join(wb.workspace, '.belay', 'jobs'))[0]!;

  test('the Tasks view shows hello-world green from the job, 3/3 passed, its trials by attempt', async () => {
    const { page } = wb;
    await openBelayContainer(page);
    const row = page.locator('.sidebar .monaco-list-row[aria-label^="hello-world"]').first();
    await row.waitFor();
    await row.locator('.label-description', { hasText: 'job: 3/3 passed' }).waitFor();
    assert.equal(await row.locator('.codicon-pass').count(), 1, 'green: every attempt of the latest job passed');
    // The twistie opens the task's runs (a click on the name opens its instruction).
    await row.locator('.monaco-tl-twistie').click();
    await page.locator('.sidebar .monaco-list-row', { hasText: 'attempt 3 of 3' }).first().waitFor();
    assert.equal(await page.locator('.sidebar .monaco-list-row', { hasText: /Passed · attempt \d of 3 · / }).count(), 3);
    await wb.screenshot('jobs-tasks-view');
  });

  test('Compare Runs lists the job’s trials by job and attempt, and counts every difference it shows', async () => {
    const { page } = wb;
    await runPaletteCommand(page, 'Belay: Compare Runs…');
    const rows = page.locator('.quick-input-widget .monaco-list-row');
    await rows.first().waitFor();
    const trialRows = page.locator('.quick-input-widget .monaco-list-row', { hasText: `in job ${jobId()}` });
    await trialRows.first().waitFor();
    const texts = await trialRows.allTextContents();
    for (const attempt of [1, 2, 3]) assert.ok(texts.some((t) => t.includes(`attempt ${attempt} of 3 in job ${jobId()}`)), texts.join('\n'));
    await wb.screenshot('jobs-compare-picker');
    // A: the moon (the single run); B: attempt 1 of the job.
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'failed: tests_failed' }).first().click();
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: `attempt 1 of 3 in job ${jobId()}` }).first().click();
    const frame = page.frameLocator('iframe.webview.ready').last().frameLocator('#active-frame');
    const banner = frame.locator('.divergence-banner');
    await banner.waitFor();
    // The page opens at the first divergence; for the picture, back to its top (two frames later it is painted).
    await frame.locator('.row.divergence').waitFor({ state: 'visible' });
    await frame.locator('body').evaluate(() => {
      window.scrollTo(0, 0);
      return new Promise<void>((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve())));
    });
    await wb.screenshot('jobs-compare-banner');
    const text = (await banner.textContent()) ?? '';
    const counted = Number(/(\d+) of \d+ aligned steps? differ/.exec(text)?.[1]);
    // The page counts what it marks: every row marked as different is counted, and the reverse.
    assert.equal(counted, await frame.locator('.row.differs').count(), text);
    // The moon against the world: a different command (step 1), the same `cat` with a different output, a different last message.
    assert.match(text, /in the command/);
    assert.match(text, /in the output/);
    assert.match(text, /in the message/);
    assert.ok(counted >= 3, text);
    const outputRow = frame.locator('.row.differs', { hasText: 'the output' }).first();
    await outputRow.scrollIntoViewIfNeeded();
    assert.match((await outputRow.locator('pre.output.changed').first().textContent()) ?? '', /Hello, (moon|world)!/);
    await wb.screenshot('jobs-compare-counts');
  });

  test('a trajectory tab is titled by its run: task, agent, time', async () => {
    const { page } = wb;
    await runPaletteCommand(page, 'View: Close All Editors');
    await runPaletteCommand(page, 'Belay: Open Run Trajectory…');
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: `attempt 2 of 3 in job ${jobId()}` }).first().click();
    const tab = page.locator('.tabs-container .tab', { hasText: /^Run: hello-world · sdk1 \(belay run\) · .*\d:\d\d:\d\d/ });
    await tab.first().waitFor();
    // The run itself, not an empty page, in the picture.
    await page.frameLocator('iframe.webview.ready').last().frameLocator('#active-frame').locator('h1').first().waitFor();
    await wb.screenshot('jobs-trajectory-tab');
  });

  test('the Cues panel says plainly that cue.db is a folder', async () => {
    const { page } = wb;
    await runPaletteCommand(page, 'View: Close All Editors');
    // The Belay container is open from the tests above (a click on its icon would close it).
    if (!(await page.locator('.sidebar .composite.title h2', { hasText: /belay/i }).isVisible())) await openBelayContainer(page);
    const cues = page.locator('.sidebar .pane-header', { hasText: /^Cues/ }).first();
    if ((await cues.getAttribute('aria-expanded')) === 'false') await cues.click();
    const banner = cuesFrame(page).locator('.banner');
    await banner.waitFor();
    const text = (await banner.textContent()) ?? '';
    assert.match(text, new RegExp(`${path.join(mailboxHome, 'cue.db').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is a folder, not a mailbox file: move the folder aside`));
    assert.doesNotMatch(text, /EISDIR|unexpected error/);
    await wb.screenshot('jobs-cues-cuedb-folder');
  });
});
