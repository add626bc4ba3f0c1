import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runPaletteCommand } from '../../scripts/lib/workbench.ts';
import { openBelayContainer, openWorkbench, type Workbench } from '../support/workbench.ts';

const ANSWER = [
  'Here is the script, and two blocks that go wrong.',
  '',
  '[CREATE_FILE path="greet.py"]',
  'def greet(name: str) -> str:',
  '    return f"Hello, {name}!"',
  '',
  '[/CREATE_FILE]',
  '',
  '[EDIT_FILE path="README.md" start_line="one" end_line="2"]',
  'Bad line number',
  '[/EDIT_FILE]',
  '',
  '[CREATE_FILE path="../escape.txt"]',
  'outside',
  '[/CREATE_FILE]',
  '',
].join('\n');

for (const theme of (process.env.BELAY_UI_THEMES?.split(',') ?? ['dark', 'light']) as Array<'dark' | 'light'>) {
  describe(`command blocks in the editor (${theme} theme)`, () => {
    let wb: Workbench;
    before(async () => {
      wb = await openWorkbench({ theme, settings: { 'belay.blocks.sessionRoot': 'blocks' } });
    });
    after(async () => {
      await wb?.close();
    });

    test('a pasted answer: Python inside CREATE_FILE, diagnostics, a CodeLens on every block', async () => {
      const { page } = wb;
      await runPaletteCommand(page, 'File: New Untitled Text File');
      const editor = page.locator('.editor-instance .monaco-editor').first();
      await editor.waitFor();
      // Pasted, as a person does (typing would auto-indent the lines).
      await page.evaluate((text) => {
        const data = new DataTransfer();
        data.setData('text/plain', text);
        document.activeElement?.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
      }, ANSWER);
      await page.locator('.monaco-editor .view-line', { hasText: '[CREATE_FILE path="../escape.txt"]' }).first().waitFor();
      // Content detection switched the language.
      await page.locator('.statusbar-item', { hasText: 'CodingAgent' }).first().waitFor();
      // A lens above each block, and Apply All above the first: it counts only what can be applied.
      const lenses = page.locator('.monaco-editor .codelens-decoration');
      await lenses.filter({ hasText: 'Apply All (1)' }).first().waitFor();
      await page.locator('.monaco-editor .codelens-decoration a', { hasText: /^Preview$/ }).first().waitFor();
      await lenses.filter({ hasText: "REJECTED: Path '../escape.txt' is outside workspace" }).first().waitFor();
      await lenses.filter({ hasText: 'Not executable: EDIT_FILE start_line must be an integer' }).first().waitFor();
      // Squiggles: the bad line number and the path outside the workspace.
      await page.locator('.monaco-editor .squiggly-error').nth(1).waitFor();
      // `def` in the body is coloured as Python, unlike a word of prose.
      const colorOf = (text: string) =>
        page.evaluate((t) => {
          const span = [...document.querySelectorAll('.monaco-editor .view-line span span')].find((s) => (s.textContent ?? '').replace(/\u00a0/g, ' ').trim().startsWith(t));
          return span ? getComputedStyle(span).color : undefined;
        }, text);
      await page.locator('.monaco-editor .view-line span span', { hasText: /^def$/ }).first().waitFor();
      await wb.screenshot(`blocks-answer-${theme}`);
      const keyword = await colorOf('def');
      const prose = await colorOf('Here is the script');
      assert.ok(keyword && prose, 'tokens not found');
      assert.notEqual(keyword, prose, 'def is not highlighted as Python');
    });

    test('Preview shows the planned file in a diff editor and writes nothing', async () => {
      const { page } = wb;
      await page.locator('.monaco-editor .codelens-decoration a', { hasText: /^Preview$/ }).first().click();
      await page.locator('.monaco-diff-editor').first().waitFor();
      await page.locator('.monaco-diff-editor .view-line', { hasText: 'return f"Hello, {name}!"' }).first().waitFor();
      await assert.rejects(stat(path.join(wb.workspace, 'blocks', 'workspace', 'greet.py')), /ENOENT/);
      await wb.screenshot(`blocks-preview-${theme}`);
    });

    test('Preview All opens the refactor preview, a checkbox per file; Discard writes nothing', async () => {
      const { page } = wb;
      await page.locator('.tabs-container .tab', { hasText: 'Here is the script' }).first().click();
      await page.locator('.monaco-editor .codelens-decoration a', { hasText: 'Preview All' }).first().click();
      const panel = page.locator('.part.panel');
      await panel.locator('.monaco-list-row', { hasText: 'greet.py' }).first().waitFor();
      await panel.locator('.monaco-list-row .monaco-checkbox, .monaco-list-row .edit-checkbox, .monaco-list-row input[type=checkbox]').first().waitFor();
      await wb.screenshot(`blocks-preview-all-${theme}`);
      await panel.locator('.monaco-button', { hasText: 'Discard' }).first().click();
      await panel.locator('.monaco-list-row', { hasText: 'greet.py' }).first().waitFor({ state: 'detached' });
      await assert.rejects(stat(path.join(wb.workspace, 'blocks', 'workspace', 'greet.py')), /ENOENT/);
    });
  });
}

