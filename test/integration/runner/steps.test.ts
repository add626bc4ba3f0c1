import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { readResult, runFiles, type TrajectoryEntry } from '../../../src/runner/core/records/records.ts';
import { loadTask, stageTests, TaskError } from '../../../src/runner/core/tasks/task.ts';
import { combineMetrics, minRewardMiss } from '../../../src/runner/core/tasks/taskSteps.ts';
import { backends, fixtures, nodeAgent, processesWith, runFixture, taskDir, tempDir } from '../../support/runner/helpers.ts';

/** The multi-step fixtures live apart from tasks/, which the command line's tests run whole. */
const stepsDir = (name: string) => path.join(fixtures, 'multi-step', name);

// Resolved before any test is registered: node:test runs root hooks early after a top-level await.
const available = await Promise.all(backends.map(async (b) => ({ ...b, backend: await b.get() })));
const tmp = tempDir('belay-steps-');
after(() => tmp.remove());

const stepTask = (name: string, toml: string, files: Record<string, string> = {}) =>
  tmp.writeTask(name, { 'task.toml': toml, 'steps/one/instruction.md': 'Do one.', 'steps/one/tests/test.sh': 'exit 0', ...files });

/** A copy of a fixture task whose task.toml is changed by `edit`. */
function variant(fixture: string, name: string, edit: (toml: string) => string): string {
  const dir = path.join(tmp.dir, name);
  cpSync(stepsDir(fixture), dir, { recursive: true });
  writeFileSync(path.join(dir, 'task.toml'), edit(readFileSync(path.join(dir, 'task.toml'), 'utf8')));
  return dir;
}

const refused = (pattern: RegExp) => (e: unknown) => e instanceof TaskError && pattern.test(e.message) && !e.message.includes('\n');

