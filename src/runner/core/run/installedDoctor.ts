// The doctor for an installed coding CLI: is it installed (where, which version), does it start
// (`--version`, bounded), and does one step through Belay's gateway work: the CLI on a scratch task
// whose test wants a file, in the backend a run would use, its model either the upstream given
// (a real model: a few tokens) or Belay's probe model on loopback, which answers in the CLI's API
// with one tool call that writes the file. The exchange is a whole run: the CLI, the gateway, a
// tool call and its result, the test.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { errorMessage } from '../../../shared/errors.ts';
import { runBounded } from '../../../shared/process.ts';
import type { Backend } from '../backends/backend.ts';
import type { Upstream } from '../gateway/index.ts';
import { runTask } from './run.ts';
import { hostGateway } from './runLlm.ts';
import { loadTask } from '../tasks/task.ts';
import type { InstalledAgent } from '../protocols/installed/installedAgent.ts';
import { installedProtocol } from '../protocols/installedCli.ts';
import { startProbeModel } from '../protocols/installed/probeModel.ts';

export interface InstalledDoctorOptions {
  agent: InstalledAgent;
  /** The CLI to check: its shell command and its folder (Belay's install, or the one named). */
  cli: { command: string; folder: string; bin: string } | undefined;
  backend: Backend;
  /** A real upstream to exchange with; none: Belay's probe model. */
  upstream?: Upstream;
  /** The model asked for. */
  model?: string;
  timeoutMs?: number;
  /** Host folders the CLI reads besides its own (Belay's Node for a Node CLI). */
  agentFolders?: readonly string[];
  signal?: AbortSignal;
}

export interface InstalledDoctorReport {
  protocol: string;
  title: string;
  installed: boolean;
  program: string | null;
  /** What `--version` printed (its first line), or null. */
  version: string | null;
  pinned: string;
  /** The one-step exchange through the gateway. */
  exchange: { ok: boolean; model: 'probe' | 'upstream'; summary: string; requests: number; tokens: number } | null;
  problems: string[];
  ok: boolean;
}

const INSTRUCTION = 'Create a file named doctor.txt in the current folder containing the word ok (run: printf ok > doctor.txt), then say done.';

export async function doctorInstalled(options: InstalledDoctorOptions): Promise<InstalledDoctorReport> {
  const { agent } = options;
  const report: InstalledDoctorReport = { protocol: agent.name, title: agent.title, installed: options.cli !== undefined, program: options.cli?.bin ?? null, version: null, pinned: agent.version, exchange: null, problems: [], ok: false };
  if (!options.cli) {
    report.problems.push(`${agent.title} is not installed: belay agent install ${agent.name} installs ${agent.package}@${agent.version}`);
    return report;
  }
  const version = await runBounded({
    argv: ['/bin/sh', '-c', `${options.cli.command} --version`],
    cwd: options.cli.folder,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: os.tmpdir(), ...(agent.needsNode ? { ELECTRON_RUN_AS_NODE: '1' } : {}) },
    maxOutputChars: 4000,
    timeoutMs: 30_000,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const printed = version.stdout.text('').trim().split('\n')[0] ?? '';
  if (version.exitCode !== 0 || !printed) {
    report.problems.push(`${options.cli.bin} --version did not answer (${version.timedOut ? 'no answer in 30 s' : `exit ${version.exitCode ?? version.signal}`}${version.stderr.text('').trim() ? `: ${version.stderr.text('').trim().split('\n')[0]}` : ''})`);
    return report;
  }
  report.version = printed;
  if (!printed.includes(agent.version)) report.problems.push(`it is version ${printed}, not the ${agent.version} Belay pins and tests: it may still work`);
  const root = await mkdtemp(path.join(os.tmpdir(), 'belay-agent-doctor-'));
  const probe = options.upstream ? undefined : await startProbeModel(agent);
  const gateway = await hostGateway();
  try {
    const taskDir = path.join(root, 'task');
    await mkdir(path.join(taskDir, 'tests'), { recursive: true });
    await writeFile(path.join(taskDir, 'task.toml'), '[agent]\ntimeout_sec = 300.0\n');
    await writeFile(path.join(taskDir, 'instruction.md'), `${INSTRUCTION}\n`);
    await writeFile(path.join(taskDir, 'tests', 'test.sh'), '#!/bin/sh\ntest "$(cat doctor.txt 2>/dev/null)" = ok\n');
    const upstream: Upstream = options.upstream ?? probe!.upstream;
    const result = await runTask({
      task: await loadTask(taskDir),
      agentCommand: options.cli.command,
      agentCwd: options.cli.folder,
      agentFolders: [...(options.agentFolders ?? [])],
      backend: options.backend,
      runsDir: path.join(root, 'runs'),
      protocol: installedProtocol(agent),
      limits: { agentTimeoutMs: options.timeoutMs ?? 300_000, maxSteps: 20 },
      llm: { gateway: gateway.gateway, socketPath: gateway.socketPath, upstream: { ...upstream, ...(options.model ? { model: options.model } : {}) } },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const requests = result.llm?.requests ?? 0;
    const tokens = (result.llm?.input_tokens ?? 0) + (result.llm?.output_tokens ?? 0);
    const ok = result.passed;
    const summary = ok
      ? `one step through the gateway worked: ${requests} model call${requests === 1 ? '' : 's'}, ${result.steps} tool call${result.steps === 1 ? '' : 's'}, the file written`
      : requests === 0
        ? `it never reached the gateway (${result.failure_cause}: ${result.error ?? 'no model call'})`
        : `it reached the gateway (${requests} model call${requests === 1 ? '' : 's'}) but the step failed (${result.failure_cause}: ${result.error ?? 'the file was not written'})`;
    report.exchange = { ok, model: options.upstream ? 'upstream' : 'probe', summary, requests, tokens };
    if (!ok) report.problems.push(summary);
    report.ok = ok && report.problems.length === 0;
    if (ok && report.problems.every((p) => p.startsWith('it is version'))) report.ok = true;
  } catch (error) {
    report.problems.push(`the exchange could not run: ${errorMessage(error)}`);
  } finally {
    await gateway.close();
    await probe?.close();
    await rm(root, { recursive: true, force: true }).catch(() => undefined);
  }
  return report;
}
