// One in-memory esbuild bundle for the tests that read what a build would make (which modules a
// bundle reaches, what it holds) without writing dist/: the repository as the working folder,
// nothing written, the metafile on, esbuild's own messages silent.
import * as esbuild from 'esbuild';
import { repoRoot } from '../../scripts/lib/paths.ts';

/** Bundles `entries` in memory; `options` add to (or override) the defaults above. */
export function bundleInMemory(entries: string[], options: esbuild.BuildOptions): Promise<esbuild.BuildResult<{ write: false; metafile: true }>> {
  return esbuild.build({
    entryPoints: entries,
    absWorkingDir: repoRoot,
    bundle: true,
    logLevel: 'silent',
    ...options,
    write: false,
    metafile: true,
  });
}