describe('the session loop from the keyboard (dark theme)', () => {
  let wb: Workbench;
  before(async () => {
    wb = await openWorkbench({ theme: 'dark', settings: { 'belay.blocks.sessionRoot': 'blocks' } });
  });
  after(async () => {
    await wb?.close();
  });

  test('Start Session asks for the task, opens the first outbox, and the Sessions view lists it', async () => {
    const { page } = wb;
    await runPaletteCommand(page, 'Belay: Start Session');
    const input = page.locator('.quick-input-widget input.input');
    await input.waitFor();
    await input.fill('Add a --lines flag to wordcount.py');
    await page.keyboard.press('Enter');
    const tab = page.locator('.tabs-container .tab', { hasText: /_seq0001\.txt/ });
    await tab.first().waitFor();
    const sessionFiles = (await readdir(path.join(wb.workspace, 'blocks', 'sessions'))).filter((f) => f.endsWith('.json'));
    assert.equal(sessionFiles.length, 2, 'the demo session and the new one');
    await openBelayContainer(page);
    const sessions = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /sessions/i }) });
    await sessions.locator('.monaco-list-row', { hasText: 'Add a --lines flag to wordcount.py' }).first().waitFor();
    await sessions.locator('.monaco-list-row', { hasText: 'Write a word-count script in Python' }).first().waitFor();
    assert.match((await sessions.locator('.monaco-list-row', { hasText: 'Add a --lines flag' }).first().textContent()) ?? '', /#1 · open/);
    await wb.screenshot('blocks-sessions-dark');
  });
});

