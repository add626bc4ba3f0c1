// `npm run bench`: every figure beside a baseline measured in the same run, printed as a ratio.
// Sizes of what ships; Belay's activation time in a real VS Code beside an empty extension's;
// then each bench/*.bench.ts file (or those named: `npm run bench -- blocks cues`).
import { execFileSync } from 'node:child_process';
import type { Page } from 'playwright-core';
import { statSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BenchFile, Figure } from '../bench/lib.ts';
import { installVsix, startHost } from './lib/host.ts';
import { packageVsix } from './lib/package.ts';
import { cacheDir, repoRoot } from './lib/paths.ts';
import { launchBrowser, runPaletteCommand, waitForWorkbench } from './lib/workbench.ts';

const only = process.argv.slice(2);
const rows: { group: string; figure: Figure }[] = [];
const plain: { name: string; value: string }[] = [];

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/**
 * Activation of Belay and of an empty extension, both installed from their .vsix into the same
 * real VS Code and both activated on startup, as VS Code itself measures it (the times "Developer:
 * Show Running Extensions" shows: code loading plus the activate call); the median of `runs` hosts.
 */
async function activation(belayVsix: string, runs: number): Promise<Figure> {
  const emptyVsix = await packFixture('empty-extension');
  const apiVsix = await packFixture('vscode-extension');
  const belay: number[] = [];
  const empty: number[] = [];
  const api: number[] = [];
  for (let i = 0; i < runs; i++) {
    const workspace = await mkdtemp(path.join(cacheDir, 'bench-ws-'));
    const stateDir = await mkdtemp(path.join(cacheDir, 'bench-host-'));
    await installVsix(emptyVsix.vsix, stateDir, { quiet: true });
    await installVsix(apiVsix.vsix, stateDir, { quiet: true });
    await installVsix(belayVsix, stateDir, { quiet: true });
    const host = await startHost({ folder: workspace, stateDir });
    const browser = await launchBrowser();
    try {
      const page = await browser.context.newPage();
      await page.goto(host.url(workspace), { timeout: 180_000 });
      await waitForWorkbench(page);
      const times = await runningExtensionTimes(page, ['Belay', 'empty', 'empty-api']);
      belay.push(times.Belay!);
      empty.push(times.empty!);
      api.push(times['empty-api']!);
      const own = await belayActivationLine(stateDir);
      console.log(`  activation run ${i + 1}/${runs}: Belay ${times.Belay} ms, empty ${times.empty} ms, empty-api ${times['empty-api']} ms${own ? ` (Belay's log: ${own})` : ''}`);
    } finally {
      await browser.close();
      await host.stop();
      await rm(stateDir, { recursive: true, force: true });
      await rm(workspace, { recursive: true, force: true });
    }
  }
  await emptyVsix.dispose();
  await apiVsix.dispose();
  const paired = median(belay.map((b, i) => b / empty[i]!));
  console.log(`  per host, Belay / empty: ${belay.map((b, i) => (b / empty[i]!).toFixed(2)).join(', ')} (median ${paired.toFixed(2)}×)`);
  // VS Code's figure is code loading plus the activate call; an extension's code loading starts
  // before an await and so also holds the loading of those activated before it by the same event
  // (here the built-ins on startup-finished, then empty, empty-api, Belay): the difference is Belay's own.
  console.log(`  per host, Belay − empty: ${belay.map((b, i) => `${b - empty[i]!} ms`).join(', ')}`);
  console.log(`  for reference, an extension that only loads the VS Code API: median ${median(api)} ms (${median(api.map((a, i) => a / empty[i]!)).toFixed(2)}× empty)`);
  return { name: 'activation in the real extension host (median)', value: median(belay), baselineName: 'an empty extension, same host', baseline: median(empty), unit: 'ms', goal: 2 };
}

/** Packs one of bench/fixtures' extensions into a .vsix in a temporary folder. */
async function packFixture(name: string): Promise<{ vsix: string; dispose: () => Promise<void> }> {
  const fixture = await mkdtemp(path.join(os.tmpdir(), `belay-bench-${name}-`));
  await cp(path.join(repoRoot, 'bench', 'fixtures', name), fixture, { recursive: true });
  const vsix = path.join(fixture, `${name}.vsix`);
  execFileSync(process.execPath, [path.join(repoRoot, 'node_modules', '@vscode', 'vsce', 'vsce'), 'package', '--no-dependencies', '--allow-missing-repository', '--skip-license', '--out', vsix], { cwd: fixture, stdio: 'ignore' });
  return { vsix, dispose: () => rm(fixture, { recursive: true, force: true }) };
}

/** Belay's own log line saying how long `activate` took, per feature (found in the host's logs). */
async function belayActivationLine(stateDir: string): Promise<string | undefined> {
  const logs = path.join(stateDir, 'user-data', 'logs');
  let files: string[];
  try {
    files = (await readdir(logs, { recursive: true })).map(String).filter((f) => path.basename(f) === 'Belay.log');
  } catch {
    return undefined;
  }
  for (const file of files) {
    const line = (await readFile(path.join(logs, file), 'utf8')).split('\n').find((l) => l.includes(' activated in '));
    if (line) return line.slice(line.indexOf('activated in'));
  }
  return undefined;
}

/** Reads VS Code's own activation times from "Developer: Show Running Extensions", by display name. */
async function runningExtensionTimes(page: Page, names: string[]): Promise<Record<string, number>> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    await runPaletteCommand(page, 'Developer: Show Running Extensions');
    const rows = page.locator('.runtime-extensions-editor .monaco-list-row');
    await rows.first().waitFor();
    const times: Record<string, number> = {};
    for (const row of await rows.all()) {
      const name = (await row.locator('.name').textContent())?.trim() ?? '';
      const time = /(\d+)\s*ms/.exec((await row.locator('.activation-time').textContent()) ?? '');
      if (names.includes(name) && time) times[name] = Number(time[1]);
    }
    if (names.every((n) => times[n] !== undefined)) return times;
    await page.keyboard.press('Escape');
    await page.waitForTimeout(1000); // both activate on startup-finished; look again shortly
  }
  throw new Error(`"Show Running Extensions" never listed ${names.join(' and ')} as activated`);
}