describe('multi-step task loading', () => {
  it('reads [[steps]]: names, instructions, per-step timeouts, min_reward and the strategy', async () => {
    const two = await loadTask(stepsDir('steps-two'));
    assert.equal(two.steps?.strategy, 'mean');
    assert.deepEqual(two.steps?.steps.map((s) => [s.index, s.name, s.agentTimeoutSec, s.testTimeoutSec]), [[1, '01-write', 60, 30], [2, '02-extend', 60, 20]]);
    assert.match(two.steps!.steps[0]!.instruction, /^Write "one" into log\.txt\./);
    assert.ok(two.steps!.steps[1]!.workdirDir?.endsWith(path.join('02-extend', 'workdir')));
    // Without its own instruction.md, the task shows its steps' instructions.
    assert.match(two.instruction, /^Step 1 \(01-write\): Write "one"/);
    const three = await loadTask(stepsDir('steps-three'));
    assert.equal(three.steps?.strategy, 'final');
    assert.deepEqual(three.steps?.steps.map((s) => s.minReward), [{ reward: 1 }, { quality: 0.25 }, undefined]);
    assert.equal(three.steps?.steps[2]!.testsDir, undefined, 'step 3 uses the task tests/test.sh');
    // Single-step tasks have no steps.
    assert.equal((await loadTask(taskDir('hello'))).steps, undefined);
  });

  it('takes the mean strategy by default and an inline instruction', async () => {
    const task = await loadTask(stepTask('inline', '[[steps]]\nname = "one"\n\n[[steps]]\nname = "two"\ninstruction = "Do two, inline."\n', { 'tests/test.sh': 'exit 0' }));
    assert.equal(task.steps?.strategy, 'mean');
    assert.equal(task.steps?.steps[1]!.instruction, 'Do two, inline.');
  });

  it('refuses broken steps with one line naming the file', async () => {
    const cases: [string, string, Record<string, string>, RegExp][] = [
      ['traversal', '[[steps]]\nname = "../../etc"\n', {}, /task\.toml: field 'steps\.0\.name': '\.\.\/\.\.\/etc' is not a step folder name/],
      ['absolute', '[[steps]]\nname = "/etc"\n', {}, /'\/etc' is not a step folder name/],
      ['dot-dot', '[[steps]]\nname = ".."\n', {}, /'\.\.' is not a step folder name/],
      ['twice', '[[steps]]\nname = "one"\n[[steps]]\nname = "one"\n', {}, /step 'one' is named twice/],
      ['none', 'steps = []\n', {}, /needs at least one \[\[steps\]\] entry/],
      ['strategy', 'multi_step_reward_strategy = "median"\n[[steps]]\nname = "one"\n', {}, /field 'multi_step_reward_strategy'/],
      ['strategy-alone', 'multi_step_reward_strategy = "final"\n', { 'instruction.md': 'x', 'tests/test.sh': '' }, /multi_step_reward_strategy is set but the task has no \[\[steps\]\]/],
      ['min-reward', '[[steps]]\nname = "one"\nmin_reward = "high"\n', {}, /field 'steps\.0\.min_reward'/],
      ['no-instruction', '[[steps]]\nname = "one"\n[[steps]]\nname = "two"\n', { 'steps/two/tests/test.sh': '' }, /steps\/two\/instruction\.md: missing: step 'two' has no instruction/],
      ['no-tests', '[[steps]]\nname = "one"\n[[steps]]\nname = "two"\n', { 'steps/two/instruction.md': 'x' }, /steps\/two\/tests\/test\.sh: missing: step 'two' has no test script/],
      ['empty', '[[steps]]\nname = "one"\ninstruction = "  "\n', {}, /the instruction of step 'one' is empty/],
    ];
    for (const [name, toml, files, pattern] of cases) {
      await assert.rejects(loadTask(stepTask(`bad-${name}`, toml, files)), refused(pattern), name);
    }
  });

  it('refuses symlinked step folders, files and steps/ folders, wherever they point', async () => {
    const outside = tmp.writeTask('outside', { 'instruction.md': 'Read the host.', 'tests/test.sh': 'exit 0' });
    const linkedStep = stepTask('linked-step', '[[steps]]\nname = "one"\n[[steps]]\nname = "two"\n');
    symlinkSync(outside, path.join(linkedStep, 'steps', 'two'));
    await assert.rejects(loadTask(linkedStep), refused(/linked-step\/steps\/two: is a symlink: the files of a step must lie in the task folder itself/));
    const linkedSteps = tmp.writeTask('linked-steps', { 'task.toml': '[[steps]]\nname = "one"\n' });
    mkdirSync(path.join(outside, 'one'));
    writeFileSync(path.join(outside, 'one', 'instruction.md'), 'x');
    symlinkSync(outside, path.join(linkedSteps, 'steps'));
    await assert.rejects(loadTask(linkedSteps), refused(/linked-steps\/steps: is a symlink/));
    const linkedFile = stepTask('linked-file', '[[steps]]\nname = "one"\n[[steps]]\nname = "two"\n', { 'steps/two/tests/test.sh': '' });
    symlinkSync(path.join(outside, 'instruction.md'), path.join(linkedFile, 'steps', 'two', 'instruction.md'));
    await assert.rejects(loadTask(linkedFile), refused(/steps\/two\/instruction\.md: is a symlink/));
    const linkedTests = stepTask('linked-tests', '[[steps]]\nname = "one"\n[[steps]]\nname = "two"\n', { 'steps/two/instruction.md': 'x' });
    symlinkSync(path.join(outside, 'tests'), path.join(linkedTests, 'steps', 'two', 'tests'));
    await assert.rejects(loadTask(linkedTests), refused(/steps\/two\/tests: is a symlink/));
  });

  it('stages the task tests with the step tests over them', async () => {
    const task = await loadTask(stepsDir('steps-two'));
    const staged = path.join(tmp.dir, 'staged');
    await stageTests(task, staged, task.steps!.steps[1]);
    assert.ok(existsSync(path.join(staged, 'lib.sh')));
    assert.match(readFileSync(path.join(staged, 'test.sh'), 'utf8'), /STEP2-SECRET/);
    await stageTests(task, staged, task.steps!.steps[0]);
    assert.doesNotMatch(readFileSync(path.join(staged, 'test.sh'), 'utf8'), /STEP2-SECRET/);
  });
});

describe('step rewards', () => {
  it('gates on min_reward: a number on reward, a table on each metric, a missing metric misses', () => {
    assert.equal(minRewardMiss(undefined, { reward: 0 }), undefined);
    assert.equal(minRewardMiss({ reward: 1 }, { reward: 1 }), undefined);
    assert.equal(minRewardMiss({ reward: 1 }, { reward: 0.5 }), 'reward 0.5 is below min_reward 1');
    assert.equal(minRewardMiss({ quality: 0.5, speed: 0.1 }, { reward: 1, quality: 0.7 }), "no metric 'speed' (min_reward 0.1)");
  });

  it('combines the steps metrics: the mean per metric (absent counts 0) or the final step', () => {
    const steps: Record<string, number>[] = [{ reward: 1, a: 1 }, { reward: 0.5 }, { reward: 0, b: 3 }];
    assert.deepEqual(combineMetrics('mean', steps), { reward: 0.5, a: 1 / 3, b: 1 });
    assert.deepEqual(combineMetrics('final', steps), { reward: 0, b: 3 });
    assert.deepEqual(combineMetrics('mean', []), {});
  });
});

