// The programs Belay runs elsewhere are files of their own (src/**/programs/), read through
// src/shared/programText.ts: each is checked by its own language's checker, each file is used and
// every use names a file, and the build puts their text into the bundles, so a bundle reads none
// of them at run time. (What each program does is tested by running it: spawn-host.test.ts,
// runner/doctor.test.ts.)
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import * as esbuild from 'esbuild';
import { embedPrograms } from '../../../scripts/build-plugins.ts';
import { repoRoot } from '../../../scripts/lib/paths.ts';
import { bundleInMemory } from '../../support/bundle.ts';
import { programText } from '../../../src/shared/programText.ts';


function filesUnder(dir: string): string[] {
  return readdirSync(path.join(repoRoot, dir)).flatMap((name) => {
    const rel = `${dir}/${name}`;
    return statSync(path.join(repoRoot, rel)).isDirectory() ? filesUnder(rel) : [rel];
  });
}

const programFiles = filesUnder('src').filter((file) => file.split('/').includes('programs'));
const sources = filesUnder('src').filter((file) => file.endsWith('.ts') && !file.endsWith('/programText.ts'));

/** Each `programText(import.meta.url, './x')` in the sources, as the program file it names. */
const uses = sources.flatMap((file) =>
  [...readFileSync(path.join(repoRoot, file), 'utf8').matchAll(/programText\(import\.meta\.url, '([^']+)'\)/g)].map((m) => path.posix.normalize(path.posix.join(path.posix.dirname(file), m[1]!))),
);

/** How each kind of program file is checked, by the interpreter that runs it; none reads a file it writes. */
const CHECKERS: Record<string, { interpreter: string; args: (file: string) => string[] }> = {
  '.cjs': { interpreter: process.execPath, args: (file) => ['--check', file] },
  // Compiled in memory: py_compile would leave __pycache__ in the sources.
  '.py': { interpreter: 'python3', args: (file) => ['-c', 'import sys; compile(open(sys.argv[1], encoding="utf-8").read(), sys.argv[1], "exec")', file] },
  '.pl': { interpreter: 'perl', args: (file) => ['-c', file] },
  '.sh': { interpreter: 'sh', args: (file) => ['-n', file] },
};

function has(interpreter: string): boolean {
  return interpreter === process.execPath || spawnSync('/bin/sh', ['-c', `command -v ${interpreter}`]).status === 0;
}

test('every program file is one the sources read, and every one they read is there', () => {
  // The spawn helper and the doctor's leftover wrapper at least (the backends' own went with the executor).
  assert.ok(programFiles.length >= 2, `program files: ${programFiles.join(', ')}`);
  assert.deepEqual([...new Set(uses)].sort(), [...programFiles].sort());
});

for (const file of programFiles) {
  const checker = CHECKERS[path.extname(file)];
  test(`${file} passes its language's check`, { skip: checker && !has(checker.interpreter) && `${checker.interpreter} is not installed here` }, () => {
    assert.ok(checker, `no checker for ${path.extname(file)} files: add one to CHECKERS`);
    const run = spawnSync(checker.interpreter, checker.args(path.join(repoRoot, file)), { encoding: 'utf8' });
    assert.equal(run.status, 0, `${checker.interpreter} ${checker.args(file).join(' ')}: ${run.stderr}`);
  });
}

test('the checks fail on a broken program', (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'belay-program-check-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const broken: Record<string, string> = { '.cjs': 'const x = ;\n', '.py': 'def f(:\n', '.pl': 'my $x = ;\n', '.sh': 'if then fi\n' };
  for (const [ext, text] of Object.entries(broken)) {
    const checker = CHECKERS[ext]!;
    if (!has(checker.interpreter)) continue;
    const file = path.join(dir, `broken${ext}`);
    writeFileSync(file, text);
    assert.notEqual(spawnSync(checker.interpreter, checker.args(file), { encoding: 'utf8' }).status, 0, `${ext} not caught`);
  }
});

test('from the sources, programText reads the file beside the module that asks', () => {
  const url = new URL('../../../src/shared/spawn-host.ts', import.meta.url).href;
  assert.equal(programText(url, './programs/spawn-host.cjs'), readFileSync(path.join(repoRoot, 'src/shared/programs/spawn-host.cjs'), 'utf8'));
});

test('the build puts each program into the bundle as text, and nothing reads a program file at run time', async () => {
  const result = await bundleInMemory(['src/cli/belay.ts'], {
    platform: 'node',
    format: 'cjs',
    packages: 'external',
    plugins: [embedPrograms],
    outfile: 'out/programs-check/cli.js',
    define: { BELAY_VERSION: '"test"' },
  });
  const bundle = result.outputFiles.find((f) => f.path.endsWith('cli.js'))!.text;
  const [output] = Object.values(result.metafile.outputs).filter((o) => o.entryPoint === 'src/cli/belay.ts');
  const textImports = Object.values(result.metafile.inputs).flatMap((input) => input.imports.filter((i) => i.with?.type === 'text').map((i) => i.path));
  for (const file of programFiles) {
    assert.ok(textImports.includes(file), `${file} is not imported as text`);
    assert.ok((output?.inputs[file]?.bytesInOutput ?? 0) >= statSync(path.join(repoRoot, file)).size, `${file} is not in the bundle as its text`);
  }
  // Its first line, as esbuild writes it into a string.
  assert.ok(bundle.includes('belay-spawn-host'));
  assert.doesNotMatch(bundle, /programText|import\.meta/);
});

test('a call the build cannot read stops it, naming the file and line', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'belay-program-call-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'x.sh'), 'echo x\n');
  writeFileSync(path.join(dir, 'entry.ts'), `import { programText } from '${path.join(repoRoot, 'src/shared/programText.ts')}';\nconst name = './x.sh';\nexport const X = programText(import.meta.url, name);\n`);
  const result = await esbuild.build({ entryPoints: [path.join(dir, 'entry.ts')], bundle: true, write: false, platform: 'node', format: 'cjs', plugins: [embedPrograms], logLevel: 'silent' }).catch((error: esbuild.BuildFailure) => error);
  assert.ok('errors' in result && result.errors.length === 1, 'the build went through');
  const [error] = result.errors;
  assert.match(error!.text, /^programText must be called as programText\(import\.meta\.url, '\.\/programs\/<file>'\)/);
  assert.equal(error!.location?.line, 3);
  assert.match(error!.location?.file ?? '', /entry\.ts$/);
});
