// `belay run` with a model: --llm-upstream, --llm-key-env, budgets, jobs. The upstream is a real
// HTTP server on 127.0.0.1 in this process; the key is in this test's environment only.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chatAnswer, startUpstream, type FakeUpstream } from '../../support/runner/gateway-upstream.ts';
import { nodeAgent, repoRoot, taskDir, tempDir } from '../../support/runner/helpers.ts';
import { runCli, type CliRun } from '../../support/cli-process.ts';
import { ensureBuilt } from '../../support/build.ts';

const KEY = 'sk-cli-real-key-0123456789';
const tmp = tempDir('belay-cli-llm-');
const cli = path.join(repoRoot, 'dist', 'cli.js');
let upstream: FakeUpstream;

before(async () => {
  ensureBuilt();
  upstream = await startUpstream('/v1');
});
after(async () => {
  await upstream.close();
  tmp.remove();
});

function belay(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return runCli(cli, args, { cwd: repoRoot, env });
}

const solve = () => ({ json: chatAnswer("printf 'Hello, world!' > hello.txt", { prompt_tokens: 120, completion_tokens: 30 }) });

describe('belay run --llm-upstream', () => {
  it('lets the agent call the model through the gateway with the key from --llm-key-env, and shows tokens and cost', async () => {
    upstream.fallback = solve;
    const before = upstream.received.length;
    const out = path.join(tmp.dir, 'one');
    const { code, stdout, stderr } = await belay(
      ['run', taskDir('hello'), '--agent', `${nodeAgent('llm-sdk1.mjs')} chat`, '--protocol', 'sdk1', '--backend', 'local', '--out', out, '--llm-upstream', upstream.url, '--llm-key-env', 'BELAY_TEST_KEY'],
      { BELAY_TEST_KEY: KEY },
    );
    assert.equal(code, 0, stderr);
    assert.match(stderr, /the agent may call http:\/\/127\.0\.0\.1:\d+\/v1 through Belay's gateway/);
    assert.equal(upstream.received.length, before + 1);
    assert.equal(upstream.received.at(-1)!.headers.authorization, `Bearer ${KEY}`);
    const lines = stdout.trim().split('\n');
    assert.match(lines[0]!, /^task\s+result\s+reward\s+steps\s+time\s+tokens\s+cost\s+backend\s+cause$/);
    assert.match(lines[2]!, /^hello\s+passed\s+1\s+2\s+\d+\.\ds\s+150\s+\$0\.\d{4}\s+local$/);
    assert.match(lines.at(-1)!, /^1\/1 passed; model calls: 1 request · 150 tokens \(120 in, 30 out\) · \$0\.\d{4}$/);
    const [runDir] = readdirSync(out);
    const result = JSON.parse(readFileSync(path.join(out, runDir!, 'result.json'), 'utf8')) as { llm: { requests: number } };
    assert.equal(result.llm.requests, 1);
    assert.doesNotMatch(stdout + stderr, new RegExp(KEY));
  });

  it('ends a runaway run at its budget with budget_exceeded', async () => {
    upstream.fallback = () => ({ json: chatAnswer('true', { prompt_tokens: 400, completion_tokens: 100 }) });
    const { code, stdout } = await belay(
      ['run', taskDir('hello'), '--agent', `${nodeAgent('llm-sdk1.mjs')} runaway`, '--protocol', 'sdk1', '--backend', 'local', '--out', path.join(tmp.dir, 'budget'), '--llm-upstream', upstream.url, '--llm-key-env', 'BELAY_TEST_KEY', '--llm-budget-tokens', '1000', '--json'],
      { BELAY_TEST_KEY: KEY },
    );
    assert.equal(code, 1);
    const [result] = (JSON.parse(stdout) as { results: { failure_cause: string; error: string; llm: { requests: number } }[] }).results;
    assert.equal(result!.failure_cause, 'budget_exceeded');
    assert.match(result!.error, /LLM budget of 1000 tokens/);
  });

  it('counts a job’s model calls in job.json; a resumed job keeps its model settings', async () => {
    upstream.fallback = solve;
    const out = path.join(tmp.dir, 'job');
    const { code, stderr } = await belay(
      ['run', taskDir('hello'), '--agent', `${nodeAgent('llm-sdk1.mjs')} chat`, '--protocol', 'sdk1', '--backend', 'local', '--out', out, '--attempts', '2', '--concurrency', '2', '--llm-upstream', upstream.url, '--llm-key-env', 'BELAY_TEST_KEY'],
      { BELAY_TEST_KEY: KEY },
    );
    assert.equal(code, 0, stderr);
    const [jobId] = readdirSync(out).filter((f) => !f.startsWith('.'));
    const jobText = readFileSync(path.join(out, jobId!, 'job.json'), 'utf8');
    const job = JSON.parse(jobText) as { totals: { llm: { requests: number; input_tokens: number } }; settings: { options: { llm: { upstream: string; keyEnv: string } } } };
    assert.equal(job.totals.llm.requests, 2);
    assert.equal(job.totals.llm.input_tokens, 240);
    assert.deepEqual(job.settings.options.llm, { upstream: upstream.url, keyEnv: 'BELAY_TEST_KEY' });
    assert.doesNotMatch(jobText, new RegExp(KEY));
    const resumed = await belay(['run', '--resume', path.join(out, jobId!), '--llm-upstream', 'http://127.0.0.1:1/v1']);
    assert.equal(resumed.code, 2);
    assert.match(resumed.stderr, /--llm-upstream cannot be given with --resume/);
    const noKey = await belay(['run', '--resume', path.join(out, jobId!)], { BELAY_TEST_KEY: '' });
    assert.equal(noKey.code, 2);
    assert.match(noKey.stderr, /--llm-key-env BELAY_TEST_KEY: that variable is not set in this shell/);
  });

  it('says in one line what is wrong with a model flag (exit 2)', async () => {
    const base = ['run', taskDir('hello'), '--agent', 'true', '--protocol', 'sdk1', '--backend', 'local'];
    const cases: [string[], RegExp][] = [
      [['--llm-budget-usd', '1'], /--llm-budget-usd needs --llm-upstream URL/],
      [['--llm-upstream', 'file:///etc/passwd'], /--llm-upstream must be an http:\/\/ or https:\/\/ URL/],
      [['--llm-upstream', 'https://user:pw@example.com/v1'], /without a user or password/],
      [['--llm-upstream', 'http://127.0.0.1:1/v1', '--llm-key-env', KEY], /--llm-key-env takes the name of a variable .*not the key itself/],
      [['--llm-upstream', 'http://127.0.0.1:1/v1', '--llm-key-env', 'BELAY_SURELY_UNSET_VAR'], /BELAY_SURELY_UNSET_VAR: that variable is not set/],
      [['--llm-upstream', 'http://127.0.0.1:1/v1', '--llm-api', 'cohere'], /--llm-api must be openai, anthropic or gemini \(got 'cohere'\)/],
      [['--llm-upstream', 'http://127.0.0.1:1/v1', '--llm-budget-tokens', '1.5'], /--llm-budget-tokens needs a positive whole number/],
      [['--llm-upstream', 'http://127.0.0.1:1/v1', '--llm-price', 'gpt-x=cheap'], /--llm-price takes MODEL=INPUT,OUTPUT/],
    ];
    for (const [flags, message] of cases) {
      const { code, stderr } = await belay([...base, ...flags]);
      assert.equal(code, 2, `${flags.join(' ')}: ${stderr}`);
      assert.match(stderr, message);
      assert.equal(stderr.trim().split('\n').length, 1, `one line for ${flags.join(' ')}: ${stderr}`);
    }
  });
});