function format(value: number, unit: Figure['unit']): string {
  if (unit === 'bytes') return value >= 1024 * 1024 ? `${(value / 1024 / 1024).toFixed(2)} MiB` : `${(value / 1024).toFixed(1)} KiB`;
  if (unit === 'ms') return `${value < 10 ? value.toFixed(2) : value.toFixed(1)} ms`;
  return `${value.toFixed(1)} ${unit}`;
}

await mkdir(cacheDir, { recursive: true });
const wantFoundation = only.length === 0 || only.includes('foundation');
if (wantFoundation) {
  console.log('=== foundation ===');
  const vsixDir = await mkdtemp(path.join(os.tmpdir(), 'belay-bench-vsix-'));
  const vsix = await packageVsix(vsixDir);
  const main = (JSON.parse(await readFile(path.join(repoRoot, 'package.json'), 'utf8')) as { main: string }).main;
  plain.push({ name: `${path.posix.normalize(main)} (production, as packaged)`, value: format(statSync(path.join(cacheDir, 'package', main)).size, 'bytes') });
  plain.push({ name: path.basename(vsix), value: format(statSync(vsix).size, 'bytes') });
  rows.push({ group: 'foundation', figure: await activation(vsix, Number(process.env.BELAY_BENCH_HOSTS ?? 5)) });
  await rm(vsixDir, { recursive: true, force: true });
}

const benchDir = path.join(repoRoot, 'bench');
const files = (await readdir(benchDir)).filter((f) => f.endsWith('.bench.ts')).sort();
for (const file of files) {
  const name = file.replace(/\.bench\.ts$/, '');
  if (only.length > 0 && !only.includes(name)) continue;
  const bench = (await import(pathToFileURL(path.join(benchDir, file)).href)).default as BenchFile;
  console.log(`=== ${name}: ${bench.title} ===`);
  const tmpDir = await mkdtemp(path.join(os.tmpdir(), `belay-bench-${name}-`));
  try {
    const figures = await bench.run({ repoRoot, tmpDir, log: (m) => console.log(`  ${m}`) });
    for (const figure of figures) rows.push({ group: name, figure });
  } catch (error) {
    console.error(`  ${name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exitCode = 1;
  } finally {
    await rm(tmpDir, { recursive: true, force: true });
  }
}

console.log('\n=== figures ===');
for (const p of plain) console.log(`${p.name}: ${p.value}`);
for (const { group, figure } of rows) {
  const ratio = figure.value / figure.baseline;
  const goal = figure.goal === undefined ? '' : ratio <= figure.goal ? `  (goal ≤ ${figure.goal}×: met)` : `  (goal ≤ ${figure.goal}×: NOT met)`;
  console.log(`[${group}] ${figure.name}: ${format(figure.value, figure.unit)} vs ${figure.baselineName}: ${format(figure.baseline, figure.unit)} = ${ratio.toFixed(2)}×${goal}`);
}
await mkdir(path.join(repoRoot, 'bench-results'), { recursive: true });
await writeFile(path.join(repoRoot, 'bench-results', 'latest.json'), JSON.stringify({ plain, rows: rows.map((r) => ({ ...r, ratio: r.figure.value / r.figure.baseline })) }, null, 2));
