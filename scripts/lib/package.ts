// Packages Belay into belay-<version>.vsix with @vscode/vsce, from a staging folder that holds
// only what runs: production bundles, grammars, media, LICENSE, package.json, and the user-facing
// README (marketplace/README.md, with its screenshots) in place of the developers' README.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { cacheDir, repoRoot } from './paths.ts';

export function packageVersion(): string {
  return (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
}

const vsce = path.join(repoRoot, 'node_modules', '@vscode', 'vsce', 'vsce');
/**
 * Everything the extension needs is bundled into dist/, so node_modules is never packaged. The
 * README's screenshots are shipped beside it and stay relative links (VS Code shows them from the
 * installed extension; there is no hosted repository to point them at).
 */
const vsceFlags = ['--no-dependencies', '--allow-missing-repository', '--no-rewrite-relative-links'];
/** Staged path -> repository path. */
const shipped: Record<string, string> = {
  'package.json': 'package.json',
  'README.md': 'marketplace/README.md',
  screenshots: 'marketplace/screenshots',
  LICENSE: 'LICENSE',
  '.vscodeignore': '.vscodeignore',
  media: 'media',
  'syntaxes/codingagent.tmLanguage.json': 'syntaxes/codingagent.tmLanguage.json',
  'language-configuration.json': 'language-configuration.json',
};

/** Where the .vsix is staged (what `packagedFiles` lists is there afterwards). */
export function stagingDir(): string {
  return path.join(cacheDir, 'package');
}

/** Builds the production bundles into a fresh staging folder beside the shipped files. */
async function stage(): Promise<string> {
  const staging = stagingDir();
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  for (const [entry, source] of Object.entries(shipped)) {
    const from = path.join(repoRoot, source);
    if (existsSync(from)) await cp(from, path.join(staging, entry), { recursive: true });
  }
  // `files` is the npm package's list (`npm pack`: the two command lines); vsce refuses it beside
  // .vscodeignore, and the staging folder already holds only what the .vsix ships.
  const manifest = JSON.parse(await readFile(path.join(staging, 'package.json'), 'utf8')) as Record<string, unknown>;
  delete manifest.files;
  await writeFile(path.join(staging, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
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
