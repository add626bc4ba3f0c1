// Imported first by each command line's entry point, so that it runs before any other module of
// the bundle: on a Node older than 22.13 the user reads one line, not a stack trace from deep inside.
import * as path from 'node:path';

export const MINIMUM_NODE = [22, 13] as const;

/** The line to print when `version` (as in `process.versions.node`) cannot run `program`; undefined when it can. */
export function nodeVersionProblem(version: string, program: string): string | undefined {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  if (major > MINIMUM_NODE[0] || (major === MINIMUM_NODE[0] && minor >= MINIMUM_NODE[1])) return undefined;
  const needed = MINIMUM_NODE.join('.');
  return `${program} needs the built-in SQLite of Node ${needed} or later (node:sqlite), and this is Node ${version}: run it with Node ${needed}+ (in VS Code use version 1.103 or later).`;
}

const program = /cueme/.test(path.basename(process.argv[1] ?? '')) ? 'cueme' : 'belay';
const problem = nodeVersionProblem(process.versions.node, program);
if (problem !== undefined) {
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
