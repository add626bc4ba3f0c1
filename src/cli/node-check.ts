// Imported first by each command line's entry point, so that it runs before any other module of
// the bundle. On a Node older than 22.13 (a machine's Node 20, say) `--help` and `--version` run
// as they are; any other command is handed to the project's own Node 22 when the bundle sits in a
// clone of the repository (node_modules/.bin/node beside dist/, the `node` devDependency), so
// `belay` and `cueme` work from any folder. Without one, the command runs on the old Node and what
// needs Node 22 says so where it is used (the cue mailbox's node:sqlite: one line, never a stack).
import { spawn } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import * as path from 'node:path';
import { wantsHelp } from '../shared/args.ts';

export const MINIMUM_NODE = [22, 13] as const;

/** Set in the environment of a command handed to the project's Node, so it is never handed on again. */
export const HANDOVER_ENV = 'BELAY_NODE_HANDOVER';

/** Whether `version` (as in `process.versions.node`) is older than 22.13, the first with node:sqlite unflagged. */
export function olderThanMinimum(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return !(major > MINIMUM_NODE[0] || (major === MINIMUM_NODE[0] && minor >= MINIMUM_NODE[1]));
}

/** Whether the arguments only ask for help or the version, which every Node can answer. */
export function onlyAsksForHelp(argv: readonly string[]): boolean {
  const first = argv[0];
  return first === undefined || first === 'help' || first === '--version' || first === '-v' || wantsHelp(argv);
}

/**
 * The project's own Node for a bundle at `script` (symlinks resolved, as `npm link` makes them):
 * `<clone>/node_modules/.bin/node` when the bundle is `<clone>/dist/<name>.js`; undefined elsewhere.
 */
export function projectNode(script: string): string | undefined {
  let real: string;
  try {
    real = realpathSync(script);
  } catch {
    return undefined;
  }
  const candidate = path.join(path.dirname(real), '..', 'node_modules', '.bin', 'node');
  return existsSync(candidate) ? candidate : undefined;
}

/**
 * Runs the same command on `node` and ends this process with its exit code. Ctrl-C reaches both
 * (same process group): this one waits for the other to finish its own cleanup (cueme cancels
 * its request); a kill of this one alone is passed on.
 */
function handOver(node: string, script: string): void {
  const child = spawn(node, [script, ...process.argv.slice(2)], { stdio: 'inherit', env: { ...process.env, [HANDOVER_ENV]: '1' } });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      if (signal !== 'SIGINT') child.kill(signal);
    });
  }
  child.on('error', (error) => {
    process.stderr.write(`${programName()}: could not start the project's Node 22 (${node}): ${error.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => process.exit(code ?? 128 + (signal === 'SIGINT' ? 2 : signal === 'SIGHUP' ? 1 : 15)));
}

function programName(): string {
  return /cueme/.test(path.basename(process.argv[1] ?? '')) ? 'cueme' : 'belay';
}

/** False when the command was handed to another Node: the entry point must then do nothing. */
function decide(): boolean {
  if (!olderThanMinimum(process.versions.node)) return true;
  const argv = process.argv.slice(2);
  const script = process.argv[1];
  if (onlyAsksForHelp(argv) || !script || process.env[HANDOVER_ENV] === '1') return true;
  const node = projectNode(script);
  if (node === undefined) return true;
  handOver(node, script);
  return false;
}

/** Whether the entry point runs its command in this process (false: the project's Node 22 runs it). */
export const runsHere: boolean = decide();
