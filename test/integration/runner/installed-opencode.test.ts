// The real OpenCode CLI (the pinned `opencode-ai`, installed through Belay's own install path),
// started on the host as the installed-agent protocol starts it: `opencode.argv(input)` in a
// temporary working folder, with exactly `opencode.environment(input)` plus PATH, a private empty
// HOME, LANG and TERM, stdin empty, its state files written first. Its model is a scripted chat
// completions service on 127.0.0.1 reached only through Belay's gateway, at a model's pace in the
// first case. Each case asserts what the CLI did (the task's file), what its event stream said
// (read by the descriptor's reader), what the service saw, what the gateway counted, and that
// nothing is left running.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { startGateway, type Gateway, type RunGrant } from '../../../src/runner/core/gateway/index.ts';
import type { InstalledCli } from '../../../src/runner/core/protocols/installed/install.ts';
import type { HeadlessInput, InstalledEvent } from '../../../src/runner/core/protocols/installed/installedAgent.ts';
import { opencode } from '../../../src/runner/core/protocols/installed/opencode.ts';
import { processesWith, tempDir } from '../../support/runner/helpers.ts';
import { installedCli } from '../../support/runner/installed.ts';
import { startChatUpstream, type ChatTurn, type ChatUpstream } from '../../support/runner/upstreams/chat.ts';

const KEY = 'sk-proj-installed-opencode-upstream-key-7Q2';
const SOLVE = "printf 'Hello, world!' > hello.txt";
const SOLVING: ChatTurn[] = [
  { text: 'I will write the file with printf.', toolCalls: [{ name: 'bash', arguments: { command: SOLVE, description: 'Create hello.txt' } }], usage: { prompt_tokens: 9000, completion_tokens: 40 } },
  { text: 'hello.txt now holds Hello, world!', usage: { prompt_tokens: 9100, completion_tokens: 12 } },
];
/** A model's pace: seconds before the first byte, then the answer in pieces. */
const PACE = { firstByteMs: 3000, chunkMs: 30 };
/** Far above a run's few seconds: only a hung CLI reaches it. */
const RUN_LIMIT_MS = 150_000;

let cli: InstalledCli;
let gateway: Gateway;
let gatewayUrl: string;
const tmp = tempDir('belay-opencode-');
const upstreams: ChatUpstream[] = [];
let runs = 0;

before(async () => {
  cli = await installedCli(opencode);
  gateway = startGateway();
  gatewayUrl = await gateway.listenTcp();
});

after(async () => {
  await gateway?.close();
  await Promise.all(upstreams.map((u) => u.close()));
  tmp.remove();
});

interface Outcome {
  exitCode: number | null;
  events: InstalledEvent[];
  stderr: string;
  upstream: ChatUpstream;
  grant: RunGrant;
  input: HeadlessInput;
  env: Record<string, string>;
  /** In the instruction, so on OpenCode's command line: what the run left running carries it. */
  marker: string;
}

interface RunOptions {
  turns: ChatTurn[];
  pace?: { firstByteMs: number; chunkMs: number };
  /** Variables added to the run's environment (the proxy case). */
  extraEnv?: Record<string, string>;
  /** State files left out (the case that shows what they keep away). */
  withoutStateFiles?: string[];
  /** The instruction's text before the run's marker (default: the hello task's). */
  instruction?: string;
}

