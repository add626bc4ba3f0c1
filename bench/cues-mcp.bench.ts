// Cues over MCP: how fast a `cue` tool call of `belay mcp` reaches the mailbox's change event, and
// how fast an answer comes back as the tool result, beside the public cuemcp's method (a table
// poll every 500 ms) timed on the very same cues.
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { percentile, type BenchContext, type BenchFile, type Figure } from './lib.ts';
import { bundleCli, now, percentileFigure, PUBLIC_POLL_MS, startPoller, watchArrivals } from './cues.bench.ts';
import { silenceSqliteExperimentalWarning } from '../src/cues/core/sqlite.ts';
import { Mailbox } from '../src/cues/core/store.ts';

const CUES = 100;

const bench: BenchFile = {
  title: 'Cues over MCP: belay mcp latency (100 cue tool calls from the MCP SDK client)',
  async run(ctx: BenchContext): Promise<Figure[]> {
    silenceSqliteExperimentalWarning();
    const belay = await bundleCli(ctx, 'cli', 'src/cli/belay.ts');
    const cueHome = path.join(ctx.tmpDir, 'mailbox');
    const mailbox = Mailbox.open({ home: cueHome });
    const answerStarted = new Map<string, number>();
    const poller = startPoller(mailbox.paths.dbPath, answerStarted);
    const arrivals = watchArrivals(mailbox);
    const toResult: number[] = [];

    const transport = new StdioClientTransport({ command: process.execPath, args: [belay, 'mcp'], env: { PATH: process.env.PATH ?? '', HOME: ctx.tmpDir, CUE_HOME: cueHome }, stderr: 'inherit' });
    const client = new Client({ name: 'belay-bench', version: '1.0.0' });
    await client.connect(transport);
    try {
      for (let i = 0; i < CUES; i++) {
        const agentId = `benchagent${i}`;
        const requested = arrivals.next(agentId);
        const result = client.callTool({ name: 'cue', arguments: { prompt: `bench cue ${i}`, agent_id: agentId, payload: null } }).then(() => now());
        const requestId = await requested;
        const started = now();
        answerStarted.set(requestId, started);
        await mailbox.answer(requestId, { text: `answer ${i}` });
        toResult.push((await result) - started);
      }
    } finally {
      await client.close();
      arrivals.dispose();
      await poller.stop();
      mailbox.close();
    }
    ctx.log(`the public cuemcp polls every ${PUBLIC_POLL_MS} ms; its poll, run on the same ${CUES} cues, saw them after p50 ${percentile(poller.requestLatency, 50).toFixed(0)} ms`);
    const figure = (name: string, values: number[], baselineName: string, baseline: number[], p: number, goal?: number) => percentileFigure(CUES, name, values, baselineName, baseline, p, goal);
    const pollRequest = `public cuemcp's method (table poll every ${PUBLIC_POLL_MS} ms) seeing the same requests`;
    const pollAnswer = `public cuemcp's method (table poll every ${PUBLIC_POLL_MS} ms) seeing the same answers, before any reply`;
    return [
      figure('MCP cue call writes a request -> store change event', arrivals.toEvent, pollRequest, poller.requestLatency, 50, 0.1),
      figure('MCP cue call writes a request -> store change event', arrivals.toEvent, pollRequest, poller.requestLatency, 99),
      figure('answer written -> MCP tool result at the client', toResult, pollAnswer, poller.answerLatency, 50, 0.1),
      figure('answer written -> MCP tool result at the client', toResult, pollAnswer, poller.answerLatency, 99),
    ];
  },
};

export default bench;
