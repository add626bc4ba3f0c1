import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { localBackend } from '../../../src/runner/core/backends/local.ts';
import { runFiles } from '../../../src/runner/core/records.ts';
import { loadTask } from '../../../src/runner/core/task.ts';
import { nodeAgent, runFixture, tempDir } from './helpers.ts';

const tmp = tempDir();
after(() => tmp.remove());
const backend = localBackend();
const runs = path.join(tmp.dir, 'runs');

async function taskWithTest(name: string, testScript: string, timeoutSec = 20) {
  const dir = path.join(tmp.dir, name);
  mkdirSync(path.join(dir, 'tests'), { recursive: true });
  writeFileSync(path.join(dir, 'task.toml'), `[verifier]\ntimeout_sec = ${timeoutSec}\n`);
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
    assert.equal(result.verification?.reward, 1);
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
