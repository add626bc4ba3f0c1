// The programs the backends run elsewhere (src/runner/core/backends/programs/), each run here as
// it is run there: the sandbox's port bridge under `node -e`, the container's port bridge under
// `/bin/sh -c`, the services' forwarder in python3 and in perl through its launcher under
// `/bin/sh -c`, all as real child processes with real sockets on 127.0.0.1 and Unix sockets.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import { bridgedArgv } from '../../../src/runner/core/backends/sandbox.ts';
import { programText } from '../../../src/shared/programText.ts';
import { alive } from '../../support/processes.ts';

const PROGRAMS = new URL('../../../src/runner/core/backends/programs/', import.meta.url).href;
const program = (file: string) => programText(PROGRAMS, `./${file}`);

const dir = mkdtempSync(path.join(tmpdir(), 'belay-programs-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The real path of an interpreter on PATH (pyenv's shims are scripts that need pyenv), or undefined. */
function interpreter(name: string): string | undefined {
  const found = spawnSync('/bin/sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).stdout.trim();
  if (!found) return undefined;
  if (name !== 'python3') return found;
  return spawnSync(found, ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).stdout.trim() || undefined;
}
const python3 = interpreter('python3');
const perl = interpreter('perl');

/** A folder for PATH holding only the named programs. */
function binWith(name: string, programs: Record<string, string | undefined>): string {
  const bin = path.join(dir, name);
  mkdirSync(bin, { recursive: true });
  for (const [link, target] of Object.entries(programs)) if (target && !existsSync(path.join(bin, link))) symlinkSync(target, path.join(bin, link));
  return bin;
}

/** A server that answers each connection's first chunk with `reply(chunk)` and then ends it. */
async function answering(listen: (server: net.Server, ready: () => void) => void, reply: (text: string) => string): Promise<net.Server> {
  const server = net.createServer((socket) => {
    socket.once('data', (chunk) => socket.end(reply(chunk.toString('utf8'))));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => listen(server, resolve));
  after(() => server.close());
  return server;
}

function portOf(server: net.Server): number {
  return (server.address() as net.AddressInfo).port;
}

/** A port nothing listens on now (the OS chose it), for a program that must listen on a given port. */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = portOf(server);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Sends `text` to an address and reads everything until the other side ends. */
function exchange(options: net.NetConnectOpts, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(options);
    let got = '';
    socket.on('connect', () => socket.write(text));
    socket.on('data', (chunk) => (got += chunk.toString('utf8')));
    socket.on('end', () => resolve(got));
    socket.on('error', reject);
  });
}

interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function finished(child: ChildProcess): Promise<Ran> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
}

/** Starts a program in a process group of its own, ended (with the whole group) after the test. */
function startGroup(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): { child: ChildProcess; done: Promise<Ran> } {
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'], detached: true, env });
  const done = finished(child);
  after(async () => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // Already gone.
    }
    await done;
  });
  return { child, done };
}

/** The running (not zombie) processes of process group `group`. */
function groupMembers(group: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return fields[0] !== 'Z' && Number(fields[2]) === group;
      } catch {
        return false;
      }
    });
}

async function until(check: () => boolean, withinMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

/** Resolves once `text` has appeared on the child's stdout (or rejects when it ends before). */
function printed(child: ChildProcess, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      seen += chunk.toString('utf8');
      if (seen.includes(text)) resolve();
    });
    child.on('close', (code) => reject(new Error(`ended (${code}) before printing ${text}: ${seen}`)));
  });
}

