// The executor's per-command guarantees (src/shared/executor/contract.ts), on the real belay-exec
// started as the local backend starts it: exact argv, env, cwd and stdin, exit codes and signals,
// the timeout and RLIMIT_FSIZE enforced inside, kills of the whole tree, spawn failures in one line,
// connect and listen over the channel, kill-all and close.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import * as path from 'node:path';
import type { Duplex } from 'node:stream';
import { describe, test } from 'node:test';
import type { ExecutorEnd } from '../../../src/shared/executor/client.ts';
import { ensureBuilt } from '../../support/build.ts';
import { alive, executorForFile, localExecutor, PATH_ENV, pids, run } from '../../support/executor.ts';

ensureBuilt();

const shared = executorForFile('belay-executor-');

/** Reads a stream to its end. */
function readAll(stream: Duplex): Promise<Buffer> {
  const chunks: Buffer[] = [];
  return new Promise((resolve, reject) => {
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

describe('one command', () => {
  test('gets exactly its argv, environment and working folder', async () => {
    const ran = await run(shared.executor, {
      argv: ['/bin/sh', '-c', 'printf "%s|" "$@"; pwd; env | sort', 'sh', 'two words', '', 'ünï'],
      cwd: shared.temp.dir,
      env: { ...PATH_ENV, ONLY: 'this', EMPTY: '' },
    });
    assert.equal(ran.exitCode, 0);
    const lines = ran.stdout.split('\n');
    assert.equal(lines[0], `two words||ünï|${shared.temp.dir}`);
    // Nothing of the executor's or Belay's environment; sh adds PWD itself.
    assert.deepEqual(lines.slice(1).filter(Boolean), ['EMPTY=', 'ONLY=this', `PATH=${PATH_ENV.PATH}`, `PWD=${shared.temp.dir}`]);
  });

  test('finds a bare program name on the PATH it was given, not the executor’s', async () => {
    const bin = path.join(shared.temp.dir, 'bin');
    writeFileSync(path.join(shared.temp.dir, 'marker'), '');
    await run(shared.executor, { argv: ['/bin/mkdir', '-p', bin], cwd: shared.temp.dir, env: {} });
    writeFileSync(path.join(bin, 'only-here'), '#!/bin/sh\necho found "$0"\n', { mode: 0o755 });
    const ran = await run(shared.executor, { argv: ['only-here'], cwd: shared.temp.dir, env: { PATH: `/nonexistent:${bin}:/bin` } });
    assert.deepEqual([ran.exitCode, ran.stdout], [0, `found ${bin}/only-here\n`]);
  });

  test('reads stdin from the pipe, or /dev/null when ignored', async () => {
    const piped = await run(shared.executor, { argv: ['/bin/cat'], cwd: '/', env: {}, input: 'one\ntwo\n' });
    assert.equal(piped.stdout, 'one\ntwo\n');
    const ignored = await run(shared.executor, { argv: ['/bin/sh', '-c', 'cat; readlink /proc/self/fd/0'], cwd: '/', env: PATH_ENV, stdin: 'ignore' });
    assert.deepEqual([ignored.exitCode, ignored.stdout], [0, '/dev/null\n']);
  });

  test('stdout and stderr apart; UTF-8 split across reads comes out whole', async () => {
    const ran = await run(shared.executor, {
      argv: ['/bin/sh', '-c', "printf '\\303'; read x; printf '\\251 out'; printf '\\342\\202' >&2; read y; printf '\\254 err' >&2"],
      cwd: '/',
      env: PATH_ENV,
      input: 'a\nb\n',
    });
    assert.deepEqual([ran.stdout, ran.stderr], ['é out', '€ err']);
  });

  test('exit codes and signals come back as they are', async () => {
    assert.equal((await run(shared.executor, { argv: ['/bin/sh', '-c', 'exit 42'], cwd: '/', env: {} })).exitCode, 42);
    const signalled = await run(shared.executor, { argv: ['/bin/sh', '-c', 'kill -TERM $$'], cwd: '/', env: {} });
    assert.deepEqual([signalled.exitCode, signalled.signal], [null, 'SIGTERM']);
  });

  test('a program that is not there, not executable, or a missing folder: one line each', async () => {
    const missing = await run(shared.executor, { argv: ['no-such-program-x27'], cwd: '/', env: PATH_ENV });
    assert.equal(missing.spawnError?.message, 'no-such-program-x27: not found (ENOENT)');
    assert.equal((missing.spawnError as NodeJS.ErrnoException).code, 'ENOENT');
    const plain = path.join(shared.temp.dir, 'plain.txt');
    writeFileSync(plain, 'not a program', { mode: 0o644 });
    const notExec = await run(shared.executor, { argv: [plain], cwd: '/', env: {} });
    assert.equal(notExec.spawnError?.message, `${plain}: not executable (EACCES)`);
    const noCwd = await run(shared.executor, { argv: ['/bin/true'], cwd: path.join(shared.temp.dir, 'gone'), env: {} });
    assert.equal(noCwd.spawnError?.message, `/bin/true: its working folder ${path.join(shared.temp.dir, 'gone')} does not exist (ENOENT)`);
    const nul = await run(shared.executor, { argv: ['/bin/echo', 'a\0b'], cwd: '/', env: {} });
    assert.equal(nul.spawnError?.message, '/bin/echo: argument 1 holds a NUL character');
    for (const ran of [missing, notExec, noCwd, nul]) assert.deepEqual([ran.exitCode, ran.signal, ran.spawnError?.message.includes('\n')], [null, null, false]);
  });

  test('the timeout is enforced inside and ends the whole tree', async () => {
    const child = shared.executor.spawn({ argv: ['/bin/sh', '-c', 'setsid sleep 300 & echo $!; sleep 300 & echo $!; wait'], cwd: '/', env: PATH_ENV, timeoutMs: 300, onStdout: (t) => (out += t) });
    let out = '';
    child.endInput();
    const end: ExecutorEnd = await child.ended;
    assert.deepEqual([end.signal, end.timedOut], ['SIGKILL', true]);
    const started = pids(out);
    assert.equal(started.length, 2);
    // `ended` comes once the tree is dead: no waiting here.
    for (const pid of [...started, child.pid!]) assert.equal(alive(pid), false, `${pid} still runs`);
  });

  test('the program gets the fd limit the executor was given, not the one it raised for itself', async () => {
    const { startExecutor } = await import('../../../src/shared/executor/client.ts');
    const { executorBinary } = await import('../../../src/shared/executor/binary.ts');
    const own = await startExecutor({ argv: ['/usr/bin/prlimit', '--nofile=200:4000', '--', executorBinary()], cwd: '/', env: {} });
    try {
      const ran = await run(own, { argv: ['/bin/sh', '-c', 'ulimit -Sn; ulimit -Hn'], cwd: '/', env: PATH_ENV });
      assert.equal(ran.stdout, '200\n4000\n');
      assert.match(readFileSync(`/proc/${own.pid}/limits`, 'utf8'), /Max open files\s+4000\s+4000/);
    } finally {
      await own.close();
    }
  });

  test('RLIMIT_FSIZE holds for the program and what it starts', async () => {
    const file = path.join(shared.temp.dir, 'big');
    const ran = await run(shared.executor, { argv: ['/bin/sh', '-c', `head -c 100000 /dev/zero > ${file}`], cwd: '/', env: PATH_ENV, maxFileBytes: 4096 });
    assert.notEqual(ran.exitCode, 0);
    assert.equal(statSync(file).size, 4096);
  });

  test('kill before the spawn is known, and after the end, both work', async () => {
    const child = shared.executor.spawn({ argv: ['/bin/sleep', '300'], cwd: '/', env: {} });
    child.kill();
    const end: ExecutorEnd = await child.ended;
    assert.deepEqual([end.exitCode, end.signal, end.spawnError, end.timedOut], [null, 'SIGKILL', undefined, undefined]);
    child.kill();
    child.write('ignored');
    child.endInput();
  });

  test('kill ends setsid and double-forked descendants before `ended` settles', async () => {
    let out = '';
    const child = shared.executor.spawn({
      argv: ['/bin/sh', '-c', '(setsid sh -c "sleep 300 & echo \\$!; sleep 300" & echo $!) ; (sh -c "sleep 300 & echo \\$!" &); cat'],
      cwd: '/',
      env: PATH_ENV,
      onStdout: (t) => {
        out += t;
        if (pids(out).length === 3) child.kill();
      },
    });
    const end = await child.ended;
    assert.equal(end.signal, 'SIGKILL');
    const started = pids(out);
    assert.equal(started.length, 3, out);
    for (const pid of started) assert.equal(alive(pid), false, `${pid} still runs`);
  });

  test('after the program exits, what it left in the background is ended before `ended`', async () => {
    const ran = await run(shared.executor, { argv: ['/bin/sh', '-c', 'setsid sleep 300 >/dev/null 2>&1 & echo $!; sleep 300 & echo $!'], cwd: '/', env: PATH_ENV });
    assert.equal(ran.exitCode, 0);
    for (const pid of pids(ran.stdout)) assert.equal(alive(pid), false, `${pid} still runs`);
  });

  test('the channel never reaches a command: only 0, 1 and 2 are open in it', async () => {
    // ls lists the fds of the shell that started it (the shell holds no folder open meanwhile).
    const ran = await run(shared.executor, { argv: ['/bin/sh', '-c', 'ls /proc/$$/fd'], cwd: '/', env: PATH_ENV });
    assert.deepEqual(ran.stdout.split('\n').filter(Boolean).sort(), ['0', '1', '2']);
  });

  test('output written byte for byte (frame-like bytes included) comes back as written', async () => {
    const bytes = Buffer.from(Array.from({ length: 128 }, (_, i) => i));
    const file = path.join(shared.temp.dir, 'bytes');
    writeFileSync(file, Buffer.concat([bytes, bytes, bytes]));
    const ran = await run(shared.executor, { argv: ['/bin/cat', file], cwd: '/', env: {} });
    assert.equal(ran.stdout, Buffer.concat([bytes, bytes, bytes]).toString('utf8'));
  });
});

describe('connections', () => {
  test('connect reaches a server inside; a 1 MB echo comes back intact', async () => {
    const server = createServer((socket) => socket.pipe(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      const stream = await shared.executor.connect(port);
      const payload = Buffer.alloc(1024 * 1024);
      for (let i = 0; i < payload.length; i++) payload[i] = (i * 7919) & 0xff;
      const echoed = readAll(stream);
      stream.end(payload);
      const got = await echoed;
      assert.equal(createHash('sha256').update(got).digest('hex'), createHash('sha256').update(payload).digest('hex'));
    } finally {
      server.close();
    }
  });

  test('connect to a closed port fails in one line', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    await new Promise((resolve) => server.close(resolve));
    await assert.rejects(shared.executor.connect(port), /^Error: connect: Connection refused \(ECONNREFUSED\)$/);
    await assert.rejects(shared.executor.connect(0), /0 is not a port/);
  });

  test('listen: each connection made inside arrives as a stream; close stops new ones', async () => {
    const listener = await shared.executor.listen(0, (stream) => {
      void readAll(stream).then((got) => stream.end(`seen ${got.length}`));
    });
    assert.ok(listener.port > 0);
    // A client inside the environment (here: this machine) talks to the listener.
    const ran = await run(shared.executor, {
      argv: [process.execPath, '-e', `const s=require('net').connect(${listener.port},'127.0.0.1',()=>s.end('x'.repeat(200000)));let r='';s.on('data',d=>r+=d);s.on('end',()=>console.log(r))`],
      cwd: '/',
      env: {},
    });
    assert.equal(ran.stdout, 'seen 200000\n');
    await listener.close();
    const refused = await run(shared.executor, {
      argv: [process.execPath, '-e', `require('net').connect(${listener.port},'127.0.0.1').on('error',e=>console.log(e.code)).on('connect',()=>console.log('connected'))`],
      cwd: '/',
      env: {},
    });
    assert.equal(refused.stdout, 'ECONNREFUSED\n');
  });

  test('listening on a port in use fails in one line', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      await assert.rejects(shared.executor.listen(port, () => undefined), new RegExp(`^Error: listen on 127\\.0\\.0\\.1:${port}: Address already in use \\(EADDRINUSE\\)$`));
    } finally {
      server.close();
    }
  });
});

describe('more commands than may run at once', () => {
  test('the rest wait their turn in order, their stdin kept; a waiting one can be killed', async () => {
    const { startExecutor } = await import('../../../src/shared/executor/client.ts');
    const { executorBinary } = await import('../../../src/shared/executor/binary.ts');
    const own = await startExecutor({ argv: [executorBinary(), '--max-running=2'], cwd: '/', env: {} });
    try {
      // Two that hold their turn until their input ends, then five that wait.
      const holders = [0, 1].map(() => own.spawn({ argv: ['/bin/cat'], cwd: '/', env: {} }));
      const waiting = [0, 1, 2, 3, 4].map((i) => {
        let out = '';
        const child = own.spawn({ argv: ['/bin/cat'], cwd: '/', env: {}, onStdout: (t) => (out += t) });
        child.write(`input ${i}\n`.repeat(1000));
        child.endInput();
        return { child, output: () => out };
      });
      waiting[2]!.child.kill();
      assert.equal(waiting[0]!.child.pid, undefined);
      for (const holder of holders) holder.endInput();
      const ends = await Promise.all(waiting.map((w) => w.child.ended));
      assert.deepEqual(
        ends.map((e) => e.exitCode ?? e.signal),
        [0, 0, 'SIGKILL', 0, 0],
      );
      for (const i of [0, 1, 3, 4]) assert.equal(waiting[i]!.output(), `input ${i}\n`.repeat(1000));
    } finally {
      await own.close();
    }
    await assert.rejects(startExecutor({ argv: [executorBinary(), '--nonsense'], cwd: '/', env: {} }), /belay-exec: unknown argument --nonsense \(the only one is --max-running=N\)$/);
  });
});

describe('kill-all and close', () => {
  test('kill-all ends every command and what they left, and answers once all are dead', async () => {
    let out = '';
    const children = [0, 1, 2].map(() =>
      shared.executor.spawn({ argv: ['/bin/sh', '-c', 'setsid sleep 300 & echo $!; sleep 300 & echo $!; echo $$; wait'], cwd: '/', env: PATH_ENV, stdin: 'ignore', onStdout: (t) => (out += t) }),
    );
    while (pids(out).length < 9) await new Promise((r) => setTimeout(r, 10));
    await shared.executor.killAll();
    for (const pid of pids(out)) assert.equal(alive(pid), false, `${pid} still runs`);
    for (const child of children) assert.equal((await child.ended).signal, 'SIGKILL');
    // The executor still serves afterwards; a command sent while a kill-all runs starts after it.
    const during = shared.executor.killAll();
    // Its stdin, sent while it waits to start, is kept for it.
    const sentDuring = run(shared.executor, { argv: ['/bin/cat'], cwd: '/', env: {}, input: 'after\n' });
    await during;
    assert.deepEqual([(await sentDuring).exitCode, (await sentDuring).stdout], [0, 'after\n']);
  });

  test('close ends everything, then the executor; later calls say it ended', async () => {
    const own = await localExecutor();
    let out = '';
    const child = own.spawn({ argv: ['/bin/sh', '-c', 'setsid sleep 300 & echo $!; echo $$; wait'], cwd: '/', env: PATH_ENV, onStdout: (t) => (out += t) });
    while (pids(out).length < 2) await new Promise((r) => setTimeout(r, 10));
    await own.close();
    await own.close();
    assert.equal((await own.closed).reason.endsWith('closed'), true);
    assert.equal((await child.ended).signal, 'SIGKILL');
    for (const pid of [...pids(out), own.pid]) assert.equal(alive(pid), false, `${pid} still runs`);
    const late = await own.spawn({ argv: ['/bin/true'], cwd: '/', env: {} }).ended;
    assert.match(late.spawnError?.message ?? '', /^\/bin\/true: not started: .*closed$/);
    await assert.rejects(own.connect(80), /the executor has ended|closed/);
  });

  test('a transport that cannot start rejects in one line', async () => {
    const { startExecutor } = await import('../../../src/shared/executor/client.ts');
    await assert.rejects(startExecutor({ argv: ['/nonexistent/belay-exec'], cwd: '/', env: {} }), /^Error: \/nonexistent\/belay-exec: not found \(ENOENT\)$/);
    await assert.rejects(startExecutor({ argv: ['/bin/sh', '-c', 'echo "bwrap: no permission" >&2; exit 1'], cwd: '/', env: {} }), /^Error: \/bin\/sh: bwrap: no permission$/);
    assert.equal(existsSync('/nonexistent'), false);
  });
});
