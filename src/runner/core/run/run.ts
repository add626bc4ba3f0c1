// One run of one agent on one task, told in order: a fresh run folder seeded from the task's
// environment; the agent phase (the agent through its protocol, in the backend); the end of
// that phase, once everything it started is dead; the verify phase (the tests staged and run
// where the agent can no longer reach them); the records. Reported as an event stream. Bounds
// hold throughout (bounds.ts): the user's Stop, a total time, a disk budget.
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { errorMessage } from '../../../shared/errors.ts';
import type { Backend, BackendSession, RunFolders, ServiceSpec, SessionSpec } from '../backends/backend.ts';
import { RunFailure, type RunEvent, type RunEventListener } from '../records/events.ts';
import { RunBounds } from './bounds.ts';
import { DEFAULT_LIMITS, type AgentContext, type AgentOutcome, type AgentProtocol, type RunLimits } from '../protocols/agentProtocol.ts';
import { runSignals, VerifierInputs } from './runSignals.ts';
import { runFiles, writeRecords, type CapturedFiles, type FailureCause, type LlmUsage, type RunResult, type TrajectoryEntry, type Verification } from '../records/records.ts';
import { writeFileAtomic } from '../../../shared/atomic.ts';
import { LLM_REQUESTS_FILE, LLM_SERVICE, RunLlm, type RunLlmOptions } from './runLlm.ts';
import { keepStepState, mergeStepWorkdir, runParts, stepSetup, StepRecords, type RunPart } from './runSteps.ts';
import { seedWorkspace, stageTests, type Task } from '../tasks/task.ts';
import { removeVerifierLeftovers, verify } from './verify.ts';
import { captureState, FINAL_WORKDIR, finalStateBounds, type CapturedState } from './finalState.ts';
import { openVerifierEnvironment, removeVerifierEnvironment, resolveVerifierEnvironment, verifierImageWords } from './verifierEnvironment.ts';
import { rewardWords } from '../records/format.ts';
import type { Resolver } from '../network/proxy.ts';
import { EGRESS_SERVICE, inVerifyPhase, openRunNetwork, withTaskEnv, type RunNetwork } from './taskEnvironment.ts';
import { isRepoTask, repoFiles, RepoRun } from './repoGrade.ts';
import { checkWheelhouse, findRequirements, installRequirements, installSource, ISOLATED_TARGET, REQUIREMENTS_LOG, withPythonPath } from './agentRequirements.ts';

/** Where a run's verifier environment keeps its folders while it is open (removed after). */
const VERIFIER_ENV_DIR = 'verifier-env';

export interface RunTaskOptions {
  task: Task;
  agentCommand: string;
  /** The agent's working directory on the host (seen read-only at the same path when isolated). */
  agentCwd: string;
  /** Other host folders the agent must read (the runtime its command names), read-only. */
  agentFolders?: string[];
  /** Host paths the agent must never see although they lie in its folders (every task folder, say). */
  hidden?: string[];
  protocol: AgentProtocol;
  /** The agent's name, recorded in result.json so the run can be repeated with the same agent. */
  agentName?: string;
  backend: Backend;
  /** The folder that receives `<run-id>/` (`.belay/runs` by default in the command line). */
  runsDir: string;
  runId?: string;
  limits?: Partial<RunLimits>;
  /** The agent's variables (its configured env, secrets, `--env`): all it gets beyond the protocol's. */
  env?: Record<string, string>;
  /** The model the agent may call through Belay's gateway (its one way out of the run); none when absent. */
  llm?: RunLlmOptions;
  onEvent?: RunEventListener;
  /** Stops the run: everything it started is killed, the result says `aborted`. */
  signal?: AbortSignal;
  /** The person allows a task's `public` network (belay.runner.allowPublicNetwork, --allow-public-network). */
  allowPublicNetwork?: boolean;
  /** Tests only: how the egress proxy finds the hosts a task names (local servers instead of DNS). */
  resolveNetwork?: Resolver;
  /**
   * A folder of wheels a Python agent's requirements.txt is installed from, shown read-only to
   * the agent phase (belay.runner.wheelhouse, --wheelhouse); absent, only the package index
   * through the agent phase's network.
   */
  wheelhouse?: string;
}