test('the sandbox bridge serves its plan both ways, then runs the program and ends as it ends', async () => {
  const upper = await answering((s, ready) => s.listen(0, '127.0.0.1', ready), (text) => text.toUpperCase());
  const serviceSocket = path.join(dir, 'service.sock');
  await answering((s, ready) => s.listen(serviceSocket, ready), (text) => `service got ${text}`);
  const harnessSocket = path.join(dir, 'harness.sock');
  const outPort = await freePort();
  // The program (the agent) asks the service through the bridge's port, says what came back,
  // waits for the harness to reach its own port through the bridge's socket, and exits with 3.
  const agent = `const net=require('node:net');const s=net.connect(${outPort},'127.0.0.1',()=>s.write('ping'));let r='';s.on('data',(d)=>r+=d);s.on('end',()=>{console.log('agent heard: '+r);process.stdin.once('data',()=>process.exit(3));});`;
  const argv = bridgedArgv(process.execPath, { in: [[harnessSocket, portOf(upper)]], out: [[outPort, serviceSocket]] }, [process.execPath, '-e', agent]);
  assert.equal(argv[1], '-e');
  assert.equal(argv[2], program('sandbox-bridge.cjs'));
  const { child, done } = startGroup(argv);
  await printed(child, 'agent heard: service got ping');
  assert.equal(await exchange({ path: harnessSocket }, 'through the socket'), 'THROUGH THE SOCKET');
  child.stdin!.end('go\n');
  const ran = await done;
  assert.deepEqual({ code: ran.code, signal: ran.signal }, { code: 3, signal: null });
});

test('the sandbox bridge ends by the signal that ended its program, and says why when a port is taken', async () => {
  const { done } = startGroup(bridgedArgv(process.execPath, { in: [], out: [] }, [process.execPath, '-e', "process.kill(process.pid, 'SIGTERM')"]));
  assert.equal((await done).signal, 'SIGTERM');
  const taken = await answering((s, ready) => s.listen(0, '127.0.0.1', ready), () => '');
  const refused = startGroup(bridgedArgv(process.execPath, { in: [], out: [[portOf(taken), path.join(dir, 'none.sock')]] }, [process.execPath, '-e', 'console.log("ran")']));
  const ran = await refused.done;
  assert.equal(ran.code, 70);
  assert.match(ran.stderr, /^belay bridge: .*EADDRINUSE/);
  assert.doesNotMatch(ran.stdout, /ran/);
  const missing = await startGroup(bridgedArgv(process.execPath, { in: [], out: [] }, [path.join(dir, 'no-such-program')])).done;
  assert.equal(missing.code, 127);
  assert.match(missing.stderr, /no-such-program: .*ENOENT/);
});

/** Runs the container's bridge as the container runs it (`/bin/sh -c <text> <port>`) with `bin` as PATH. */
async function containerBridge(bin: string, port: number, text: string): Promise<Ran> {
  const { child, done } = startGroup(['/bin/sh', '-c', program('container-bridge.sh'), String(port)], { PATH: bin });
  // A bridge with nothing to bridge with exits before it reads: its stdin is then a broken pipe.
  child.stdin!.on('error', () => undefined);
  child.stdin!.end(text);
  return done;
}

test('the container bridge carries one exchange to the port, with bash or else python3, and says when it has neither', async (t) => {
  const echo = await answering((s, ready) => s.listen(0, '127.0.0.1', ready), (text) => `port got ${text}`);
  const bash = interpreter('bash');
  const cat = interpreter('cat');
  await t.test('with bash', { skip: (!bash || !cat) && 'no bash here' }, async () => {
    const ran = await containerBridge(binWith('bash', { bash, cat }), portOf(echo), 'hello');
    assert.equal(ran.stdout, 'port got hello');
  });
  await t.test('with python3 only', { skip: !python3 && 'no python3 here' }, async () => {
    const ran = await containerBridge(binWith('python', { python3 }), portOf(echo), 'hello');
    assert.equal(ran.stdout, 'port got hello');
    assert.equal(ran.code, 0);
  });
  await t.test('with neither', async () => {
    const ran = await containerBridge(binWith('nothing', {}), portOf(echo), 'hello');
    assert.equal(ran.code, 127);
    assert.equal(ran.stderr, "neither bash nor python3 in the image: Belay cannot reach the agent's port\n");
  });
});

/**
 * Starts the services' forwarder as the container does (`/bin/sh -c <launcher> <py> <pl> <plan>
 * <choice> <port=socket>…`) with `bin` as PATH, serving two ports, each piped to its Unix socket.
 */
