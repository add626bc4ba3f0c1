// Activation stays light: what `activate` loads before it returns (extension.ts and everything it
// imports statically) reaches none of the heavy libraries. Features load them when first used,
// through `require()` calls esbuild turns into lazily evaluated modules.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { test } from 'node:test';
import * as esbuild from 'esbuild';
import { oneVscode } from '../../../scripts/build-plugins.ts';
import { repoRoot } from '../../../scripts/lib/paths.ts';
import { bundleInMemory } from '../../support/bundle.ts';

const HEAVY = ['zod', 'yaml', 'smol-toml', 'vscode-languageclient', 'vscode-languageserver', 'execa'];

/**
 * Packages and modules reached from `entry` through static imports only, and for each heavy package
 * reached, the imports that lead to it (so a failure says which module to change).
 */
async function loadedAtStart(entry: string): Promise<{ packages: string[]; modules: string[]; heavy: string[] }> {
  const result = await bundleInMemory([entry], { platform: 'node', format: 'cjs', packages: 'external', external: ['vscode'], outdir: 'out/activation-check' });
  const inputs = result.metafile.inputs;
  const packages = new Set<string>();
  const modules = new Set<string>();
  const heavy: string[] = [];
  const visit = (file: string, via: string[]) => {
    if (modules.has(file)) return;
    modules.add(file);
    for (const i of inputs[file]?.imports ?? []) {
      if (i.kind !== 'import-statement') continue; // require() and import() load on first use
      if (i.external) {
        const name = i.path.startsWith('@') ? i.path.split('/').slice(0, 2).join('/') : i.path.split('/')[0]!;
        packages.add(name);
        if (HEAVY.includes(name)) heavy.push([...via, file, name].join(' -> '));
      } else visit(i.path, [...via, file]);
    }
  };
  visit(entry, []);
  return { packages: [...packages].sort(), modules: [...modules].sort(), heavy: heavy.sort() };
}

test('activation loads no heavy library: zod, the task parsers, the language client and execa wait for first use', async () => {
  const { packages, modules, heavy } = await loadedAtStart('src/extension.ts');
  assert.ok(modules.length > 3, `only ${modules.length} modules found: the check is looking in the wrong place`);
  assert.deepEqual(packages.filter((p) => HEAVY.includes(p)), [], `loaded at activation through:\n${heavy.join('\n')}`);
});

test('the check sees a heavy library imported statically, and not one behind require()', async () => {
  const { packages, heavy } = await loadedAtStart('test/fixtures/activation/eager.ts');
  assert.deepEqual(packages, ['zod']);
  assert.deepEqual(heavy, ['test/fixtures/activation/eager.ts -> zod']);
});

/** How many times a bundle of `entry` asks for the `vscode` module, with the build's plugins or without. */
async function vscodeRequires(entry: string, plugins: esbuild.Plugin[]): Promise<number> {
  const result = await bundleInMemory([entry], { platform: 'node', format: 'cjs', packages: 'external', external: ['vscode'], plugins, outdir: 'out/activation-check' });
  return result.outputFiles.reduce((n, f) => n + (f.text.match(/require\("vscode"\)/g)?.length ?? 0), 0);
}

test('VS Code requires the extension as CommonJS: package.json is "type": "module", so main must end in .cjs', async () => {
  const manifest = JSON.parse(await readFile(path.join(repoRoot, 'package.json'), 'utf8')) as { type?: string; main: string };
  // VS Code's rule (extHostExtensionService `_isESM`): such a main is loaded with import(), through
  // Node's asynchronous ESM loader, and every turn of the event loop that takes counts as Belay's.
  const loadedAsEsm = manifest.main.endsWith('.mjs') || (manifest.type === 'module' && !manifest.main.endsWith('.cjs'));
  assert.equal(loadedAsEsm, false, `VS Code would import() ${manifest.main}`);
});

test('the extension bundle asks for the vscode module once, not once per module that imports it', async () => {
  assert.equal(await vscodeRequires('src/extension.ts', [oneVscode]), 1);
  assert.ok((await vscodeRequires('src/extension.ts', [])) > 1, 'without the plugin each module asks: the check counts the wrong thing');
});
