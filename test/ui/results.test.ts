// The Results view tried as a new user would, in the real workbench: two jobs made by
// `belay run --attempts` with the flaky fixture agent (some tasks pass on some attempts only),
// the matrix with pass@1 / pass@k and the flaky task marked, a filter, the comparison of the two
// jobs (what broke, what was fixed), a cell opened from the keyboard into its trajectory.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runPaletteCommand } from '../../scripts/lib/workbench.ts';
import { cacheDir, repoRoot } from '../../scripts/lib/paths.ts';
import { cellLayout } from './resultsLayout.ts';
import { openWorkbench, setColorTheme, type Workbench } from '../support/workbench.ts';
import { pastSecondOf } from '../support/clock.ts';

const flakyAgent = path.join(repoRoot, 'test', 'fixtures', 'runner', 'agents', 'flaky.mjs');

/** Task folders whose flaky agent passes `passes` of 3 attempts each. */
function writeTasks(root: string, passes: Record<string, number>, sleepMs = 0): void {
  for (const [name, count] of Object.entries(passes)) {
    const dir = path.join(root, name);
    mkdirSync(path.join(dir, 'tests'), { recursive: true });
    writeFileSync(path.join(dir, 'task.toml'), 'version = "1.0"\n[verifier]\ntimeout_sec = 30.0\n[agent]\ntimeout_sec = 60.0\n');
    writeFileSync(path.join(dir, 'instruction.md'), `KEY=${name} PASSES=${count} SLEEP=${sleepMs}\n`);
    writeFileSync(path.join(dir, 'tests', 'test.sh'), '#!/bin/sh\ngrep -q pass result.txt\n', { mode: 0o755 });
  }
}

/** The command line of `belay run TASKS --attempts 3` with the flaky agent, into the workspace's jobs folder. */
function jobArgs(workspace: string, tasks: string, scratch: string): string[] {
  mkdirSync(path.join(scratch, 'counters'), { recursive: true });
  return [
    path.join(repoRoot, 'dist', 'cli.js'),
    'run', tasks,
    '--agent', `'${process.execPath}' '${flakyAgent}'`,
    '--protocol', 'sdk1', '--backend', 'local', '--attempts', '3', '--concurrency', '4', '--out', path.join(workspace, '.belay', 'jobs'), '--json',
    '--env', `BELAY_FLAKY_DIR=${path.join(scratch, 'counters')}`, '--env', `BELAY_FLAKY_LOG=${path.join(scratch, 'agents.log')}`,
  ];
}

/** Runs a job to its end; returns the job's folder. */
function runJob(workspace: string, tasks: string, scratch: string): string {
  const jobs = path.join(workspace, '.belay', 'jobs');
  const before = new Set(readdirSync(jobs, { withFileTypes: true }).map((e) => e.name));
  try {
    execFileSync(process.execPath, jobArgs(workspace, tasks, scratch), { cwd: workspace, stdio: 'pipe', timeout: 120_000 });
  } catch (error) {
    // Exit 1: some trial failed, as meant.
    if ((error as { status?: number }).status !== 1) throw error;
  }
  const made = readdirSync(jobs).filter((name) => !before.has(name));
  assert.equal(made.length, 1, `one new job: ${made.join(', ')}`);
  return path.join(jobs, made[0]!);
}

