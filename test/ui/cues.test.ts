// The Cues panel in the real workbench, tried as a new user would: real `cueme` child processes
// write to a temp mailbox that the extension host also uses (through `belay.cues.home`), the
// human clicks in the webview, and each cueme prints the answer and exits 0.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { FrameLocator } from 'playwright-core';
import { loadSqlite } from '../../src/cues/core/sqlite.ts';
import { Mailbox } from '../../src/cues/core/store.ts';
import { localIsoWithOffset } from '../../src/cues/core/time.ts';
import { buildBundles, childEnv, envelope, run, start, type Bundles, type Running } from '../support/cues/helpers.ts';
import { runPaletteCommand } from '../../scripts/lib/workbench.ts';
import { cuesFrame, openBelayContainer, openWorkbench, type Workbench } from '../support/workbench.ts';

const CHOICE = { type: 'choice', options: ['Staging', 'Production', 'Both'] };
const MULTI = { type: 'choice', options: ['lint', 'unit tests', 'e2e tests'], allow_multiple: true };
const CONFIRM = { type: 'confirm', text: 'This pushes the release tag.', confirm_label: 'Deploy', cancel_label: 'Not yet' };
const FORM = {
  type: 'form',
  fields: [
    { label: 'Environment', options: ['prod', 'staging'] },
    { label: 'Checks', options: ['lint', 'unit', 'e2e'], allow_multiple: true },
    { label: 'Note', kind: 'text' },
  ],
};
const DANGER = { type: 'confirm', text: 'This cannot be undone.', confirm_label: 'Delete', cancel_label: 'Keep it' };
const LONG_PROMPT = [
  '## Migration plan for the billing service',
  '',
  'I compared the three ways to move the `invoices` table. Pick one:',
  '',
  '| Option | Downtime | Risk | Rollback |',
  '|:--|--:|:-:|:--|',
  '| **Staging** first | 0 min | low | `git revert` |',
  '| Production at night | 12 min | medium | restore the 02:00 snapshot |',
  '| Both, in parallel | 0 min | high | none: <b>manual</b> |',
  '',
  'The script I would run:',
  '',
  '```sql',
  'BEGIN;',
  'ALTER TABLE invoices ADD COLUMN currency TEXT NOT NULL DEFAULT \'EUR\';',
  'UPDATE invoices SET currency = accounts.currency FROM accounts WHERE accounts.id = invoices.account_id AND invoices.created_at > now() - interval \'90 days\';',
  'COMMIT;',
  '```',
  '',
  ...Array.from({ length: 12 }, (_, i) => `${i + 1}. Step ${i + 1}: check the dashboards, then continue with the next batch of accounts.`),
].join('\n');
const HOSTILE = 'Look: <img src=x onerror="document.title=\'pwned\'"> and <script>document.title="pwned"</script> **bold** [bad](javascript:alert(1))';

interface Session {
  wb: Workbench;
  frame: FrameLocator;
  cueHome: string;
  dir: string;
}

let bundles: Bundles;
before(async () => {
  bundles = await buildBundles();
});
after(() => rmSync(bundles.dir, { recursive: true, force: true }));

async function openSession(theme: 'dark' | 'light', notifications: boolean, options: { panel: boolean } = { panel: true }): Promise<Session> {
  const dir = mkdtempSync(path.join(tmpdir(), 'belay-cues-ui-'));
  const cueHome = path.join(dir, '.cue');
  const wb = await openWorkbench({ theme, settings: { 'belay.cues.home': cueHome, 'belay.cues.notifications': notifications } });
  const s = { wb, frame: cuesFrame(wb.page), cueHome, dir };
  if (options.panel) await showPanel(s);
  return s;
}

/** Opens the Cues panel and waits until it shows the mailbox. */
async function showPanel(s: Session): Promise<void> {
  await openBelayContainer(s.wb.page);
  // Room for the Cues view: fold the two tree views below it.
  for (const title of ['Tasks', 'Sessions']) {
    const header = s.wb.page.locator('.sidebar .pane-header', { has: s.wb.page.locator('h3.title', { hasText: title }) });
    if ((await header.getAttribute('aria-expanded')) === 'true') await header.click();
  }
  // The panel names the mailbox from the setting: the host and these cuemes share it.
  await s.frame.locator('.detail code', { hasText: s.cueHome }).waitFor({ timeout: 30_000 });
}