async function runOpenCode(options: RunOptions): Promise<Outcome> {
  const upstream = await startChatUpstream({ key: KEY, turns: options.turns, ...options.pace });
  upstreams.push(upstream);
  const marker = `oc-it-${process.pid}-${++runs}`;
  const grant = gateway.openRun({ runId: marker, upstream: { baseUrl: upstream.url, key: KEY, api: 'openai' } });
  const root = path.join(tmp.dir, marker);
  const [stateDir, home, workdir] = ['state', 'home', 'work'].map((name) => path.join(root, name)) as [string, string, string];
  for (const dir of [stateDir, home, workdir]) mkdirSync(dir, { recursive: true });
  const input: HeadlessInput = { instruction: `${options.instruction ?? "Create hello.txt containing exactly 'Hello, world!'."} (${marker})`, model: opencode.defaultModel, baseUrl: gatewayUrl, token: grant.token, stateDir, workdir };
  for (const [name, text] of Object.entries(opencode.stateFiles(input))) {
    if (options.withoutStateFiles?.includes(name)) continue;
    mkdirSync(path.dirname(path.join(stateDir, name)), { recursive: true });
    writeFileSync(path.join(stateDir, name), text, { mode: 0o600 });
  }
  const env: Record<string, string> = { ...opencode.environment(input), PATH: '/usr/local/bin:/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8', TERM: 'dumb', ...options.extraEnv };
  const child = spawn(cli.bin, opencode.argv(input), { cwd: workdir, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const limit = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), RUN_LIMIT_MS);
  const reader = opencode.events();
  const events: InstalledEvent[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => events.push(...reader.line(line)));
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-20_000)));
  const [exitCode] = (await once(child, 'close')) as [number | null];
  clearTimeout(limit);
  grant.close();
  return { exitCode, events, stderr, upstream, grant, input, env, marker };
}

/** Every file under `dir` whose bytes hold `needle` (SQLite databases and logs included). */
function filesHolding(dir: string, needle: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name))
    .filter((file) => readFileSync(file).includes(needle));
}