async function forwarder(bin: string, choice: 'auto' | 'python3' | 'perl'): Promise<{ ports: number[]; sockets: string[]; child: ChildProcess; done: Promise<Ran> }> {
  const sockets = [path.join(dir, `${choice}-${path.basename(bin)}-a.sock`), path.join(dir, `${choice}-${path.basename(bin)}-b.sock`)];
  for (const [i, socket] of sockets.entries()) await answering((s, ready) => s.listen(socket, ready), (text) => `service ${i} got ${text}`);
  const ports = [await freePort(), await freePort()];
  const plan = ports.map((port, i) => [port, sockets[i]!] as const);
  const started = startGroup(
    ['/bin/sh', '-c', program('forwarder-launch.sh'), program('forwarder.py'), program('forwarder.pl'), JSON.stringify(plan), choice, ...plan.map(([port, socket]) => `${port}=${socket}`)],
    { PATH: bin },
  );
  return { ports, sockets, ...started };
}

for (const language of ['python3', 'perl'] as const) {
  const found = language === 'python3' ? python3 : perl;
  test(`the services' forwarder in ${language} pipes each port to its socket, many connections at once, and ends with its group`, { skip: !found && `no ${language} here` }, async () => {
    // Both interpreters on PATH: the launcher takes the one asked for.
    const { ports, child, done } = await forwarder(binWith('both', { python3, perl }), language);
    await printed(child, 'belay-forwarder-ready');
    const replies = await Promise.all(Array.from({ length: 12 }, (_, i) => exchange({ port: ports[i % 2]!, host: '127.0.0.1' }, `hello ${i}`)));
    assert.deepEqual(replies, Array.from({ length: 12 }, (_, i) => `service ${i % 2} got hello ${i}`));
    const pid = child.pid!;
    process.kill(-pid, 'SIGKILL');
    await done;
    assert.equal(alive(pid), false);
    // Perl's listeners are processes of their own, in the same group: none is left running.
    assert.ok(await until(() => groupMembers(pid).length === 0), `left running: ${groupMembers(pid).join(', ')}`);
  });
}

test("the forwarder's launcher takes python3 first, perl where there is no python3, and says when there is neither", async (t) => {
  await t.test('auto with python3 there', { skip: !python3 && 'no python3 here' }, async () => {
    const { ports, child } = await forwarder(binWith('both', { python3, perl }), 'auto');
    await printed(child, 'belay-forwarder-ready');
    assert.equal(await exchange({ port: ports[1]!, host: '127.0.0.1' }, 'x'), 'service 1 got x');
    // The launcher exec'd the forwarder: its process is python3 now.
    assert.deepEqual(readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').split('\0').slice(0, 2), ['python3', '-c']);
  });
  await t.test('auto without python3', { skip: !perl && 'no perl here' }, async () => {
    const { ports, child } = await forwarder(binWith('perl-only', { perl }), 'auto');
    await printed(child, 'belay-forwarder-ready');
    assert.equal(await exchange({ port: ports[0]!, host: '127.0.0.1' }, 'y'), 'service 0 got y');
  });
  await t.test('neither', async () => {
    const { done } = await forwarder(binWith('nothing', {}), 'auto');
    const ran = await done;
    assert.equal(ran.code, 127);
    assert.equal(ran.stderr, 'belay: the image has no python3 (nor perl)\n');
  });
  await t.test('python3 asked for where there is only perl', { skip: !perl && 'no perl here' }, async () => {
    const { done } = await forwarder(binWith('perl-only', { perl }), 'python3');
    assert.equal((await done).code, 127);
  });
});

test('a port the forwarder cannot take ends it with the reason, before it says it is ready', { skip: !perl && 'no perl here' }, async () => {
  const taken = await answering((s, ready) => s.listen(0, '127.0.0.1', ready), () => '');
  const started = startGroup(['/bin/sh', '-c', program('forwarder-launch.sh'), program('forwarder.py'), program('forwarder.pl'), '[]', 'perl', `${portOf(taken)}=${path.join(dir, 'x.sock')}`], {
    PATH: binWith('perl-only', { perl }),
  });
  const ran = await started.done;
  assert.notEqual(ran.code, 0);
  assert.match(ran.stderr, new RegExp(`^port ${portOf(taken)}: `));
  assert.doesNotMatch(ran.stdout, /belay-forwarder-ready/);
});
