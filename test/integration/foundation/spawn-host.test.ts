// The spawn helper (src/shared/spawn-host.ts): every program Belay starts on Linux and macOS is
// forked by a small helper process, which hands the pipes back. What must hold: nothing written is
// lost however fast the program exits, exits and failures are reported for the right program,
// the helper's channel never reaches a program, and a helper that dies takes its programs along
// and is replaced.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import * as os from 'node:os';
import { test } from 'node:test';
import { runBounded, startChild } from '../../../src/shared/process.ts';
import { HOST_SOURCE, replaceSpawnHost } from '../../../src/shared/spawn-host.ts';
import { alive } from '../../support/processes.ts';

async function until(check: () => boolean, withinMs = 5_000): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 10));
  }
  return true;
}

/** This process's children whose command line names the spawn helper. */
function helpers(): number[] {
  const children = readdirSync(`/proc/self/task`).flatMap((task) => readFileSync(`/proc/self/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number));
  return children.filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('belay-spawn-host');
    } catch {
      return false;
    }
  });
}

const linux = process.platform === 'linux';

test('programs are started by the helper, not by this process, and their pipes lose nothing however fast they exit', { skip: !linux && 'needs /proc' }, async () => {
  // 24 programs, 6 at a time: each writes 2 MB to stdout and a line to stderr and exits at once,
  // so most exit before their pipes have reached this process.
  const script = 'head -c 2000000 /dev/zero | tr "\\0" x; echo "err $1" >&2; exit $(( $1 % 7 ))';
  const results: { index: number; out: number; err: string; code: number | null; parent: number }[] = [];
  for (let batch = 0; batch < 4; batch++) {
    await Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        const index = batch * 6 + i;
        let out = 0;
        let err = '';
        let parent = 0;
        const child = startChild({
          argv: ['/bin/sh', '-c', `echo $PPID >&2; ${script}`, 'sh', String(index)],
          cwd: os.tmpdir(),
          stdin: 'ignore',
          onStdout: (chunk) => (out += chunk.length),
          onStderr: (chunk) => (err += chunk),
        });
        const end = await child.ended;
        const [first, ...rest] = err.split('\n');
        parent = Number(first);
        results.push({ index, out, err: rest.join('\n'), code: end.exitCode, parent });
      }),
    );
  }
  for (const r of results) {
    assert.equal(r.out, 2_000_000, `program ${r.index}: stdout`);
    assert.equal(r.err, `err ${r.index}\n`, `program ${r.index}: stderr`);
    assert.equal(r.code, r.index % 7, `program ${r.index}: exit code`);
    assert.notEqual(r.parent, process.pid, `program ${r.index} was forked by this process`);
  }
  assert.deepEqual(new Set(results.map((r) => r.parent)).size, 1, 'one helper started them all');
  assert.deepEqual(helpers(), [results[0]!.parent]);
});

test('stdin reaches the program and its end is seen; a failed start names the program; exit codes and signals are the program\'s own', async () => {
  const echoed = await runBounded({ argv: ['/bin/sh', '-c', 'cat; echo " and done"'], cwd: os.tmpdir(), input: 'fed through stdin', timeoutMs: 10_000, maxOutputChars: 1000 });
  assert.equal(echoed.stdout.text(''), 'fed through stdin and done\n');
  const missing = await runBounded({ argv: ['/nonexistent/program'], cwd: os.tmpdir(), timeoutMs: 10_000, maxOutputChars: 1000 });
  assert.equal(missing.spawnError?.message, '/nonexistent/program: not found (ENOENT)');
  const signalled = await runBounded({ argv: ['/bin/sh', '-c', 'kill -TERM $$'], cwd: os.tmpdir(), timeoutMs: 10_000, maxOutputChars: 1000 });
  assert.deepEqual([signalled.exitCode, signalled.signal], [null, 'SIGTERM']);
});

test('the helper\'s channel never reaches a program: it holds its three pipes and nothing else of Belay\'s', { skip: !linux && 'needs /proc' }, async () => {
  const mine = new Set(readdirSync('/proc/self/fd').filter((fd) => Number(fd) > 2).map((fd) => { try { return readlinkSync(`/proc/self/fd/${fd}`); } catch { return ''; } }));
  const listed = await runBounded({ argv: ['/bin/sh', '-c', 'for fd in /proc/$$/fd/*; do echo "${fd##*/} $(readlink "$fd")"; done'], cwd: os.tmpdir(), timeoutMs: 10_000, maxOutputChars: 10_000 });
  const fds = listed.stdout.text('').trim().split('\n').map((line) => line.split(' ') as [string, string]);
  const extra = fds.filter(([fd, target]) => Number(fd) > 2 && !target.startsWith('/proc/') && !mine.has(target));
  // Anything beyond 0-2 was inherited by this test process itself from whatever started it.
  assert.deepEqual(extra.filter(([, target]) => target.startsWith('socket:')), [], `fds: ${JSON.stringify(fds)}`);
  for (const fd of ['0', '1', '2']) assert.match(fds.find(([n]) => n === fd)?.[1] ?? '', /^socket:/, `fd ${fd}`);
});

test('a helper that is killed takes its programs along, they end as killed, and the next program gets a new helper', { skip: !linux && 'needs /proc' }, async () => {
  let pid = 0;
  const child = startChild({ argv: ['/bin/sh', '-c', 'echo $$; sleep 60 & wait'], cwd: os.tmpdir(), stdin: 'ignore', onStdout: (chunk) => (pid ||= Number(chunk.trim())) });
  assert.ok(await until(() => pid > 0), 'the program started');
  const [helper] = helpers();
  assert.ok(helper, 'a helper is running');
  process.kill(helper!, 'SIGKILL');
  const end = await child.ended;
  assert.deepEqual([end.exitCode, end.signal], [null, 'SIGKILL']);
  assert.ok(await until(() => !alive(pid)), 'the program was killed with its helper');
  const again = await runBounded({ argv: ['/bin/sh', '-c', 'echo $PPID'], cwd: os.tmpdir(), timeoutMs: 10_000, maxOutputChars: 100 });
  const next = Number(again.stdout.text('').trim());
  assert.notEqual(next, helper);
  assert.deepEqual(helpers(), [next]);
});

test('where the helper cannot run at all, programs are started here instead, those already waiting included', async () => {
  replaceSpawnHost(['-e', 'process.exit(3)']);
  try {
    const [first, second] = await Promise.all(
      ['one', 'two'].map((word) => runBounded({ argv: ['/bin/sh', '-c', 'echo "$PPID $(cat)"'], cwd: os.tmpdir(), input: word, timeoutMs: 10_000, maxOutputChars: 100 })),
    );
    assert.equal(first!.stdout.text(''), `${process.pid} one\n`);
    assert.equal(second!.stdout.text(''), `${process.pid} two\n`);
    const later = await runBounded({ argv: ['/bin/sh', '-c', 'echo $PPID'], cwd: os.tmpdir(), timeoutMs: 10_000, maxOutputChars: 100 });
    assert.equal(later.stdout.text('').trim(), String(process.pid));
  } finally {
    replaceSpawnHost();
  }
  const hosted = await runBounded({ argv: ['/bin/sh', '-c', 'echo $PPID'], cwd: os.tmpdir(), timeoutMs: 10_000, maxOutputChars: 100 });
  assert.notEqual(hosted.stdout.text('').trim(), String(process.pid), 'the real helper is back');
});

test('a program whose pipes cannot be handed over is killed and fails with one line, instead of leaving Belay waiting', { skip: !linux && 'needs /proc' }, async () => {
  // The real helper, with a channel that refuses every pipe.
  const refusing = "const realSend = process.send.bind(process); process.send = (m, h) => { if (h) throw new Error('refused'); return realSend(m, h); };";
  replaceSpawnHost(['-e', refusing + HOST_SOURCE, 'belay-spawn-host']);
  // A sleep told apart from every other by its length.
  const seconds = `60.${process.pid}${Date.now() % 100000}`;
  const sleeping = () =>
    readdirSync('/proc')
      .filter((name) => /^\d+$/.test(name))
      .some((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(seconds) && alive(Number(pid));
        } catch {
          return false;
        }
      });
  try {
    const result = await runBounded({ argv: ['/bin/sleep', seconds], cwd: os.tmpdir(), timeoutMs: 30_000, maxOutputChars: 100 });
    assert.equal(result.spawnError?.message, '/bin/sleep: its pipes could not be handed over');
    assert.equal(result.timedOut, false);
    assert.ok(await until(() => !sleeping()), 'the program was killed');
  } finally {
    replaceSpawnHost();
  }
});