describe('Paste LLM Answer acts on the session you are looking at (dark theme)', () => {
  let wb: Workbench;
  const sessionsDir = () => path.join(wb.workspace, 'blocks', 'sessions');
  const sessionOf = async (task: string) => {
    for (const name of await readdir(sessionsDir())) {
      if (!name.endsWith('.json')) continue;
      const state = JSON.parse(await readFile(path.join(sessionsDir(), name), 'utf8')) as { sessionId: string; task: string; sequenceNumber: number; isComplete: boolean };
      if (state.task === task) return state;
    }
    throw new Error(`no session for ${task}`);
  };
  const copy = (text: string) => wb.page.evaluate((t) => navigator.clipboard.writeText(t), text);
  const start = async (task: string) => {
    const outboxTabs = wb.page.locator('.tabs-container .tab', { hasText: /_seq0001\.txt/ });
    const before = await outboxTabs.count();
    await runPaletteCommand(wb.page, 'Belay: Start Session');
    const input = wb.page.locator('.quick-input-widget input.input');
    await input.waitFor();
    await input.fill(task);
    await wb.page.keyboard.press('Enter');
    // The new session's outbox opens in a tab of its own.
    await outboxTabs.nth(before).waitFor();
    return sessionOf(task);
  };
  const focusTab = async (name: string) => {
    await wb.page.locator('.tabs-container .tab', { hasText: name }).first().click();
    await wb.page.locator('.tabs-container .tab.active', { hasText: name }).first().waitFor();
    // Into the text, as a person clicks (focusing the hidden textarea is not enough for keybindings).
    await wb.page.locator('.editor-instance .monaco-editor .view-line').nth(3).click();
  };
  const toast = (text: string | RegExp) => wb.page.locator('.notifications-toasts .notification-toast', { hasText: text }).first();

  before(async () => {
    wb = await openWorkbench({ theme: 'dark', settings: { 'belay.blocks.sessionRoot': 'blocks' } });
    await wb.browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: wb.host.origin });
  });
  after(async () => {
    await wb?.close();
  });

  test('a completed session never takes a new answer, not even the newest open one through it', async () => {
    const { page } = wb;
    const a = await start('Session A: say hello');
    await copy('[CREATE_FILE path="a.txt"]\nfrom A\n[/CREATE_FILE]\n[DONE]\nA is done\n[/DONE]\n');
    await focusTab(`${a.sessionId}_seq0001.txt`);
    await page.keyboard.press('Control+Alt+V');
    await toast(`Session ${a.sessionId} is complete`).waitFor();
    assert.equal((await sessionOf('Session A: say hello')).isComplete, true);
    await page.keyboard.press('Escape');
    const b = await start('Session B: say goodbye');
    // Back to A's outbox: the answer is meant for A, which is complete; B must stay untouched.
    await copy('[CREATE_FILE path="wrong.txt"]\nmeant for A\n[/CREATE_FILE]\n');
    await focusTab(`${a.sessionId}_seq0001.txt`);
    await page.keyboard.press('Control+Alt+V');
    await toast(new RegExp(`Session ${a.sessionId} is complete: it takes no new answer`)).waitFor();
    await wb.screenshot('blocks-paste-completed-session');
    const afterB = await sessionOf('Session B: say goodbye');
    assert.equal(afterB.sequenceNumber, 1, 'the answer went to session B');
    assert.equal(afterB.isComplete, false);
    assert.equal(existsSync(path.join(wb.workspace, 'blocks', 'workspace', 'wrong.txt')), false, 'the answer was applied');
    assert.equal(b.sessionId, afterB.sessionId);
  });

  test('with no session document focused, it asks which open session the answer is for', async () => {
    const { page } = wb;
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+P');
    const input = page.locator('.quick-input-widget input.input');
    await input.fill('example.agent');
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'example.agent' }).first().click();
    await focusTab('example.agent');
    await copy('[CREATE_FILE path="bye.txt"]\ngoodbye\n[/CREATE_FILE]\n');
    await page.keyboard.press('Control+Alt+V');
    const picker = page.locator('.quick-input-widget');
    await picker.locator('.monaco-list-row', { hasText: 'Session B: say goodbye' }).first().waitFor();
    await picker.locator('.monaco-list-row', { hasText: 'Write a word-count script in Python' }).first().waitFor();
    assert.equal(await picker.locator('.monaco-list-row', { hasText: 'Session A' }).count(), 0, 'a completed session is offered');
    await wb.screenshot('blocks-paste-pick-session');
    await picker.locator('.monaco-list-row', { hasText: 'Session B: say goodbye' }).first().click();
    const b = await sessionOf('Session B: say goodbye');
    await page.locator('.tabs-container .tab.active', { hasText: `${b.sessionId}_seq0002.txt` }).first().waitFor();
    assert.equal((await sessionOf('Session B: say goodbye')).sequenceNumber, 2);
    assert.equal(await readFile(path.join(wb.workspace, 'blocks', 'workspace', 'bye.txt'), 'utf8'), 'goodbye');
    assert.equal((await sessionOf('Write a word-count script in Python, document it in README.md, and clean up the workspace.')).sequenceNumber, 1);
  });

  test('an edit of a file changed since the LLM read it is carried to where its lines are now, and says so', async () => {
    const { page } = wb;
    const c = await start('Session C: polish the notes');
    const notes = path.join(wb.workspace, 'blocks', 'workspace', 'notes.txt');
    await writeFile(notes, 'Notes the LLM asks to read.\nSecond line.\nThird line.\n');
    await copy('[READ_FILE path="notes.txt"]\n');
    await focusTab(`${c.sessionId}_seq0001.txt`);
    await page.keyboard.press('Control+Alt+V');
    await page.locator('.tabs-container .tab.active', { hasText: `${c.sessionId}_seq0002.txt` }).first().waitFor();
    // Someone adds two lines at the top after the LLM read the file, and the LLM answers.
    await writeFile(notes, 'TODO: tidy\n\nNotes the LLM asks to read.\nSecond line.\nThird line.\n');
    const answer = path.join(wb.workspace, 'blocks', 'inbox', `${c.sessionId}_answer0002_1.txt`);
    await writeFile(answer, 'Rewording the second line.\n\n[EDIT_FILE path="notes.txt" start_line="2" end_line="2"]\nThe second line, reworded.\n[/EDIT_FILE]\n');
    // Opened by its path (the file search may not have indexed it yet).
    await page.keyboard.press('Control+P');
    await page.locator('.quick-input-widget input.input').fill(answer);
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: `${c.sessionId}_answer0002` }).first().click();
    const moved = page.locator('.monaco-editor .codelens-decoration a', { hasText: 'Apply (moved to lines 4-4: the file changed)' }).first();
    await moved.waitFor();
    await page.locator('.monaco-editor .squiggly-info').first().waitFor();
    await wb.screenshot('blocks-relocated-edit');
    await moved.click();
    await page.locator('.monaco-editor .codelens-decoration a', { hasText: "Applied: Edited 'notes.txt' lines 2-2 (now lines 4-4" }).first().waitFor();
    assert.equal(await readFile(notes, 'utf8'), 'TODO: tidy\n\nNotes the LLM asks to read.\nThe second line, reworded.\nThird line.\n');
  });
});

