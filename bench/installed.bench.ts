// Claude Code through Belay, each figure beside its baseline in the same run:
// - a Claude Code turn through Belay (the sandbox backend, the gateway, the run's records): the
//   agent phase of a run on a one-tool-call task, from the run's start to the tests' start, against
//   the same pinned CLI started straight on the host with the same arguments, pointed at the same
//   scripted Messages service (no model wait on either side, so that the figure is Belay's own
//   overhead, not the model's time); interleaved, so that a burst of load does not decide it;
// - the same turn in a container against the same in the sandbox: reported, no goal.
// Needs the CLI in the tests' cache (installed here through Belay's install path when missing).
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import type { Backend } from '../src/runner/core/backends/backend.ts';
import { claudeCode } from '../src/runner/core/protocols/installed/claudeCode.ts';
import { launchCommand, type InstalledCli } from '../src/runner/core/protocols/installed/install.ts';
import { installedProtocol } from '../src/runner/core/protocols/installedCli.ts';
import { sandboxBackend } from '../src/runner/core/backends/sandbox.ts';
import { containerBackend } from '../src/runner/core/backends/container.ts';
import { runTask } from '../src/runner/core/run/run.ts';
import { hostGateway, type HostedGateway } from '../src/runner/core/run/runLlm.ts';
import { loadTask, type Task } from '../src/runner/core/tasks/task.ts';
import { installedCli } from '../test/support/runner/installed.ts';
import { startMessagesUpstream, type MessagesUpstream } from '../test/support/runner/upstreams/messages.ts';
import { percentile, type BenchFile, type Figure } from './lib.ts';

const ROUNDS = 6;
const KEY = 'sk-bench-claude';
const TURNS = [{ text: 'Writing it.', tool: 'Bash', input: { command: "printf 'Hello, world!' > hello.txt", description: 'Write hello.txt' } }, { text: 'Done.' }];

/** The CLI straight on the host, as a person would start it, against the service itself. */
function direct(cli: InstalledCli, upstream: MessagesUpstream, work: string, home: string): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const argv = claudeCode.argv({ instruction: 'Create hello.txt containing Hello, world!', model: 'claude-sonnet-4-5', baseUrl: upstream.url, token: KEY, stateDir: home, workdir: work });
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8', TERM: 'dumb', ...claudeCode.environment({ instruction: '', model: '', baseUrl: upstream.url, token: KEY, stateDir: home, workdir: work }) };
    const child = spawn(cli.bin, argv, { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 && out.includes('"type":"result"') ? resolve(performance.now() - started) : reject(new Error(`claude exited ${code}`))));
  });
}

/** The agent phase of a run through Belay: from the run's start to the tests' start. */
async function throughBelay(cli: InstalledCli, backend: Backend, task: Task, gateway: HostedGateway, upstream: MessagesUpstream, runsDir: string): Promise<number> {
  let started = 0;
  let ended = 0;
  const result = await runTask({
    task,
    agentCommand: launchCommand(claudeCode, cli),
    agentCwd: cli.folder,
    backend,
    runsDir,
    protocol: installedProtocol(claudeCode),
    llm: { gateway: gateway.gateway, socketPath: gateway.socketPath, upstream: { baseUrl: upstream.url, key: KEY, api: 'anthropic', model: 'claude-sonnet-4-5' } },
    onEvent: (event) => {
      if (event.type === 'run-started') started = performance.now();
      if (event.type === 'verification-started') ended = performance.now();
    },
  });
  if (!result.passed) throw new Error(`the bench run failed: ${result.failure_cause}: ${result.error}`);
  return ended - started;
}

const bench: BenchFile = {
  title: 'Installed coding CLIs (Claude Code)',
  async run(ctx) {
    let cli: InstalledCli;
    let sandbox: Backend;
    try {
      cli = await installedCli(claudeCode);
      sandbox = await sandboxBackend();
    } catch (error) {
      ctx.log(`Claude Code bench skipped: ${(error as Error).message}`);
      return [];
    }
    const container = await containerBackend().catch((error: Error) => error);
    const taskDir = path.join(ctx.tmpDir, 'task');
    await mkdir(path.join(taskDir, 'tests'), { recursive: true });
    await writeFile(path.join(taskDir, 'task.toml'), '[agent]\ntimeout_sec = 300\n');
    await writeFile(path.join(taskDir, 'instruction.md'), 'Create hello.txt containing Hello, world!\n');
    await writeFile(path.join(taskDir, 'tests', 'test.sh'), 'test "$(cat hello.txt)" = "Hello, world!"\n');
    const task = await loadTask(taskDir);
    const upstream = await startMessagesUpstream({ key: KEY, turns: TURNS });
    const gateway = await hostGateway();
    const figures: Figure[] = [];
    try {
      const straight: number[] = [];
      const belay: number[] = [];
      const boxed: number[] = [];
      // One of each first, untimed: the binary's pages, the sandbox's and the engine's first start.
      await direct(cli, upstream, await mkdtemp(path.join(ctx.tmpDir, 'w-')), await mkdtemp(path.join(ctx.tmpDir, 'h-')));
      await throughBelay(cli, sandbox, task, gateway, upstream, path.join(ctx.tmpDir, 'runs'));
      for (let round = 0; round < ROUNDS; round++) {
        straight.push(await direct(cli, upstream, await mkdtemp(path.join(ctx.tmpDir, 'w-')), await mkdtemp(path.join(ctx.tmpDir, 'h-'))));
        belay.push(await throughBelay(cli, sandbox, task, gateway, upstream, path.join(ctx.tmpDir, 'runs')));
        if (!(container instanceof Error)) boxed.push(await throughBelay(cli, container, task, gateway, upstream, path.join(ctx.tmpDir, 'runs')));
      }
      const value = percentile(belay, 50);
      const baseline = percentile(straight, 50);
      ctx.log(`Claude Code turn: ${value.toFixed(0)} ms through Belay (sandbox), ${baseline.toFixed(0)} ms straight on the host (medians of ${ROUNDS})`);
      figures.push({ name: `Claude Code turn through Belay (gateway, sandbox), median of ${ROUNDS}`, value, baselineName: 'the same CLI straight on the host at the same upstream', baseline, unit: 'ms', goal: 1.2 });
      if (container instanceof Error) ctx.log(`container figure skipped: ${container.message}`);
      else {
        const inContainer = percentile(boxed, 50);
        ctx.log(`Claude Code turn in a container: ${inContainer.toFixed(0)} ms`);
        figures.push({ name: `Claude Code turn in a container, median of ${ROUNDS}`, value: inContainer, baselineName: 'the same turn in the sandbox', baseline: value, unit: 'ms' });
      }
    } finally {
      await gateway.close();
      await upstream.close();
    }
    return figures;
  },
};

export default bench;