function cue(s: Session, agentId: string, prompt: string, payload?: unknown): Running {
  return start(bundles.cueme, ['cue', agentId, '-'], { env: childEnv(s.cueHome), input: envelope(prompt, payload), timeoutMs: 30_000 });
}

async function card(s: Session, prompt: string) {
  const c = s.frame.locator('article.cue', { hasText: prompt });
  await c.waitFor({ timeout: 15_000 });
  return c;
}

async function shot(s: Session, c: Awaited<ReturnType<typeof card>>, name: string): Promise<void> {
  await c.scrollIntoViewIfNeeded();
  await s.wb.screenshot(name);
}

/** The answer written to the mailbox for a request, if any (read by the test itself). */
function responseOf(s: Session, requestId: string): string | undefined {
  const mailbox = Mailbox.open({ home: s.cueHome });
  try {
    const response = mailbox.getResponse(requestId);
    return response ? (response.cancelled ? '(cancelled)' : response.text) : undefined;
  } finally {
    mailbox.close();
  }
}

/** The editor panel's document: the webview opened after the sidebar's (the last one), laid out for the editor. */
async function editorFrame(s: Session): Promise<FrameLocator> {
  await s.wb.page.locator('iframe.webview.ready').nth(1).waitFor();
  const frame = s.wb.page.frameLocator('iframe.webview.ready').last().frameLocator('#active-frame');
  await frame.locator('body.in-editor').waitFor();
  return frame;
}

/** Every answering button of a card shows its key (icon-only helpers like Attach excepted). */
async function assertKeysShown(c: Awaited<ReturnType<typeof card>>): Promise<void> {
  const buttons = c.locator('vscode-button:not(.icon-only), vscode-checkbox');
  const n = await buttons.count();
  assert.ok(n > 0);
  for (let i = 0; i < n; i++) {
    const b = buttons.nth(i);
    const name = (await b.getAttribute('aria-label')) ?? (await b.textContent());
    assert.equal(await b.locator('kbd.key').count(), 1, `${name} shows its key`);
    assert.ok(await b.getAttribute('aria-keyshortcuts'), `${name} says its key to screen readers`);
  }
}

