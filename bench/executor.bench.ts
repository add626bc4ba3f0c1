// The executor's own overheads, each beside the same work without it, in the same run:
// - a command of `true` through the executor (spawn frame, shepherd, program, exit report once
//   its tree is dead) against a bare spawn of /bin/true from Node with the same pipes, in
//   alternating rounds so that load from other processes falls on both;
// - 1 MB echoed through `connect` over the channel against the same echo over a direct TCP
//   connection to the same server.
import { spawn } from 'node:child_process';
import { createServer, connect as tcpConnect, type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { executorBinary } from '../src/shared/executor/binary.ts';
import { startExecutor } from '../src/shared/executor/client.ts';
import { alternatingMedians, type BenchFile } from './lib.ts';

const COMMANDS_PER_ROUND = 50;
const ROUNDS = 7;
const MEGABYTE = Buffer.alloc(1024 * 1024, 0x5a);

function bareTrue(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/true', [], { stdio: ['pipe', 'pipe', 'pipe'], env: {}, cwd: '/' });
    child.stdin.end();
    child.on('error', reject);
    child.on('close', () => resolve());
  });
}

function echo(stream: Duplex): Promise<void> {
  return new Promise((resolve, reject) => {
    let got = 0;
    stream.on('data', (c: Buffer) => (got += c.length));
    stream.on('end', () => (got === MEGABYTE.length ? resolve() : reject(new Error(`echoed ${got} bytes`))));
    stream.on('error', reject);
    stream.end(MEGABYTE);
  });
}

const bench: BenchFile = {
  title: 'a command and a connection through belay-exec',
  async run(ctx) {
    let binary: string;
    try {
      binary = executorBinary();
    } catch (error) {
      ctx.log(`no figure: ${(error as Error).message}`);
      return [];
    }
    const executor = await startExecutor({ argv: [binary], cwd: '/', env: {} });
    const server = createServer((socket) => socket.pipe(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const throughExecutor = async () => {
        for (let i = 0; i < COMMANDS_PER_ROUND; i++) {
          const child = executor.spawn({ argv: ['/bin/true'], cwd: '/', env: {} });
          child.endInput();
          const end = await child.ended;
          if (end.exitCode !== 0) throw new Error(`true through the executor: ${end.spawnError?.message ?? end.exitCode}`);
        }
      };
      const bare = async () => {
        for (let i = 0; i < COMMANDS_PER_ROUND; i++) await bareTrue();
      };
      const [bareMs, executorMs] = await alternatingMedians(bare, throughExecutor, ROUNDS);
      const [directMs, channelMs] = await alternatingMedians(
        () => echo(tcpConnect(port, '127.0.0.1')),
        async () => echo(await executor.connect(port)),
        ROUNDS,
      );
      return [
        { name: '`true` through the executor', value: executorMs / COMMANDS_PER_ROUND, baselineName: 'bare spawn of /bin/true from Node', baseline: bareMs / COMMANDS_PER_ROUND, unit: 'ms' },
        { name: '1 MB echo through connect over the channel', value: channelMs, baselineName: 'the same echo over a direct TCP connection', baseline: directMs, unit: 'ms' },
      ];
    } finally {
      server.close();
      await executor.close();
    }
  },
};

export default bench;
