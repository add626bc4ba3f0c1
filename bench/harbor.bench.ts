// What Harbor 1.4 tasks add to a run, each beside the same work without Belay in between, in the
// same run (alternating rounds, so load from other processes falls on both):
// - 1 MB through the egress proxy's CONNECT tunnel (the allowlist judged, the first bytes read for
//   the host they name) against the same bytes over a direct TCP connection to the same server;
// - small HTTP requests forwarded by the proxy against the same requests sent directly;
// - the final state kept (a bounded copy that never follows a link) against `cp -a` of the same
//   folder;
// - an ATIF 1.7 trajectory read into the view's steps (size cap, schema, steps) against
//   `JSON.parse` of the same file.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { connect as tcpConnect, createServer, type AddressInfo, type Socket } from 'node:net';
import * as path from 'node:path';
import { EgressProxy } from '../src/runner/core/network/proxy.ts';
import { readAtifFile } from '../src/runner/core/records/atifRead.ts';
import { copyTreeBounded } from '../src/runner/core/run/finalState.ts';
import { alternatingMedians, type BenchFile } from './lib.ts';

const ROUNDS = 7;
const REQUESTS_PER_ROUND = 50;
const MEGABYTE = Buffer.alloc(1024 * 1024, 0x5a);
const STATE_FILES = 2000;
const ATIF_STEPS = 2000;

/** Sends `first` then 1 MB and reads the same MB back (an echo server at the other end). */
function echoMegabyte(socket: Socket, first?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let got = 0;
    socket.on('data', (c: Buffer) => {
      got += c.length;
      if (got >= MEGABYTE.length) {
        socket.destroy();
        resolve();
      }
    });
    socket.on('error', reject);
    if (first) socket.write(first);
    socket.write(MEGABYTE);
  });
}

/** Opens a CONNECT tunnel through the proxy and resolves the socket once the proxy said yes. */
function tunnel(proxyPort: number, target: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect(proxyPort, '127.0.0.1');
    let head = '';
    const onData = (c: Buffer) => {
      head += c.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      if (!head.startsWith('HTTP/1.1 200')) return reject(new Error(`the proxy answered: ${head.split('\r\n')[0]}`));
      resolve(socket);
    };
    socket.on('data', onData);
    socket.on('error', reject);
    socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
  });
}

function get(options: http.RequestOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.request({ ...options, agent: false }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end();
  });
}

