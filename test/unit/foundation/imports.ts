// The import graph of src/ and the rules it must follow, as plain functions over data, so the
// architecture test can check the real tree and, separately, that a bad graph is caught.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

/** Where a module lives, which decides what it may import. */
export type Zone =
  | 'shared' // pure helpers for everything
  | `core:${string}` // a feature's pure core
  | 'server' // the CodingAgent language server (its own process)
  | 'cli' // the command lines
  | 'webviews' // page code every webview app shares (src/webviews/shared/)
  | `webview:${string}` // one webview app (a browser bundle)
  | `contract:${string}` // one contract in src/contracts/: zod schemas both sides of a boundary import
  | 'base' // the editor's foundation: context, settings, trust
  | 'ui' // editor-side helpers shared by features
  | `editor:${string}` // a feature's editor layer
  | 'entry'; // extension.ts and the commands that belong to no feature

const BASE = new Set(['src/context.ts', 'src/config.ts', 'src/trust.ts']);

/** The feature each webview app belongs to: only that feature speaks its page's contract. */
export const WEBVIEW_OWNERS: Readonly<Record<string, string>> = { cues: 'cues', trajectory: 'runner', results: 'runner' };

/** A page's contract is spoken by its app and by the feature it belongs to (core and editor layer). */
function pageSides(app: string): Zone[] {
  const feature = WEBVIEW_OWNERS[app]!;
  return [`webview:${app}`, `core:${feature}`, `editor:${feature}`];
}

/**
 * Each contract in src/contracts/ (by file name) and the zones on its two sides, which alone may
 * import it. A contract imports zod and nothing else: no other module of ours, no `node:`, no
 * `vscode`, no DOM (`contractGlobalProblems`), so that a page, the host and the server all run it.
 */
export const CONTRACT_SIDES: Readonly<Record<string, readonly Zone[]>> = {
  cuesPage: pageSides('cues'),
  resultsPage: pageSides('results'),
  trajectoryPage: pageSides('trajectory'),
  languageServer: ['core:blocks', 'editor:blocks', 'server'],
};

/** The only package a contract may import. */
export const CONTRACT_PACKAGES: ReadonlySet<string> = new Set(['zod']);

export function zoneOf(file: string): Zone {
  const parts = file.split('/');
  if (parts[0] !== 'src') throw new Error(`${file} is not under src/`);
  if (parts.length === 2) return BASE.has(file) ? 'base' : 'entry';
  const top = parts[1]!;
  if (top === 'shared') return 'shared';
  if (top === 'server') return 'server';
  if (top === 'cli') return 'cli';
  if (top === 'ui') return 'ui';
  if (top === 'contracts') return `contract:${parts.slice(2).join('/').replace(/\.ts$/, '')}`;
  if (top === 'webviews') {
    const app = parts[2]!;
    if (app === 'shared' || parts.length === 3) return 'webviews';
    return `webview:${app}`;
  }
  return parts[2] === 'core' ? `core:${top}` : `editor:${top}`;
}

/** May a module in `from` import one in `to`? Nothing imports upward; features stay apart. */
export function allowed(from: Zone, to: Zone): boolean {
  if (from === to) return true;
  if (to.startsWith('contract:')) return CONTRACT_SIDES[to.slice('contract:'.length)]?.includes(from) ?? false;
  const core = to.startsWith('core:');
  switch (true) {
    case from === 'shared':
      return false;
    case from.startsWith('core:'):
      return to === 'shared';
    case from === 'server':
      return to === 'core:blocks' || to === 'shared';
    case from === 'cli':
      return core || to === 'shared';
    case from === 'webviews':
      return false;
    case from.startsWith('contract:'):
      return false;
    case from.startsWith('webview:'):
      return to === 'webviews';
    case from === 'base':
      return to === 'shared';
    case from === 'ui':
      return to === 'shared' || to === 'base';
    case from.startsWith('editor:'): {
      const feature = from.slice('editor:'.length);
      return to === `core:${feature}` || to === 'shared' || to === 'ui' || to === 'base';
    }
    case from === 'entry':
      // CONTRIBUTING.md: activation hands one context to each feature's editor layer, nothing more.
      return to.startsWith('editor:') || to === 'base';
    default:
      return false;
  }
}

export type Graph = Map<string, string[]>;

/** The import graph and what the reader could not follow: each problem is a reason the guard fails. */
export interface ImportScan {
  graph: Graph;
  /** The packages each module imports (`zod`, `node:fs`, `vscode`…), as written. */
  packages: Map<string, string[]>;
  /** "file: what is wrong", for specifiers that resolve to nothing, lack `.ts`, or are computed. */
  problems: string[];
}

/** What sits beside a module and may be imported without being a module of ours (styles). */
const ASSET = /\.(css)$/;

