// Verification: after the agent phase, the task's tests run in the same working directory with
// the test timeout. When the tests wrote logs/verifier/reward.json (named metrics) or reward.txt,
// the reward and the pass come from those files by the reward rule below, never from the exit
// status; only without them is exit 0 reward 1. ctrf.json gives tests. Those files count only when the
// verify phase wrote them (whatever the agent phase left in the logs folder is removed before the
// tests start), and only as regular files of a sane size: never followed, never waited on.
import { constants as fsConstants, promises as fs, type Stats } from 'node:fs';
import * as path from 'node:path';
import * as z from 'zod';
import { errorMessage } from '../../../shared/errors.ts';
import { runBounded } from '../../../shared/process.ts';
import { shellPath, type BackendSession, type CommandSpec } from '../backends/backend.ts';
import { CappedLog } from '../records/logs.ts';
import type { Verification } from '../records/records.ts';
import { runFiles } from '../records/records.ts';
import type { Task } from '../tasks/task.ts';

const CtrfSchema = z.object({
  results: z.object({
    tests: z.array(
      z.looseObject({
        name: z.string(),
        status: z.string(),
        duration: z.number().optional(),
        message: z.string().optional(),
      }),
    ),
  }),
});

export interface VerifyOptions {
  task: Task;
  session: BackendSession;
  runDir: string;
  /** Where the tests' output is kept: the run's verifier/test-output.log unless a step has its own. */
  testOutputFile?: string;
  timeoutMs: number;
  maxLogBytes: number;
  /** Variables the tests get under Belay's own (the verify phase's proxy variables). */
  env?: Record<string, string>;
  signal?: AbortSignal;
  onOutput?: (chunk: string) => void;
}

/**
 * Empties the logs folder before the verify phase; returns what was there (relative paths),
 * for the record. Only the backend's "everything is dead" makes this final.
 */
export async function removeVerifierLeftovers(logsDir: string): Promise<string[]> {
  await fs.mkdir(logsDir, { recursive: true });
  const found: string[] = [];
  for (const entry of await fs.readdir(logsDir, { recursive: true, withFileTypes: true })) {
    if (!entry.isDirectory()) found.push(path.posix.join('logs', path.relative(logsDir, path.join(entry.parentPath, entry.name)).split(path.sep).join('/')));
  }
  for (const entry of await fs.readdir(logsDir)) await fs.rm(path.join(logsDir, entry), { recursive: true, force: true });
  return found.sort();
}