/** A loopback HTTP proxy that refuses everything and records each attempt. */
async function recordingProxy(): Promise<{ url: string; attempts: string[]; close: () => Promise<void> }> {
  const attempts: string[] = [];
  const server = http.createServer((req, res) => {
    attempts.push(`${req.method} ${req.url}`);
    res.writeHead(502).end();
  });
  server.on('connect', (req: http.IncomingMessage, socket: import('node:stream').Duplex) => {
    attempts.push(`CONNECT ${req.url}`);
    socket.destroy();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const proxy = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: proxy,
    attempts,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const proxyEnv = (url: string) => ({ HTTP_PROXY: url, HTTPS_PROXY: url, http_proxy: url, https_proxy: url, NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' });

describe('OpenCode, the real CLI, through the gateway', () => {
  it("solves the task with its bash tool at a model's pace, the key only at the upstream, the tokens counted", async () => {
    const run = await runOpenCode({ turns: SOLVING, pace: PACE });
    assert.equal(run.exitCode, 0, run.stderr);
    assert.equal(readFileSync(path.join(run.input.workdir, 'hello.txt'), 'utf8'), 'Hello, world!');

    // Its events: the call with its command, the result of that call, the end.
    const call = run.events.find((event) => event.kind === 'tool-call');
    assert.deepEqual(call && [call.name, call.command], ['bash', SOLVE]);
    const result = run.events.find((event) => event.kind === 'tool-result' && event.id === call?.id);
    assert.deepEqual(result?.kind === 'tool-result' ? [result.exitCode, result.isError] : undefined, [0, false]);
    assert.deepEqual(run.events.at(-1), { kind: 'done', ok: true, summary: 'hello.txt now holds Hello, world!' });

    // The service: two streamed requests (no title request), each with the upstream key and never the token; the tool's result in the second.
    const completions = run.upstream.completions();
    assert.deepEqual(
      completions.map((request) => [request.turn, request.body.stream, request.headers.authorization]),
      [
        [0, true, `Bearer ${KEY}`],
        [1, true, `Bearer ${KEY}`],
      ],
    );
    assert.ok(!JSON.stringify(run.upstream.received.map((r) => [r.headers, r.body])).includes(run.input.token), 'the upstream never saw the run token');
    const toolMessage = (completions[1]!.body.messages as { role: string; tool_call_id?: string }[]).find((message) => message.role === 'tool');
    assert.equal(toolMessage?.tool_call_id, call?.id);

    // The CLI never had the key: not in its environment, its state folder, its working folder.
    assert.ok(!Object.values(run.env).some((value) => value.includes(KEY)));
    assert.deepEqual(filesHolding(path.dirname(run.input.stateDir), KEY), []);
    // Its state (sessions, logs) is in the state folder; its home stays empty.
    const state = readdirSync(run.input.stateDir, { recursive: true }).map(String);
    assert.ok(state.includes(path.join('data', 'opencode', 'opencode.db')), `its session database is in the state folder: ${state.join(', ')}`);
    assert.ok(state.some((file) => file.startsWith(path.join('data', 'opencode', 'log') + path.sep)), 'its logs are in the state folder');
    assert.deepEqual(readdirSync(path.join(path.dirname(run.input.stateDir), 'home')), [], 'nothing was written to its home');

    // The gateway counted what the service reported.
    const reported = run.upstream.reportedUsage();
    assert.deepEqual(
      (({ requests, input_tokens, output_tokens }) => ({ requests, input_tokens, output_tokens }))(run.grant.usage()),
      { requests: 2, input_tokens: reported.prompt_tokens, output_tokens: reported.completion_tokens },
    );
    assert.deepEqual(processesWith(run.marker), []);
  });

  it('makes no connection but to the gateway: a proxy it is given sees nothing', async () => {
    const proxy = await recordingProxy();
    try {
      const run = await runOpenCode({ turns: SOLVING, extraEnv: proxyEnv(proxy.url) });
      assert.equal(run.exitCode, 0, run.stderr);
      assert.equal(readFileSync(path.join(run.input.workdir, 'hello.txt'), 'utf8'), 'Hello, world!');
      assert.deepEqual(proxy.attempts, []);
    } finally {
      await proxy.close();
    }
  });

  it("the proxy would see its start-up npm install without the state files' npm lock (what they keep away)", async () => {
    const proxy = await recordingProxy();
    try {
      const withoutLock = Object.keys(opencode.stateFiles({ instruction: '', model: 'm', baseUrl: 'http://127.0.0.1:1', token: 't', stateDir: '/s', workdir: '/w' })).filter((name) => name.startsWith('config/opencode/'));
      // The install starts as OpenCode loads its config; the model's first seconds leave it time to knock.
      const run = await runOpenCode({ turns: SOLVING, pace: { firstByteMs: 2000, chunkMs: 0 }, extraEnv: proxyEnv(proxy.url), withoutStateFiles: withoutLock });
      assert.equal(run.exitCode, 0, run.stderr);
      assert.ok(
        proxy.attempts.some((attempt) => attempt.includes('registry.npmjs.org')),
        `OpenCode tried to reach the npm registry through the proxy: ${JSON.stringify(proxy.attempts)}`,
      );
    } finally {
      await proxy.close();
    }
  });

  it("takes a hostile instruction as its message, not as options, and reports the service's error in one event and a failed end", async () => {
    const message = "Invalid value for 'temperature': must be between 0 and 2.";
    const hostile = '--help --model other/x\n"quoted" $(touch /tmp/belay-opencode-escape) `id` \u001b[2J 42';
    const run = await runOpenCode({ turns: [{ error: { status: 400, message, code: 'invalid_value' } }], instruction: hostile });
    assert.equal(run.exitCode, 1);
    // OpenCode wraps a message that holds a space in double quotes, as for a person's `opencode run "…"`.
    const asked = run.upstream.completions()[0]!;
    const user = (asked.body.messages as { role: string; content: unknown }[]).find((m) => m.role === 'user');
    const text = typeof user?.content === 'string' ? user.content : JSON.stringify(user?.content);
    assert.equal(text, `"${run.input.instruction.replace(/"/g, '\\"')}"`);
    assert.equal(asked.body.model, 'gpt-4.1', 'the instruction set no option');
    assert.ok(!existsSync('/tmp/belay-opencode-escape'), 'nothing ran the instruction as a shell would');
    assert.deepEqual(run.events, [
      { kind: 'error', message: `APIError: ${message}` },
      { kind: 'done', ok: false, summary: `APIError: ${message}` },
    ]);
    // A 400 is not retried.
    assert.equal(run.upstream.completions().length, 1);
    assert.deepEqual(processesWith(run.marker), []);
  });
});
