// The MCP 2026-07-28 wire module (src/cli/mcpModern.ts) held to the spec's own examples: the JSON
// shapes as the revision (basic/index, versioning, patterns/mrtr) and the tasks extension
// (io.modelcontextprotocol/tasks, 2026-07-28) give them; and the cue <-> elicitation mapping,
// URL checks and secret detection that `belay mcp` and `--wrap` build on it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { answerFromElicitation, cueElicitation } from '../../../src/cli/mcpCueElicit.ts';
import {
  complete,
  createTaskResult,
  discoverResult,
  DROPPED_CLIENT_NOTIFICATIONS,
  ElicitResult,
  envelopeMeta,
  ErrorCode,
  errorSummary,
  getTaskResult,
  initializeFromDiscover,
  InputRequiredResult,
  clientDeclares,
  isModernRequest,
  legacyServerRequest,
  MAX_INPUT_REQUEST_CHARS,
  MAX_INPUT_REQUESTS,
  notSupportedError,
  readInputRequests,
  readInputResponse,
  retryParams,
  withoutRetryChannel,
  legacyResult,
  MAX_DISCOVER_CHARS,
  missingCapability,
  readDiscover,
  readEnvelope,
  refusesInitialize,
  RetryParams,
  StateSeal,
  supportsFormElicitation,
  supportsTasks,
  supportsUrlElicitation,
  TaskUpdateParams,
  withElicitation,
  withEnvelope,
  type TaskView,
} from '../../../src/cli/mcpModern.ts';
import { commandLabel, startTimeoutMs, START_TIMEOUT_MS } from '../../../src/cli/mcpBridge.ts';
import { secretField, urlCue, urlElicitation } from '../../../src/cli/mcpUrl.ts';

/** patterns/mrtr: "InputRequiredResult" (its comments dropped: JSON has none). */
const SPEC_INPUT_REQUIRED = {
  jsonrpc: '2.0',
  id: 1,
  result: {
    resultType: 'input_required',
    inputRequests: {
      github_login: {
        method: 'elicitation/create',
        params: { mode: 'form', message: 'Please provide your GitHub username', requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
      },
      capital_of_france: {
        method: 'sampling/createMessage',
        params: {
          messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }],
          modelPreferences: { hints: [{ name: 'claude-3-sonnet' }], intelligencePriority: 0.8, speedPriority: 0.5 },
          systemPrompt: 'You are a helpful assistant.',
          maxTokens: 100,
        },
      },
    },
    requestState: 'AEAD-protected blob',
  },
};

/** patterns/mrtr: "InputResponses". */
const SPEC_INPUT_RESPONSES = {
  github_login: { action: 'accept', content: { name: 'octocat' } },
  capital_of_france: { role: 'assistant', content: { type: 'text', text: 'The capital of France is Paris.' }, model: 'claude-3-sonnet-20240307', stopReason: 'endTurn' },
};

/** versioning: the UnsupportedProtocolVersion error. */
const SPEC_UNSUPPORTED = { jsonrpc: '2.0', id: 1, error: { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2026-07-28', '2025-11-25'], requested: '1900-01-01' } } };

/** Tasks extension: the client's per-request capabilities, and the server's missing-capability error. */
const SPEC_TASKS_REQUEST = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'hello_world', arguments: {}, _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } } } };
const SPEC_MISSING_CAPABILITY = { code: -32021, message: 'Missing required client capability', data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } } };

