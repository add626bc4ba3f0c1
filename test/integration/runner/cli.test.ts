import assert from 'node:assert/strict';
import { type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { agentFile, fixtures, nodeAgent, processesWith, repoRoot, taskDir, tempDir } from '../../support/runner/helpers.ts';
import { runCli, type CliRun } from '../../support/cli-process.ts';
import { ensureBuilt } from '../../support/build.ts';

const tmp = tempDir('belay-cli-');
after(() => tmp.remove());
const cli = path.join(repoRoot, 'dist', 'cli.js');

before(() => {
  ensureBuilt();
});

function belay(args: string[], onStderr?: (text: string, child: ChildProcess) => void): Promise<CliRun> {
  return runCli(cli, args, { cwd: repoRoot, ...(onStderr ? { onStderr } : {}) });
}

describe('belay run', () => {
  it('is listed in belay --help', async () => {
    const { stdout } = await belay(['--help']);
    assert.match(stdout, /^\s+run\s+run an agent/m);
    assert.match(stdout, /^\s+nanobot\s+run a nanobot/m);
  });

  it('runs a task: live progress on stderr, the summary table on stdout, exit 0, records in --out', async () => {
    const out = path.join(tmp.dir, 'pass');
    const { code, stdout, stderr } = await belay(['run', taskDir('hello'), '--agent', nodeAgent('multi-step.mjs'), '--protocol', 'sdk1', '--backend', 'local', '--out', out]);
    assert.equal(code, 0, stderr);
    assert.match(stderr, /backend local \(no isolation/);
    assert.match(stderr, /\[hello\] step 1: \$ echo 'Hello, world!' > hello\.txt/);
    assert.match(stderr, /\[hello\] step 2: exit 0 \(\d+ ms\)/);
    assert.match(stderr, /\[hello\] PASSED/);
    const lines = stdout.trim().split('\n');
    assert.match(lines[0]!, /^task\s+result\s+reward\s+steps\s+time\s+backend\s+cause$/);
    assert.match(lines[2]!, /^hello\s+passed\s+1\s+3\s+\d+\.\ds\s+local$/);
    assert.equal(lines.at(-1), '1/1 passed');
    const [runDir] = readdirSync(out);
    assert.deepEqual(readdirSync(path.join(out, runDir!)).filter((f) => f.endsWith('.json')).sort(), ['result.json', 'trajectory.json']);
  });

  it('exits 1 when a task fails, naming the cause; --json prints the results', async () => {
    const { code, stdout } = await belay([
      'run', taskDir('hello'), '--agent', nodeAgent('infinite.mjs'), '--protocol', 'sdk1', '--backend', 'local', '--max-steps', '3', '--out', path.join(tmp.dir, 'fail'), '--json',
    ]);
    assert.equal(code, 1);
    const parsed = JSON.parse(stdout) as { results: { task_name: string; failure_cause: string; steps: number }[] };
    assert.deepEqual(parsed.results.map((r) => [r.task_name, r.failure_cause, r.steps]), [['hello', 'max_steps', 3]]);
  });

  it('discovers every task under a folder and runs them concurrently', async () => {
    const { code, stdout } = await belay([
      'run', path.join(fixtures, 'tasks'), '--agent', nodeAgent('multi-step.mjs'), '--protocol', 'sdk1', '--backend', 'local', '--concurrency', '2', '--out', path.join(tmp.dir, 'many'),
    ]);
    assert.equal(code, 1);
    assert.match(stdout, /^hello\s+passed/m);
    assert.match(stdout, /^legacy-hello\s+passed/m);
    assert.match(stdout, /^partial\s+failed\s+0\s+3\s+\S+\s+local\s+tests_failed$/m);
    assert.match(stdout, /2\/3 passed/);
  });

  it("gives the agent --env variables and never the shell's environment", async () => {
    process.env.BELAY_CLI_SHELL_SECRET = 'from-the-shell';
    process.env.BELAY_CLI_PASSED_ON = 'passed-on';
    try {
      const out = path.join(tmp.dir, 'env');
      const { code, stderr } = await belay([
        'run', taskDir('hello'), '--agent', nodeAgent('commands.mjs'), '--protocol', 'sdk1', '--backend', 'local', '--out', out,
        '--env', 'AGENT_COMMANDS=["env > seen-env.txt"]', '--env', 'GIVEN=a=b', '--env', 'BELAY_CLI_PASSED_ON',
      ]);
      assert.equal(code, 1, stderr);
      const seen = readFileSync(path.join(out, readdirSync(out)[0]!, 'app', 'seen-env.txt'), 'utf8');
      assert.match(seen, /^GIVEN=a=b$/m);
      assert.match(seen, /^BELAY_CLI_PASSED_ON=passed-on$/m);
      assert.match(seen, /^TERM_TASK_ID=hello$/m);
      assert.doesNotMatch(seen, /BELAY_CLI_SHELL_SECRET/);
      const unset = await belay(['run', taskDir('hello'), '--agent', 'x', '--protocol', 'sdk1', '--env', 'BELAY_CLI_NEVER_SET']);
      assert.equal(unset.code, 2);
      assert.match(unset.stderr, /--env: BELAY_CLI_NEVER_SET is not set in this environment/);
    } finally {
      delete process.env.BELAY_CLI_SHELL_SECRET;
      delete process.env.BELAY_CLI_PASSED_ON;
    }
  });

  it('exits 2 on usage errors and never guesses the protocol', async () => {
    const noProtocol = await belay(['run', taskDir('hello'), '--agent', 'x']);
    assert.equal(noProtocol.code, 2);
    assert.match(noProtocol.stderr, /--protocol must be sdk1, sdk2, sdk3, claude-code, codex, gemini-cli or opencode \(got nothing\): the protocol is never guessed/);
    const badBackend = await belay(['run', taskDir('hello'), '--agent', 'x', '--protocol', 'sdk1', '--backend', 'docker']);
    assert.equal(badBackend.code, 2);
    const badSteps = await belay(['run', taskDir('hello'), '--agent', 'x', '--protocol', 'sdk1', '--max-steps', '0']);
    assert.equal(badSteps.code, 2);
    assert.match(badSteps.stderr, /--max-steps needs a positive whole number, got '0'/);
    const badLimit = await belay(['run', taskDir('hello'), '--agent', 'x', '--protocol', 'sdk1', '--log-limit', '0']);
    assert.equal(badLimit.code, 2);
    assert.match(badLimit.stderr, /--log-limit needs a positive number, got '0'/);
    const badBudget = await belay(['run', taskDir('hello'), '--agent', 'x', '--protocol', 'sdk1', '--disk-budget', 'lots']);
    assert.equal(badBudget.code, 2);
    assert.match(badBudget.stderr, /--disk-budget needs a positive number, got 'lots'/);
    const noTask = await belay(['run', tmp.dir, '--agent', 'x', '--protocol', 'sdk1']);
    assert.equal(noTask.code, 2);
    assert.match(noTask.stderr, /no task \(task\.toml or task\.yaml\)/);
    const unknown = await belay(['run', '--bogus']);
    assert.equal(unknown.code, 2);
  });

  it('stops on Ctrl-C: everything it started is killed and the run records say aborted', async () => {
    const token = `belay-cli-sigint-${process.pid}`;
    let sent = false;
    const { code, stdout, stderr, signal } = await belay(
      ['run', taskDir('hello'), '--agent', `${nodeAgent('silent.mjs')} ${token}`, '--protocol', 'sdk1', '--backend', 'local', '--out', path.join(tmp.dir, 'sigint')],
      (stderr, child) => {
        if (!sent && stderr.includes('[hello] started')) {
          sent = true;
          child.kill('SIGINT');
        }
      },
    );
    assert.equal(code, 1, `signal ${signal}; stderr: ${stderr}`);
    assert.match(stdout, /^hello\s+failed\s+0\s+\d+\s+\S+\s+local\s+aborted$/m);
    assert.deepEqual(processesWith(token), []);
  });
});

describe('belay nanobot', () => {
  const command = `'${process.execPath}' '${agentFile('nanobot-rich.mjs')}'`;

  it('prints what the user would see and exits 0', async () => {
    const { code, stdout, stderr } = await belay(['nanobot', '--command', command, '--protocol', 'rich', '--text', 'draw a cat', '--workspace', tmp.dir, '--backend', 'local']);
    assert.equal(code, 0, stderr);
    const users = path.join(tmp.dir, 'users', 'local');
    assert.equal(stdout, `⏳ Thinking...\nYou said: draw a cat (message #1)\nGenerated image:\n[media] ${path.join(users, 'generated.png')}\n`);
    assert.match(stderr, /\[info\] envelope keys/);
  });

  it('exits 1 with the error shown when the agent fails; --json gives the whole result', async () => {
    const failed = await belay(['nanobot', '--command', command, '--protocol', 'rich', '--text', 'please fail', '--workspace', tmp.dir, '--backend', 'local']);
    assert.equal(failed.code, 1);
    assert.match(failed.stdout, /^Error: Failed to render image \(exit code 3\) \[RENDER_FAIL\]$/m);
    const json = await belay(['nanobot', '--command', 'echo {message}', '--text', 'a b', '--workspace', tmp.dir, '--json', '--backend', 'local']);
    assert.equal(json.code, 0);
    assert.deepEqual((JSON.parse(json.stdout) as { messages: unknown }).messages, [{ text: 'a b', media: [] }]);
  });

  it('exits 2 on usage errors', async () => {
    assert.equal((await belay(['nanobot', '--command', 'true'])).code, 2);
    const badProtocol = await belay(['nanobot', '--command', 'true', '--text', 'x', '--protocol', 'fancy']);
    assert.equal(badProtocol.code, 2);
    assert.match(badProtocol.stderr, /--protocol:/);
  });
});
