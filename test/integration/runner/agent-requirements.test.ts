// A Term Challenge agent.py with its requirements.txt: real wheels made here, installed by the
// environment's own pip from a wheelhouse before the agent starts (each backend: local, sandbox,
// container), the agent importing them; and each way the install cannot happen (no network and no
// wheelhouse, a hostile file, a package the wheelhouse lacks) ending the run before any agent
// starts, in one line.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import type { Backend } from '../../../src/runner/core/backends/backend.ts';
import { BASE_IMAGE } from '../../../src/runner/core/backends/image-base.ts';
import { REQUIREMENTS_LOG } from '../../../src/runner/core/run/agentRequirements.ts';
import { runFiles, type RunResult } from '../../../src/runner/core/records/records.ts';
import { loadTask } from '../../../src/runner/core/tasks/task.ts';
import { containerOrReason } from '../../support/runner/container-helpers.ts';
import { backends, repoRoot, runFixture, tempDir } from '../../support/runner/helpers.ts';
import { ensureBuilt } from '../../support/build.ts';
import { runCli } from '../../support/cli-process.ts';
import { namedHosts } from '../../support/runner/namedHosts.ts';
import { writeWheel } from '../../support/runner/wheel.ts';

const tmp = tempDir('belay-agent-requirements-');
after(() => tmp.remove());

const wheelhouse = path.join(tmp.dir, 'wheelhouse');
mkdirSync(wheelhouse);
writeWheel(wheelhouse, 'belay_probe', '1.2.0', { '__init__.py': 'ANSWER = 42\n' });
writeWheel(wheelhouse, 'belay_top', '0.1.0', { '__init__.py': 'from belay_probe import ANSWER\n' }, ['belay_probe>=1']);
// A package larger than the small disk budget one test gives its run.
writeWheel(wheelhouse, 'belay_big', '1.0', { '__init__.py': '', 'blob.txt': randomBytes(3 * 1024 * 1024).toString('base64') });

// The agent: imports what its requirements name and writes the answer; says where it ran first.
const AGENT = `import os, sys
open('agent-ran.txt', 'w').write('yes')
try:
    import belay_top
    open('answer.txt', 'w').write(str(belay_top.ANSWER))
    print('imported from ' + belay_top.__file__, file=sys.stderr)
except ImportError as error:
    print('not installed: %s' % error, file=sys.stderr)
print('[DONE]')
`;
const agentWith = (name: string, requirements: string) => tmp.writeTask(name, { 'agent.py': AGENT, 'requirements.txt': requirements });
const goodAgent = agentWith('agent', '# what the agent imports\nbelay_top>=0.1\n');

const task = tmp.writeTask('answer', {
  'task.toml': 'version = "1.0"\n[agent]\ntimeout_sec = 120.0\n[verifier]\ntimeout_sec = 30.0\n',
  'instruction.md': 'Write the answer to answer.txt.\n',
  'tests/test.sh': '#!/bin/sh\n[ "$(cat answer.txt)" = 42 ]\n',
});

const available: { name: string; backend: Backend | Error }[] = [
  ...(await Promise.all(backends.map(async (b) => ({ name: b.name, backend: await b.get() })))),
  { name: 'container', backend: await containerOrReason() },
];

const agentStderr = (result: RunResult) => (existsSync(runFiles(result.run_dir).agentStderr) ? readFileSync(runFiles(result.run_dir).agentStderr, 'utf8') : '');
const agentRan = (result: RunResult) => existsSync(path.join(runFiles(result.run_dir).workspace, 'agent-ran.txt'));

