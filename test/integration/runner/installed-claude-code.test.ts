// The real Claude Code CLI (the pinned version, installed through Belay's own install path) on a
// task through `runTask` with the claude-code protocol, on the local, sandbox and container
// backends, its model a scripted Anthropic Messages service on 127.0.0.1 reached only through
// Belay's gateway, at a model's pace (the first byte after seconds, the answer trickling). Each
// case asserts what the run recorded and what the service saw, and that nothing is left running.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Backend } from '../../../src/runner/core/backends/backend.ts';
import { LABELS } from '../../../src/runner/core/backends/container.ts';
import { detectEngine } from '../../../src/runner/core/backends/engine.ts';
import { claudeCode } from '../../../src/runner/core/protocols/installed/claudeCode.ts';
import { launchCommand, type InstalledCli } from '../../../src/runner/core/protocols/installed/install.ts';
import { installedProtocol } from '../../../src/runner/core/protocols/installedCli.ts';
import type { RunEvent } from '../../../src/runner/core/records/events.ts';
import type { RunResult } from '../../../src/runner/core/records/records.ts';
import { runTask, type RunTaskOptions } from '../../../src/runner/core/run/run.ts';
import { hostGateway, type HostedGateway } from '../../../src/runner/core/run/runLlm.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';
import { containerOrReason } from '../../support/runner/container-helpers.ts';
import { backends, nodeDir, processesWith, taskDir, tempDir } from '../../support/runner/helpers.ts';
import { installedCli, testAgentCache } from '../../support/runner/installed.ts';
import { runCli } from '../../support/cli-process.ts';
import { repoRoot } from '../../support/runner/helpers.ts';
import { startMessagesUpstream, type MessagesUpstream, type Turn } from '../../support/runner/upstreams/messages.ts';
import { namedHosts } from '../../support/runner/namedHosts.ts';
import type { NetworkLogEntry } from '../../../src/runner/core/network/proxy.ts';

const KEY = 'sk-ant-installed-claude-upstream-key';
const SOLVE = "printf 'Hello, world!' > hello.txt";
/** A model's pace: seconds before the first byte, then the answer in pieces. */
const PACE = { firstByteMs: 3000, chunkMs: 30 };

const available = Object.fromEntries(
  await Promise.all([...backends, { name: 'container' as const, get: containerOrReason }].map(async (b) => [b.name, await b.get()] as const)),
) as Record<'local' | 'sandbox' | 'container', Backend | Error>;

let cli: InstalledCli;
let gateway: HostedGateway;
const tmp = tempDir('belay-claude-code-');
const upstreams: MessagesUpstream[] = [];
let runs = 0;

before(async () => {
  cli = await installedCli(claudeCode);
  gateway = await hostGateway();
});

after(async () => {
  await gateway?.close();
  await Promise.all(upstreams.map((u) => u.close()));
  tmp.remove();
});

interface Outcome {
  result: RunResult;
  events: RunEvent[];
  upstream: MessagesUpstream;
  /** In the model's name on Claude Code's command line: what the run left running carries it. */
  token: string;
}

async function runClaude(backend: Backend, turns: Turn[], options: Partial<RunTaskOptions> = {}, budget?: { tokens: number }): Promise<Outcome> {
  const upstream = await startMessagesUpstream({ key: KEY, turns, ...PACE });
  upstreams.push(upstream);
  const token = `claude-sonnet-it-${process.pid}-${++runs}`;
  const events: RunEvent[] = [];
  const result = await runTask({
    task: await loadTask(taskDir('hello')),
    agentCommand: launchCommand(claudeCode, cli),
    agentCwd: cli.folder,
    agentFolders: [nodeDir],
    backend,
    runsDir: path.join(tmp.dir, 'runs'),
    protocol: installedProtocol(claudeCode),
    limits: { agentTimeoutMs: 180_000 },
    llm: { gateway: gateway.gateway, socketPath: gateway.socketPath, upstream: { baseUrl: upstream.url, key: KEY, api: 'anthropic', model: token }, ...(budget ? { budget } : {}) },
    onEvent: (event) => events.push(event),
    ...options,
  });
  return { result, events, upstream, token };
}

/** Every file of a folder, recursively (links not followed). */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name));
}

async function nothingLeft(outcome: Outcome): Promise<void> {
  assert.deepEqual(processesWith(outcome.token), [], 'Claude Code left processes running');
  const scratch = path.join(outcome.result.run_dir, 'scratch');
  assert.deepEqual(existsSync(scratch) ? readdirSync(scratch) : [], [], 'the run left its private folders');
  if (outcome.result.backend.startsWith('container')) {
    const engine = await detectEngine();
    const listed = await engine.check(['ps', '--all', '--filter', `label=${LABELS.run}=${path.basename(outcome.result.run_dir)}`, '--format', '{{.Names}}'], { timeoutMs: 60_000 });
    assert.equal(listed.trim(), '', 'the run left its container');
  }
}