for (const { name, backend } of available) {
  const skip = backend instanceof Error ? `${backend.message}` : false;
  describe(`multi-step runs (${name} backend)`, { skip }, () => {
    const be = backend as Exclude<typeof backend, Error>;
    const runs = path.join(tmp.dir, `runs-${name}`);
    const agent = nodeAgent('instructed.mjs');

    it('runs each step (instruction, then its tests) on one workspace; the agent never reads a step tests', async () => {
      // What the agent tries in every step: the staged tests, and (when isolated) the task folder itself.
      const secret = path.join(stepsDir('steps-two'), 'steps', '02-extend', 'tests', 'test.sh');
      const probe = `cat ../tests/test.sh /tests/test.sh ${be.isolated ? `'${secret}'` : ''} 2>&1; ls ../tests /tests 2>&1; true`;
      const { result, events } = await runFixture(be, runs, agent, { task: await loadTask(stepsDir('steps-two')), env: { AGENT_PROBE: probe } });
      assert.equal(result.passed, true, result.error ?? '');
      assert.equal(result.reward, 1);
      assert.equal(result.reward_strategy, 'mean');
      assert.equal(result.task_steps_total, 2);
      assert.deepEqual(result.task_steps?.map((s) => [s.step, s.name, s.reward, s.passed, s.stopped, s.agent_steps]), [
        [1, '01-write', 1, true, null, 3],
        [2, '02-extend', 1, true, null, 3],
      ]);
      assert.deepEqual(result.task_steps?.map((s) => s.metrics), [{ reward: 1, lines: 1 }, { reward: 1, lines: 2 }]);
      assert.deepEqual(result.verification?.metrics, { reward: 1, lines: 1.5 });
      assert.equal(result.steps, 6);
      assert.deepEqual(await readResult(result.run_dir), result);
      // The trajectory: each agent step carries its task step; outputs stay apart per step.
      const trajectory = JSON.parse(readFileSync(runFiles(result.run_dir).trajectory, 'utf8')) as TrajectoryEntry[];
      assert.deepEqual(trajectory.map((e) => [e.task_step, e.step]), [[1, 1], [1, 2], [1, 3], [2, 1], [2, 2], [2, 3]]);
      const outputs = ['task-steps/01-write/steps/0001.log', 'task-steps/01-write/steps/0002.log', null, 'task-steps/02-extend/steps/0001.log', 'task-steps/02-extend/steps/0002.log', null];
      assert.deepEqual(trajectory.map((e) => e.output_file), outputs);
      for (const file of outputs) if (file) assert.ok(existsSync(path.join(result.run_dir, file)), file);
      // The probe found no tests in either step's agent phase.
      const probes = [trajectory[1]!, trajectory[4]!].map((e) => readFileSync(path.join(result.run_dir, e.output_file!), 'utf8'));
      for (const seen of probes) {
        assert.doesNotMatch(seen, /STEP2-SECRET|reward_json/);
        assert.match(seen, /No such file or directory/);
      }
      // Each step keeps its verifier files and test output; the run's logs folder is left empty.
      const stepDir = (s: string) => path.join(result.run_dir, 'task-steps', s);
      assert.deepEqual(JSON.parse(readFileSync(path.join(stepDir('01-write'), 'logs', 'verifier', 'reward.json'), 'utf8')), { reward: 1, lines: 1 });
      assert.match(readFileSync(path.join(stepDir('02-extend'), 'verifier', 'test-output.log'), 'utf8'), /step 2 tests ran/);
      assert.equal(result.notes?.some((n) => /left by the agent phase/.test(n)), false, JSON.stringify(result.notes));
      // The work carried on, with step 2's workdir merged in.
      assert.equal(readFileSync(path.join(runFiles(result.run_dir).workspace, 'log.txt'), 'utf8'), 'one\ntwo\n');
      assert.ok(events.some((e) => e.type === 'notice' && e.message === 'step 2 of 2: 02-extend'));
      assert.equal(events.filter((e) => e.type === 'verification-ended').length, 2);
    });

    it('a step agent that leaves a process behind cannot forge a later step reward nor take its tests', async () => {
      const token = `belay-steps-forger-${name}`;
      // One forgery at once (so the attempt is sure to happen in the agent phase), then a loop left running.
      const forger = `d="$BELAY_WORKDIR/../logs/verifier"; mkdir -p "$d" 2>/dev/null && echo '{"reward": 1, "lines": 2}' > "$d/reward.json"; setsid sh -c 'while :; do d="$BELAY_WORKDIR/../logs/verifier"; mkdir -p "$d" 2>/dev/null && echo "{\\"reward\\": 1, \\"lines\\": 2}" > "$d/reward.json"; cp -r "$BELAY_WORKDIR/../tests" "$BELAY_WORKDIR/stolen" 2>/dev/null; cp -r /tests "$BELAY_WORKDIR/stolen-too" 2>/dev/null; sleep 0.05; done; : ${token}' >/dev/null 2>&1 < /dev/null &`;
      const { result } = await runFixture(be, runs, agent, { task: await loadTask(stepsDir('steps-two')), env: { AGENT_PROBE: forger, AGENT_SKIP: '^echo two' } });
      assert.deepEqual(result.task_steps?.map((s) => [s.name, s.reward]), [['01-write', 1], ['02-extend', 0]]);
      assert.equal(result.passed, false);
      const workspace = runFiles(result.run_dir).workspace;
      // A copy of the staged folder while it is empty (between phases) holds nothing: no file of the tests may get out.
      const taken = ['stolen', 'stolen-too'].flatMap((dir) => (existsSync(path.join(workspace, dir)) ? readdirSync(path.join(workspace, dir), { recursive: true }).map(String) : []));
      assert.deepEqual(taken, [], 'the tests were copied out');
      assert.deepEqual(processesWith(token), []);
      // Where the agent could write the logs folder (no isolation), it did: the forger ran.
      if (!be.isolated) assert.ok(result.notes?.some((n) => n.startsWith('removed logs/verifier/reward.json, left by the agent phase')), JSON.stringify(result.notes));
    });

    it('takes the final step reward under "final", runs setup.sh, falls back to the task tests', async () => {
      const { result } = await runFixture(be, runs, agent, { task: await loadTask(stepsDir('steps-three')) });
      assert.deepEqual(result.task_steps?.map((s) => s.reward), [1, 0.5, 1]);
      assert.deepEqual(result.task_steps?.[1]!.metrics, { reward: 0.5, quality: 0.5 });
      assert.equal(result.reward, 1);
      assert.equal(result.passed, true, result.error ?? '');
      assert.equal(result.failure_cause, null);
    });

    it('takes the mean under "mean": a half-marked step keeps the task from passing', async () => {
      const task = await loadTask(variant('steps-three', `mean-${name}`, (toml) => toml.replace('"final"', '"mean"')));
      const { result } = await runFixture(be, runs, agent, { task });
      assert.equal(result.reward_strategy, 'mean');
      assert.equal(Math.round(result.reward! * 1000), 833);
      assert.equal(result.passed, false);
      assert.equal(result.failure_cause, 'tests_failed');
      assert.match(result.error ?? '', /step '02-partial'/);
    });

    it('stops after a step below its min_reward: the later steps never run', async () => {
      const { result, events } = await runFixture(be, runs, agent, { task: await loadTask(stepsDir('steps-three')), env: { AGENT_SKIP: '^echo a' } });
      assert.equal(result.passed, false);
      assert.equal(result.task_steps?.length, 1);
      assert.equal(result.task_steps?.[0]!.stopped, "step '01-init': reward 0 is below min_reward 1: the remaining steps do not run");
      assert.equal(result.reward, 0);
      assert.equal(result.failure_cause, 'tests_failed');
      assert.match(result.error ?? '', /below min_reward 1/);
      assert.equal(events.some((e) => e.type === 'notice' && /step 2 of 3/.test(e.message)), false);
      assert.equal(existsSync(path.join(runFiles(result.run_dir).workspace, 'setup-ran.txt')), false);
    });

    it('stops when a min_reward table names a metric the tests did not write', async () => {
      const task = await loadTask(variant('steps-three', `missing-metric-${name}`, (toml) => toml.replace('min_reward = { quality = 0.25 }', 'min_reward = { speed = 0.1 }')));
      const { result } = await runFixture(be, runs, agent, { task });
      assert.equal(result.task_steps?.length, 2);
      assert.match(result.task_steps?.[1]!.stopped ?? '', /no metric 'speed' \(min_reward 0\.1\)/);
      assert.equal(result.passed, false);
    });
  });
}
