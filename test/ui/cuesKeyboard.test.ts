// The Cues panel driven as a keyboard user drives it, in the real workbench: the demo's scripted
// agent (demo/cues/scripted-agent.sh, a real shell running the real cueme) asks its six cues one
// after another, and each is answered from the keyboard alone, with no click: after every answer
// the keyboard is already on the next question. Then a long form in a short sidebar: the card
// scrolls in itself, its buttons stay in sight, and it offers the editor tab.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { FrameLocator, Page } from 'playwright-core';
import { Mailbox } from '../../src/cues/core/store.ts';
import { buildBundles, childEnv, envelope, start, type Bundles } from '../support/cues/helpers.ts';
import { repoRoot } from '../../scripts/lib/paths.ts';
import { cuesFrame, openBelayContainer, openWorkbench, type Workbench } from '../support/workbench.ts';

let bundles: Bundles;
let wb: Workbench;
let frame: FrameLocator;
let dir: string;
let cueHome: string;

before(async () => {
  bundles = await buildBundles();
  dir = mkdtempSync(path.join(tmpdir(), 'belay-cues-keys-'));
  cueHome = path.join(dir, '.cue');
  wb = await openWorkbench({ settings: { 'belay.cues.home': cueHome, 'belay.cues.notifications': false } });
  frame = cuesFrame(wb.page);
  await openBelayContainer(wb.page);
  for (const title of ['Tasks', 'Sessions']) {
    const header = wb.page.locator('.sidebar .pane-header', { has: wb.page.locator('h3.title', { hasText: title }) });
    if ((await header.getAttribute('aria-expanded')) === 'true') await header.click();
  }
  await frame.locator('.detail code', { hasText: cueHome }).waitFor({ timeout: 30_000 });
});
after(async () => {
  await wb?.close();
  if (bundles) rmSync(bundles.dir, { recursive: true, force: true });
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The answer the mailbox holds for a request (read by the test itself, not through Belay). */
function answerOf(requestId: string): string | undefined {
  const mailbox = Mailbox.open({ home: cueHome });
  try {
    const response = mailbox.getResponse(requestId);
    return response ? (response.cancelled ? '(cancelled)' : response.text) : undefined;
  } finally {
    mailbox.close();
  }
}

/** Waits until the card asking `prompt` holds the keyboard (the card itself or a control in it); returns its request id. */
async function keyboardOn(prompt: string): Promise<string> {
  const card = frame.locator('article.cue:focus-within', { hasText: prompt });
  await card.waitFor({ timeout: 20_000 });
  return (await card.getAttribute('data-request-id'))!;
}

/** Waits until the mailbox holds the answer to `requestId`. */
async function answered(requestId: string): Promise<string> {
  await frame.locator(`article.cue[data-request-id="${requestId}"]`).waitFor({ state: 'detached', timeout: 20_000 });
  const text = answerOf(requestId);
  assert.ok(text !== undefined, `the mailbox holds an answer to ${requestId}`);
  return text;
}

/** Runs a palette command with the keyboard: F1, its title, Enter. */
async function paletteByKeys(page: Page, title: string): Promise<void> {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input.input');
  await input.waitFor();
  await page.keyboard.type(`>${title}`);
  await page.locator(`.quick-input-widget .monaco-list-row[aria-label^="${title}"]`).first().waitFor();
  await page.keyboard.press('Enter');
  await input.waitFor({ state: 'hidden' });
}

describe('the Cues panel from the keyboard alone', () => {
  test('the demo agent six cues in a row (text, choice, multiple choice, confirm, form, pause), each answered by keys only', async () => {
    const { page } = wb;
    const agent = spawn('sh', [path.join(repoRoot, 'demo', 'cues', 'scripted-agent.sh')], {
      cwd: wb.workspace,
      env: childEnv(cueHome, { CUEME: `${process.execPath} ${bundles.cueme}` }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    agent.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    agent.stderr.setEncoding('utf8').on('data', (c: string) => (out += c));
    const exited = new Promise<number | null>((resolve) => agent.on('close', resolve));
    try {
      await frame.locator('article.cue', { hasText: 'scripted' }).waitFor({ timeout: 20_000 });
      // Into the view by keys, as a keyboard user gets there: the keyboard lands on the card.
      await page.locator('.monaco-workbench').press('Escape');
      await paletteByKeys(page, 'Belay: Focus on Cues View');
      const text = await keyboardOn('scripted');
      // Typing on the card starts the reply; Enter sends it.
      await page.keyboard.type('hello from the keys');
      await page.keyboard.press('Enter');
      assert.equal(await answered(text), 'hello from the keys');

      const choice = await keyboardOn('Which environment should I deploy to?');
      await page.keyboard.press('2');
      await page.keyboard.press('Enter');
      assert.equal(await answered(choice), 'production');

      const multiple = await keyboardOn('Which checks should run before the release?');
      await page.keyboard.press('1');
      await page.keyboard.press('3');
      await wb.screenshot('cues-keys-multiple-dark');
      await page.keyboard.press('Enter');
      assert.match(await answered(multiple), /^lint\ne2e tests$/);

      const confirm = await keyboardOn('Ready to tag the release?');
      await page.keyboard.press('Control+Enter');
      assert.equal(await answered(confirm), 'Tag it');

      // A form: the keyboard starts on its first field.
      const form = await keyboardOn('A few details for the changelog');
      const card = frame.locator(`article.cue[data-request-id="${form}"]`);
      await card.locator('vscode-radio:focus', { hasText: '1.2.0' }).waitFor();
      await page.keyboard.press('Space');
      await page.keyboard.press('Tab');
      await card.locator('vscode-checkbox:focus', { hasText: 'cli' }).waitFor();
      await page.keyboard.press('Space');
      await page.keyboard.press('Tab');
      await page.keyboard.press('Tab');
      await page.keyboard.press('Space');
      await page.keyboard.press('Tab');
      await card.locator('vscode-textfield:focus').waitFor();
      await page.keyboard.type('Keys all the way');
      await wb.screenshot('cues-keys-form-dark');
      await page.keyboard.press('Enter');
      assert.equal(await answered(form), 'Version: 1.2.0\nAreas: cli, docs\nHeadline: Keys all the way');

      const pause = await keyboardOn('Demo finished.');
      await page.keyboard.press('Enter');
      await answered(pause);
      assert.equal(await exited, 0, out);
      // Nothing left: the keyboard is on the empty state, which says so.
      await frame.locator('section.empty:focus', { hasText: 'No agent is waiting for you' }).waitFor();
      await wb.screenshot('cues-keys-done-dark');
      assert.match(out, /=== cue: Which environment should I deploy to\?[\s\S]*production/);
      assert.match(out, /Tag it/);
    } finally {
      agent.kill();
    }
  });

  test('a long form in a short sidebar scrolls in its card with Send in sight, and offers the editor tab', async () => {
    const { page } = wb;
    await page.setViewportSize({ width: 1100, height: 520 });
    const fields = Array.from({ length: 10 }, (_, i) => ({ label: `Field ${i + 1}`, kind: 'text' }));
    const running = start(bundles.cueme, ['cue', 'FormAgent', '-'], {
      env: childEnv(cueHome),
      input: envelope('## Release form\n\nPlease fill in **every** field below; they go into the release notes.', { type: 'form', fields }),
      timeoutMs: 60_000,
    });
    const card = frame.locator('article.cue', { hasText: 'Release form' });
    await card.waitFor({ timeout: 20_000 });
    await wb.screenshot('cues-long-form-arrived-dark');
    const view = (await page.locator('iframe.webview.ready').first().boundingBox())!;
    const cardBox = (await card.boundingBox())!;
    assert.ok(cardBox.height <= view.height, `the card fits the view: ${JSON.stringify({ card: cardBox, view })}`);
    const body = card.locator('.cue-body');
    const [scrollHeight, clientHeight] = await body.evaluate((b) => [b.scrollHeight, b.clientHeight]);
    assert.ok(scrollHeight > clientHeight, `the form scrolls inside the card (${scrollHeight} > ${clientHeight})`);
    const send = card.getByRole('button', { name: 'Send', exact: true });
    const inView = async (what: string) => {
      const box = (await send.boundingBox())!;
      assert.ok(box.y >= view.y && box.y + box.height <= view.y + view.height + 1, `Send is in sight ${what}: ${JSON.stringify({ box, view })}`);
    };
    await inView('at the top of the form');
    const more = card.locator('button.more');
    await more.waitFor();
    await wb.screenshot('cues-long-form-short-sidebar-dark');
    // The last field, reached in the card's own scroll: Send is still in sight.
    await card.locator('vscode-textfield').last().scrollIntoViewIfNeeded();
    await inView('at the bottom of the form');
    await wb.screenshot('cues-long-form-scrolled-dark');
    await more.click();
    await page.locator('.tabs-container .tab', { hasText: 'Cues: FormAgent' }).waitFor();
    await page.locator('iframe.webview.ready').nth(1).waitFor();
    const editor = page.frameLocator('iframe.webview.ready').last().frameLocator('#active-frame');
    const editorCard = editor.locator('article.cue', { hasText: 'Release form' });
    await editorCard.waitFor();
    assert.equal(await editorCard.locator('vscode-textfield').count(), 10, 'every field is in the editor tab');
    assert.equal(await editorCard.locator('button.more').count(), 0, 'the editor tab has room: no hint there');
    await wb.screenshot('cues-long-form-editor-dark');
    // Answered there, from the keyboard: the first field has it, Ctrl+Enter sends the form as it is.
    await editor.locator('article.cue vscode-textfield:focus').waitFor();
    await page.keyboard.type('v2');
    await page.keyboard.press('Control+Enter');
    const done = await running.done;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /Field 1: v2/);
  });
});
