// The agent's final state, kept with the run: after the agent phase (everything it started is
// dead) the task's working folder is copied into <runDir>/final/workdir/, and the task's
// `artifacts` into <runDir>/artifacts/ (those outside the working folder from where the backend
// says the host reads them, before the environment is closed). What the agent left there is hostile: nothing is followed
// (a link is copied as the link it is, never read through), only regular files are read (a FIFO,
// a socket or a device is skipped and listed), and the copy is bounded in bytes and in entries
// (a 10 GiB sparse file or a folder of 100,000 files is cut and said so, never read whole).
import { constants as fsConstants, promises as fs } from 'node:fs';
import * as path from 'node:path';
import { errorMessage } from '../../../shared/errors.ts';
import type { CapturedFiles } from '../records/records.ts';
import type { ArtifactPlace } from '../backends/backend.ts';
import type { ArtifactSpec, Task } from '../tasks/task.ts';

/** Where the final state and the artifacts go in a run folder. */
export const FINAL_WORKDIR = 'final/workdir';
export const ARTIFACTS_DIR = 'artifacts';

export interface CopyBounds {
  /** The most bytes of file content copied in all. */
  maxBytes: number;
  /** The most entries (files, links, folders) copied in all. */
  maxEntries: number;
}

/** What a bounded copy took and what it left out (each with why, at most `MAX_LISTED`). */
export interface CopyReport {
  files: number;
  bytes: number;
  skipped: string[];
}

export const FINAL_STATE_BOUNDS: CopyBounds = { maxBytes: 256 * 1024 * 1024, maxEntries: 20_000 };
const MAX_LISTED = 100;

/** The bounds for a run: the default ones, within a quarter of the run's disk budget. */
export function finalStateBounds(diskBudgetBytes: number): CopyBounds {
  return { maxBytes: Math.max(0, Math.min(FINAL_STATE_BOUNDS.maxBytes, Math.floor(diskBudgetBytes / 4))), maxEntries: FINAL_STATE_BOUNDS.maxEntries };
}

class Copier {
  readonly report: CopyReport = { files: 0, bytes: 0, skipped: [] };
  #entries = 0;
  #unlisted = 0;
  #full = false;
  readonly #bounds: CopyBounds;
  constructor(bounds: CopyBounds) {
    this.#bounds = bounds;
  }

  skip(name: string, why: string): void {
    if (this.report.skipped.length < MAX_LISTED) this.report.skipped.push(`${name}: ${why}`);
    else this.#unlisted++;
  }

