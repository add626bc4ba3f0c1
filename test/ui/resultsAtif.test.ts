// Harbor trials in the Results view, tried as a new user would in the real workbench: two Harbor
// job folders in the workspace's jobs/ (where Harbor writes them), a trial whose ATIF 1.7
// trajectory has a subagent, agent text with markup and escape sequences, and a read of the
// tests. The cell is flagged (a badge with the reasons as its tooltip, the Flagged filter), the
// trial opens in the trajectory view with its subagent's steps nested, its text shown as text,
// and the two jobs' trials compare side by side. The flag, the filter and the trajectory view's
// parts have words for a screen reader, and the keyboard reaches them with the focus in sight.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runPaletteCommand } from '../../scripts/lib/workbench.ts';
import { cellLayout } from './resultsLayout.ts';
import { openWorkbench, type Workbench } from '../support/workbench.ts';

const HOSTILE = '<img src=x onerror="document.title=1">\u001b[31mred\u001b[0m';

function trajectory(readsTests: boolean): unknown {
  return {
    schema_version: 'ATIF-v1.7',
    trajectory_id: 'main',
    agent: { name: 'terminus-2', version: '2.0.0', model_name: 'claude-sonnet-4' },
    steps: [
      { step_id: 1, source: 'user', message: 'Write Hello, world! to hello.txt' },
      {
        step_id: 2,
        source: 'agent',
        message: 'Asking a helper to look around.',
        llm_call_count: 2,
        metrics: { prompt_tokens: 800, completion_tokens: 90, cost_usd: 0.004 },
        tool_calls: [{ tool_call_id: 'c1', function_name: 'Task', arguments: { prompt: 'look around' } }],
        observation: { results: [{ source_call_id: 'c1', content: 'The folder is empty.', subagent_trajectory_ref: [{ trajectory_id: 'explore' }] }] },
      },
      {
        step_id: 3,
        source: 'agent',
        message: HOSTILE,
        tool_calls: [{ tool_call_id: 'c2', function_name: 'bash', arguments: { command: readsTests ? 'cat /tests/test.sh' : "printf 'Hello\\n' > hello.txt" } }],
        observation: { results: [{ source_call_id: 'c2', content: HOSTILE }] },
      },
    ],
    subagent_trajectories: [
      {
        schema_version: 'ATIF-v1.7',
        trajectory_id: 'explore',
        agent: { name: 'explorer', version: '1' },
        steps: [
          { step_id: 1, source: 'user', message: 'look around' },
          { step_id: 2, source: 'agent', message: 'Listing.', tool_calls: [{ tool_call_id: 's1', function_name: 'bash', arguments: { command: 'ls -la' } }], observation: { results: [{ source_call_id: 's1', content: 'total 0' }] } },
        ],
      },
    ],
  };
}

/** A Harbor job folder with one hello-world trial. */
function harborJob(jobs: string, name: string, passed: boolean, readsTests: boolean): string {
  const job = path.join(jobs, name);
  const trial = path.join(job, `hello-world__${passed ? 'P' : 'F'}1`);
  mkdirSync(path.join(trial, 'agent'), { recursive: true });
  const day = name.slice(0, 10);
  writeFileSync(path.join(job, 'config.json'), JSON.stringify({ job_name: name, n_attempts: 1, agents: [{ name: 'terminus-2', model_name: 'claude-sonnet-4' }] }));
  writeFileSync(path.join(job, 'result.json'), JSON.stringify({ id: name, started_at: `${day}T10:00:00`, finished_at: `${day}T10:01:00` }));
  writeFileSync(
    path.join(trial, 'result.json'),
    JSON.stringify({
      task_name: 'hello-world',
      trial_name: path.basename(trial),
      config: { agent: { name: 'terminus-2', model_name: 'claude-sonnet-4' }, task: { path: 'tasks/hello-world' } },
      agent_info: { name: 'terminus-2', version: '2.0.0' },
      verifier_result: { rewards: { reward: passed ? 1 : 0 } },
      exception_info: null,
      started_at: `${day}T10:00:01`,
      finished_at: `${day}T10:00:41`,
    }),
  );
  writeFileSync(path.join(trial, 'agent', 'trajectory.json'), JSON.stringify(trajectory(readsTests)));
  return job;
}

