// The one build: every bundle Belay ships (extension, language server, webview apps, command
// lines) and, with --tests, the bundles that run inside the VS Code extension host.
import * as esbuild from 'esbuild';
import { chmod, copyFile, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { repoRoot } from './lib/paths.ts';

const argv = process.argv.slice(2);
const args = new Set(argv);
const watch = args.has('--watch');
const withTests = args.has('--tests') || watch;
const production = args.has('--production');
// --dist DIR: where the shipped bundles go (packaging builds into a staging folder).
const distArg = argv.indexOf('--dist');

const pkg = JSON.parse(await readFile(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string };
const define = { BELAY_VERSION: JSON.stringify(pkg.version) };
const dist = distArg >= 0 && argv[distArg + 1] ? path.resolve(argv[distArg + 1]!) : path.join(repoRoot, 'dist');
const out = path.join(repoRoot, 'out');

const nodeCommon: esbuild.BuildOptions = {
  bundle: true,
  platform: 'node',
  target: 'node22',
  format: 'cjs',
  sourcemap: production ? false : 'linked',
  minify: production,
  define,
  logLevel: 'warning',
  absWorkingDir: repoRoot,
};

const shebang = { js: '#!/usr/bin/env node' };

/** Entry points that exist in this checkout (a feature adds its own when it lands). */
function present(entries: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(entries).filter(([, file]) => existsSync(path.join(repoRoot, file))));
}

const builds: esbuild.BuildOptions[] = [
  {
    ...nodeCommon,
    // The language client is loaded on the first CodingAgent document, not at activation.
    entryPoints: { extension: 'src/extension.ts', languageClient: 'src/blocks/languageClient.ts' },
    outdir: dist,
    external: ['vscode'],
  },
  {
    ...nodeCommon,
    entryPoints: present({ server: 'src/server/main.ts' }),
    outdir: dist,
  },
  {
    ...nodeCommon,
    entryPoints: present({ cli: 'src/cli/belay.ts', cueme: 'src/cli/cueme.ts' }),
    outdir: dist,
    banner: shebang,
  },
  {
    bundle: true,
    platform: 'browser',
    target: 'es2022',
    format: 'iife',
    sourcemap: production ? false : 'linked',
    minify: production,
    define,
    logLevel: 'warning',
    absWorkingDir: repoRoot,
    entryPoints: await webviewEntries(),
    outdir: path.join(dist, 'webviews'),
    loader: { '.css': 'css' },
  },
];

if (withTests) {
  const hostTests = await testEntries(path.join(repoRoot, 'test', 'host'));
  builds.push({
    ...nodeCommon,
    sourcemap: 'inline',
    minify: false,
    entryPoints: hostTests,
    outdir: path.join(out, 'test', 'host'),
    external: ['vscode', 'mocha'],
  });

}

/** Each folder under src/webviews/ with a main.ts is one webview app: dist/webviews/<name>.js. */
async function webviewEntries(): Promise<Record<string, string>> {
  const root = path.join(repoRoot, 'src', 'webviews');
  const entries: Record<string, string> = {};
  for (const name of await readdir(root)) {
    const main = path.join('src', 'webviews', name, 'main.ts');
    if (existsSync(path.join(repoRoot, main))) entries[name] = main;
  }
  return entries;
}

async function testEntries(dir: string): Promise<Record<string, string>> {
  const entries: Record<string, string> = {};
  for (const file of await readdir(dir)) {
    if (file === 'index.ts' || file.endsWith('.test.ts')) entries[file.replace(/\.ts$/, '')] = path.relative(repoRoot, path.join(dir, file));
  }
  return entries;
}

async function afterBuild(): Promise<void> {
  // package.json says "type": "module" for the sources; the bundles are CommonJS.
  await writeFile(path.join(dist, 'package.json'), '{ "type": "commonjs" }\n');
  if (withTests) await writeFile(path.join(out, 'package.json'), '{ "type": "commonjs" }\n');
  for (const cli of ['cli.js', 'cueme.js']) if (existsSync(path.join(dist, cli))) await chmod(path.join(dist, cli), 0o755);
  const codicons = path.join(repoRoot, 'node_modules', '@vscode', 'codicons', 'dist');
  await mkdir(path.join(dist, 'webviews'), { recursive: true });
  for (const file of ['codicon.css', 'codicon.ttf']) await copyFile(path.join(codicons, file), path.join(dist, 'webviews', file));
}

const started = performance.now();
if (production) await rm(dist, { recursive: true, force: true });
await mkdir(dist, { recursive: true });
const active = builds.filter((b) => Object.keys(b.entryPoints as Record<string, string>).length > 0);
if (watch) {
  const contexts = await Promise.all(
    active.map((options) =>
      esbuild.context({
        ...options,
        plugins: [{ name: 'after', setup: (b) => b.onEnd(async (r) => { if (r.errors.length === 0) await afterBuild(); console.log(`[watch] built ${Object.keys(options.entryPoints as object).join(', ')}`); }) }],
      }),
    ),
  );
  await Promise.all(contexts.map((c) => c.watch()));
  console.log('[watch] watching for changes; Ctrl-C to stop');
} else {
  await Promise.all(active.map((options) => esbuild.build(options)));
  await afterBuild();
  console.log(`built ${active.length} bundle groups in ${Math.round(performance.now() - started)} ms`);
}