  finish(): CopyReport {
    if (this.#unlisted > 0) this.report.skipped.push(`… and ${this.#unlisted} more left out`);
    return this.report;
  }

  /** Copies `source` (a file, link or folder; never followed) to `target`, which must not exist. */
  async copy(source: string, target: string, name: string): Promise<void> {
    // Folders are walked with a stack, not recursion: a deep tree cannot exhaust the call stack.
    const stack: { source: string; target: string; name: string }[] = [{ source, target, name }];
    while (stack.length > 0) {
      const item = stack.pop()!;
      if (this.#full) {
        this.#unlisted++;
        continue;
      }
      if (this.#entries >= this.#bounds.maxEntries) {
        this.#full = true;
        this.skip(item.name, `not copied, nor anything after it: more than ${this.#bounds.maxEntries} entries`);
        continue;
      }
      let stat;
      try {
        stat = await fs.lstat(item.source);
      } catch (error) {
        this.skip(item.name, `cannot be read (${errorMessage(error)})`);
        continue;
      }
      this.#entries++;
      if (stat.isSymbolicLink()) {
        // Kept as the link it is: its target is text, never opened.
        await fs.symlink(await fs.readlink(item.source), item.target);
        this.report.files++;
      } else if (stat.isDirectory()) {
        await fs.mkdir(item.target, { mode: 0o755 });
        let names: string[];
        try {
          names = (await fs.readdir(item.source)).sort().reverse();
        } catch (error) {
          this.skip(item.name, `the folder cannot be read (${errorMessage(error)})`);
          continue;
        }
        for (const entry of names) stack.push({ source: path.join(item.source, entry), target: path.join(item.target, entry), name: path.posix.join(item.name, entry) });
      } else if (stat.isFile()) {
        if (this.report.bytes + stat.size > this.#bounds.maxBytes) {
          this.skip(item.name, `${stat.size} bytes, past the ${this.#bounds.maxBytes} bytes the run keeps`);
          continue;
        }
        const copied = await this.#copyFile(item.source, item.target, this.#bounds.maxBytes - this.report.bytes);
        if (typeof copied === 'string') this.skip(item.name, copied);
        else {
          this.report.files++;
          this.report.bytes += copied;
        }
      } else {
        this.skip(item.name, `${stat.isFIFO() ? 'a FIFO' : stat.isSocket() ? 'a socket' : 'a device'}, not a file: not copied`);
      }
    }
  }

  /** One regular file, opened without following a link and without waiting; its bytes, or why not. */
  async #copyFile(source: string, target: string, room: number): Promise<number | string> {
    let input;
    try {
      input = await fs.open(source, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
    } catch (error) {
      return `cannot be read (${errorMessage(error)})`;
    }
    try {
      const opened = await input.stat();
      if (!opened.isFile()) return 'not a regular file when opened: not copied';
      if (opened.size > room) return `${opened.size} bytes, past the bytes the run keeps`;
      // No set-user or set-group bits, nothing writable by others: a record, not a program to trust.
      const output = await fs.open(target, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL, opened.mode & 0o111 ? 0o755 : 0o644);
      let total = 0;
      try {
        const buffer = Buffer.alloc(Math.min(1024 * 1024, Math.max(1, opened.size)));
        // At most the size seen: a file that keeps growing is cut there.
        while (total < opened.size) {
          const { bytesRead } = await input.read(buffer, 0, Math.min(buffer.length, opened.size - total), total);
          if (bytesRead === 0) break;
          await output.write(buffer, 0, bytesRead);
          total += bytesRead;
        }
      } finally {
        await output.close();
      }
      return total;
    } finally {
      await input.close();
    }
  }
}

/**
 * Copies the folder `source` into `target` (made fresh: whatever was there is removed first),
 * bounded. The source itself must be a folder, not a link to one. On an error the partial copy
 * is removed and the error thrown: a half copy is never mistaken for the state.
 */
export async function copyTreeBounded(source: string, target: string, bounds: CopyBounds): Promise<CopyReport> {
  const stat = await fs.lstat(source);
  if (stat.isSymbolicLink()) throw new Error(`${source} is a symlink, not the working folder: nothing copied`);
  if (!stat.isDirectory()) throw new Error(`${source} is not a folder: nothing copied`);
  await fs.rm(target, { recursive: true, force: true });
  await fs.mkdir(path.dirname(target), { recursive: true });
  const copier = new Copier(bounds);
  try {
    await copier.copy(source, target, '.');
  } catch (error) {
    await fs.rm(target, { recursive: true, force: true });
    throw error;
  }
  return copier.finish();
}

/** Where the environment's programs could reach through an artifact's path that is no file of its own. */
const NOT_ITS_FILES = ['/proc', '/sys', '/dev'];

/**
 * Collects the artifacts: a source in the working folder (`workspace` on the host, `workdir`
 * inside; absolute under it, or relative to it) is read from the workspace; one elsewhere (an
 * absolute path such as /tmp/out/) where `outside` says the host reads it (the backend's
 * `artifactOutside`), never through /proc, /sys, /dev or `..`. Each goes to `<target>/<destination
 * or its path>` (an outside one's path without its leading /); every component of its path is
 * checked to be a folder (never a link) on the way, so no link the agent made leads out. One
 * bounded budget for all.
 */
export async function collectArtifacts(
  artifacts: readonly ArtifactSpec[],
  workspace: string,
  workdir: string,
  target: string,
  bounds: CopyBounds,
  outside?: (inside: string, staging: string) => Promise<ArtifactPlace>,
): Promise<CopyReport> {
  await fs.rm(target, { recursive: true, force: true });
  await fs.mkdir(target, { recursive: true });
  const copier = new Copier(bounds);
  /** Copies `root/parts…` (no link on the way) to the destination, or says why not. */
  const take = async (source: string, root: string, parts: readonly string[], destination: string): Promise<void> => {
    const blocked = await linkOnTheWay(root, parts.slice(0, -1));
    if (blocked !== undefined) {
      copier.skip(source, `${blocked} is not a folder (a link or a file): not followed`);
      return;
    }
    const from = path.join(root, ...parts);
    try {
      await fs.lstat(from);
    } catch {
      copier.skip(source, 'not there after the agent phase');
      return;
    }
    const to = path.join(target, ...destination.split('/'));
    await fs.mkdir(path.dirname(to), { recursive: true });
    await fs.rm(to, { recursive: true, force: true });
    await copier.copy(from, to, source);
  };
  try {
    for (const artifact of artifacts) {
      if (artifact.source.split('/').includes('..')) {
        copier.skip(artifact.source, "names its path through '..': refused, an artifact is named by its own path");
        continue;
      }
      const absolute = path.posix.isAbsolute(artifact.source);
      const normal = path.posix.normalize(artifact.source).replace(/(.)\/+$/, '$1');
      // The task's own name for the working folder (/app) means it on every backend, the local one too.
      const root = absolute && !isWithin(normal, workdir) && isWithin(normal, TASK_WORKDIR) ? TASK_WORKDIR : workdir;
      if (absolute && !isWithin(normal, root)) {
        const pseudo = NOT_ITS_FILES.find((dir) => isWithin(normal, dir));
        if (pseudo !== undefined) copier.skip(artifact.source, `under ${pseudo}, which is no file of the environment's own: refused`);
        else if (normal === '/') copier.skip(artifact.source, 'the whole filesystem: refused');
        else if (!outside) copier.skip(artifact.source, `outside the working folder ${workdir}: this backend collects artifacts from the working folder only`);
        else await collectOutside(artifact.source, normal, artifact.destination ?? normal.slice(1), path.dirname(target), outside, take, copier);
        continue;
      }
      const inside = absolute ? path.posix.relative(root, normal) : normal;
      if (inside.startsWith('..') || path.posix.isAbsolute(inside)) {
        copier.skip(artifact.source, `outside the working folder ${workdir}: not collected`);
        continue;
      }
      const parts = inside === '' || inside === '.' ? [] : inside.split('/');
      const destination = (artifact.destination ?? (inside === '' || inside === '.' ? path.posix.basename(workdir) : inside)).replace(/\/+$/, '');
      await take(artifact.source, workspace, parts, destination);
    }
  } catch (error) {
    await fs.rm(target, { recursive: true, force: true });
    throw error;
  }
  return copier.finish();
}

/** An artifact outside the working folder: where the backend says the host reads it, through a private staging folder removed after. */
async function collectOutside(
  source: string,
  inside: string,
  destination: string,
  runDir: string,
  outside: (inside: string, staging: string) => Promise<ArtifactPlace>,
  take: (source: string, root: string, parts: readonly string[], destination: string) => Promise<void>,
  copier: Copier,
): Promise<void> {
  const staging = await fs.mkdtemp(path.join(runDir, '.artifact-staging-'));
  try {
    const place = await outside(inside, staging);
    if ('refused' in place) copier.skip(source, place.refused);
    else await take(source, place.root, place.parts, destination.replace(/\/+$/, ''));
  } finally {
    await fs.rm(staging, { recursive: true, force: true });
  }
}

/** The working folder as tasks name it (Harbor's and Terminal-Bench's images). */
const TASK_WORKDIR = '/app';

function isWithin(file: string, folder: string): boolean {
  const relative = path.posix.relative(folder, path.posix.normalize(file));
  return relative === '' || (!relative.startsWith('..') && !path.posix.isAbsolute(relative));
}

/** The first of the folders on the way to a path that is not a real folder (relative), if any. */
async function linkOnTheWay(root: string, parts: readonly string[]): Promise<string | undefined> {
  let at = root;
  for (let i = 0; i < parts.length; i++) {
    at = path.join(at, parts[i]!);
    const stat = await fs.lstat(at).catch(() => undefined);
    if (stat === undefined) return undefined;
    if (!stat.isDirectory()) return parts.slice(0, i + 1).join('/');
  }
  return undefined;
}

/** What a run keeps of the environment after the agent phase, for result.json. */
export interface CapturedState {
  final?: CapturedFiles;
  artifacts?: CapturedFiles;
}

/**
 * Copies the working folder (`workspace` on the host, `workdir` inside) into final/workdir and
 * the task's artifacts into artifacts/, each bounded; what cannot be captured is a note, never
 * the run's failure.
 */
export async function captureState(
  runDir: string,
  task: Task,
  workspace: string,
  workdir: string,
  bounds: CopyBounds,
  note: (message: string) => void,
  outside?: (inside: string, staging: string) => Promise<ArtifactPlace>,
): Promise<CapturedState> {
  const captured: CapturedState = {};
  try {
    const report = await copyTreeBounded(workspace, path.join(runDir, ...FINAL_WORKDIR.split('/')), bounds);
    captured.final = { dir: FINAL_WORKDIR, ...report };
    if (report.skipped.length > 0) note(`the final state left out ${report.skipped.length === 1 ? report.skipped[0] : `${report.skipped.length} entries (result.json's final.skipped)`}`);
  } catch (error) {
    note(`the final state could not be kept: ${errorMessage(error)}`);
  }
  if (task.artifacts?.length) {
    try {
      const report = await collectArtifacts(task.artifacts, workspace, workdir, path.join(runDir, ARTIFACTS_DIR), bounds, outside);
      captured.artifacts = { dir: ARTIFACTS_DIR, ...report };
      for (const skipped of report.skipped.slice(0, 5)) note(`artifact ${skipped}`);
    } catch (error) {
      note(`the artifacts could not be collected: ${errorMessage(error)}`);
    }
  }
  return captured;
}