const STATES_ANSWER = [
  'Two edits and a new file.',
  '',
  '[EDIT_FILE path="README.md" start_line="1" end_line="1"]',
  '# Demo project, edited by the LLM',
  '[/EDIT_FILE]',
  '',
  '[CREAT_FILE path="typo.txt"]',
  'created after a quick fix',
  '[/CREAT_FILE]',
  '',
  '[DELETE_FILE path="obsolete.txt"]',
  '',
].join('\n');

describe('block states follow the files (dark theme)', () => {
  let wb: Workbench;
  const inWorkspace = (file: string) => path.join(wb.workspace, 'blocks', 'workspace', file);
  const lens = (text: string | RegExp) => wb.page.locator('.monaco-editor .codelens-decoration a', { hasText: text }).first();
  const tab = (name: string) => wb.page.locator('.tabs-container .tab', { hasText: name }).first();
  const focusEditorOf = async (name: string) => {
    await tab(name).click();
    await wb.page.locator('.tabs-container .tab.active', { hasText: name }).first().waitFor();
    await wb.page.locator('.editor-instance .monaco-editor .view-line').first().click();
  };
  before(async () => {
    wb = await openWorkbench({ theme: 'dark', settings: { 'belay.blocks.sessionRoot': 'blocks' } });
    await writeFile(path.join(wb.workspace, 'blocks', 'answers', 'states.agent'), STATES_ANSWER);
  });
  after(async () => {
    await wb?.close();
  });

  test('Apply, then Ctrl+Z in the file: the lens offers Apply again; Ctrl+Shift+Z: Applied again; the lens opens the file', async () => {
    const { page } = wb;
    await page.keyboard.press('Control+P');
    await page.locator('.quick-input-widget input.input').fill('states.agent');
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'states.agent' }).first().click();
    await lens(/^Apply$/).click();
    const applied = lens("Applied: Edited 'README.md' lines 1-1");
    await applied.waitFor();
    assert.equal((await readFile(inWorkspace('README.md'), 'utf8')).split('\n')[0], '# Demo project, edited by the LLM');
    await wb.screenshot('blocks-applied');
    // The applied lens opens what it wrote.
    await applied.click();
    await page.locator('.tabs-container .tab.active', { hasText: 'README.md' }).first().waitFor();
    await page.locator('.editor-instance .monaco-editor .view-line').first().click();
    await page.keyboard.press('Control+Z');
    await page.locator('.editor-instance .monaco-editor .view-line', { hasText: /^#\sDemo\sproject$/ }).first().waitFor();
    await focusEditorOf('states.agent');
    await lens(/^Apply$/).waitFor();
    await lens('Apply All (2)').waitFor();
    await wb.screenshot('blocks-after-undo');
    await focusEditorOf('README.md');
    await page.keyboard.press('Control+Shift+Z');
    await page.locator('.editor-instance .monaco-editor .view-line', { hasText: 'edited by the LLM' }).first().waitFor();
    await page.keyboard.press('Control+S');
    await focusEditorOf('states.agent');
    await applied.waitFor();
  });

  test('a misspelt tag has a quick fix; the fixed block previews as a diff it can be applied from', async () => {
    const { page } = wb;
    await page.locator('.monaco-editor .view-line', { hasText: '[CREAT_FILE path="typo.txt"]' }).first().locator('span', { hasText: 'CREAT_FILE' }).first().click();
    await page.keyboard.press('Control+.');
    const fix = page.locator('.action-widget .monaco-list-row', { hasText: 'Change to CREATE_FILE' }).first();
    await fix.waitFor();
    await wb.screenshot('blocks-quick-fix');
    await fix.click();
    await page.locator('.monaco-editor .view-line', { hasText: '[/CREATE_FILE]' }).first().waitFor();
    // Its lenses: Apply and Preview, like any block that can be applied.
    await page.locator('.monaco-editor .codelens-decoration', { hasText: 'Apply All (2)' }).first().waitFor();
    await page.locator('.monaco-editor .codelens-decoration a', { hasText: /^Preview$/ }).first().click();
    await page.locator('.monaco-diff-editor .view-line', { hasText: 'created after a quick fix' }).first().waitFor();
    const applyBlock = page.locator('.editor-actions a.action-label[aria-label="Apply This Block"]').first();
    await applyBlock.waitFor();
    await wb.screenshot('blocks-preview-apply');
    await applyBlock.click();
    await focusEditorOf('states.agent');
    await lens("Applied: Created 'typo.txt'").waitFor();
    assert.equal(await readFile(inWorkspace('typo.txt'), 'utf8'), 'created after a quick fix');
  });

  test('Undo Answer puts back every file the answer changed, and the blocks can be applied again', async () => {
    const { page } = wb;
    await lens('Apply All (1)').click();
    await lens("Applied: Deleted 'obsolete.txt'").waitFor();
    assert.equal(existsSync(inWorkspace('obsolete.txt')), false);
    await wb.screenshot('blocks-all-applied');
    await lens('Undo Answer').click();
    await lens('Apply All (3)').waitFor();
    assert.equal(existsSync(inWorkspace('obsolete.txt')), true, 'the deleted file is back');
    assert.equal(existsSync(inWorkspace('typo.txt')), false, 'the created file is gone');
    assert.equal((await readFile(inWorkspace('README.md'), 'utf8')).split('\n')[0], '# Demo project');
    await page.locator('.notifications-toasts .notification-toast', { hasText: 'Put back 3 files' }).first().waitFor();
    await wb.screenshot('blocks-undo-answer');
  });

  test('a partial Preview All: the files ticked are applied, the block left unticked still offers Apply', async () => {
    const { page } = wb;
    await lens('Preview All').click();
    const panel = page.locator('.part.panel');
    // Every file starts unticked: tick two of the three.
    await panel.locator('.monaco-list-row', { hasText: 'obsolete.txt' }).first().waitFor();
    for (const name of ['README.md', 'typo.txt']) await panel.locator('.monaco-list-row', { hasText: name }).first().locator('.monaco-checkbox, .edit-checkbox, input[type=checkbox]').first().click();
    await wb.screenshot('blocks-preview-all-partial');
    await panel.locator('.monaco-button', { hasText: /^Apply$/ }).first().click();
    await lens("Applied: Created 'typo.txt'").waitFor();
    await lens("Applied: Edited 'README.md' lines 1-1").waitFor();
    await lens('Apply All (1)').waitFor();
    assert.equal(existsSync(inWorkspace('obsolete.txt')), true, 'the unticked file was deleted');
    await wb.screenshot('blocks-after-partial-preview');
  });
});

