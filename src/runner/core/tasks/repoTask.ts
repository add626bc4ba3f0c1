// Term Challenge repository tasks: workspace.yaml (the repository, its base commit, the install
// commands), prompt.md (the issue the agent is to fix) and tests/*.sh (every one must exit 0).
// What Term Challenge's executor does, and what Belay does where it chooses:
// - `repo` is a local path (absolute, `./…`, `../…` from the task folder, or `file://`) or a
//   remote name (`owner/name` is GitHub's, as the executor reads it; any git URL). A remote is
//   never fetched: it is looked up in the mirror folders the person names (BELAY_GIT_MIRRORS), as
//   `<mirror>/<host>/<owner>/<name>[.git]` or `<mirror>/<owner>/<name>[.git]`.
// - Every `.sh` file under tests/ is a test (sorted by path, as the executor takes them from
//   every folder of tests/); the other files of tests/ are laid over the checkout at their path
//   relative to tests/ before the tests run, so the tests that run are the task's.
// - `install` (one command or a list) runs in the environment before the agent and again in the
//   clean environment that grades the patch; a failing command is noted, not fatal (as there).
import { existsSync, promises as fs, statSync } from 'node:fs';
import * as path from 'node:path';
import * as z from 'zod';
import { AllowedHostsSchema, NetworkModeSchema } from '../network/policy.ts';

/** What a repository task adds to a Task. */
export interface RepoSpec {
  /** The repository as workspace.yaml names it (TERM_REPO). */
  repo: string;
  /** A full commit id, a branch or a tag; the source's HEAD when absent. */
  baseCommit: string | undefined;
  install: string[];
  /** How long each install command may take. */
  installTimeoutSec: number;
  /** TERM_HINTS: workspace.yaml's `hints` (or SWE-bench's `hints_text`). */
  hints: string;
  difficulty: string | undefined;
  /** The test scripts, relative to tests/ with `/`, sorted. */
  testScripts: string[];
  /** The other files of tests/, relative to tests/ with `/`: laid over the checkout before the tests. */
  testFiles: string[];
  /**
   * Tests made from commands when tests/ has no script (as the executor does): checks.txt's lines,
   * else workspace.yaml's fail_to_pass and pass_to_pass. Their names are in `testScripts` too.
   */
  generatedTests: { name: string; content: string }[];
}

export const DEFAULT_INSTALL_TIMEOUT_SEC = 600;

/** A name git takes as a revision and never as an option: no leading '-', no spaces or control characters. */
const revision = z
  .string({ error: 'expected a commit id, a branch or a tag (in quotes when YAML would read it as a number)' })
  .min(1)
  .max(256)
  .regex(/^[0-9A-Za-z_][0-9A-Za-z._/-]*$/, 'expected a commit id, a branch or a tag');

const commandList = z.union([z.string().min(1).transform((command) => [command]), z.array(z.string().min(1))]);

export const WorkspaceYamlSchema = z.looseObject({
  repo: z.string().min(1).max(2000),
  version: z.union([z.string(), z.number()]).optional(),
  base_commit: revision.optional(),
  install: commandList.optional(),
  language: z.string().optional(),
  difficulty: z.string().optional(),
  hints: z.string().optional(),
  hints_text: z.string().optional(),
  /** Belay's own: seconds each install command may take (600 unless given). */
  install_timeout_sec: z.number().positive().optional(),
  /** The agent's and the tests' time limits, as task.toml would give them. */
  agent_timeout_sec: z.number().positive().optional(),
  test_timeout_sec: z.number().positive().optional(),
  /** SWE-bench / swe-forge: test commands, each a test when tests/ has no script. */
  fail_to_pass: z.array(z.string().min(1)).optional(),
  pass_to_pass: z.array(z.string().min(1)).optional(),
  /**
   * Belay's own, as task.toml's per-phase network: Term Challenge gives none, so both phases have
   * no network unless these say otherwise (`network_mode`, `allowed_hosts` for both; the `agent_`
   * and `verifier_` ones for one phase).
   */
  network_mode: NetworkModeSchema.optional(),
  allowed_hosts: AllowedHostsSchema.optional(),
  agent_network_mode: NetworkModeSchema.optional(),
  agent_allowed_hosts: AllowedHostsSchema.optional(),
  verifier_network_mode: NetworkModeSchema.optional(),
  verifier_allowed_hosts: AllowedHostsSchema.optional(),
});
export type WorkspaceYaml = z.infer<typeof WorkspaceYamlSchema>;

/** Harness defaults for repository tasks (the executor's). */
export const REPO_TIMEOUTS = { agent: 600, test: 300 } as const;

/** A test script that runs `command` and fails at its first failing command. */
function commandTest(name: string, command: string): { name: string; content: string } {
  return { name, content: `#!/bin/sh\nset -e\n${command}\n` };
}

/**
 * The tests made from commands, for a task whose tests/ has no script: checks.txt's lines (blank
 * lines and # comments skipped), else fail_to_pass then pass_to_pass, numbered as the executor does.
 */
export function commandTests(config: Pick<WorkspaceYaml, 'fail_to_pass' | 'pass_to_pass'>, checks: string | undefined): { name: string; content: string }[] {
  if (checks !== undefined) {
    const made = checks.split('\n').flatMap((line, i) => (line.trim() === '' || line.trim().startsWith('#') ? [] : [commandTest(`check_${i}.sh`, line.trim())]));
    if (made.length > 0) return made;
  }
  let index = 0;
  return [...(config.fail_to_pass ?? []).map((command) => commandTest(`fail_to_pass_${index++}.sh`, command)), ...(config.pass_to_pass ?? []).map((command) => commandTest(`pass_to_pass_${index++}.sh`, command))];
}

