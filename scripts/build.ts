// The one build: every bundle Belay ships (extension, language server, webview apps, command
// lines) and, with --tests, the bundles that run inside the VS Code extension host.
import * as esbuild from 'esbuild';
import { chmod, copyFile, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { embedPrograms, oneVscode } from './build-plugins.ts';
import { repoRoot } from './lib/paths.ts';

const argv = process.argv.slice(2);
const args = new Set(argv);
const watch = args.has('--watch');
const withTests = args.has('--tests') || watch;
const production = args.has('--production');
// --dist DIR: where the shipped bundles go (packaging builds into a staging folder).
const distArg = argv.indexOf('--dist');

const pkg = JSON.parse(await readFile(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string };
// import.meta.dirname is the bundle's folder in the bundles (src/shared/executor/binary.ts finds
// dist/native/ beside them).
const define = { BELAY_VERSION: JSON.stringify(pkg.version), 'import.meta.dirname': '__dirname' };
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
  // The programs Belay runs elsewhere (src/shared/programText.ts) go into the bundles as text.
  plugins: [embedPrograms],
};

const shebang = { js: '#!/usr/bin/env node' };

/** Entry points that exist in this checkout (a feature adds its own when it lands). */
function present(entries: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(entries).filter(([, file]) => existsSync(path.join(repoRoot, file))));
}

/**
 * Activation loads dist/extension.cjs only: the modules features load on first use (their
 * `require('./x.ts')` and `import('./x.ts')` calls) go to dist/features.js, loaded at the first such
 * call. The extension build records which modules those are; the features build bundles them, each
 * evaluated when first asked for, so what one feature loads does not run another's code.
 */