/**
 * Resolves a relative specifier the way the bundler would (the exact file, then `.ts`, then
 * `/index.ts`), so an import written without its extension is still an edge the rules see. Returns
 * the repo path and whether the specifier is written as the house rules want it (with `.ts`, which
 * Node's type stripping needs at run time).
 */
export function resolveSpecifier(exists: (rel: string) => boolean, from: string, spec: string): { target?: string; exact: boolean } {
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec));
  if (spec.endsWith('.ts') || ASSET.test(spec)) return exists(base) ? { target: base, exact: true } : { exact: true };
  for (const candidate of [`${base}.ts`, `${base.replace(/\.js$/, '')}.ts`, `${base}/index.ts`]) {
    if (exists(candidate)) return { target: candidate, exact: false };
  }
  return { exact: false };
}

/** The relative specifiers a source text imports (static, type-only, re-exports, `import()`, `require()`, `import('…')` types). */
export function specifiersOf(fileName: string, text: string): { specs: string[]; computed: number } {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const specs: string[] = [];
  let computed = 0;
  const take = (node: ts.Node | undefined, call?: ts.Node) => {
    if (node && ts.isStringLiteralLike(node)) specs.push(node.text);
    // A bundle loaded by path at run time is followed through the `as typeof import('…')` it is given.
    else if (!(call?.parent && ts.isAsExpression(call.parent) && ts.isImportTypeNode(call.parent.type))) computed++;
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) {
      if (node.moduleSpecifier) take(node.moduleSpecifier);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      take(node.moduleReference.expression);
    } else if (ts.isCallExpression(node) && (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))) {
      take(node.arguments[0], node);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      take(node.argument.literal);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return { specs, computed };
}

/**
 * Every import of every .ts file under `dirs` (src/ unless told; type-only ones too), resolved to
 * repo paths; folders in `skip` (repo paths) are not read.
 */
export function scanImports(repoRoot: string, dirs: readonly string[] = ['src'], skip: readonly string[] = []): ImportScan {
  const graph: Graph = new Map();
  const packages = new Map<string, string[]>();
  const problems: string[] = [];
  const exists = (rel: string) => {
    try {
      return statSync(path.join(repoRoot, rel)).isFile();
    } catch {
      return false;
    }
  };
  const walk = (dir: string) => {
    for (const name of readdirSync(path.join(repoRoot, dir))) {
      const rel = `${dir}/${name}`;
      if (skip.includes(rel)) continue;
      if (statSync(path.join(repoRoot, rel)).isDirectory()) walk(rel);
      else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) {
        const { specs, computed } = specifiersOf(rel, readFileSync(path.join(repoRoot, rel), 'utf8'));
        if (computed > 0) problems.push(`${rel}: ${computed} import(s) or require(s) with a computed specifier, which no check can follow`);
        const targets = new Set<string>();
        const named = new Set<string>();
        for (const spec of specs) {
          if (!spec.startsWith('./') && !spec.startsWith('../')) {
            named.add(spec); // packages: `packageViolations` and the bundle checks look at those
            continue;
          }
          const { target, exact } = resolveSpecifier(exists, rel, spec);
          if (!target) problems.push(`${rel}: '${spec}' resolves to no file`);
          else if (!exact) problems.push(`${rel}: '${spec}' has no .ts extension (Node cannot run it; write '${path.posix.relative(path.posix.dirname(rel), target).replace(/^(?!\.)/, './')}')`);
          if (target && !ASSET.test(target)) targets.add(target);
        }
        graph.set(rel, [...targets].sort());
        packages.set(rel, [...named].sort());
      }
    }
  };
  for (const dir of dirs) walk(dir);
  return { graph, packages, problems };
}

/** The import graph of src/ (see `scanImports`, which also says what could not be followed). */
export function readGraph(repoRoot: string): Graph {
  return scanImports(repoRoot).graph;
}

/** Imports that break the zone rules, as "from -> to (zone -> zone)". */
export function violations(graph: Graph): string[] {
  const found: string[] = [];
  for (const [from, targets] of graph) {
    for (const to of targets) {
      if (!graph.has(to)) {
        found.push(`${from} -> ${to} (no such module)`);
        continue;
      }
      const a = zoneOf(from);
      const b = zoneOf(to);
      if (!allowed(a, b)) found.push(`${from} -> ${to} (${a} -> ${b})`);
    }
  }
  return found;
}

