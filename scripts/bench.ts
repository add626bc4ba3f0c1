// `npm run bench`: every figure beside a baseline measured in the same run, printed as a ratio.
// Sizes of what ships; Belay's activation time in a real VS Code beside an empty extension's;
// then each bench/*.bench.ts file (or those named: `npm run bench -- blocks cues`).
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BenchFile, Figure } from '../bench/lib.ts';
import { installVsix, startHost } from './lib/host.ts';
import { packageVsix } from './lib/package.ts';
import { cacheDir, repoRoot } from './lib/paths.ts';
import { runExtensionTests } from './lib/workbench.ts';

const only = process.argv.slice(2);
const rows: { group: string; figure: Figure }[] = [];
const plain: { name: string; value: string }[] = [];

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Activation of Belay and of an empty extension in the same extension host, `runs` hosts. */
async function activation(runs: number): Promise<Figure> {
  const belay: number[] = [];
  const empty: number[] = [];
  // The workbench loads one development extension: the empty one is installed as a user would.
  const emptyVsix = path.join(os.tmpdir(), `belay-bench-empty-${process.pid}.vsix`);
  execFileSync(process.execPath, [path.join(repoRoot, 'node_modules', '@vscode', 'vsce', 'vsce'), 'package', '--no-dependencies', '--allow-missing-repository', '--skip-license', '--out', emptyVsix], {
    cwd: path.join(repoRoot, 'bench', 'fixtures', 'empty-extension'),
    stdio: 'ignore',
  });
  for (let i = 0; i < runs; i++) {
    const workspace = await mkdtemp(path.join(cacheDir, 'bench-ws-'));
    const results = path.join(workspace, '..', `${path.basename(workspace)}.json`);
    const stateDir = await mkdtemp(path.join(cacheDir, 'bench-host-'));
    await installVsix(emptyVsix, stateDir);
    const host = await startHost({ folder: workspace, stateDir, env: { BELAY_BENCH_RESULTS: results, BELAY_BENCH_ORDER: i % 2 === 0 ? 'empty-first' : 'belay-first' } });
    try {
      const run = await runExtensionTests(host, {
        extensionPath: repoRoot,
        testsPath: path.join(repoRoot, 'out', 'bench', 'activation.js'),
        folder: workspace,
        timeoutMs: 120_000,
      });
      if (run.exitCode !== 0 || !existsSync(results)) throw new Error(`activation bench failed (exit ${run.exitCode}): ${run.consoleLines.filter((l) => /rror/.test(l)).join('\n')}`);
      const times = JSON.parse(await readFile(results, 'utf8')) as { belay: number; empty: number };
      belay.push(times.belay);
      empty.push(times.empty);
      console.log(`  activation run ${i + 1}/${runs}: Belay ${times.belay.toFixed(1)} ms, empty ${times.empty.toFixed(1)} ms`);
    } finally {
      await host.stop();
      await rm(host.stateDir, { recursive: true, force: true });
      await rm(workspace, { recursive: true, force: true });
      await rm(results, { force: true });
    }
  }
  await rm(emptyVsix, { force: true });
  return { name: 'activation in the real extension host (median)', value: median(belay), baselineName: 'an empty extension, same host', baseline: median(empty), unit: 'ms' };
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
  execFileSync(process.execPath, ['scripts/build.ts', '--production', '--tests'], { cwd: repoRoot, stdio: 'inherit' });
  plain.push({ name: 'dist/extension.js (production)', value: format(statSync(path.join(repoRoot, 'dist', 'extension.js')).size, 'bytes') });
  plain.push({ name: path.basename(vsix), value: format(statSync(vsix).size, 'bytes') });
  await rm(vsixDir, { recursive: true, force: true });
  rows.push({ group: 'foundation', figure: await activation(4) });
  // Leave the development build (with source maps) as the tests expect it.
  execFileSync(process.execPath, ['scripts/build.ts', '--tests'], { cwd: repoRoot, stdio: 'inherit' });
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
