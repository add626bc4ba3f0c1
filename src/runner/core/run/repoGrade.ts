// One run of a Term Challenge repository task, around the agent phase (run.ts calls in here):
// before it, the repository checked out at the base commit into the run's workspace and the
// task's install commands run in the environment; during it, the TERM_* variables; after it,
// what Term Challenge grades: the agent's change as a git patch (final/patch.diff), applied to a
// clean checkout in a fresh environment of the same backend, the task's test files laid over it,
// the install run again, then every tests/*.sh, each recorded; the reward is 1 only if all exit 0.
// So an agent that edits the tests, leaves files outside the repository or breaks its checkout's
// .git gains nothing: only the patch reaches the tests.
import { existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';
import { errorMessage } from '../../../shared/errors.ts';
import { runBounded } from '../../../shared/process.ts';
import { shellPath, type Backend, type BackendSession, type SessionSpec } from '../backends/backend.ts';
import { RunFailure } from '../records/events.ts';
import { CappedLog, formatBytes } from '../records/logs.ts';
import { runFiles, type Verification } from '../records/records.ts';
import { applyPatch, capturePatch, checkoutBase, fetchBase, layFiles, resolveBase, writeFiles } from '../tasks/repoGit.ts';
import { mirrorsFromEnvironment, repoSource, termVariables, type RepoSpec } from '../tasks/repoTask.ts';
import { stageTests, type Task } from '../tasks/task.ts';
import { LAYOUT_FILES } from '../tasks/layout.ts';
import { startVerifyPhase, type VerifierNetworkSource, type VerifyPhaseNetwork } from './taskEnvironment.ts';

/** The run's files of a repository task, beside runFiles(). */
export function repoFiles(runDir: string) {
  const grade = path.join(runDir, 'grade');
  return {
    /** The patch that is graded (the interface x28state's final/ shares). */
    patch: path.join(runDir, 'final', 'patch.diff'),
    installLog: path.join(runDir, 'install.log'),
    grade,
    /** Belay's own repository holding the base commit: where checkouts come from, never shown to the agent. */
    baseRepo: path.join(grade, 'base.git'),
    checkout: path.join(grade, 'app'),
    gradeInstallLog: path.join(grade, 'install.log'),
    scratch: path.join(grade, 'work'),
  };
}

export type RepoTask = Task & { repo: RepoSpec };

export function isRepoTask(task: Task): task is RepoTask {
  return task.repo !== undefined;
}

export interface GradeOptions {
  backend: Backend;
  runId: string;
  /** The environment's hidden paths, as the agent's session had them. */
  hidden: readonly string[];
  /** Where the tests' own network comes from: the task's verifier policy, as every verify phase has it. */
  network: VerifierNetworkSource;
  testTimeoutMs: number;
  maxLogBytes: number;
  diskBudgetBytes: number;
  signal: AbortSignal;
  note: (message: string) => void;
  onLimit?: SessionSpec['onLimit'];
}

export class RepoRun {
  readonly task: RepoTask;
  readonly runDir: string;
  /** The folder the repository came from (hidden from the agent: a mirror may hold later commits). */
  readonly source: string;
  /** The base commit, resolved. */
  readonly sha: string;
  /** A regrade's folder: where grading writes instead of the run's grade/ (the patch and base repository stay the run's). */
  readonly gradeDir: string | undefined;

  private constructor(task: RepoTask, runDir: string, source: string, sha: string, gradeDir?: string) {
    this.task = task;
    this.runDir = runDir;
    this.source = source;
    this.sha = sha;
    this.gradeDir = gradeDir;
  }

  /**
   * Checks the repository out at its base commit into the run's workspace. A repository Belay
   * cannot find (a remote no mirror holds) is one line naming workspace.yaml and its field.
   */
  static async prepare(task: RepoTask, runDir: string, options: { mirrors?: readonly string[]; signal?: AbortSignal } = {}): Promise<RepoRun> {
    const file = path.join(task.dir, LAYOUT_FILES.repo.config);
    const found = repoSource(task.repo.repo, task.dir, options.mirrors ?? mirrorsFromEnvironment());
    if (!found.ok) throw new RunFailure('setup_error', `${file}: field 'repo': ${found.error}`);
    const files = repoFiles(runDir);
    let sha: string;
    try {
      sha = await fetchBase(found.path, task.repo.baseCommit, files.baseRepo, options.signal);
    } catch (error) {
      throw new RunFailure('setup_error', `${file}: field '${task.repo.baseCommit === undefined ? 'repo' : 'base_commit'}': ${errorMessage(error)}`);
    }
    try {
      await checkoutBase(files.baseRepo, sha, runFiles(runDir).workspace, options.signal);
    } catch (error) {
      throw new RunFailure('setup_error', `the repository could not be checked out at ${sha}: ${errorMessage(error)}`);
    }
    return new RepoRun(task, runDir, found.path, sha);
  }

  /**
   * A finished run of `task`, to grade its recorded patch again (a regrade: no agent, no
   * checkout of the agent's, no source needed): the base commit is the one its run fetched.
   * With `gradeDir`, the grading's checkout, logs and test output go there, never into the run's.
   */
  static async recorded(task: RepoTask, runDir: string, gradeDir?: string): Promise<RepoRun> {
    const files = repoFiles(runDir);
    let sha: string;
    try {
      sha = await resolveBase(files.baseRepo);
    } catch (error) {
      throw new RunFailure('setup_error', `${runDir} holds no base commit of a repository task to grade against: ${errorMessage(error)}`);
    }
    return new RepoRun(task, runDir, files.baseRepo, sha, gradeDir);
  }

  /** The TERM_* variables of the agent's environment. */
  variables(agentTimeoutSec: number): Record<string, string> {
    return termVariables(this.task, this.sha, agentTimeoutSec);
  }

  /** Runs the install commands in `session`'s working directory, each bounded, all logged; a failure is noted, not fatal. */
  async install(session: BackendSession, logFile: string, maxLogBytes: number, signal: AbortSignal, note: (message: string) => void): Promise<void> {
    const { install, installTimeoutSec } = this.task.repo;
    if (install.length === 0) return;
    await fs.mkdir(path.dirname(logFile), { recursive: true });
    const log = new CappedLog(logFile, maxLogBytes, 'a');
    try {
      for (const [i, command] of install.entries()) {
        if (signal.aborted) return;
        log.write(`$ ${command}\n`);
        const result = await runBounded({
          start: (output) => session.spawn({ argv: [session.shell ?? shellPath(), '-c', command], cwd: session.workdir, env: { PYTHONUNBUFFERED: '1' }, ...output }),
          timeoutMs: installTimeoutSec * 1000,
          maxOutputChars: 4000,
          keepTailChars: 4000,
          onStdout: (chunk) => log.write(chunk),
          onStderr: (chunk) => log.write(chunk),
          signal,
        });
        const outcome = result.spawnError ? `could not start (${result.spawnError.message})` : result.timedOut ? `did not finish within ${installTimeoutSec} s` : result.exitCode !== 0 ? `exited with ${result.exitCode ?? result.signal}` : undefined;
        log.write(`[${outcome ?? 'exit 0'}]\n`);
        if (outcome && !result.aborted) note(`install command ${i + 1} of ${install.length} ${outcome} (see ${path.relative(this.runDir, logFile)}); the run goes on, as in Term Challenge`);
      }
    } finally {
      log.close();
    }
  }

  /**
   * After the agent phase (everything it started is dead): the patch captured, applied to a
   * clean checkout, and graded there in a fresh environment.
   */
  async grade(options: GradeOptions): Promise<Verification> {
    try {
      return await this.#grade(options);
    } catch (error) {
      // Belay's own fault (git failed on its own repository, say), not the task's set-up nor the agent's.
      throw error instanceof RunFailure ? error : new RunFailure('harness_error', `the patch could not be graded: ${errorMessage(error)}`);
    }
  }

  async #grade(options: GradeOptions): Promise<Verification> {
    const files = repoFiles(this.runDir);
    const run = runFiles(this.runDir);
    const failed = (error: string): Verification => ({ success: false, reward: 0, output: '', error, timed_out: false, exit_code: null, test_results: [] });
    const captured = await capturePatch({ baseRepo: files.baseRepo, sha: this.sha, worktree: run.workspace, patchFile: files.patch, maxBytes: options.maxLogBytes, scratch: files.scratch, signal: options.signal });
    if (captured.tooLarge) return failed(`the agent's change is a patch of ${formatBytes(captured.bytes)}, more than the limit of ${formatBytes(options.maxLogBytes)}: it is not graded`);
    options.note(captured.bytes === 0 ? 'the agent left no change to the repository: the tests run on the base commit' : `the agent's change: a patch of ${formatBytes(captured.bytes)} touching ${captured.paths.length} path${captured.paths.length === 1 ? '' : 's'} (final/patch.diff)`);
    const touchedTests = captured.paths.filter((p) => this.task.repo.testFiles.includes(p) || this.task.repo.testScripts.includes(p));
    if (touchedTests.length > 0) options.note(`the patch changes ${touchedTests.slice(0, 5).join(', ')}, which the task's tests bring: the task's own are laid over them`);
    return this.gradePatch(options);
  }

  /**
   * The recorded patch (final/patch.diff) applied to a clean checkout at the base commit, the
   * task's test files laid over it, and the tests run in a fresh environment. A regrade calls
   * this alone, with the task's current tests.
   */
  async gradePatch(options: GradeOptions): Promise<Verification> {
    const files = this.#gradeFiles();
    const failed = (error: string): Verification => ({ success: false, reward: 0, output: '', error, timed_out: false, exit_code: null, test_results: [] });
    if (!existsSync(files.patch)) return failed(`the run recorded no patch (${path.relative(this.runDir, files.patch)})`);
    await fs.rm(files.checkout, { recursive: true, force: true });
    await checkoutBase(files.baseRepo, this.sha, files.checkout, options.signal);
    try {
      await applyPatch(files.checkout, files.patch, options.signal);
    } catch (error) {
      return failed(errorMessage(error));
    }
    const generated = new Set(this.task.repo.generatedTests.map((test) => test.name));
    await layFiles(this.task.testsDir!, [...this.task.repo.testFiles, ...this.task.repo.testScripts.filter((name) => !generated.has(name))], files.checkout);
    await writeFiles(this.task.repo.generatedTests, files.checkout);
    return this.runTests(options);
  }

  /** Where grading writes: the run's own grade/, or the regrade's (the patch and the base repository are the run's). */
  #gradeFiles(): ReturnType<typeof repoFiles> {
    const own = repoFiles(this.runDir);
    return this.gradeDir === undefined ? own : { ...repoFiles(this.gradeDir), patch: own.patch, baseRepo: own.baseRepo };
  }

  private async runTests(options: GradeOptions): Promise<Verification> {
    const files = this.#gradeFiles();
    const run = runFiles(this.gradeDir ?? this.runDir);
    const folders = {
      workspace: files.checkout,
      tests: path.join(files.grade, 'tests'),
      logs: path.join(files.grade, 'logs'),
      control: path.join(files.grade, 'control'),
      scratch: path.join(files.grade, 'scratch'),
      environmentLog: path.join(files.grade, 'environment.log'),
    };
    for (const dir of [folders.logs, folders.control, folders.scratch]) await fs.mkdir(dir, { recursive: true });
    let session: BackendSession;
    try {
      session = await options.backend.open({
        runId: `${options.runId}-grade`,
        task: this.task,
        folders,
        agentFolders: [],
        hidden: options.hidden,
        services: [],
        onNotice: options.note,
        signal: options.signal,
        diskBudgetBytes: options.diskBudgetBytes,
        ...(options.onLimit ? { onLimit: options.onLimit } : {}),
      });
    } catch (error) {
      throw new RunFailure('harness_error', `the environment that grades the patch could not be opened: ${errorMessage(error)}`);
    }
    let network: VerifyPhaseNetwork | undefined;
    try {
      await this.install(session, files.gradeInstallLog, options.maxLogBytes, options.signal, options.note);
      await session.endAgentPhase();
      await stageTests(this.task, folders.tests);
      // The tests run under the task's verifier policy (no network unless it says otherwise), like any verify phase.
      network = await startVerifyPhase(session, options.network, options.note);
      const networkEnv = network.env;
      await fs.mkdir(path.dirname(run.testOutput), { recursive: true });
      const log = new CappedLog(run.testOutput, options.maxLogBytes);
      const results: Verification['test_results'] = [];
      const outputs: string[] = [];
      let timedOut = false;
      let firstFailure: number | null = null;
      try {
        for (const script of this.task.repo.testScripts) {
          if (options.signal.aborted) break;
          log.write(`=== ${script} ===\n`);
          const result = await runBounded({
            start: (output) => session.spawn({ argv: [session.shell ?? shellPath(), path.posix.join(session.workdir, script)], cwd: session.workdir, env: { ...networkEnv, PYTHONUNBUFFERED: '1' }, ...output }),
            timeoutMs: options.testTimeoutMs,
            maxOutputChars: 2000,
            keepTailChars: 2000,
            onStdout: (chunk) => log.write(chunk),
            onStderr: (chunk) => log.write(chunk),
            signal: options.signal,
          });
          const passed = result.exitCode === 0 && !result.timedOut && !result.spawnError;
          const message = result.spawnError ? `could not start: ${result.spawnError.message}` : result.timedOut ? `did not finish within ${Math.round(options.testTimeoutMs / 1000)} s` : `exit ${result.exitCode ?? result.signal}`;
          log.write(`[${script}: ${passed ? 'passed' : 'failed'}, ${message}]\n`);
          results.push({ name: script, status: passed ? 'passed' : 'failed', duration_ms: result.durationMs, message });
          if (result.timedOut) timedOut = true;
          if (!passed && firstFailure === null) firstFailure = result.exitCode ?? -1;
          const text = [result.stdout.text('[… cut …]'), result.stderr.text('[… cut …]')].filter((t) => t.trim() !== '').join('\n');
          outputs.push(`=== ${script} (${passed ? 'passed' : message}) ===\n${text}`);
        }
      } finally {
        log.close();
      }
      const failing = results.filter((r) => r.status !== 'passed');
      const ranAll = results.length === this.task.repo.testScripts.length;
      const success = ranAll && failing.length === 0;
      return {
        success,
        reward: success ? 1 : 0,
        output: outputs.join('\n\n').slice(-16_000),
        error: success ? null : !ranAll ? 'the tests were stopped' : `${failing.length} of ${results.length} tests failed: ${failing.slice(0, 8).map((r) => `${r.name} (${r.message})`).join(', ')}`,
        timed_out: timedOut,
        exit_code: success ? 0 : firstFailure,
        test_results: results,
      };
    } finally {
      await network?.close();
      await session.close().catch((error: unknown) => options.note(`the grading environment could not be closed: ${errorMessage(error)}`));
    }
  }
}
