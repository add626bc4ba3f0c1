import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { writeFileAtomic } from '../../../src/shared/atomic.ts';
import { BoundedText, prepareBounded, runBounded } from '../../../src/shared/process.ts';

/** Whether a process still runs (a killed one may linger as a zombie until it is reaped: not running). */
const alive = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
};

/** A killed process finishes exiting a moment after its pipes close: wait (bounded) until it has. */
async function gone(pid: number, withinMs = 5_000): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (alive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 10));
  }
  return true;
}

test('BoundedText keeps the head (and tail when asked) and marks what it dropped', () => {
  const head = new BoundedText(5);
  head.append('abc');
  head.append('defgh');
  assert.equal(head.length, 8);
  assert.equal(head.truncated, true);
  assert.equal(head.text('[cut]'), 'abcde\n[cut]');
  const both = new BoundedText(3, 2);
  both.append('123456789');
  assert.equal(both.text('…'), '123\n…\n89');
  const small = new BoundedText(10, 2);
  small.append('short');
  assert.equal(small.truncated, false);
  assert.equal(small.text('…'), 'short');
});

test('runBounded captures stdout, stderr and the exit code', async () => {
  const r = await runBounded({ argv: ['/bin/sh', '-c', 'echo out; echo err >&2; exit 3'], cwd: os.tmpdir(), timeoutMs: 10_000, maxOutputChars: 100 });
  assert.equal(r.exitCode, 3);
  assert.equal(r.stdout.text(''), 'out\n');
  assert.equal(r.stderr.text(''), 'err\n');
  assert.equal(r.timedOut, false);
});

test('runBounded keeps memory bounded however much is printed', async () => {
  let streamed = 0;
  const r = await runBounded({
    argv: ['/bin/sh', '-c', 'head -c 20000000 /dev/zero | tr "\\0" x'],
    cwd: os.tmpdir(),
    timeoutMs: 30_000,
    maxOutputChars: 1000,
    onStdout: (c) => (streamed += c.length),
  });
  assert.equal(r.exitCode, 0);
  assert.equal(streamed, 20_000_000);
  assert.equal(r.stdout.length, 20_000_000);
  assert.equal(r.stdout.text('[cut]').length, 1000 + '\n[cut]'.length);
});

test('a timeout kills the whole process group, even a child holding the pipe open', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'belay-proc-'));
  try {
    const pidFile = path.join(dir, 'child.pid');
    const r = await runBounded({
      argv: ['/bin/sh', '-c', `sleep 60 & echo $! > ${pidFile}; sleep 60`],
      cwd: dir,
      timeoutMs: 300,
      maxOutputChars: 100,
    });
    assert.equal(r.timedOut, true);
    assert.equal(r.exitCode, null);
    const child = Number(readFileSync(pidFile, 'utf8'));
    assert.equal(await gone(child), true, 'the background child survived');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a background child left behind after a normal exit does not keep the call waiting', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'belay-proc-'));
  try {
    const pidFile = path.join(dir, 'child.pid');
    const r = await runBounded({ argv: ['/bin/sh', '-c', `sleep 60 & echo $! > ${pidFile}; echo done`], cwd: dir, timeoutMs: 20_000, maxOutputChars: 100 });
    assert.equal(r.timedOut, false);
    assert.equal(r.exitCode, 0);
    assert.equal(r.stdout.text(''), 'done\n');
    assert.equal(await gone(Number(readFileSync(pidFile, 'utf8'))), true, 'the background child survived');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an abort signal ends the run; a missing program is reported, not thrown', async () => {
  const controller = new AbortController();
  const pending = runBounded({ argv: ['/bin/sh', '-c', 'sleep 60'], cwd: os.tmpdir(), timeoutMs: 60_000, maxOutputChars: 10, signal: controller.signal });
  controller.abort();
  const r = await pending;
  assert.equal(r.aborted, true);
  const missing = await runBounded({ argv: ['/nonexistent/program'], cwd: os.tmpdir(), timeoutMs: 5_000, maxOutputChars: 10 });
  assert.ok(missing.spawnError);
  assert.match(missing.spawnError.message, /ENOENT/);
});

test('writeFileAtomic replaces the file whole and leaves no temporary file', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'belay-atomic-'));
  try {
    const target = path.join(dir, 'a.txt');
    writeFileSync(target, 'old');
    await writeFileAtomic(target, 'new content');
    assert.equal(readFileSync(target, 'utf8'), 'new content');
    assert.deepEqual(readdirSync(dir), ['a.txt']);
    await assert.rejects(writeFileAtomic(path.join(dir, 'missing', 'b.txt'), 'x'), /ENOENT/);
    assert.deepEqual(readdirSync(dir), ['a.txt']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a prepared process waits for its input, then runs with the same guarantees', async () => {
  const prepared = prepareBounded({ argv: ['/bin/sh', '-c', 'read line; echo "got $line"'], cwd: os.tmpdir(), maxOutputChars: 100 });
  const r = await prepared.start({ input: 'hello\n', timeoutMs: 10_000 });
  assert.equal(r.exitCode, 0);
  assert.equal(r.stdout.text(''), 'got hello\n');
  const stuck = prepareBounded({ argv: ['/bin/sh', '-c', 'read line; sleep 60'], cwd: os.tmpdir(), maxOutputChars: 100 });
  const late = await stuck.start({ input: 'x\n', timeoutMs: 200 });
  assert.equal(late.timedOut, true);
});
