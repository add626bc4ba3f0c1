// `npm test`: builds, then runs every suite (or those named: unit, integration, grammar, host, ui)
// and ends with one line "N passed, N failed". Exits non-zero when anything failed or a suite did
// not run. The pure unit tests come first: their failures show in seconds, before the integration
// tests' real processes, sandboxes and containers.
import { execFileSync } from 'node:child_process';
import { repoRoot } from './lib/paths.ts';
import { runGrammarTests, runHostTests, runNodeTests, runUiTests, type SuiteResult } from './lib/suites.ts';
import { CONTAINER_PACKAGES, ensureSystemPackages, REMOTE_PACKAGES } from './lib/system.ts';

const all = ['unit', 'integration', 'grammar', 'host', 'ui'] as const;
type Suite = (typeof all)[number];
const asked = process.argv.slice(2);
const unknown = asked.filter((s) => !(all as readonly string[]).includes(s));
if (unknown.length > 0) {
  console.error(`unknown suite(s): ${unknown.join(', ')}; choose from ${all.join(', ')}`);
  process.exit(2);
}
const suites: Suite[] = asked.length > 0 ? (asked as Suite[]) : [...all];

execFileSync(process.execPath, ['scripts/build.ts', '--tests'], { cwd: repoRoot, stdio: 'inherit' });
// Built once for every suite: test files running side by side do not rebuild dist/ under each other.
process.env.BELAY_TESTS_BUILT = '1';

const runners: Record<Suite, () => Promise<SuiteResult>> = {
  unit: () => runNodeTests('unit', ['test/unit/**/*.test.ts'], 2),
  integration: () => {
    // The container backend's tests run real containers (the base image is built from .cache/belay).
    ensureSystemPackages(CONTAINER_PACKAGES);
    // The remote-engine tests make hosts in network namespaces, each with an SSH server and rootless podman.
    if (process.getuid?.() === 0) ensureSystemPackages(REMOTE_PACKAGES);
    return runNodeTests('integration', ['test/integration/**/*.test.ts'], 2);
  },
  grammar: () => runGrammarTests(),
  host: () => runHostTests(),
  ui: () => runUiTests(),
};

const results: SuiteResult[] = [];
for (const suite of suites) {
  console.log(`\n=== ${suite} tests ===`);
  try {
    results.push(await runners[suite]());
  } catch (error) {
    results.push({ name: suite, passed: 0, failed: 0, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  }
}

console.log('\n=== summary ===');
let passed = 0;
let failed = 0;
for (const r of results) {
  passed += r.passed;
  failed += r.failed;
  console.log(`${r.name.padEnd(11)} ${r.passed} passed, ${r.failed} failed${r.error ? `  (${r.error.split('\n')[0]})` : ''}${r.note ? `  [${r.note}]` : ''}`);
}
const broken = results.filter((r) => r.error);
if (broken.length > 0) failed += broken.length;
console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed > 0 ? 1 : 0;
