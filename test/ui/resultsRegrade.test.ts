// A job regraded from the Results view's button, in the real workbench: a job made by `belay run`
// with the flaky fixture agent, then one task's verifier made stricter and another's easier; the
// Regrade button grades the job again, and the view shows per cell the new reward beside the
// recorded one with an up/down/same mark (in words and in the cell's label), Harbor's summary
// line with the regrade's time above the matrix, and a way back to the recorded results. A
// regrade made by `belay run --regrade` in a terminal reaches the view through its job folder.
// Every part of a regraded cell lies inside it, in the dark, light and high-contrast themes and in
// a narrow view; each mark has words for a screen reader, and the keyboard reaches the cells with
// the focus in sight.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runPaletteCommand } from '../../scripts/lib/workbench.ts';
import { cacheDir, repoRoot } from '../../scripts/lib/paths.ts';
import { cellLayout } from './resultsLayout.ts';
import { openWorkbench, setColorTheme, type Workbench } from '../support/workbench.ts';

const flakyAgent = path.join(repoRoot, 'test', 'fixtures', 'runner', 'agents', 'flaky.mjs');
const cli = path.join(repoRoot, 'dist', 'cli.js');

/** Task folders whose flaky agent passes `passes` of its attempts; the tests look for "pass". */
function writeTasks(root: string, passes: Record<string, number>): void {
  for (const [name, count] of Object.entries(passes)) {
    const dir = path.join(root, name);
    mkdirSync(path.join(dir, 'tests'), { recursive: true });
    writeFileSync(path.join(dir, 'task.toml'), 'version = "1.0"\n[verifier]\ntimeout_sec = 30.0\n[agent]\ntimeout_sec = 60.0\n');
    writeFileSync(path.join(dir, 'instruction.md'), `KEY=${name} PASSES=${count}\n`);
    writeVerifier(root, name, 'grep -q pass result.txt');
  }
}

function writeVerifier(root: string, task: string, check: string): void {
  writeFileSync(path.join(root, task, 'tests', 'test.sh'), `#!/bin/sh\n${check}\n`, { mode: 0o755 });
}

