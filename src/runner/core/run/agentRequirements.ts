// A Python agent's requirements.txt (Term Challenge's agent.py beside it), installed before the
// agent starts, inside the agent's environment and under the agent phase's network policy: from a
// wheelhouse the person names (a read-only folder of wheels, `--wheelhouse DIR`,
// belay.runner.wheelhouse) whatever the policy, else from the package index through Belay's
// egress proxy when the phase may reach the index's hosts. Nothing to install from is one line and
// the run ends as a setup failure before the agent starts. The file is the agent's, so hostile:
// only named packages (name, extras, versions, markers) are read from it, each passed to pip as an
// argument (never the file itself: no URL, path, `-e`, `-r` or pip option reaches pip), and pip
// runs with no configuration of anyone's, bounded in time, its output in the run's
// requirements.log. Packages go to a folder of the run's (`--target`), given to the agent as
// PYTHONPATH: isolated, the environment's private /tmp; on the local backend, the run's scratch.
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { errorMessage } from '../../../shared/errors.ts';
import { runBounded } from '../../../shared/process.ts';
import { agentProgram } from '../agents/agentFolder.ts';
import type { BackendSession } from '../backends/backend.ts';
import { matchRule, parseHostRule, type PhasePolicy } from '../network/policy.ts';
import { RunFailure } from '../records/events.ts';
import { CappedLog } from '../records/logs.ts';

/** The file read beside a Python agent's program. */
export const REQUIREMENTS_FILE = 'requirements.txt';
/** pip's output, in the run folder. */
export const REQUIREMENTS_LOG = 'requirements.log';
/** The hosts pip reaches for the default index (pypi.org's pages, files.pythonhosted.org's files). */
export const INDEX_HOSTS = ['pypi.org', 'files.pythonhosted.org'] as const;
/** Where the packages go inside an isolated environment (its private /tmp). */
export const ISOLATED_TARGET = '/tmp/belay-agent-python';
/** Longest time the whole install may take. */
export const INSTALL_TIMEOUT_MS = 600_000;
const MAX_FILE_BYTES = 64 * 1024;
const MAX_REQUIREMENTS = 200;

/** A package name (PEP 508: letters, digits, and . _ - inside). */
const NAME = '[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?';
const VERSION_CLAUSE = '(?:===|==|!=|~=|<=|>=|<|>)\\s*[A-Za-z0-9.*+!_-]+';
/**
 * A named requirement and nothing else: `name`, `name[extra,…]`, version clauses, and an
 * environment marker after `;` written with names, quoted words and comparisons only. No `@`
 * (direct URLs), `/` or `:` (paths, URLs), `$` (pip expands variables), `\` (continuations).
 */
const REQUIREMENT = new RegExp(
  `^(${NAME})\\s*(\\[\\s*${NAME}(?:\\s*,\\s*${NAME})*\\s*\\])?\\s*((?:${VERSION_CLAUSE})(?:\\s*,\\s*${VERSION_CLAUSE})*)?\\s*(;\\s*[A-Za-z0-9_.'"<>=!~() -]+)?$`,
);

/** One line of the file that is a package requirement, as pip gets it. */
export interface Requirement {
  line: number;
  text: string;
}

/**
 * The requirements `text` names (`file` is only for messages). Comments and blank lines are
 * skipped; any other line that is not a named package is refused with one line naming the file
 * and the line.
 */
