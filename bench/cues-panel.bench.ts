// The Cues panel in the real workbench: time from a cue being written to the mailbox to the panel
// having put its card on the page, p50 over 50 cues, beside the public console's way (a table
// refresh every 5 s) applied to the very same write times.
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { percentile, type BenchContext, type BenchFile, type Figure } from './lib.ts';
import { silenceSqliteExperimentalWarning } from '../src/cues/core/sqlite.ts';
import { Mailbox } from '../src/cues/core/store.ts';
import { cuesFrame, openBelayContainer, openWorkbench } from '../test/support/workbench.ts';

const CUES = 50;
const CONSOLE_REFRESH_MS = 5000;

/** Wall-clock milliseconds with sub-millisecond resolution; the webview stamps cards the same way. */
const now = () => performance.timeOrigin + performance.now();

const bench: BenchFile = {
  title: `Cues panel: cue written -> card on the page in the real workbench (${CUES} cues)`,
  async run(ctx: BenchContext): Promise<Figure[]> {
    silenceSqliteExperimentalWarning();
    execFileSync(process.execPath, ['scripts/build.ts'], { cwd: ctx.repoRoot, stdio: 'ignore' });
    const cueHome = path.join(ctx.tmpDir, 'mailbox');
    const mailbox = Mailbox.open({ home: cueHome });
    const wb = await openWorkbench({ theme: 'dark', settings: { 'belay.cues.home': cueHome, 'belay.cues.notifications': false } });
    const latencies: number[] = [];
    const consolePoll: number[] = [];
    try {
      await openBelayContainer(wb.page);
      const frame = cuesFrame(wb.page);
      await frame.locator('.detail code', { hasText: cueHome }).waitFor({ timeout: 30_000 });
      // The public console's refresh timer, started when its page loaded (here: when the panel did).
      const consoleTimerStart = now();
      // A warm-up cue: the first one pays for loading the card's code paths.
      for (let i = -1; i < CUES; i++) {
        const written = now();
        const { requestId } = mailbox.createRequest({ agentId: 'benchagent', prompt: `bench cue ${i}`, payloadJson: '{"type":"choice","options":["A","B"]}' });
        const card = frame.locator(`article.cue[data-request-id="${requestId}"]`);
        await card.waitFor({ timeout: 10_000 });
        const renderedAt = Number(await card.getAttribute('data-rendered-at'));
        if (i >= 0) {
          latencies.push(renderedAt - written);
          // The public console reloads every 5 s: a cue written at t is seen at the next tick.
          consolePoll.push(CONSOLE_REFRESH_MS - ((written - consoleTimerStart) % CONSOLE_REFRESH_MS));
        }
        mailbox.cancel(requestId);
        await card.waitFor({ state: 'detached', timeout: 10_000 });
      }
    } finally {
      await wb.close();
      mailbox.close();
    }
    ctx.log(`panel: p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms over ${CUES} cues`);
    return [
      {
        name: `cue written -> card on the page (real workbench), p50 of ${CUES}`,
        value: Number(percentile(latencies, 50).toFixed(2)),
        baselineName: `public console's ${CONSOLE_REFRESH_MS / 1000} s refresh, next tick after the same writes, p50`,
        baseline: Number(percentile(consolePoll, 50).toFixed(2)),
        unit: 'ms',
      },
      {
        name: `cue written -> card on the page (real workbench), p99 of ${CUES}`,
        value: Number(percentile(latencies, 99).toFixed(2)),
        baselineName: `public console's ${CONSOLE_REFRESH_MS / 1000} s refresh, p99`,
        baseline: Number(percentile(consolePoll, 99).toFixed(2)),
        unit: 'ms',
      },
    ];
  },
};

export default bench;
