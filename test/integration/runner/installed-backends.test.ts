// Codex, Gemini CLI and OpenCode (the real pinned CLIs, installed through Belay's install path) on a
// task through `runTask` with their protocols, in the sandbox and in a container, each reaching its
// scripted service (speaking its own API, at a model's pace) only through Belay's gateway: the task
// solved by the CLI's shell tool call, recorded as a step with its command, tokens counted, the
// key only at the service, the CLI's state kept with the run, nothing left behind.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Backend } from '../../../src/runner/core/backends/backend.ts';
import { LABELS } from '../../../src/runner/core/backends/container.ts';
import { detectEngine } from '../../../src/runner/core/backends/engine.ts';
import type { Upstream } from '../../../src/runner/core/gateway/index.ts';
import { codex } from '../../../src/runner/core/protocols/installed/codex.ts';
import { geminiCli } from '../../../src/runner/core/protocols/installed/geminiCli.ts';
import { launchCommand } from '../../../src/runner/core/protocols/installed/install.ts';
import type { InstalledAgent } from '../../../src/runner/core/protocols/installed/installedAgent.ts';
import { opencode } from '../../../src/runner/core/protocols/installed/opencode.ts';
import { installedProtocol } from '../../../src/runner/core/protocols/installedCli.ts';
import type { RunResult } from '../../../src/runner/core/records/records.ts';
import { runTask } from '../../../src/runner/core/run/run.ts';
import { hostGateway, type HostedGateway } from '../../../src/runner/core/run/runLlm.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';
import { containerOrReason } from '../../support/runner/container-helpers.ts';
import { nodeDir, processesWith, sandboxOrReason, taskDir, tempDir } from '../../support/runner/helpers.ts';
import { installedCli, testAgentCache } from '../../support/runner/installed.ts';
import { runCli } from '../../support/cli-process.ts';
import { repoRoot } from '../../support/runner/helpers.ts';
import { startChatUpstream } from '../../support/runner/upstreams/chat.ts';
import { startGeminiUpstream } from '../../support/runner/upstreams/gemini.ts';
import { startResponsesUpstream } from '../../support/runner/upstreams/responses.ts';

const KEY = 'sk-installed-backends-upstream-key';
const SOLVE = "printf 'Hello, world!' > hello.txt";

interface Service {
  upstream: Upstream;
  /** Model calls the service answered. */
  calls(): number;
  close(): Promise<void>;
}

/** Each CLI's service, scripted: its shell tool writes the file, then it says it is done. */
const SERVICES: { agent: InstalledAgent; model?: (token: string) => string; start(): Promise<Service> }[] = [
  {
    agent: codex,
    model: (token) => `gpt-5.5-${token}`,
    async start() {
      const service = await startResponsesUpstream({ key: KEY, firstByteSeconds: 2, pieceSeconds: 0.03, turns: [{ call: { name: 'exec_command', arguments: { cmd: SOLVE } } }, { text: 'hello.txt is written.' }] });
      return { upstream: { baseUrl: service.url, key: KEY, api: 'openai' }, calls: () => service.received.length, close: () => service.close() };
    },
  },
  {
    agent: geminiCli,
    async start() {
      const service = await startGeminiUpstream({ key: KEY, firstByteSeconds: 2, trickleMs: 30, turns: [{ parts: [{ functionCall: { name: 'run_shell_command', args: { command: SOLVE, description: 'Write hello.txt' } } }] }, { parts: [{ text: 'hello.txt is written.' }] }] });
      return { upstream: { baseUrl: service.url, key: KEY, api: 'gemini' }, calls: () => service.received.filter((r) => /generateContent/i.test(r.call)).length, close: () => service.close() };
    },
  },
  {
    agent: opencode,
    model: (token) => `gpt-4.1-${token}`,
    async start() {
      const service = await startChatUpstream({ key: KEY, firstByteMs: 2000, chunkMs: 30, turns: [{ toolCalls: [{ name: 'bash', arguments: { command: SOLVE, description: 'Write hello.txt' } }] }, { text: 'hello.txt is written.' }] });
      return { upstream: { baseUrl: service.url, key: KEY, api: 'openai' }, calls: () => service.received.filter((r) => r.turn !== null).length, close: () => service.close() };
    },
  },
];

