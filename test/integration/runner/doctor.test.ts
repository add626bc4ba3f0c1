import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { Backend } from '../../../src/runner/core/backends/backend.ts';
import { localBackend } from '../../../src/runner/core/backends/local.ts';
import { decide, diagnoseAgent, type DoctorReport } from '../../../src/runner/core/protocols/doctor.ts';
import { agentFile, fixtures, nodeDir, processesWith, sandboxOrReason, tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-doctor-test-');
after(() => tmp.remove());
const sandbox = await sandboxOrReason();
/** The sandbox where this machine has one (as the doctor uses it), else the local backend. */
const backend: Backend = sandbox instanceof Error ? localBackend() : sandbox;
/** The seconds the 'leaves' agent's orphan sleeps: unique to this process (other Belay tests run beside it). */
const leftSleep = `300.${process.pid}`;
const node = (file: string, ...args: string[]) => [`'${process.execPath}'`, `'${agentFile(file)}'`, ...args].join(' ');

function diagnose(agentCommand: string, timeoutMs = 8000): Promise<DoctorReport> {
  return diagnoseAgent({ agentCommand, agentCwd: `${fixtures}/agents`, agentFolders: [nodeDir], backend, timeoutMs });
}

describe(`belay agent doctor (${backend.name} backend)`, () => {
  it('recognises each protocol in a good agent, with nothing to complain about', async () => {
    const cases: [string, string][] = [
      [node('doctor-sdk1.mjs', 'ok'), 'sdk1'],
      [node('doctor-sdk2.mjs', '0'), 'sdk2'],
      [node('doctor-sdk3.mjs', 'ok'), 'sdk3'],
      [node('nanobot-rich.mjs'), 'nanobot-rich'],
      [`sh '${agentFile('nanobot-plain.sh')}' {message}`, 'nanobot-plain'],
    ];
    const reports = await Promise.all(cases.map(([command]) => diagnose(command)));
    reports.forEach((report, i) => {
      const [command, protocol] = cases[i]!;
      assert.equal(report.protocol, protocol, `${command}: ${JSON.stringify(report, null, 1)}`);
      assert.equal(report.clear, true, command);
      if (protocol.startsWith('sdk')) assert.deepEqual(report.problems, [], `${command}: ${report.problems.join('; ')}`);
      assert.equal(report.probes.length, 4);
    });
    const sdk2 = reports[1]!.probes.find((p) => p.probe === 'sdk2')!;
    assert.match(sdk2.summary, /\/health answered after .*\/status said completed \(done\) after 1 step/);
    assert.equal(reports[0]!.isolated, backend.isolated);
    // The rich fixture mixes in what nanobot tolerates but a careful bot avoids.
    assert.deepEqual(reports[3]!.problems, [
      'writes frames of a type nanobot does not know (skipped): "{\\"type\\":\\"future-frame\\",\\"text\\":\\"unknown types are skipped\\"}"',
      'writes plain lines among its frames ("a plain line that is not a frame"): they are dropped once a message frame came',
    ]);
    assert.deepEqual(reports[4]!.problems, ['writes to stderr: nanobot shows it to the user after STDERR:']);
  });

  it('lists what an SDK 1.x agent does wrong', async () => {
    const [noisy, linger, oneShot, eofReader, leaves] = await Promise.all(
      ['noisy', 'linger', 'one-shot', 'eof-reader', 'leaves'].map((mode) => diagnose(node('doctor-sdk1.mjs', mode, ...(mode === 'leaves' ? [leftSleep] : [])), 10_000)),
    );
    assert.equal(noisy!.protocol, 'sdk1');
    assert.match(noisy!.problems.join('\n'), /writes lines that are not JSON to stdout \(1, e\.g\. "Loading my agent, please wait\.\.\."\)/);
    assert.match(linger!.problems.join('\n'), /ignores the end of its stdin: still running 5\.0 s after it closed/);
    assert.match(oneShot!.problems.join('\n'), /exited with code 0 after its first answer: the process must stay alive between steps/);
    assert.equal(eofReader!.protocol, 'sdk1');
    assert.match(eofReader!.problems.join('\n'), /answers only once its stdin is closed/);
    assert.match(leaves!.problems.join('\n'), /leaves 1 process\(es\) running after it exits: \d+ sleep 300/);
    assert.deepEqual(processesWith(`sleep ${leftSleep}`), [], 'the probe killed what the agent left');
  });

  it('lists what SDK 3.0 and SDK 2.0 agents do wrong', async () => {
    const [exit1, linger, inline, slow] = await Promise.all([
      diagnose(node('doctor-sdk3.mjs', 'exit1')),
      diagnose(node('doctor-sdk3.mjs', 'linger')),
      diagnose(node('doctor-sdk3.mjs', 'inline')),
      diagnose(node('doctor-sdk2.mjs', '10500'), 20_000),
    ]);
    assert.equal(exit1!.protocol, 'sdk3');
    assert.deepEqual(exit1!.problems, ['prints [DONE] but exited with code 1']);
    assert.deepEqual(linger!.problems, ['prints [DONE] but keeps running (5.0 s later)']);
    assert.match(inline!.problems.join('\n'), /prints \[DONE\] inside a longer line \("All finished \[DONE\]"\)/);
    assert.equal(slow!.protocol, 'sdk2');
    assert.match(slow!.problems.join('\n'), /\/health is slow: it answers only after \d+\.\d s/);
  });

  it('says none, with what each probe saw, for a program that speaks no protocol', async () => {
    const report = await diagnose(`sh -c "echo 'not an agent' >&2; exit 3"`, 3000);
    assert.equal(report.protocol, 'none');
    assert.equal(report.clear, false);
    for (const probe of report.probes) assert.match(probe.summary, /exited with code 3|no SDK 1\.x answer/, probe.summary);
    assert.match(report.probes.find((p) => p.probe === 'sdk3')!.summary, /exited with code 3 without printing \[DONE\] \(stderr: "not an agent"\)/);
  });
});

describe('the doctor’s verdict', () => {
  const probe = (name: 'sdk1' | 'sdk2' | 'sdk3' | 'nanobot', matched?: DoctorReport['protocol']) => ({ probe: name, matched: matched === 'none' ? undefined : matched, summary: '', problems: matched ? [`${matched} problem`] : [] });
  it('prefers a strong match, and is unclear when two protocols answer', () => {
    const b = { name: 'local', isolated: false };
    assert.deepEqual(decide([probe('sdk1', 'sdk1'), probe('nanobot', 'nanobot-plain')], b).protocol, 'sdk1');
    assert.equal(decide([probe('sdk1', 'sdk1'), probe('nanobot', 'nanobot-plain')], b).clear, true);
    const both = decide([probe('sdk1', 'sdk1'), probe('sdk2', 'sdk2')], b);
    assert.deepEqual([both.protocol, both.clear, both.alsoMatched, both.problems], ['sdk2', false, ['sdk1'], ['sdk2 problem']]);
    assert.deepEqual(decide([probe('nanobot', 'nanobot-plain')], b).clear, true);
    assert.deepEqual(decide([probe('sdk1')], b).protocol, 'none');
  });
});

describe('belay agent doctor (command line)', () => {
  async function belayAgent(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const { PassThrough } = await import('node:stream');
    const { run } = await import('../../../src/cli/agent.ts');
    const [stdout, stderr] = [new PassThrough(), new PassThrough()];
    let out = '';
    let err = '';
    stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
    const code = await run(args, { stdin: new PassThrough(), stdout, stderr, env: {}, cwd: `${fixtures}/agents` });
    return { code, stdout: out, stderr: err };
  }

  it('prints the probes, the protocol, what is wrong and how to run it; exit 0 for a clear match', async () => {
    if (sandbox instanceof Error) return; // the command line insists on the sandbox (or --unsafe-local)
    const { code, stdout } = await belayAgent(['doctor', '--agent', `node doctor-sdk3.mjs exit1`, '--timeout', '3']);
    assert.equal(code, 0, stdout);
    assert.match(stdout, /^ {2}SDK 3\.0 {2}yes {2}printed \[DONE\] after \d+\.\d s$/m);
    assert.match(stdout, /^Protocol: sdk3: Term Challenge SDK 3\.0/m);
    assert.match(stdout, /^ {2}- prints \[DONE\] but exited with code 1$/m);
    assert.match(stdout, /^Run it with: belay run TASK_DIR --agent 'node doctor-sdk3\.mjs exit1' --protocol sdk3$/m);
    const json = await belayAgent(['doctor', '--agent', `sh -c 'exit 4'`, '--timeout', '2', '--json']);
    assert.equal(json.code, 1);
    const report = JSON.parse(json.stdout) as DoctorReport;
    assert.equal(report.protocol, 'none');
    assert.deepEqual(report.probes.map((p) => p.probe), ['sdk1', 'sdk2', 'sdk3', 'nanobot']);
  });

  it('refuses usage mistakes', async () => {
    const { UsageError } = await import('../../../src/shared/args.ts');
    await assert.rejects(belayAgent(['doctor']), UsageError);
    await assert.rejects(belayAgent(['doctor', '--agent', 'x', '--timeout', 'soon']), /--timeout wants a number of seconds above 0, got 'soon'/);
    await assert.rejects(belayAgent(['cure', '--agent', 'x']), /unknown action 'cure'; use doctor/);
    assert.equal((await belayAgent([])).code, 2);
  });
});

describe('belay agent doctor (local backend, hostile agents)', () => {
  const local = (agentCommand: string, timeoutMs = 3000) => diagnoseAgent({ agentCommand, agentCwd: `${fixtures}/agents`, agentFolders: [nodeDir], backend: localBackend(), timeoutMs });

  it('finds what an agent left running on the unisolated backend too, and kills it', async () => {
    const report = await local(node('doctor-sdk1.mjs', 'leaves', leftSleep));
    assert.equal(report.isolated, false);
    assert.match(report.problems.join('\n'), /leaves 1 process\(es\) running after it exits: \d+ sleep 300/);
    assert.deepEqual(processesWith(`sleep ${leftSleep}`), []);
  });

  it('neither a flood on stdout nor control sequences reach the report as they were', async () => {
    const { describeReport } = await import('../../../src/cli/agent.ts');
    const flood = `'${process.execPath}' -e "process.stdout.write('\\x1b]0;owned\\x07\\x1b[2J' + 'x'.repeat(50e6))"`;
    // Time enough to write 50 MB on a machine busy with other tests: it is judged once it exits.
    const report = await local(flood, 20_000);
    // Printing and exiting 0 is all a plain nanobot bot does: the weakest match there is.
    assert.equal(report.protocol, 'nanobot-plain');
    const text = describeReport(report, flood);
    assert.doesNotMatch(text, /\x1b|\x07/);
    assert.ok(text.length < 10_000, `the report stays short (${text.length} characters)`);
  });
});

describe('cancelling the doctor', () => {
  it('ends every probe at once and leaves nothing running', { timeout: 40_000 }, async () => {
    const token = `belay-doctor-cancel-${process.pid}`;
    const controller = new AbortController();
    const reports: string[] = [];
    const report = diagnoseAgent({
      agentCommand: `sleep 300 # ${token}`,
      agentCwd: `${fixtures}/agents`,
      backend,
      timeoutMs: 120_000,
      signal: controller.signal,
      onProgress: (line) => reports.push(line),
    });
    // Cancel once all four probes have their agent running.
    while (processesWith(token).filter((p) => p.includes('sleep 300')).length < 4) await new Promise((resolve) => setTimeout(resolve, 20));
    controller.abort();
    const found = await report;
    assert.equal(found.protocol, 'none');
    assert.equal(reports.length, 4);
    assert.deepEqual(processesWith(token), []);
  });
});

describe('a doctor that cannot probe', () => {
  it('says why instead of "no protocol" (the sandbox refuses to show a whole home folder)', async (t) => {
    if (sandbox instanceof Error) return t.skip(sandbox.message);
    const os = await import('node:os');
    await assert.rejects(diagnoseAgent({ agentCommand: 'true', agentCwd: os.homedir(), backend, timeoutMs: 2000 }), /would show your whole home folder to the agent/);
  });
});
