// The layout is the architecture: pure cores, webview apps, the language server and the command
// lines must never reach `vscode`, directly or through what they import.
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import * as esbuild from 'esbuild';
import { repoRoot } from '../../../scripts/lib/paths.ts';

function tsFiles(dir: string): string[] {
  const abs = path.join(repoRoot, dir);
  let entries: string[];
  try {
    entries = readdirSync(abs);
  } catch {
    return [];
  }
  return entries.flatMap((name) => {
    const rel = path.join(dir, name);
    if (statSync(path.join(repoRoot, rel)).isDirectory()) return tsFiles(rel);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [rel] : [];
  });
}

/** Every module that must run without VS Code. */
function pureModules(): string[] {
  const features = readdirSync(path.join(repoRoot, 'src')).filter((f) => statSync(path.join(repoRoot, 'src', f)).isDirectory());
  return [
    ...features.flatMap((f) => tsFiles(path.join('src', f, 'core'))),
    ...tsFiles('src/webviews'),
    ...tsFiles('src/server'),
    ...tsFiles('src/cli'),
    ...tsFiles('src/shared'),
  ];
}

/** Bundles the modules (dependencies external) and returns, per module, whether `vscode` is reached. */
async function modulesReachingVscode(entries: string[]): Promise<string[]> {
  const result = await esbuild.build({
    entryPoints: entries,
    absWorkingDir: repoRoot,
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    outdir: 'out/arch-check',
    logLevel: 'silent',
    loader: { '.css': 'empty' },
  });
  const inputs = result.metafile.inputs;
  const reaches = new Map<string, boolean>();
  const visit = (file: string, seen: Set<string>): boolean => {
    if (reaches.has(file)) return reaches.get(file)!;
    if (seen.has(file)) return false;
    seen.add(file);
    const imports = inputs[file]?.imports ?? [];
    const found = imports.some((i) => i.path === 'vscode' || (!i.external && visit(i.path, seen)));
    reaches.set(file, found);
    return found;
  };
  return entries.filter((entry) => visit(entry, new Set()));
}

test('pure cores, webview apps, the language server and the CLIs never import vscode', async () => {
  const modules = pureModules();
  assert.ok(modules.some((m) => m.startsWith('src/cli/')), 'found no CLI modules: the scan is looking in the wrong place');
  assert.ok(modules.some((m) => m.includes('/core/')), 'found no core modules: the scan is looking in the wrong place');
  assert.deepEqual(await modulesReachingVscode(modules), []);
});

test('the check itself catches a vscode import reached through another module', async () => {
  // The editor entry point reaches vscode through its feature layers: the check must see that.
  assert.deepEqual(await modulesReachingVscode(['src/extension.ts', 'src/shared/atomic.ts']), ['src/extension.ts']);
});
