// esbuild plugins of the one build (scripts/build.ts), here so tests can bundle with them.
import type * as esbuild from 'esbuild';

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
