// The real Gemini CLI (the pinned 0.61.0, installed through Belay's own install path), started on
// the host as the installed-agent protocol starts it (its arguments, exactly its environment plus
// PATH, a private empty HOME, LANG and TERM, stdin empty, Belay's own Node), reaching the scripted
// Gemini API only through Belay's gateway: the task's file is made by its shell call, the key is
// only at the upstream, the token only in the run, tokens are counted, and no connection goes
// anywhere but the gateway.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runBounded } from '../../../src/shared/process.ts';
import { startGateway, type Gateway } from '../../../src/runner/core/gateway/index.ts';
import type { InstalledCli } from '../../../src/runner/core/protocols/installed/install.ts';
import { geminiCli } from '../../../src/runner/core/protocols/installed/geminiCli.ts';
import type { HeadlessInput, InstalledEvent } from '../../../src/runner/core/protocols/installed/installedAgent.ts';
import { installedCli } from '../../support/runner/installed.ts';
import { startGeminiUpstream, type GeminiTurn } from '../../support/runner/upstreams/gemini.ts';
import { tempDir, type TempDir } from '../../support/temp.ts';

const KEY = 'AIzaSy-real-upstream-key-0123456789';
const MODEL = 'gemini-2.5-flash';
const HELLO: GeminiTurn[] = [
  { parts: [{ text: 'I will write the file.' }, { functionCall: { name: 'run_shell_command', args: { command: "printf 'Hello, world!' > hello.txt", description: 'Write hello.txt' } } }], usage: { prompt: 9000, candidates: 40, thoughts: 12 } },
  { parts: [{ text: 'hello.txt now holds Hello, world!' }], usage: { prompt: 9100, candidates: 12, cached: 8000 } },
];

let cli: InstalledCli;
let gateway: Gateway;
let gatewayUrl: string;
let temp: TempDir;

before(async () => {
  cli = await installedCli(geminiCli);
  gateway = startGateway();
  gatewayUrl = await gateway.listenTcp();
  temp = tempDir('belay-gemini-cli-');
});
after(async () => {
  await gateway.close();
  temp.remove();
});

/**
 * A module loaded into the CLI's Node before it starts (`--import`, so its environment stays as
 * the protocol gives it) that writes every socket it opens and every name it looks up to `log`.
 */
function connectRecorder(log: string): string {
  const code = `
import net from 'node:net'; import dns from 'node:dns'; import dgram from 'node:dgram'; import { appendFileSync } from 'node:fs';
const note = (entry) => { try { appendFileSync(${JSON.stringify(log)}, JSON.stringify(entry) + '\\n'); } catch {} };
const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...args) {
  let o = Array.isArray(args[0]) ? args[0][0] : args[0];
  if (typeof o === 'number' || (typeof o === 'string' && /^\\d+$/.test(o))) o = { port: Number(o), host: typeof args[1] === 'string' ? args[1] : 'localhost' };
  else if (typeof o === 'string') o = { path: o };
  note({ connect: o && (o.path ?? \`\${o.host ?? 'localhost'}:\${o.port}\`) });
  return connect.apply(this, args);
};
for (const target of [dns, dns.promises]) { const lookup = target.lookup; target.lookup = function (host, ...rest) { note({ lookup: host }); return lookup.call(this, host, ...rest); }; }
const send = dgram.Socket.prototype.send;
dgram.Socket.prototype.send = function (...args) { note({ udp: args.slice(1).filter((a) => typeof a !== 'function').join(' ') }); return send.apply(this, args); };
`;
  return `--import=data:text/javascript;base64,${Buffer.from(code).toString('base64')}`;
}

interface CliRun {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  events: InstalledEvent[];
  input: HeadlessInput;
  env: Record<string, string>;
  dirs: { work: string; state: string; home: string };
  connects: { connect?: string; lookup?: string; udp?: string }[];
}

