// The spawn helper (see src/shared/spawn-host.ts), run as `node -e <this text> belay-spawn-host`:
// it starts each program it is sent over its IPC channel in a session of its own, hands the
// program's pipes back over the channel, reports exits as JSON lines on stdout, and kills every
// program it started when the channel closes.
'use strict';
const { spawn } = require('node:child_process');
const { writeSync } = require('node:fs');
const live = new Map();
const send = (message, handle) => { try { process.send(message, handle); return true; } catch { return false; } };
const report = (message) => { try { writeSync(1, JSON.stringify(message) + '\n'); } catch {} };
const killGroup = (pid) => { try { process.kill(-pid, 'SIGKILL'); } catch {} };
process.on('message', (m) => {
  if (!m || m.t !== 'spawn') return;
  const id = m.id;
  let child;
  try {
    child = spawn(m.file, m.args, { cwd: m.cwd, env: m.env, stdio: [m.stdin, 'pipe', 'pipe'], detached: true, windowsHide: true });
  } catch (error) {
    report({ t: 'error', id, code: error && error.code, message: String(error && error.message) });
    return;
  }
  const [stdin, stdout, stderr] = child.stdio;
  for (const stream of [stdout, stderr]) if (stream && stream._handle) { stream._handle.reading = false; stream._handle.readStop(); }
  child.stdio[0] = child.stdio[1] = child.stdio[2] = null;
  child.stdin = child.stdout = child.stderr = null;
  if (child.pid === undefined) {
    child.once('error', (error) => report({ t: 'error', id, code: error.code, message: String(error.message) }));
    return;
  }
  // A pipe that cannot be handed over (the channel is closing) ends the program, said as a failure.
  const handed = send({ t: 'stdout', id, pid: child.pid }, stdout) && send({ t: 'stderr', id, last: !stdin }, stderr) && (!stdin || send({ t: 'stdin', id, last: true }, stdin));
  if (!handed) {
    killGroup(child.pid);
    report({ t: 'error', id, message: 'its pipes could not be handed over' });
    return;
  }
  live.set(id, child.pid);
  child.on('exit', (code, signal) => {
    live.delete(id);
    report({ t: 'exit', id, code, signal });
  });
});
process.on('disconnect', () => {
  for (const pid of live.values()) killGroup(pid);
  process.exit(0);
});
