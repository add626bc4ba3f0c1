// Each agent kind's steps in ATIF: the observation of a command is the output the agent was shown
// for it, found by what the record says (`screen_of`), never by the protocol's name. Entries are
// shaped as each protocol records them (protocols/sdk1.ts, sdk2.ts, sdk3.ts, installedCli.ts);
// a protocol added to PROTOCOLS without a row here fails the first test.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AtifTrajectorySchema, toAtif, type AtifSource } from '../../../src/runner/core/records/atif.ts';
import { INSTALLED_PROTOCOLS, PROTOCOLS, type Protocol } from '../../../src/runner/core/records/records.ts';

type Entry = AtifSource['trajectory'][number];

const result = (protocol: Protocol): AtifSource['result'] => ({
  run_id: `20260101T000000Z-hello-${protocol}`,
  task_name: 'hello',
  protocol,
  backend: 'local',
  started_at: '2026-01-01T00:00:00.000Z',
  passed: true,
  reward: 1,
  failure_cause: null,
  error: null,
});

const entry = (step: number, fields: Partial<Entry>): Entry => ({
  step, screen: null, response: {}, command: null, cwd: '/app', exit_code: null, timed_out: false, duration_ms: null, output_file: null, ...fields,
});

/** What each step's output file holds (installed CLIs and SDK 3.0 keep them; readOutput reads them). */
const FILES: Record<string, string> = {
  'steps/0001.log': 'file: own output of step 1',
  'steps/0002.log': 'file: own output of step 2',
  'agent.stdout.log': 'file: the whole stdout',
};
const readOutput = async (file: string) => FILES[file];

/** One run's trajectory as each kind records it, and the observations its ATIF must carry (per agent step; null: none). */
const KINDS: Record<'sdk1' | 'sdk2' | 'sdk3' | 'installed', { trajectory: Entry[]; observations: (string | null)[] }> = {
  // SDK 1.x: each request carries the previous command's output, recorded with the step it answers.
  sdk1: {
    trajectory: [
      entry(1, { screen: null, screen_of: 'previous', response: { command: 'ls' }, command: 'ls', exit_code: 0, output_file: 'steps/0001.log' }),
      entry(2, { screen: 'hello.txt\n', screen_of: 'previous', response: { command: 'cat hello.txt' }, command: 'cat hello.txt', exit_code: 0, output_file: 'steps/0002.log' }),
      entry(3, { screen: 'Hello\n', screen_of: 'previous', response: { task_complete: true } }),
    ],
    // Step 1's output was shown with step 2, step 2's with step 3.
    observations: ['hello.txt\n', 'Hello\n', null],
  },
  // SDK 2.0: the agent's history, each entry with its own command's output.
  sdk2: {
    trajectory: [
      entry(1, { screen: 'own 1', screen_of: 'own', response: { step: 1, command: 'ls', output: 'own 1' }, command: 'ls', cwd: null, exit_code: 0 }),
      entry(2, { screen: 'own 2', screen_of: 'own', response: { step: 2, command: 'cat x', output: 'own 2' }, command: 'cat x', cwd: null, exit_code: 1 }),
    ],
    observations: ['own 1', 'own 2'],
  },
  // SDK 3.0: one step, the agent's own run, its stdout (bounded) as the screen.
  sdk3: {
    trajectory: [entry(1, { screen: 'Task: hello\n[DONE]\n', screen_of: 'own', response: { done: true, exit_code: 0, signal: null }, command: 'agent --instruction …', exit_code: 0, output_file: 'agent.stdout.log' })],
    observations: ['Task: hello\n[DONE]\n'],
  },
  // An installed CLI: no screen; each tool call's output is its step's file, then the CLI's last words.
  installed: {
    trajectory: [
      entry(1, { response: { tool: 'Bash', input: { command: 'ls' } }, command: 'ls', exit_code: 0, output_file: 'steps/0001.log' }),
      entry(2, { response: { tool: 'Write', input: { file_path: 'hello.txt', content: 'Hello' }, text: 'Writing it.' }, command: 'write hello.txt', exit_code: 0, output_file: 'steps/0002.log' }),
      entry(3, { response: { text: 'Done.', done: true } }),
    ],
    observations: ['file: own output of step 1', 'file: own output of step 2', null],
  },
};