const available = { sandbox: await sandboxOrReason(), container: await containerOrReason() } as Record<'sandbox' | 'container', Backend | Error>;
const tmp = tempDir('belay-installed-backends-');
let gateway: HostedGateway;
let runs = 0;

before(async () => {
  gateway = await hostGateway();
});
after(async () => {
  await gateway?.close();
  tmp.remove();
});

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name));
}

async function nothingLeft(result: RunResult, token: string | undefined): Promise<void> {
  if (token) assert.deepEqual(processesWith(token), [], 'the CLI left processes running');
  const scratch = path.join(result.run_dir, 'scratch');
  assert.deepEqual(existsSync(scratch) ? readdirSync(scratch) : [], [], 'the run left its private folders');
  if (result.backend.startsWith('container')) {
    const engine = await detectEngine();
    const listed = await engine.check(['ps', '--all', '--filter', `label=${LABELS.run}=${path.basename(result.run_dir)}`, '--format', '{{.Names}}'], { timeoutMs: 60_000 });
    assert.equal(listed.trim(), '', 'the run left its container');
  }
}

describe('the coding CLIs on a task in every isolating backend', { concurrency: 2 }, () => {
  for (const { agent, model, start } of SERVICES) {
    for (const name of ['sandbox', 'container'] as const) {
      it(`${agent.title} solves the task by its shell call in the ${name}, through the gateway only`, async (t) => {
        const backend = available[name];
        if (backend instanceof Error) return t.skip(`${name}: ${backend.message}`);
        const cli = await installedCli(agent);
        const service = await start();
        const token = model ? `it${process.pid}x${++runs}` : undefined;
        try {
          const result = await runTask({
            task: await loadTask(taskDir('hello')),
            agentCommand: launchCommand(agent, cli),
            agentCwd: cli.folder,
            agentFolders: [nodeDir],
            backend,
            runsDir: path.join(tmp.dir, 'runs'),
            protocol: installedProtocol(agent),
            limits: { agentTimeoutMs: 240_000 },
            llm: { gateway: gateway.gateway, socketPath: gateway.socketPath, upstream: { ...service.upstream, ...(model && token ? { model: model(token) } : {}) } },
          });
          assert.equal(result.passed, true, `${result.failure_cause}: ${result.error}`);
          assert.equal(result.protocol, agent.name);
          const trajectory = JSON.parse(readFileSync(path.join(result.run_dir, 'trajectory.json'), 'utf8')) as { command: string | null; exit_code: number | null }[];
          const step = trajectory.find((entry) => entry.command !== null);
          assert.equal(step?.command, SOLVE, JSON.stringify(trajectory));
          assert.ok(service.calls() >= 2, `the service answered ${service.calls()} model calls`);
          assert.ok((result.llm?.requests ?? 0) >= 2 && (result.llm?.input_tokens ?? 0) > 0, JSON.stringify(result.llm));
          const state = path.join(result.run_dir, 'agent-state');
          assert.ok(filesUnder(state).length > 0, `${agent.title} kept nothing in ${state}`);
          for (const file of filesUnder(result.run_dir)) {
            if (statSync(file).size < 50_000_000) assert.ok(!readFileSync(file).includes(KEY), `${path.relative(result.run_dir, file)} holds the upstream key`);
          }
          await nothingLeft(result, token);
        } finally {
          await service.close();
        }
      });
    }
  }

  for (const { agent } of SERVICES) {
    it(`belay agent doctor --protocol ${agent.name}: installed, its version, one step through the gateway with the probe model in its API`, async (t) => {
      if (available.sandbox instanceof Error) return t.skip(`sandbox: ${available.sandbox.message}`);
      await installedCli(agent);
      const run = await runCli(path.join(repoRoot, 'dist', 'cli.js'), ['agent', 'doctor', '--protocol', agent.name, '--json'], { cwd: tmp.dir, env: { XDG_CACHE_HOME: path.dirname(path.dirname(testAgentCache())) } });
      assert.equal(run.code, 0, run.stdout + run.stderr);
      const report = JSON.parse(run.stdout) as { installed: boolean; version: string; exchange: { ok: boolean; model: string; requests: number }; problems: string[] };
      assert.equal(report.installed, true);
      assert.ok(report.version.includes(agent.version), report.version);
      assert.deepEqual([report.exchange.ok, report.exchange.model, report.exchange.requests >= 2, report.problems], [true, 'probe', true, []]);
    });
  }
});
