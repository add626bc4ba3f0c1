// `npm start` for real, with a temp HOME standing for the person's home: the started VS Code watches
// the person's own mailbox (~/.cue), so a `cueme` run from an ordinary shell (the machine's `node`
// first on PATH, no CUE_HOME) reaches the Cues panel and gets the answer clicked there.
// With --isolated-home the panel watches a mailbox of its own and says where.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePort } from '../../scripts/lib/host.ts';
import { cacheDir, repoRoot, resultsDir } from '../../scripts/lib/paths.ts';
import { launchBrowser, waitForWorkbench, type Browser } from '../../scripts/lib/workbench.ts';
import { cuesFrame, openBelayContainer } from '../support/workbench.ts';

interface Started {
  child: ChildProcess;
  url: string;
  output: () => string;
}

/** Runs `npm start`'s script as `npm start -- ARGS` does and resolves with the URL it prints. */
function npmStart(args: string[], env: NodeJS.ProcessEnv): Promise<Started> {
  const child = spawn(process.execPath, [path.join(repoRoot, 'scripts', 'start.ts'), ...args], { cwd: repoRoot, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    const seen = (chunk: Buffer) => {
      output += chunk.toString();
      const url = /^\s+(http:\/\/127\.0\.0\.1:\d+\/\?folder=\S+)$/m.exec(output)?.[1];
      if (url && /^Cues: /m.test(output)) resolve({ child, url, output: () => output });
    };
    child.stdout!.on('data', seen);
    child.stderr!.on('data', seen);
    child.on('exit', (code) => reject(new Error(`npm start exited (${code}) before printing its URL:\n${output.slice(-3000)}`)));
  });
}

async function stop(started: Started | undefined): Promise<void> {
  const child = started?.child;
  if (!child?.pid || child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  process.kill(-child.pid, 'SIGINT');
  await exited;
}

/** The machine's own `node` first on PATH, as in an ordinary shell (the project's Node 22 is not on it). */
const ordinaryPath = '/usr/local/bin:/usr/bin:/bin';

describe('npm start and the mailbox of the person who started it', () => {
  let dir: string;
  let home: string;
  let demo: string;
  let started: Started | undefined;
  let browser: Browser;

  before(async () => {
    await mkdir(cacheDir, { recursive: true });
    dir = await mkdtemp(path.join(cacheDir, 'ui-start-'));
    home = path.join(dir, 'person');
    await mkdir(home, { recursive: true });
    // The demo as npm start opens it, less the Get Started walkthrough it opens on its first start
    // (its page would stand before the Cues panel; the walkthrough has tests of its own).
    demo = path.join(dir, 'demo');
    await cp(path.join(repoRoot, 'demo'), demo, { recursive: true });
    const settingsFile = path.join(demo, '.vscode', 'settings.json');
    const settings = existsSync(settingsFile) ? (JSON.parse(await readFile(settingsFile, 'utf8')) as Record<string, unknown>) : {};
    await mkdir(path.dirname(settingsFile), { recursive: true });
    await writeFile(settingsFile, JSON.stringify({ ...settings, 'belay.walkthrough.openInDemo': false }, null, 2));
    browser = await launchBrowser();
  });
  after(async () => {
    await stop(started);
    await browser?.close();
    await rm(dir, { recursive: true, force: true });
  });

  test("a cueme from an ordinary shell reaches the panel of npm start's VS Code, and gets the answer", async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, BELAY_START_STATE: path.join(dir, 'state') };
    delete env.CUE_HOME;
    started = await npmStart(['--port', String(await freePort()), '--folder', demo], env);
    assert.match(started.output(), new RegExp(`^Cues: your mailbox, ${path.join(home, '.cue').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')};`, 'm'));
    const page = await browser.context.newPage();
    await page.goto(started.url, { timeout: 120_000 });
    await waitForWorkbench(page);
    await openBelayContainer(page);
    const frame = cuesFrame(page);
    await frame.locator('.mailbox code', { hasText: path.join(home, '.cue') }).waitFor({ timeout: 60_000 });
    assert.match((await frame.locator('.mailbox').textContent()) ?? '', /^Watching the mailbox in .+ \(the folder a cueme writes to: its CUE_HOME, else ~\/\.cue\)\.$/);
    await mkdir(path.join(resultsDir, 'ui'), { recursive: true });
    await page.mouse.move(900, 700);
    await page.screenshot({ path: path.join(resultsDir, 'ui', 'start-own-mailbox-empty.png') });

    // An ordinary shell of the same person: HOME is theirs, no CUE_HOME, the machine's node.
    const cueme = spawn(path.join(repoRoot, 'dist', 'cueme.js'), ['cue', 'shellagent', '-'], { cwd: home, env: { PATH: ordinaryPath, HOME: home }, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    cueme.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
    cueme.stderr!.setEncoding('utf8').on('data', (c: string) => (err += c));
    const done = new Promise<number | null>((r) => cueme.on('close', r));
    cueme.stdin!.end('<cueme_prompt>\nShip the release from my shell?\n</cueme_prompt>\n<cueme_payload>\n{"type":"choice","options":["Ship","Wait"]}\n</cueme_payload>\n');
    try {
      const card = frame.locator('article.cue', { hasText: 'Ship the release from my shell?' });
      await card.waitFor({ timeout: 30_000 });
      await page.screenshot({ path: path.join(resultsDir, 'ui', 'start-own-mailbox.png') });
      await card.getByRole('button', { name: 'Ship' }).click();
      assert.equal(await done, 0, err);
      assert.match(out, /^The user wants to continue and gave these instructions:\n\nShip\n/);
      assert.ok(existsSync(path.join(home, '.cue', 'cue.db')));
      assert.equal(existsSync(path.join(dir, 'state', 'home', '.cue')), false, "npm start's own HOME got a mailbox too");
    } finally {
      cueme.kill();
      await page.close();
    }
  });

  test('with --isolated-home the panel watches a mailbox of its own and says where', async () => {
    await stop(started);
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, CUE_HOME: path.join(home, 'elsewhere'), BELAY_START_STATE: path.join(dir, 'state') };
    started = await npmStart(['--port', String(await freePort()), '--folder', demo, '--isolated-home'], env);
    const own = path.join(dir, 'state', 'home', '.cue');
    assert.match(started.output(), /^Cues: a mailbox of its own, .+ \(--isolated-home\)/m);
    const page = await browser.context.newPage();
    await page.goto(started.url, { timeout: 120_000 });
    await waitForWorkbench(page);
    await openBelayContainer(page);
    await cuesFrame(page).locator('.mailbox code', { hasText: own }).waitFor({ timeout: 60_000 });
    await page.mouse.move(900, 700);
    await page.screenshot({ path: path.join(resultsDir, 'ui', 'start-isolated-mailbox.png') });
    await page.close();
  });
});