export function newRunId(taskName: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  return `${stamp}-${taskName.replace(/[^A-Za-z0-9._-]/g, '_')}-${randomBytes(3).toString('hex')}`;
}

export async function runTask(options: RunTaskOptions): Promise<RunResult> {
  const { task, backend } = options;
  const runId = options.runId ?? newRunId(task.name);
  const runDir = path.resolve(options.runsDir, runId);
  const files = runFiles(runDir);
  const started = new Date();
  const limits: RunLimits = { ...DEFAULT_LIMITS, agentTimeoutMs: task.agentTimeoutSec * 1000, ...options.limits };
  const testTimeoutMs = task.testTimeoutSec * 1000;
  let llm: RunLlm | undefined;
  const emit = (event: RunEvent) => {
    if (event.type === 'step-ended') llm?.stepEnded(event.step);
    try {
      options.onEvent?.(event);
    } catch {
      // A listener's mistake must not end the run.
    }
  };
  const notes: string[] = [];
  const note = (message: string) => {
    notes.push(message);
    emit({ type: 'notice', message });
  };
  // A multi-step task is several parts, each an agent phase and a verify phase; any other task is one.
  const parts = runParts(task, runDir, { limits, testTimeoutMs, agentTimeoutOverride: options.limits?.agentTimeoutMs });
  const total = (key: 'agentTimeoutMs' | 'testTimeoutMs') => parts.reduce((sum, part) => sum + part[key], 0);
  const bounds = new RunBounds(runDir, { ...limits, agentTimeoutMs: total('agentTimeoutMs'), testTimeoutMs: total('testTimeoutMs') }, options.signal);
  // A spent budget ends the run as the user's Stop would, with its own cause.
  llm = options.llm
    ? new RunLlm(options.llm, runId, (message) => bounds.stop(new RunFailure('budget_exceeded', message)), {
        // A model in the editor the person did not let Belay use (or that went away) ends the run.
        onFailure: (message) => bounds.stop(new RunFailure('setup_error', message)),
        onNote: note,
      })
    : undefined;

  const trajectory: TrajectoryEntry[] = [];
  let outcome: AgentOutcome = { steps: 0, agentCompleted: false };
  let failure: RunFailure | undefined;
  let verification: Verification | null = null;
  let session: BackendSession | undefined;
  let host: string | undefined;
  const steps = new StepRecords(task, runDir);
  let network: RunNetwork | undefined;
  let repoRun: RepoRun | undefined;
  const inputs = new VerifierInputs(task, files.workspace);
  let captured: CapturedState = {};
  let verifierEnvOpened = false;
  try {
    await fs.mkdir(files.steps, { recursive: true });
    emit({ type: 'run-started', runId, task: task.name, protocol: options.protocol.name, backend: backend.label, isolated: backend.isolated, runDir });
    try {
      network = await openRunNetwork({ task, runDir, allowPublic: options.allowPublicNetwork === true, isolated: backend.isolated, note, ...(options.resolveNetwork ? { resolve: options.resolveNetwork } : {}) });
    } catch (error) {
      throw new RunFailure('setup_error', errorMessage(error));
    }
    // A repository task: its repository checked out at the base commit is the workspace; its source stays hidden.
    if (isRepoTask(task)) repoRun = await RepoRun.prepare(task, runDir, { signal: bounds.signal });
    // A Python agent's requirements.txt: read (and refused, if hostile) before any environment opens.
    const requirements = await findRequirements(options.agentCommand, options.agentCwd);
    const wheelhouse = requirements && options.wheelhouse !== undefined ? await checkWheelhouse(options.wheelhouse) : undefined;
    const requirementsSource = requirements ? installSource(network.agent.policy, wheelhouse, requirements.file) : undefined;
    const pythonTarget = backend.isolated ? ISOLATED_TARGET : path.join(files.scratch, 'agent-python');
    let openOptions = repoRun ? { ...options, hidden: [...(options.hidden ?? []), repoRun.source] } : options;
    if (requirementsSource && 'wheelhouse' in requirementsSource) openOptions = { ...openOptions, agentFolders: [...(openOptions.agentFolders ?? []), requirementsSource.wheelhouse] };
    const services: ServiceSpec[] = [...(llm ? [llm.service] : []), ...(network.agent.service ? [network.agent.service] : [])];
    for (const part of parts) {
      if (part.step) {
        steps.begin(part.step);
        await fs.mkdir(path.join(part.recordsDir, 'steps'), { recursive: true });
        emit({ type: 'notice', message: `step ${part.step.index} of ${parts.length}: ${part.step.name}` });
      }
      // The task's [environment.env] reaches every program of both phases, under Belay's own variables.
      session = withTaskEnv(
        await openEnvironment(openOptions, runId, files, bounds.signal, note, part, services, {
          diskBudgetBytes: limits.diskBudgetBytes,
          onLimit: (cause, message) => bounds.stop(new RunFailure(cause, message)),
        }),
        task.env,
      );
      if (session.host !== undefined && host === undefined) {
        host = session.host;
        emit({ type: 'notice', message: `on ${host}` });
      }

      if (repoRun) await repoRun.install(session, repoFiles(runDir).installLog, limits.maxLogBytes, bounds.signal, note);
      if (requirements && requirementsSource) {
        await installRequirements({
          session,
          ...requirements,
          source: requirementsSource,
          target: pythonTarget,
          proxyEnv: network.agent.service ? network.agent.environment(session.serviceUrl(EGRESS_SERVICE)) : {},
          logFile: path.join(runDir, REQUIREMENTS_LOG),
          maxLogBytes: limits.maxLogBytes,
          signal: bounds.signal,
        });
        note(`the agent's ${requirements.requirements.length} requirement${requirements.requirements.length === 1 ? '' : 's'} installed from ${'wheelhouse' in requirementsSource ? `the wheelhouse ${requirementsSource.wheelhouse}` : 'the package index'} (${REQUIREMENTS_LOG})`);
      }

      // The agent phase: the agent through its protocol, until it is done and everything it started is dead.
      bounds.enter('agent');
      const deadline = Date.now() + part.agentTimeoutMs;
      // The packages of the agent's requirements.txt, first on its Python path.
      const withRequirements = (env: Record<string, string>) => (requirementsSource ? withPythonPath(env, pythonTarget) : env);
      const ctx: AgentContext = {
        task: part.task,
        session,
        runDir: part.recordsDir,
        agentCommand: options.agentCommand,
        agentCwd: options.agentCwd,
        // The gateway's variables last: with a gateway, no key of the agent's own settings goes in.
        // The egress proxy's variables after them: the agent's settings cannot route around it.
        env: withRequirements({
          TERM_TASK_ID: task.name,
          ...repoRun?.variables(part.agentTimeoutMs / 1000),
          BELAY_WORKDIR: session.workdir,
          ...options.env,
          ...llm?.environment(session.serviceUrl(LLM_SERVICE)),
          ...(network.agent.service ? network.agent.environment(session.serviceUrl(EGRESS_SERVICE)) : {}),
        }),
        ...(llm ? { llm: { baseUrl: session.serviceUrl(LLM_SERVICE), token: llm.token, model: llm.model } } : {}),
        ...(options.protocol.keepsState ? { stateFolder: files.agentState } : {}),
        limits: { ...limits, agentTimeoutMs: part.agentTimeoutMs },
        remainingMs: () => deadline - Date.now(),
        emit,
        trajectory: part.step ? part.trajectory : trajectory,
        signal: bounds.signal,
      };
      // A step's workdir/setup.sh runs first; when it fails, the step's agent and tests do not run.
      const setupFailure = part.step ? await stepSetup(part.step, session, part.agentTimeoutMs, bounds.signal) : undefined;
      await inputs.before(session);
      ({ outcome, failure } = setupFailure ? { outcome: { steps: 0, agentCompleted: false }, failure: setupFailure } : await agentPhase(options.protocol, ctx));
      llm?.assign(ctx.trajectory);
      if (part.step) trajectory.push(...steps.trajectory(part.step, part.trajectory));
      await session.endAgentPhase().catch((error: unknown) => {
        throw new RunFailure('harness_error', `the agent phase could not be ended: ${errorMessage(error)}`);
      });
      await inputs.after(session.workspaceNotFinal === undefined);
      // What the agent left, kept with the run (a multi-step task's last step's is the one kept): what regrade grades.
      let stepFinal: CapturedFiles | undefined;
      if (session.workspaceNotFinal !== undefined) {
        captured = {};
        note(`the final state could not be kept: ${session.workspaceNotFinal}`);
      } else if (!setupFailure) {
        // Artifacts outside the working folder are read where the backend says, before the environment is closed.
        const open = session;
        const outside = open.artifactOutside ? (inside: string, staging: string) => open.artifactOutside!(inside, staging) : undefined;
        captured = await captureState(runDir, task, files.workspace, session.workdir, finalStateBounds(limits.diskBudgetBytes), note, outside);
        // A step's own final state too (final/steps/<name>/workdir): what its verifier graded.
        if (part.step && captured.final) stepFinal = await keepStepState(runDir, part.step, captured.final, note);
      }

      // The verify phase. Like the real harness, the tests run even when the agent failed: partial work can pass.
      verification = null;
      if (repoRun && !bounds.signal.aborted) {
        // What is graded is the agent's patch, on a clean checkout in a fresh environment.
        bounds.enter('verify');
        emit({ type: 'verification-started' });
        await session.close();
        session = undefined;
        const { maxLogBytes, diskBudgetBytes } = limits;
        verification = await repoRun.grade({ backend, runId, network, hidden: [options.task.dir, path.resolve(options.runsDir), repoRun.source, ...(options.hidden ?? [])], testTimeoutMs: part.testTimeoutMs, maxLogBytes, diskBudgetBytes, signal: bounds.signal, note, onLimit: (cause, message) => bounds.stop(new RunFailure(cause, message)) });
        emit({ type: 'verification-ended', verification });
      } else if (!bounds.signal.aborted && !setupFailure) {
        bounds.enter('verify');
        emit({ type: 'verification-started' });
        for (const leftover of await removeVerifierLeftovers(files.logs)) note(`removed ${leftover}, left by the agent phase: only the verify phase writes the verifier's files`);
        await stageTests(task, files.tests, part.step);
        // A step's verifier.environment before the task's [verifier.environment].
        const verifierSpec = resolveVerifierEnvironment(task, part.step);
        if (verifierSpec) {
          // The verifier's own environment: a fresh one holding the final state (this step's), nothing else of the agent's.
          if (!captured.final) throw new RunFailure('harness_error', `the task runs its verifier in an environment of its own, and the final state could not be kept for it`);
          await session.close();
          verifierEnvOpened = true;
          // The task's [environment.env] reaches the verifier's own environment too.
          session = withTaskEnv(await openVerifierEnvironment({
            backend,
            task,
            spec: verifierSpec,
            runId: `${runId}-verifier${part.step ? `-${part.step.index}` : ''}`,
            finalDir: path.join(runDir, ...(stepFinal?.dir ?? FINAL_WORKDIR).split('/')),
            envDir: path.join(runDir, VERIFIER_ENV_DIR),
            environmentLog: path.join(part.recordsDir, 'verifier-environment.log'),
            tests: files.tests,
            logs: files.logs,
            hidden: [options.task.dir, path.resolve(options.runsDir), ...(options.hidden ?? [])],
            diskBudgetBytes: limits.diskBudgetBytes,
            onNotice: note,
            signal: bounds.signal,
          }).catch((error: unknown) => {
            // Its image could not be had (a tests/Dockerfile that fails, a docker_image not there): the task's environment, as the agent's.
            throw new RunFailure('setup_error', `the verifier's environment could not be opened: ${errorMessage(error)}`);
          }), task.env);
          const image = verifierSpec.image && backend.images ? `, of ${verifierImageWords(verifierSpec.image, task.dir)}` : '';
          note(`${part.step ? `step '${part.step.name}': ` : ''}the verifier ran in an environment of its own (${backend.label}${image}), holding only the final working folder`);
        }
        // The verify phase's own egress (its [verifier] policy), started now that nothing of the agent's is alive; never the gateway.
        const open = session;
        const runNetwork = network;
        const step = part.step;
        // A step's own verifier network (its [[steps]] verifier's) before the task's.
        verification = await inVerifyPhase(open, { openVerifier: () => runNetwork.openVerifier(step) }, note, (env) =>
          verify({ task: part.task, session: open, runDir, testOutputFile: part.testOutputFile, timeoutMs: part.testTimeoutMs, maxLogBytes: limits.maxLogBytes, env, signal: bounds.signal }),
        );
        emit({ type: 'verification-ended', verification });
      }
      if (!part.step) break;
      // A step's session ends before the next opens; the run workspace folder carries the work on
      // (a separate verifier's copy of it goes with its environment: the next step never sees it).
      await session?.close();
      session = undefined;
      if (verifierEnvOpened) await removeVerifierEnvironment(path.join(runDir, VERIFIER_ENV_DIR));
      const stop = await steps.end(part.step, { outcome, failure, verification, logsDir: files.logs, testsDir: files.tests, stopped: bounds.signal.aborted, ...(stepFinal ? { final: stepFinal } : {}) });
      if (stop) {
        if (stop !== true) note(stop);
        break;
      }
    }
    if (task.steps) ({ outcome, failure, verification } = steps.combined());
  } catch (error) {
    failure = error instanceof RunFailure ? error : new RunFailure('setup_error', errorMessage(error));
    if (task.steps) {
      steps.abandon(failure);
      ({ outcome, verification } = steps.combined());
    }
  } finally {
    bounds.dispose();
    llm?.close();
    await network?.close().catch((error: unknown) => note(`the network proxy could not be closed: ${errorMessage(error)}`));
    await session?.close().catch((error: unknown) => note(`the environment could not be closed: ${errorMessage(error)}`));
    if (verifierEnvOpened) await removeVerifierEnvironment(path.join(runDir, VERIFIER_ENV_DIR)).catch(() => undefined);
  }
  // A stopped run ends with the reason it was stopped for, whatever the protocol made of it.
  failure = bounds.failure ?? failure;
  if (failure?.failure === 'aborted' || failure?.failure === 'disk_budget' || failure?.failure === 'budget_exceeded' || failure?.failure === 'host_lost') verification = null;
  const result = summarize(options, { runId, runDir, started, outcome, failure, verification, notes, steps: steps.summary(), llm: llm?.usage(), host, captured });
  result.signals = await runSignals(task, runDir, trajectory, inputs).catch((error: unknown) => {
    note(`the reward-hacking signals could not be looked for: ${errorMessage(error)}`);
    return undefined;
  });
  await writeRecords(runDir, result, trajectory, task.instruction);
  // Every model call with its latency, status and cost, beside the totals in result.json.
  if (llm) await writeFileAtomic(path.join(runDir, LLM_REQUESTS_FILE), JSON.stringify(llm.records(), null, 2) + '\n').catch((error: unknown) => note(`the model calls could not be written: ${errorMessage(error)}`));
  emit({ type: 'run-ended', result });
  return result;
}

