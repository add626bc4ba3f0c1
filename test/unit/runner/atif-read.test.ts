// Reading ATIF trajectories of every published version (1.0 to 1.7) into the trajectory view's
// steps: tool calls, observations, metrics, 1.7's subagents nested; broken, unknown and huge files
// each refused with one line naming the file; agent text kept as the exact string it was.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { ATIF_VIEW_MAX_STEPS, AtifReadError, atifCommands, readAtifFile } from '../../../src/runner/core/records/atifRead.ts';
import { ATIF_VERSIONS } from '../../../src/runner/core/records/atif.ts';
import { readTrajectoryFile } from '../../../src/runner/core/results/harborTrajectory.ts';
import { tempDir } from '../../support/runner/helpers.ts';

const dir = tempDir('belay-atif-read-');
after(() => dir.remove());
let n = 0;
function write(doc: unknown, name = `t${++n}.json`): string {
  const file = path.join(dir.dir, name);
  writeFileSync(file, typeof doc === 'string' ? doc : JSON.stringify(doc));
  return file;
}

/** The shape every version shares: a user step, an agent step with a bash call and its observation. */
function basic(version: string): Record<string, unknown> {
  return {
    schema_version: version,
    session_id: 'sess-1',
    agent: { name: 'terminus-2', version: '2.0.0', model_name: 'm' },
    steps: [
      { step_id: 1, source: 'user', message: 'Write hello.txt' },
      {
        step_id: 2,
        source: 'agent',
        message: 'Writing it.',
        tool_calls: [{ tool_call_id: 'c1', function_name: 'bash', arguments: { command: 'echo hi > hello.txt' } }],
        observation: { results: [{ source_call_id: 'c1', content: 'done' }] },
        metrics: { prompt_tokens: 100, completion_tokens: 20, cost_usd: 0.5 },
      },
    ],
  };
}