describe('the Cues panel (dark theme)', () => {
  let s: Session;
  before(async () => {
    s = await openSession('dark', false);
  });
  after(async () => {
    await s?.wb.close();
    if (s) rmSync(s.dir, { recursive: true, force: true });
  });

  test('a choice cue appears; clicking an option makes cueme print the label and exit 0', async () => {
    const joined = await run(bundles.cueme, ['join', 'claude_code'], { env: childEnv(s.cueHome), cwd: s.wb.workspace });
    const agentId = /^agent_id=(\w+)$/m.exec(joined.stdout)?.[1];
    assert.ok(agentId, joined.stdout + joined.stderr);
    const running = cue(s, agentId, 'Where should I **deploy**?', CHOICE);
    const c = await card(s, 'Where should I');
    // The agent's runtime and project folder, from its join.
    await c.locator('.meta', { hasText: `claude_code · ${path.basename(s.wb.workspace)}` }).waitFor();
    assert.equal(await c.locator('strong', { hasText: 'deploy' }).count(), 1, 'Markdown bold is rendered');
    await c.locator('.waiting', { hasText: /waiting \d+s/ }).waitFor();
    await shot(s, c, 'cues-choice-dark');
    await c.getByRole('button', { name: 'Production' }).click();
    const done = await running.done;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /instructions:\n\nProduction\n/);
    await c.waitFor({ state: 'detached' });
  });

  test('number keys pick options: 1 and 3 then Enter answer a multiple choice', async () => {
    const running = cue(s, 'multiagent', 'Which checks should run?', MULTI);
    const c = await card(s, 'Which checks should run?');
    await shot(s, c, 'cues-multiple-dark');
    await c.focus();
    await s.wb.page.keyboard.press('1');
    await s.wb.page.keyboard.press('3');
    await s.wb.page.keyboard.press('Enter');
    const done = await running.done;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /instructions:\n\nlint\ne2e tests\n/);
  });

  test('a confirm shows its two labels; the confirm label is the answer', async () => {
    const running = cue(s, 'confirmagent', 'Ready to ship 1.2.0?', CONFIRM);
    const c = await card(s, 'Ready to ship 1.2.0?');
    await c.getByRole('button', { name: 'Not yet' }).waitFor();
    await shot(s, c, 'cues-confirm-dark');
    await c.getByRole('button', { name: 'Deploy' }).click();
    const done = await running.done;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /instructions:\n\nDeploy\n/);
  });

  test('a three-field form answers `Label: value` lines', async () => {
    const running = cue(s, 'formagent', 'Release details, please', FORM);
    const c = await card(s, 'Release details, please');
    await c.locator('vscode-radio', { hasText: 'staging' }).click();
    await c.locator('vscode-checkbox', { hasText: 'lint' }).click();
    await c.locator('vscode-checkbox', { hasText: 'e2e' }).click();
    await c.locator('vscode-textfield input').fill('ship it');
    await shot(s, c, 'cues-form-dark');
    await c.getByRole('button', { name: 'Send', exact: true }).click();
    const done = await running.done;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /instructions:\n\nEnvironment: staging\nChecks: lint, e2e\nNote: ship it\n/);
  });

  test('a pause shows a Continue card; Continue resumes the agent', async () => {
    const running = start(bundles.cueme, ['pause', 'pauseagent'], { env: childEnv(s.cueHome), timeoutMs: 30_000 });
    const c = await card(s, 'Paused. Click Continue');
    await shot(s, c, 'cues-pause-dark');
    await c.getByRole('button', { name: 'Continue' }).click();
    const done = await running.done;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /^The user resumed the conversation\./);
  });

  test('End writes a cancelled answer: cueme tells the agent to pause', async () => {
    const running = cue(s, 'endagent', 'Shall I also refactor the tests?');
    const c = await card(s, 'Shall I also refactor the tests?');
    await shot(s, c, 'cues-text-dark');
    await c.getByRole('button', { name: 'End', exact: true }).click();
    const done = await running.done;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /^The user did not continue\./);
  });

  test('a typed reply is sent with Enter', async () => {
    const running = cue(s, 'textagent', 'What should the new flag be called?');
    const c = await card(s, 'What should the new flag be called?');
    // Keyboard first: Escape on the card goes to the reply box.
    await c.focus();
    await s.wb.page.keyboard.press('Escape');
    await s.wb.page.keyboard.type('Call it --dry-run');
    assert.equal(await c.locator('vscode-textarea textarea').inputValue(), 'Call it --dry-run');
    await s.wb.page.keyboard.press('Enter');
    const done = await running.done;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /instructions:\n\nCall it --dry-run\n/);
  });

  test("a queued reply reaches the agent's next cue without a click", async () => {
    const agent = s.frame.locator('details.agent[data-agent-id="textagent"]');
    await agent.locator('summary').click();
    const input = agent.locator('vscode-textfield.queue-input input');
    await input.fill('Next, write the changelog');
    await agent.getByRole('button', { name: 'Queue' }).click();
    await agent.locator('.queued', { hasText: 'Next, write the changelog' }).waitFor();
    const done = await cue(s, 'textagent', 'Done with the flag. What next?').done;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /instructions:\n\nNext, write the changelog\n/);
    await agent.locator('.turn', { hasText: 'What next?' }).locator('.answer', { hasText: 'Next, write the changelog' }).waitFor();
    assert.equal(await agent.locator('.queued').count(), 0, 'the queued reply was used once');
  });

  test('a reply draft survives hiding the panel; a pasted image is attached to the answer', async () => {
    const { page } = s.wb;
    const running = cue(s, 'draftagent', 'Send me a screenshot of the bug');
    let c = await card(s, 'Send me a screenshot of the bug');
    await c.locator('vscode-textarea textarea').fill('Here it is, half typed');
    await runPaletteCommand(page, 'View: Show Explorer');
    await page.locator('.sidebar .composite.title h2', { hasText: /explorer/i }).waitFor();
    await runPaletteCommand(page, 'Belay: Focus on Cues View');
    c = await card(s, 'Send me a screenshot of the bug');
    assert.equal(await c.locator('vscode-textarea textarea').inputValue(), 'Here it is, half typed');
    // A real paste event carrying a PNG file, as the clipboard gives it.
    await c.locator('vscode-textarea textarea').evaluate((textarea) => {
      const png = Uint8Array.from(atob('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='), (ch) => ch.charCodeAt(0));
      const data = new DataTransfer();
      data.items.add(new File([png], 'shot.png', { type: 'image/png' }));
      textarea.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, composed: true, cancelable: true }));
    });
    await c.locator('.attachment', { hasText: /pasted-.*\.png/ }).waitFor();
    await c.locator('vscode-textarea textarea').press('Enter');
    const done = await running.done;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /instructions:\n\nHere it is, half typed\n/);
    assert.match(done.stdout, new RegExp(`- ${s.cueHome.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/files/[0-9a-f]{64}\\.png \\(image/png\\)`));
  });

  test('a file chosen with the Attach button reaches the agent as a path it can read', async () => {
    const { page } = s.wb;
    const file = path.join(s.wb.workspace, 'notes-for-agent.txt');
    writeFileSync(file, 'the agent should read this\n');
    const running = cue(s, 'attachagent', 'Which file should I read?');
    const c = await card(s, 'Which file should I read?');
    await c.getByRole('button', { name: 'Attach files' }).click();
    // The workbench's own file dialog (a quick input that takes a path).
    const input = page.locator('.quick-input-widget input.input');
    await input.waitFor();
    // It first fills in the folder it starts from; typing before that would be overwritten.
    await page.waitForFunction(() => /[/\\]$/.test((document.querySelector('.quick-input-widget input.input') as HTMLInputElement | null)?.value ?? ''));
    try {
      await input.fill(file);
      // The dialog lists the folder and completes what is typed as it goes: pick the file's row
      // (which puts exactly its path in the box), then accept.
      const row = page.locator('.quick-input-widget .monaco-list-row', { hasText: 'notes-for-agent.txt' }).first();
      await row.waitFor();
      await row.click();
      // The click puts the file's path in the box, or (when the dialog already completed it)
      // accepts at once; Enter accepts what is left.
      if (await page.locator('.quick-input-widget').isVisible()) {
        await page.waitForFunction((expected) => {
          const box = document.querySelector('.quick-input-widget input.input') as HTMLInputElement | null;
          return !box || box.offsetParent === null || box.value === expected;
        }, file);
        if (await page.locator('.quick-input-widget').isVisible()) await input.press('Enter');
      }
      await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
    } finally {
      // Never leave the dialog open for the next test.
      if (await page.locator('.quick-input-widget').isVisible()) await page.keyboard.press('Escape');
    }
    await c.locator('.attachment', { hasText: 'notes-for-agent.txt' }).waitFor();
    await c.locator('vscode-textarea textarea').fill('Read the attached notes');
    await c.getByRole('button', { name: 'Send', exact: true }).click();
    const done = await running.done;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /instructions:\n\nRead the attached notes\n/);
    assert.match(done.stdout, /\/files\/[0-9a-f]{64}\.txt \(text\/plain\)/);
  });

  test('a cue older than the 600 s cueme waits is shown as expired and offers no answer', async () => {
    const db = new (loadSqlite().DatabaseSync)(path.join(s.cueHome, 'cue.db'));
    try {
      const old = localIsoWithOffset(new Date(Date.now() - 11 * 60_000));
      db.prepare(`INSERT INTO cue_requests (request_id, agent_id, prompt, payload, status, created_at, updated_at) VALUES (?, ?, ?, ?, 'PENDING', ?, ?)`).run(
        'req_0123456789ab', 'staleagent', 'Are you still there?', JSON.stringify(CHOICE), old, old,
      );
    } finally {
      db.close();
    }
    const c = await card(s, 'Are you still there?');
    await c.locator('.waiting', { hasText: 'expired' }).waitFor();
    assert.equal(await c.getByRole('button', { name: 'Staging' }).count(), 0, 'no option to click');
    assert.equal(await c.locator('vscode-textarea').count(), 0, 'no reply box');
    await shot(s, c, 'cues-expired-dark');
    await c.getByRole('button', { name: 'Dismiss' }).click();
    await c.waitFor({ state: 'detached' });
  });

  test('"Belay: Answer Next Cue" answers without the webview, through quick picks', async () => {
    const running = cue(s, 'quickagent', 'Ship it from the palette?', CONFIRM);
    await card(s, 'Ship it from the palette?');
    await runPaletteCommand(s.wb.page, 'Belay: Answer Next Cue');
    const row = s.wb.page.locator('.quick-input-widget .monaco-list-row', { hasText: 'Deploy' });
    await row.waitFor();
    await s.wb.screenshot('cues-quickpick-dark');
    await row.click();
    const done = await running.done;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /instructions:\n\nDeploy\n/);
  });

  test('a cue whose cueme was killed with -9 is shown as abandoned: no key or button answers it, Dismiss ends it', async () => {
    const running = cue(s, 'doomedagent', 'Drop the staging schema?', DANGER);
    const c = await card(s, 'Drop the staging schema?');
    await c.getByRole('button', { name: 'Delete' }).waitFor();
    const requestId = (await c.getAttribute('data-request-id'))!;
    const pid = running.child.pid!;
    running.child.kill('SIGKILL');
    assert.equal((await running.done).signal, 'SIGKILL');
    await c.locator('.waiting', { hasText: 'abandoned' }).waitFor();
    await c.locator('.warning', { hasText: `The cueme that asked this (pid ${pid}) ended without an answer` }).waitFor();
    assert.equal(await c.getByRole('button', { name: 'Delete' }).count(), 0, 'no confirm button');
    assert.equal(await c.locator('vscode-textarea').count(), 0, 'no reply box');
    await c.focus();
    for (const key of ['1', 'Enter', 'Control+Enter']) await s.wb.page.keyboard.press(key);
    await c.locator('.status', { hasText: 'it cannot be answered' }).waitFor();
    assert.equal(responseOf(s, requestId), undefined, 'nothing was written');
    await shot(s, c, 'cues-abandoned-dark');
    await s.wb.page.keyboard.press('Control+Backspace');
    await c.waitFor({ state: 'detached' });
    assert.equal(responseOf(s, requestId), '(cancelled)', 'Dismiss writes a cancelled response');
  });

  test('keyboard: a stray 1 or Enter on a confirm answers nothing, Ctrl+Enter does; then the next card has the keyboard', async () => {
    const { page } = s.wb;
    const danger = cue(s, 'dbagent', 'Delete the production database?', DANGER);
    const c = await card(s, 'Delete the production database?');
    const requestId = (await c.getAttribute('data-request-id'))!;
    const next = cue(s, 'regionagent', 'Which region next?', CHOICE);
    const c2 = await card(s, 'Which region next?');
    await assertKeysShown(c);
    await assertKeysShown(c2);
    await c.locator('kbd.key', { hasText: 'Ctrl+Enter' }).waitFor();
    await c.focus();
    await page.keyboard.press('1');
    await c.locator('.status', { hasText: 'Number keys do not answer a confirm: Ctrl+Enter answers “Delete”' }).waitFor();
    await page.keyboard.press('Enter');
    await c.locator('.status', { hasText: 'Enter does not confirm' }).waitFor();
    assert.equal(await c.locator('.status', { hasText: 'Sending' }).count(), 0);
    assert.equal(responseOf(s, requestId), undefined, 'a stray 1 and Enter wrote nothing');
    await shot(s, c, 'cues-keyboard-confirm-dark');
    await page.keyboard.press('Control+Enter');
    const done = await danger.done;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /instructions:\n\nDelete\n/);
    // The keyboard is on the next card, where a number key selects and only Enter sends.
    await s.frame.locator('article.cue:focus', { hasText: 'Which region next?' }).waitFor();
    await page.keyboard.press('2');
    await c2.locator('vscode-button.option.selected[aria-pressed="true"]', { hasText: 'Production' }).waitFor();
    assert.equal(responseOf(s, (await c2.getAttribute('data-request-id'))!), undefined, 'selecting sends nothing');
    await shot(s, c2, 'cues-keyboard-select-dark');
    await page.keyboard.press('Enter');
    const done2 = await next.done;
    assert.equal(done2.code, 0, done2.stderr);
    assert.match(done2.stdout, /instructions:\n\nProduction\n/);
  });

  test('Enter in a form field sends only once the form is complete, pointing at what is missing', async () => {
    const running = cue(s, 'formkeys', 'Release details, by keyboard', FORM);
    const c = await card(s, 'Release details, by keyboard');
    const note = c.locator('vscode-textfield input');
    await note.fill('ship it');
    await note.press('Enter');
    await c.locator('.status', { hasText: 'Fill in “Environment” first, or press Ctrl+Enter to send the form as it is.' }).waitFor();
    assert.equal(responseOf(s, (await c.getAttribute('data-request-id'))!), undefined);
    await shot(s, c, 'cues-form-incomplete-dark');
    await c.locator('vscode-radio', { hasText: 'prod' }).click();
    await note.press('Enter');
    const done = await running.done;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /instructions:\n\nEnvironment: prod\nNote: ship it\n/);
  });

  test('a long question keeps Send in view; Open in Editor shows it at full width, table and code included, and answers there', async () => {
    const { page } = s.wb;
    const running = cue(s, 'PlannerAgent', LONG_PROMPT, CHOICE);
    const c = await card(s, 'Migration plan for the billing service');
    // In the sidebar the Send button stays on screen whatever the length of the question.
    await c.scrollIntoViewIfNeeded();
    const send = c.getByRole('button', { name: 'Send', exact: true });
    assert.ok(await send.isVisible());
    const box = await send.boundingBox();
    const view = await page.locator('iframe.webview.ready').first().boundingBox();
    assert.ok(box && view && box.y + box.height <= view.y + view.height + 1, `Send is inside the view: ${JSON.stringify({ box, view })}`);
    await shot(s, c, 'cues-long-sidebar-dark');
    await c.getByRole('button', { name: 'Open in Editor' }).click();
    await page.locator('.tabs-container .tab', { hasText: 'Cues: PlannerAgent' }).waitFor();
    const editor = await editorFrame(s);
    const ec = editor.locator('article.cue', { hasText: 'Migration plan for the billing service' });
    await ec.waitFor();
    await editor.locator('article.cue:focus').waitFor();
    assert.deepEqual(await ec.locator('table th').allTextContents(), ['Option', 'Downtime', 'Risk', 'Rollback']);
    assert.equal(await ec.locator('table tbody tr').count(), 3);
    assert.equal(await ec.locator('table td', { hasText: '<b>manual</b>' }).count(), 1, 'HTML in a cell stays text');
    assert.equal(await ec.locator('table b').count(), 0);
    assert.match((await ec.locator('pre code').textContent()) ?? '', /ALTER TABLE invoices ADD COLUMN currency/);
    await editor.locator('.editor-title', { hasText: 'PlannerAgent' }).waitFor();
    await s.wb.screenshot('cues-editor-dark');
    await page.keyboard.press('1');
    await ec.locator('vscode-button.option.selected', { hasText: 'Staging' }).waitFor();
    await page.keyboard.press('Enter');
    const done = await running.done;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /instructions:\n\nStaging\n/);
    // The panel stays, now showing the conversation with the answer.
    await editor.locator('.turn', { hasText: 'Migration plan for the billing service' }).locator('.answer', { hasText: 'Staging' }).waitFor();
    await s.wb.screenshot('cues-editor-answered-dark');
    // Behind another tab the panel's page is unloaded; Open in Editor brings it back with the new cue focused.
    await runPaletteCommand(page, 'File: New Untitled Text File');
    await page.locator('.tabs-container .tab.active', { hasText: 'Untitled' }).waitFor();
    const again = cue(s, 'PlannerAgent', 'One more thing: rename the column?');
    await (await card(s, 'One more thing: rename the column?')).getByRole('button', { name: 'Open in Editor' }).click();
    await page.locator('.tabs-container .tab.active', { hasText: 'Cues: PlannerAgent' }).waitFor();
    const revealed = await editorFrame(s);
    await revealed.locator('article.cue:focus', { hasText: 'One more thing: rename the column?' }).waitFor();
    await page.keyboard.press('Control+Backspace');
    assert.match((await again.done).stdout, /^The user did not continue\./);
    await runPaletteCommand(page, 'View: Close All Editors');
  });

  test('agents are named as written and can be archived until they ask again', async () => {
    const agent = s.frame.locator('details.agent[data-agent-id="PlannerAgent"]');
    await agent.waitFor();
    assert.equal(await agent.locator('summary .name').evaluate((n) => (n as HTMLElement).innerText), 'PlannerAgent', 'not upper-cased');
    await agent.locator('summary').click();
    await agent.getByRole('button', { name: 'Archive' }).click();
    await agent.waitFor({ state: 'detached' });
    const archived = s.frame.locator('details.archived');
    await archived.locator('summary').click();
    await archived.locator('li[data-agent-id="PlannerAgent"]').waitFor();
    await s.wb.screenshot('cues-archived-dark');
    // It asks again: back in the list.
    const running = cue(s, 'PlannerAgent', 'Back again: proceed?');
    await s.frame.locator('details.agent[data-agent-id="PlannerAgent"]').waitFor();
    assert.equal(await archived.locator('li[data-agent-id="PlannerAgent"]').count(), 0);
    await (await card(s, 'Back again: proceed?')).getByRole('button', { name: 'End', exact: true }).click();
    assert.equal((await running.done).code, 0);
  });

  test('a hostile prompt shows as text: no img or script element is created', async () => {
    const running = cue(s, 'hostileagent', HOSTILE);
    const c = await card(s, 'onerror=');
    const shown = (await c.locator('.prompt').textContent()) ?? '';
    assert.ok(shown.includes('<img src=x onerror='), shown);
    assert.ok(shown.includes('<script>document.title="pwned"</script>'), shown);
    assert.ok(shown.includes('[bad](javascript:alert(1))'), 'a javascript: link stays text');
    assert.equal(await c.locator('img').count(), 0);
    assert.equal(await c.locator('script').count(), 0);
    assert.equal(await s.frame.locator('#root img, #root script, #root a[href^="javascript"]').count(), 0);
    assert.equal(await c.locator('strong', { hasText: 'bold' }).count(), 1);
    await shot(s, c, 'cues-hostile-dark');
    await c.getByRole('button', { name: 'End', exact: true }).click();
    assert.equal((await running.done).code, 0);
  });
});