/** Runs the agent; its failure is the run's failure, anything else thrown is Belay's own fault. */
async function agentPhase(protocol: AgentProtocol, ctx: AgentContext): Promise<{ outcome: AgentOutcome; failure: RunFailure | undefined }> {
  try {
    return { outcome: await protocol.run(ctx), failure: undefined };
  } catch (error) {
    const failure = error instanceof RunFailure ? error : new RunFailure('harness_error', `Belay failed while running the agent: ${errorMessage(error)}`);
    return { outcome: { steps: failure.steps ?? ctx.trajectory.length, agentCompleted: false }, failure };
  }
}

/** Seeds the workspace and opens the backend's environment; a failure here is `setup_error`. */
async function openEnvironment(
  options: RunTaskOptions,
  runId: string,
  files: ReturnType<typeof runFiles>,
  signal: AbortSignal,
  note: (message: string) => void,
  part: RunPart,
  services: ServiceSpec[],
  bound: Pick<SessionSpec, 'diskBudgetBytes' | 'onLimit'>,
): Promise<BackendSession> {
  try {
    if (part.step && part.first && !options.backend.keepsWorkBetweenSessions(options.task)) {
      // Each step opens a fresh container from the task's image, whose /app would undo the steps before.
      throw new Error(`a multi-step task with its own image keeps its work between steps only on the sandbox or local backend`);
    }
    if (part.first) await seedWorkspace(options.task, files.workspace);
    if (part.step) await mergeStepWorkdir(part.step, files.workspace);
    const folders: RunFolders = {
      workspace: files.workspace,
      tests: files.tests,
      logs: files.logs,
      control: files.control,
      scratch: files.scratch,
      environmentLog: files.environmentLog,
      ...(options.protocol.keepsState ? { agentState: files.agentState } : {}),
    };
    return await options.backend.open({
      runId,
      task: options.task,
      folders,
      agentFolders: [options.agentCwd, ...(options.agentFolders ?? [])],
      // The task's own folder and the run records are never the agent's to read.
      hidden: [options.task.dir, path.resolve(options.runsDir), ...(options.hidden ?? [])],
      services,
      onNotice: note,
      signal,
      ...bound,
    });
  } catch (error) {
    throw new RunFailure('setup_error', errorMessage(error));
  }
}

