// Verification: after the agent, the task's tests run in the same working directory with the
// test timeout. Exit 0 is reward 1; logs/verifier/reward.txt overrides; ctrf.json gives tests.
import { closeSync, existsSync, openSync, promises as fs, writeSync } from 'node:fs';
import * as path from 'node:path';
import * as z from 'zod';
import { errorMessage } from '../../shared/errors.ts';
import { runBounded } from '../../shared/process.ts';
import { shellPath, type BackendSession } from './backend.ts';
import type { Verification } from './records.ts';
import { runFiles } from './records.ts';
import { stageTests, type Task } from './task.ts';

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
  signal?: AbortSignal;
  onOutput?: (chunk: string) => void;
}

export async function verify(options: VerifyOptions): Promise<Verification> {
  const { session, task } = options;
  const files = runFiles(options.runDir);
  await stageTests(task, files.tests);
  const verifierLogs = path.join(files.logs, 'verifier');
  await fs.mkdir(verifierLogs, { recursive: true });
  await fs.mkdir(path.dirname(files.testOutput), { recursive: true });
  const host = session.command({
    argv: [shellPath(), path.posix.join(session.testsDir, task.testScript)],
    withTests: true,
    env: { TEST_DIR: session.testsDir, LOGS_DIR: session.logsDir, PYTHONUNBUFFERED: '1' },
  });
  const fd = openSync(files.testOutput, 'w');
  let result;
  try {
    const write = (chunk: string) => {
      writeSync(fd, chunk);
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
    closeSync(fd);
  }
  const output = [result.stdout.text('[… cut …]'), result.stderr.text('[… cut …]')].filter((t) => t.trim() !== '').join('\n');
  const errors: string[] = [];
  let reward = result.exitCode === 0 && !result.timedOut ? 1 : 0;
  const rewardFile = path.join(verifierLogs, 'reward.txt');
  if (existsSync(rewardFile)) {
    const text = (await fs.readFile(rewardFile, 'utf8')).trim();
    const value = Number(text);
    if (text === '' || !Number.isFinite(value)) errors.push(`logs/verifier/reward.txt holds '${text.slice(0, 40)}', not a number`);
    else reward = Math.min(1, Math.max(0, value));
  }
  const testResults: Verification['test_results'] = [];
  const ctrfFile = path.join(verifierLogs, 'ctrf.json');
  if (existsSync(ctrfFile)) {
    let raw: unknown;
    try {
      raw = JSON.parse(await fs.readFile(ctrfFile, 'utf8'));
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