/** Starts the CLI as the protocol does: state files written, its argv, exactly its environment plus PATH/HOME/LANG/TERM (and `extraEnv`). */
async function runCli(name: string, token: string, instruction: string, extraEnv: Record<string, string> = {}): Promise<CliRun> {
  const root = path.join(temp.dir, name);
  const dirs = { work: path.join(root, 'work'), state: path.join(root, 'state'), home: path.join(root, 'home') };
  for (const dir of Object.values(dirs)) mkdirSync(dir, { recursive: true });
  const input: HeadlessInput = { instruction, model: MODEL, baseUrl: gatewayUrl, token, stateDir: dirs.state, workdir: dirs.work };
  for (const [file, text] of Object.entries(geminiCli.stateFiles(input))) {
    mkdirSync(path.dirname(path.join(dirs.state, file)), { recursive: true });
    writeFileSync(path.join(dirs.state, file), text, { mode: 0o600 });
  }
  const env = { ...geminiCli.environment(input), PATH: `${path.dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`, HOME: dirs.home, LANG: 'C.UTF-8', TERM: 'dumb', ...extraEnv };
  const log = path.join(root, 'connects.jsonl');
  writeFileSync(log, '');
  // Belay's own Node runs the CLI's script (its first line is `#!/usr/bin/env node`).
  const result = await runBounded({ argv: [process.execPath, connectRecorder(log), cli.bin, ...geminiCli.argv(input)], cwd: dirs.work, env, maxOutputChars: 4_000_000, timeoutMs: 180_000 });
  assert.equal(result.timedOut, false, 'the CLI finished');
  const stdout = result.stdout.text('…');
  const reader = geminiCli.events();
  const events = [...stdout.split('\n').flatMap((line) => reader.line(line)), ...(reader.end?.() ?? [])];
  const connects = readFileSync(log, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as CliRun['connects'][number]);
  return { exitCode: result.exitCode, stdout, stderr: result.stderr.text('…'), events, input, env, dirs, connects };
}

/** Every file under `dir` whose bytes hold `needle`. */
function filesHolding(dir: string, needle: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const file = path.join(entry.parentPath, entry.name);
    if (entry.isFile() && statSync(file).size < 50_000_000 && readFileSync(file).includes(needle)) found.push(file);
  }
  return found;
}