interface RunFacts {
  runId: string;
  runDir: string;
  started: Date;
  outcome: AgentOutcome;
  failure: RunFailure | undefined;
  verification: Verification | null;
  notes: string[];
  steps: Pick<RunResult, 'task_steps' | 'task_steps_total' | 'reward_strategy'>;
  /** The run's model calls, when it had a gateway. */
  llm: LlmUsage | undefined;
  /** The other machine whose engine ran it, when one did. */
  host: string | undefined;
  /** The final state and artifacts kept after the agent phase. */
  captured: CapturedState;
}

function summarize(options: RunTaskOptions, facts: RunFacts): RunResult {
  const { failure, verification, outcome } = facts;
  const passed = failure === undefined && verification !== null && verification.success;
  let cause: FailureCause | null = failure?.failure ?? null;
  let error: string | null = failure?.message ?? null;
  if (!cause && verification && !verification.success) {
    cause = verification.timed_out ? 'test_timeout' : 'tests_failed';
    error = verification.error ?? `the tests gave ${rewardWords(verification.reward, verification.metrics)}`;
  }
  const ended = new Date();
  return {
    run_id: facts.runId,
    task_name: options.task.name,
    task_dir: options.task.dir,
    ...(options.agentName !== undefined ? { agent: options.agentName } : {}),
    protocol: options.protocol.name,
    backend: options.backend.name,
    backend_label: options.backend.label,
    ...(facts.host !== undefined ? { host: facts.host } : {}),
    started_at: facts.started.toISOString(),
    ended_at: ended.toISOString(),
    duration_sec: (ended.getTime() - facts.started.getTime()) / 1000,
    steps: outcome.steps,
    agent_completed: outcome.agentCompleted,
    verification,
    passed,
    // No single reward is made up: null when the tests gave several metrics and none is the reward.
    reward: verification ? verification.reward : 0,
    ...(verification?.reward_rule !== undefined && verification.metrics ? { metrics: verification.metrics } : {}),
    failure_cause: cause,
    error,
    ...facts.steps,
    notes: facts.notes,
    ...(facts.llm ? { llm: facts.llm } : {}),
    run_dir: facts.runDir,
    ...(facts.captured.final ? { final: facts.captured.final } : {}),
    ...(facts.captured.artifacts ? { artifacts: facts.captured.artifacts } : {}),
  };
}
