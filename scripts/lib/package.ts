// Packages Belay into belay-<version>.vsix with @vscode/vsce, from a staging folder that holds
// only what runs: production bundles, grammars, media, README, LICENSE and package.json.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdir, rm } from 'node:fs/promises';
import * as path from 'node:path';
import { cacheDir, repoRoot } from './paths.ts';

export function packageVersion(): string {
  return (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
}

const vsce = path.join(repoRoot, 'node_modules', '@vscode', 'vsce', 'vsce');
/** Everything the extension needs is bundled into dist/, so node_modules is never packaged. */
const vsceFlags = ['--no-dependencies', '--allow-missing-repository'];
const shipped = ['package.json', 'README.md', 'LICENSE', '.vscodeignore', 'media', 'syntaxes', 'language-configuration.json'];

/** Builds the production bundles into a fresh staging folder beside the shipped files. */
async function stage(): Promise<string> {
  const staging = path.join(cacheDir, 'package');
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  for (const entry of shipped) {
    const from = path.join(repoRoot, entry);
    if (existsSync(from)) await cp(from, path.join(staging, entry), { recursive: true });
  }
  execFileSync(process.execPath, ['scripts/build.ts', '--production', '--dist', path.join(staging, 'dist')], { cwd: repoRoot, stdio: 'inherit' });
  return staging;
}

/** The files the .vsix holds, as `vsce ls` reports them. */
export async function packagedFiles(): Promise<string[]> {
  const staging = await stage();
  const out = execFileSync(process.execPath, [vsce, 'ls', '--no-dependencies'], { cwd: staging }).toString();
  return out.split('\n').map((l) => l.trim()).filter(Boolean).sort();
}

/** Writes belay-<version>.vsix (into `outDir`, the repo root by default); returns its path. */
export async function packageVsix(outDir = repoRoot): Promise<string> {
  const staging = await stage();
  const file = path.join(outDir, `belay-${packageVersion()}.vsix`);
  execFileSync(process.execPath, [vsce, 'package', ...vsceFlags, '--out', file], { cwd: staging, stdio: ['ignore', 'ignore', 'inherit'] });
  return file;
}