export async function verify(options: VerifyOptions): Promise<Verification> {
  const { session, task } = options;
  const files = runFiles(options.runDir);
  const verifierLogs = path.join(files.logs, 'verifier');
  await fs.mkdir(verifierLogs, { recursive: true });
  const testOutput = options.testOutputFile ?? files.testOutput;
  await fs.mkdir(path.dirname(testOutput), { recursive: true });
  const command: CommandSpec = {
    argv: [shellPath(), path.posix.join(session.testsDir, task.testScript)],
    env: { ...options.env, TEST_DIR: session.testsDir, LOGS_DIR: session.logsDir, PYTHONUNBUFFERED: '1' },
  };
  const log = new CappedLog(testOutput, options.maxLogBytes);
  let result;
  try {
    const write = (chunk: string) => {
      log.write(chunk);
      options.onOutput?.(chunk);
    };
    result = await runBounded({
      start: (output) => session.spawn({ ...command, ...output }),
      timeoutMs: options.timeoutMs,
      maxOutputChars: 8000,
      keepTailChars: 8000,
      onStdout: write,
      onStderr: write,
      signal: options.signal,
    });
  } finally {
    log.close();
  }
  const output = [result.stdout.text('[… cut …]'), result.stderr.text('[… cut …]')].filter((t) => t.trim() !== '').join('\n');
  const errors: string[] = [];
  const rewards = await readRewardFiles(verifierLogs);
  errors.push(...rewards.errors);
  const ruling = rewards.found ? ruleOfRewards(rewards.metrics, task.rewardMetric) : undefined;
  // A refused file is the reason already; what the rule says of the metrics left is not added to it.
  if (ruling?.error && rewards.errors.length === 0) errors.push(ruling.error);
  // No reward file: the exit status decides. A reward file: it alone does, and one Belay refused gives no reward.
  const reward = ruling === undefined ? (result.exitCode === 0 && !result.timedOut ? 1 : 0) : rewards.errors.length > 0 ? null : ruling.reward;
  const rulePassed = ruling === undefined ? reward === 1 : rewards.errors.length === 0 && ruling.passed;
  const rewardErrors = errors.length;
  const testResults: Verification['test_results'] = [];
  const ctrf = await readVerifierFile(path.join(verifierLogs, 'ctrf.json'), MAX_CTRF_BYTES);
  if (ctrf.error) errors.push(`logs/verifier/ctrf.json ${ctrf.error}`);
  if (ctrf.text !== undefined) {
    let raw: unknown;
    try {
      raw = JSON.parse(ctrf.text);
    } catch (error) {
      errors.push(`logs/verifier/ctrf.json is not JSON: ${errorMessage(error)}`);
    }
    if (raw !== undefined) {
      const ctrf = CtrfSchema.safeParse(raw);
      if (!ctrf.success) errors.push(`logs/verifier/ctrf.json: field '${ctrf.error.issues[0]!.path.join('.')}': ${ctrf.error.issues[0]!.message}`);
      else {
        for (const t of ctrf.data.results.tests) {
          testResults.push({
            name: t.name,
            status: t.status,
            ...(t.duration !== undefined ? { duration_ms: t.duration } : {}),
            ...(t.message !== undefined ? { message: t.message } : {}),
          });
        }
      }
    }
  }
  if (result.spawnError) errors.push(`could not start the tests: ${result.spawnError.message}`);
  if (result.timedOut) errors.push(`the tests did not finish within ${Math.round(options.timeoutMs / 1000)} s`);
  else if (result.exitCode !== 0) errors.push(`the tests exited with ${result.exitCode ?? result.signal}`);
  return {
    // A reward file that cannot be read never passes, whatever the exit code said; nor do tests cut short.
    success: rulePassed && rewardErrors === 0 && !result.timedOut,
    reward,
    metrics: rewards.metrics,
    ...(ruling ? { reward_rule: ruling.rule } : {}),
    output,
    error: errors.length > 0 ? errors.join('; ') : null,
    timed_out: result.timedOut,
    exit_code: result.exitCode,
    test_results: testResults,
  };
}

/** The verifier's files are read up to these sizes: a bigger one is refused, not cut. */
const MAX_REWARD_BYTES = 1024 * 1024;
const MAX_CTRF_BYTES = 8 * 1024 * 1024;

/**
 * A file the tests wrote, read without trusting it: a symlink, a FIFO or anything but a regular
 * file is refused (opening a FIFO would wait for a writer forever), and so is one past `maxBytes`.
 * `text` is undefined when the file is absent or refused (then `error` says why, in a few words).
 */
