// Shared by the cues tests: private bundles of the two command lines, temp mailboxes, real child processes.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, afterEach, before, beforeEach } from 'node:test';
import * as esbuild from 'esbuild';
import { embedPrograms } from '../../../scripts/build-plugins.ts';
import { Mailbox } from '../../../src/cues/core/store.ts';
import { waitForChange } from '../../../src/cues/core/watch.ts';
import { repoRoot } from '../../../scripts/lib/paths.ts';

export { repoRoot } from '../../../scripts/lib/paths.ts';

export interface Bundles {
  dir: string;
  cueme: string;
  belay: string;
}

/**
 * Bundles src/cli/cueme.ts and src/cli/belay.ts with the options of scripts/build.ts into a
 * private folder: test files run in parallel, and a shared dist/ rebuilt by each of them could be
 * read half-written by another one's child process.
 */
export async function buildBundles(): Promise<Bundles> {
  const dir = mkdtempSync(path.join(tmpdir(), 'belay-cues-bin-'));
  await esbuild.build({
    absWorkingDir: repoRoot,
    entryPoints: { cueme: 'src/cli/cueme.ts', cli: 'src/cli/belay.ts' },
    outdir: dir,
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    define: { BELAY_VERSION: JSON.stringify('0.0.0-test') },
    banner: { js: '#!/usr/bin/env node' },
    logLevel: 'warning',
    plugins: [embedPrograms],
  });
  return { dir, cueme: path.join(dir, 'cueme.js'), belay: path.join(dir, 'cli.js') };
}

export function tempHome(prefix = 'belay-cues-'): { dir: string; cueHome: string; remove(): void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return { dir, cueHome: path.join(dir, '.cue'), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** An environment for children: the mailbox moved to `cueHome`, HOME pointed away from the real one. */
export function childEnv(cueHome: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: path.dirname(cueHome), CUE_HOME: cueHome, SHELL: '/bin/bash', ...extra };
}

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface Running {
  child: ChildProcess;
  done: Promise<Finished>;
}

/** Starts a bundle as a real child process; `done` settles on exit (killed after `timeoutMs`). */
export function start(script: string, args: readonly string[], options: { env: NodeJS.ProcessEnv; input?: string; cwd?: string; timeoutMs?: number; uid?: number; gid?: number }): Running {
  const child = spawn(process.execPath, [script, ...args], {
    env: options.env,
    cwd: options.cwd ?? repoRoot,
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(options.uid !== undefined ? { uid: options.uid, gid: options.gid ?? options.uid } : {}),
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  child.stdin!.on('error', () => undefined);
  child.stdin!.end(options.input ?? '');
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 30_000);
  const done = new Promise<Finished>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return { child, done };
}

export function run(script: string, args: readonly string[], options: Parameters<typeof start>[2]): Promise<Finished> {
  return start(script, args, options).done;
}

/** Waits on mailbox change notifications until `ready` returns a value; fails after `timeoutMs`. */
export async function waitUntil<T>(mailbox: Mailbox, ready: () => T | undefined, what: string, timeoutMs = 15_000): Promise<T> {
  const value = await waitForChange((onChange) => mailbox.watch(onChange), ready, AbortSignal.timeout(timeoutMs));
  if (value === undefined) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
  return value;
}

export function envelope(prompt: string, payload?: unknown): string {
  const block = payload === undefined ? '' : `\n<cueme_payload>\n${JSON.stringify(payload)}\n</cueme_payload>\n`;
  return `<cueme_prompt>\n${prompt}\n</cueme_prompt>\n${block}`;
}

/** What each command-line test gets: the private bundles (built once per file) and a fresh mailbox. */
export interface CueFixture {
  bin: Bundles;
  home: ReturnType<typeof tempHome>;
  env: NodeJS.ProcessEnv;
  mailbox: Mailbox;
}

/**
 * Registers the hooks of a describe block that drives the command lines: the bundles built before
 * its tests and removed after, a temp mailbox (under a `prefix` folder) opened before each test
 * and closed after. `use` receives the fixture before each test.
 */
export function cueFixture(prefix: string | undefined, use: (fixture: CueFixture) => void): void {
  let bin: Bundles | undefined;
  let current: CueFixture | undefined;
  before(async () => {
    bin = await buildBundles();
  });
  after(() => {
    if (bin) rmSync(bin.dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    const home = tempHome(prefix);
    current = { bin: bin!, home, env: childEnv(home.cueHome), mailbox: Mailbox.open({ home: home.cueHome }) };
    use(current);
  });
  afterEach(() => {
    current?.mailbox.close();
    current?.home.remove();
  });
}
