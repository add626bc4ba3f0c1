import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { runFiles } from '../../../src/runner/core/records/records.ts';
import { DoneMarker, sdk3Script } from '../../../src/runner/core/protocols/sdk3.ts';
import { freePort } from '../../../src/runner/core/protocols/sdk2.ts';
import { containerOrReason } from '../../support/runner/container-helpers.ts';
import { backends, nodeAgent, nodeDir, processesWith, runFixture, tempDir } from '../../support/runner/helpers.ts';

// Resolved before any test is registered: node:test runs root hooks early after a top-level await.
const available = await Promise.all(backends.map(async (b) => ({ ...b, backend: await b.get() })));
const container = await containerOrReason();
const tmp = tempDir('belay-sdk3-');
after(() => tmp.remove());

// An SDK 3.0 agent written for these tests: `--instruction TEXT`, its own commands, [DONE] on stdout.
// SDK3_MODE: done (default), no-done, hang, flood, split, inline, done-then-hang, crash.
const agentDir = path.join(tmp.dir, 'agent');
const agentPath = tmp.writeTask('agent', {
  'sdk3.mjs': `import { execSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
const mode = process.env.SDK3_MODE ?? 'done';
const at = process.argv.indexOf('--instruction');
const instruction = at >= 0 ? process.argv[at + 1] : undefined;
if (instruction === undefined) { console.error('usage: sdk3.mjs --instruction TEXT\\nerror: the following arguments are required: --instruction'); process.exit(2); }
console.error(JSON.stringify({ instruction, cwd: process.cwd(), TERM_TASK_ID: process.env.TERM_TASK_ID, EVALUATION_MODE: process.env.EVALUATION_MODE,
  LLM_PROXY_URL: process.env.LLM_PROXY_URL ?? null, BELAY_INSTRUCTION: process.env.BELAY_INSTRUCTION ?? null, args: process.argv.length - at - 1 }));
console.log('Task: ' + instruction.slice(0, 40));
execSync("echo 'Hello, world!' > hello.txt");
const forever = () => setInterval(() => {}, 1000);
const write = (text) => new Promise((resolve) => process.stdout.write(text, resolve));
if (mode === 'done') console.log('[DONE] Task completed');
else if (mode === 'hang') { execSync('sleep ' + (process.env.SDK3_SLEEP ?? '600') + ' >/dev/null 2>&1 &'); forever(); }
else if (mode === 'flood') { const line = 'x'.repeat(1023) + '\\n'; for (let i = 0; i < 40 * 1024; i++) await write(line); console.log('[DONE]'); }
else if (mode === 'split') { await write('working\\n  [DO'); await new Promise((r) => setTimeout(r, 300)); await write('NE] finished\\n'); }
else if (mode === 'inline') console.log('data: [DONE]');
else if (mode === 'done-then-hang') { console.log('[DONE]'); forever(); }
else if (mode === 'crash') { console.error('Traceback: boom'); process.exit(3); }
`,
});
const agent = `'${process.execPath}' '${path.join(agentPath, 'sdk3.mjs')}'`;

describe('SDK 3.0: the [DONE] marker', () => {
  const seen = (...chunks: string[]) => {
    const marker = new DoneMarker();
    for (const chunk of chunks) marker.feed(chunk);
    return marker.seen;
  };

  it('counts [DONE] at the start of a line, after blanks, whatever follows it', () => {
    assert.equal(seen('[DONE]\n'), true);
    assert.equal(seen('[DONE] Task completed\n'), true);
    assert.equal(seen('step 1\n  \t[DONE]'), true);
    assert.equal(seen('step 1\r\n[DONE]\r\n'), true);
  });

  it('finds it split across chunks, a character at a time included', () => {
    assert.equal(seen('work\n[DO', 'NE]\n'), true);
    assert.equal(seen(...'ok\n[DONE]'.split('')), true);
  });

  it('does not count it inside a line, or a look-alike', () => {
    assert.equal(seen('data: [DONE]\n'), false);
    assert.equal(seen('the marker is [DONE]\n'), false);
    assert.equal(seen('[DON', 'E', '\n'), false);
    assert.equal(seen('[done]\n', '[DONE\n', 'DONE]\n'), false);
    assert.equal(seen('x'.repeat(100_000) + '[DONE]'), false);
  });

  it("appends --instruction to the agent's command and takes the text from the environment, never from a quoted string", () => {
    assert.equal(sdk3Script('python3 agent.py'), 'belay_instruction=$BELAY_INSTRUCTION; unset BELAY_INSTRUCTION\npython3 agent.py --instruction "$belay_instruction"');
  });
});

