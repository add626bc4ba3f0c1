// The layout is the architecture: which folder may import which (nothing imports upward, no
// cycles), and pure cores, webview apps, the language server and the command lines never reach
// `vscode`, directly or through what they import.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import * as esbuild from 'esbuild';
import { repoRoot } from '../../../scripts/lib/paths.ts';
import { bundleInMemory } from '../../support/bundle.ts';
import {
  allowed,
  areaCycles,
  CONTRACT_SIDES,
  contractGlobalProblems,
  fileCycles,
  folderCycles,
  packageViolations,
  readGraph,
  scanImports,
  violations,
  WEBVIEW_OWNERS,
  zoneOf,
  type Graph,
} from './imports.ts';

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
    ...tsFiles('src/contracts'),
    ...tsFiles('src/server'),
    ...tsFiles('src/cli'),
    ...tsFiles('src/shared'),
  ];
}

/** Bundles `entries` in memory and returns what esbuild says of it: each input's imports, each output's inputs. */
async function metafileOf(entries: string[], options: esbuild.BuildOptions): Promise<esbuild.Metafile> {
  return (await bundleInMemory(entries, { outdir: 'out/arch-check', loader: { '.css': 'empty' }, ...options })).metafile;
}

/** Bundles the modules (dependencies external) and returns, per module, whether `vscode` is reached. */
async function modulesReachingVscode(entries: string[], editorPackages: RegExp = /^vscode$/): Promise<string[]> {
  const { inputs } = await metafileOf(entries, { platform: 'node', format: 'esm', packages: 'external' });
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

test('pure cores, contracts, webview apps, the language server and the CLIs never import vscode', async () => {
  const modules = pureModules();
  assert.ok(modules.some((m) => m.startsWith('src/cli/')), 'found no CLI modules: the scan is looking in the wrong place');
  assert.ok(modules.some((m) => m.includes('/core/')), 'found no core modules: the scan is looking in the wrong place');
  assert.deepEqual(await modulesReachingVscode(modules), []);
});

test('the check itself catches a vscode import reached through another module', async () => {
  // The editor entry point reaches vscode through its feature layers: the check must see that.
  assert.deepEqual(await modulesReachingVscode(['src/extension.ts', 'src/shared/atomic.ts']), ['src/extension.ts']);
});

test('every import follows the allowed edges between folders, and every import can be followed', () => {
  const { graph, packages, problems } = scanImports(repoRoot);
  assert.ok(graph.size > 50, `read only ${graph.size} modules: the scan is looking in the wrong place`);
  assert.deepEqual(problems, []);
  assert.deepEqual(violations(graph), []);
  assert.deepEqual(packageViolations(packages), []);
});

test('every contract names its sides, and uses only what every side has (the ECMAScript library, URL and zod)', () => {
  const contracts = tsFiles('src/contracts');
  assert.ok(contracts.length >= 4, `found ${contracts.length} contracts`);
  const named = contracts.map((file) => zoneOf(file).slice('contract:'.length)).sort();
  assert.deepEqual(named, Object.keys(CONTRACT_SIDES).sort(), 'each file in src/contracts/ has a row in CONTRACT_SIDES, and each row a file');
  assert.deepEqual(contractGlobalProblems(repoRoot, contracts), []);
});

test('every webview app belongs to a feature that exists', () => {
  const apps = readdirSync(path.join(repoRoot, 'src/webviews')).filter((d) => d !== 'shared' && statSync(path.join(repoRoot, 'src/webviews', d)).isDirectory());
  assert.ok(apps.length >= 3, `found ${apps.length} webview apps`);
  for (const app of apps) {
    const owner = WEBVIEW_OWNERS[app];
    assert.ok(owner, `src/webviews/${app} belongs to no feature: add it to WEBVIEW_OWNERS`);
    assert.ok(statSync(path.join(repoRoot, 'src', owner)).isDirectory(), `src/webviews/${app}'s owner src/${owner} does not exist`);
  }
});

/** Writes a small src/ tree in a temporary folder and scans it as the real one is scanned. */
function scanTree(files: Record<string, string>): ReturnType<typeof scanImports> {
  const root = mkdtempSync(path.join(tmpdir(), 'belay-arch-'));
  try {
    for (const [rel, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      writeFileSync(path.join(root, rel), text);
    }
    return scanImports(root);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

test('the scan sees imports written without .ts, type-only, dynamic and multi-line, and fails on what it cannot follow', () => {
  const { graph, problems } = scanTree({
    'src/cues/service.ts': 'export const a = 1;\n',
    'src/cues/core/store.ts': 'export const b = 1;\n',
    'src/runner/view.ts': "import { a } from '../cues/service';\n// import '../cues/nothing.ts'\nconst s = '../cues/in-a-string.ts';\n",
    'src/runner/core/run.ts': "import type {\n  B,\n} from '../../cues/core/store.js';\nexport type T = typeof import('./types');\n",
    'src/runner/core/types.ts': 'export {};\n',
    'src/runner/core/lazy.ts': "const m = require('./missing.ts');\nconst n = await import(`./${name}.ts`);\nconst k = require(p) as typeof import('./types.ts');\n",
    'src/webviews/cues/main.ts': "import './style.css';\nimport '../../contracts/resultsPage.ts';\n",
    'src/webviews/cues/style.css': '',
    'src/contracts/resultsPage.ts': 'export {};\n',
  });
  assert.deepEqual(graph.get('src/runner/view.ts'), ['src/cues/service.ts']);
  assert.deepEqual(graph.get('src/runner/core/run.ts'), ['src/cues/core/store.ts', 'src/runner/core/types.ts']);
  assert.deepEqual(graph.get('src/runner/core/lazy.ts'), ['src/runner/core/types.ts']);
  assert.deepEqual(problems.sort(), [
    "src/runner/core/lazy.ts: './missing.ts' resolves to no file",
    'src/runner/core/lazy.ts: 1 import(s) or require(s) with a computed specifier, which no check can follow',
    "src/runner/core/run.ts: '../../cues/core/store.js' has no .ts extension (Node cannot run it; write '../../cues/core/store.ts')",
    "src/runner/core/run.ts: './types' has no .ts extension (Node cannot run it; write './types.ts')",
    "src/runner/view.ts: '../cues/service' has no .ts extension (Node cannot run it; write '../cues/service.ts')",
  ]);
  assert.deepEqual(violations(graph), [
    'src/runner/core/run.ts -> src/cues/core/store.ts (core:runner -> core:cues)',
    'src/runner/view.ts -> src/cues/service.ts (editor:runner -> editor:cues)',
    'src/webviews/cues/main.ts -> src/contracts/resultsPage.ts (webview:cues -> contract:resultsPage)',
  ]);
});

test('the rules keep the entry to the editor layers and each page contract to its app and its feature', () => {
  assert.equal(allowed('entry', 'editor:cues'), true);
  assert.equal(allowed('entry', 'base'), true);
  assert.equal(allowed('entry', 'core:cues'), false);
  assert.equal(allowed('entry', 'shared'), false);
  assert.equal(allowed('entry', 'ui'), false);
  assert.equal(allowed('editor:runner', 'contract:resultsPage'), true);
  assert.equal(allowed('core:runner', 'contract:resultsPage'), true);
  assert.equal(allowed('editor:runner', 'contract:cuesPage'), false);
  assert.equal(allowed('editor:cues', 'contract:cuesPage'), true);
  assert.equal(allowed('core:cues', 'contract:cuesPage'), true);
  assert.equal(allowed('webview:trajectory', 'contract:trajectoryPage'), true);
  assert.equal(allowed('webview:trajectory', 'contract:resultsPage'), false);
  assert.equal(allowed('server', 'contract:languageServer'), true);
  assert.equal(allowed('editor:blocks', 'contract:languageServer'), true);
  assert.equal(allowed('server', 'contract:cuesPage'), false);
  assert.equal(allowed('cli', 'contract:cuesPage'), false);
  assert.equal(allowed('entry', 'contract:cuesPage'), false);
  assert.equal(allowed('webview:trajectory', 'webview:results'), false);
  assert.equal(allowed('webview:trajectory', 'webviews'), true);
  assert.equal(allowed('webviews', 'webview:cues'), false);
  assert.equal(zoneOf('src/webviews/shared/dom.ts'), 'webviews');
  assert.equal(zoneOf('src/webviews/results/main.ts'), 'webview:results');
  assert.equal(zoneOf('src/contracts/resultsPage.ts'), 'contract:resultsPage');
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
    'src/webviews/cues/main.ts -> src/cues/core/b.ts (webview:cues -> core:cues)',
  ]);
  assert.deepEqual(folderCycles(graph), [['src/cues/core', 'src/shared']]);
  assert.deepEqual(areaCycles(graph), [['src/cues', 'src/shared']]);
  assert.deepEqual(fileCycles(graph), [
    ['src/cues/core/b.ts', 'src/shared/a.ts'],
    ['src/runner/core/x.ts', 'src/runner/core/y.ts'],
  ]);
  assert.equal(allowed('server', 'core:blocks'), true);
  assert.equal(allowed('server', 'core:cues'), false);
  assert.equal(allowed('editor:blocks', 'contract:cuesPage'), false);
  assert.equal(allowed('editor:blocks', 'webviews'), false);
  assert.equal(allowed('core:blocks', 'base'), false);
});

test('the rules keep contracts to zod: a contract that imports a feature, another contract, node:fs or vscode fails, and so does a core that imports a page', () => {
  const { graph, packages, problems } = scanTree({
    'src/contracts/cuesPage.ts': "import * as z from 'zod';\nimport type { Entry } from '../cues/core/store.ts';\nimport { readFileSync } from 'node:fs';\nimport type * as vscode from 'vscode';\nimport { helper } from '../shared/text.ts';\nimport type { X } from './resultsPage.ts';\n",
    'src/contracts/resultsPage.ts': "import * as z from 'zod';\nimport type { ZodType } from 'zod/v4';\nexport type X = 1;\n",
    'src/cues/core/store.ts': "import type { UiCue } from '../../contracts/cuesPage.ts';\nimport { render } from '../../webviews/cues/render.ts';\nexport type Entry = 1;\n",
    'src/cues/view.ts': "import '../contracts/cuesPage.ts';\n",
    'src/runner/core/matrix.ts': "import '../../contracts/resultsPage.ts';\nimport '../../contracts/cuesPage.ts';\n",
    'src/shared/text.ts': 'export const helper = 1;\n',
    'src/webviews/cues/render.ts': "import '../../contracts/cuesPage.ts';\n",
  });
  assert.deepEqual(problems, []);
  assert.deepEqual(violations(graph), [
    'src/contracts/cuesPage.ts -> src/contracts/resultsPage.ts (contract:cuesPage -> contract:resultsPage)',
    'src/contracts/cuesPage.ts -> src/cues/core/store.ts (contract:cuesPage -> core:cues)',
    'src/contracts/cuesPage.ts -> src/shared/text.ts (contract:cuesPage -> shared)',
    'src/cues/core/store.ts -> src/webviews/cues/render.ts (core:cues -> webview:cues)',
    'src/runner/core/matrix.ts -> src/contracts/cuesPage.ts (core:runner -> contract:cuesPage)',
  ]);
  assert.deepEqual(packageViolations(packages), [
    'src/contracts/cuesPage.ts -> node:fs (a contract may import zod only)',
    'src/contracts/cuesPage.ts -> vscode (a contract may import zod only)',
  ]);
});

test('a contract that uses a DOM or a Node global fails; URL, which every side has, does not', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'belay-contract-'));
  try {
    mkdirSync(path.join(root, 'src/contracts'), { recursive: true });
    writeFileSync(
      path.join(root, 'src/contracts/page.ts'),
      [
        'export const title = document.title;',
        'export const width: number = window.innerWidth;',
        "export const home = process.env['HOME'];",
        "export const bytes = Buffer.from('x');",
        "export const href = new URL('https://example.com/').href;",
        '',
      ].join('\n'),
    );
    const problems = contractGlobalProblems(root, ['src/contracts/page.ts']);
    assert.equal(problems.length, 4, problems.join('\n'));
    for (const [line, name] of [[1, 'document'], [2, 'window'], [3, 'process'], [4, 'Buffer']] as const) {
      assert.ok(problems.some((p) => p.startsWith(`src/contracts/page.ts:${line}: Cannot find name '${name}'`)), `no problem for ${name}:\n${problems.join('\n')}`);
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a contract costs each side only what it uses: the language client bundles none of zod, and the pages no Node code', async () => {
  const client = await metafileOf(['src/blocks/languageClient.ts'], { platform: 'node', format: 'cjs', external: ['vscode'] });
  const bundled = Object.values(client.outputs).flatMap((o) => Object.keys(o.inputs));
  assert.ok(bundled.includes('src/contracts/languageServer.ts'), 'the client does not bundle its contract: the check is looking in the wrong place');
  assert.deepEqual(bundled.filter((input) => input.includes('node_modules/zod/')), []);
  const apps = readdirSync(path.join(repoRoot, 'src/webviews')).filter((d) => statSync(path.join(repoRoot, 'src/webviews', d, 'main.ts'), { throwIfNoEntry: false })?.isFile());
  const pages = await metafileOf(
    apps.map((app) => `src/webviews/${app}/main.ts`),
    // Node modules kept outside, so that the assertion names them rather than the build failing.
    { platform: 'neutral', mainFields: ['browser', 'module', 'main'], format: 'iife', external: ['node:*', 'vscode'] },
  );
  const inputs = Object.keys(pages.inputs);
  assert.ok(inputs.filter((i) => i.startsWith('src/contracts/')).length >= 3, 'the pages bundle no contract: the check is looking in the wrong place');
  const nodeImports = Object.entries(pages.inputs).flatMap(([file, input]) => input.imports.filter((i) => i.external).map((i) => `${file} -> ${i.path}`));
  assert.deepEqual(nodeImports, []);
});
