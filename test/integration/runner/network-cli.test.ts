// `belay run` and a task's public network: refused without --allow-public-network, in one line;
// run with it (through the proxy, on the local backend here, which says it enforces nothing).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { nodeAgent, repoRoot, tempDir } from '../../support/runner/helpers.ts';
import { runCli } from '../../support/cli-process.ts';
import { ensureBuilt } from '../../support/build.ts';

const tmp = tempDir('belay-netcli-');
after(() => tmp.remove());
const cli = path.join(repoRoot, 'dist', 'cli.js');
before(() => ensureBuilt());

const task = tmp.writeTask('public-task', { 'task.toml': '[agent]\nnetwork_mode = "public"\n', 'instruction.md': 'Nothing.\n', 'tests/test.sh': 'exit 0\n' });
const belay = (args: string[]) => runCli(cli, ['run', task, '--agent', nodeAgent('commands.mjs'), '--protocol', 'sdk1', '--backend', 'local', '--env', 'AGENT_COMMANDS=[]', ...args], { cwd: repoRoot });

describe('belay run --allow-public-network', () => {
  it('is in the usage', async () => {
    const { stdout } = await runCli(cli, ['run', '--help'], { cwd: repoRoot });
    assert.match(stdout, /--allow-public-network {3}let a task whose network_mode is "public" run/);
  });

  it('without it, a public task does not start and says why in one line', async () => {
    const out = path.join(tmp.dir, 'refused');
    const { code, stdout, stderr } = await belay(['--out', out, '--json']);
    assert.equal(code, 1, stderr);
    const [result] = (JSON.parse(stdout) as { results: { failure_cause: string; error: string; steps: number }[] }).results;
    assert.equal(result!.failure_cause, 'setup_error');
    assert.match(result!.error, /public-task\/task\.toml: \[agent\] network_mode "public" needs the public network, which belay\.runner\.allowPublicNetwork \(--allow-public-network\) does not allow; the run did not start$/);
    assert.equal(result!.steps, 0);
  });

  it('with it, the task runs, the proxy announced and its limits said', async () => {
    const out = path.join(tmp.dir, 'allowed');
    const { code, stderr } = await belay(['--out', out, '--allow-public-network']);
    assert.equal(code, 0, stderr);
    const [runDir] = readdirSync(out);
    const result = JSON.parse(readFileSync(path.join(out, runDir!, 'result.json'), 'utf8')) as { passed: boolean; notes: string[] };
    assert.equal(result.passed, true);
    assert.ok(result.notes.some((note) => /agent phase network: public — the local backend cannot enforce it/.test(note)), result.notes.join('\n'));
  });

  it('cannot be given with --resume: the job keeps its own', async () => {
    const { code, stderr } = await runCli(cli, ['run', '--resume', tmp.dir, '--allow-public-network'], { cwd: repoRoot });
    assert.equal(code, 2);
    assert.match(stderr, /--allow-public-network cannot be given with --resume/);
  });
});
