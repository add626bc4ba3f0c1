// The import graph of src/ and the rules it must follow, as plain functions over data, so the
// architecture test can check the real tree and, separately, that a bad graph is caught.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';

/** Where a module lives, which decides what it may import. */
export type Zone =
  | 'shared' // pure helpers for everything
  | `core:${string}` // a feature's pure core
  | 'server' // the CodingAgent language server (its own process)
  | 'cli' // the command lines
  | 'webviews' // webview apps (browser bundles)
  | 'webview-protocol' // a webview app's protocol.ts, shared with its host side
  | 'base' // the editor's foundation: context, settings, trust
  | 'ui' // editor-side helpers shared by features
  | `editor:${string}` // a feature's editor layer
  | 'entry'; // extension.ts and the commands that belong to no feature

const BASE = new Set(['src/context.ts', 'src/config.ts', 'src/trust.ts']);

export function zoneOf(file: string): Zone {
  const parts = file.split('/');
  if (parts[0] !== 'src') throw new Error(`${file} is not under src/`);
  if (parts.length === 2) return BASE.has(file) ? 'base' : 'entry';
  const top = parts[1]!;
  if (top === 'shared') return 'shared';
  if (top === 'server') return 'server';
  if (top === 'cli') return 'cli';
  if (top === 'ui') return 'ui';
  if (top === 'webviews') return parts.at(-1) === 'protocol.ts' ? 'webview-protocol' : 'webviews';
  return parts[2] === 'core' ? `core:${top}` : `editor:${top}`;
}

/** May a module in `from` import one in `to`? Nothing imports upward; features stay apart. */
export function allowed(from: Zone, to: Zone): boolean {
  if (from === to) return true;
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
    case from === 'webviews' || from === 'webview-protocol':
      return to === 'webviews' || to === 'webview-protocol';
    case from === 'base':
      return to === 'shared';
    case from === 'ui':
      return to === 'shared' || to === 'base';
    case from.startsWith('editor:'): {
      const feature = from.slice('editor:'.length);
      return to === `core:${feature}` || to === 'shared' || to === 'ui' || to === 'base' || to === 'webview-protocol';
    }
    case from === 'entry':
      return to !== 'webviews' && to !== 'server' && to !== 'cli';
    default:
      return false;
  }
}

export type Graph = Map<string, string[]>;

const IMPORT = /(?:^|[\s;])(?:import|export)\s+(?:type\s+)?(?:[\w*{}\s,$]+\s+from\s+)?['"](\.{1,2}\/[^'"]+)['"]|(?:import|require)\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

/** Every relative import (type-only ones too) of every .ts file under src/, as repo paths. */
export function readGraph(repoRoot: string): Graph {
  const graph: Graph = new Map();
  const walk = (dir: string) => {
    for (const name of readdirSync(path.join(repoRoot, dir))) {
      const rel = `${dir}/${name}`;
      if (statSync(path.join(repoRoot, rel)).isDirectory()) walk(rel);
      else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) {
        // Comments go first: a comment that shows `require('./x.ts')` is no import.
        const text = readFileSync(path.join(repoRoot, rel), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
        const targets = new Set<string>();
        for (const m of text.matchAll(IMPORT)) {
          const spec = m[1] ?? m[2]!;
          if (!spec.endsWith('.ts')) continue; // bundles loaded at run time (dist/…) are not source edges
          targets.add(path.posix.normalize(path.posix.join(path.posix.dirname(rel), spec)));
        }
        graph.set(rel, [...targets].sort());
      }
    }
  };
  walk('src');
  return graph;
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