describe('Gemini CLI through the gateway', () => {
  it('solves the task with its shell call at model speed: the key only upstream, the token only in the run, tokens counted, no other connection', async () => {
    const upstream = await startGeminiUpstream({ key: KEY, turns: HELLO, firstByteSeconds: 3, trickleMs: 60, pieceChars: 6, model: MODEL });
    const grant = gateway.openRun({ runId: 'gemini-hello', upstream: { baseUrl: upstream.url, key: KEY, api: 'gemini' } });
    try {
      const run = await runCli('hello', grant.token, "Create hello.txt containing 'Hello, world!'");
      assert.equal(run.exitCode, 0, run.stderr);
      assert.equal(readFileSync(path.join(run.dirs.work, 'hello.txt'), 'utf8'), 'Hello, world!');

      // The upstream: two streamed model calls, each with the real key and never the token; the
      // shell call's result came back in the second.
      const calls = upstream.modelCalls();
      assert.equal(calls.length, 2);
      for (const call of calls) {
        assert.equal(call.call, 'streamGenerateContent');
        assert.equal(call.url, `/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`);
        assert.equal(call.key, KEY);
        assert.ok(!JSON.stringify(call.headers).includes(grant.token) && !call.raw.includes(grant.token) && !call.url.includes(grant.token), 'the token never reaches the upstream');
      }
      const contents = calls[1]!.body.contents as { role: string; parts: Record<string, unknown>[] }[];
      const response = contents.flatMap((c) => c.parts).find((p) => p.functionResponse) as { functionResponse: { name: string } } | undefined;
      assert.equal(response?.functionResponse.name, 'run_shell_command');
      assert.equal(upstream.received.length, 2, 'nothing else reached the upstream');

      // The CLI: its environment and its state hold the token, never the key.
      assert.ok(!Object.values(run.env).some((value) => value.includes(KEY)));
      assert.deepEqual(filesHolding(path.dirname(run.dirs.state), KEY), []);
      assert.ok(!run.stdout.includes(KEY) && !run.stderr.includes(KEY));
      assert.ok(readdirSync(path.join(run.dirs.state, '.gemini'), { recursive: true }).some((file) => /chats\/session-.*\.jsonl?$/.test(String(file))), 'its session is kept in the state folder');
      assert.deepEqual(readdirSync(run.dirs.home), [], 'nothing is written to HOME');

      // Its events: the words, the call with its command, the result, the end.
      const call = run.events.find((e) => e.kind === 'tool-call');
      assert.ok(call?.kind === 'tool-call');
      assert.equal(call.name, 'run_shell_command');
      assert.equal(call.command, "printf 'Hello, world!' > hello.txt");
      assert.ok(run.events.some((e) => e.kind === 'tool-result' && e.id === call.id && !e.isError));
      assert.deepEqual(run.events.at(-1), { kind: 'done', ok: true, summary: 'hello.txt now holds Hello, world!' });
      assert.deepEqual(run.events[0], { kind: 'text', text: 'I will write the file.' });

      // The gateway counted what the upstream reported (thoughts are output).
      const usage = grant.usage();
      assert.equal(usage.requests, 2);
      assert.equal(usage.input_tokens, 9000 + 9100);
      assert.equal(usage.output_tokens, 40 + 12 + 12);
      assert.ok(usage.cost_usd > 0, 'gemini-2.5-flash is priced');
      assert.deepEqual(
        grant.records().map((r) => [r.api, r.model, r.stream, r.status]),
        [
          ['gemini', MODEL, true, 200],
          ['gemini', MODEL, true, 200],
        ],
      );

      // Every socket the CLI opened went to the gateway, and it looked up no name.
      const gatewayAddress = new URL(gatewayUrl).host;
      assert.ok(run.connects.length > 0, 'the recorder saw the connections');
      assert.deepEqual(
        run.connects.filter((c) => c.connect !== gatewayAddress),
        [],
      );
    } finally {
      grant.close();
      await upstream.close();
    }
  });

  it("ends at once when the run's budget is spent, saying so in its events", async () => {
    const upstream = await startGeminiUpstream({ key: KEY, turns: HELLO, model: MODEL });
    const grant = gateway.openRun({ runId: 'gemini-budget', upstream: { baseUrl: upstream.url, key: KEY, api: 'gemini' }, budget: { tokens: 100 } });
    try {
      const run = await runCli('budget', grant.token, "Create hello.txt containing 'Hello, world!'");
      assert.notEqual(run.exitCode, 0);
      assert.equal(upstream.modelCalls().length, 1, 'the refused call never reached the upstream, and the CLI did not retry it there');
      assert.equal(grant.budgetExceeded, true);
      assert.deepEqual(grant.records().map((r) => r.status), [200, 402]);
      const last = run.events.slice(-2);
      assert.equal(last[0]?.kind, 'error');
      assert.match(last[0]?.kind === 'error' ? last[0].message : '', /^API error 402: Belay: this run's LLM budget is spent/);
      assert.equal(last[1]?.kind === 'done' && last[1].ok, false);
    } finally {
      grant.close();
      await upstream.close();
    }
  });

  it('sends everything through a proxy when one is set, and only ever to the gateway', async () => {
    const upstream = await startGeminiUpstream({ key: KEY, turns: HELLO, model: MODEL });
    const grant = gateway.openRun({ runId: 'gemini-proxy', upstream: { baseUrl: upstream.url, key: KEY, api: 'gemini' } });
    // A proxy that records every request and tunnel asked of it and passes on only those for the gateway.
    const asked: string[] = [];
    const gatewayOrigin = new URL(gatewayUrl).origin;
    const proxy = http.createServer((req, res) => {
      asked.push(`${req.method} ${req.url}`);
      const target = URL.canParse(req.url ?? '') ? new URL(req.url!) : undefined;
      if (!target || target.origin !== gatewayOrigin) {
        res.writeHead(502).end();
        req.resume();
        return;
      }
      const onward = http.request(target, { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      onward.on('error', () => res.destroy());
      req.pipe(onward);
    });
    // undici's proxy agent tunnels even plain-HTTP requests: a tunnel to the gateway is let through.
    proxy.on('connect', (req, socket: Socket, head: Buffer) => {
      asked.push(`CONNECT ${req.url}`);
      if (req.url !== new URL(gatewayUrl).host) {
        socket.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
        return;
      }
      const onward = connect(Number(new URL(gatewayUrl).port), '127.0.0.1', () => {
        socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        onward.write(head);
        onward.pipe(socket);
        socket.pipe(onward);
      });
      onward.on('error', () => socket.destroy());
      socket.on('error', () => onward.destroy());
    });
    proxy.listen(0, '127.0.0.1');
    await once(proxy, 'listening');
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      // An instruction that looks like options and spans lines still reaches the model whole.
      const instruction = "--help -m other\nCreate hello.txt containing 'Hello, world!'";
      const run = await runCli('proxy', grant.token, instruction, { HTTPS_PROXY: proxyUrl, HTTP_PROXY: proxyUrl, https_proxy: proxyUrl, http_proxy: proxyUrl });
      assert.equal(run.exitCode, 0, run.stderr);
      assert.equal(readFileSync(path.join(run.dirs.work, 'hello.txt'), 'utf8'), 'Hello, world!');
      assert.ok(asked.length >= 1, `the CLI used the proxy (${asked.length} requests)`);
      assert.deepEqual(
        asked.filter((line) => line !== `CONNECT ${new URL(gatewayUrl).host}` && !line.startsWith(`POST ${gatewayOrigin}/v1beta/models/${MODEL}:streamGenerateContent`)),
        [],
      );
      assert.equal(upstream.modelCalls().length, 2);
      const first = upstream.modelCalls()[0]!.body.contents as { parts: { text?: string }[] }[];
      assert.ok(first[0]!.parts.some((part) => part.text === instruction), 'the instruction reached the model as it was given');
      assert.equal(upstream.modelCalls()[0]!.model, MODEL);
    } finally {
      grant.close();
      proxy.closeAllConnections();
      proxy.close();
      await upstream.close();
    }
  });
});
