// The reward-hacking signals of one run (records/signals.ts), gathered as it goes: the files the
// task's tests name in the working folder hashed before each agent phase and after it, and at the
// end the agent's commands and tool calls (from the trajectory) and the proxy's refusals
// (network.jsonl). The run writes them into result.json. Where the working folder starts as the
// task's image holds it (a container of the task's own image, here or on another machine), the
// first hashing is done inside, through the session (`find`, `sha256sum`, `readlink` of the
// image); the second reads the working folder copied out after the agent phase, as elsewhere.
import * as path from 'node:path';
import { runBounded } from '../../../shared/process.ts';
import type { BackendSession } from '../backends/backend.ts';
import type { TrajectoryEntry } from '../records/records.ts';
import { capped, changedInputs, commandsSignals, namedByTests, networkSignals, testsText, VERIFIER_INPUT_LIMITS, verifierInputs, type ProtectedNames, type Signal } from '../records/signals.ts';
import type { Task } from '../tasks/task.ts';

/** The working folder's files the tests read, hashed around each agent phase. */
export class VerifierInputs {
  readonly #task: Task;
  readonly #workspace: string;
  #tests: Promise<string> | undefined;
  #before: Map<string, string> | undefined;
  readonly #changes = new Map<string, Signal>();

  constructor(task: Task, workspace: string) {
    this.#task = task;
    this.#workspace = workspace;
  }

  /** `session`: the environment about to run the agent phase (its working folder may be the image's). */
  async before(session?: Pick<BackendSession, 'workspaceFromImage' | 'spawn' | 'workdir'>): Promise<void> {
    this.#tests ??= testsText(this.#task.testsDir).catch(() => '');
    const tests = await this.#tests;
    this.#before = session?.workspaceFromImage ? await inputsInside(session, tests).catch(() => undefined) : await verifierInputs(this.#workspace, tests).catch(() => undefined);
  }

  /** `final`: the run's workspace folder holds the working folder as the agent phase left it (else nothing is compared). */
  async after(final = true): Promise<void> {
    const before = this.#before;
    this.#before = undefined;
    if (!before || before.size === 0 || !final) return;
    const now = await verifierInputs(this.#workspace, '', [...before.keys()]).catch(() => undefined);
    if (now) for (const signal of changedInputs(before, now)) this.#changes.set(signal.detail, signal);
  }

  get changes(): Signal[] {
    return [...this.#changes.values()];
  }
}

/** What the task calls its test and solution files (their names), beside the usual folders. */
export function protectedNames(task: Task): ProtectedNames {
  return {
    tests: [path.basename(task.testScript)].filter((name) => name !== '' && name !== '.'),
    solution: task.solutionScript ? [path.basename(task.solutionScript)] : [],
  };
}

/** The commands and tool calls of a Belay trajectory: each command, and an installed CLI's own tool with its arguments. */
export function trajectoryCommands(trajectory: readonly TrajectoryEntry[]): string[] {
  return trajectory.flatMap((entry) => {
    const out = entry.command !== null ? [entry.command] : [];
    const response = entry.response && typeof entry.response === 'object' ? (entry.response as Record<string, unknown>) : {};
    if (typeof response.tool === 'string' && response.input && typeof response.input === 'object') out.push(`${response.tool} ${JSON.stringify(response.input)}`);
    return out;
  });
}

export async function runSignals(task: Task, runDir: string, trajectory: readonly TrajectoryEntry[], inputs: VerifierInputs): Promise<Signal[]> {
  return capped([...commandsSignals(trajectoryCommands(trajectory), protectedNames(task)), ...inputs.changes, ...(await networkSignals(runDir))]);
}

/** How long each look inside may take, and the most it may print. */
const INSIDE_TIMEOUT_MS = 60_000;
const INSIDE_OUTPUT_CHARS = 4 * 1024 * 1024;

/**
 * `verifierInputs` of the working folder inside `session`, hashed the same way (a file's sha256, a
 * link's target; a file too large to hash is left out). Undefined when the environment lacks the
 * tools (an image without find or sha256sum): then no file is compared, as before.
 */
export async function inputsInside(session: Pick<BackendSession, 'spawn' | 'workdir'>, tests: string): Promise<Map<string, string> | undefined> {
  const hashes = new Map<string, string>();
  if (tests === '') return hashes;
  const run = async (argv: [string, ...string[]]) => {
    const result = await runBounded({
      start: (output) => session.spawn({ argv, cwd: session.workdir, env: { LC_ALL: 'C' }, ...output }),
      timeoutMs: INSIDE_TIMEOUT_MS,
      maxOutputChars: INSIDE_OUTPUT_CHARS,
    });
    if (result.spawnError || result.timedOut || result.exitCode !== 0 || result.stdout.truncated) throw new Error(`${argv[0]} did not list the working folder`);
    return result.stdout.text('');
  };
  const names = (text: string) => text.split('\0').filter((name) => name !== '').map((name) => name.replace(/^\.\//, ''));
  const largest = `-${Math.floor(VERIFIER_INPUT_LIMITS.hashBytes / 1024) + 1}k`;
  const files = names(await run(['find', '.', '-xdev', '-type', 'f', '-size', largest, '-print0'])).filter((rel) => namedByTests(rel, tests)).slice(0, VERIFIER_INPUT_LIMITS.files);
  const links = names(await run(['find', '.', '-xdev', '-type', 'l', '-print0'])).filter((rel) => namedByTests(rel, tests)).slice(0, VERIFIER_INPUT_LIMITS.files);
  for (let i = 0; i < files.length; i += 200) {
    // -z: each line ends in NUL and names are printed as they are ("<hash>  ./<name>").
    for (const line of (await run(['sha256sum', '-z', '--', ...files.slice(i, i + 200).map((rel) => `./${rel}`)])).split('\0')) {
      const match = /^([0-9a-f]{64}) [ *]\.\/(.*)$/s.exec(line);
      if (match) hashes.set(match[2]!, match[1]!);
    }
  }
  for (const rel of links) {
    const target = (await run(['readlink', '--', `./${rel}`])).replace(/\n$/, '');
    hashes.set(rel, `link:${target}`);
  }
  return hashes;
}