describe('Preview All in an untrusted workspace (dark theme)', () => {
  let wb: Workbench;
  before(async () => {
    wb = await openWorkbench({ theme: 'dark', untrusted: true });
  });
  after(async () => {
    await wb?.close();
  });

  test('shows read-only diffs of every planned file, with nothing that could apply them', async () => {
    const { page } = wb;
    await page.keyboard.press('Control+P');
    await page.locator('.quick-input-widget input.input').fill('example.agent');
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'example.agent' }).first().click();
    await page.locator('.monaco-editor .codelens-decoration a', { hasText: 'Preview All' }).first().click();
    // A multi-file diff (no refactor preview, whose Apply would write).
    await page.locator('.tabs-container .tab.active', { hasText: 'read-only: untrusted workspace' }).first().waitFor();
    await page.locator('.monaco-diff-editor .view-line', { hasText: 'def count_words' }).first().waitFor();
    assert.equal(await page.locator('.part.panel .monaco-button', { hasText: /^Apply$/ }).count(), 0, 'the refactor preview offers Apply');
    await page.locator('.notifications-toasts .notification-toast', { hasText: 'applies no command block in an untrusted workspace' }).first().waitFor();
    await wb.screenshot('blocks-untrusted-preview-all');
    assert.equal(existsSync(path.join(wb.workspace, 'blocks', 'workspace', 'wordcount.py')), false);
  });
});

