import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { writeFileAtomic } from '../../../src/shared/atomic.ts';
import { BoundedText, prepareBounded, runBounded, shellCommand, startChild } from '../../../src/shared/process.ts';
import { alive } from '../../support/processes.ts';

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
      // Long enough for the shell to write the pid file on a loaded machine.
      timeoutMs: 1500,
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
  assert.equal(missing.spawnError.message, '/nonexistent/program: not found (ENOENT)', 'one line naming the program');
  const noFolder = await runBounded({ argv: ['/bin/sh', '-c', 'true'], cwd: '/nonexistent/folder', timeoutMs: 5_000, maxOutputChars: 10 });
  assert.equal(noFolder.spawnError?.message, '/bin/sh: its working folder /nonexistent/folder does not exist (ENOENT)');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'belay-proc-'));
  try {
    const plain = path.join(dir, 'plain.txt');
    writeFileSync(plain, 'echo hi\n', { mode: 0o644 });
    const notExecutable = await runBounded({ argv: [plain], cwd: dir, timeoutMs: 5_000, maxOutputChars: 10 });
    assert.equal(notExecutable.spawnError?.message, `${plain}: not executable (EACCES)`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
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

test('a process that left the group (setsid) and holds the pipes does not keep the call waiting', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'belay-proc-'));
  const pids: number[] = [];
  try {
    const escapee = (name: string) => `setsid sleep 60 & echo $! > ${path.join(dir, name)}`;
    const [exited, timedOut] = await Promise.all([
      runBounded({ argv: ['/bin/sh', '-c', `${escapee('a.pid')}; echo done`], cwd: dir, timeoutMs: 30_000, maxOutputChars: 100 }),
      runBounded({ argv: ['/bin/sh', '-c', `${escapee('b.pid')}; sleep 60`], cwd: dir, timeoutMs: 1500, maxOutputChars: 100 }),
    ]);
    pids.push(Number(readFileSync(path.join(dir, 'a.pid'), 'utf8')), Number(readFileSync(path.join(dir, 'b.pid'), 'utf8')));
    assert.equal(exited.timedOut, false);
    assert.equal(exited.exitCode, 0);
    assert.equal(exited.stdout.text(''), 'done\n');
    assert.equal(timedOut.timedOut, true);
  } finally {
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the child gets exactly the environment it is given, not Belay\'s merged in', async () => {
  const r = await runBounded({ argv: ['/usr/bin/env'], cwd: os.tmpdir(), env: { ONLY: 'this' }, timeoutMs: 10_000, maxOutputChars: 1000 });
  assert.equal(r.stdout.text(''), 'ONLY=this\n');
});

test('children die with Belay: a process that exits, is terminated or is killed outright takes its children\'s groups along', async () => {
  const processTs = path.resolve(import.meta.dirname, '../../../src/shared/process.ts');
  // SIGKILL leaves Belay no moment to clean up: the spawn helper sees its channel close instead.
  for (const [how, end] of [['exit', 'process.exit(0)'], ['SIGTERM', "process.kill(process.pid, 'SIGTERM')"], ['SIGKILL', "process.kill(process.pid, 'SIGKILL')"]] as const) {
    // The parent starts a shell whose child sleeps in the background, prints both pids, then ends.
    const script = `import { runBounded, startChild } from ${JSON.stringify(processTs)};
startChild({ argv: ['/bin/sh', '-c', 'echo $$; exec sleep 60'], cwd: '/', stdin: 'ignore', onStdout: (agentPid) => {
  void runBounded({ argv: ['/bin/sh', '-c', 'sleep 60 & echo $$ $!; wait'], cwd: '/', timeoutMs: 60_000, maxOutputChars: 100,
    onStdout: (pids) => { process.stdout.write(agentPid.trim() + ' ' + pids); ${end}; } });
} });`;
    const parent = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
    const pids = parent.stdout.trim().split(/\s+/).map(Number);
    assert.equal(pids.length, 3, `${how}: ${parent.stdout}${parent.stderr}`);
    for (const pid of pids) assert.equal(await gone(pid), true, `${how}: process ${pid} survived its parent`);
  }
});

test('startChild: a group leader fed through stdin, killable before it has even spawned', async () => {
  let said = '';
  let spoke: () => void;
  const spoken = new Promise<void>((resolve) => (spoke = resolve));
  const child = startChild({
    argv: ['/bin/sh', '-c', 'read line; echo "$$ $line"; exec sleep 60'],
    cwd: os.tmpdir(),
    onStdout: (chunk) => {
      said += chunk;
      if (said.endsWith('\n')) spoke();
    },
  });
  child.write('hello\n');
  child.endInput();
  child.write('too late, and harmless\n');
  await spoken;
  const [leader, line] = said.trim().split(' ');
  assert.equal(line, 'hello');
  assert.equal(Number(leader), child.pid);
  const stat = readFileSync(`/proc/${child.pid}/stat`, 'utf8');
  assert.equal(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]), child.pid, 'its own process group');
  child.kill();
  assert.deepEqual(await child.ended, { exitCode: null, signal: 'SIGKILL' });

  const early = startChild({ argv: ['/bin/sh', '-c', 'sleep 60'], cwd: os.tmpdir(), stdin: 'ignore' });
  early.kill();
  assert.deepEqual(await early.ended, { exitCode: null, signal: 'SIGKILL' });
});

test('a shell command runs with /bin/sh -c, and with cmd.exe /c on Windows as the CodingAgent protocol says', () => {
  assert.deepEqual(shellCommand('echo "hi" && ls', 'linux'), { argv: ['/bin/sh', '-c', 'echo "hi" && ls'], windowsVerbatimArguments: false });
  assert.deepEqual(shellCommand('ls', 'darwin').argv, ['/bin/sh', '-c', 'ls']);
  assert.deepEqual(shellCommand('dir "C:\\Program Files" & echo %PATH%', 'win32', { ComSpec: 'C:\\Windows\\system32\\cmd.exe' }), {
    argv: ['C:\\Windows\\system32\\cmd.exe', '/d', '/s', '/c', '"dir "C:\\Program Files" & echo %PATH%"'],
    windowsVerbatimArguments: true,
  });
  assert.equal(shellCommand('ver', 'win32', {}).argv[0], 'cmd.exe');
});