describe('the Cues panel (light theme)', () => {
  let s: Session;
  before(async () => {
    s = await openSession('light', true, { panel: false });
  });
  after(async () => {
    await s?.wb.close();
    if (s) rmSync(s.dir, { recursive: true, force: true });
  });

  test('before the panel was ever opened, a cue raises a notification that answers it; the status bar counts it', async () => {
    const { page } = s.wb;
    await page.locator('.sidebar .composite.title h2', { hasText: /explorer/i }).waitFor();
    // Belay has read the mailbox once (cues waiting from before are announced by the count, not one by one).
    await runPaletteCommand(page, 'Belay: Answer Next Cue');
    await page.locator('.notification-toast', { hasText: 'Belay: no agent is waiting for you.' }).waitFor({ timeout: 30_000 });
    await runPaletteCommand(page, 'Notifications: Clear All Notifications');
    const running = cue(s, 'earlyagent', 'Which branch should I merge into?', CHOICE);
    const toast = page.locator('.notification-toast', { hasText: 'earlyagent asks: Which branch should I merge into?' });
    await toast.waitFor({ timeout: 15_000 });
    await page.locator('[aria-label="Belay: one agent question is waiting for your answer"]').first().waitFor();
    await toast.getByRole('button', { name: 'Staging' }).click();
    const done = await running.done;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /instructions:\n\nStaging\n/);
    await page.locator('[aria-label="Belay: one agent question is waiting for your answer"]').first().waitFor({ state: 'detached' });
    assert.equal(await page.locator('.sidebar .composite.title h2', { hasText: /belay/i }).count(), 0, 'the Cues panel was never shown');
    await showPanel(s);
  });

  test('with the panel hidden, a cue raises a notification whose option answers it; the status bar counts it', async () => {
    const { page } = s.wb;
    await runPaletteCommand(page, 'View: Show Explorer');
    await page.locator('.sidebar .composite.title h2', { hasText: /explorer/i }).waitFor();
    const running = cue(s, 'notifyagent', 'Pick the target branch', CHOICE);
    const toast = page.locator('.notification-toast', { hasText: 'notifyagent asks: Pick the target branch' });
    await toast.waitFor({ timeout: 15_000 });
    await page.locator('[aria-label="Belay: one agent question is waiting for your answer"]').first().waitFor();
    await toast.getByRole('button', { name: 'Open' }).waitFor();
    // The toast slides in: let its transition finish before the picture.
    await page.locator('.notifications-toasts').evaluate((node) => Promise.all(node.getAnimations({ subtree: true }).map((a) => a.finished)));
    await page.waitForFunction(() => {
      const box = document.querySelector('.notification-toast')?.getBoundingClientRect();
      const bar = document.querySelector('.part.statusbar')?.getBoundingClientRect();
      return !!box && !!bar && box.bottom <= bar.top;
    });
    await s.wb.screenshot('cues-notification-light');
    await toast.getByRole('button', { name: 'Both' }).click();
    const done = await running.done;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /instructions:\n\nBoth\n/);
    await page.locator('[aria-label="Belay: one agent question is waiting for your answer"]').first().waitFor({ state: 'detached' });
    // The activity bar's badge clears too (the panel was hidden all along).
    await page.locator('.activitybar [aria-label^="Belay - One agent question"]').first().waitFor({ state: 'detached', timeout: 10_000 });
    await openBelayContainer(page);
  });

  test('"Open" on a notification shows the panel with that card focused: a number key then selects in it', async () => {
    const { page } = s.wb;
    await runPaletteCommand(page, 'View: Show Explorer');
    await page.locator('.sidebar .composite.title h2', { hasText: /explorer/i }).waitFor();
    const earlier = cue(s, 'otheragent', 'An earlier question', CHOICE);
    await page.locator('.notification-toast', { hasText: 'otheragent asks: An earlier question' }).waitFor({ timeout: 15_000 });
    await runPaletteCommand(page, 'Notifications: Clear All Notifications');
    const running = cue(s, 'openagent', 'Which branch for the hotfix?', CHOICE);
    const toast = page.locator('.notification-toast', { hasText: 'openagent asks: Which branch for the hotfix?' });
    await toast.waitFor({ timeout: 15_000 });
    await toast.getByRole('button', { name: 'Open' }).click();
    await s.frame.locator('article.cue:focus', { hasText: 'Which branch for the hotfix?' }).waitFor();
    await page.keyboard.press('3');
    const c = await card(s, 'Which branch for the hotfix?');
    await c.locator('vscode-button.option.selected', { hasText: 'Both' }).waitFor();
    await shot(s, c, 'cues-open-focused-light');
    await page.keyboard.press('Enter');
    const done = await running.done;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /instructions:\n\nBoth\n/);
    await (await card(s, 'An earlier question')).getByRole('button', { name: 'End', exact: true }).click();
    assert.equal((await earlier.done).code, 0);
  });

  test('every payload UI renders; End answers each', async () => {
    const cues: Array<[string, string, unknown, string]> = [
      ['lchoice', 'Where should I deploy?', CHOICE, 'cues-choice-light'],
      ['lmulti', 'Which checks should run?', MULTI, 'cues-multiple-light'],
      ['lconfirm', 'Ready to ship 1.2.0?', CONFIRM, 'cues-confirm-light'],
      ['lform', 'Release details, please', FORM, 'cues-form-light'],
    ];
    const running = cues.map(([agent, prompt, payload]) => cue(s, agent, prompt, payload));
    const paused = start(bundles.cueme, ['pause', 'lpause'], { env: childEnv(s.cueHome), timeoutMs: 30_000 });
    for (const [, prompt, , name] of cues) await shot(s, await card(s, prompt), name);
    const pauseCard = await card(s, 'Paused. Click Continue');
    await shot(s, pauseCard, 'cues-pause-light');
    // A confirm's decline button is its End; the other cards have End.
    for (const [, prompt, payload] of cues) await (await card(s, prompt)).getByRole('button', { name: payload === CONFIRM ? 'Not yet' : 'End', exact: true }).click();
    await pauseCard.getByRole('button', { name: 'End', exact: true }).click();
    for (const r of [...running, paused]) {
      const done = await r.done;
      assert.equal(done.code, 0, done.stderr);
      assert.match(done.stdout, /^The user did not continue\./);
    }
    await s.frame.getByRole('heading', { name: 'No agent is waiting for you' }).waitFor();
    // The history of one agent: its cue and how it ended.
    const agent = s.frame.locator('details.agent[data-agent-id="lconfirm"]');
    await agent.locator('summary').click();
    await agent.locator('.turn.state-cancelled', { hasText: 'Ready to ship 1.2.0?' }).locator('.answer', { hasText: 'Ended' }).waitFor();
    await s.wb.screenshot('cues-history-light');
  });
});