const kindOf = (protocol: Protocol): keyof typeof KINDS => ((INSTALLED_PROTOCOLS as readonly string[]).includes(protocol) ? 'installed' : (protocol as keyof typeof KINDS));

async function observations(protocol: Protocol, trajectory: Entry[]): Promise<(string | null)[]> {
  const atif = await toAtif({ result: result(protocol), instruction: 'Write Hello to hello.txt', trajectory, readOutput });
  const parsed = AtifTrajectorySchema.safeParse(atif);
  assert.ok(parsed.success, `${protocol}: ${parsed.error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return atif.steps.slice(1).map((s) => {
    const content = s.observation?.results[0]?.content;
    return content === undefined || content === null ? null : String(content);
  });
}

describe("each agent kind's ATIF", () => {
  it('every protocol has a kind here', () => {
    for (const protocol of PROTOCOLS) assert.ok(KINDS[kindOf(protocol)], protocol);
  });

  for (const protocol of PROTOCOLS) {
    it(`${protocol}: each command's observation is the output the agent was shown for it`, async () => {
      const kind = KINDS[kindOf(protocol)];
      assert.deepEqual(await observations(protocol, kind.trajectory), kind.observations);
    });
  }

  it("an installed CLI's steps are its own tools with the model's arguments, and its words the messages", async () => {
    const atif = await toAtif({ result: result('claude-code'), instruction: 'x', trajectory: KINDS.installed.trajectory, readOutput });
    assert.deepEqual(atif.steps.slice(1).map((s) => s.tool_calls?.map((c) => [c.function_name, c.arguments])), [[['Bash', { command: 'ls' }]], [['Write', { file_path: 'hello.txt', content: 'Hello' }]], undefined]);
    assert.deepEqual(atif.steps.slice(1).map((s) => s.message), ['', 'Writing it.', 'Done.']);
  });

  it("the same records give the same ATIF whatever protocol name the result carries: the name is never what decides", async () => {
    for (const kind of Object.values(KINDS)) {
      const seen = await Promise.all(PROTOCOLS.map((protocol) => observations(protocol, kind.trajectory)));
      for (const [index, protocol] of PROTOCOLS.entries()) assert.deepEqual(seen[index], kind.observations, protocol);
    }
  });

  it("a step that does not say whose output its screen is takes its own output file, not a neighbour's screen (a new protocol's steps, or records from before the field)", async () => {
    const unsaid = [
      entry(1, { screen: 'shown before step 1', command: 'ls', output_file: 'steps/0001.log' }),
      entry(2, { screen: 'shown before step 2', command: 'cat x', output_file: 'steps/0002.log' }),
      entry(3, { screen: 'no file', command: 'true' }),
    ];
    for (const protocol of ['sdk1', 'sdk2', 'codex'] as const) {
      assert.deepEqual(await observations(protocol, unsaid), ['file: own output of step 1', 'file: own output of step 2', null], protocol);
    }
  });

  it("SDK 1.x's next screen counts only when the next step says it holds the previous output and follows directly", async () => {
    const gap = [
      entry(1, { screen_of: 'previous', command: 'ls', output_file: 'steps/0001.log' }),
      entry(3, { screen: 'not step 1’s', screen_of: 'previous', command: 'cat x', output_file: 'steps/0002.log' }),
    ];
    assert.deepEqual(await observations('sdk1', gap), ['file: own output of step 1', 'file: own output of step 2']);
    const mixed = [
      entry(1, { screen_of: 'previous', command: 'ls', output_file: 'steps/0001.log' }),
      entry(2, { screen: 'its own', screen_of: 'own', command: 'cat x' }),
    ];
    assert.deepEqual(await observations('sdk1', mixed), ['file: own output of step 1', 'its own']);
  });
});
