// A container session on another machine's engine (engine-remote.ts): what a local session
// mounts crosses by copy instead, through the engine's own `cp` over its SSH connection. The
// agent's folders go in before the container starts (at the same paths, hidden paths left out),
// the tests go in between the phases, and the verifier's logs come back at the end, only when
// what the container wrote fits the run's disk budget (the logs are part of what it wrote).
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runBounded } from '../../../shared/process.ts';
import { failureText, type Engine } from './engine.ts';
import { formatBytes } from '../records/logs.ts';

/** Folders (absolute, real) into the stopped container at the same paths; `hidden` paths in them are left out. */
export async function copyFoldersIn(engine: Engine, container: string, folders: readonly string[], hidden: readonly string[], signal?: AbortSignal): Promise<void> {
  const shown = [...new Set(folders.map((folder) => path.resolve(folder)))].filter((folder) => folder !== '/');
  if (shown.length === 0) return;
  for (const folder of shown) await fs.access(folder);
  if (shown.some((folder) => folder.includes('\n')) || hidden.some((h) => h.includes('\n'))) throw new Error("cannot copy the agent's folders: a path holds a line break");
  // tar here (this machine's), the engine's `cp -` there: one stream, no folder of this machine mounted.
  const lists = await fs.mkdtemp(path.join(os.tmpdir(), 'belay-copy-'));
  try {
    await fs.writeFile(path.join(lists, 'folders'), shown.map((folder) => `${folder.slice(1)}\n`).join(''));
    await fs.writeFile(path.join(lists, 'hidden'), hidden.map((h) => `${path.resolve(h).slice(1)}\n`).join(''));
    const piped = await runBounded({
      argv: ['/bin/sh', '-c', 'tar -C / --anchored --no-wildcards -X "$1/hidden" -T "$1/folders" -cf "$0" || exit 1; shift; exec "$@" < "$0"', path.join(lists, 'stream'), lists, ...engine.argv(['cp', '-', `${container}:/`])],
      cwd: '/',
      env: engine.env,
      timeoutMs: 600_000,
      maxOutputChars: 8000,
      ...(signal ? { signal } : {}),
    });
    if (piped.exitCode !== 0) throw new Error(`copying the agent's folders to ${engine.remote?.host ?? 'the engine'}: ${failureText(piped, 600_000)}`);
  } finally {
    await fs.rm(lists, { recursive: true, force: true });
  }
}

/** A folder's contents into the container at `inside` (made when missing). */
export async function copyFolderIn(engine: Engine, container: string, local: string, inside: string, signal?: AbortSignal): Promise<void> {
  await engine.check(['cp', `${path.resolve(local)}/.`, `${container}:${inside}`], { timeoutMs: 300_000, ...(signal ? { signal } : {}) });
}

/**
 * The container's `inside` folder back into `local` (replacing what is there), when what the
 * container wrote in all is within `budgetBytes`; otherwise a notice says why it stays there.
 */
export async function copyFolderBack(engine: Engine, container: string, inside: string, local: string, budgetBytes: number | undefined, onNotice?: (text: string) => void): Promise<boolean> {
  if (budgetBytes !== undefined) {
    const measured = await engine.run(['container', 'inspect', '--size', '--format', '{{.SizeRw}}', container], { timeoutMs: 60_000 });
    const written = Number(measured.stdout.text('').trim());
    if (!Number.isFinite(written) || written > budgetBytes) {
      onNotice?.(`the container on ${engine.remote?.host ?? 'the engine'} wrote ${Number.isFinite(written) ? formatBytes(written) : 'an unknown amount'}: its ${inside} is not copied back (the run's disk budget is ${formatBytes(budgetBytes)})`);
      return false;
    }
  }
  const target = path.resolve(local);
  const copy = `${target}.copy-${process.pid}-${Date.now()}`;
  await fs.mkdir(copy, { mode: 0o700 });
  try {
    const copied = await engine.run(['cp', `${container}:${inside}/.`, copy], { timeoutMs: 300_000 });
    if (copied.exitCode !== 0) {
      // Nothing there (the phase never made it) is no failure: there is nothing to bring back.
      if (/no such file|could not find|not found/i.test(failureText(copied, 300_000))) return false;
      throw new Error(`${engine.name} cp ${container}:${inside} from ${engine.remote?.host ?? 'the engine'}: ${failureText(copied, 300_000)}`);
    }
    await fs.rm(target, { recursive: true, force: true });
    await fs.rename(copy, target);
    return true;
  } finally {
    await fs.rm(copy, { recursive: true, force: true });
  }
}

/**
 * Watches that the engine on the other machine still answers for the container: every
 * `everyMs`, an `inspect` bounded by `answerMs`; two failures in a row (no answer, the SSH
 * connection refused or cut) call `onLost` once with why. Stopped by the returned function.
 */
export function watchHost(engine: Engine, container: string, onLost: (why: string) => void, everyMs = 3000, answerMs = 15_000): () => void {
  let stopped = false;
  let misses = 0;
  let timer: NodeJS.Timeout | undefined;
  const check = async () => {
    const asked = await engine.run(['container', 'inspect', '--format', '{{.State.Status}}', container], { timeoutMs: answerMs, maxOutputChars: 4000 });
    if (stopped) return;
    // An answer of the engine, whatever it says, is a host that answers.
    const answered = asked.exitCode === 0 || (!asked.spawnError && !hostUnreachable(failureText(asked, answerMs), asked.timedOut));
    misses = answered ? 0 : misses + 1;
    if (misses >= 2) {
      stopped = true;
      const said = failureText(asked, answerMs).split('\n').filter((line) => line.trim() !== '').slice(-1)[0] ?? '';
      onLost(`the engine on ${engine.remote?.host ?? 'the host'} stopped answering (${said.slice(0, 300)})`);
      return;
    }
    timer = setTimeout(() => void check(), everyMs);
    timer.unref();
  };
  timer = setTimeout(() => void check(), everyMs);
  timer.unref();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/**
 * Whether an engine client's failure says the other machine cannot be reached (no answer in
 * time, the SSH connection refused, cut or failing its handshake), rather than the engine
 * answering with an error.
 */
export function hostUnreachable(said: string, timedOut: boolean): boolean {
  return timedOut || /failed to connect|ssh: handshake failed|connection (refused|reset|timed out)|no route to host|network is unreachable|i\/o timeout|unable to connect to podman|cannot connect to podman|broken pipe|unexpected EOF|error during connect/i.test(said);
}

/** The executor program into the stopped container at `inside` (its folder made), executable. */
export async function copyExecutorIn(engine: Engine, container: string, program: string, inside: string, signal?: AbortSignal): Promise<void> {
  const staged = await fs.mkdtemp(path.join(os.tmpdir(), 'belay-exec-'));
  try {
    await fs.copyFile(program, path.join(staged, path.posix.basename(inside)));
    await fs.chmod(path.join(staged, path.posix.basename(inside)), 0o755);
    await fs.chmod(staged, 0o755);
    await engine.check(['cp', `${staged}/.`, `${container}:${path.posix.dirname(inside)}`], { timeoutMs: 300_000, ...(signal ? { signal } : {}) });
  } finally {
    await fs.rm(staged, { recursive: true, force: true });
  }
}