async function readError(file: string, maxBytes?: number): Promise<string> {
  const error = await readAtifFile(file, maxBytes).then(
    () => assert.fail('read a file it should refuse'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof AtifReadError, String(error));
  assert.ok(!error.message.includes('\n'), `one line: ${error.message}`);
  assert.ok(error.message.startsWith(`${file}: `), `names the file: ${error.message}`);
  return error.message;
}

describe('ATIF reading', () => {
  for (const version of ATIF_VERSIONS) {
    it(`reads ${version}: the user step, the agent's words, its tool call as the command, the observation as output, the metrics`, async () => {
      const read = await readAtifFile(write(basic(version)));
      assert.equal(read.steps.length, 2);
      const [user, agent] = read.steps;
      assert.equal(user!.source, 'user');
      assert.equal(user!.agentText, 'Write hello.txt');
      assert.equal(agent!.source, undefined);
      assert.equal(agent!.agentText, 'Writing it.');
      assert.equal(agent!.command, 'echo hi > hello.txt');
      assert.equal(agent!.output, 'done');
      assert.deepEqual(agent!.llm, { requests: 1, inputTokens: 100, outputTokens: 20, costUsd: 0.5 });
    });
  }

  it('reads 1.6 content parts (text and images) in messages and observations', async () => {
    const doc = basic('ATIF-v1.6');
    const steps = doc.steps as Record<string, unknown>[];
    steps[1]!.message = [{ type: 'text', text: 'Look:' }, { type: 'image', source: { media_type: 'image/png', path: 'images/shot.png' } }];
    steps[1]!.observation = { results: [{ source_call_id: 'c1', content: [{ type: 'text', text: 'seen' }] }] };
    const read = await readAtifFile(write(doc));
    assert.equal(read.steps[1]!.agentText, 'Look:\n[image images/shot.png]');
    assert.equal(read.steps[1]!.output, 'seen');
    // The same parts in a 1.5 file are refused: they came with 1.6.
    const message = await readError(write({ ...doc, schema_version: 'ATIF-v1.5' }));
    assert.match(message, /not a valid ATIF-v1\.5 trajectory: steps\.1\.message: a message of content parts came with ATIF-v1\.6/);
  });

  it("reads 1.7: subagent trajectories nested after the step that refers to them (and theirs within), llm_call_count, Belay's exit codes, a tool that is not a shell", async () => {
    const sub = (id: string, command: string, inner?: unknown[]) => ({
      schema_version: 'ATIF-v1.7',
      trajectory_id: id,
      agent: { name: 'helper', version: '1' },
      steps: [
        { step_id: 1, source: 'user', message: `do ${id}` },
        {
          step_id: 2,
          source: 'agent',
          message: `${id} working`,
          tool_calls: [{ tool_call_id: 'x', function_name: 'bash', arguments: { command } }],
          ...(inner ? { observation: { results: [{ source_call_id: 'x', subagent_trajectory_ref: [{ trajectory_id: 'deep' }] }] } } : {}),
        },
      ],
      ...(inner ? { subagent_trajectories: inner } : {}),
    });
    const doc = {
      schema_version: 'ATIF-v1.7',
      trajectory_id: 'main',
      agent: { name: 'lead', version: '1' },
      steps: [
        { step_id: 1, source: 'system', message: 'You are an agent.' },
        {
          step_id: 2,
          source: 'agent',
          message: 'Delegating.',
          llm_call_count: 3,
          metrics: { prompt_tokens: 10, completion_tokens: 5 },
          tool_calls: [{ tool_call_id: 't1', function_name: 'Task', arguments: { prompt: 'search' }, extra: { kind: 'spawn' } }],
          observation: { results: [{ source_call_id: 't1', content: 'found it', subagent_trajectory_ref: [{ trajectory_id: 'search' }] }] },
        },
        { step_id: 3, source: 'agent', message: 'Finishing.', tool_calls: [{ tool_call_id: 't2', function_name: 'bash', arguments: { command: 'make' } }], extra: { exit_code: 2, duration_ms: 40, timed_out: false } },
      ],
      subagent_trajectories: [sub('search', 'grep -r x .', [sub('deep', 'ls')]), sub('unreferenced', 'pwd')],
    };
    const read = await readAtifFile(write(doc));
    const shown = read.steps.map((s) => [s.step, s.subagent ?? '', s.source ?? 'agent', s.command ?? '']);
    assert.deepEqual(shown, [
      [1, '', 'system', ''],
      [2, '', 'agent', 'Task {"prompt":"search"}'],
      [3, 'search', 'user', ''],
      [4, 'search', 'agent', 'grep -r x .'],
      [5, 'search › deep', 'user', ''],
      [6, 'search › deep', 'agent', 'ls'],
      [7, '', 'agent', 'make'],
      [8, 'unreferenced', 'user', ''],
      [9, 'unreferenced', 'agent', 'pwd'],
    ]);
    assert.equal(read.steps[1]!.output, 'found it\n[subagent search]');
    assert.deepEqual(read.steps[1]!.llm, { requests: 3, inputTokens: 10, outputTokens: 5, costUsd: 0 });
    assert.equal(read.steps[6]!.exitCode, 2);
    assert.equal(read.steps[6]!.durationMs, 40);
    assert.deepEqual(atifCommands(read.trajectory), ['Task {"prompt":"search"}', 'make', 'grep -r x .', 'ls', 'pwd']);
  });

  it('refuses, in one line naming the file: a missing file, a folder, not JSON, not an object, no version, an unknown version, a broken rule, unknown fields', async () => {
    assert.match(await readError(path.join(dir.dir, 'absent.json')), /: no such file$/);
    assert.match(await readError(dir.dir), /: not a regular file$/);
    assert.match(await readError(write('{"schema_version": "ATIF-v1.4", "steps": [')), /: not JSON \(/);
    assert.match(await readError(write([1, 2])), /: not an ATIF trajectory/);
    assert.match(await readError(write({ steps: [] })), /: not an ATIF trajectory \(no schema_version\)$/);
    assert.match(await readError(write({ ...basic('ATIF-v1.4'), schema_version: 'ATIF-v2.0' })), /: schema_version "ATIF-v2\.0" is not one Belay reads \(ATIF-v1\.0 to ATIF-v1\.7\)$/);
    const skipped = basic('ATIF-v1.4');
    (skipped.steps as Record<string, unknown>[])[1]!.step_id = 3;
    assert.match(await readError(write(skipped)), /steps\.1\.step_id: expected 2 \(sequential from 1\)$/);
    assert.match(await readError(write({ ...basic('ATIF-v1.4'), surprise: true })), /not a valid ATIF-v1\.4 trajectory: /);
    const old = basic('ATIF-v1.6');
    delete old.session_id;
    assert.match(await readError(write(old)), /session_id: required before ATIF-v1\.7/);
    // A symlink is not followed.
    const { symlinkSync } = await import('node:fs');
    const link = path.join(dir.dir, 'link.json');
    symlinkSync(write(basic('ATIF-v1.4')), link);
    assert.match(await readError(link), /: not a regular file$/);
  });

  it('is bounded: a file over the limit is refused unread, and past the most steps shown the rest are counted', async () => {
    const file = write(basic('ATIF-v1.4'));
    assert.match(await readError(file, 100), /: \d+ bytes, more than the 100 bytes Belay reads of a trajectory$/);
    const many = basic('ATIF-v1.4');
    const steps = many.steps as Record<string, unknown>[];
    for (let i = steps.length; i < ATIF_VIEW_MAX_STEPS + 10; i++) steps.push({ step_id: i + 1, source: 'agent', message: i === 5 ? 'x'.repeat(50_000) : 'x' });
    const read = await readAtifFile(write(many));
    assert.equal(read.steps.length, ATIF_VIEW_MAX_STEPS);
    assert.equal(read.skipped, 10);
    // Each text is cut for the view.
    assert.ok(read.steps[5]!.agentText!.length < 21_000);
    assert.match(read.steps[5]!.agentText!, /\[… 30000 more characters\]$/);
  });

  it('keeps agent text exactly as written: HTML, escape sequences and bidi controls are strings, not markup', async () => {
    const hostile = '<img src=x onerror=alert(1)><script>alert(2)</script>\u001b[31mred\u001b]8;;http://x\u0007\u202e';
    const doc = basic('ATIF-v1.7');
    delete doc.session_id;
    const steps = doc.steps as Record<string, unknown>[];
    steps[1]!.message = hostile;
    steps[1]!.tool_calls = [{ tool_call_id: 'c1', function_name: 'bash', arguments: { command: `echo '${hostile}'` } }];
    steps[1]!.observation = { results: [{ source_call_id: 'c1', content: hostile }] };
    const read = await readAtifFile(write(doc));
    assert.equal(read.steps[1]!.agentText, hostile);
    assert.equal(read.steps[1]!.command, `echo '${hostile}'`);
    assert.equal(read.steps[1]!.output, hostile);
  });

  it("a Harbor trial's trajectory: the summary from the trial's result.json (task, agent, reward), the totals from final_metrics", async () => {
    const file = path.resolve(import.meta.dirname, '../../fixtures/runner/harbor-job/2026-01-05__10-00-00/hello-world__Ab3xQ9/agent/trajectory.json');
    const view = await readTrajectoryFile(file);
    assert.equal(view.run.task, 'hello-world');
    assert.equal(view.run.protocol, 'ATIF-v1.4');
    assert.equal(view.run.backend, 'Harbor trial');
    assert.equal(view.run.kind, 'atif');
    assert.equal(view.run.passed, true);
    assert.equal(view.run.rewardText, 'reward 1');
    assert.deepEqual(view.run.llm, { requests: 0, inputTokens: 1200, outputTokens: 300, costUsd: 0.012 });
    assert.deepEqual(
      view.steps.map((s) => s.command),
      [null, "printf 'Hello, world!\\n' > hello.txt", 'cat hello.txt'],
    );
    // A lone ATIF file (no trial around it) still opens, said to be a file.
    const lone = await readTrajectoryFile(write(basic('ATIF-v1.5')));
    assert.equal(lone.run.backend, 'ATIF file');
    assert.equal(lone.run.passed, false);
    assert.equal(lone.run.rewardText, 'no result recorded');
  });
});
