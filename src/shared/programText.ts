// The text of a program Belay runs elsewhere (`node -e`, `python3 -c`, `perl -e`, `sh -c`, in a
// helper process, a sandbox or a container), kept as a file of its own in its own language so
// that its linter and its tests read it. Every such text is read through this one function:
// - from the sources (scripts, unit tests on Node 22), it reads the file beside the module that
//   asks;
// - in the bundles, the build has already put the file's text in its place (`embedPrograms` in
//   scripts/build-plugins.ts, esbuild's text loader), so nothing is read at run time and dist/
//   needs no program files.
// Write each call as `programText(import.meta.url, './programs/<file>')`, with a quoted path: the
// build refuses any other form.
import { readFileSync } from 'node:fs';

/** The text of `file` (a path relative to the module whose `import.meta.url` is `from`). */
export function programText(from: string, file: string): string {
  return readFileSync(new URL(file, from), 'utf8');
}
