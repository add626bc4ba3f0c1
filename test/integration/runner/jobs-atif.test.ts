// The ATIF copy of a run's trajectory (agent/trajectory.json): the mapping from Belay's records,
// its validity against the published schema (written as zod), and a real run writing it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { ATIF_FILE, ATIF_VERSION, AtifTrajectorySchema, toAtif, type AtifSource } from '../../../src/runner/core/records/atif.ts';
import { localBackend } from '../../../src/runner/core/backends/local.ts';
import { nodeAgent, runFixture, tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-atif-');
after(() => tmp.remove());

const result: AtifSource['result'] = {
  run_id: '20250101T000000Z-hello-abc123',
  task_name: 'hello',
  agent: 'my-agent',
  protocol: 'sdk1',
  backend: 'local',
  started_at: '2025-01-01T00:00:00.000Z',
  passed: false,
  reward: 0.5,
  failure_cause: 'tests_failed',
  error: 'the tests gave reward 0.5',
  llm: { requests: 3, input_tokens: 1200, output_tokens: 80, cost_usd: 0.012 },
};

const entry = (step: number, fields: Partial<AtifSource['trajectory'][number]>): AtifSource['trajectory'][number] => ({
  step, screen: null, response: {}, command: null, cwd: '/app', exit_code: null, timed_out: false, duration_ms: null, output_file: null, ...fields,
});

describe('ATIF', () => {
  it('maps the instruction to a user step and each step to an agent step: command → tool call, output shown next → observation, tokens → metrics', async () => {
    const atif = await toAtif({
      result,
      instruction: 'Create hello.txt',
      trajectory: [
        entry(1, { screen_of: 'previous', response: { command: 'echo hi > hello.txt', text: 'Writing' }, command: 'echo hi > hello.txt', exit_code: 0, duration_ms: 5, output_file: 'steps/0001.log', llm: { requests: 1, input_tokens: 400, output_tokens: 30, cost_usd: 0.004 } }),
        entry(2, { screen: '', screen_of: 'previous', response: { command: 'cat hello.txt', analysis: 'Checking' }, command: 'cat hello.txt', exit_code: 1, output_file: 'steps/0002.log' }),
        entry(3, { screen: 'cat: hello.txt: No such file\n[exit code: 1]', screen_of: 'previous', response: { task_complete: true, text: 'Done' } }),
      ],
    });
    assert.ok(AtifTrajectorySchema.safeParse(atif).success);
    assert.equal(atif.schema_version, ATIF_VERSION);
    assert.equal(atif.session_id, result.run_id);
    assert.deepEqual(atif.agent, { name: 'my-agent', version: 'unknown', extra: { protocol: 'sdk1', harness: 'belay' } });
    assert.deepEqual(atif.steps[0], { step_id: 1, timestamp: result.started_at, source: 'user', message: 'Create hello.txt' });
    assert.deepEqual(atif.steps.map((s) => [s.step_id, s.source, s.message]), [[1, 'user', 'Create hello.txt'], [2, 'agent', 'Writing'], [3, 'agent', 'Checking'], [4, 'agent', 'Done']]);
    assert.deepEqual(atif.steps[1]!.tool_calls, [{ tool_call_id: 'call_1', function_name: 'bash', arguments: { command: 'echo hi > hello.txt', cwd: '/app' } }]);
    assert.deepEqual(atif.steps[1]!.observation, { results: [{ source_call_id: 'call_1', content: '' }] });
    assert.deepEqual(atif.steps[2]!.observation, { results: [{ source_call_id: 'call_2', content: 'cat: hello.txt: No such file\n[exit code: 1]' }] });
    assert.deepEqual(atif.steps[1]!.metrics, { prompt_tokens: 400, completion_tokens: 30, cost_usd: 0.004 });
    assert.equal(atif.steps[1]!.llm_call_count, 1);
    assert.equal(atif.steps[2]!.metrics, undefined);
    assert.equal(atif.steps[2]!.llm_call_count, undefined, 'no usage recorded: the count is not known, so not written');
    assert.equal(atif.trajectory_id, result.run_id);
    assert.equal(atif.steps[3]!.tool_calls, undefined);
    assert.deepEqual(atif.steps[3]!.extra, { belay_step: 3, exit_code: null, timed_out: false, duration_ms: null, output_file: null, task_complete: true });
    assert.deepEqual(atif.final_metrics, { total_steps: 4, total_prompt_tokens: 1200, total_completion_tokens: 80, total_cost_usd: 0.012 });
    assert.deepEqual(atif.extra, { task_name: 'hello', backend: 'local', passed: false, reward: 0.5, failure_cause: 'tests_failed', error: 'the tests gave reward 0.5' });
  });

  it("takes an SDK 2.0 step's own output, reads the last command's output from its file, and caps it", async () => {
    const sdk2 = await toAtif({
      result: { ...result, protocol: 'sdk2', llm: undefined },
      trajectory: [entry(1, { command: 'ls', screen: 'a b', screen_of: 'own', response: { step: 1, command: 'ls' } })],
    });
    assert.deepEqual(sdk2.steps[1]!.observation, { results: [{ source_call_id: 'call_1', content: 'a b' }] });
    assert.deepEqual(sdk2.final_metrics, { total_steps: 2 });
    assert.match(String(sdk2.steps[0]!.extra?.note), /instruction of task hello was not recorded/);
    const big = await toAtif({
      result,
      instruction: 'x',
      trajectory: [entry(1, { command: 'yes', output_file: 'steps/0001.log' })],
      readOutput: async (file, max) => (file === 'steps/0001.log' ? 'y\n'.repeat(max) : undefined),
    });
    const content = big.steps[1]!.observation!.results[0]!.content as string;
    assert.ok(content.length < 70 * 1024);
    assert.match(content, /more characters in the step's output file\]$/);
    assert.ok(AtifTrajectorySchema.safeParse(big).success);
  });

  it('the schema holds to the published rules', () => {
    const ok = { schema_version: 'ATIF-v1.6', session_id: 's', agent: { name: 'a', version: '1' }, steps: [{ step_id: 1, source: 'user', message: 'hi' }] };
    assert.ok(AtifTrajectorySchema.safeParse(ok).success);
    const bad: [string, unknown][] = [
      ['no steps', { ...ok, steps: [] }],
      ['unknown version', { ...ok, schema_version: 'ATIF-v2.0' }],
      ['unknown field', { ...ok, extra_field: 1 }],
      ['step ids not sequential', { ...ok, steps: [{ step_id: 2, source: 'user', message: 'hi' }] }],
      ['tool calls on a user step', { ...ok, steps: [{ step_id: 1, source: 'user', message: 'hi', tool_calls: [] }] }],
      ['observation of another call', { ...ok, steps: [{ step_id: 1, source: 'agent', message: '', tool_calls: [{ tool_call_id: 'a', function_name: 'f', arguments: {} }], observation: { results: [{ source_call_id: 'b' }] } }] }],
      ['bad timestamp', { ...ok, steps: [{ step_id: 1, source: 'user', message: 'hi', timestamp: 'yesterday' }] }],
      ['no agent version', { ...ok, agent: { name: 'a' } }],
    ];
    for (const [why, value] of bad) assert.equal(AtifTrajectorySchema.safeParse(value).success, false, why);
  });

  it('a step no model took (a count of 0) has no metrics, and the trajectory is still valid', async () => {
    const atif = await toAtif({ result, instruction: 'x', trajectory: [entry(1, { command: 'ls', screen: 'a', screen_of: 'own', llm: { requests: 0, input_tokens: 0, output_tokens: 0, cost_usd: 0 } })] });
    assert.equal(atif.steps[1]!.llm_call_count, 0);
    assert.equal(atif.steps[1]!.metrics, undefined);
    assert.ok(AtifTrajectorySchema.safeParse(atif).success);
  });

  it("v1.7's rules: trajectory ids, embedded subagents, call counts, and each field only from the version that brought it", () => {
    const user = { step_id: 1, source: 'user', message: 'hi' };
    const agentStep = (fields: object) => ({ step_id: 2, source: 'agent', message: '', ...fields });
    const v17 = { schema_version: 'ATIF-v1.7', trajectory_id: 'root', agent: { name: 'a', version: '1' }, steps: [user] };
    const child = (id: string | undefined) => ({ schema_version: 'ATIF-v1.7', ...(id ? { trajectory_id: id } : {}), agent: { name: 'sub', version: '1' }, steps: [user] });
    const refTo = (ref: object) => agentStep({ tool_calls: [{ tool_call_id: 'c', function_name: 'task', arguments: {}, extra: { why: 'delegate' } }], observation: { results: [{ source_call_id: 'c', subagent_trajectory_ref: [ref], extra: { n: 1 } }] }, llm_call_count: 1 });
    const good: [string, unknown][] = [
      ['no session_id in v1.7', v17],
      ['an embedded subagent its reference resolves to', { ...v17, subagent_trajectories: [child('s1'), child('s2')], steps: [user, refTo({ trajectory_id: 's2' })] }],
      ['a reference to a file', { ...v17, steps: [user, refTo({ trajectory_id: 'other', trajectory_path: 'sub.json' })] }],
      ['a dispatch step no model took', { ...v17, steps: [user, agentStep({ llm_call_count: 0 })] }],
    ];
    for (const [why, value] of good) assert.ok(AtifTrajectorySchema.safeParse(value).success, why);
    const bad: [string, unknown, RegExp][] = [
      ['no session_id before v1.7', { ...v17, schema_version: 'ATIF-v1.6', trajectory_id: undefined }, /session_id: required before ATIF-v1.7/],
      ['trajectory_id in v1.6', { ...v17, schema_version: 'ATIF-v1.6', session_id: 's' }, /trajectory_id came with ATIF-v1.7/],
      ['llm_call_count in v1.5', { schema_version: 'ATIF-v1.5', session_id: 's', agent: { name: 'a', version: '1' }, steps: [user, agentStep({ llm_call_count: 1 })] }, /llm_call_count came with ATIF-v1.7/],
      ['content parts in v1.5', { schema_version: 'ATIF-v1.5', session_id: 's', agent: { name: 'a', version: '1' }, steps: [{ ...user, message: [{ type: 'text', text: 'hi' }] }] }, /content parts came with ATIF-v1.6/],
      ['an embedded subagent without an id', { ...v17, subagent_trajectories: [child(undefined)] }, /needs a trajectory_id/],
      ['two subagents with one id', { ...v17, subagent_trajectories: [child('s1'), child('s1')] }, /'s1' is the id of an earlier/],
      ['a reference to nothing embedded and no path', { ...v17, subagent_trajectories: [child('s1')], steps: [user, refTo({ trajectory_id: 's9' })] }, /'s9' is neither embedded nor given a trajectory_path/],
      ['a reference naming nothing', { ...v17, steps: [user, refTo({})] }, /names a trajectory_id or a session_id/],
      ['metrics on a step no model took', { ...v17, steps: [user, agentStep({ llm_call_count: 0, metrics: { prompt_tokens: 1 } })] }, /llm_call_count 0 has no metrics/],
      ['a call count on a user step', { ...v17, steps: [{ ...user, llm_call_count: 1 }] }, /only an agent step has llm_call_count/],
      ['a subagent breaking a rule', { ...v17, subagent_trajectories: [{ ...child('s1'), steps: [{ ...user, step_id: 3 }] }] }, /subagent_trajectories\.0\.steps\.0\.step_id: expected 1/],
    ];
    for (const [why, value, reason] of bad) {
      const parsed = AtifTrajectorySchema.safeParse(value);
      assert.equal(parsed.success, false, why);
      assert.match(parsed.error!.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('\n'), reason, why);
    }
  });

  it('a run writes agent/trajectory.json beside its records, valid ATIF', async () => {
    const { result: run } = await runFixture(localBackend(), tmp.dir, nodeAgent('multi-step.mjs'));
    assert.ok(run.passed);
    const atif = AtifTrajectorySchema.parse(JSON.parse(readFileSync(path.join(run.run_dir, ATIF_FILE), 'utf8')));
    assert.equal(atif.session_id, run.run_id);
    assert.equal(atif.schema_version, 'ATIF-v1.7');
    assert.equal(atif.trajectory_id, run.run_id);
    assert.match(String(atif.steps[0]!.message), /Hello, world!/);
    assert.equal(atif.steps.length, run.steps + 1);
    assert.deepEqual(atif.steps.flatMap((s) => s.tool_calls?.map((c) => c.arguments.command) ?? []), ["echo 'Hello, world!' > hello.txt", 'cat hello.txt']);
    assert.equal(atif.steps[2]!.observation!.results[0]!.content, 'Hello, world!');
    assert.equal(atif.extra?.passed, true);
    assert.deepEqual(JSON.parse(readFileSync(path.join(run.run_dir, 'trajectory.json'), 'utf8')).map((e: { screen_of?: string }) => e.screen_of), ['previous', 'previous', 'previous'], 'SDK 1.x says its screens are the previous step’s output');
  });

  it("an SDK 2.0 run's ATIF takes each step's own output, as its records say", async () => {
    const { result: run } = await runFixture(localBackend(), tmp.dir, nodeAgent('sdk2-server.mjs'), { protocol: 'sdk2', limits: { pollIntervalMs: 100 } });
    assert.ok(run.passed, run.error ?? '');
    const atif = AtifTrajectorySchema.parse(JSON.parse(readFileSync(path.join(run.run_dir, ATIF_FILE), 'utf8')));
    assert.deepEqual(
      atif.steps.slice(1).map((s) => [s.tool_calls?.[0]?.arguments.command, s.observation?.results[0]?.content]),
      [["echo 'Hello, world!' > hello.txt", ''], ['cat hello.txt', 'Hello, world!\n'], ['ls', 'hello.txt\nseed.txt\n']],
    );
  });
});
