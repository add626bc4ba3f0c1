// Runs whose agent calls a model through Belay's gateway, in every backend: the upstream is a real
// HTTP server on 127.0.0.1 (no provider is reachable here) that checks the key it gets. The agent
// is a plain fetch client (fixtures/runner/agents/llm-sdk1.mjs).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Backend } from '../../../src/runner/core/backends/backend.ts';
import { hostGateway, type HostedGateway, type RunLlmOptions } from '../../../src/runner/core/run/runLlm.ts';
import { readTrajectory } from '../../../src/runner/core/records/history.ts';
import { containerOrReason } from '../../support/runner/container-helpers.ts';
import { chatAnswer, sse, chatChunk, startUpstream, type FakeUpstream, type Reply } from '../../support/runner/gateway-upstream.ts';
import { backends, nodeAgent, processesWith, runFixture, tempDir, type TempDir } from '../../support/runner/helpers.ts';

const REAL_KEY = 'sk-real-key-that-must-never-enter-a-run-1f2e3d';
const SOLVE = "printf 'Hello, world!' > hello.txt";

/** Every file under `dir` (the run folder: workspace, logs, records) that holds `text`. */
function filesHolding(dir: string, text: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { recursive: true })) {
    const file = path.join(dir, String(entry));
    try {
      if (statSync(file).isFile() && readFileSync(file, 'utf8').includes(text)) found.push(file);
    } catch {
      // unreadable (a socket, a file of the sandbox's): not a record
    }
  }
  return found;
}

function seenEnv(runDir: string): Record<string, string> {
  const text = readFileSync(path.join(runDir, 'app', 'seen-env.txt'), 'utf8');
  return Object.fromEntries(text.split('\n').filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
}

const replies: Record<string, () => Reply[]> = {
  chat: () => [{ json: chatAnswer(SOLVE, { prompt_tokens: 120, completion_tokens: 30 }) }],
  'chat-stream': () => [{ stream: [sse(chatChunk("printf 'Hello, ")), sse(chatChunk("world!' > hello.txt")), sse({ id: 'c', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 120, completion_tokens: 30 } }), sse('[DONE]')] }],
  responses: () => [{ json: { id: 'r', object: 'response', model: 'gpt-4o', output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: SOLVE }] }], usage: { input_tokens: 120, output_tokens: 30, total_tokens: 150 } } }],
  proxy: () => [{ json: chatAnswer(SOLVE, { prompt_tokens: 120, completion_tokens: 30 }) }],
};

/** A streamed Messages answer, as Anthropic sends it: 80 tokens in, 20 out. */
const anthropicStream = () => [
  sse({ type: 'message_start', message: { id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], usage: { input_tokens: 80, output_tokens: 1 } } }, 'message_start'),
  sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start'),
  sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: SOLVE } }, 'content_block_delta'),
  sse({ type: 'content_block_stop', index: 0 }, 'content_block_stop'),
  sse({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 20 } }, 'message_delta'),
  sse({ type: 'message_stop' }, 'message_stop'),
];

