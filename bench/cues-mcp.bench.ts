// Cues over MCP: how fast a `cue` tool call of `belay mcp` reaches the mailbox's change event, and
// how fast an answer comes back as the tool result, beside the public cuemcp's method (a table
// poll every 500 ms) timed on the very same cues.
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import * as esbuild from 'esbuild';
import { percentile, type BenchContext, type BenchFile, type Figure } from './lib.ts';
import { PUBLIC_POLL_MS, startPoller } from './cues.bench.ts';
import { silenceSqliteExperimentalWarning } from '../src/cues/core/sqlite.ts';
import { Mailbox } from '../src/cues/core/store.ts';

const CUES = 100;

/** Wall-clock milliseconds with sub-millisecond resolution, comparable with the mailbox timestamps. */
const now = () => performance.timeOrigin + performance.now();

async function bundleBelay(ctx: BenchContext): Promise<string> {
  await esbuild.build({
    absWorkingDir: ctx.repoRoot,
    entryPoints: { cli: 'src/cli/belay.ts' },
    outdir: ctx.tmpDir,
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    define: { BELAY_VERSION: '"bench"' },
    logLevel: 'warning',
  });
  return path.join(ctx.tmpDir, 'cli.js');
}

const bench: BenchFile = {
  title: 'Cues over MCP: belay mcp latency (100 cue tool calls from the MCP SDK client)',
  async run(ctx: BenchContext): Promise<Figure[]> {
    silenceSqliteExperimentalWarning();
    const belay = await bundleBelay(ctx);
    const cueHome = path.join(ctx.tmpDir, 'mailbox');
    const mailbox = Mailbox.open({ home: cueHome });
    const answerStarted = new Map<string, number>();
    const poller = startPoller(mailbox.paths.dbPath, answerStarted);
    const toEvent: number[] = [];
    const toResult: number[] = [];

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
    const transport = new StdioClientTransport({ command: process.execPath, args: [belay, 'mcp'], env: { PATH: process.env.PATH ?? '', HOME: ctx.tmpDir, CUE_HOME: cueHome }, stderr: 'inherit' });
    const client = new Client({ name: 'belay-bench', version: '1.0.0' });
    await client.connect(transport);
    try {
      for (let i = 0; i < CUES; i++) {
        const agentId = `benchagent${i}`;
        const requested = new Promise<string>((resolve) => (waitingFor = { agentId, resolve }));
        const result = client.callTool({ name: 'cue', arguments: { prompt: `bench cue ${i}`, agent_id: agentId, payload: null } }).then(() => now());
        const requestId = await requested;
        const started = now();
        answerStarted.set(requestId, started);
        await mailbox.answer(requestId, { text: `answer ${i}` });
        toResult.push((await result) - started);
      }
    } finally {
      await client.close();
      dispose();
      await poller.stop();
      mailbox.close();
    }
    ctx.log(`the public cuemcp polls every ${PUBLIC_POLL_MS} ms; its poll, run on the same ${CUES} cues, saw them after p50 ${percentile(poller.requestLatency, 50).toFixed(0)} ms`);
    const figure = (name: string, values: number[], baselineName: string, baseline: number[], p: number, goal?: number): Figure => ({
      name: `${name}, p${p} of ${CUES}`,
      value: Number(percentile(values, p).toFixed(2)),
      baselineName: `${baselineName}, p${p}`,
      baseline: Number(percentile(baseline, p).toFixed(2)),
      unit: 'ms',
      ...(goal !== undefined ? { goal } : {}),
    });
    const pollRequest = `public cuemcp's method (table poll every ${PUBLIC_POLL_MS} ms) seeing the same requests`;
    const pollAnswer = `public cuemcp's method (table poll every ${PUBLIC_POLL_MS} ms) seeing the same answers, before any reply`;
    return [
      figure('MCP cue call writes a request -> store change event', toEvent, pollRequest, poller.requestLatency, 50, 0.1),
      figure('MCP cue call writes a request -> store change event', toEvent, pollRequest, poller.requestLatency, 99),
      figure('answer written -> MCP tool result at the client', toResult, pollAnswer, poller.answerLatency, 50, 0.1),
      figure('answer written -> MCP tool result at the client', toResult, pollAnswer, poller.answerLatency, 99),
    ];
  },
};

export default bench;