const FEATURES = 'features.js';
const lazyModules = new Set<string>();
const splitFeatures: esbuild.Plugin = {
  name: 'split-features',
  setup(build) {
    build.onStart(() => lazyModules.clear());
    build.onResolve({ filter: /\.ts$/ }, (args) => {
      if (args.kind !== 'require-call' && args.kind !== 'dynamic-import') return undefined;
      const file = path.resolve(args.resolveDir, args.path);
      const rel = path.relative(repoRoot, file).split(path.sep).join('/');
      if (!rel.startsWith('src/') || !existsSync(file)) return undefined;
      lazyModules.add(rel);
      return { path: rel, namespace: 'belay-feature' };
    });
    build.onLoad({ filter: /.*/, namespace: 'belay-feature' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(`./${FEATURES}`)}).load(${JSON.stringify(args.path)});`,
      loader: 'js',
    }));
    build.onResolve({ filter: new RegExp(`^\\./${FEATURES.replace('.', '\\.')}$`) }, () => ({ path: `./${FEATURES}`, external: true }));
  },
};

/** dist/features.js: every module the extension loads on first use, keyed by its source path. */
async function buildFeatures(): Promise<void> {
  const table = [...lazyModules].sort().map((rel) => `  ${JSON.stringify(rel)}: () => require(${JSON.stringify(`./${rel}`)}),`).join('\n');
  await esbuild.build({
    ...nodeCommon,
    stdin: {
      contents: `const modules = {\n${table}\n};\nexports.load = (name) => {\n  const load = modules[name];\n  if (!load) throw new Error('Belay: ' + name + ' is not in ${FEATURES}; rebuild Belay');\n  return load();\n};\n`,
      resolveDir: repoRoot,
      sourcefile: 'features-entry.js',
      loader: 'js',
    },
    outfile: path.join(dist, FEATURES),
    external: ['vscode'],
    plugins: [embedPrograms, oneVscode],
  });
}

const builds: esbuild.BuildOptions[] = [
  {
    ...nodeCommon,
    entryPoints: { extension: 'src/extension.ts' },
    outdir: dist,
    // `.cjs`, not `.js`: package.json says "type": "module" (for the sources), and VS Code loads
    // such an extension's main with `import()` unless it ends in .cjs. That goes through Node's
    // asynchronous ESM loader (VS Code's module hooks run on another thread) and takes several
    // turns of the event loop, all of which VS Code counts as Belay's code loading; a .cjs main is
    // one synchronous require, as for any CommonJS extension.
    outExtension: { '.js': '.cjs' },
    external: ['vscode'],
    plugins: [splitFeatures, embedPrograms, oneVscode],
    // When the bundle started loading, so the activation log can tell loading from activating.
    banner: { js: 'globalThis.__belayLoadStart = performance.now();' },
    footer: { js: 'globalThis.__belayLoadEnd = performance.now();' },
  },
  {
    ...nodeCommon,
    // The language client is loaded on the first CodingAgent document, not at activation.
    entryPoints: { languageClient: 'src/blocks/languageClient.ts' },
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

/**
 * The executor (src/shared/executor/native/executor.c), a static Linux program, into
 * dist/native/linux-<arch>/belay-exec: for the host's architecture with `cc`, for the other with
 * its cross compiler when installed (aarch64-linux-gnu-gcc, x86_64-linux-gnu-gcc). Rebuilt when
 * the source is newer. A production build (what is packaged) needs both.
 */
async function buildExecutor(): Promise<void> {
  const source = path.join(repoRoot, 'src', 'shared', 'executor', 'native', 'executor.c');
  const host = process.platform === 'linux' ? process.arch : undefined;
  const targets = [
    { arch: 'x64', compiler: host === 'x64' ? 'cc' : 'x86_64-linux-gnu-gcc' },
    { arch: 'arm64', compiler: host === 'arm64' ? 'cc' : 'aarch64-linux-gnu-gcc' },
  ];
  const missing: string[] = [];
  for (const { arch, compiler } of targets) {
    const target = path.join(dist, 'native', `linux-${arch}`, 'belay-exec');
    if (existsSync(target) && statSync(target).mtimeMs >= statSync(source).mtimeMs) continue;
    if (!onPath(compiler)) {
      if (arch === host) throw new BuildError(`belay-exec (linux-${arch}): no C compiler: ${compiler} is not on PATH (install gcc and the static C library, e.g. apt-get install gcc libc6-dev)`);
      missing.push(`belay-exec (linux-${arch}): ${compiler} is not on PATH (apt-get install gcc-${arch === 'arm64' ? 'aarch64' : 'x86-64'}-linux-gnu libc6-dev-${arch === 'arm64' ? 'arm64' : 'amd64'}-cross)`);
      continue;
    }
    await mkdir(path.dirname(target), { recursive: true });
    const partial = `${target}.${process.pid}.partial`;
    try {
      execFileSync(compiler, ['-static', '-Os', '-s', '-Wall', '-Wextra', '-Werror', '-o', partial, source], { stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (error) {
      await rm(partial, { force: true });
      const said = ((error as { stderr?: Buffer }).stderr?.toString() ?? '').trim();
      throw new BuildError(`belay-exec (linux-${arch}): ${compiler} failed${said ? `:\n${said}` : ''}`);
    }
    await rename(partial, target);
  }
  if (missing.length > 0 && production) throw new BuildError(`${missing.join('\n')}\n(a packaged Belay ships the executor for Linux x64 and arm64)`);
}

class BuildError extends Error {}

function onPath(program: string): boolean {
  return (process.env.PATH ?? '').split(path.delimiter).some((dir) => dir && existsSync(path.join(dir, program)));
}

const started = performance.now();
if (production) await rm(dist, { recursive: true, force: true });
await mkdir(dist, { recursive: true });
const active = builds.filter((b) => Object.keys(b.entryPoints as Record<string, string>).length > 0);
try {
  await buildExecutor();
} catch (error) {
  if (!(error instanceof BuildError)) throw error;
  console.error(error.message);
  process.exit(1);
}
if (watch) {
  const contexts = await Promise.all(
    active.map((options) =>
      esbuild.context({
        ...options,
        plugins: [
          ...(options.plugins ?? []),
          {
            name: 'after',
            setup: (b) =>
              b.onEnd(async (r) => {
                if (r.errors.length > 0) return;
                if (options.plugins?.includes(splitFeatures)) await buildFeatures();
                await afterBuild();
                console.log(`[watch] built ${Object.keys(options.entryPoints as object).join(', ')}`);
              }),
          },
        ],
      }),
    ),
  );
  await Promise.all(contexts.map((c) => c.watch()));
  console.log('[watch] watching for changes; Ctrl-C to stop');
} else {
  await Promise.all(active.map((options) => esbuild.build(options)));
  await buildFeatures();
  await afterBuild();
  console.log(`built ${active.length} bundle groups in ${Math.round(performance.now() - started)} ms`);
}