/** A package's name from a specifier: `zod/v4` is zod, `@scope/name/sub` is @scope/name, `node:fs` stays. */
export function packageName(spec: string): string {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** Packages imported where the zone does not allow them: a contract imports zod and nothing else. */
export function packageViolations(packages: ReadonlyMap<string, readonly string[]>): string[] {
  const found: string[] = [];
  for (const [file, specs] of packages) {
    const zone = zoneOf(file);
    if (!zone.startsWith('contract:')) continue;
    for (const spec of specs) {
      if (!CONTRACT_PACKAGES.has(packageName(spec))) found.push(`${file} -> ${spec} (a contract may import ${[...CONTRACT_PACKAGES].join(', ')} only)`);
    }
  }
  return found;
}

/** The one web API both sides of every contract have (pages and Node alike), declared for `contractGlobalProblems`. */
const SHARED_GLOBALS = `
declare class URL {
  constructor(url: string, base?: string | URL);
  href: string;
  readonly origin: string;
  protocol: string;
  username: string;
  password: string;
  host: string;
  hostname: string;
  port: string;
  pathname: string;
  search: string;
  hash: string;
  toString(): string;
  toJSON(): string;
}
`;

/**
 * What contracts use that only one side has: the files are compiled with the ECMAScript library
 * alone and URL (no DOM, no Node types), so a `document`, `window`, `process` or `Buffer` in a
 * contract is a name the compiler cannot find. Returns "file:line: message" for each error in
 * src/ (packages' own declarations are not checked).
 */
export function contractGlobalProblems(root: string, files: readonly string[]): string[] {
  const sharedFile = path.join(root, '.contract-globals.d.ts');
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2023,
    lib: ['lib.es2023.d.ts'],
    types: [],
    module: ts.ModuleKind.Preserve,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowImportingTsExtensions: true,
    verbatimModuleSyntax: true,
    noEmit: true,
    strict: true,
    noUncheckedIndexedAccess: true,
    skipLibCheck: true,
  };
  const host = ts.createCompilerHost(options, true);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (name) => name === sharedFile || fileExists.call(host, name);
  host.readFile = (name) => (name === sharedFile ? SHARED_GLOBALS : readFile.call(host, name));
  host.getSourceFile = (name, version, onError, create) =>
    name === sharedFile ? ts.createSourceFile(name, SHARED_GLOBALS, version) : getSourceFile.call(host, name, version, onError, create);
  const program = ts.createProgram([...files.map((f) => path.join(root, f)), sharedFile], options, host);
  const inSrc = path.join(root, 'src') + path.sep;
  return ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.file?.fileName.startsWith(inSrc) || d.file === undefined)
    .map((d) => {
      const text = ts.flattenDiagnosticMessageText(d.messageText, ' ');
      if (!d.file || d.start === undefined) return text;
      const { line } = d.file.getLineAndCharacterOfPosition(d.start);
      return `${path.relative(root, d.file.fileName).split(path.sep).join('/')}:${line + 1}: ${text}`;
    });
}

/** Cycles among the given nodes, each as its path closed on its first node (Tarjan's components). */
export function cycles(edges: Map<string, Set<string>>): string[][] {
  let index = 0;
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const strongConnect = (v: string) => {
    order.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!order.has(w)) {
        strongConnect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, order.get(w)!));
      }
    }
    if (low.get(v) === order.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || edges.get(v)?.has(v)) components.push(component.sort());
    }
  };
  for (const v of [...edges.keys()].sort()) if (!order.has(v)) strongConnect(v);
  return components;
}

/** Cycles between files. */
export function fileCycles(graph: Graph): string[][] {
  return cycles(new Map([...graph].map(([from, to]) => [from, new Set(to.filter((t) => t !== from))])));
}

/** A module's folder; src/ itself holds two: the editor's base (context, settings, trust) and the entry. */
function folderOf(file: string): string {
  const dir = path.posix.dirname(file);
  return dir === 'src' ? `src (${zoneOf(file)})` : dir;
}

/** A module's area: the top folder under src/ (a feature with its core, the webviews, …). */
function areaOf(file: string): string {
  const parts = file.split('/');
  return parts.length === 2 ? `src (${zoneOf(file)})` : `src/${parts[1]}`;
}

/** Cycles between folders (a feature's core counts as its own folder). */
export function folderCycles(graph: Graph): string[][] {
  return groupCycles(graph, folderOf);
}

/** Cycles between areas: a feature and the webviews, a feature and the server, … */
export function areaCycles(graph: Graph): string[][] {
  return groupCycles(graph, areaOf);
}

function groupCycles(graph: Graph, groupOf: (file: string) => string): string[][] {
  const edges = new Map<string, Set<string>>();
  for (const [from, targets] of graph) {
    const a = groupOf(from);
    if (!edges.has(a)) edges.set(a, new Set());
    for (const to of targets) {
      const b = groupOf(to);
      if (a !== b) edges.get(a)!.add(b);
    }
  }
  return cycles(edges);
}