export async function readVerifierFile(file: string, maxBytes: number): Promise<{ text?: string; error?: string }> {
  let stat;
  try {
    stat = await fs.lstat(file);
  } catch {
    return {};
  }
  const refused = refusal(stat, maxBytes);
  if (refused) return { error: refused };
  let handle;
  try {
    // O_NOFOLLOW and O_NONBLOCK: whatever replaced the file since lstat can neither lead elsewhere nor block.
    handle = await fs.open(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
  } catch (error) {
    return { error: `cannot be read (${errorMessage(error)})` };
  }
  try {
    const opened = await handle.stat();
    const refusedOpen = refusal(opened, maxBytes);
    if (refusedOpen) return { error: refusedOpen };
    const buffer = Buffer.alloc(Math.min(maxBytes + 1, opened.size + 1));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    if (bytesRead > maxBytes) return { error: `is larger than ${formatLimit(maxBytes)}` };
    return { text: buffer.subarray(0, bytesRead).toString('utf8') };
  } finally {
    await handle.close();
  }
}

function refusal(stat: Stats, maxBytes: number): string | undefined {
  if (stat.isSymbolicLink()) return 'is a symlink, not a file the tests wrote';
  if (!stat.isFile()) return `is ${stat.isFIFO() ? 'a FIFO' : stat.isDirectory() ? 'a folder' : 'not a regular file'}, not a file the tests wrote`;
  if (stat.size > maxBytes) return `is ${stat.size} bytes, larger than ${formatLimit(maxBytes)}`;
  return undefined;
}

function formatLimit(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

/**
 * The metrics the tests wrote: reward.json's numbers (Harbor's several named metrics) and
 * reward.txt's single number as `reward` when reward.json names none (Harbor's precedence).
 */
export async function readRewardFiles(verifierLogs: string): Promise<{ metrics: Record<string, number>; errors: string[]; found: boolean }> {
  const errors: string[] = [];
  let metrics: Record<string, number> = {};
  const json = await readVerifierFile(path.join(verifierLogs, 'reward.json'), MAX_REWARD_BYTES);
  const txt = await readVerifierFile(path.join(verifierLogs, 'reward.txt'), MAX_REWARD_BYTES);
  // Anything at either name counts as written, even a file refused below: then there is no reward, never the exit status's.
  const found = json.text !== undefined || json.error !== undefined || txt.text !== undefined || txt.error !== undefined;
  if (json.error) errors.push(`logs/verifier/reward.json ${json.error}`);
  if (json.text !== undefined) {
    const parsed = metricsFromJson(json.text);
    if (typeof parsed === 'string') errors.push(`logs/verifier/reward.json: ${parsed}`);
    else metrics = parsed;
  }
  if (txt.error) errors.push(`logs/verifier/reward.txt ${txt.error}`);
  if (txt.text !== undefined && metrics.reward === undefined) {
    const text = txt.text.trim();
    const value = Number(text);
    if (text === '' || !Number.isFinite(value)) errors.push(`logs/verifier/reward.txt holds '${text.slice(0, 40)}', not a number`);
    else metrics.reward = value;
  }
  return { metrics, errors, found };
}

/** What the reward files say under the reward rule: the reward (null when no single one is given), the pass, the rule used. */
export interface RewardRuling {
  reward: number | null;
  passed: boolean;
  /** The rule in a few words, for the records ("metric 'correctness' (task.toml reward_metric)"). */
  rule: string;
  /** Why it failed, when the metrics themselves say so (a missing metric, metrics short of 1). */
  error?: string;
}

/**
 * The reward rule (README, "Rewards"): the metric task.toml names as `reward_metric`; else the
 * `reward` metric; else the only metric there is. Each of those is the reward (held to 0..1) and
 * passes at 1. Several metrics, none of them named: no single reward is made up (null), and the
 * run passes only when every metric is at its maximum, 1. No metric at all: no reward, no pass.
 */
export function ruleOfRewards(metrics: Readonly<Record<string, number>>, rewardMetric?: string): RewardRuling {
  const names = Object.keys(metrics);
  const single = (name: string, rule: string): RewardRuling => {
    const value = Math.min(1, Math.max(0, metrics[name]!));
    return { reward: value, passed: value >= 1, rule };
  };
  if (rewardMetric !== undefined) {
    if (Object.hasOwn(metrics, rewardMetric)) return single(rewardMetric, `metric '${rewardMetric}' (task.toml reward_metric)`);
    return { reward: null, passed: false, rule: `metric '${rewardMetric}' (task.toml reward_metric)`, error: `the tests wrote no metric '${rewardMetric}', which task.toml names as reward_metric (they wrote ${names.length === 0 ? 'none' : names.slice(0, 8).join(', ')})` };
  }
  if (Object.hasOwn(metrics, 'reward')) return single('reward', `metric 'reward'`);
  if (names.length === 1) return single(names[0]!, `the only metric, '${names[0]}'`);
  if (names.length === 0) return { reward: null, passed: false, rule: 'no metric', error: 'the reward files hold no metric' };
  const short = names.filter((name) => metrics[name]! < 1);
  return {
    reward: null,
    passed: short.length === 0,
    rule: 'every metric at its maximum (1)',
    ...(short.length > 0 ? { error: `not every metric is at its maximum (1): ${short.slice(0, 8).map((name) => `${name} ${Math.round(metrics[name]! * 1000) / 1000}`).join(', ')}` } : {}),
  };
}

/**
 * reward.json (Harbor): an object whose numbers are named metrics (a bare number is `reward`).
 * Nested objects and lists are reports and are skipped; any other value that is not a finite
 * number (a string, true, null, a number too large) makes the file wrong: it is never half read.
 */
export function metricsFromJson(text: string): Record<string, number> | string {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return `not JSON (${errorMessage(error)})`;
  }
  if (typeof raw === 'number') return Number.isFinite(raw) ? { reward: raw } : 'the reward is not a finite number';
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return 'expected an object of metrics';
  const metrics: Record<string, number> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (typeof value === 'object' && value !== null) continue;
    if (typeof value !== 'number' || !Number.isFinite(value)) return `metric '${name.slice(0, 60)}' is ${JSON.stringify(value)?.slice(0, 40) ?? String(value)}, not a finite number`;
    metrics[name] = value;
  }
  if (Object.keys(metrics).length === 0) return 'no numeric metric';
  return metrics;
}
