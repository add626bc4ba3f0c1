// esbuild plugins of the one build (scripts/build.ts), here so tests can bundle with them.
import type * as esbuild from 'esbuild';
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';

/**
 * One `require('vscode')` per bundle. Left external as it is, every module importing `vscode` gets
 * its own `require('vscode')` (VS Code looks up which extension asks, each time) and its own copy
 * of the API's hundreds of properties (esbuild's CommonJS interop): about twenty of each while
 * dist/extension.cjs loads. Through this shim, an ES module that re-exports the API, the bundle
 * asks once and every module reads the one namespace.
 */
export const oneVscode: esbuild.Plugin = {
  name: 'one-vscode',
  setup(build) {
    build.onResolve({ filter: /^vscode$/ }, (args) =>
      args.namespace === 'belay-vscode' ? { path: 'vscode', external: true } : { path: 'vscode', namespace: 'belay-vscode' },
    );
    build.onLoad({ filter: /.*/, namespace: 'belay-vscode' }, () => ({ contents: "export * from 'vscode';", loader: 'js', resolveDir: build.initialOptions.absWorkingDir ?? process.cwd() }));
  },
};

/** `programText(import.meta.url, './programs/x')`, as src/shared/programText.ts asks every call to be written. */
const PROGRAM_CALL = /\bprogramText\(import\.meta\.url, '(\.\/[^'\\]+)'\)/g;

/**
 * Puts the text of each embedded program (src/shared/programText.ts) into the bundle: every
 * `programText(import.meta.url, './programs/x')` becomes an import of that file through esbuild's
 * text loader, so a bundle reads no program file at run time. A call written any other way stops
 * the build, which could not know what to embed.
 */
export const embedPrograms: esbuild.Plugin = {
  name: 'embed-programs',
  setup(build) {
    build.onLoad({ filter: /\.ts$/, namespace: 'file' }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      if (!source.includes('programText(') || args.path.endsWith(`${path.sep}programText.ts`)) return { contents: source, loader: 'ts' };
      const imports: string[] = [];
      const contents = source.replace(PROGRAM_CALL, (_call, file: string) => {
        const name = `belayProgram${imports.length}`;
        imports.push(`import ${name} from ${JSON.stringify(file)} with { type: 'text' };`);
        return name;
      });
      const left = contents.indexOf('programText(');
      if (left >= 0) {
        const line = contents.slice(0, left).split('\n').length;
        return { errors: [{ text: "programText must be called as programText(import.meta.url, './programs/<file>'), with a quoted path, so the build can embed the file", location: { file: args.path, line } }] };
      }
      // The reader of the files is not needed in a bundle.
      const bundled = contents.replace(/^import \{ programText \} from '[^']+';$/m, '');
      return { contents: `${imports.join('\n')}\n${bundled}`, loader: 'ts' };
    });
  },
};