export function parseRequirements(text: string, file: string): Requirement[] {
  const found: Requirement[] = [];
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  for (const [i, raw] of lines.entries()) {
    const line = raw.replace(/(^|\s)#.*$/, '').trim();
    if (line === '') continue;
    const shown = JSON.stringify(line.length > 80 ? `${line.slice(0, 80)}…` : line);
    const where = `${file}:${i + 1}`;
    if (line.startsWith('-')) throw new RunFailure('setup_error', `${where}: ${shown} is a pip option: Belay installs only named packages from requirements.txt (no -e, -r, --index-url, --find-links or any other option)`);
    if (!REQUIREMENT.test(line)) {
      throw new RunFailure('setup_error', `${where}: ${shown} is not a named package: Belay installs only names with extras, versions and markers (never a URL, a path or an archive)`);
    }
    found.push({ line: i + 1, text: line });
    if (found.length > MAX_REQUIREMENTS) throw new RunFailure('setup_error', `${where}: more than ${MAX_REQUIREMENTS} requirements`);
  }
  return found;
}

/**
 * The requirements file of the agent `command` names, when its program is a Python script with
 * a requirements.txt beside it; undefined otherwise. The file must be a regular file (a link could
 * lead anywhere on this machine): anything else is one line.
 */
export async function findRequirements(command: string, agentCwd: string): Promise<{ file: string; requirements: Requirement[] } | undefined> {
  const program = agentProgram(command, agentCwd);
  if (!program || !program.path.endsWith('.py')) return undefined;
  const file = path.join(path.dirname(program.path), REQUIREMENTS_FILE);
  const stat = await fs.lstat(file).catch(() => undefined);
  if (!stat) return undefined;
  if (!stat.isFile()) throw new RunFailure('setup_error', `${file}: not a regular file (${stat.isSymbolicLink() ? 'a symbolic link' : 'a folder or a special file'}): the agent's requirements are read only from a file in its own folder`);
  if (stat.size > MAX_FILE_BYTES) throw new RunFailure('setup_error', `${file}: ${stat.size} bytes, more than the ${MAX_FILE_BYTES} a requirements file may have`);
  const requirements = parseRequirements(await fs.readFile(file, 'utf8'), file);
  return requirements.length === 0 ? undefined : { file, requirements };
}

/** The wheelhouse as given, checked: an absolute path to a folder (one line otherwise). */
export async function checkWheelhouse(dir: string): Promise<string> {
  const where = 'the wheelhouse (--wheelhouse, belay.runner.wheelhouse)';
  if (!path.isAbsolute(dir)) throw new RunFailure('setup_error', `${where} ${dir} is not an absolute path`);
  const stat = await fs.stat(dir).catch(() => undefined);
  if (!stat?.isDirectory()) throw new RunFailure('setup_error', `${where} ${dir} is not a folder${stat ? '' : ' (it does not exist)'}`);
  return dir;
}

/** Where the packages come from, or why there is nowhere (one line, no agent started). */
export function installSource(policy: PhasePolicy, wheelhouse: string | undefined, file: string): { wheelhouse: string } | { index: true } {
  if (wheelhouse !== undefined) return { wheelhouse };
  const fix = 'name a folder of wheels with --wheelhouse DIR (belay.runner.wheelhouse), or install them into the image';
  if (policy.mode === 'no-network') throw new RunFailure('setup_error', `${file}: the agent's requirements have nowhere to come from: the agent phase has no network and no wheelhouse is named: ${fix}`);
  if (policy.mode === 'allowlist') {
    const rules = policy.allowedHosts.map(parseHostRule);
    const missing = INDEX_HOSTS.filter((host) => !matchRule(rules, host, 443));
    if (missing.length > 0) {
      throw new RunFailure('setup_error', `${file}: the agent's requirements cannot come from the package index: the agent phase's allowlist does not name ${missing.join(' and ')}: add ${missing.length === 1 ? 'it' : 'them'} to allowed_hosts, or ${fix}`);
    }
  }
  return { index: true };
}

export interface InstallOptions {
  session: BackendSession;
  file: string;
  requirements: readonly Requirement[];
  source: { wheelhouse: string } | { index: true };
  /** Where the packages go, as seen inside the environment. */
  target: string;
  /** The egress proxy's variables (empty for a phase with no network). */
  proxyEnv: Record<string, string>;
  logFile: string;
  maxLogBytes: number;
  signal: AbortSignal;
  timeoutMs?: number;
}

/**
 * The variables pip runs with. `--isolated` keeps pip from reading PIP_* variables and the
 * user's configuration; PIP_CONFIG_FILE=/dev/null also keeps the system's and the environment's
 * pip.conf out (pip reads that one variable even when isolated).
 */
const PIP_ENV = {
  PIP_CONFIG_FILE: '/dev/null',
  PYTHONNOUSERSITE: '1',
  PYTHONDONTWRITEBYTECODE: '1',
  PYTHONUNBUFFERED: '1',
};

/** pip's command line: each requirement an argument of its own after `--`. */
export function pipArgv(options: Pick<InstallOptions, 'requirements' | 'source' | 'target'>): [string, ...string[]] {
  const from = 'wheelhouse' in options.source ? ['--no-index', '--find-links', options.source.wheelhouse] : [];
  return [
    'python3', '-m', 'pip', 'install', '--isolated', '--no-input', '--disable-pip-version-check', '--no-cache-dir', '--root-user-action=ignore',
    '--progress-bar', 'off', '--no-warn-script-location', '--upgrade', '--target', options.target, ...from, '--', ...options.requirements.map((r) => r.text),
  ];
}

/**
 * Installs the requirements in `session` (before the agent phase's agent starts). A failure is a
 * RunFailure('setup_error') in one line: pip missing, pip's own last line, or the time limit.
 */
export async function installRequirements(options: InstallOptions): Promise<void> {
  const timeoutMs = options.timeoutMs ?? INSTALL_TIMEOUT_MS;
  await fs.mkdir(path.dirname(options.logFile), { recursive: true });
  const log = new CappedLog(options.logFile, options.maxLogBytes, 'a');
  const { session } = options;
  const run = (argv: [string, ...string[]], ms: number) =>
    runBounded({
      start: (output) => session.spawn({ argv, cwd: session.workdir, env: { ...PIP_ENV, ...options.proxyEnv }, ...output }),
      timeoutMs: ms,
      maxOutputChars: 8000,
      keepTailChars: 8000,
      onStdout: (chunk) => log.write(chunk),
      onStderr: (chunk) => log.write(chunk),
      signal: options.signal,
    });
  const name = path.basename(options.logFile);
  try {
    log.write(`$ python3 -m pip --version\n`);
    const probe = await run(['python3', '-m', 'pip', '--version'], 60_000);
    if (probe.aborted) return;
    if (probe.spawnError || probe.exitCode !== 0) {
      const why = probe.spawnError ? 'python3 is not there' : 'python3 has no pip module';
      throw new RunFailure('setup_error', `${options.file}: the agent's requirements cannot be installed: ${why} in the agent's environment (the base image has python3-pip; a task's own image needs it)`);
    }
    const argv = pipArgv(options);
    log.write(`$ ${argv.join(' ')}\n`);
    const result = await run(argv, timeoutMs);
    if (result.aborted) return;
    if (result.timedOut) throw new RunFailure('setup_error', `${options.file}: installing the agent's requirements did not finish within ${Math.round(timeoutMs / 1000)} s (see ${name})`);
    if (result.exitCode !== 0) {
      const last = `${result.stderr.text('')}\n${result.stdout.text('')}`.split('\n').map((line) => line.trim()).filter((line) => /^ERROR:/.test(line)).pop();
      const why = (last ?? `exit ${result.exitCode ?? result.signal}`).replace(/^ERROR:\s*/, '').slice(0, 300);
      throw new RunFailure('setup_error', `${options.file}: the agent's requirements could not be installed: ${why} (see ${name})`);
    }
    log.write('[installed]\n');
  } catch (error) {
    log.write(`[${errorMessage(error)}]\n`);
    throw error;
  } finally {
    log.close();
  }
}

/** The agent's variables with the installed packages first on its PYTHONPATH. */
export function withPythonPath(env: Record<string, string>, target: string): Record<string, string> {
  return { ...env, PYTHONPATH: env.PYTHONPATH ? `${target}:${env.PYTHONPATH}` : target };
}