/** Tasks extension: the CreateTaskResult and the input_required tasks/get result of its message flow. */
const SPEC_CREATE_TASK = {
  resultType: 'task',
  taskId: '786512e2-9e0d-44bd-8f29-789f320fe840',
  status: 'working',
  createdAt: '2025-11-25T10:30:00Z',
  lastUpdatedAt: '2025-11-25T10:50:00Z',
  ttlMs: 3600000,
  pollIntervalMs: 5000,
};
const SPEC_TASK_INPUT_REQUIRED = {
  resultType: 'complete',
  taskId: '786512e2-9e0d-44bd-8f29-789f320fe840',
  status: 'input_required',
  createdAt: '2025-11-25T10:30:00Z',
  lastUpdatedAt: '2025-11-25T10:50:00Z',
  ttlMs: 3600000,
  pollIntervalMs: 5000,
  inputRequests: {
    name: {
      method: 'elicitation/create',
      params: { mode: 'form', message: 'Please enter your name.', requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
    },
  },
};
const SPEC_TASK_UPDATE = { taskId: '786512e2-9e0d-44bd-8f29-789f320fe840', inputResponses: { name: { action: 'accept', content: { input: 'Luca' } } } };
const SPEC_TASK_COMPLETED = {
  resultType: 'complete',
  taskId: '786512e2-9e0d-44bd-8f29-789f320fe840',
  status: 'completed',
  createdAt: '2025-11-25T10:30:00Z',
  lastUpdatedAt: '2025-11-25T10:50:00Z',
  ttlMs: 3600000,
  pollIntervalMs: 5000,
  result: { content: [{ type: 'text', text: 'Hello, Luca!' }], isError: false },
};

const envelope = (meta: Record<string, unknown>) => ({ _meta: meta });
const V = 'io.modelcontextprotocol/protocolVersion';
const C = 'io.modelcontextprotocol/clientCapabilities';

describe('MCP 2026-07-28 on the wire, by the spec\'s examples', () => {
  it('reads the spec\'s InputRequiredResult and InputResponses', () => {
    const parsed = InputRequiredResult.parse(SPEC_INPUT_REQUIRED.result);
    assert.deepEqual(Object.keys(parsed.inputRequests!), ['github_login', 'capital_of_france']);
    assert.equal(parsed.requestState, 'AEAD-protected blob');
    assert.equal(InputRequiredResult.safeParse({ resultType: 'complete', content: [] }).success, false, 'a complete result is not one');
    assert.deepEqual(ElicitResult.parse(SPEC_INPUT_RESPONSES.github_login), { action: 'accept', content: { name: 'octocat' } });
    assert.equal(ElicitResult.safeParse(SPEC_INPUT_RESPONSES.capital_of_france).success, false, 'a sampling result is no elicitation result');
    const retry = RetryParams.parse({ name: 't', inputResponses: SPEC_INPUT_RESPONSES, requestState: 'AEAD-protected blob' });
    assert.equal(retry.requestState, 'AEAD-protected blob');
  });

  it('answers the spec\'s unknown revision with its error code and data; refuses bad envelopes with one line', () => {
    const read = readEnvelope(envelope({ [V]: '1900-01-01', [C]: {} }));
    assert.ok('error' in read);
    assert.equal(read.error.code, SPEC_UNSUPPORTED.error.code);
    const data = read.error.data as { supported: string[]; requested: string };
    assert.equal(data.requested, SPEC_UNSUPPORTED.error.data.requested);
    for (const version of SPEC_UNSUPPORTED.error.data.supported) assert.ok(data.supported.includes(version), version);
    assert.match(read.error.message, /speaks 2026-07-28 .* and 2025-11-25/);

    const problems: Array<[unknown, RegExp]> = [
      [undefined, /params must be an object/],
      [{ _meta: [] }, /_meta must be an object/],
      [envelope({ [V]: '2026-07-28' }), /lacks "io\.modelcontextprotocol\/clientCapabilities"/],
      [envelope({ [V]: '2026-07-28', [C]: { extensions: 'all' } }), /\.extensions is malformed/],
      [envelope({ [V]: '2026-07-28', [C]: {}, big: 'x'.repeat(70_000) }), /at most 65536 are read/],
    ];
    for (const [params, why] of problems) {
      const bad = readEnvelope(params);
      assert.ok('error' in bad && bad.error.code === ErrorCode.invalidParams, String(why));
      assert.match(bad.error.message, why);
    }
    const cyclic: Record<string, unknown> = { [V]: '2026-07-28', [C]: {} };
    cyclic.self = cyclic;
    assert.ok('error' in readEnvelope({ _meta: cyclic }));
    const good = readEnvelope(envelope({ [V]: '2026-07-28', [C]: { elicitation: { form: {} } }, 'io.modelcontextprotocol/clientInfo': { name: 'c', version: '1' } }));
    assert.ok('envelope' in good);
    assert.equal(good.envelope.clientInfo?.name, 'c');
  });

  it('tells the eras apart per request, and reads capabilities as the spec spells them', () => {
    assert.equal(isModernRequest({ id: 1, method: 'tools/list', params: envelope({ [V]: '2026-07-28' }) }), true);
    assert.equal(isModernRequest({ id: 1, method: 'tools/list', params: {} }), false);
    assert.equal(isModernRequest({ id: 1, method: 'initialize', params: envelope({ [V]: '2026-07-28' }) }), false, 'an initialize is the older era');
    assert.equal(isModernRequest({ method: 'notifications/cancelled', params: envelope({ [V]: '2026-07-28' }) }), false, 'notifications are not requests');
    assert.equal(supportsTasks(SPEC_TASKS_REQUEST.params._meta[C]), true);
    assert.equal(supportsTasks({}), false);
    assert.equal(supportsFormElicitation({ elicitation: {} }), true, 'an empty object means form');
    assert.equal(supportsFormElicitation({ elicitation: { url: {} } }), false);
    assert.equal(supportsUrlElicitation({ elicitation: { url: {} } }), true);
    assert.deepEqual(withElicitation({}), { elicitation: { form: {}, url: {} } });
    assert.deepEqual(withElicitation({ elicitation: {} }), { elicitation: { form: {}, url: {} } });
    assert.deepEqual(withElicitation({ elicitation: { url: { a: 1 } }, roots: {} }), { elicitation: { url: { a: 1 }, form: {} }, roots: {} });
  });

  it('writes discover, results, tasks and errors in the spec\'s shapes', () => {
    const discovered = discoverResult({ name: 'belay', version: '1', instructions: 'hi', tasks: true }) as Record<string, unknown>;
    assert.equal(discovered.resultType, 'complete');
    assert.deepEqual(Object.keys(discovered).sort(), ['_meta', 'cacheScope', 'capabilities', 'instructions', 'resultType', 'supportedVersions', 'ttlMs']);
    assert.deepEqual((discovered._meta as Record<string, unknown>)['io.modelcontextprotocol/serverInfo'], { name: 'belay', version: '1' });
    assert.deepEqual(complete({}), { resultType: 'complete' }, 'the spec\'s tasks/update acknowledgement');
    assert.deepEqual(missingCapability({ extensions: { 'io.modelcontextprotocol/tasks': {} } }, SPEC_MISSING_CAPABILITY.message), SPEC_MISSING_CAPABILITY);

    const { resultType: _created, ...seed } = SPEC_CREATE_TASK;
    const working: TaskView = { ...(seed as Omit<TaskView, 'status'>), status: 'working' };
    assert.deepEqual(createTaskResult({ ...working, inputRequests: {} }), SPEC_CREATE_TASK, 'a CreateTaskResult carries no payload');
    const { resultType: _got, ...waiting } = SPEC_TASK_INPUT_REQUIRED;
    assert.deepEqual(getTaskResult(waiting as TaskView), SPEC_TASK_INPUT_REQUIRED);
    const { resultType: _done, ...completed } = SPEC_TASK_COMPLETED;
    assert.deepEqual(getTaskResult(completed as TaskView), SPEC_TASK_COMPLETED);
    const update = TaskUpdateParams.parse(SPEC_TASK_UPDATE);
    assert.deepEqual(ElicitResult.parse(update.inputResponses.name), { action: 'accept', content: { input: 'Luca' } });
  });

  it('seals requestState: what was sealed comes back; altered, foreign, expired or malformed state does not', () => {
    const seal = new StateSeal();
    const token = seal.seal({ rid: 'req_1', call: 'abc' }, 60_000, 1_000);
    const opened = seal.open(token, 2_000);
    assert.ok('value' in opened);
    assert.equal(opened.value.rid, 'req_1');
    assert.match(JSON.stringify(seal.open(token, 70_000)), /expired/);
    assert.match(JSON.stringify(new StateSeal().open(token, 2_000)), /not issued by this server, or was altered/);
    const [body, mac] = token.split('.') as [string, string];
    const altered = Buffer.from(Buffer.from(body, 'base64url').toString('utf8').replace('req_1', 'req_2')).toString('base64url');
    assert.match(JSON.stringify(seal.open(`${altered}.${mac}`, 2_000)), /altered/);
    for (const bad of ['', '.', 'a.b.c', 'x'.repeat(70_000), `${body}.`]) assert.ok('problem' in seal.open(bad, 2_000), bad.slice(0, 10));
  });
});

describe('a 2025-11-25 client in front of a 2026-07-28 server (--wrap\'s era bridge), pure', () => {
  const discovered = discoverResult({ name: 'belay', title: 'Belay', version: '1.2', instructions: 'Ask me.', tasks: false });

  it('takes a refused initialize for a stateless server only when the error says method or version', () => {
    assert.equal(refusesInitialize({ code: ErrorCode.methodNotFound, message: 'Method not found' }), true);
    assert.equal(refusesInitialize({ code: ErrorCode.unsupportedProtocolVersion, message: 'Unsupported protocol version', data: { supported: ['2026-07-28'] } }), true);
    assert.equal(refusesInitialize({ code: ErrorCode.invalidParams, message: 'bad' }), false, 'any other refusal is the client\'s to read');
    assert.equal(refusesInitialize('nope'), false);
    assert.equal(errorSummary({ code: -32601, message: 'Method\n  not   found' }), '-32601 Method not found');
    assert.equal(errorSummary({ code: -1, message: 'x'.repeat(500) }).length, 203);
    assert.equal(errorSummary(['?']), 'an error of no known shape');
  });

  it('answers initialize from a discover result, in the client\'s own legacy version or else 2025-11-25', () => {
    const read = readDiscover(discovered);
    assert.ok('discovered' in read, JSON.stringify(read));
    assert.deepEqual(initializeFromDiscover(read.discovered, '2025-06-18', 'srv'), {
      protocolVersion: '2025-06-18',
      capabilities: { tools: {} },
      serverInfo: { name: 'belay', title: 'Belay', version: '1.2' },
      instructions: 'Ask me.',
    });
    for (const asked of ['2026-07-28', '1999-01-01', 7, undefined]) assert.equal(initializeFromDiscover(read.discovered, asked, 'srv').protocolVersion, '2025-11-25', String(asked));
    const bare = readDiscover({ supportedVersions: ['2026-07-28'], capabilities: {} });
    assert.ok('discovered' in bare);
    assert.deepEqual(initializeFromDiscover(bare.discovered, '2025-11-25', 'srv'), { protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 'srv', version: 'unknown' } }, 'a server that names itself not is named by its command');
  });

  it('says in one line what is wrong with a discover answer', () => {
    const problem = (result: unknown) => {
      const read = readDiscover(result);
      return 'problem' in read ? read.problem : 'usable';
    };
    assert.equal(problem('tools'), 'its result is a string, not an object');
    assert.equal(problem(null), 'its result is null, not an object');
    assert.equal(problem([discovered]), 'its result is an array, not an object');
    assert.match(problem({ ...discovered, instructions: 'x'.repeat(MAX_DISCOVER_CHARS) }), /^its result is \d+ characters of JSON; at most 1048576 are read$/);
    assert.match(problem({ supportedVersions: ['2026-07-28'] }), /^its result's capabilities is malformed: /);
    assert.match(problem({ supportedVersions: '2026-07-28', capabilities: {} }), /^its result's supportedVersions is malformed: /);
    assert.match(problem({ ...discovered, _meta: { 'io.modelcontextprotocol/serverInfo': { name: 7 } } }), /^its result's _meta\.io\.modelcontextprotocol\/serverInfo\.name is malformed/);
    assert.equal(problem({ supportedVersions: ['2025-11-25', 'x'.repeat(100)], capabilities: {} }), `it supports "2025-11-25", "${'x'.repeat(40)}", not 2026-07-28`);
    assert.equal(problem({ supportedVersions: [], capabilities: {} }), 'it supports none, not 2026-07-28');
  });

  it('wraps each request in the envelope, keeping what its _meta held, and reads results as the old era does', () => {
    const meta = envelopeMeta(withElicitation({ roots: {} }), { name: 'vscode', version: '1.107' });
    assert.deepEqual(meta, {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': { roots: {}, elicitation: { form: {}, url: {} } },
      'io.modelcontextprotocol/clientInfo': { name: 'vscode', version: '1.107' },
    });
    assert.equal(Object.hasOwn(envelopeMeta({}, { version: 'no name' }), 'io.modelcontextprotocol/clientInfo'), false, 'info without a name is left out');
    const request = { jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'x', _meta: { progressToken: 3, 'io.modelcontextprotocol/protocolVersion': '2025-11-25' } } };
    const wrapped = withEnvelope(request, meta);
    assert.deepEqual(wrapped.params, { name: 'x', _meta: { progressToken: 3, ...meta } }, 'the envelope\'s keys win');
    assert.equal(isModernRequest(wrapped), true, 'the bridge\'s requests are of the new era');
    const ping: { id: number; method: string; params?: unknown } = { id: 1, method: 'ping' };
    assert.deepEqual(withEnvelope(ping, meta).params, { _meta: meta }, 'no params: the envelope alone');
    const odd = { id: 1, method: 'x', params: [1, 2] };
    assert.equal(withEnvelope(odd, meta), odd, 'params of no allowed shape are left as they came');

    assert.deepEqual(legacyResult({ resultType: 'complete', content: [], _meta: { a: 1 } }), { content: [], _meta: { a: 1 } });
    assert.deepEqual(legacyResult(complete({})), {});
    assert.equal(legacyResult({ content: [] }), undefined, 'nothing to drop');
    assert.equal(legacyResult({ resultType: 'input_required', inputRequests: {} }), undefined, 'the bridge deals with the others');
    assert.equal(legacyResult('x'), undefined);
    assert.deepEqual([...DROPPED_CLIENT_NOTIFICATIONS].sort(), ['notifications/initialized', 'notifications/roots/list_changed']);
  });
});

/** The schema's examples (schema/2026-07-28/examples): a state-only InputRequiredResult, the roots request and results. */
const SPEC_STATE_ONLY = { resultType: 'input_required', requestState: 'eyJwcm9ncmVzcyI6IjUwJSIsInN0YXRlIjoicHJvY2Vzc2luZyJ9' };
const SPEC_LIST_ROOTS = { method: 'roots/list' };
const SPEC_ROOTS = { roots: [{ uri: 'file:///home/user/repos/frontend', name: 'Frontend Repository' }, { uri: 'file:///home/user/repos/backend', name: 'Backend Repository' }] };
/** 2025-11-25 client/roots and client/sampling: a client's errors for a request it does not support or the user rejected. */
const SPEC_ROOTS_NOT_SUPPORTED = { code: -32601, message: 'Roots not supported', data: { reason: 'Client does not have roots capability' } };

describe('input requests of a 2026-07-28 server asked of a bridged 2025-11-25 client, pure', () => {
  it('reads the spec\'s InputRequiredResults: mixed elicitation and sampling with state, and state alone', () => {
    const mixed = readInputRequests(SPEC_INPUT_REQUIRED.result);
    assert.ok('inputs' in mixed, JSON.stringify(mixed));
    assert.deepEqual(mixed.inputs.map((i) => [i.key, i.method]), [['github_login', 'elicitation/create'], ['capital_of_france', 'sampling/createMessage']]);
    assert.deepEqual(mixed.inputs[1]!.params, SPEC_INPUT_REQUIRED.result.inputRequests.capital_of_france.params);
    assert.equal(mixed.requestState, 'AEAD-protected blob');
    assert.deepEqual(readInputRequests(SPEC_STATE_ONLY), { inputs: [], requestState: SPEC_STATE_ONLY.requestState });
    const roots = readInputRequests({ resultType: 'input_required', inputRequests: { r: SPEC_LIST_ROOTS } });
    assert.deepEqual(roots, { inputs: [{ key: 'r', method: 'roots/list' }] }, 'no params, no state: none invented');
  });

  it('refuses, in one line each, what no server should ask: nothing, a flood, oversized, unknown or malformed requests', () => {
    const problem = (result: unknown) => {
      const read = readInputRequests(result);
      return 'problem' in read ? read.problem : 'answerable';
    };
    assert.equal(problem({ resultType: 'input_required' }), 'it asked for input and named nothing (neither inputRequests nor requestState)');
    assert.equal(problem({ resultType: 'input_required', inputRequests: {} }), 'it asked for input and named nothing (neither inputRequests nor requestState)');
    const flood = Object.fromEntries(Array.from({ length: MAX_INPUT_REQUESTS + 1 }, (_, i) => [`k${i}`, SPEC_LIST_ROOTS]));
    assert.equal(problem({ inputRequests: flood }), `it asked ${MAX_INPUT_REQUESTS + 1} things at once; at most ${MAX_INPUT_REQUESTS} are answered`);
    assert.equal(problem({ inputRequests: Object.fromEntries(Object.entries(flood).slice(0, MAX_INPUT_REQUESTS)) }), 'answerable', 'the limit itself is answered');
    const huge = { method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'y'.repeat(MAX_INPUT_REQUEST_CHARS) } }], maxTokens: 1 } };
    assert.match(problem({ inputRequests: { big: huge } }), /^its sampling\/createMessage input request "big" is \d+ characters of JSON; at most 4194304 are passed on$/);
    assert.equal(problem({ inputRequests: { x: { method: 'tools/call', params: {} } } }), 'its input request "x" is "tools/call", none of elicitation/create, sampling/createMessage, roots/list');
    assert.equal(problem({ inputRequests: { ['\u001b[31mred']: { method: '\u001b]0;title\u0007' } } }), 'its input request "?[31mred" is "?]0;title?", none of elicitation/create, sampling/createMessage, roots/list', 'escape sequences never reach a terminal');
    assert.equal(problem({ inputRequests: { x: 'roots/list' } }), 'its input request "x" is no request (an object naming its method)');
    assert.equal(problem({ inputRequests: { ['k'.repeat(257)]: SPEC_LIST_ROOTS } }), 'an input request\'s key is 257 characters; 1 to 256 are read');
    assert.equal(problem({ inputRequests: [SPEC_LIST_ROOTS] }), 'its inputRequests is not an object');
    assert.equal(problem({ inputRequests: { r: SPEC_LIST_ROOTS }, requestState: { forged: true } }), 'its requestState is not a string');
    assert.equal(problem('input_required'), 'its result is not an object');
  });

  it('keeps a `__proto__` key as the key it is, out and back', () => {
    const read = readInputRequests(JSON.parse('{"resultType":"input_required","inputRequests":{"__proto__":{"method":"roots/list"}}}'));
    assert.ok('inputs' in read);
    assert.deepEqual(read.inputs.map((i) => i.key), ['__proto__']);
    const params = retryParams({ name: 't' }, [['__proto__', SPEC_ROOTS]], undefined);
    assert.equal(JSON.stringify(params), `{"name":"t","inputResponses":{"__proto__":${JSON.stringify(SPEC_ROOTS)}}}`);
  });

  it('asks the client only what it declared; otherwise the 2025-11-25 spec\'s error, as that client would have answered', () => {
    assert.equal(clientDeclares({ sampling: {} }, 'sampling/createMessage'), true);
    assert.equal(clientDeclares({ roots: { listChanged: true } }, 'roots/list'), true);
    assert.equal(clientDeclares({ roots: {} }, 'sampling/createMessage'), false);
    assert.equal(clientDeclares({}, 'roots/list'), false);
    assert.equal(clientDeclares({ elicitation: {} }, 'elicitation/create'), true, 'the older spelling of form elicitation');
    assert.equal(clientDeclares({ elicitation: { url: {} } }, 'elicitation/create'), false, 'URL mode alone shows no form');
    assert.equal(clientDeclares({ sampling: 'yes' }, 'sampling/createMessage'), false, 'a malformed declaration declares nothing');
    assert.equal(clientDeclares({ sampling: {} }, 'tools/call'), false);
    assert.deepEqual(notSupportedError('roots/list'), SPEC_ROOTS_NOT_SUPPORTED);
    assert.deepEqual(notSupportedError('sampling/createMessage'), { code: -32601, message: 'Sampling not supported', data: { reason: 'Client does not have sampling capability' } });
  });

  it('writes each input request as the 2025-11-25 request it was, and reads the client\'s results as the spec types them', () => {
    const [, sampling] = (readInputRequests(SPEC_INPUT_REQUIRED.result) as { inputs: Array<{ key: string; method: string; params?: unknown }> }).inputs;
    assert.deepEqual(legacyServerRequest('belay-x-input-1', sampling!), { jsonrpc: '2.0', id: 'belay-x-input-1', method: 'sampling/createMessage', params: SPEC_INPUT_REQUIRED.result.inputRequests.capital_of_france.params });
    assert.deepEqual(legacyServerRequest(4, { key: 'r', ...SPEC_LIST_ROOTS }), { jsonrpc: '2.0', id: 4, method: 'roots/list' }, 'the spec\'s roots request has no params');
    assert.deepEqual(readInputResponse('sampling/createMessage', SPEC_INPUT_RESPONSES.capital_of_france), { response: SPEC_INPUT_RESPONSES.capital_of_france });
    assert.deepEqual(readInputResponse('roots/list', SPEC_ROOTS), { response: SPEC_ROOTS });
    assert.deepEqual(readInputResponse('elicitation/create', SPEC_INPUT_RESPONSES.github_login), { response: SPEC_INPUT_RESPONSES.github_login });
    const problem = (method: string, result: unknown) => {
      const read = readInputResponse(method, result);
      return 'problem' in read ? read.problem : 'usable';
    };
    assert.match(problem('sampling/createMessage', SPEC_INPUT_RESPONSES.github_login), /^its result's role is malformed/);
    assert.match(problem('roots/list', { roots: [{ uri: 'https://example.com/repo' }] }), /^its result's roots\.0\.uri is malformed/, 'roots are file: URIs');
    assert.match(problem('roots/list', undefined), /^its result's shape is malformed/);
  });

  it('retries with the responses and the state echoed exactly (none when none was given); a bridged client\'s own retry channel is dropped', () => {
    const call = { name: 'deploy', arguments: { to: 'eu' }, _meta: { progressToken: 1 }, inputResponses: { old: {} }, requestState: 'stale' };
    assert.deepEqual(retryParams(call, Object.entries(SPEC_INPUT_RESPONSES), 'AEAD-protected blob'), {
      name: 'deploy',
      arguments: { to: 'eu' },
      _meta: { progressToken: 1 },
      inputResponses: SPEC_INPUT_RESPONSES,
      requestState: 'AEAD-protected blob',
    });
    const bare = retryParams(call, [], undefined);
    assert.equal(Object.hasOwn(bare, 'requestState'), false, 'no state given: none sent');
    assert.deepEqual(bare.inputResponses, {});
    const forged = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'deploy', inputResponses: SPEC_INPUT_RESPONSES, requestState: 'AEAD-protected blob' } };
    assert.deepEqual(withoutRetryChannel(forged).params, { name: 'deploy' });
    const plain: { id: number; method: string; params?: unknown } = { id: 2, method: 'ping' };
    assert.equal(withoutRetryChannel(plain), plain);
  });

  it('bounds the wait for a wrapped server\'s first answers and names its command in one line', () => {
    assert.equal(startTimeoutMs({}), START_TIMEOUT_MS);
    assert.equal(startTimeoutMs({ BELAY_MCP_START_TIMEOUT_SECONDS: ' 2.5 ' }), 2500);
    for (const bad of ['0', '-1', 'soon', 'Infinity']) assert.throws(() => startTimeoutMs({ BELAY_MCP_START_TIMEOUT_SECONDS: bad }), /^UsageError: BELAY_MCP_START_TIMEOUT_SECONDS must be a positive number of seconds, got "/);
    assert.equal(commandLabel(['/usr/bin/node', '/srv/server.js', '--port', '3']), 'node /srv/server.js --port 3');
    assert.equal(commandLabel(['npx', '-y', 'a b', '']), 'npx -y "a b" ""');
    assert.equal(commandLabel(['srv', '\u001b[2J']), 'srv ?[2J');
    assert.equal(commandLabel(['srv', 'x'.repeat(500)]).length, 201);
  });
});

