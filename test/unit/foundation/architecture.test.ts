// The layout is the architecture: which folder may import which (nothing imports upward, no
// cycles), and pure cores, webview apps, the language server and the command lines never reach
// `vscode`, directly or through what they import.
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import * as esbuild from 'esbuild';
import { repoRoot } from '../../../scripts/lib/paths.ts';
import { allowed, areaCycles, fileCycles, folderCycles, readGraph, violations, zoneOf, type Graph } from './imports.ts';

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
async function modulesReachingVscode(entries: string[], editorPackages: RegExp = /^vscode$/): Promise<string[]> {
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
    const found = imports.some((i) => editorPackages.test(i.path) || (!i.external && visit(i.path, seen)));
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

test('every import follows the allowed edges between folders', () => {
  const graph = readGraph(repoRoot);
  assert.ok(graph.size > 50, `read only ${graph.size} modules: the scan is looking in the wrong place`);
  assert.deepEqual(violations(graph), []);
});

test('there is no cycle between folders, nor between files', () => {
  const graph = readGraph(repoRoot);
  assert.deepEqual(areaCycles(graph), []);
  assert.deepEqual(folderCycles(graph), []);
  assert.deepEqual(fileCycles(graph), []);
});

test('editor folders hold only code that needs vscode: pure modules live under the guard', async () => {
  const graph = readGraph(repoRoot);
  const editorSide = [...graph.keys()].filter((f) => /^(editor:|ui$|base$)/.test(zoneOf(f)));
  assert.ok(editorSide.length > 10, 'found no editor modules');
  // The language client library needs the editor as much as `vscode` does.
  const reaching = new Set(await modulesReachingVscode(editorSide, /^(vscode|vscode-languageclient(\/.*)?)$/));
  assert.deepEqual(editorSide.filter((f) => !reaching.has(f)), []);
});

test('the rules catch an upward import, a cross-feature import and cycles', () => {
  const graph: Graph = new Map([
    ['src/shared/a.ts', ['src/cues/core/b.ts']],
    ['src/cues/core/b.ts', ['src/shared/a.ts']],
    ['src/runner/view.ts', ['src/cues/service.ts', 'src/runner/core/x.ts']],
    ['src/cues/service.ts', []],
    ['src/runner/core/x.ts', ['src/runner/core/y.ts']],
    ['src/runner/core/y.ts', ['src/runner/core/x.ts']],
    ['src/webviews/cues/main.ts', ['src/cues/core/b.ts', 'src/webviews/shared/dom.ts']],
    ['src/webviews/shared/dom.ts', []],
  ]);
  assert.deepEqual(violations(graph), [
    'src/shared/a.ts -> src/cues/core/b.ts (shared -> core:cues)',
    'src/runner/view.ts -> src/cues/service.ts (editor:runner -> editor:cues)',
    'src/webviews/cues/main.ts -> src/cues/core/b.ts (webviews -> core:cues)',
  ]);
  assert.deepEqual(folderCycles(graph), [['src/cues/core', 'src/shared']]);
  assert.deepEqual(areaCycles(graph), [['src/cues', 'src/shared']]);
  assert.deepEqual(fileCycles(graph), [
    ['src/cues/core/b.ts', 'src/shared/a.ts'],
    ['src/runner/core/x.ts', 'src/runner/core/y.ts'],
  ]);
  assert.equal(allowed('server', 'core:blocks'), true);
  assert.equal(allowed('server', 'core:cues'), false);
  assert.equal(allowed('editor:blocks', 'webview-protocol'), true);
  assert.equal(allowed('editor:blocks', 'webviews'), false);
  assert.equal(allowed('core:blocks', 'base'), false);
});
