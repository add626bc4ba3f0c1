// The test suites behind `npm test`, each returning its counts.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import * as path from 'node:path';
import * as z from 'zod';
import { ensureHost, startHost } from './host.ts';
import { cacheDir, repoRoot, resultsDir } from './paths.ts';
import { runExtensionTests } from './workbench.ts';

export interface SuiteResult {
  name: string;
  passed: number;
  failed: number;
  /** Set when the suite could not run or ended without running its tests. */
  error?: string;
  /** Something the summary should say although the suite passed (a retried file). */
  note?: string;
}

/** Runs `node --test` over the given globs; counts come from its TAP summary. */
export async function runNodeTests(name: string, globs: string[], concurrency: number): Promise<SuiteResult> {
  await mkdir(resultsDir, { recursive: true });
  const tap = path.join(resultsDir, `${name}.tap`);
  const args = [
    '--test',
    `--test-concurrency=${concurrency}`,
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    '--test-reporter=tap',
    `--test-reporter-destination=${tap}`,
    ...globs,
  ];
  const code = await new Promise<number>((resolve) => {
    const child = spawn(process.execPath, args, { cwd: repoRoot, stdio: 'inherit' });
    child.on('exit', (c, s) => resolve(c ?? (s ? 128 : 1)));
  });
  const text = existsSync(tap) ? await readFile(tap, 'utf8') : '';
  const count = (key: string) => Number(new RegExp(`^# ${key} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
  const passed = count('pass');
  const failed = count('fail') + count('cancelled');
  if (Number.isNaN(passed) || Number.isNaN(failed)) return { name, passed: 0, failed: 0, error: `node --test exited ${code} without a summary` };
  const result: SuiteResult = { name, passed, failed };
  // Tests marked todo still run; the summary names how many there are, so none is forgotten.
  const todo = count('todo');
  if (todo > 0) result.note = `${todo} marked todo (known to fail at times; see the test's comment)`;
  if (code !== 0 && failed === 0) result.error = `node --test exited ${code}`;
  if (passed + failed === 0) result.error = 'no tests ran';
  return result;
}

/**
 * The UI suite: each test file on its own (they drive one workbench at a time). A file that fails
 * runs once more: the workbench's own widgets (context menus, the file dialog) occasionally miss a
 * click on a loaded two-core machine. A retry is reported by name in the summary, never hidden,
 * and the second run's counts are the file's counts.
 */
export async function runUiTests(): Promise<SuiteResult> {
  const dir = path.join(repoRoot, 'test', 'ui');
  // BELAY_UI_FILES=cues,runner runs only those files (by name, without .test.ts).
  const only = (process.env.BELAY_UI_FILES ?? '').split(',').map((f) => f.trim()).filter(Boolean);
  const files = (await readdir(dir)).filter((f) => f.endsWith('.test.ts') && (only.length === 0 || only.includes(f.replace(/\.test\.ts$/, '')))).sort();
  const total: SuiteResult = { name: 'ui', passed: 0, failed: 0 };
  const retried: string[] = [];
  const errors: string[] = [];
  for (const file of files) {
    const rel = path.join('test', 'ui', file);
    let result = await runNodeTests(`ui-${file.replace(/\.test\.ts$/, '')}`, [rel], 1);
    if (result.failed > 0 || result.error) {
      console.log(`\n${rel} failed (${result.failed} failed${result.error ? `, ${result.error}` : ''}): running it once more`);
      const again = await runNodeTests(`ui-${file.replace(/\.test\.ts$/, '')}-retry`, [rel], 1);
      retried.push(`${file}: ${again.failed === 0 && !again.error ? 'passed on retry' : 'failed again'}`);
      result = again;
    }
    total.passed += result.passed;
    total.failed += result.failed;
    if (result.error) errors.push(`${file}: ${result.error}`);
  }
  if (retried.length > 0) total.note = `retried ${retried.join('; ')}`;
  if (errors.length > 0) total.error = errors.join('; ');
  if (total.passed + total.failed === 0) total.error = 'no tests ran';
  return total;
}

const hostResultsSchema = z.object({ passed: z.number(), failed: z.number() });

/** Runs test/host/*.test.ts inside the extension host of a real VS Code (code-server). */
export async function runHostTests(): Promise<SuiteResult> {
  const name = 'host';
  await mkdir(resultsDir, { recursive: true });
  const resultsFile = path.join(resultsDir, 'host.json');
  await rm(resultsFile, { force: true });
  await mkdir(cacheDir, { recursive: true });
  const workspace = await mkdtemp(path.join(cacheDir, 'ws-'));
  await cp(path.join(repoRoot, 'demo'), workspace, { recursive: true });
  const host = await startHost({ folder: workspace, env: { BELAY_TEST_RESULTS: resultsFile, BELAY_TEST_GREP: process.env.BELAY_TEST_GREP ?? '' } });
  try {
    // A chat model for the tests, installed beside Belay (its provider API is proposed in 1.103).
    await cp(path.join(repoRoot, 'test', 'fixtures', 'lm-provider'), path.join(host.extensionsDir, 'belay-test.belay-test-models-0.0.1'), { recursive: true });
    const run = await runExtensionTests(host, {
      extensionPath: repoRoot,
      testsPath: path.join(repoRoot, 'out', 'test', 'host', 'index.js'),
      folder: workspace,
      enableProposedApi: true,
      // About fifty tests, several running real agents, sandboxes and workbench views: on a loaded
      // two-core machine they took more than 300 s. Each test has its own mocha timeout; this one
      // only ends a workbench that stopped answering.
      timeoutMs: 900_000,
    });
    for (const line of run.consoleLines.filter((l) => /FAILED|passed, \d+ failed|Error/.test(l))) console.log(`  [host] ${line}`);
    if (!existsSync(resultsFile)) return { name, passed: 0, failed: 0, error: `the extension host wrote no results (exit ${run.exitCode}); log: ${host.stateDir}` };
    const parsed = hostResultsSchema.parse(JSON.parse(await readFile(resultsFile, 'utf8')));
    const result: SuiteResult = { name, ...parsed };
    if (run.exitCode !== 0 && parsed.failed === 0) result.error = `the workbench exited ${run.exitCode}`;
    if (parsed.passed + parsed.failed === 0) result.error = 'no tests ran';
    return result;
  } finally {
    await host.stop();
    await rm(workspace, { recursive: true, force: true });
    if (!process.env.BELAY_KEEP_HOST_STATE) await rm(host.stateDir, { recursive: true, force: true });
  }
}

/** Built-in grammars the CodingAgent grammar embeds, taken from the code-server install when present. */
const EMBEDDED_GRAMMARS = ['python/syntaxes/MagicPython.tmLanguage.json', 'shellscript/syntaxes/shell-unix-bash.tmLanguage.json', 'json/syntaxes/JSON.tmLanguage.json', 'docker/syntaxes/docker.tmLanguage.json'];

/** Runs vscode-tmgrammar-test over test/grammar/**; counts one result per test file from its output. */
export async function runGrammarTests(): Promise<SuiteResult> {
  const name = 'grammar';
  // The embedded languages' grammars are VS Code's own built-in ones, from the test host.
  const builtIn = path.resolve(path.dirname(await ensureHost()), '..', '..', 'lib', 'vscode', 'extensions');
  const grammars = EMBEDDED_GRAMMARS.map((g) => path.join(builtIn, g));
  const missing = grammars.filter((g) => !existsSync(g));
  if (missing.length > 0) return { name, passed: 0, failed: 0, error: `VS Code's built-in grammars are missing: ${missing.join(', ')}` };
  const args = [path.join(repoRoot, 'node_modules', 'vscode-tmgrammar-test', 'dist', 'unit.js'), ...grammars.flatMap((g) => ['-g', g]), 'test/grammar/**/*.test.*'];
  let output = '';
  const code = await new Promise<number>((resolve) => {
    const child = spawn(process.execPath, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    const take = (chunk: Buffer) => {
      const text = chunk.toString();
      output += text;
      for (const line of text.split('\n')) if (line.trim() !== '' && !line.startsWith('grammar not found')) console.log(line);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('exit', (c, s) => {
      clearTimeout(timer);
      resolve(c ?? (s ? 128 : 1));
    });
  });
  const passed = (output.match(/^✓ /gm) ?? []).length;
  const failed = (output.match(/^✖ /gm) ?? []).length;
  const result: SuiteResult = { name, passed, failed };
  if (code !== 0 && failed === 0) result.error = `vscode-tmgrammar-test exited ${code}`;
  if (passed + failed === 0) result.error = 'no grammar tests ran';
  return result;
}
