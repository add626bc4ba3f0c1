// "Belay: Install 'belay' and 'cueme' Commands in PATH" from the palette, as a person runs it: the
// folder picker offers ~/.local/bin, the launchers land there and run, a warning says the folder is
// not on PATH with the line to add; the uninstall command takes them away.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runPaletteCommand } from '../../scripts/lib/workbench.ts';
import { openWorkbench, type Workbench } from '../support/workbench.ts';

describe('the belay and cueme commands installed from the palette', () => {
  let wb: Workbench;
  before(async () => {
    wb = await openWorkbench();
  });
  after(async () => {
    await wb?.close();
  });

  test('the default folder is offered, the launchers run, and the PATH line is given', async () => {
    const { page } = wb;
    // The host's HOME is a folder of its own (scripts/lib/host.ts): its ~/.local/bin is not on PATH.
    const bin = path.join(wb.host.stateDir, 'home', '.local', 'bin');
    await runPaletteCommand(page, "Belay: Install 'belay' and 'cueme' Commands in PATH");
    const row = page.locator('.quick-input-widget .monaco-list-row', { hasText: bin });
    await row.first().waitFor();
    assert.match((await row.first().textContent()) ?? '', /not on your PATH yet/);
    await wb.screenshot('install-commands-picker');
    await row.first().click();
    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'which is not on your PATH' });
    await toast.first().waitFor();
    assert.match((await toast.first().textContent()) ?? '', /export PATH="\$HOME\/\.local\/bin:\$PATH"/);
    await wb.screenshot('install-commands-installed');
    assert.deepEqual(readdirSync(bin).sort(), ['belay', 'cueme']);
    const help = spawnSync(path.join(bin, 'belay'), ['--help'], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin', HOME: path.dirname(path.dirname(bin)) } });
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /^Usage: belay <command>/);

    await runPaletteCommand(page, "Belay: Uninstall 'belay' and 'cueme' Commands from PATH");
    await page.locator('.notifications-toasts .notification-toast', { hasText: `Removed Belay's 'belay' and 'cueme' from ${bin}` }).first().waitFor();
    assert.equal(existsSync(path.join(bin, 'belay')) || existsSync(path.join(bin, 'cueme')), false);
  });
});
