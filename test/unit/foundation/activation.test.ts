// Activation stays light: what `activate` loads before it returns (extension.ts and everything it
// imports statically) reaches none of the heavy libraries. Features load them when first used,
// through `require()` calls esbuild turns into lazily evaluated modules.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as esbuild from 'esbuild';
import { repoRoot } from '../../../scripts/lib/paths.ts';

const HEAVY = ['zod', 'yaml', 'smol-toml', 'vscode-languageclient', 'vscode-languageserver', 'execa'];

/** Packages and modules reached from `entry` through static imports only; `via` says which module imports each package. */
async function loadedAtStart(entry: string): Promise<{ packages: string[]; modules: string[]; via: string[] }> {
  const result = await esbuild.build({
    entryPoints: [entry],
    absWorkingDir: repoRoot,
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    format: 'cjs',
    packages: 'external',
    external: ['vscode'],
    outdir: 'out/activation-check',
    logLevel: 'silent',
  });
  const inputs = result.metafile.inputs;
  const packages = new Set<string>();
  const modules = new Set<string>();
  const via = new Set<string>();
  const visit = (file: string) => {
    if (modules.has(file)) return;
    modules.add(file);
    for (const i of inputs[file]?.imports ?? []) {
      if (i.kind !== 'import-statement') continue; // require() and import() load on first use
      if (i.external) {
        const name = i.path.startsWith('@') ? i.path.split('/').slice(0, 2).join('/') : i.path.split('/')[0]!;
        packages.add(name);
        via.add(`${name} <- ${file}`);
      } else visit(i.path);
    }
  };
  visit(entry);
  return { packages: [...packages].sort(), modules: [...modules].sort(), via: [...via].sort() };
}

test('activation loads no heavy library: zod, the task parsers, the language client and execa wait for first use', async () => {
  const { modules, via } = await loadedAtStart('src/extension.ts');
  assert.ok(modules.length > 3, `only ${modules.length} modules found: the check is looking in the wrong place`);
  assert.deepEqual(via.filter((v) => HEAVY.includes(v.split(' <- ')[0]!)), []);
});

test('the check sees a heavy library imported statically, and not one behind require()', async () => {
  const { packages } = await loadedAtStart('test/fixtures/activation/eager.ts');
  assert.deepEqual(packages, ['zod']);
});
