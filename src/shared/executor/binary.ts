// Where the executor's program is. scripts/build.ts compiles native/executor.c into
// dist/native/linux-<arch>/belay-exec (x64, and arm64 where the cross compiler is); the bundles in
// dist/ find it beside them, the sources (tests, `node src/cli/belay.ts`) in the checkout's dist/.
import { existsSync } from 'node:fs';
import * as path from 'node:path';

/** The architectures the executor is built for, as Node names them. */
export type ExecutorArch = 'x64' | 'arm64';

export const EXECUTOR_NAME = 'belay-exec';

/** The folder of the executor for `arch` under a dist/ folder. */
export function executorSubpath(arch: ExecutorArch): string {
  return path.join('native', `linux-${arch}`, EXECUTOR_NAME);
}

/**
 * The executor for Linux on `arch` (the host's by default). The build defines `import.meta.dirname`
 * as the bundle's folder (dist/, or out/test/host for the host tests' bundles); from the sources
 * it is src/shared/executor. Throws one line when it is not there.
 */
export function executorBinary(arch: ExecutorArch = hostArch(), here: string = import.meta.dirname): string {
  const candidates = [path.join(here, executorSubpath(arch)), path.join(here, '..', '..', '..', 'dist', executorSubpath(arch))];
  const found = candidates.find((file) => existsSync(file));
  if (found) return found;
  throw new Error(`${EXECUTOR_NAME} for linux-${arch} is not built (looked in ${candidates.map((c) => path.dirname(c)).join(' and ')}): run node scripts/build.ts${arch === 'arm64' ? ' where aarch64-linux-gnu-gcc is installed' : ''}`);
}

/** The host's architecture when the executor is built for it; other ones are named as they are. */
export function hostArch(arch: string = process.arch): ExecutorArch {
  if (arch === 'x64' || arch === 'arm64') return arch;
  throw new Error(`the executor is built for Linux on x64 and arm64, not ${arch}`);
}
