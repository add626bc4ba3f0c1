// The gateway serving runs from a model in the editor (a LocalModel: here a scripted one, at a
// model's pace). Over real HTTP on 127.0.0.1: each API shape whole and streamed, refusals in the
// shape's own words, consent refused, the agent going away, the run closing, the budget, the
// passthrough routes. Then real agents (the official OpenAI and Anthropic SDK clients with a tool)
// solving a task through runTask in the sandbox, their tool call round-tripping through the model.
import assert from 'node:assert/strict';
import { readFileSync, realpathSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { LlmRequestRecord } from '../../../src/runner/core/gateway/grant.ts';
import { startGateway, type Gateway, type RunGrant } from '../../../src/runner/core/gateway/index.ts';
import type { LmMessage } from '../../../src/runner/core/gateway/lmModel.ts';
import { claudeCode } from '../../../src/runner/core/protocols/installed/claudeCode.ts';
import { codex } from '../../../src/runner/core/protocols/installed/codex.ts';
import { geminiCli } from '../../../src/runner/core/protocols/installed/geminiCli.ts';
import { launchCommand } from '../../../src/runner/core/protocols/installed/install.ts';
import type { InstalledAgent } from '../../../src/runner/core/protocols/installed/installedAgent.ts';
import { installedProtocol } from '../../../src/runner/core/protocols/installedCli.ts';
import { readTrajectory } from '../../../src/runner/core/records/history.ts';
import { runTask } from '../../../src/runner/core/run/run.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';
import { installedCli } from '../../support/runner/installed.ts';
import { hostGateway, type HostedGateway } from '../../../src/runner/core/run/runLlm.ts';
import { readEvents } from '../../support/runner/lm-streams.ts';
import { ScriptedModel, wordCount } from '../../support/runner/scripted-lm.ts';
import { backends, nodeAgent, nodeDir, repoRoot, runFixture, taskDir, tempDir, type TempDir } from '../../support/runner/helpers.ts';

const SOLVE = "printf 'Hello, world!' > hello.txt";
const FAST = { firstMs: 300, everyMs: 50 };
const toolTurn = (command = SOLVE) => ({ parts: [{ type: 'text' as const, text: 'I will write the file.' }, { type: 'toolCall' as const, callId: 'call_lm_1', name: 'shell', input: { command } }] });
const textTurn = (text = 'hello.txt is written.') => ({ parts: [{ type: 'text' as const, text: text.slice(0, 6) }, { type: 'text' as const, text: text.slice(6) }] });
/** The SDK clients' packages, wherever node_modules really is (a checkout may link it from elsewhere). */
const agentFolders = [nodeDir, realpathSync(path.join(repoRoot, 'node_modules'))];
const hasToolResult = (messages: LmMessage[]) => messages.some((m) => m.parts.some((p) => p.type === 'toolResult'));

describe('the gateway serving a model in the editor', () => {
  let gateway: Gateway;
  let url: string;
  before(async () => {
    gateway = startGateway();
    url = await gateway.listenTcp();
  });
  after(() => gateway.close());

  function open(model: ScriptedModel, budget?: { tokens: number }): { grant: RunGrant; records: LlmRequestRecord[]; failures: string[] } {
    const records: LlmRequestRecord[] = [];
    const failures: string[] = [];
    const grant = gateway.openRun({ runId: 'lm', upstream: { local: model }, onRequest: (r) => records.push(r), ...(budget ? { budget } : {}) });
    grant.onFailure((message) => failures.push(message));
    return { grant, records, failures };
  }
  const post = (grant: RunGrant, route: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${url}${route}`, { method: 'POST', headers: { authorization: `Bearer ${grant.token}`, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

  it('answers a chat completion with the model’s tool call, counted by the model’s own counter', async () => {
    const model = new ScriptedModel(undefined, FAST);
    model.reply(toolTurn('ls -la'));
    const { grant, records } = open(model);
    const response = await post(grant, '/v1/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: 'List the files please' }], tools: [{ type: 'function', function: { name: 'shell', parameters: { type: 'object' } } }] });
    assert.equal(response.status, 200);
    const json = (await response.json()) as { choices: { message: { content: string; tool_calls: { function: { arguments: string } }[] }; finish_reason: string }[]; usage: { prompt_tokens: number; completion_tokens: number } };
    assert.equal(json.choices[0]!.message.content, 'I will write the file.');
    assert.deepEqual(JSON.parse(json.choices[0]!.message.tool_calls[0]!.function.arguments), { command: 'ls -la' });
    assert.equal(json.choices[0]!.finish_reason, 'tool_calls');
    assert.deepEqual(model.sent[0]!.tools.map((t) => t.name), ['shell']);
    // Input and output by the model's counter: the two counts it made.
    assert.deepEqual([json.usage.prompt_tokens, json.usage.completion_tokens], model.counts);
    assert.equal(json.usage.prompt_tokens, wordCount('List the files please\nshell\n\n{"type":"object"}'));
    assert.deepEqual(records.map((r) => [r.api, r.model, r.status, r.input_tokens, r.output_tokens, r.estimated]), [['chat', model.id, 200, model.counts[0], model.counts[1], undefined]]);
    assert.deepEqual(grant.usage(), { requests: 1, input_tokens: model.counts[0], output_tokens: model.counts[1], cost_usd: 0 });
    grant.close();
  });

  it('streams each shape’s events as the model’s parts arrive, not after the last', async () => {
    const model = new ScriptedModel(undefined, FAST);
    const { grant, records } = open(model);
    const cases: { route: string; body: Record<string, unknown>; headers?: Record<string, string>; first: (e: ReturnType<typeof readEvents>[number]) => boolean }[] = [
      { route: '/v1/messages', body: { model: 'claude', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi' }] }, headers: { 'anthropic-version': '2023-06-01' }, first: (e) => e.json.type === 'content_block_delta' },
      { route: '/v1/chat/completions', body: { model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] }, first: (e) => Boolean((e.json.choices as { delta: { content?: string } }[] | undefined)?.[0]?.delta.content) },
      { route: '/v1/responses', body: { model: 'gpt-4o', stream: true, input: 'hi' }, first: (e) => e.event === 'response.output_text.delta' },
      { route: '/llm/proxy/stream', body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }, first: (e) => Boolean((e.json.choices as { delta: { content?: string } }[] | undefined)?.[0]?.delta.content) },
    ];
    for (const c of cases) {
      let release!: () => void;
      model.reply({ ...textTurn('Hello there, agent.'), release: new Promise<void>((resolve) => (release = resolve)) });
      const response = await post(grant, c.route, c.body, c.headers);
      assert.equal(response.status, 200, c.route);
      assert.match(response.headers.get('content-type') ?? '', /text\/event-stream/);
      const reader = response.body!.getReader();
      let text = '';
      // The first text piece is readable while the model still holds the second back.
      while (!readEvents(text).some(c.first)) {
        const { value, done } = await reader.read();
        assert.ok(!done, `${c.route}: the stream ended before its first text`);
        text += Buffer.from(value).toString('utf8');
      }
      // The model holds the rest back until now: the first piece went out on its own.
      assert.equal(records.length, cases.indexOf(c), `${c.route}: the first piece came before the request was over`);
      release();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += Buffer.from(value).toString('utf8');
      }
      assert.ok(text.includes('Hello ') && text.includes('there, agent.'), c.route);
    }
    assert.deepEqual(records.map((r) => [r.api, r.stream, r.status]), [['messages', true, 200], ['chat', true, 200], ['responses', true, 200], ['proxy', true, 200]]);
    assert.ok(records.every((r) => r.input_tokens > 0 && r.output_tokens > 0 && !r.estimated));
    grant.close();
  });

  it('serves the Term Challenge proxy whole, in its own answer shape', async () => {
    const model = new ScriptedModel(undefined, FAST);
    model.reply(textTurn('echo hi'));
    const { grant } = open(model);
    const response = await post(grant, '/llm/proxy', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    const json = (await response.json()) as Record<string, unknown>;
    assert.equal(json.success, true);
    assert.equal(json.content, 'echo hi');
    assert.deepEqual(json.usage, { prompt_tokens: model.counts[0], completion_tokens: model.counts[1], total_tokens: model.counts[0]! + model.counts[1]! });
    grant.close();
  });

  it('refuses what the LM API cannot express in the shape’s own words, and notes it for the run; the model is not called', async () => {
    const model = new ScriptedModel(undefined, FAST);
    const { grant, records } = open(model);
    const anthropic = await post(grant, '/v1/messages', { model: 'c', max_tokens: 10, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AA==' } }] }] });
    assert.equal(anthropic.status, 400);
    const body = (await anthropic.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'invalid_request_error');
    assert.match(body.error.message, /^Belay gateway: the VS Code language-model API cannot express a 'image' content block/);
    const chat = await post(grant, '/v1/chat/completions', { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AA==' } }] }] });
    assert.equal(chat.status, 400);
    assert.match(((await chat.json()) as { error: { message: string } }).error.message, /'image_url' content part \(images, audio and files\)/);
    assert.equal(model.sent.length, 0);
    assert.equal(grant.usage().requests, 0, 'refused requests are recorded but not counted');
    assert.equal(records.length, 2);
    assert.match(records[0]!.note ?? '', /^a model request was refused: the VS Code language-model API cannot express a 'image' content block/);
    // What is left out is named on the served request's record.
    model.reply(textTurn());
    await (await post(grant, '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], top_p: 0.1, parallel_tool_calls: false })).json();
    assert.equal(records[2]!.note, `the VS Code model ${model.id} left out what its API cannot express: top_p, parallel_tool_calls: false`);
    grant.close();
  });

  it('answers a refused consent with 403 in the shape’s words and tells the run it cannot go on', async () => {
    const model = new ScriptedModel(undefined, FAST);
    model.reply({ refuse: { code: 'no_permissions', message: 'the person did not allow Belay to use this model' } });
    const { grant, failures } = open(model);
    const response = await post(grant, '/v1/responses', { input: 'hi' });
    assert.equal(response.status, 403);
    assert.match(((await response.json()) as { error: { message: string } }).error.message, /could not answer: the person did not allow Belay to use this model/);
    assert.deepEqual(failures, [`the VS Code model ${model.id} could not answer: the person did not allow Belay to use this model`]);
    grant.close();
  });

  it('aborts the model’s request when the agent goes away, and when the run closes', async () => {
    const model = new ScriptedModel(undefined, { firstMs: 60_000, everyMs: 60_000 });
    model.reply(textTurn(), textTurn());
    const statuses: number[] = [];
    let recorded!: () => void;
    const bothRecorded = new Promise<void>((resolve) => (recorded = resolve));
    const grant = gateway.openRun({ runId: 'lm', upstream: { local: model }, onRequest: (r) => statuses.push(r.status) === 2 && recorded() });
    // A streamed answer the run's closing must cut.
    const streaming = post(grant, '/v1/chat/completions', { stream: true, messages: [{ role: 'user', content: 'hi' }] })
      .then((r) => r.arrayBuffer())
      .then(
        () => 'ended',
        () => 'broken',
      );
    await model.whenSent(1);
    const agent = new AbortController();
    const leaving = fetch(`${url}/v1/messages`, { method: 'POST', signal: agent.signal, headers: { authorization: `Bearer ${grant.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }) }).catch(() => 'gone');
    await model.whenSent(2);
    agent.abort();
    assert.equal(await leaving, 'gone');
    await model.sent[1]!.aborted;
    grant.close();
    await model.sent[0]!.aborted;
    await bothRecorded;
    assert.deepEqual(statuses, [499, 499]);
    assert.equal(await streaming, 'broken', 'the cut stream does not look like a whole answer');
  });

  it('gives up on a silent model as on a silent upstream: 504 before the answer, the API’s error event within a stream', async () => {
    const quiet = startGateway({ upstreamIdleTimeoutMs: 1000 });
    const base = await quiet.listenTcp();
    try {
      const model = new ScriptedModel(undefined, { firstMs: 60_000, everyMs: 60_000 });
      const grant = quiet.openRun({ runId: 'quiet', upstream: { local: model } });
      const ask = (route: string, body: unknown) => fetch(`${base}${route}`, { method: 'POST', headers: { authorization: `Bearer ${grant.token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      model.reply(textTurn());
      const whole = await ask('/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(whole.status, 504);
      assert.equal(((await whole.json()) as { error: { message: string } }).error.message, `Belay gateway: the VS Code model ${model.id} sent nothing for 1 s`);
      await model.sent[0]!.aborted;
      // A stream under way: the first part comes, then the model falls silent.
      model.pace = { firstMs: 10, everyMs: 60_000 };
      model.reply(textTurn());
      const streamed = await ask('/v1/messages', { max_tokens: 5, stream: true, messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(streamed.status, 200);
      const events = readEvents(await streamed.text());
      assert.equal(events.filter((e) => e.json.type === 'content_block_delta').length, 1);
      assert.deepEqual(events.at(-1)!.json, { type: 'error', error: { type: 'api_error', message: `Belay gateway: the VS Code model ${model.id} sent nothing for 1 s`, code: 'model_failed' } });
      await model.sent[1]!.aborted;
      assert.deepEqual(grant.records().map((r) => r.status), [504, 504]);
      grant.close();
    } finally {
      await quiet.close();
    }
  });

  it('holds the run to its token budget, counted by the model’s counter', async () => {
    const model = new ScriptedModel(undefined, FAST);
    model.fallback = () => textTurn('one two three four five six seven eight');
    const { grant } = open(model, { tokens: 30 });
    const statuses: number[] = [];
    for (let i = 0; i < 6 && !statuses.includes(402); i++) {
      const response = await post(grant, '/v1/chat/completions', { messages: [{ role: 'user', content: 'a b c d e f g h i j' }] });
      statuses.push(response.status);
      await response.arrayBuffer();
    }
    assert.deepEqual(statuses, [200, 200, 402]);
    assert.ok(grant.budgetExceeded);
    assert.equal(model.sent.length, 2, 'the refused request never reached the model');
    grant.close();
  });

  it('answers the model list and Anthropic’s token counting from the model itself', async () => {
    const model = new ScriptedModel(undefined, FAST);
    const { grant } = open(model);
    const models = (await (await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${grant.token}` } })).json()) as { data: { id: string }[] };
    assert.deepEqual(models.data.map((m) => m.id), [model.id]);
    const counted = (await (await post(grant, '/v1/messages/count_tokens', { model: 'c', messages: [{ role: 'user', content: 'count these five words' }] })).json()) as { input_tokens: number };
    assert.equal(counted.input_tokens, wordCount('count these five words'));
    // A body that is not an object, or that holds what the LM API cannot take, is one line in Anthropic's shape.
    const notObject = await post(grant, '/v1/messages/count_tokens', [1, 2]);
    assert.equal(notObject.status, 400);
    assert.equal(((await notObject.json()) as { error: { message: string } }).error.message, 'Belay gateway: the request body must be a JSON object');
    const image = await post(grant, '/v1/messages/count_tokens', { messages: [{ role: 'user', content: [{ type: 'image', source: {} }] }] });
    assert.equal(image.status, 400);
    assert.match(((await image.json()) as { error: { message: string } }).error.message, /cannot express a 'image' content block/);
    assert.equal(grant.usage().requests, 0, 'counting is not a model request');
    grant.close();
  });

  it('serves the Gemini routes: generateContent, streamGenerateContent (SSE and as a list), countTokens and the model list', async () => {
    const model = new ScriptedModel(undefined, FAST);
    const { grant, records } = open(model);
    const gemini = (route: string, body?: unknown) =>
      fetch(`${url}/v1beta/models/${route}`, { method: body === undefined ? 'GET' : 'POST', headers: { 'x-goog-api-key': grant.token, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const ask = { contents: [{ role: 'user', parts: [{ text: 'four words right here' }] }], tools: [{ functionDeclarations: [{ name: 'run_shell_command', parameters: { type: 'OBJECT', properties: { command: { type: 'STRING' } } } }] }] };
    model.reply(toolTurn('ls'));
    const whole = (await (await gemini('gemini-2.5-pro:generateContent', ask)).json()) as { candidates: { content: { parts: Record<string, unknown>[] } }[]; usageMetadata: { promptTokenCount: number } };
    assert.deepEqual(whole.candidates[0]!.content.parts, [{ text: 'I will write the file.' }, { functionCall: { id: 'call_lm_1', name: 'shell', args: { command: 'ls' } } }]);
    assert.equal(whole.usageMetadata.promptTokenCount, model.counts[0]);
    assert.deepEqual(model.sent[0]!.tools[0]!.inputSchema, { type: 'object', properties: { command: { type: 'string' } } });
    model.reply(textTurn('Hello there.'));
    const sse = readEvents(await (await gemini('gemini-2.5-pro:streamGenerateContent?alt=sse', ask)).text());
    assert.deepEqual(sse.map((e) => (e.json.candidates as { content: { parts: { text?: string }[] } }[])[0]!.content.parts.map((p) => p.text).join('')), ['Hello ', 'there.', '']);
    model.reply(textTurn('As a list.'));
    const list = (await (await gemini('gemini-2.5-pro:streamGenerateContent', ask)).json()) as { candidates: { content: { parts: { text: string }[] } }[] }[];
    assert.ok(Array.isArray(list) && list.length === 1);
    assert.equal(list[0]!.candidates[0]!.content.parts[0]!.text, 'As a list.');
    assert.deepEqual(records.map((r) => [r.api, r.stream, r.status]), [['gemini', false, 200], ['gemini', true, 200], ['gemini', false, 200]]);
    // Counting and the model list answer from the model itself, uncounted.
    const counted = (await (await gemini('gemini-2.5-pro:countTokens', { contents: [{ parts: [{ text: 'two words' }] }] })).json()) as { totalTokens: number };
    assert.equal(counted.totalTokens, 2);
    const wrapped = (await (await gemini('gemini-2.5-pro:countTokens', { generateContentRequest: { contents: [{ parts: [{ text: 'three more words' }] }] } })).json()) as { totalTokens: number };
    assert.equal(wrapped.totalTokens, 3);
    const image = await gemini('gemini-2.5-pro:countTokens', { contents: [{ parts: [{ inlineData: { data: 'AA==' } }] }] });
    assert.equal(image.status, 400);
    assert.equal(((await image.json()) as { error: { status: string } }).error.status, 'INVALID_ARGUMENT');
    const listed = (await (await fetch(`${url}/v1beta/models`, { headers: { 'x-goog-api-key': grant.token } })).json()) as { models: { name: string }[] };
    assert.deepEqual(listed.models.map((m) => m.name), [`models/${model.id}`]);
    assert.equal(grant.usage().requests, 3);
    grant.close();
  });

  it('refuses a request larger than the model takes before sending it', async () => {
    const model = new ScriptedModel(undefined, FAST);
    model.maxInputTokens = 5;
    const { grant } = open(model);
    const response = await post(grant, '/v1/messages', { max_tokens: 5, messages: [{ role: 'user', content: 'one two three four five six seven' }] });
    assert.equal(response.status, 400);
    assert.match(((await response.json()) as { error: { message: string } }).error.message, /the request is 7 tokens; the VS Code model test-vendor\/scripted takes at most 5/);
    assert.equal(model.sent.length, 0);
    grant.close();
  });
});

describe('agents solving a task on a model in the editor, in the sandbox', () => {
  let host: HostedGateway;
  let tmp: TempDir;
  before(async () => {
    host = await hostGateway();
    tmp = tempDir('belay-lm-run-');
  });
  after(async () => {
    await host.close();
    tmp.remove();
  });

  for (const api of ['chat', 'chat-stream', 'responses', 'responses-stream', 'messages', 'messages-stream']) {
    it(`the official SDK client (${api}) gets the model’s tool call, the harness runs it, the result goes back`, async (t) => {
      const backend = await backends[1]!.get();
      if (backend instanceof Error) return t.skip(backend.message);
      const model = new ScriptedModel();
      model.fallback = (messages) => (hasToolResult(messages) ? textTurn() : toolTurn());
      const { result } = await runFixture(backend, tmp.dir, `${nodeAgent('lm-tools.mjs')} ${api}`, { llm: { gateway: host.gateway, socketPath: host.socketPath, upstream: { local: model } }, agentFolders });
      assert.equal(result.passed, true, `${result.failure_cause}: ${result.error}`);
      assert.equal(model.sent.length, 2);
      assert.deepEqual(model.sent[0]!.tools.map((tool) => tool.name), ['shell']);
      assert.equal(model.sent[0]!.messages[0]!.parts[0]!.type, 'text');
      // The second request carries the first's tool call and the command's result under the same id.
      const second = model.sent[1]!.messages;
      const call = second.flatMap((m) => m.parts).find((p) => p.type === 'toolCall');
      const answer = second.flatMap((m) => m.parts).find((p) => p.type === 'toolResult');
      assert.deepEqual(call, { type: 'toolCall', callId: 'call_lm_1', name: 'shell', input: { command: SOLVE } });
      assert.ok(answer && answer.type === 'toolResult' && answer.callId === 'call_lm_1' && answer.text.startsWith('exit 0'), JSON.stringify(answer));
      // Every token is the model's counter's: two counts per request.
      const sum = (from: number) => model.counts.filter((_, i) => i % 2 === from).reduce((a, b) => a + b, 0);
      assert.equal(model.counts.length, 4);
      assert.deepEqual(result.llm, { requests: 2, input_tokens: sum(0), output_tokens: sum(1), cost_usd: 0 });
      const calls = JSON.parse(readFileSync(path.join(result.run_dir, 'llm-requests.json'), 'utf8')) as LlmRequestRecord[];
      assert.deepEqual(calls.map((c) => [c.model, c.status, c.estimated ?? false]), [[model.id, 200, false], [model.id, 200, false]]);
      const { steps } = await readTrajectory(result.run_dir);
      assert.equal(steps[0]!.llm?.requests, 1, 'the tool call belongs to step 1');
    });
  }

  it('ends the run with one line when the person refuses the model', async (t) => {
    const backend = await backends[1]!.get();
    if (backend instanceof Error) return t.skip(backend.message);
    const model = new ScriptedModel(undefined, FAST);
    model.fallback = () => ({ refuse: { code: 'no_permissions', message: 'the person did not allow Belay to use this model' } });
    const { result, events } = await runFixture(backend, tmp.dir, `${nodeAgent('lm-tools.mjs')} chat`, { llm: { gateway: host.gateway, socketPath: host.socketPath, upstream: { local: model } }, agentFolders });
    assert.equal(result.passed, false);
    assert.equal(result.failure_cause, 'setup_error');
    assert.equal(result.error, `the VS Code model ${model.id} could not answer: the person did not allow Belay to use this model`);
    assert.ok(!events.some((e) => e.type === 'notice' && /\n/.test(e.message)));
  });

  it('shows the run, once, what the model’s API left out of the agent’s requests', async (t) => {
    const backend = await backends[0]!.get();
    if (backend instanceof Error) return t.skip(backend.message);
    const model = new ScriptedModel(undefined, FAST);
    model.fallback = (messages) => (hasToolResult(messages) ? textTurn() : toolTurn());
    const { result, events } = await runFixture(backend, tmp.dir, `${nodeAgent('lm-tools.mjs')} chat top_p`, { llm: { gateway: host.gateway, socketPath: host.socketPath, upstream: { local: model } }, agentFolders });
    assert.equal(result.passed, true, `${result.failure_cause}: ${result.error}`);
    assert.equal(model.sent.length, 2);
    const notices = events.flatMap((e) => (e.type === 'notice' && /left out/.test(e.message) ? [e.message] : []));
    assert.deepEqual(notices, [`the VS Code model ${model.id} left out what its API cannot express: top_p`]);
  });
});

/** Each coding CLI's shell tool, by the name and argument it offers it under. */
const SHELL_TOOLS: Record<string, { tool: string; input: Record<string, unknown> }> = {
  'claude-code': { tool: 'Bash', input: { command: SOLVE, description: 'Write hello.txt' } },
  codex: { tool: 'exec_command', input: { cmd: SOLVE } },
  'gemini-cli': { tool: 'run_shell_command', input: { command: SOLVE } },
};

describe('the real coding CLIs on a model in the editor, in the sandbox', () => {
  let host: HostedGateway;
  let tmp: TempDir;
  before(async () => {
    host = await hostGateway();
    tmp = tempDir('belay-lm-cli-');
  });
  after(async () => {
    await host.close();
    tmp.remove();
  });

  const agents: InstalledAgent[] = [claudeCode, codex, geminiCli];
  for (const agent of agents) {
    it(`${agent.title} solves the task by its shell tool call, every request served by the model and counted by its counter`, async (t) => {
      const backend = await backends[1]!.get();
      if (backend instanceof Error) return t.skip(backend.message);
      const cli = await installedCli(agent);
      const shell = SHELL_TOOLS[agent.name]!;
      const model = new ScriptedModel();
      // The main conversation (it offers the shell tool) calls it once, then answers; side requests get a line.
      model.fallback = (messages, tools) =>
        !tools.some((tool) => tool.name === shell.tool)
          ? { parts: [{ type: 'text', text: 'Hello file' }] }
          : hasToolResult(messages)
            ? textTurn('hello.txt now says Hello, world!')
            : { parts: [{ type: 'text', text: 'I will write the file.' }, { type: 'toolCall', callId: 'call_lm_cli_1', name: shell.tool, input: shell.input }] };
      const notices: string[] = [];
      const result = await runTask({
        task: await loadTask(taskDir('hello')),
        agentCommand: launchCommand(agent, cli),
        agentCwd: cli.folder,
        agentFolders: [nodeDir],
        backend,
        runsDir: path.join(tmp.dir, 'runs'),
        protocol: installedProtocol(agent),
        limits: { agentTimeoutMs: 180_000 },
        llm: { gateway: host.gateway, socketPath: host.socketPath, upstream: { local: model } },
        onEvent: (event) => event.type === 'notice' && notices.push(event.message),
      });
      assert.equal(result.passed, true, `${result.failure_cause}: ${result.error}\n${notices.join('\n')}`);
      const main = model.sent.filter((request) => request.tools.some((tool) => tool.name === shell.tool));
      assert.equal(main.length, 2, 'two turns of the main conversation');
      const answer = main[1]!.messages.flatMap((m) => m.parts).find((p) => p.type === 'toolResult');
      assert.ok(answer && answer.type === 'toolResult' && answer.callId === 'call_lm_cli_1', JSON.stringify(answer));
      // Every request reached the model, each counted twice by its counter (input, output).
      assert.equal(result.llm?.requests, model.sent.length);
      assert.equal(model.counts.length, 2 * model.sent.length);
      assert.equal((result.llm?.input_tokens ?? 0) + (result.llm?.output_tokens ?? 0), model.counts.reduce((a, b) => a + b, 0));
      const calls = JSON.parse(readFileSync(path.join(result.run_dir, 'llm-requests.json'), 'utf8')) as LlmRequestRecord[];
      assert.ok(calls.every((c) => c.status === 200 && c.model === model.id && !c.estimated), JSON.stringify(calls.map((c) => [c.status, c.error])));
      assert.ok(calls.every((c) => c.api === agent.api), `${agent.title} spoke ${agent.api}: ${calls.map((c) => c.api).join(', ')}`);
      const trajectory = JSON.parse(readFileSync(path.join(result.run_dir, 'trajectory.json'), 'utf8')) as { command: string | null }[];
      assert.ok(trajectory.some((step) => step.command?.includes("printf 'Hello, world!' > hello.txt")), JSON.stringify(trajectory.map((s) => s.command)));
      // What the LM API cannot take from the CLI's requests is one line of the run, not one per request.
      assert.ok(notices.filter((n) => n.includes('left out what its API cannot express')).length <= 1, notices.join('\n'));
    });
  }
});