describe('a cue as an elicitation, and back', () => {
  const roundTrip = (payload: object | null, result: object) => answerFromElicitation(payload ? JSON.stringify(payload) : null, ElicitResult.parse(result));

  it('maps every payload kind to a flat schema and the answer to the text a console writes', () => {
    assert.deepEqual(cueElicitation('Hi', null).params.requestedSchema, { type: 'object', properties: { answer: { type: 'string', title: 'Your answer' } } });
    assert.deepEqual(roundTrip(null, { action: 'accept', content: { answer: 'go on' } }), { text: 'go on' });
    const multi = { type: 'choice', options: ['A', 'B', 'C'], allow_multiple: true };
    assert.deepEqual(cueElicitation('Pick', JSON.stringify(multi)).params.requestedSchema.properties.choice, { type: 'array', title: 'Choose', items: { type: 'string', enum: ['A', 'B', 'C'] } });
    assert.deepEqual(roundTrip(multi, { action: 'accept', content: { choice: ['C', 'A'] } }), { text: 'A\nC' });
    const form = { type: 'form', fields: [{ label: 'Env', options: ['prod', 'dev'] }, { label: 'Count', kind: 'number' }, { label: 'Why' }] };
    assert.deepEqual(Object.values(cueElicitation('F', JSON.stringify(form)).params.requestedSchema.properties), [
      { type: 'string', title: 'Env', enum: ['prod', 'dev'] },
      { type: 'number', title: 'Count' },
      { type: 'string', title: 'Why' },
    ]);
    assert.deepEqual(roundTrip(form, { action: 'accept', content: { field1: 'dev', field2: 3, field3: 'tests' } }), { text: 'Env: dev\nCount: 3\nWhy: tests' });
    const confirm = { type: 'confirm', text: 'Deploy?', confirm_label: 'Deploy', cancel_label: 'Not yet' };
    assert.match(cueElicitation('Deploy now?', JSON.stringify(confirm)).params.message, /Accept: Deploy\. Decline: Not yet\./);
    assert.deepEqual(roundTrip(confirm, { action: 'accept' }), { text: 'Deploy' });
    assert.deepEqual(roundTrip(confirm, { action: 'decline' }), { cancelled: true });
    assert.deepEqual(roundTrip(null, { action: 'cancel' }), { cancelled: true });
  });

  it('says what did not fit instead of writing it', () => {
    const problem = (answer: ReturnType<typeof roundTrip>) => ('problem' in answer ? answer.problem : `no problem: ${JSON.stringify(answer)}`);
    assert.match(problem(roundTrip({ type: 'choice', options: ['A', 'B'] }, { action: 'accept', content: { choice: 'Z' } })), /"Z" is not one of the options/);
    assert.match(problem(roundTrip({ type: 'choice', options: ['A', 'B'] }, { action: 'accept', content: {} })), /must name the option/);
    assert.match(problem(roundTrip({ type: 'choice', options: ['A', 'B'] }, { action: 'accept', content: { choice: ['A', 'B'] } })), /takes one option, got 2/);
    assert.match(problem(roundTrip({ type: 'form', fields: [{ label: 'Env', options: ['prod'] }] }, { action: 'accept', content: { field1: 'staging' } })), /not an option of field "Env"/);
    assert.match(problem(roundTrip(null, { action: 'accept', content: { answer: 3 } })), /must be text/);
  });
});