const SOLVING: Turn[] = [{ text: 'I will write the file.', tool: 'Bash', input: { command: SOLVE, description: 'Write hello.txt' } }, { text: 'hello.txt now says Hello, world!' }];

describe('Claude Code on a task, through the gateway', { concurrency: true }, () => {
  for (const name of ['sandbox', 'container', 'local'] as const) {
    it(`solves the task by its tool call on the ${name} backend, the key only at the upstream`, async (t) => {
      const backend = available[name];
      if (backend instanceof Error) return t.skip(`${name}: ${backend.message}`);
      const outcome = await runClaude(backend, SOLVING);
      const { result, upstream } = outcome;
      assert.equal(result.passed, true, `${result.failure_cause}: ${result.error}`);
      assert.equal(result.protocol, 'claude-code');
      assert.equal(result.agent_completed, true);
      // The trajectory: the tool call as a step, the model's words before it, tokens per step.
      const trajectory = JSON.parse(readFileSync(path.join(result.run_dir, 'trajectory.json'), 'utf8')) as { command: string | null; exit_code: number | null; response: { tool?: string; text?: string }; llm?: { input_tokens: number } }[];
      assert.equal(trajectory[0]!.command, SOLVE);
      assert.equal(trajectory[0]!.exit_code, 0);
      assert.equal(trajectory[0]!.response.tool, 'Bash');
      assert.equal(trajectory[0]!.response.text, 'I will write the file.');
      assert.equal(trajectory[0]!.llm?.input_tokens, 1200);
      assert.equal(trajectory.at(-1)!.response.text, 'hello.txt now says Hello, world!');
      assert.deepEqual(result.llm && { requests: result.llm.requests, input: result.llm.input_tokens, output: result.llm.output_tokens }, { requests: 2, input: 2400, output: 80 });
      // ATIF: the step is Claude Code's own Bash tool call with its arguments, its tokens, its output.
      const atif = JSON.parse(readFileSync(path.join(result.run_dir, 'agent', 'trajectory.json'), 'utf8')) as { steps: { tool_calls?: { function_name: string; arguments: { command?: string } }[]; metrics?: { prompt_tokens: number }; observation?: unknown }[] };
      const call = atif.steps.find((step) => step.tool_calls);
      assert.equal(call?.tool_calls?.[0]?.function_name, 'Bash');
      assert.equal(call?.tool_calls?.[0]?.arguments.command, SOLVE);
      assert.equal(call?.metrics?.prompt_tokens, 1200);
      assert.ok(call?.observation, 'the tool call has its observation');
      // Live: the step's command and its end reached the listener as they happened.
      assert.ok(outcome.events.some((e) => e.type === 'command' && e.command === SOLVE));
      assert.ok(outcome.events.some((e) => e.type === 'agent-text' && e.text === 'I will write the file.'));
      // The service saw the real key, through the gateway, as Claude Code asks (the beta client).
      const turns = upstream.received.filter((r) => r.turn !== undefined);
      assert.deepEqual(turns.map((r) => r.turn), [0, 1]);
      for (const request of upstream.received) {
        assert.equal(request.headers['x-api-key'], KEY);
        assert.equal(request.headers['user-agent'], 'belay-llm-gateway');
      }
      assert.ok(turns.every((r) => r.url === '/v1/messages?beta=true'), turns.map((r) => r.url).join(', '));
      assert.equal(turns[0]!.body.model, outcome.token, 'Claude Code asked for the model the run names');
      // The run's records and Claude Code's own state are kept, and none holds the key.
      const state = path.join(result.run_dir, 'agent-state');
      assert.ok(existsSync(path.join(state, 'projects')), `Claude Code kept no session in ${state}`);
      for (const file of filesUnder(result.run_dir)) {
        if (statSync(file).size < 50_000_000) assert.ok(!readFileSync(file).includes(KEY), `${path.relative(result.run_dir, file)} holds the upstream key`);
      }
      await nothingLeft(outcome);
    });
  }

  it('keeps the agent in: its commands reach no network but the gateway and see a token, never the key', async (t) => {
    const backend = available.sandbox;
    if (backend instanceof Error) return t.skip(`sandbox: ${backend.message}`);
    const probe = await startMessagesUpstream({ key: KEY, turns: [] });
    upstreams.push(probe);
    const port = new URL(probe.url).port;
    const escape = [
      `(exec 3<>/dev/tcp/127.0.0.1/${port} && echo REACHED-UPSTREAM) 2>/dev/null || echo BLOCKED-UPSTREAM`,
      `printf '%s' "$ANTHROPIC_API_KEY" > key.txt`,
      'env > env.txt',
      '(ls /tests && echo SAW-TESTS) 2>/dev/null || echo NO-TESTS',
      '(echo x > /etc/belay-escape && echo WROTE-ETC) 2>/dev/null || echo NO-ETC',
      SOLVE,
    ].join('; ');
    const outcome = await runClaude(backend, [{ tool: 'Bash', input: { command: escape, description: 'try the ways out' } }, { text: 'Done.' }]);
    const { result } = outcome;
    assert.equal(result.passed, true, `${result.failure_cause}: ${result.error}`);
    const output = readFileSync(path.join(result.run_dir, 'steps', '0001.log'), 'utf8');
    assert.match(output, /BLOCKED-UPSTREAM/);
    assert.match(output, /NO-TESTS/);
    assert.match(output, /NO-ETC/);
    assert.equal(probe.received.length, 0, 'the agent reached the upstream directly');
    const workspace = path.join(result.run_dir, 'app');
    const seenKey = readFileSync(path.join(workspace, 'key.txt'), 'utf8');
    assert.notEqual(seenKey, KEY);
    assert.match(seenKey, /^[A-Za-z0-9_-]{20,}$/, 'the agent sees the run token as its key');
    assert.ok(!readFileSync(path.join(workspace, 'env.txt'), 'utf8').includes(KEY));
    await nothingLeft(outcome);
  });

  it('on an allowlist task: its model calls still reach the gateway, a documentation host works, a solution host is refused, logged and flagged', async (t) => {
    const backend = available.sandbox;
    if (backend instanceof Error) return t.skip(`sandbox: ${backend.message}`);
    const hosts = namedHosts({ 'docs.test': '203.0.113.30', 'solutions.test': '203.0.113.31' });
    await hosts.start();
    try {
      const hello = await loadTask(taskDir('hello'));
      const task = { ...hello, network: { agent: { mode: 'allowlist' as const, allowedHosts: ['docs.test'] }, verifier: { mode: 'no-network' as const, allowedHosts: [] } } };
      // Python's urllib goes through the proxy variables the run sets, as most tools do.
      const fetch = [
        "python3 -c 'import urllib.request as u, urllib.error as e",
        'for label, url in (("docs", "http://docs.test/guide"), ("solution", "http://solutions.test/answer.sh")):',
        '    try: code = u.urlopen(url, timeout=20).status',
        '    except e.HTTPError as x: code = x.code',
        '    except Exception: code = 0',
        "    print(label, code)' > net.txt",
      ].join('\n');
      const outcome = await runClaude(backend, [{ tool: 'Bash', input: { command: `${fetch}; ${SOLVE}`, description: 'look things up, then write hello.txt' } }, { text: 'Done.' }], {
        task,
        resolveNetwork: (host) => hosts.resolve(host),
      });
      const { result, upstream } = outcome;
      // HTTPS_PROXY is set for the agent, and Claude Code still reached its model (through the gateway, not the proxy).
      assert.equal(result.passed, true, `${result.failure_cause}: ${result.error}`);
      assert.deepEqual(upstream.received.filter((r) => r.turn !== undefined).map((r) => r.turn), [0, 1]);
      const net = readFileSync(path.join(result.run_dir, 'app', 'net.txt'), 'utf8');
      assert.match(net, /^docs 200$/m);
      assert.match(net, /^solution 403$/m);
      assert.deepEqual(hosts.seen.map((line) => line.split(' ')[0]), ['docs.test'], 'only the allowed host was reached');
      const log = readFileSync(path.join(result.run_dir, 'network.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as NetworkLogEntry);
      assert.deepEqual(log.map((e) => [e.phase, e.host, e.allowed]), [['agent', 'docs.test', true], ['agent', 'solutions.test', false]]);
      assert.ok(result.signals?.some((signal) => signal.kind === 'network_denied' && signal.detail.includes('solutions.test')), JSON.stringify(result.signals));
      await nothingLeft(outcome);
    } finally {
      await hosts.close();
    }
  });

  it('ends Claude Code and what it started at the agent time limit: agent_timeout, nothing left', async (t) => {
    const backend = available.sandbox;
    if (backend instanceof Error) return t.skip(`sandbox: ${backend.message}`);
    const marker = `belay-claude-sleeper-${process.pid}`;
    const outcome = await runClaude(backend, [{ tool: 'Bash', input: { command: `sleep 600 # ${marker}`, description: 'wait' } }], { limits: { agentTimeoutMs: 25_000 } });
    assert.equal(outcome.result.failure_cause, 'agent_timeout');
    assert.equal(outcome.result.passed, false);
    const trajectory = JSON.parse(readFileSync(path.join(outcome.result.run_dir, 'trajectory.json'), 'utf8')) as { command: string; timed_out: boolean }[];
    assert.equal(trajectory[0]!.command, `sleep 600 # ${marker}`);
    assert.equal(trajectory[0]!.timed_out, true);
    assert.deepEqual(processesWith(marker), []);
    await nothingLeft(outcome);
  });

  it('stops at its budget: the gateway refuses the next model call, the run ends budget_exceeded', async (t) => {
    const backend = available.sandbox;
    if (backend instanceof Error) return t.skip(`sandbox: ${backend.message}`);
    // The first answer spends 1240 tokens: past the budget, so the second call is refused.
    const { result, upstream, token } = await runClaude(backend, SOLVING, {}, { tokens: 1000 });
    assert.equal(result.failure_cause, 'budget_exceeded', `${result.failure_cause}: ${result.error}`);
    assert.match(result.error ?? '', /reached its LLM budget of 1000 tokens/);
    assert.equal(upstream.received.filter((r) => r.turn !== undefined).length, 1, 'a call past the budget reached the upstream');
    assert.deepEqual(processesWith(token), []);
  });

  it('says in one line that it needs a model when the run has no gateway', async (t) => {
    const backend = available.sandbox;
    if (backend instanceof Error) return t.skip(`sandbox: ${backend.message}`);
    const result = await runTask({
      task: await loadTask(taskDir('hello')),
      agentCommand: launchCommand(claudeCode, cli),
      agentCwd: cli.folder,
      backend,
      runsDir: path.join(tmp.dir, 'runs'),
      protocol: installedProtocol(claudeCode),
    });
    assert.equal(result.failure_cause, 'setup_error');
    assert.match(result.error ?? '', /^Claude Code needs a model, and its one way to a model is Belay's gateway/);
    assert.ok(!(result.error ?? '').includes('\n'));
  });

  // The command lines, from a folder of their own as a user types them: the cache is found through
  // XDG_CACHE_HOME (the tests' cache is the repository's .cache/belay/agents).
  const belayCli = path.join(repoRoot, 'dist', 'cli.js');
  const userEnv = () => ({ XDG_CACHE_HOME: path.dirname(path.dirname(testAgentCache())), BELAY_REAL_KEY: KEY });

  it('belay run --protocol claude-code, no --agent: the installed CLI solves the task, the summary counts its tokens', async (t) => {
    if (available.sandbox instanceof Error) return t.skip(`sandbox: ${available.sandbox.message}`);
    const upstream = await startMessagesUpstream({ key: KEY, turns: SOLVING, ...PACE });
    upstreams.push(upstream);
    const home = path.join(tmp.dir, 'user');
    const run = await runCli(belayCli, ['run', taskDir('hello'), '--protocol', 'claude-code', '--backend', 'sandbox', '--llm-upstream', upstream.url, '--llm-api', 'anthropic', '--llm-key-env', 'BELAY_REAL_KEY', '--out', path.join(home, 'runs')], { cwd: tmp.dir, env: userEnv() });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^hello\s+passed\s+1\s+1\s/m);
    assert.match(run.stdout, /model calls: 2 requests · 2\.48k tokens/);
    assert.match(run.stderr, /\$ printf 'Hello, world!' > hello\.txt/);
    assert.ok(!run.stderr.includes(KEY) && !run.stdout.includes(KEY));
  });

  it('belay run --protocol claude-code without an upstream: one usage line, exit 2', async () => {
    const run = await runCli(belayCli, ['run', taskDir('hello'), '--protocol', 'claude-code'], { cwd: tmp.dir, env: userEnv() });
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--protocol claude-code needs --llm-upstream URL: Claude Code reaches its model only through Belay's gateway/);
    assert.equal(run.stderr.trim().split('\n').length, 1, run.stderr);
  });

  it('belay agent doctor --protocol claude-code: installed, its version, one step through the gateway with the probe model', async (t) => {
    if (available.sandbox instanceof Error) return t.skip(`sandbox: ${available.sandbox.message}`);
    const run = await runCli(belayCli, ['agent', 'doctor', '--protocol', 'claude-code', '--json'], { cwd: tmp.dir, env: userEnv() });
    assert.equal(run.code, 0, run.stdout + run.stderr);
    const report = JSON.parse(run.stdout) as { installed: boolean; version: string; exchange: { ok: boolean; model: string; requests: number } };
    assert.equal(report.installed, true);
    assert.match(report.version, new RegExp(claudeCode.version.replace(/\./g, '\\.')));
    assert.deepEqual([report.exchange.ok, report.exchange.model, report.exchange.requests >= 2], [true, 'probe', true]);
    const missing = await runCli(belayCli, ['agent', 'doctor', '--protocol', 'claude-code'], { cwd: tmp.dir, env: { XDG_CACHE_HOME: path.join(tmp.dir, 'empty-cache') } });
    assert.equal(missing.code, 1);
    assert.match(missing.stdout, /installed {2}no/);
    assert.match(missing.stdout, /belay agent install claude-code installs @anthropic-ai\/claude-code@/);
  });
});
