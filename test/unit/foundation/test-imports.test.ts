// The tests' own layout (CONTRIBUTING.md, Tests and Bench): a bench imports no test file, only what
// it shares with the tests in test/support/, which imports no test file either; nothing imports a
// `.test.ts` file; and a file under test/unit/ does not reach for the ways to start something
// (child processes, servers, the built command lines, containers), which belong in test/integration/.
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { repoRoot } from '../../../scripts/lib/paths.ts';
import { resolveSpecifier, scanImports } from './imports.ts';

/** Per file, every specifier it imports: relative ones resolved to repo paths, packages as written. */
type TestGraph = Map<string, string[]>;

/** Node modules and helpers by which a test starts something: a file using one is an integration test. */
const STARTS_SOMETHING = new Set([
  'node:child_process',
  'node:cluster',
  'node:dgram',
  'node:http',
  'node:https',
  'node:http2',
  'node:net',
  'node:worker_threads',
  'test/support/build.ts',
  'test/support/cli-process.ts',
  'test/support/runner/container-helpers.ts',
  'test/support/runner/gateway-upstream.ts',
]);

/** Imports that break the tests' layout, as "from -> to (why)". */
export function testImportProblems(graph: TestGraph): string[] {
  const found: string[] = [];
  for (const [from, targets] of graph) {
    for (const to of targets) {
      if (to.endsWith('.test.ts')) found.push(`${from} -> ${to} (a test file is imported by nothing: move what is shared into test/support/)`);
      else if ((from.startsWith('bench/') || from.startsWith('test/support/')) && to.startsWith('test/') && !to.startsWith('test/support/'))
        found.push(`${from} -> ${to} (bench/ and test/support/ import under test/ only test/support/)`);
      else if (from.startsWith('test/unit/') && STARTS_SOMETHING.has(to)) found.push(`${from} -> ${to} (it starts something: the file belongs in test/integration/)`);
    }
  }
  return found;
}

/** The import graph of bench/ and test/ (fixtures are data, not modules of the tests), packages included, and what could not be followed. */
function scanTests(root: string): { graph: TestGraph; problems: string[] } {
  const scan = scanImports(root, ['bench', 'test'], ['test/fixtures', 'bench/fixtures']);
  const graph: TestGraph = new Map([...scan.graph].map(([file, targets]) => [file, [...targets, ...(scan.packages.get(file) ?? [])]]));
  return { graph, problems: scan.problems };
}

describe("the tests' layout", () => {
  test('benches and test/support/ import no test file, nothing imports a .test.ts, test/unit/ starts nothing', () => {
    const { graph, problems } = scanTests(repoRoot);
    assert.ok(graph.has('bench/cues-panel.bench.ts') && graph.has('test/support/workbench.ts') && graph.has('test/unit/foundation/architecture.test.ts'), 'the scan reads bench/ and test/');
    assert.deepEqual(problems, []);
    assert.deepEqual(testImportProblems(graph), []);
  });

  test('the rules fail where they should (self-test)', () => {
    const problems = testImportProblems(
      new Map([
        ['bench/a.bench.ts', ['test/ui/lib.ts', 'test/support/workbench.ts', '../src/shared/process.ts', 'node:child_process']],
        ['bench/b.bench.ts', ['test/unit/blocks/hostileAnswers.ts']],
        ['test/support/x.ts', ['test/unit/runner/helpers.ts', 'test/support/temp.ts']],
        ['test/integration/a.test.ts', ['test/unit/b.test.ts', 'node:child_process', 'test/support/build.ts']],
        ['test/unit/c.test.ts', ['node:child_process', 'node:fs', 'test/support/cli-process.ts', 'test/support/temp.ts']],
      ]),
    );
    assert.deepEqual(problems, [
      'bench/a.bench.ts -> test/ui/lib.ts (bench/ and test/support/ import under test/ only test/support/)',
      'bench/b.bench.ts -> test/unit/blocks/hostileAnswers.ts (bench/ and test/support/ import under test/ only test/support/)',
      'test/support/x.ts -> test/unit/runner/helpers.ts (bench/ and test/support/ import under test/ only test/support/)',
      'test/integration/a.test.ts -> test/unit/b.test.ts (a test file is imported by nothing: move what is shared into test/support/)',
      'test/unit/c.test.ts -> node:child_process (it starts something: the file belongs in test/integration/)',
      'test/unit/c.test.ts -> test/support/cli-process.ts (it starts something: the file belongs in test/integration/)',
    ]);
  });

  test('an import written without .ts is followed to the test file it names (self-test)', () => {
    const exists = (rel: string) => rel === 'test/ui/lib.ts' || rel === 'test/unit/blocks/parser.test.ts';
    assert.equal(resolveSpecifier(exists, 'bench/a.bench.ts', '../test/ui/lib').target, 'test/ui/lib.ts');
    const graph: TestGraph = new Map([['bench/a.bench.ts', [resolveSpecifier(exists, 'bench/a.bench.ts', '../test/unit/blocks/parser.test').target!]]]);
    assert.deepEqual(testImportProblems(graph), ['bench/a.bench.ts -> test/unit/blocks/parser.test.ts (a test file is imported by nothing: move what is shared into test/support/)']);
  });
});