describe('a job regraded from the Results view', () => {
  let wb: Workbench;
  let scratch: string;
  let tasks: string;
  let jobDir: string;
  before(async () => {
    // Regrades use the backend runs use: the local one here, as the job was run.
    wb = await openWorkbench({ theme: 'dark', settings: { 'belay.runner.backend': 'local' } });
    scratch = mkdtempSync(path.join(cacheDir, 'ui-regrade-'));
    const jobs = path.join(wb.workspace, '.belay', 'jobs');
    mkdirSync(jobs, { recursive: true });
    mkdirSync(path.join(scratch, 'counters'), { recursive: true });
    tasks = path.join(scratch, 'tasks');
    writeTasks(tasks, { 'gets-stricter': 2, 'gets-easier': 0, 'stays-the-same': 2 });
    const args = [cli, 'run', tasks, '--agent', `'${process.execPath}' '${flakyAgent}'`, '--protocol', 'sdk1', '--backend', 'local', '--attempts', '2', '--concurrency', '2', '--out', jobs, '--json',
      '--env', `BELAY_FLAKY_DIR=${path.join(scratch, 'counters')}`, '--env', `BELAY_FLAKY_LOG=${path.join(scratch, 'agents.log')}`];
    try {
      execFileSync(process.execPath, args, { cwd: wb.workspace, stdio: 'pipe', timeout: 120_000 });
    } catch (error) {
      // Exit 1: gets-easier failed, as meant.
      if ((error as { status?: number }).status !== 1) throw error;
    }
    const made = readdirSync(jobs).filter((name) => existsSync(path.join(jobs, name, 'job.json')));
    assert.equal(made.length, 1);
    jobDir = path.join(jobs, made[0]!);
    // The verifiers change after the job: one asks for what the agent never wrote, one asks nothing.
    writeVerifier(tasks, 'gets-stricter', 'grep -q never-written result.txt');
    writeVerifier(tasks, 'gets-easier', 'exit 0');
  });
  after(async () => {
    await wb?.close();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  const frame = () => wb.page.frameLocator('iframe.webview.ready').last().frameLocator('#active-frame');
  const row = (task: string) => frame().locator('.body .row', { hasText: task });

  test('the Regrade button grades the job again and the view shows what went up or down per cell, with the summary and its time', async () => {
    await runPaletteCommand(wb.page, 'Belay: Open Results');
    const f = frame();
    await f.locator('.summary', { hasText: /6\/6 trials done, 4 passed, 2 failed/ }).waitFor({ timeout: 30_000 });
    assert.equal(await f.locator('.regrade-banner').count(), 0, 'never regraded: nothing said');
    assert.equal(await f.locator('.cell.trial .regrade').count(), 0);
    await f.locator('button', { hasText: 'Regrade' }).click();
    const banner = f.locator('.regrade-banner.shown');
    await banner.waitFor({ timeout: 60_000 });
    assert.equal(await banner.locator('.regrade-counts').textContent(), '4 changed (2 up, 2 down), mean 0.667 → 0.667');
    assert.match((await banner.locator('.regrade-time').textContent()) ?? '', /^Regraded \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC:$/);
    // Per cell: the recorded reward, then the new one and the change in words.
    for (const [task, recorded, now, mark, word] of [
      ['gets-stricter', '1.00', '→ 0.00', '▼ down', 'down'],
      ['gets-easier', '0.00', '→ 1.00', '▲ up', 'up'],
      ['stays-the-same', '1.00', '→ 1.00', '= same', 'unchanged'],
    ] as const) {
      const cells = row(task).locator('.cell.trial');
      assert.equal(await cells.count(), 2, task);
      for (const cell of await cells.all()) {
        assert.equal(await cell.locator('.reward').textContent(), recorded, task);
        assert.equal(await cell.locator('.regrade-after').textContent(), now, task);
        assert.equal(await cell.locator('.regrade-change').textContent(), mark, task);
        // The label says all the cell shows: the grade, the regrade in words, the steps and the time.
        assert.match((await cell.getAttribute('aria-label')) ?? '', new RegExp(`: (passed|failed), reward ${recorded.replace('.', '\\.')}, regraded: ${recorded.replace('.', '\\.')} ${now.replace('.', '\\.')}, ${word}, \\d+ steps?, \\d+\\.\\ds$`), task);
      }
    }
    assert.ok(existsSync(path.join(jobDir, 'regrade.json')), 'the job keeps its latest regrade’s report');
    await wb.screenshot('results-regrade');
  });

  test('every part of a regraded cell lies inside it: the grade and its mark on one line, the steps and time on the next, in each theme and in a narrow view', async () => {
    const f = frame();
    const cells = f.locator('.body .cell.trial');
    const fits = async (where: string) => {
      const layout = await cells.evaluateAll(cellLayout);
      assert.equal(layout.cells, 6, where);
      assert.deepEqual(layout.outside, [], where);
      assert.deepEqual(layout.cut, [], `${where}: nothing is cut at this width`);
    };
    // Two lines: the mark on the grade's line, the facts below it.
    for (const cell of await cells.all()) {
      const [change, facts] = [await cell.locator('.regrade-change').boundingBox(), await cell.locator('.facts').boundingBox()];
      assert.ok(change && facts && facts.y >= change.y + change.height - 1, 'the facts are on a line below the mark');
    }
    await fits('dark');
    for (const [theme, kind] of [['light', 'vscode-light'], ['highContrast', 'vscode-high-contrast']] as const) {
      await setColorTheme(wb.page, theme);
      await f.locator(`body.${kind}`).waitFor();
      await fits(theme);
      await wb.screenshot(`results-regrade-${theme === 'highContrast' ? 'high-contrast' : theme}`);
    }
    await setColorTheme(wb.page, 'dark');
    await f.locator('body.vscode-dark').waitFor();
    // A narrow window: the editor about 380 px wide beside the side bar.
    await wb.page.setViewportSize({ width: 720, height: 700 });
    const page = await (await f.locator('body').elementHandle())!.ownerFrame();
    await page!.waitForFunction(() => document.documentElement.clientWidth < 500);
    await fits('narrow');
    // The task's column gave way to the trials', and the cells scroll sideways whole.
    const [task, trial] = [await f.locator('.body .row .cell.task').first().boundingBox(), await cells.first().boundingBox()];
    assert.ok(task && trial && task.width < trial.width, `the task column (${task?.width}px) is narrower than a trial's (${trial?.width}px)`);
    await wb.screenshot('results-regrade-narrow');
    await wb.page.setViewportSize({ width: 1280, height: 800 });
    await page!.waitForFunction(() => document.documentElement.clientWidth > 700);
  });

  test('each mark has words for a screen reader, and the keyboard reaches the regrade and the cells with the focus in sight', async () => {
    const f = frame();
    // Signs and icons are pictures: hidden from screen readers, the words beside them say them.
    const pictures = await f.locator('.codicon, .regrade-sign').evaluateAll((els) => els.filter((e) => e.getAttribute('aria-hidden') !== 'true').map((e) => e.className));
    assert.deepEqual(pictures, []);
    assert.deepEqual(
      (await f.locator('.body .row', { hasText: 'gets-easier' }).locator('.regrade-change').evaluateAll((els) => els.map((e) => [...e.childNodes].filter((n) => !(n instanceof HTMLElement && n.getAttribute('aria-hidden') === 'true')).map((n) => n.textContent).join('')))),
      ['up', 'up'],
    );
    // The accessible names a screen reader reads.
    assert.equal(await f.getByRole('region', { name: 'Latest regrade' }).count(), 1);
    assert.equal(await f.getByRole('gridcell', { name: /^gets-stricter, Attempt 1: passed, reward 1\.00, regraded: 1\.00 → 0\.00, down, / }).count(), 1);
    assert.equal(await f.getByRole('gridcell', { name: /^gets-easier, Attempt 2: failed, reward 0\.00, regraded: 0\.00 → 1\.00, up, / }).count(), 1);
    // Tab from the filter box: the regrade's button, then the matrix's focused cell.
    await f.locator('#find').focus();
    const reached: string[] = [];
    for (let i = 0; i < 12 && !reached.at(-1)?.startsWith('cell:'); i++) {
      await wb.page.keyboard.press('Tab');
      reached.push(await f.locator(':focus').evaluate((e) => (e.classList.contains('trial') ? `cell: ${e.getAttribute('aria-label')}` : (e.textContent ?? '').trim())));
    }
    assert.ok(reached.includes('Show recorded results'), reached.join(' | '));
    assert.match(reached.at(-1) ?? '', /^cell: \S+, Attempt 1: /, reached.join(' | '));
    const outline = async () => f.locator(':focus').evaluate((e) => {
      const style = getComputedStyle(e);
      return { style: style.outlineStyle, width: parseFloat(style.outlineWidth), color: style.outlineColor };
    });
    const seen = await outline();
    assert.ok(seen.style !== 'none' && seen.width >= 1 && seen.color !== 'rgba(0, 0, 0, 0)', `the focused cell shows it: ${JSON.stringify(seen)}`);
    await wb.page.keyboard.press('ArrowRight');
    assert.match((await f.locator(':focus').getAttribute('aria-label')) ?? '', /, Attempt 2: .*regraded: /);
    await wb.screenshot('results-regrade-focus-cell');
    for (let i = 0; i < 3 && (await f.locator(':focus').textContent())?.trim() !== 'Show recorded results'; i++) await wb.page.keyboard.press('Shift+Tab');
    assert.equal((await f.locator(':focus').textContent())?.trim(), 'Show recorded results');
    const button = await outline();
    assert.ok(button.style !== 'none' && button.width >= 1, `the focused button shows it: ${JSON.stringify(button)}`);
    await wb.screenshot('results-regrade-focus-button');
  });

  test('goes back to the recorded results and to the regrade again', async () => {
    const f = frame();
    await f.locator('button', { hasText: 'Show recorded results' }).click();
    await f.locator('.regrade-banner:not(.shown)').waitFor();
    assert.equal(await f.locator('.cell.trial .regrade').count(), 0);
    assert.match((await f.locator('.regrade-banner').textContent()) ?? '', /Latest regrade .* UTC:4 changed \(2 up, 2 down\), mean 0\.667 → 0\.667\(the cells show the recorded results\)/);
    assert.equal(await row('gets-stricter').locator('.cell.trial.passed').count(), 2, 'as recorded');
    // One line again, every part inside its cell.
    assert.deepEqual((await f.locator('.body .cell.trial').evaluateAll(cellLayout)).outside, []);
    await f.locator('button', { hasText: 'Show regrade' }).click();
    await f.locator('.regrade-banner.shown').waitFor();
    assert.equal(await f.locator('.cell.trial .regrade').count(), 6);
  });

  test('follows a regrade made by `belay run --regrade` in a terminal', async () => {
    // Back as it was: gets-stricter now grades as recorded.
    writeVerifier(tasks, 'gets-stricter', 'grep -q pass result.txt');
    execFileSync(process.execPath, [cli, 'run', '--regrade', jobDir, '--backend', 'local'], { cwd: wb.workspace, stdio: 'pipe', timeout: 120_000 });
    const f = frame();
    await f.locator('.regrade-counts', { hasText: '2 changed (2 up, 0 down), mean 0.667 → 1.000' }).waitFor({ timeout: 30_000 });
    assert.deepEqual(await row('gets-stricter').locator('.regrade-change').allTextContents(), ['= same', '= same']);
    assert.deepEqual(await row('gets-easier').locator('.regrade-change').allTextContents(), ['▲ up', '▲ up']);
  });
});