export function repoSpec(config: WorkspaceYaml, tests: { scripts: string[]; files: string[] }, generatedTests: { name: string; content: string }[] = []): RepoSpec {
  return {
    repo: config.repo,
    baseCommit: config.base_commit,
    install: config.install ?? [],
    installTimeoutSec: config.install_timeout_sec ?? DEFAULT_INSTALL_TIMEOUT_SEC,
    hints: config.hints ?? config.hints_text ?? '',
    difficulty: config.difficulty,
    testScripts: [...tests.scripts, ...generatedTests.map((test) => test.name)],
    testFiles: tests.files,
    generatedTests,
  };
}

/**
 * The files of tests/ (regular files only: a link or anything else is refused by the caller's
 * message), split into scripts (`.sh`) and the rest; relative paths with `/`, sorted.
 */
export async function listTestFiles(testsDir: string): Promise<{ scripts: string[]; files: string[]; refused: string[] }> {
  const scripts: string[] = [];
  const files: string[] = [];
  const refused: string[] = [];
  if (!existsSync(testsDir)) return { scripts, files, refused };
  for (const entry of await fs.readdir(testsDir, { recursive: true, withFileTypes: true })) {
    const rel = path.relative(testsDir, path.join(entry.parentPath, entry.name)).split(path.sep).join('/');
    if (entry.isDirectory()) continue;
    if (!entry.isFile()) refused.push(rel);
    else if (rel.endsWith('.sh')) scripts.push(rel);
    else files.push(rel);
  }
  return { scripts: scripts.sort(), files: files.sort(), refused: refused.sort() };
}

/** Where the repository comes from: a folder on this machine (the local path or the mirror that holds it). */
export type RepoSource = { ok: true; path: string; via: 'path' | 'mirror' } | { ok: false; error: string };

/** The mirror folders the person named: BELAY_GIT_MIRRORS, separated as PATH is. */
export function mirrorsFromEnvironment(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.BELAY_GIT_MIRRORS ?? '')
    .split(path.delimiter)
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => path.resolve(entry));
}

function isDirectory(file: string): boolean {
  try {
    return statSync(file).isDirectory();
  } catch {
    return false;
  }
}

/** `host/owner/name` of a remote repository name, or undefined when it is not one Belay can look up. */
export function remoteKey(repo: string): string | undefined {
  let rest: string;
  const scp = /^[A-Za-z0-9._-]+@([A-Za-z0-9.-]+):(.+)$/.exec(repo);
  const url = /^(?:https?|ssh|git):\/\/(?:[^@/]+@)?([A-Za-z0-9.-]+)(?::\d+)?\/(.+)$/.exec(repo);
  if (scp) rest = `${scp[1]}/${scp[2]}`;
  else if (url) rest = `${url[1]}/${url[2]}`;
  else if (/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(repo)) rest = `github.com/${repo}`;
  else return undefined;
  const parts = rest.replace(/\/+$/, '').replace(/\.git$/, '').split('/');
  if (parts.length < 2 || parts.some((part) => part === '' || part === '.' || part === '..' || !/^[A-Za-z0-9_.-]+$/.test(part))) return undefined;
  return parts.join('/');
}

/**
 * The folder that holds `repo`: a local path as given (relative to the task folder), or a remote
 * found in a mirror folder. No network, ever: a remote no mirror holds is one line saying how to
 * name a mirror.
 */
export function repoSource(repo: string, taskDir: string, mirrors: readonly string[]): RepoSource {
  const local = repo.startsWith('file://') ? repo.slice('file://'.length) : path.isAbsolute(repo) || repo === '.' || repo.startsWith('./') || repo.startsWith('../') ? repo : undefined;
  if (local !== undefined) {
    const resolved = path.resolve(taskDir, local);
    if (!isDirectory(resolved)) return { ok: false, error: `${repo} is not a folder on this machine (${resolved})` };
    return { ok: true, path: resolved, via: 'path' };
  }
  const key = remoteKey(repo);
  if (key === undefined) return { ok: false, error: `'${repo.slice(0, 200)}' is neither a local path (absolute, ./ or ../) nor a repository name Belay can look up in a mirror (owner/name or a git URL)` };
  const [host, ...ownerName] = key.split('/');
  for (const mirror of mirrors) {
    for (const candidate of [path.join(mirror, key), path.join(mirror, ...ownerName)]) {
      for (const folder of [`${candidate}.git`, candidate]) if (isDirectory(folder)) return { ok: true, path: folder, via: 'mirror' };
    }
  }
  const where = mirrors.length === 0 ? 'no mirror folder is named' : `no mirror folder holds it (looked in ${mirrors.join(', ')})`;
  return {
    ok: false,
    error: `${repo} is a remote repository and ${where}: Belay never fetches from the network; put a clone at <mirror>/${host}/${ownerName.join('/')}.git and name <mirror> in BELAY_GIT_MIRRORS`,
  };
}

/** The TERM_* variables Term Challenge gives its agents, for a repository task. */
export function termVariables(task: { name: string; instruction: string; repo: RepoSpec }, baseCommit: string, agentTimeoutSec: number): Record<string, string> {
  return {
    TERM_TASK_ID: task.name,
    TERM_REPO: task.repo.repo,
    TERM_BASE_COMMIT: baseCommit,
    TERM_ISSUE_TEXT: task.instruction,
    TERM_HINTS: task.repo.hints,
    TERM_TIMEOUT: String(Math.round(agentTimeoutSec)),
    ...(task.repo.difficulty !== undefined ? { TERM_DIFFICULTY: task.repo.difficulty } : {}),
  };
}