describe('an agent calling a model through Belay’s gateway', () => {
  let upstream: FakeUpstream;
  let anthropic: FakeUpstream;
  let host: HostedGateway;
  let tmp: TempDir;
  before(async () => {
    upstream = await startUpstream('/v1');
    anthropic = await startUpstream();
    host = await hostGateway();
    tmp = tempDir('belay-llm-run-');
  });
  after(async () => {
    await host.close();
    await upstream.close();
    await anthropic.close();
    tmp.remove();
  });

  const llm = (over: Partial<RunLlmOptions> = {}): RunLlmOptions => ({ gateway: host.gateway, socketPath: host.socketPath, upstream: { baseUrl: upstream.url, key: REAL_KEY }, ...over });

  const all: { name: string; get: () => Promise<Backend | Error> }[] = [...backends, { name: 'container', get: containerOrReason }];
  for (const { name, get } of all) {
    describe(`in the ${name} backend`, () => {
      let backend: Backend | Error;
      before(async () => {
        backend = await get();
      });

      const apis = name === 'container' ? ['chat', 'proxy'] : ['chat', 'chat-stream', 'responses', 'proxy'];
      for (const api of apis) {
        it(`solves the task with the model's answer (${api}), counted per run and per step, the real key only upstream`, async (t) => {
          if (backend instanceof Error) return t.skip(backend.message);
          upstream.reply(...replies[api]!());
          const before = upstream.received.length;
          const { result } = await runFixture(backend, tmp.dir, `${nodeAgent('llm-sdk1.mjs')} ${api}`, { llm: llm() });
          assert.equal(result.passed, true, `${result.failure_cause}: ${result.error}`);
          const got = upstream.received.slice(before);
          assert.equal(got.length, 1);
          assert.equal(got[0]!.headers.authorization, `Bearer ${REAL_KEY}`);
          assert.equal(got[0]!.url, { chat: '/v1/chat/completions', 'chat-stream': '/v1/chat/completions', responses: '/v1/responses', proxy: '/v1/chat/completions' }[api]);
          assert.deepEqual(result.llm, { requests: 1, input_tokens: 120, output_tokens: 30, cost_usd: result.llm!.cost_usd });
          assert.ok(result.llm!.cost_usd > 0, 'gpt-4o has a default price');
          // Each call is listed with its latency beside the totals.
          const calls = JSON.parse(readFileSync(path.join(result.run_dir, 'llm-requests.json'), 'utf8')) as { model: string; status: number; latency_ms: number; input_tokens: number }[];
          assert.deepEqual(calls.map((c) => [c.model, c.status, c.input_tokens]), [['gpt-4o', 200, 120]]);
          assert.ok(calls[0]!.latency_ms >= 0);
          const { steps } = await readTrajectory(result.run_dir);
          assert.deepEqual(steps[0]!.llm, result.llm, 'the call belongs to step 1');
          assert.equal(steps[1]?.llm ?? null, null, 'step 2 made no call');
          // What the run was given: the gateway's URLs and a token, never the key.
          const env = seenEnv(result.run_dir);
          for (const variable of ['LLM_API_KEY', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'OPENROUTER_API_KEY']) {
            assert.ok(env[variable] && env[variable] !== REAL_KEY, `${variable} holds the run's token`);
          }
          assert.match(env.OPENAI_BASE_URL!, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
          assert.deepEqual(filesHolding(result.run_dir, REAL_KEY), []);
          // The token dies with the run.
          const token = env.OPENAI_API_KEY!;
          const tcp = await host.gateway.listenTcp();
          const late = await fetch(`${tcp}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{"model":"gpt-4o","messages":[]}' });
          assert.equal(late.status, 401);
          assert.equal(upstream.received.length, before + 1);
        });
      }

      it('stops a runaway agent at its budget with budget_exceeded, leaving nothing running', async (t) => {
        if (backend instanceof Error) return t.skip(backend.message);
        upstream.fallback = () => ({ json: chatAnswer('true', { prompt_tokens: 400, completion_tokens: 100 }) });
        const before = upstream.received.length;
        // A word of this run in the agent's command line: other Belay tests may run llm-sdk1.mjs meanwhile.
        const token = `runaway-${process.pid}-${name}`;
        const { result } = await runFixture(backend, tmp.dir, `${nodeAgent('llm-sdk1.mjs')} runaway ${token}`, { llm: llm({ budget: { tokens: 1200 } }), limits: { maxSteps: 50 } });
        assert.equal(result.failure_cause, 'budget_exceeded', String(result.error));
        assert.match(result.error ?? '', /LLM budget of 1200 tokens/);
        assert.equal(result.passed, false);
        const calls = upstream.received.length - before;
        assert.ok(calls >= 3 && calls <= 4, `the budget held the agent to a few calls (${calls})`);
        assert.equal(result.llm!.requests, calls);
        assert.deepEqual(processesWith(token), []);
      });

      it('gives the Anthropic SDK its base URL and key variable; streamed answers pass through', async (t) => {
        if (backend instanceof Error || name === 'container') return t.skip(backend instanceof Error ? backend.message : 'one API shape is enough in a container');
        anthropic.reply({ stream: anthropicStream() });
        const { result } = await runFixture(backend, tmp.dir, `${nodeAgent('llm-sdk1.mjs')} messages-stream`, { llm: llm({ upstream: { baseUrl: anthropic.url, key: REAL_KEY, api: 'anthropic' } }) });
        assert.equal(result.passed, true, `${result.failure_cause}: ${result.error}`);
        const got = anthropic.received.at(-1)!;
        assert.equal(got.headers['x-api-key'], REAL_KEY);
        assert.equal(result.llm?.input_tokens, 80);
        assert.equal(result.llm?.output_tokens, 20);
      });
    });
  }

  // The official SDK clients configure themselves from the variables the gateway sets.
  for (const client of ['openai', 'openai-stream', 'anthropic', 'anthropic-stream']) {
    it(`works with the official ${client.replace('-stream', '')} SDK client${client.endsWith('stream') ? ', streaming' : ''}, in the sandbox`, async (t) => {
      const backend = await backends[1]!.get();
      if (backend instanceof Error) return t.skip(backend.message);
      const anthropicApi = client.startsWith('anthropic');
      const target = anthropicApi ? anthropic : upstream;
      if (client === 'openai') target.reply(...replies.chat!());
      if (client === 'openai-stream') target.reply(...replies['chat-stream']!());
      if (client === 'anthropic') target.reply({ json: { id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: SOLVE }], stop_reason: 'end_turn', usage: { input_tokens: 120, output_tokens: 30 } } });
      if (client === 'anthropic-stream') target.reply({ stream: anthropicStream() });
      const before = target.received.length;
      const { result } = await runFixture(backend, tmp.dir, `${nodeAgent('sdk-clients.mjs')} ${client}`, { llm: llm(anthropicApi ? { upstream: { baseUrl: anthropic.url, key: REAL_KEY, api: 'anthropic' } } : {}) });
      assert.equal(result.passed, true, `${result.failure_cause}: ${result.error}`);
      const got = target.received.slice(before);
      assert.equal(got.length, 1);
      assert.equal(anthropicApi ? got[0]!.headers['x-api-key'] : got[0]!.headers.authorization, anthropicApi ? REAL_KEY : `Bearer ${REAL_KEY}`);
      assert.equal(got[0]!.url, anthropicApi ? '/v1/messages' : '/v1/chat/completions');
      assert.equal(result.llm?.input_tokens, anthropicApi && client.endsWith('stream') ? 80 : 120);
    });
  }

  it('keeps the tests away from the gateway: a verify phase cannot call a model', async (t) => {
    const backend = await backends[1]!.get();
    if (backend instanceof Error) return t.skip(backend.message);
    upstream.reply(...replies.chat!());
    const task = tmp.writeTask('tests-call-model', {
      'task.toml': '[metadata]\nname = "tests-call-model"\n[verifier]\ntimeout_sec = 30\n[agent]\ntimeout_sec = 60\n',
      'instruction.md': 'Create hello.txt.',
      // The agent saved its variables in seen-env.txt: the tests try the gateway's port it was given.
      'tests/test.sh': `#!/bin/bash\n[ -n "$LLM_PROXY_URL$OPENAI_BASE_URL$OPENAI_API_KEY" ] && echo "tests were given the gateway" && exit 0\nport=$(sed -n 's|^OPENAI_BASE_URL=http://127.0.0.1:\\([0-9]*\\)/v1$|\\1|p' seen-env.txt)\n[ -n "$port" ] || { echo "no port in seen-env.txt"; exit 2; }\n(exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && echo "port $port answered" && exit 0\necho "port $port is closed to the tests"; exit 1\n`,
    });
    const { loadTask } = await import('../../../src/runner/core/tasks/task.ts');
    const { result } = await runFixture(backend, tmp.dir, `${nodeAgent('llm-sdk1.mjs')} chat`, { task: await loadTask(task), llm: llm() });
    assert.equal(result.verification?.exit_code, 1, result.verification?.output);
    assert.match(result.verification?.output ?? '', /port \d+ is closed to the tests/);
  });
});
