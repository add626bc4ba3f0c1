// Cues: how fast Belay's mailbox notices a cue and how fast `cueme cue` returns an answer,
// beside the public cueme's method (a table poll every 500 ms) timed on the very same cues.
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import * as esbuild from 'esbuild';
import { embedPrograms } from '../scripts/build-plugins.ts';
import { percentile, type BenchContext, type BenchFile, type Figure } from './lib.ts';
import { loadSqlite, silenceSqliteExperimentalWarning } from '../src/cues/core/sqlite.ts';
import { Mailbox } from '../src/cues/core/store.ts';
import { parseMailboxTime } from '../src/cues/core/time.ts';

const CUES = 100;
export const PUBLIC_POLL_MS = 500;

/** Wall-clock milliseconds with sub-millisecond resolution, comparable with the mailbox timestamps. */
export const now = (): number => performance.timeOrigin + performance.now();

/** Bundles one of Belay's command lines into the bench's folder; returns the script's path. */
export async function bundleCli(ctx: BenchContext, name: string, entry: string): Promise<string> {
  await esbuild.build({
    absWorkingDir: ctx.repoRoot,
    entryPoints: { [name]: entry },
    outdir: ctx.tmpDir,
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    define: { BELAY_VERSION: '"bench"' },
    logLevel: 'warning',
    plugins: [embedPrograms],
  });
  return path.join(ctx.tmpDir, `${name}.js`);
}

/**
 * Times how long each new request takes to reach the mailbox's change event: `next(agentId)`
 * resolves with the request id of that agent's next request, and `toEvent` collects the delays.
 */
export function watchArrivals(mailbox: Mailbox): { next(agentId: string): Promise<string>; toEvent: number[]; dispose(): void } {
  const toEvent: number[] = [];
  let waitingFor: { agentId: string; resolve: (requestId: string) => void } | undefined;
  const dispose = mailbox.watch(() => {
    if (!waitingFor) return;
    const t = now();
    const entry = mailbox.listRequests({ pendingOnly: true, agentId: waitingFor.agentId })[0];
    if (!entry || entry.createdAtMs === undefined) return;
    toEvent.push(t - entry.createdAtMs);
    const { resolve } = waitingFor;
    waitingFor = undefined;
    resolve(entry.requestId);
  });
  return { next: (agentId) => new Promise<string>((resolve) => (waitingFor = { agentId, resolve })), toEvent, dispose };
}

/** A percentile of `count` values beside the same percentile of the baseline's. */
export function percentileFigure(count: number, name: string, values: number[], baselineName: string, baseline: number[], p: number, goal?: number): Figure {
  return {
    name: `${name}, p${p} of ${count}`,
    value: Number(percentile(values, p).toFixed(2)),
    baselineName: `${baselineName}, p${p}`,
    baseline: Number(percentile(baseline, p).toFixed(2)),
    unit: 'ms',
    ...(goal !== undefined ? { goal } : {}),
  };
}

/**
 * The public cueme's way of waiting: look at the tables every 500 ms. It runs beside Belay's
 * watch on the same file and records when it would have seen each request and each answer.
 */
export function startPoller(dbPath: string, answerStarted: ReadonlyMap<string, number>) {
  const db = new (loadSqlite().DatabaseSync)(dbPath, { enableForeignKeyConstraints: false });
  db.exec('PRAGMA busy_timeout = 5000');
  const requestLatency: number[] = [];
  const answerLatency: number[] = [];
  let lastRequest = 0;
  let lastResponse = 0;
  const tick = () => {
    const t = now();
    for (const row of db.prepare('SELECT id, created_at FROM cue_requests WHERE id > ? ORDER BY id').all(lastRequest) as Array<{ id: number; created_at: string }>) {
      lastRequest = row.id;
      const created = parseMailboxTime(row.created_at);
      if (created !== undefined) requestLatency.push(t - created);
    }
    for (const row of db.prepare('SELECT id, request_id FROM cue_responses WHERE id > ? ORDER BY id').all(lastResponse) as Array<{ id: number; request_id: string }>) {
      lastResponse = row.id;
      const started = answerStarted.get(row.request_id);
      if (started !== undefined) answerLatency.push(t - started);
    }
  };
  const timer = setInterval(tick, PUBLIC_POLL_MS);
  return {
    requestLatency,
    answerLatency,
    /** One last poll after the last answer, then stop. */
    async stop(): Promise<void> {
      await new Promise((resolve) => setTimeout(resolve, PUBLIC_POLL_MS + 50));
      clearInterval(timer);
      db.close();
    },
  };
}

const bench: BenchFile = {
  title: 'Cues: HAP mailbox latency (100 cues through real cueme processes)',
  async run(ctx: BenchContext): Promise<Figure[]> {
    silenceSqliteExperimentalWarning();
    const cueme = await bundleCli(ctx, 'cueme', 'src/cli/cueme.ts');
    const cueHome = path.join(ctx.tmpDir, 'mailbox');
    const mailbox = Mailbox.open({ home: cueHome });
    const answerStarted = new Map<string, number>();
    const poller = startPoller(mailbox.paths.dbPath, answerStarted);
    const arrivals = watchArrivals(mailbox);
    const toExit: number[] = [];

    const env = { PATH: process.env.PATH, HOME: ctx.tmpDir, CUE_HOME: cueHome };
    try {
      for (let i = 0; i < CUES; i++) {
        const agentId = `benchagent${i}`;
        const requested = arrivals.next(agentId);
        const child = spawn(process.execPath, [cueme, 'cue', agentId, '-'], { env, stdio: ['pipe', 'ignore', 'inherit'] });
        const exited = new Promise<number>((resolve, reject) => {
          child.on('error', reject);
          child.on('exit', () => resolve(now()));
        });
        child.stdin.end(`<cueme_prompt>\nbench cue ${i}\n</cueme_prompt>\n`);
        const timeout = setTimeout(() => child.kill('SIGKILL'), 30_000);
        const requestId = await requested;
        const started = now();
        answerStarted.set(requestId, started);
        await mailbox.answer(requestId, { text: `answer ${i}` });
        toExit.push((await exited) - started);
        clearTimeout(timeout);
      }
    } finally {
      arrivals.dispose();
      await poller.stop();
      mailbox.close();
    }
    ctx.log(`public cueme polls every ${PUBLIC_POLL_MS} ms; its poll, run on the same ${CUES} cues, saw them after p50 ${percentile(poller.requestLatency, 50).toFixed(0)} ms`);
    const figure = (name: string, values: number[], baselineName: string, baseline: number[], p: number, goal?: number) => percentileFigure(CUES, name, values, baselineName, baseline, p, goal);
    const pollRequest = `public cueme's method (table poll every ${PUBLIC_POLL_MS} ms) seeing the same requests`;
    const pollAnswer = `public cueme's method (table poll every ${PUBLIC_POLL_MS} ms) seeing the same answers, before any exit`;
    return [
      figure('cueme cue writes a request -> store change event', arrivals.toEvent, pollRequest, poller.requestLatency, 50, 0.2),
      figure('cueme cue writes a request -> store change event', arrivals.toEvent, pollRequest, poller.requestLatency, 99),
      figure('answer written -> cueme cue exits', toExit, pollAnswer, poller.answerLatency, 50, 0.2),
      figure('answer written -> cueme cue exits', toExit, pollAnswer, poller.answerLatency, 99),
    ];
  },
};

export default bench;