describe('Send to Model (dark theme)', () => {
  let wb: Workbench;
  before(async () => {
    wb = await openWorkbench({ theme: 'dark', settings: { 'belay.blocks.sessionRoot': 'blocks' }, testModels: true });
  });
  after(async () => {
    await wb?.close();
  });

  test('the outbox goes to a model the person picks; its answer opens with lenses, applied only on a click; the results go back', async () => {
    const { page } = wb;
    await runPaletteCommand(page, 'Belay: Start Session');
    const input = page.locator('.quick-input-widget input.input');
    await input.waitFor();
    await input.fill('Write hello.txt');
    await page.keyboard.press('Enter');
    await page.locator('.tabs-container .tab.active', { hasText: /_seq0001\.txt/ }).first().waitFor();
    await page.locator('.editor-actions a.action-label[aria-label="Send to Model"]').first().click();
    const pick = page.locator('.quick-input-widget .monaco-list-row', { hasText: 'Belay Test Model' }).first();
    await pick.waitFor();
    await wb.screenshot('blocks-send-to-model-pick');
    await pick.click();
    await page.locator('.tabs-container .tab.active', { hasText: /_answer0001_\d+\.agent/ }).first().waitFor();
    const lens = (text: string | RegExp) => page.locator('.monaco-editor .codelens-decoration a', { hasText: text }).first();
    await lens('Send Results to Model').waitFor();
    await lens('Apply Files Only (1)').waitFor();
    assert.equal(existsSync(path.join(wb.workspace, 'blocks', 'workspace', 'hello.txt')), false, 'applied without a click');
    await wb.screenshot('blocks-model-answer');
    await lens('Apply Files Only (1)').click();
    await lens("Applied: Created 'hello.txt'").waitFor();
    await lens('Send Results to Model').click();
    // The command was left out: Belay asks before telling the model so.
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.locator('.dialog-message-text', { hasText: '1 block of this answer is not applied' }).waitFor();
    await dialog.locator('a.monaco-button', { hasText: 'Continue' }).click();
    await page.locator('.tabs-container .tab.active', { hasText: /_answer0002_\d+\.agent/ }).first().waitFor();
    await lens('Task Done').waitFor();
    await wb.screenshot('blocks-model-second-answer');
    assert.equal(await readFile(path.join(wb.workspace, 'blocks', 'workspace', 'hello.txt'), 'utf8'), 'Hello from the test model');
    const outboxes = (await readdir(path.join(wb.workspace, 'blocks', 'outbox'))).filter((f) => f.endsWith('_seq0002.txt'));
    assert.equal(outboxes.length, 1);
    const second = await readFile(path.join(wb.workspace, 'blocks', 'outbox', outboxes[0]!), 'utf8');
    assert.match(second, /\[OK\] CREATE_FILE: Created 'hello\.txt'\n\[FAILED\] RUN_COMMAND: Not applied: the person left this block out/);
  });
});
