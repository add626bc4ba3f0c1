// "Install 'belay' and 'cueme' Commands in PATH" inside the real extension host: the launchers it
// writes run the extension's own bundles on the host's runtime, answer --help, and carry a real
// cue round trip through the mailbox; the uninstall command takes them away again.
import * as assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { Mailbox } from '../../src/cues/core/store.ts';
import { waitForChange } from '../../src/cues/core/watch.ts';
import { activateBelay } from './helpers.ts';

interface InstallResult {
  folder: string;
  written: string[];
  onPath: boolean;
}

suite('Belay command lines in PATH', () => {
  let dir: string;
  let bin: string;

  suiteSetup(async () => {
    await activateBelay();
    dir = mkdtempSync(path.join(os.tmpdir(), 'belay-commands-host-'));
    // A folder name with a space, quotes and a `$(...)`: the launchers must keep it one word.
    bin = path.join(dir, `my "bin" it's $(touch pwned)`);
  });

  suiteTeardown(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  test('the install command writes launchers that run belay and cueme on the editor runtime', async () => {
    const result = await vscode.commands.executeCommand<InstallResult | undefined>('belay.installCommandLines', { folder: bin });
    assert.ok(result, 'the command installed nothing');
    assert.equal(result.folder, bin);
    assert.equal(result.onPath, false);
    assert.deepEqual(readdirSync(bin).sort(), ['belay', 'cueme']);
    const launcher = readFileSync(path.join(bin, 'cueme'), 'utf8');
    assert.ok(launcher.includes(process.execPath), `the launcher does not run ${process.execPath}:\n${launcher}`);
    const belay = vscode.extensions.getExtension('belay.belay')!;
    assert.ok(launcher.includes(path.join(belay.extensionPath, 'dist', 'cueme.js')), launcher);
    // A shell with only the system's folders and the launchers' on PATH: no Node of its own needed.
    const env = { PATH: `${bin}:/usr/bin:/bin`, HOME: dir };
    for (const [name, usage] of [['belay', /^Usage: belay <command>/], ['cueme', /^Usage:\n  cueme join/]] as const) {
      const r = spawnSync('sh', ['-c', `${name} --help`], { cwd: dir, env, encoding: 'utf8' });
      assert.equal(r.status, 0, `${name} --help: ${r.stderr}`);
      assert.match(r.stdout, usage);
    }
    assert.equal(existsSync(path.join(dir, 'pwned')), false, 'the folder name ran as a command');
  });

  test('installing again into a folder on PATH replaces the launchers and says the folder is on PATH', async () => {
    const saved = process.env.PATH;
    process.env.PATH = `${saved ?? ''}${path.delimiter}${bin}${path.sep}`;
    try {
      const again = await vscode.commands.executeCommand<InstallResult | undefined>('belay.installCommandLines', { folder: bin });
      assert.equal(again?.onPath, true);
      assert.deepEqual(readdirSync(bin).sort(), ['belay', 'cueme']);
    } finally {
      process.env.PATH = saved;
    }
  });

  test('a real cue round trip through the installed cueme; belay cues answers it', async () => {
    const cueHome = path.join(dir, 'mailbox');
    mkdirSync(cueHome, { recursive: true });
    const mailbox = Mailbox.open({ home: cueHome });
    try {
      const env = { PATH: `${bin}:/usr/bin:/bin`, HOME: dir, CUE_HOME: cueHome };
      const cue = spawn('sh', ['-c', 'cueme cue pathagent -'], { cwd: dir, env, stdio: ['pipe', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      cue.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
      cue.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
      const done = new Promise<number | null>((resolve) => cue.on('close', resolve));
      cue.stdin.end('<cueme_prompt>\nInstalled from the editor?\n</cueme_prompt>\n');
      const request = await waitForChange(
        (onChange) => mailbox.watch(onChange),
        () => mailbox.listRequests({ pendingOnly: true, agentId: 'pathagent' })[0],
        AbortSignal.timeout(20_000),
      );
      assert.ok(request, 'the cue never reached the mailbox');
      assert.equal(request.prompt, 'Installed from the editor?');
      const answered = spawnSync('sh', ['-c', `belay cues answer ${request.requestId} --text 'Yes, from PATH'`], { cwd: dir, env, encoding: 'utf8' });
      assert.equal(answered.status, 0, answered.stderr);
      assert.equal(await done, 0, err);
      assert.match(out, /instructions:\n\nYes, from PATH\n/);
    } finally {
      mailbox.close();
    }
  });

  test('the uninstall command removes the launchers it wrote', async () => {
    const result = await vscode.commands.executeCommand<{ removed: string[]; kept: string[] }>('belay.uninstallCommandLines', { folder: bin });
    assert.deepEqual(result, { removed: [path.join(bin, 'belay'), path.join(bin, 'cueme')], kept: [] });
    assert.deepEqual(readdirSync(bin), []);
  });
});