describe('Harbor trials in the Results view and the trajectory view', () => {
  let wb: Workbench;
  let older: string;
  let newer: string;
  before(async () => {
    wb = await openWorkbench({ theme: 'dark' });
    const jobs = path.join(wb.workspace, 'jobs');
    older = harborJob(jobs, '2026-02-01__10-00-00', true, false);
    newer = harborJob(jobs, '2026-02-02__10-00-00', false, true);
  });
  after(async () => {
    await wb?.close();
  });

  const frame = () => wb.page.frameLocator('iframe.webview.ready').last().frameLocator('#active-frame');

  test('flags the trial that read the tests: a badge whose tooltip gives the reasons, and the Flagged filter keeps it', async () => {
    await runPaletteCommand(wb.page, 'Belay: Open Results');
    const f = frame();
    await f.locator('#job').waitFor({ timeout: 30_000 });
    await f.locator('#job').selectOption(newer);
    const row = f.locator('.body .row', { hasText: 'hello-world' });
    await row.waitFor({ timeout: 30_000 });
    const badge = row.locator('.cell.trial .badge.signals');
    await badge.waitFor();
    assert.match((await badge.getAttribute('title')) ?? '', /Reward-hacking signals:\nread the tests: cat \/tests\/test\.sh/);
    assert.equal(await row.locator('.badge.flagged').count(), 1);
    // The grade on the first line, the steps, the time and the flag on the second: all inside the cell, nothing cut.
    const layout = await row.locator('.cell.trial').evaluateAll(cellLayout);
    assert.deepEqual([layout.cells, layout.outside, layout.cut], [1, [], []]);
    // For a screen reader: the cell's label gives the reasons the tooltip gives; the flag is words, its sign a picture.
    assert.equal(await f.getByRole('gridcell', { name: /^hello-world, Attempt 1: failed, reward 0\.00, 2 steps, 40\.0s, flagged for reward hacking: read the tests: cat \/tests\/test\.sh/ }).count(), 1);
    assert.equal(await badge.locator('[aria-hidden="true"]').textContent(), '⚑');
    assert.match((await row.locator('.badge.flagged').getAttribute('title')) ?? '', /reward-hacking signals/);
    // The filter is named by its label, and the keyboard reaches it with the focus in sight.
    const filter = f.getByRole('combobox', { name: 'Show' });
    assert.ok((await filter.locator('option').allTextContents()).includes('Flagged (reward hacking)'));
    await f.locator('#job').focus();
    for (let i = 0; i < 4 && (await f.locator(':focus').getAttribute('id')) !== 'filter'; i++) await wb.page.keyboard.press('Tab');
    assert.equal(await f.locator(':focus').getAttribute('id'), 'filter');
    assert.notEqual(await f.locator(':focus').evaluate((e) => getComputedStyle(e).outlineStyle), 'none');
    await f.locator('#filter').selectOption('flagged');
    await f.locator('.body .row', { hasText: 'hello-world' }).waitFor();
    await wb.screenshot('results-atif-flagged');
    await f.locator('#job').selectOption(older);
    await f.locator('.body .row', { hasText: 'hello-world' }).waitFor({ state: 'detached' });
    await f.locator('#filter').selectOption('all');
    await f.locator('.body .row', { hasText: 'hello-world' }).waitFor();
    assert.equal(await f.locator('.badge.signals').count(), 0);
  });

  test("opens a Harbor trial's ATIF 1.7 trajectory in the trajectory view: steps, tool calls, observations, the subagent nested, agent text as text", async () => {
    const f = frame();
    await f.locator('#job').selectOption(newer);
    await f.locator('.body .cell.trial.failed').first().waitFor({ timeout: 30_000 });
    await f.locator('.body .cell.trial[data-row="0"][data-column="0"]').click();
    await wb.page.locator('.tab', { hasText: /^Trajectory: hello-world/ }).waitFor({ timeout: 15_000 });
    const t = frame();
    await t.locator('#jump').waitFor({ timeout: 15_000 });
    const options = await t.locator('#jump option').allTextContents();
    assert.deepEqual(options, ['Step 1 (user)', 'Step 2: Task {"prompt":"look around"}', 'Step 3 (user, subagent explore)', 'Step 4 (subagent explore): ls -la', 'Step 5: cat /tests/test.sh']);
    assert.match((await t.locator('.facts').textContent()) ?? '', /failed/);
    // The result's icon and the step picker have names; the picker says where it is when the keys move it.
    assert.equal(await t.getByRole('img', { name: 'failed' }).count(), 1);
    assert.equal(await t.getByRole('combobox', { name: 'Jump to a step' }).count(), 1);
    assert.equal(await t.getByRole('navigation', { name: 'Steps' }).count(), 1);
    assert.equal(await t.locator('.position').getAttribute('aria-live'), 'polite');
    assert.deepEqual(await t.locator('.codicon').evaluateAll((els) => els.filter((e) => e.getAttribute('aria-hidden') !== 'true' && !e.getAttribute('aria-label')).map((e) => e.className)), []);
    await t.locator('#jump').focus();
    await wb.page.keyboard.press('Tab');
    assert.equal((await t.locator(':focus').textContent())?.trim(), 'Next');
    assert.notEqual(await t.locator(':focus').evaluate((e) => getComputedStyle(e).outlineStyle), 'none', 'the focused Next shows it');
    await wb.page.keyboard.press('Enter');
    assert.equal(await t.locator('.position').textContent(), '2 of 5');
    await t.locator('#jump').selectOption({ index: 3 });
    await t.locator('.subagent', { hasText: 'Subagent explore' }).waitFor();
    assert.equal(await t.locator('.output').textContent(), 'total 0');
    await t.locator('#jump').selectOption({ index: 4 });
    await t.locator('.step-title', { hasText: 'Step 5' }).waitFor();
    // The agent's markup is text: shown as written, no element made of it.
    assert.equal(await t.locator('.agent-text').textContent(), HOSTILE);
    assert.equal(await t.locator('img').count(), 0);
    await wb.screenshot('trajectory-atif');
  });

  test('compares the two jobs, and their Harbor trials side by side', async () => {
    await wb.page.locator('.tab', { hasText: 'Belay Results' }).click();
    const f = frame();
    await f.locator('#compare').selectOption(older);
    const broke = f.locator('.comparison tr.change.broken');
    await broke.waitFor({ timeout: 15_000 });
    await broke.locator('button', { hasText: 'Compare runs' }).click();
    await wb.page.locator('.tab', { hasText: /^Compare: hello-world/ }).waitFor({ timeout: 15_000 });
    const banner = frame().locator('.divergence-banner');
    await banner.waitFor({ timeout: 15_000 });
    // The same steps up to the last command: printf in the first job, cat /tests/test.sh in the second.
    assert.match((await banner.textContent()) ?? '', /first diverge at step 5/);
    await wb.screenshot('trajectory-atif-compare');
  });
});