describe('URL elicitations and secrets (--wrap)', () => {
  it('opens only http and https pages without credentials, and names the host first', () => {
    const ok = urlElicitation({ mode: 'url', message: 'Sign in', url: 'https://auth.example.com/login?x=1', elicitationId: 'e' });
    assert.ok(ok && 'url' in ok);
    const cue = urlCue(ok, 'Srv');
    assert.match(cue.prompt, /^The MCP server Srv asks you to open a page on \*\*auth\.example\.com\*\*\./);
    assert.deepEqual(JSON.parse(cue.payloadJson), { type: 'confirm', text: 'Open auth.example.com in the browser?', confirm_label: 'Open the page', cancel_label: 'Decline' });
    const refused: Array<[string, RegExp]> = [
      ['javascript:alert(1)', /javascript: URLs are not opened/],
      ['JAVASCRIPT:alert(1)', /javascript: URLs are not opened/],
      ['file:///etc/passwd', /file: URLs are not opened/],
      ['data:text/html,<script>1</script>', /data: URLs are not opened/],
      ['https://user:pass@evil.example/', /carries credentials/],
      ['https://user@evil.example/', /carries credentials/],
      ['https://a.example/\nb', /spaces or control characters/],
      ['not a url', /spaces or control characters|cannot be read/],
      ['http://[::1', /cannot be read/],
    ];
    for (const [url, why] of refused) {
      const read = urlElicitation({ mode: 'url', message: 'm', url });
      assert.ok(read && 'problem' in read, url);
      assert.match(read.problem, why, url);
    }
    assert.equal(urlElicitation({ mode: 'form', message: 'm', requestedSchema: {} }), undefined, 'a form is not ours here');
    assert.match(JSON.stringify(urlElicitation({ mode: 'url' })), /malformed/);
    const backtick = urlElicitation({ mode: 'url', message: '', url: 'https://x.example/a`b' });
    assert.ok(backtick && 'url' in backtick);
    assert.ok(!urlCue(backtick, 's').prompt.includes('a`b'), 'a backtick cannot close the code span');
  });

  it('finds the secret a form asks for by name, title, description, format or writeOnly', () => {
    const form = (properties: object) => ({ message: 'm', requestedSchema: { type: 'object', properties } });
    assert.equal(secretField(form({ pw: { type: 'string', title: 'Password' } })), 'pw');
    assert.equal(secretField(form({ apiKey: { type: 'string' } })), 'apiKey');
    assert.equal(secretField(form({ k: { type: 'string', description: 'Your GitHub personal access token' } })), 'k');
    assert.equal(secretField(form({ k: { type: 'string', format: 'password' } })), 'k');
    assert.equal(secretField(form({ k: { type: 'string', writeOnly: true } })), 'k');
    assert.equal(secretField(form({ card_number: { type: 'string' } })), 'card_number');
    assert.equal(secretField(form({ name: { type: 'string', title: 'Name' }, port: { type: 'integer' }, passport_country: { type: 'string', title: 'Country' } })), undefined);
    assert.equal(secretField({}), undefined);
  });
});
