// Verification: after the agent phase, the task's tests run in the same working directory with
// the test timeout. Exit 0 is reward 1; logs/verifier/reward.txt (or reward.json) overrides;
// ctrf.json gives tests. Those files count only when the verify phase wrote them: whatever the
// agent phase left in the logs folder is removed before the tests start.
import { existsSync, promises as fs } from 'node:fs';
import * as path from 'node:path';
import * as z from 'zod';
import { errorMessage } from '../../shared/errors.ts';
import { runBounded } from '../../shared/process.ts';
import { shellPath, type BackendSession } from './backend.ts';
import { CappedLog } from './logs.ts';
import type { Verification } from './records.ts';
import { runFiles } from './records.ts';
import type { Task } from './task.ts';

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
  timeoutMs: number;
  maxLogBytes: number;
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
  await fs.mkdir(path.dirname(files.testOutput), { recursive: true });
  const host = session.command({
    argv: [shellPath(), path.posix.join(session.testsDir, task.testScript)],
    env: { TEST_DIR: session.testsDir, LOGS_DIR: session.logsDir, PYTHONUNBUFFERED: '1' },
  });
  const log = new CappedLog(files.testOutput, options.maxLogBytes);
  let result;
  try {
    const write = (chunk: string) => {
      log.write(chunk);
      options.onOutput?.(chunk);
    };
    result = await runBounded({
      argv: host.argv,
      cwd: host.cwd,
      env: host.env,
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
  let reward = result.exitCode === 0 && !result.timedOut ? 1 : 0;
  const rewardFile = path.join(verifierLogs, 'reward.txt');
  const rewardJson = path.join(verifierLogs, 'reward.json');
  if (existsSync(rewardFile)) {
    const text = (await readSmall(rewardFile)).trim();
    const value = Number(text);
    if (text === '' || !Number.isFinite(value)) errors.push(`logs/verifier/reward.txt holds '${text.slice(0, 40)}', not a number`);
    else reward = Math.min(1, Math.max(0, value));
  } else if (existsSync(rewardJson)) {
    const value = rewardFromJson(await readSmall(rewardJson));
    if (typeof value === 'string') errors.push(`logs/verifier/reward.json: ${value}`);
    else reward = Math.min(1, Math.max(0, value));
  }
  const testResults: Verification['test_results'] = [];
  const ctrfFile = path.join(verifierLogs, 'ctrf.json');
  if (existsSync(ctrfFile)) {
    let raw: unknown;
    try {
      raw = JSON.parse(await readSmall(ctrfFile));
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
    success: reward >= 1,
    reward,
    output,
    error: errors.length > 0 ? errors.join('; ') : null,
    timed_out: result.timedOut,
    exit_code: result.exitCode,
    test_results: testResults,
  };
}

/** The verifier's files are read up to this size: a bigger one is cut (and then fails to parse). */
const MAX_VERIFIER_FILE = 8 * 1024 * 1024;

async function readSmall(file: string): Promise<string> {
  const handle = await fs.open(file, 'r');
  try {
    const buffer = Buffer.alloc(MAX_VERIFIER_FILE);
    const { bytesRead } = await handle.read(buffer, 0, MAX_VERIFIER_FILE, 0);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

/** reward.json (Harbor): `{"reward": x}`, or one named metric; several metrics without `reward` are an error. */
export function rewardFromJson(text: string): number | string {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return `not JSON (${errorMessage(error)})`;
  }
  if (typeof raw === 'number' && Number.isFinite(raw)) return raw;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return 'expected an object of metrics';
  const metrics = Object.entries(raw).filter((entry): entry is [string, number] => typeof entry[1] === 'number' && Number.isFinite(entry[1]));
  const named = metrics.find(([name]) => name === 'reward');
  if (named) return named[1];
  if (metrics.length === 1) return metrics[0]![1];
  return metrics.length === 0 ? 'no numeric metric' : `several metrics (${metrics.map(([n]) => n).join(', ')}) and none named 'reward'`;
}