describe('the Results view in the workbench', () => {
  let wb: Workbench;
  let scratch: string;
  let jobA: string;
  let jobB: string;
  before(async () => {
    wb = await openWorkbench({ theme: 'dark' });
    scratch = mkdtempSync(path.join(cacheDir, 'ui-results-'));
    mkdirSync(path.join(wb.workspace, '.belay', 'jobs'), { recursive: true });
    // The same tasks twice: the second time the agent got one right and another wrong.
    writeTasks(path.join(scratch, 'v1'), { 'build-index': 3, 'parse-logs': 1, 'fix-permissions': 3, 'count-lines': 0, 'resize-image': 2 });
    writeTasks(path.join(scratch, 'v2'), { 'build-index': 3, 'parse-logs': 1, 'fix-permissions': 0, 'count-lines': 3, 'resize-image': 2 });
    jobA = runJob(wb.workspace, path.join(scratch, 'v1'), path.join(scratch, 'a'));
    // Job ids start with the time to the second: the second job must sort after the first.
    await pastSecondOf(path.basename(jobA));
    jobB = runJob(wb.workspace, path.join(scratch, 'v2'), path.join(scratch, 'b'));
  });
  after(async () => {
    await wb?.close();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  const frame = () => wb.page.frameLocator('iframe.webview.ready').last().frameLocator('#active-frame');

  test('shows the newest job as tasks × attempts, with pass@1 / pass@3 and the flaky tasks marked', async () => {
    await runPaletteCommand(wb.page, 'Belay: Open Results');
    const f = frame();
    await f.locator('.row', { hasText: 'parse-logs' }).waitFor({ timeout: 30_000 });
    assert.equal(await f.locator('#job').inputValue(), jobB);
    assert.match((await f.locator('.summary').textContent()) ?? '', /15\/15 trials done, 9 passed, 6 failed/);
    const scores = (await f.locator('.scores').textContent()) ?? '';
    // pass@1: (1 + 1/3 + 0 + 1 + 2/3) / 5; pass@3: 4 of 5 tasks passed at least once.
    assert.match(scores, /pass@1 60\.0% · pass@3 80\.0%/);
    assert.deepEqual(await f.locator('.row.head .column-label').allTextContents(), ['Attempt 1', 'Attempt 2', 'Attempt 3']);
    const flaky = (await f.locator('.body .row:has(.badge.flaky) .task-name').allTextContents()).sort();
    assert.deepEqual(flaky, ['parse-logs', 'resize-image']);
    const parse = f.locator('.body .row', { hasText: 'parse-logs' });
    assert.equal(await parse.locator('.cell.trial.passed').count(), 1);
    assert.equal(await parse.locator('.cell.trial.failed').count(), 2);
    assert.match((await parse.locator('.cell.trial').first().textContent()) ?? '', /\d+(\.\d)? steps?.*\d+\.\ds/);
    const csp = await f.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute('content');
    assert.match(csp ?? '', /default-src 'none'/);
    await wb.screenshot('results-matrix');
  });

  test('filters the flaky and the failed tasks and sorts the most failed first', async () => {
    const f = frame();
    await f.locator('#filter').selectOption('flaky');
    await f.locator('.body .row', { hasText: 'build-index' }).waitFor({ state: 'detached' });
    assert.deepEqual((await f.locator('.body .row .task-name').allTextContents()).sort(), ['parse-logs', 'resize-image']);
    await f.locator('#filter').selectOption('failed');
    await f.locator('.body .row', { hasText: 'fix-permissions' }).waitFor();
    assert.deepEqual((await f.locator('.body .row .task-name').allTextContents()).sort(), ['fix-permissions', 'parse-logs', 'resize-image']);
    // The host answers the query with a new state and the page draws it anew, toolbar and all: the
    // select changed here is replaced by one made from the host's state, sorted as asked.
    await f.locator('#sort').evaluate((select) => select.setAttribute('data-changed-by-test', ''));
    await f.locator('#sort').selectOption('failed');
    await f.locator('#sort:not([data-changed-by-test]) option[value="failed"]:checked').waitFor({ state: 'attached' });
    assert.equal((await f.locator('.body .row .task-name').first().textContent()) ?? '', 'fix-permissions');
    await f.locator('#filter').selectOption('all');
    await f.locator('#sort').selectOption('task');
    await f.locator('.body .row', { hasText: 'build-index' }).waitFor();
  });

  test('compares the job with the one before: which task broke, which was fixed, with a link to compare their runs', async () => {
    const f = frame();
    await f.locator('#compare').selectOption(jobA);
    const table = f.locator('.comparison');
    await table.waitFor();
    assert.match((await table.locator('h2').textContent()) ?? '', new RegExp(`${path.basename(jobA)} → ${path.basename(jobB)}`));
    const broke = table.locator('tr.change.broken');
    assert.equal(await broke.locator('.task-name').textContent(), 'fix-permissions');
    assert.match((await broke.textContent()) ?? '', /passed \(100\.0% passed, reward 1\.00\).*failed \(0\.0% passed, reward 0\.00\)/);
    assert.equal(await table.locator('tr.change.fixed .task-name').textContent(), 'count-lines');
    assert.match((await table.locator('p').first().textContent()) ?? '', /1 got worse · 1 got better · 3 unchanged/);
    assert.equal(await broke.locator('button', { hasText: 'Compare runs' }).count(), 1);
    await wb.screenshot('results-compare');
    // The link opens a passed run of the first job beside a failed one of the second.
    await broke.locator('button', { hasText: 'Compare runs' }).click();
    await wb.page.locator('.tab', { hasText: 'Compare: fix-permissions' }).waitFor({ timeout: 15_000 });
    // The flaky agent wrote "pass" in the first job and "fail" in the second: step 1 differs.
    const banner = frame().locator('.divergence-banner');
    await banner.waitFor({ timeout: 15_000 });
    assert.match((await banner.textContent()) ?? '', /first diverge at step 1/);
    await wb.screenshot('results-compare-runs');
    await wb.page.locator('.tab', { hasText: 'Belay Results' }).click();
    await frame().locator('.comparison').waitFor();
  });

  test('opens a trial’s trajectory from the keyboard, and follows the light theme', async () => {
    const f = frame();
    await f.locator('#compare').selectOption('');
    await f.locator('.comparison').waitFor({ state: 'detached' });
    const first = f.locator('.body .cell.trial[data-row="0"][data-column="0"]');
    await first.click();
    await wb.page.locator('.tab', { hasText: /^Run: / }).first().waitFor({ timeout: 15_000 });
    await wb.page.locator('.tab', { hasText: 'Belay Results' }).click();
    const g = frame();
    await g.locator('.body .cell.trial[data-row="0"][data-column="0"]').focus();
    await wb.page.keyboard.press('ArrowDown');
    await wb.page.keyboard.press('ArrowRight');
    assert.equal(await g.locator('.cell.trial:focus').getAttribute('data-row'), '1');
    assert.equal(await g.locator('.cell.trial:focus').getAttribute('data-column'), '1');
    await setColorTheme(wb.page, 'light');
    await wb.screenshot('results-light');
    await setColorTheme(wb.page, 'dark');
  });

  test('shows every job by agent, a cell summing a task’s attempts', async () => {
    const f = frame();
    await f.locator('#job').selectOption('*');
    // By agent, each column names its job.
    await f.locator('.row.head .column-job').nth(1).waitFor();
    assert.deepEqual(await f.locator('.row.head .column-label').allTextContents(), ['node flaky.mjs', 'node flaky.mjs']);
    // Oldest job first, each column naming its job under the agent.
    assert.deepEqual(await f.locator('.row.head .column-job').allTextContents(), [path.basename(jobA), path.basename(jobB)]);
    assert.deepEqual(await f.locator('.row.head .column-score:not(.column-job)').allTextContents(), ['pass@1 60.0% · @3 80.0%', 'pass@1 60.0% · @3 80.0%']);
    const fix = f.locator('.body .row', { hasText: 'fix-permissions' });
    assert.match((await fix.locator('.cell.trial').first().textContent()) ?? '', /^3\/3/);
    assert.match((await fix.locator('.cell.trial').nth(1).textContent()) ?? '', /^0\/3/);
    assert.equal(await f.locator('#compare').count(), 0, 'no comparison across every job');
    // Passed in one job and failed in the other is a change, not flakiness.
    assert.deepEqual((await f.locator('.body .row:has(.badge.flaky) .task-name').allTextContents()).sort(), ['parse-logs', 'resize-image']);
    assert.equal((await f.locator('.summary').textContent())?.split('\n').length, 2, 'a line per job');
    await wb.screenshot('results-all-jobs');
    await f.locator('#job').selectOption(jobB);
    await f.locator('.row.head .column-label', { hasText: 'Attempt 1' }).waitFor();
  });

  test('follows a job started by `belay run` while it runs, trial by trial', async () => {
    writeTasks(path.join(scratch, 'v3'), { 'slow-start': 2, 'slow-end': 1 }, 1500);
    const done = new Promise<void>((resolve) => {
      execFile(process.execPath, jobArgs(wb.workspace, path.join(scratch, 'v3'), path.join(scratch, 'c')), { cwd: wb.workspace, timeout: 120_000 }, () => resolve());
    });
    const f = frame();
    // The view showed the newest job: it moves to the new one by itself.
    await f.locator('.body .row', { hasText: 'slow-start' }).waitFor({ timeout: 30_000 });
    await f.locator('.body .cell.trial.running').first().waitFor({ timeout: 30_000 });
    assert.match((await f.locator('.summary').textContent()) ?? '', /\(Belay, running\): \d+\/6 trials done.*running/);
    await wb.screenshot('results-live');
    await done;
    await f.locator('.summary', { hasText: /6\/6 trials done, 3 passed, 3 failed/ }).waitFor({ timeout: 30_000 });
    assert.equal(await f.locator('.body .cell.trial.running').count(), 0);
  });
  test('shows trials whose tests wrote several metrics and no reward metric by metric, with no reward made up', async () => {
    // Harbor's multi-reward task: the flaky agent's passing attempt gets every metric at 1, a failing one correctness 0.
    const root = path.join(scratch, 'v4');
    writeTasks(root, { 'two-metrics': 1 });
    writeFileSync(
      path.join(root, 'two-metrics', 'tests', 'test.sh'),
      '#!/bin/sh\nmkdir -p "$LOGS_DIR/verifier"\nif grep -q pass result.txt; then c=1; else c=0; fi\necho "{\\"correctness\\": $c, \\"performance\\": 1}" > "$LOGS_DIR/verifier/reward.json"\n',
      { mode: 0o755 },
    );
    const job = runJob(wb.workspace, root, path.join(scratch, 'd'));
    const f = frame();
    await f.locator('.body .row', { hasText: 'two-metrics' }).waitFor({ timeout: 30_000 });
    assert.equal(await f.locator('#job').inputValue(), job);
    // The row can show before the view has read every trial's record (it follows the job's folder
    // as it appears): the job's summary says when all three are there.
    await f.locator('.summary', { hasText: /3\/3 trials done, 1 passed, 2 failed/ }).waitFor({ timeout: 30_000 });
    const row = f.locator('.body .row', { hasText: 'two-metrics' });
    assert.equal(await row.locator('.cell.trial.passed').count(), 1);
    assert.equal(await row.locator('.cell.trial.failed').count(), 2);
    assert.match((await row.locator('.cell.trial.passed .reward').textContent()) ?? '', /^correctness 1 performance 1$/);
    assert.match((await row.locator('.cell.trial.failed .reward').first().textContent()) ?? '', /^correctness 0 performance 1$/);
    assert.match((await row.locator('.cell.trial.failed').first().getAttribute('title')) ?? '', /reward –\nmetrics: correctness 0\.00 · performance 1\.00/);
    // The metrics on the first line, the steps and the time on the second: every part inside its
    // cell, and what is cut ends in an ellipsis, whole in the tooltip.
    const layout = await row.locator('.cell.trial').evaluateAll(cellLayout);
    assert.deepEqual(layout.outside, []);
    for (const cut of layout.cut) assert.ok(cut.ellipsis && cut.inTooltip, JSON.stringify(cut));
    assert.deepEqual(layout.cut.filter((c) => !/^correctness /.test(c.text)), [], 'only the metrics may be cut');
    await wb.screenshot('results-metrics');
  });
});