for (const { name, backend } of available) {
  describe(`SDK 3.0 runs (${name} backend)`, { skip: backend instanceof Error ? backend.message : false }, () => {
    const be = backend as Exclude<typeof backend, Error>;
    const runs = path.join(tmp.dir, name);
    const sdk3 = (mode: string, extra: { limits?: Record<string, number>; env?: Record<string, string> } = {}) => ({
      protocol: 'sdk3' as const,
      agentFolders: [nodeDir, agentDir],
      ...extra,
      env: { SDK3_MODE: mode, ...extra.env },
    });

    it('runs the agent once with --instruction in the working folder, the harness variables set, and passes on [DONE]', async () => {
      const { result, events } = await runFixture(be, runs, agent, sdk3('done', { env: { LLM_PROXY_URL: 'http://127.0.0.1:4141' } }));
      assert.equal(result.passed, true, result.error ?? '');
      assert.equal(result.protocol, 'sdk3');
      assert.equal(result.agent_completed, true);
      assert.equal(result.steps, 1);
      const seen = JSON.parse(readFileSync(runFiles(result.run_dir).agentStderr, 'utf8').split('\n')[0]!) as Record<string, unknown>;
      assert.deepEqual(seen, {
        instruction: 'Create a file named hello.txt in the working directory containing exactly "Hello, world!".',
        cwd: name === 'local' ? runFiles(result.run_dir).workspace : '/app',
        TERM_TASK_ID: 'hello',
        EVALUATION_MODE: 'true',
        LLM_PROXY_URL: 'http://127.0.0.1:4141',
        BELAY_INSTRUCTION: null,
        args: 1,
      });
      assert.match(readFileSync(runFiles(result.run_dir).agentStdout, 'utf8'), /^Task: Create a file[^\n]*\n\[DONE\] Task completed\n$/);
      const trajectory = JSON.parse(readFileSync(runFiles(result.run_dir).trajectory, 'utf8')) as { step: number; command: string; screen: string; response: { done: boolean; exit_code: number } }[];
      assert.equal(trajectory.length, 1);
      assert.match(trajectory[0]!.command, /sdk3\.mjs' --instruction …$/);
      assert.match(trajectory[0]!.screen, /\[DONE\] Task completed/);
      assert.deepEqual(trajectory[0]!.response, { done: true, exit_code: 0, signal: null });
      assert.deepEqual(events.filter((e) => e.type === 'step-ended').map((e) => (e as { exitCode: number }).exitCode), [0]);
    });

    it('an agent that exits without [DONE] is not completed, the tests still decide, and the user is told', async () => {
      const { result, events } = await runFixture(be, runs, agent, sdk3('no-done'));
      assert.equal(result.agent_completed, false);
      assert.equal(result.passed, true, result.error ?? '');
      assert.ok(events.some((e) => e.type === 'notice' && /exited with code 0 without printing \[DONE\]: the tests decide/.test(e.message)));
      const crashed = await runFixture(be, runs, agent, sdk3('crash'));
      assert.equal(crashed.result.agent_completed, false);
      assert.ok(crashed.events.some((e) => e.type === 'notice' && /exited with code 3 without printing \[DONE\].*Traceback: boom/s.test(e.message)));
    });

    it('kills the whole tree at the time limit (agent_timeout) and still runs the tests', async () => {
      // A sleep of this process's own length: other Belay tests on the machine may run a sleep 600.
      const sleep = `600.${process.pid}`;
      const { result } = await runFixture(be, runs, agent, sdk3('hang', { limits: { agentTimeoutMs: 2000 }, env: { SDK3_SLEEP: sleep } }));
      assert.equal(result.failure_cause, 'agent_timeout');
      assert.equal(result.agent_completed, false);
      assert.notEqual(result.verification, null);
      assert.deepEqual(processesWith(`sleep ${sleep}`), []);
    });

    it('takes [DONE] split across writes; [DONE] inside a line is not the marker', async () => {
      const split = await runFixture(be, runs, agent, sdk3('split'));
      assert.equal(split.result.agent_completed, true, split.result.error ?? '');
      const inline = await runFixture(be, runs, agent, sdk3('inline'));
      assert.equal(inline.result.agent_completed, false);
    });

    it('ends an agent still running after [DONE] once the grace has passed, as completed', async () => {
      const { result, events } = await runFixture(be, runs, agent, sdk3('done-then-hang', { limits: { doneGraceMs: 500 } }));
      assert.equal(result.failure_cause, null, result.error ?? '');
      assert.equal(result.agent_completed, true);
      assert.equal(result.passed, true);
      assert.ok(events.some((e) => e.type === 'notice' && /printed \[DONE\] but was still running/.test(e.message)));
    });

    it('reads a flood of output without hoarding it: the log keeps its head and tail, [DONE] at the end still counts', async () => {
      const { result } = await runFixture(be, runs, agent, sdk3('flood', { limits: { maxLogBytes: 1024 * 1024 } }));
      assert.equal(result.agent_completed, true, result.error ?? '');
      assert.ok(statSync(runFiles(result.run_dir).agentStdout).size <= 1024 * 1024 + 4096);
      const trajectory = JSON.parse(readFileSync(runFiles(result.run_dir).trajectory, 'utf8')) as { screen: string }[];
      assert.ok(trajectory[0]!.screen.length < 200_000);
      assert.match(trajectory[0]!.screen, /\[DONE\]\n$/);
    });
  });
}

describe('SDK 3.0: the wrong protocol is named', () => {
  const local = available.find((b) => b.name === 'local')!.backend as Exclude<(typeof available)[number]['backend'], Error>;
  const runs = path.join(tmp.dir, 'mismatch');

  it('an SDK 3.0 agent run as SDK 1.x or 2.0 asks for --instruction: the error says to use sdk3', async () => {
    for (const protocol of ['sdk1', 'sdk2'] as const) {
      const { result } = await runFixture(local, runs, agent, { protocol, agentFolders: [nodeDir, agentDir] });
      assert.equal(result.failure_cause, 'agent_error');
      assert.match(result.error ?? '', /it looks like an SDK 3\.0 agent \(it asks for --instruction\): run it with --protocol sdk3$/, protocol);
    }
  });

  it('an SDK 1.x agent run as SDK 3.0 is named in the notice; an HTTP agent too', async () => {
    const sdk1 = path.join(tmp.writeTask('sdk1-agent', { 'sdk1.mjs': "console.log(JSON.stringify({ command: 'ls', task_complete: false }));\n" }), 'sdk1.mjs');
    const { events } = await runFixture(local, runs, `'${process.execPath}' '${sdk1}'`, { protocol: 'sdk3' });
    assert.ok(events.some((e) => e.type === 'notice' && /printed SDK 1\.x JSON .*run it with --protocol sdk1/.test(e.message)));
    // Its own free port: a fixed one may be another Belay test's on this machine.
    const http = await runFixture(local, runs, nodeAgent('sdk2-server.mjs'), { protocol: 'sdk3', env: { AGENT_PORT: String(await freePort()) }, limits: { agentTimeoutMs: 6000, mismatchProbeMs: 500 } });
    assert.equal(http.result.failure_cause, 'agent_timeout');
    assert.ok(http.events.some((e) => e.type === 'notice' && /listens on TCP port \d+ and has printed nothing: if it is an SDK 2\.0 \(HTTP\) agent, run it with --protocol sdk2/.test(e.message)));
  });
});

describe('SDK 3.0 runs (container backend)', { skip: container instanceof Error ? container.message : false }, () => {
  it('runs the agent in /app of the task image and passes on [DONE]', async () => {
    const { result } = await runFixture(container as Exclude<typeof container, Error>, path.join(tmp.dir, 'container'), agent, {
      protocol: 'sdk3',
      agentFolders: [nodeDir, agentDir],
      env: { SDK3_MODE: 'done' },
    });
    assert.equal(result.passed, true, result.error ?? '');
    assert.equal(result.agent_completed, true);
    const seen = JSON.parse(readFileSync(runFiles(result.run_dir).agentStderr, 'utf8').split('\n')[0]!) as { cwd: string; EVALUATION_MODE: string };
    assert.equal(seen.cwd, '/app');
    assert.equal(seen.EVALUATION_MODE, 'true');
  });
});