for (const { name, backend } of available) {
  describe(`an agent's requirements.txt (${name} backend)`, { skip: backend instanceof Error ? backend.message : false }, () => {
    const be = backend as Backend;
    const runs = path.join(tmp.dir, `runs-${name}`);
    const run = async (agentDir: string, options: { wheelhouse?: string; limits?: { diskBudgetBytes: number }; task?: string } = {}) =>
      runFixture(be, runs, `python3 '${path.join(agentDir, 'agent.py')}'`, { protocol: 'sdk3', agentCwd: agentDir, agentFolders: [], ...options, task: await loadTask(options.task ?? task) });

    it('installed from the wheelhouse before the agent starts, inside its environment: the agent imports them (reward 1)', async () => {
      const { result } = await run(goodAgent, { wheelhouse });
      assert.equal(result.reward, 1, `${result.error ?? ''} ${agentStderr(result).slice(-400)}`);
      const log = readFileSync(path.join(result.run_dir, REQUIREMENTS_LOG), 'utf8');
      assert.match(log, /^\$ python3 -m pip install .* --no-index --find-links \S+wheelhouse -- belay_top>=0\.1$/m);
      assert.match(log, /Successfully installed belay_probe-1\.2\.0 belay_top-0\.1\.0/);
      assert.match(log, /^\[installed\]$/m);
      assert.ok(result.notes?.some((n) => /^the agent's 1 requirement installed from the wheelhouse \S+wheelhouse \(requirements\.log\)$/.test(n)));
      // Not into the agent's folder, nor its working folder: a folder of the run's environment.
      assert.match(agentStderr(result), be.isolated ? /^imported from \/tmp\/belay-agent-python\/belay_top\/__init__\.py$/m : /^imported from \S+\/scratch\/agent-python\/belay_top\/__init__\.py$/m);
      assert.equal(existsSync(path.join(goodAgent, 'belay_top')), false);
      assert.equal(existsSync(path.join(runFiles(result.run_dir).workspace, 'belay_top')), false);
    });

    it('no network and no wheelhouse: one line before the agent starts, a setup failure', async () => {
      const { result } = await run(goodAgent);
      assert.equal(result.failure_cause, 'setup_error');
      assert.equal(result.steps, 0);
      assert.equal(result.error, `${path.join(goodAgent, 'requirements.txt')}: the agent's requirements have nowhere to come from: the agent phase has no network and no wheelhouse is named: name a folder of wheels with --wheelhouse DIR (belay.runner.wheelhouse), or install them into the image`);
      assert.equal(agentRan(result), false);
    });

    it('a package the wheelhouse does not hold: pip\'s reason in one line, the agent never started', async () => {
      const { result } = await run(agentWith(`missing-${name}`, 'belay_top\nbelay_absent==3\n'), { wheelhouse });
      assert.equal(result.failure_cause, 'setup_error');
      assert.match(result.error ?? '', /requirements\.txt: the agent's requirements could not be installed: .*belay_absent==3.* \(see requirements\.log\)$/);
      assert.doesNotMatch(result.error ?? '', /\n/);
      assert.equal(agentRan(result), false);
      assert.match(readFileSync(path.join(result.run_dir, REQUIREMENTS_LOG), 'utf8'), /belay_absent/);
    });

    it('the install is held to the run\'s disk budget: a package larger than it ends the run before the agent starts', async () => {
      const { result } = await run(agentWith(`big-${name}`, 'belay_big\n'), { wheelhouse, limits: { diskBudgetBytes: 2 * 1024 * 1024 } });
      assert.ok(result.failure_cause === 'disk_budget' || result.failure_cause === 'setup_error', `${result.failure_cause}: ${result.error}`);
      assert.doesNotMatch(result.error ?? '', /\n/);
      assert.equal(agentRan(result), false);
    });

    it('a hostile requirements.txt (a URL, -e, another index, a path outside the agent\'s folder): refused in one line, pip never runs', async () => {
      for (const [i, line] of ['https://evil.example/x-1.0.tar.gz', '-e ../../outside', '--index-url http://127.0.0.1:9/simple', '../outside/project', 'x @ file:///etc'].entries()) {
        const { result } = await run(agentWith(`hostile-${name}-${i}`, `belay_top\n${line}\n`), { wheelhouse });
        assert.equal(result.failure_cause, 'setup_error', line);
        assert.match(result.error ?? '', /requirements\.txt:2: ".*" is (a pip option|not a named package): /, line);
        assert.equal(agentRan(result), false);
        assert.equal(existsSync(path.join(result.run_dir, REQUIREMENTS_LOG)), false);
      }
    });
  });
}

describe('an agent\'s requirements.txt where the environment has no pip (container backend)', { skip: available[2]!.backend instanceof Error ? (available[2]!.backend as Error).message : false }, () => {
  it('one line naming what is missing, before the agent starts', async () => {
    const noPip = tmp.writeTask(`no-pip-${process.pid}`, {
      'task.toml': 'version = "1.0"\n[agent]\ntimeout_sec = 60.0\n[verifier]\ntimeout_sec = 30.0\n',
      'instruction.md': 'Write the answer.\n',
      'environment/Dockerfile': `FROM ${BASE_IMAGE}\nRUN rm -rf /usr/lib/python3/dist-packages/pip\n`,
      'tests/test.sh': '#!/bin/sh\n[ "$(cat answer.txt)" = 42 ]\n',
    });
    const { result } = await runFixture(available[2]!.backend as Backend, path.join(tmp.dir, 'runs-no-pip'), `python3 '${path.join(goodAgent, 'agent.py')}'`, { task: await loadTask(noPip), protocol: 'sdk3', agentCwd: goodAgent, agentFolders: [], wheelhouse });
    assert.equal(result.failure_cause, 'setup_error');
    assert.equal(result.error, `${path.join(goodAgent, 'requirements.txt')}: the agent's requirements cannot be installed: python3 has no pip module in the agent's environment (the base image has python3-pip; a task's own image needs it)`);
    assert.equal(agentRan(result), false);
  });
});

describe('an agent\'s requirements.txt from the package index, through the allowlist proxy (sandbox backend)', { skip: available[1]!.backend instanceof Error ? (available[1]!.backend as Error).message : false }, () => {
  // The index's hosts stand for themselves at public addresses; the proxy really connects to a
  // web server here, which speaks no TLS: pip gets through the proxy, then finds nothing.
  const hosts = namedHosts({ 'pypi.org': '203.0.113.30', 'files.pythonhosted.org': '203.0.113.31' });
  after(() => hosts.close());

  it('pip reaches pypi.org only through Belay\'s proxy (each attempt in network.jsonl); what it could not get is one line, no agent started', async () => {
    await hosts.start();
    const indexTask = tmp.writeTask('answer-index', {
      'task.toml': 'version = "1.0"\n[agent]\ntimeout_sec = 120.0\nnetwork_mode = "allowlist"\nallowed_hosts = ["pypi.org", "files.pythonhosted.org"]\n[verifier]\ntimeout_sec = 30.0\n',
      'instruction.md': 'Write the answer.\n',
      'tests/test.sh': '#!/bin/sh\n[ "$(cat answer.txt)" = 42 ]\n',
    });
    const { result } = await runFixture(available[1]!.backend as Backend, path.join(tmp.dir, 'runs-index'), `python3 '${path.join(goodAgent, 'agent.py')}'`, {
      task: await loadTask(indexTask),
      protocol: 'sdk3',
      agentCwd: goodAgent,
      agentFolders: [],
      resolveNetwork: (host) => hosts.resolve(host),
    });
    assert.equal(result.failure_cause, 'setup_error');
    assert.match(result.error ?? '', /requirements\.txt: the agent's requirements could not be installed: .*belay_top.* \(see requirements\.log\)$/);
    assert.equal(agentRan(result), false);
    const attempts = readFileSync(path.join(result.run_dir, 'network.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { host: string; port: number; allowed: boolean; phase: string });
    assert.ok(attempts.length > 0 && attempts.every((a) => a.host === 'pypi.org' && a.port === 443 && a.allowed && a.phase === 'agent'), JSON.stringify(attempts));
  });
});

describe('belay run --wheelhouse', () => {
  const cli = path.join(repoRoot, 'dist', 'cli.js');
  const belay = (args: string[]) => runCli(cli, ['run', task, '--agent', `python3 '${path.join(goodAgent, 'agent.py')}'`, '--protocol', 'sdk3', '--backend', 'local', '--json', ...args], { cwd: tmp.dir });

  it('a run and a job (kept with it) install the agent\'s requirements from it; without it the run says why in one line', async () => {
    ensureBuilt();
    const single = await belay(['--out', path.join(tmp.dir, 'cli-runs'), '--wheelhouse', wheelhouse]);
    assert.equal(single.code, 0, single.stderr);
    assert.equal((JSON.parse(single.stdout) as { results: RunResult[] }).results[0]!.reward, 1);
    const job = await belay(['--out', path.join(tmp.dir, 'cli-jobs'), '--attempts', '1', '--wheelhouse', wheelhouse]);
    assert.equal(job.code, 0, job.stderr);
    const without = await belay(['--out', path.join(tmp.dir, 'cli-runs')]);
    assert.equal(without.code, 1);
    assert.match((JSON.parse(without.stdout) as { results: RunResult[] }).results[0]!.error ?? '', /requirements\.txt: the agent's requirements have nowhere to come from: /);
  });
});
