// The container backend's command watch (backends/command-watch.ts) without an engine: the
// wrapper tells a command that ended by itself from one Belay killed, and the kill script,
// run here on the host as it runs inside, stops every process of a mark, setsid, double-forked
// or with a cleared environment under a marked parent.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { CommandWatch, COMMAND_VARIABLE, killCommandArgv } from '../../../src/runner/core/backends/command-watch.ts';
import { runBounded, startChild } from '../../../src/shared/process.ts';
import { processesWith } from '../../support/runner/helpers.ts';

const skip = existsSync('/bin/bash') && process.platform === 'linux' ? false : 'needs Linux and /bin/bash';

async function watched(argv: [string, ...string[]], kill: boolean): Promise<{ ended: [string, boolean][]; exitCode: number | null; output: string }> {
  const ended: [string, boolean][] = [];
  let heard: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (heard = resolve));
  const watch = await CommandWatch.open((id, killed) => {
    ended.push([id, killed]);
    heard();
  });
  const id = CommandWatch.id();
  let output = '';
  let running: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (running = resolve));
  const child = startChild({
    argv: watch.wrap(argv, id),
    cwd: '/',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    stdin: 'ignore',
    onStdout: (chunk) => {
      output += chunk;
      if (output.includes('ready')) running();
    },
  });
  if (kill) {
    // The wrapper said `start` before it ran the program.
    await ready;
    child.kill();
  }
  const end = await child.ended;
  await done;
  watch.close();
  assert.deepEqual(ended.map(([seen]) => seen), [id]);
  return { ended, exitCode: end.exitCode, output };
}

describe('the command watch', { skip }, () => {
  it('hears a command that ended by itself, with its output and exit code untouched', async () => {
    const { ended, exitCode, output } = await watched(['/bin/sh', '-c', 'echo hello; exit 3'], false);
    assert.equal(ended[0]![1], false);
    assert.equal(exitCode, 3);
    assert.equal(output, 'hello\n');
  });

  it('hears a command whose process group was killed', async () => {
    const { ended } = await watched(['/bin/sh', '-c', 'echo ready; sleep 30'], true);
    assert.equal(ended[0]![1], true);
  });

  it('wraps nothing where the host has no bash', async () => {
    const watch = await CommandWatch.open(() => undefined, '/nonexistent/bash');
    assert.deepEqual(watch.wrap(['podman', 'exec', 'x', 'true'], CommandWatch.id()), ['podman', 'exec', 'x', 'true']);
    watch.close();
  });
});

describe('the kill script', { skip }, () => {
  it('kills every process of a mark: setsid, double-forked, and children that cleared their environment; nothing else', async () => {
    const id = CommandWatch.id();
    const other = CommandWatch.id();
    const token = `belay-kill-${process.pid}-${id.slice(0, 6)}`;
    const program = `(setsid sh -c 'sleep 60; : ${token}-setsid' &); env -i sh -c 'sleep 60; : ${token}-cleared' & sleep 60; : ${token}-main`;
    const marked = startChild({ argv: ['/bin/sh', '-c', program], cwd: '/', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', [COMMAND_VARIABLE]: id }, stdin: 'ignore' });
    const bystander = startChild({ argv: ['/bin/sh', '-c', `sleep 60; : ${token}-other`], cwd: '/', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', [COMMAND_VARIABLE]: other }, stdin: 'ignore' });
    try {
      // The four sleepers, once each: a subshell that has forked but not yet become `setsid` would
      // be a fifth for a moment.
      const sleepers = () => processesWith(token).map((line) => line.replace(/^\d+: /, '')).sort();
      const expected = [`/bin/sh -c ${program} `, `/bin/sh -c sleep 60; : ${token}-other `, `sh -c sleep 60; : ${token}-cleared `, `sh -c sleep 60; : ${token}-setsid `].sort();
      for (let i = 0; i < 200 && JSON.stringify(sleepers()) !== JSON.stringify(expected); i++) await delay(50);
      assert.deepEqual(sleepers(), expected);
      const killed = await runBounded({ argv: killCommandArgv(id), cwd: '/', env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, timeoutMs: 30_000, maxOutputChars: 2000 });
      assert.equal(killed.exitCode, 0, killed.stderr.text(''));
      for (let i = 0; i < 100 && processesWith(token).length > 1; i++) await delay(50);
      assert.deepEqual(processesWith(token).map((line) => line.replace(/^\d+: /, '')), [`/bin/sh -c sleep 60; : ${token}-other `]);
    } finally {
      marked.kill();
      bystander.kill();
      await Promise.all([marked.ended, bystander.ended]);
    }
  });
});
