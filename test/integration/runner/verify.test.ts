import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { localBackend } from '../../../src/runner/core/backends/local.ts';
import { runFiles } from '../../../src/runner/core/records/records.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';
import { metricsFromJson, ruleOfRewards } from '../../../src/runner/core/run/verify.ts';
import { nodeAgent, runFixture, tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir();
after(() => tmp.remove());
const backend = localBackend();
const runs = path.join(tmp.dir, 'runs');

async function taskWithTest(name: string, testScript: string, timeoutSec = 20, verifierToml = '') {
  const dir = path.join(tmp.dir, name);
  mkdirSync(path.join(dir, 'tests'), { recursive: true });
  writeFileSync(path.join(dir, 'task.toml'), `[verifier]\ntimeout_sec = ${timeoutSec}\n${verifierToml}`);
  writeFileSync(path.join(dir, 'instruction.md'), `Task ${name}.`);
  writeFileSync(path.join(dir, 'tests', 'test.sh'), testScript);
  return loadTask(dir);
}

const commands = (list: string[]) => ({ env: { AGENT_COMMANDS: JSON.stringify(list) } });

describe('verification', () => {
  it('lets reward.txt override the exit code (partial credit) and keeps the test output', async () => {
    const { result } = await runFixture(backend, runs, nodeAgent('commands.mjs'), { taskName: 'partial', ...commands(['printf "1\\n2\\n3\\n" > numbers.txt']) });
    assert.equal(result.verification?.reward, 0.75);
    assert.equal(result.verification?.exit_code, 0);
    assert.equal(result.passed, false);
    assert.equal(result.failure_cause, 'tests_failed');
    assert.match(readFileSync(runFiles(result.run_dir).testOutput, 'utf8'), /found 3 of 4 lines/);
    const full = await runFixture(backend, runs, nodeAgent('commands.mjs'), { taskName: 'partial', ...commands(['seq 1 4 > numbers.txt']) });
    assert.equal(full.result.passed, true, full.result.error ?? '');
  });

  it('turns a failing test into tests_failed with per-test results from ctrf.json', async () => {
    const { result } = await runFixture(backend, runs, nodeAgent('commands.mjs'), commands(['echo wrong > hello.txt']));
    assert.equal(result.failure_cause, 'tests_failed');
    assert.equal(result.verification?.reward, 0);
    assert.deepEqual(result.verification?.test_results, [{ name: 'hello.txt holds the greeting', status: 'failed', duration_ms: 1 }]);
  });

  it('kills tests that run past the test timeout: test_timeout', async () => {
    const task = await taskWithTest('slow-tests', `#!/bin/sh\necho started\nsleep 30 &\nwait\n`, 1);
    const { result } = await runFixture(backend, runs, nodeAgent('commands.mjs'), { task });
    assert.equal(result.failure_cause, 'test_timeout');
    assert.equal(result.verification?.timed_out, true);
    assert.match(result.error ?? '', /did not finish within 1 s/);
  });

  it('reports a reward.txt that is not a number and a ctrf.json that is not valid', async () => {
    const task = await taskWithTest(
      'bad-files',
      `#!/bin/sh\nmkdir -p "$LOGS_DIR/verifier"\necho lots > "$LOGS_DIR/verifier/reward.txt"\necho '{"results": {}}' > "$LOGS_DIR/verifier/ctrf.json"\nexit 0\n`,
    );
    const { result } = await runFixture(backend, runs, nodeAgent('commands.mjs'), { task });
    // The tests exited 0, but a reward file was written: the exit status gives no reward.
    assert.equal(result.verification?.reward, null);
    assert.equal(result.passed, false);
    assert.match(result.verification?.error ?? '', /reward\.txt holds 'lots', not a number/);
    assert.match(result.verification?.error ?? '', /ctrf\.json: field 'results\.tests'/);
  });

  it('runs the tests in the same working directory, with the tests staged only afterwards', async () => {
    const task = await taskWithTest('sees-workdir', `#!/bin/sh\ntest -f made-by-agent.txt && test -f "$TEST_DIR/test.sh"\n`);
    const { result } = await runFixture(backend, runs, nodeAgent('commands.mjs'), { task, ...commands(['ls ../tests 2>&1; touch made-by-agent.txt']) });
    assert.equal(result.passed, true, result.error ?? '');
    const trajectory = JSON.parse(readFileSync(runFiles(result.run_dir).trajectory, 'utf8')) as { screen: string | null }[];
    assert.match(trajectory[1]!.screen ?? '', /No such file or directory/);
  });
});

/** A test script that writes `body` (shell) into $LOGS_DIR/verifier, then exits with `code`. */
const writesVerifierFiles = (body: string, code = 0) => `#!/bin/sh\nmkdir -p "$LOGS_DIR/verifier"\ncd "$LOGS_DIR/verifier"\n${body}\nexit ${code}\n`;

describe('reward.json with several metrics', () => {
  it('reads metrics: numbers by name, nested reports skipped, anything else refused whole', () => {
    assert.deepEqual(metricsFromJson('{"reward": 0.5, "accuracy": 1, "report": {"x": "y"}, "cases": [1, 2]}'), { reward: 0.5, accuracy: 1 });
    assert.deepEqual(metricsFromJson('0.75'), { reward: 0.75 });
    assert.match(String(metricsFromJson('{"reward": NaN}')), /^not JSON/);
    assert.match(String(metricsFromJson('{"reward": "1"}')), /^metric 'reward' is "1", not a finite number$/);
    assert.match(String(metricsFromJson('{"reward": 1, "ok": true}')), /^metric 'ok' is true, not a finite number$/);
    assert.match(String(metricsFromJson('{"reward": null}')), /^metric 'reward' is null/);
    assert.match(String(metricsFromJson('{"reward": 1e999}')), /^metric 'reward' is null, not a finite number$/);
    assert.match(String(metricsFromJson('[1]')), /expected an object of metrics/);
    assert.match(String(metricsFromJson('{"report": {}}')), /no numeric metric/);
  });

  it('makes the reward from the named metric, the reward metric or the only metric; several unnamed give none', () => {
    assert.deepEqual(ruleOfRewards({ reward: 0.25, other: 1 }), { reward: 0.25, passed: false, rule: `metric 'reward'` });
    assert.deepEqual(ruleOfRewards({ accuracy: 2 }), { reward: 1, passed: true, rule: `the only metric, 'accuracy'` });
    assert.equal(ruleOfRewards({}).passed, false);
    assert.equal(ruleOfRewards({}).reward, null);
    // Several metrics, none named: no reward is made up, and every metric must be at its maximum.
    assert.deepEqual(ruleOfRewards({ a: 1, b: 1 }), { reward: null, passed: true, rule: 'every metric at its maximum (1)' });
    const zero = ruleOfRewards({ correctness: 0, performance: 0 });
    assert.equal(zero.reward, null);
    assert.equal(zero.passed, false);
    assert.equal(zero.error, 'not every metric is at its maximum (1): correctness 0, performance 0');
    assert.equal(ruleOfRewards({ a: 1, b: 0.999 }).passed, false);
    // The task names its metric: that metric is the reward, whatever the others say.
    assert.deepEqual(ruleOfRewards({ correctness: 1, performance: 0 }, 'correctness'), { reward: 1, passed: true, rule: `metric 'correctness' (task.toml reward_metric)` });
    assert.deepEqual(ruleOfRewards({ reward: 1, correctness: 0.5 }, 'correctness').reward, 0.5);
    const missing = ruleOfRewards({ reward: 1 }, 'correctness');
    assert.equal(missing.passed, false);
    assert.equal(missing.reward, null);
    assert.match(missing.error ?? '', /^the tests wrote no metric 'correctness', which task\.toml names as reward_metric \(they wrote reward\)$/);
    // A metric called like an Object property is still just a name.
    assert.equal(ruleOfRewards({ a: 1, b: 1 }, 'toString').passed, false);
  });

  it('records every metric and passes only by the reward rule', async () => {
    const cases: [string, string, number, { passed: boolean; reward: number | null; metrics: Record<string, number>; error?: RegExp }][] = [
      ['all-metrics', `echo '{"reward": 1, "accuracy": 0.9, "speed": 3}' > reward.json`, 0, { passed: true, reward: 1, metrics: { reward: 1, accuracy: 0.9, speed: 3 } }],
      ['reward-zero', `echo '{"reward": 0, "tests_passed": 1}' > reward.json`, 0, { passed: false, reward: 0, metrics: { reward: 0, tests_passed: 1 } }],
      ['unnamed', `echo '{"a": 1, "b": 1}' > reward.json`, 0, { passed: true, reward: null, metrics: { a: 1, b: 1 } }],
      // The Harbor cookbook's multi-reward task, failed on both metrics, with a test script that exits 0.
      ['harbor-zero', `echo '{"correctness": 0, "performance": 0}' > reward.json`, 0, { passed: false, reward: null, metrics: { correctness: 0, performance: 0 }, error: /^not every metric is at its maximum \(1\): correctness 0, performance 0$/ }],
      ['harbor-half', `echo '{"correctness": 1, "performance": 0.5}' > reward.json`, 0, { passed: false, reward: null, metrics: { correctness: 1, performance: 0.5 }, error: /^not every metric is at its maximum \(1\): performance 0\.5$/ }],
      // The exit status says nothing once a reward file is written, either way.
      ['txt-zero-exit-0', `echo 0 > reward.txt`, 0, { passed: false, reward: 0, metrics: { reward: 0 } }],
      ['txt-one-exit-1', `echo 1 > reward.txt`, 1, { passed: true, reward: 1, metrics: { reward: 1 }, error: /^the tests exited with 1$/ }],
      ['json-wins', `echo 0 > reward.txt; echo '{"reward": 1}' > reward.json`, 0, { passed: true, reward: 1, metrics: { reward: 1 } }],
      ['txt-fills', `echo 1 > reward.txt; echo '{"style": 0.5}' > reward.json`, 0, { passed: true, reward: 1, metrics: { style: 0.5, reward: 1 } }],
      ['txt-alone', `echo 0.5 > reward.txt`, 0, { passed: false, reward: 0.5, metrics: { reward: 0.5 } }],
      ['nan', `echo '{"reward": NaN}' > reward.json`, 0, { passed: false, reward: null, metrics: {}, error: /^logs\/verifier\/reward\.json: not JSON/ }],
      ['nan-metric', `echo '{"a": 1, "b": 1e999}' > reward.json`, 0, { passed: false, reward: null, metrics: {}, error: /^logs\/verifier\/reward\.json: metric 'b' is null, not a finite number/ }],
      ['nested', `echo '{"reward": {"value": 1}, "cases": [1]}' > reward.json`, 0, { passed: false, reward: null, metrics: {}, error: /^logs\/verifier\/reward\.json: no numeric metric/ }],
      ['string', `echo '{"reward": "1"}' > reward.json`, 0, { passed: false, reward: null, metrics: {}, error: /reward\.json: metric 'reward' is "1", not a finite number/ }],
      ['fifo', `mkfifo reward.json`, 0, { passed: false, reward: null, metrics: {}, error: /^logs\/verifier\/reward\.json is a FIFO, not a file the tests wrote$/ }],
      ['symlink', `echo 1 > ../target; ln -s ../target reward.txt`, 1, { passed: false, reward: null, metrics: {}, error: /^logs\/verifier\/reward\.txt is a symlink, not a file the tests wrote; the tests exited with 1$/ }],
      ['symlink-outside', `ln -s /etc/hostname reward.json`, 0, { passed: false, reward: null, metrics: {}, error: /^logs\/verifier\/reward\.json is a symlink, not a file the tests wrote$/ }],
      ['huge', `head -c 2000000 /dev/zero | tr '\\0' 1 > reward.json`, 0, { passed: false, reward: null, metrics: {}, error: /^logs\/verifier\/reward\.json is 2000000 bytes, larger than 1 MiB$/ }],
      ['folder', `mkdir reward.json`, 0, { passed: false, reward: null, metrics: {}, error: /reward\.json is a folder/ }],
    ];
    for (const [name, body, code, expected] of cases) {
      const task = await taskWithTest(`metrics-${name}`, writesVerifierFiles(body, code));
      const { result } = await runFixture(backend, runs, nodeAgent('commands.mjs'), { task });
      const v = result.verification;
      assert.equal(result.passed, expected.passed, `${name}: ${result.error}`);
      assert.equal(v?.reward, expected.reward, name);
      assert.deepEqual(v?.metrics, expected.metrics, name);
      // result.json says the same: the reward (null when there is none) with the metrics beside it.
      const written = JSON.parse(readFileSync(runFiles(result.run_dir).result, 'utf8')) as { reward: unknown; metrics?: unknown; passed: boolean };
      assert.equal(written.reward, expected.reward, name);
      assert.deepEqual(written.metrics, expected.metrics, name);
      assert.equal(written.passed, expected.passed, name);
      if (expected.error) assert.match(v?.error ?? '', expected.error, name);
      else assert.equal(v?.error, null, name);
      if (!expected.passed) assert.equal(result.failure_cause, 'tests_failed', name);
    }
  });

  it('takes the metric task.toml names as reward_metric as the reward and the pass', async () => {
    const named = '[verifier]\nreward_metric = "correctness"\n'.replace('[verifier]\n', '');
    const pass = await taskWithTest('named-pass', writesVerifierFiles(`echo '{"correctness": 1, "performance": 0}' > reward.json`, 1), 20, named);
    assert.equal(pass.rewardMetric, 'correctness');
    const passed = (await runFixture(backend, runs, nodeAgent('commands.mjs'), { task: pass })).result;
    assert.equal(passed.passed, true, passed.error ?? '');
    assert.equal(passed.reward, 1);
    assert.equal(passed.verification?.reward_rule, `metric 'correctness' (task.toml reward_metric)`);
    assert.deepEqual(passed.metrics, { correctness: 1, performance: 0 });
    const absent = await taskWithTest('named-absent', writesVerifierFiles(`echo '{"performance": 1, "reward": 1}' > reward.json`), 20, named);
    const failed = (await runFixture(backend, runs, nodeAgent('commands.mjs'), { task: absent })).result;
    assert.equal(failed.passed, false);
    assert.equal(failed.reward, null);
    assert.equal(failed.failure_cause, 'tests_failed');
    assert.match(failed.error ?? '', /^the tests wrote no metric 'correctness', which task\.toml names as reward_metric \(they wrote performance, reward\)$/);
  });

  it('refuses a reward_metric that is not a name, in one line naming the field', async () => {
    await assert.rejects(taskWithTest('named-bad', writesVerifierFiles('true'), 20, 'reward_metric = 3\n'), /field 'verifier\.reward_metric'/);
  });

  it('does not pass tests cut short by their timeout, whatever reward they wrote first', async () => {
    const task = await taskWithTest('reward-then-hang', writesVerifierFiles(`echo 1 > reward.txt\nsleep 30 &\nwait`), 1);
    const { result } = await runFixture(backend, runs, nodeAgent('commands.mjs'), { task });
    assert.equal(result.passed, false);
    assert.equal(result.failure_cause, 'test_timeout');
  });

  it('removes a FIFO or symlink the agent left where the verifier writes, without waiting on it', async () => {
    const task = await taskWithTest('agent-fifo', writesVerifierFiles(`echo '{"reward": 1, "extra": 2}' > reward.json`));
    const { result } = await runFixture(backend, runs, nodeAgent('commands.mjs'), {
      task,
      ...commands(['d="$BELAY_WORKDIR/../logs/verifier"; mkdir -p "$d" && mkfifo "$d/reward.json" && ln -s /etc/passwd "$d/reward.txt" && echo left']),
    });
    assert.equal(result.passed, true, result.error ?? '');
    assert.deepEqual(result.verification?.metrics, { reward: 1, extra: 2 });
    assert.ok(result.notes?.some((n) => /^removed logs\/verifier\/reward\.json, left by the agent phase/.test(n)), JSON.stringify(result.notes));
  });
});