const bench: BenchFile = {
  title: 'Harbor 1.4 tasks: the egress proxy, the final state, ATIF reading',
  async run(ctx) {
    // An echo server for the tunnel (its first bytes are an HTTP-looking head naming the host,
    // as a client's would be) and a web server for forwarded requests.
    const echo = createServer((socket) => socket.pipe(socket));
    const web = http.createServer((_req, res) => res.end('ok\n'));
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
    const echoPort = (echo.address() as AddressInfo).port;
    const webPort = (web.address() as AddressInfo).port;
    const proxy = new EgressProxy({
      phase: 'agent',
      policy: { mode: 'allowlist', allowedHosts: ['echo.bench.test', 'web.bench.test'] },
      logFile: path.join(ctx.tmpDir, 'network.jsonl'),
      // Both names stand at a public address for the policy and lead to the servers on loopback.
      resolve: async (host) => [{ address: '203.0.113.7', connect: { host: '127.0.0.1', port: host.startsWith('echo.') ? echoPort : webPort } }],
      maxConnections: 1024,
    });
    const proxyPort = (await proxy.listen()) as number;
    const firstBytes = 'PUT /upload HTTP/1.1\r\nHost: echo.bench.test\r\n\r\n';
    try {
      const [directTunnelMs, proxiedTunnelMs] = await alternatingMedians(
        () => echoMegabyte(tcpConnect(echoPort, '127.0.0.1'), firstBytes),
        async () => echoMegabyte(await tunnel(proxyPort, 'echo.bench.test:443'), firstBytes),
        ROUNDS,
      );
      const [directGetMs, proxiedGetMs] = await alternatingMedians(
        async () => {
          for (let i = 0; i < REQUESTS_PER_ROUND; i++) await get({ host: '127.0.0.1', port: webPort, path: '/a', headers: { host: 'web.bench.test' } });
        },
        async () => {
          for (let i = 0; i < REQUESTS_PER_ROUND; i++) await get({ host: '127.0.0.1', port: proxyPort, path: 'http://web.bench.test/a', headers: { host: 'web.bench.test' } });
        },
        ROUNDS,
      );

      // A working folder of STATE_FILES small files in nested folders, and a link.
      const state = path.join(ctx.tmpDir, 'workdir');
      for (let i = 0; i < STATE_FILES; i++) {
        const folder = path.join(state, `d${i % 40}`, `e${i % 7}`);
        mkdirSync(folder, { recursive: true });
        writeFileSync(path.join(folder, `f${i}.txt`), `file ${i}\n`.repeat(1 + (i % 50)));
      }
      const cpTarget = path.join(ctx.tmpDir, 'cp-copy');
      const keptTarget = path.join(ctx.tmpDir, 'kept');
      const [cpMs, keptMs] = await alternatingMedians(
        () => {
          rmSync(cpTarget, { recursive: true, force: true });
          execFileSync('cp', ['-a', state, cpTarget]);
        },
        () => copyTreeBounded(state, keptTarget, { maxBytes: 256 * 1024 * 1024, maxEntries: 20_000 }),
        5,
      );

      // An ATIF 1.7 trajectory of ATIF_STEPS agent steps, each with a shell call and its output.
      const steps: unknown[] = [{ step_id: 1, source: 'user', message: 'Fix the failing test.' }];
      for (let i = 0; i < ATIF_STEPS; i++) {
        steps.push({
          step_id: i + 2,
          source: 'agent',
          message: `Step ${i}: looking at the output.`,
          tool_calls: [{ tool_call_id: `c${i}`, function_name: 'bash', arguments: { command: `grep -n needle src/file${i}.py` } }],
          observation: { results: [{ source_call_id: `c${i}`, content: `src/file${i}.py:${i}: needle\n`.repeat(20) }] },
          metrics: { prompt_tokens: 1000 + i, completion_tokens: 50, cost_usd: 0.001 },
        });
      }
      const atifFile = path.join(ctx.tmpDir, 'trajectory.json');
      writeFileSync(atifFile, JSON.stringify({ schema_version: 'ATIF-v1.7', session_id: 's', agent: { name: 'bench', version: '1', model_name: 'm' }, steps }));
      const [parseMs, readMs] = await alternatingMedians(
        () => JSON.parse(readFileSync(atifFile, 'utf8')),
        async () => {
          const read = await readAtifFile(atifFile);
          if (read.steps.length === 0) throw new Error('no steps read');
        },
        5,
      );
      return [
        { name: '1 MB through the egress proxy’s CONNECT tunnel', value: proxiedTunnelMs, baselineName: 'the same bytes over a direct TCP connection', baseline: directTunnelMs, unit: 'ms' },
        { name: `an HTTP request forwarded by the egress proxy`, value: proxiedGetMs / REQUESTS_PER_ROUND, baselineName: 'the same request sent directly', baseline: directGetMs / REQUESTS_PER_ROUND, unit: 'ms' },
        { name: `the final state kept (${STATE_FILES} files, bounded copy)`, value: keptMs, baselineName: 'cp -a of the same folder', baseline: cpMs, unit: 'ms' },
        { name: `an ATIF 1.7 trajectory of ${ATIF_STEPS} steps read for the view`, value: readMs, baselineName: 'JSON.parse of the same file', baseline: parseMs, unit: 'ms' },
      ];
    } finally {
      await proxy.close();
      echo.close();
      web.closeAllConnections();
      web.close();
    }
  },
};

export default bench;
