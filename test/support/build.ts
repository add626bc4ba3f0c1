// The bundles the command-line tests run (dist/). `npm test` builds them once before any suite
// and says so in BELAY_TESTS_BUILT: test files running side by side must not rewrite dist/ while
// another one runs what is in it. A test file run on its own builds them itself.
import { execFileSync } from 'node:child_process';
import { repoRoot } from '../../scripts/lib/paths.ts';

export function ensureBuilt(): void {
  if (process.env.BELAY_TESTS_BUILT === '1') return;
  execFileSync(process.execPath, ['scripts/build.ts'], { cwd: repoRoot, stdio: 'pipe' });
}
