// File operations inside a folder that other processes may be changing at the same moment (a
// command an LLM started and left running, a watcher, a hostile script): a folder swapped for a
// symbolic link, a file swapped for a FIFO. Every path is walked from the root one folder at a
// time without following links, and the last component is never followed either, so no swap
// can send a read, a write or a delete outside. Only regular files are read, replaced or deleted
// (a FIFO is never opened: opening one waits for a writer, for ever). Nothing is cached across
// a point where another process could act except open folder handles, and a handle is used only
// after checking, right before the write, that its folder is still at the path expected.
//
// On Linux the walk is through `/proc/self/fd/N/name` (what openat(2) does: the lookup starts
// from the folder the handle holds, whatever has become of its path). Elsewhere (no /proc) each
// step is an lstat of the path, checked again right before the rename: the same refusals, with
// a window of microseconds between the check and the act.
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fchmodSync, fstatSync, fsyncSync, lstatSync, openSync, promises as fs, readlinkSync, realpathSync, renameSync, unlinkSync, writeSync, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import * as path from 'node:path';

/** What a directory entry is, as the refusals name it. */
export type EntryKind = 'file' | 'directory' | 'symlink' | 'fifo' | 'socket' | 'device' | 'missing';

export function entryKind(stats: Stats | undefined): EntryKind {
  if (stats === undefined) return 'missing';
  if (stats.isFile()) return 'file';
  if (stats.isDirectory()) return 'directory';
  if (stats.isSymbolicLink()) return 'symlink';
  if (stats.isFIFO()) return 'fifo';
  if (stats.isSocket()) return 'socket';
  return 'device';
}

/** The kind in words: "a FIFO (named pipe)", "a folder"… */
export function describeKind(kind: EntryKind): string {
  switch (kind) {
    case 'file':
      return 'a regular file';
    case 'directory':
      return 'a folder';
    case 'symlink':
      return 'a symbolic link';
    case 'fifo':
      return 'a FIFO (named pipe)';
    case 'socket':
      return 'a socket';
    case 'device':
      return 'a device';
    case 'missing':
      return 'missing';
  }
}

/**
 * Why an operation was refused. `code` is one of: 'ENOENT' (missing), 'EISDIR', 'ENOTDIR' (a path
 * goes through a file), 'ENOTREG' (a FIFO, socket or device: `kind` says which), 'ECHANGED' (a
 * folder or the target was replaced, e.g. by a symbolic link, while Belay worked: nothing was
 * written), 'EFBIG' (larger than the limit asked for: `size` says how large).
 */
export class ConfinedError extends Error {
  readonly code: 'ENOENT' | 'EISDIR' | 'ENOTDIR' | 'ENOTREG' | 'ECHANGED' | 'EFBIG';
  readonly kind: EntryKind | undefined;
  readonly size: number | undefined;

  constructor(code: ConfinedError['code'], message: string, details: { kind?: EntryKind; size?: number } = {}) {
    super(message);
    this.code = code;
    this.kind = details.kind;
    this.size = details.size;
  }
}

const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const O_NONBLOCK = constants.O_NONBLOCK ?? 0;
const O_DIRECTORY = constants.O_DIRECTORY ?? 0;

/**
 * Files up to this size are written without leaving the thread: the same steps in the same order,
 * each a system call of microseconds on a local disk, where a round trip through the thread pool
 * per step cost more than the step (an answer creates hundreds of small files). Larger ones are
 * written through the pool, so the event loop never waits long.
 */
const SYNC_WRITE_BYTES = 256 * 1024;

/** Open folder handles kept per root; past this many, all are closed before the next walk. */
const MAX_OPEN_FOLDERS = 32;

export interface ConfinedWriteOptions {
  /** File mode of the result, exactly (not filtered by the umask). Default: 0o666 less the umask. */
  mode?: number;
  /** Flush the data to disk before the rename (default true). */
  durable?: boolean;
  /** Create missing folders on the way (each one inside, none through a link). Default false. */
  createFolders?: boolean;
}

export interface RegularFile {
  /** The first `maxBytes` bytes, or all of them. */
  data: Buffer;
  /** The whole file's size in bytes. */
  size: number;
  /** Permission bits. */
  mode: number;
}

/** A short temporary name (a name the file system allows must not fail because of a long suffix). */
function temporaryName(): string {
  return `.belay-${randomBytes(6).toString('hex')}.tmp`;
}

function errno(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

interface CreatedFolder {
  parent: Folder;
  name: string;
  folder: Folder;
}

interface Folder {
  /** Absolute path where this folder is expected. */
  path: string;
  /** On Linux: the open handle the walk goes through. */
  handle: FileHandle | undefined;
}

/**
 * A root folder and the operations confined to it. `real` arguments are absolute real paths
 * inside the root (as the sandbox resolves them); anything else is refused.
 */
export class ConfinedRoot {
  readonly root: string;
  private readonly rootHandle: FileHandle | undefined;
  private readonly folders = new Map<string, Folder>();
  /** Handles no longer trusted, closed when the operation that dropped them is over. */
  private retired: Folder[] = [];
  private closed = false;

  private constructor(root: string, rootHandle: FileHandle | undefined) {
    this.root = root;
    this.rootHandle = rootHandle;
  }

  /** Opens `root` (an absolute real path: no symbolic link in it). */
  static async open(root: string): Promise<ConfinedRoot> {
    if (process.platform === 'linux') {
      const handle = await fs.open(root, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      const at = await fs.readlink(procPath(handle)).catch(() => undefined);
      if (at === root) return new ConfinedRoot(root, handle);
      // No /proc, or it names the folder otherwise (a bind mount): the path-checked way, if this
      // is the folder asked for at all.
      const [held, named] = await Promise.all([handle.stat(), fs.stat(root)]).finally(() => handle.close());
      if (held.ino !== named.ino || held.dev !== named.dev) throw changed(root, 'was moved or replaced');
    }
    const stats = await fs.lstat(root);
    if (!stats.isDirectory()) throw new ConfinedError('ENOTDIR', `'${root}' is not a folder`, { kind: entryKind(stats) });
    return new ConfinedRoot(root, undefined);
  }

  /** Runs `work` with a root opened for it, closed afterwards. */
  static async with<T>(root: string, work: (confined: ConfinedRoot) => Promise<T>): Promise<T> {
    const confined = await ConfinedRoot.open(root);
    try {
      return await work(confined);
    } finally {
      await confined.close();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const handles = [...this.folders.values(), ...this.retired].map((f) => f.handle);
    this.folders.clear();
    this.retired = [];
    await Promise.all([...handles, this.rootHandle].map((h) => h?.close().catch(() => undefined)));
  }

  /** The entry itself (a link is not followed), or undefined when it does not exist. */
  async lstat(real: string): Promise<Stats | undefined> {
    let found;
    try {
      found = await this.parent(real, false);
    } catch (error) {
      // No folder, no entry.
      if (error instanceof ConfinedError && error.code === 'ENOENT') return undefined;
      throw error;
    }
    return lstatOrUndefined(this.entryPath(found.folder, found.name));
  }

  /**
   * Reads a regular file: at most `maxBytes` of it when given (`size` says how large it is); with
   * `limit`, a larger file is refused (EFBIG) before anything is read.
   */
  async readRegular(real: string, options: { maxBytes?: number; limit?: number } = {}): Promise<RegularFile> {
    const { folder, name } = await this.parent(real, false);
    const entry = this.entryPath(folder, name);
    const before = await lstatOrUndefined(entry);
    const kind = entryKind(before);
    if (kind === 'missing') throw new ConfinedError('ENOENT', `'${real}' does not exist`, { kind });
    if (kind === 'directory') throw new ConfinedError('EISDIR', `'${real}' is a folder`, { kind });
    if (kind === 'symlink') throw changed(real, 'is now a symbolic link');
    if (kind !== 'file') throw new ConfinedError('ENOTREG', `'${real}' is ${describeKind(kind)}, not a regular file`, { kind });
    if (options.limit !== undefined && before!.size > options.limit) {
      throw new ConfinedError('EFBIG', `'${real}' has ${before!.size} bytes, more than ${options.limit}`, { size: before!.size });
    }
    let handle: FileHandle;
    try {
      // O_NONBLOCK: should the entry become a FIFO after the lstat, opening it does not wait.
      handle = await fs.open(entry, constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    } catch (error) {
      if (errno(error) === 'ELOOP') throw changed(real, 'is now a symbolic link');
      throw error;
    }
    try {
      const stats = await handle.stat();
      if (!stats.isFile() || stats.ino !== before!.ino || stats.dev !== before!.dev) throw changed(real, `was replaced by ${describeKind(entryKind(stats))}`);
      // The file opened is the one in the folder at the path expected (a folder handle kept from an
      // earlier step could have been moved elsewhere since).
      this.verify(folder);
      if (options.limit !== undefined && stats.size > options.limit) {
        throw new ConfinedError('EFBIG', `'${real}' has ${stats.size} bytes, more than ${options.limit}`, { size: stats.size });
      }
      const want = Math.min(stats.size, options.maxBytes ?? stats.size);
      const data = Buffer.allocUnsafe(want);
      let filled = 0;
      while (filled < want) {
        const { bytesRead } = await handle.read(data, filled, Math.min(want - filled, 1 << 24), filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      return { data: filled === want ? data : data.subarray(0, filled), size: stats.size, mode: stats.mode & 0o7777 };
    } finally {
      await handle.close();
    }
  }

  /**
   * Replaces (or creates) a regular file atomically: a temporary file beside it, then a rename,
   * right after checking that its folder is still where it was and the target is a regular file
   * or nothing. Folders created on the way are removed again when the write fails.
   */
  async writeAtomic(real: string, data: string | Uint8Array, options: ConfinedWriteOptions = {}): Promise<void> {
    const created: CreatedFolder[] = [];
    const { folder, name } = await this.parent(real, options.createFolders ?? false, created);
    try {
      if (data.length <= SYNC_WRITE_BYTES && process.platform !== 'win32') {
        this.replaceSync(real, folder, name, typeof data === 'string' ? Buffer.from(data) : data, options);
        return;
      }
      const tmp = temporaryName();
      const tmpPath = this.entryPath(folder, tmp);
      let handle: FileHandle;
      try {
        handle = await fs.open(tmpPath, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW, options.mode ?? 0o666);
      } catch (error) {
        throw this.temporaryFailure(error, folder, real);
      }
      let renamed = false;
      let open = true;
      try {
        await handle.writeFile(data);
        if (options.mode !== undefined) await handle.chmod(options.mode);
        if (options.durable ?? true) await handle.sync();
        // The handle stays open until after the rename: should the file land elsewhere, it says
        // which file is ours. (Windows renames no open file.)
        if (process.platform === 'win32') {
          open = false;
          await handle.close();
        }
        assertReplaceable(real, await lstatOrUndefined(this.entryPath(folder, name)));
        this.verify(folder);
        try {
          await fs.rename(tmpPath, this.entryPath(folder, name));
        } catch (error) {
          if (errno(error) === 'ENOENT') throw changed(path.dirname(real), 'was removed');
          throw error;
        }
        renamed = true;
        if (!this.stillAt(folder)) {
          // The folder moved between the check and the rename: take the file back out of it.
          const written = open ? await handle.stat() : undefined;
          const landed = await lstatOrUndefined(this.entryPath(folder, name));
          if (written && landed && landed.ino === written.ino && landed.dev === written.dev) await fs.unlink(this.entryPath(folder, name)).catch(() => undefined);
          this.forget(folder);
          throw changed(path.dirname(real), 'moved while the file was written; the file was taken out again');
        }
      } finally {
        if (open) await handle.close().catch(() => undefined);
        if (!renamed) await fs.unlink(tmpPath).catch(() => undefined);
      }
    } catch (error) {
      // Innermost first; each through its own parent's handle, never by a path a link could bend.
      for (const made of created.reverse()) {
        this.forget(made.folder);
        if (this.stillAt(made.parent)) await fs.rmdir(this.entryPath(made.parent, made.name)).catch(() => undefined);
      }
      throw error;
    }
  }

  /** Why the temporary file could not be made: ENOENT means the folder held was removed (replaced by another) since the walk. */
  private temporaryFailure(error: unknown, folder: Folder, real: string): unknown {
    if (errno(error) !== 'ENOENT') return error;
    this.forget(folder);
    return changed(path.dirname(real), 'was removed');
  }

  /**
   * writeAtomic's steps for a small file, each a synchronous system call (see SYNC_WRITE_BYTES):
   * a temporary file beside the target (never through a link, never an existing entry), the
   * target checked to be a regular file or nothing, the folder's real path checked, the rename,
   * then the folder checked again (the file is taken back out should it have moved meanwhile).
   */
  private replaceSync(real: string, folder: Folder, name: string, data: Uint8Array, options: ConfinedWriteOptions): void {
    const tmpPath = this.entryPath(folder, temporaryName());
    const targetPath = this.entryPath(folder, name);
    let fd: number;
    try {
      fd = openSync(tmpPath, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW, options.mode ?? 0o666);
    } catch (error) {
      throw this.temporaryFailure(error, folder, real);
    }
    let renamed = false;
    try {
      for (let written = 0; written < data.length; ) written += writeSync(fd, data, written, data.length - written);
      if (options.mode !== undefined) fchmodSync(fd, options.mode);
      if (options.durable ?? true) fsyncSync(fd);
      assertReplaceable(real, lstatSyncOrUndefined(targetPath));
      this.verify(folder);
      try {
        renameSync(tmpPath, targetPath);
      } catch (error) {
        if (errno(error) === 'ENOENT') throw changed(path.dirname(real), 'was removed');
        throw error;
      }
      renamed = true;
      if (!this.stillAt(folder)) {
        // The folder moved between the check and the rename: take the file back out of it.
        const written = fstatSync(fd);
        const landed = lstatSyncOrUndefined(targetPath);
        if (landed && landed.ino === written.ino && landed.dev === written.dev) ignoreErrors(() => unlinkSync(targetPath));
        this.forget(folder);
        throw changed(path.dirname(real), 'moved while the file was written; the file was taken out again');
      }
    } finally {
      ignoreErrors(() => closeSync(fd));
      if (!renamed) ignoreErrors(() => unlinkSync(tmpPath));
    }
  }

  /** Deletes a regular file or a symbolic link (the link itself); anything else is refused. */
  async unlink(real: string): Promise<void> {
    const { folder, name } = await this.parent(real, false);
    const entry = this.entryPath(folder, name);
    const kind = entryKind(await lstatOrUndefined(entry));
    if (kind === 'missing') throw new ConfinedError('ENOENT', `'${real}' does not exist`, { kind });
    if (kind === 'directory') throw new ConfinedError('EISDIR', `'${real}' is a folder`, { kind });
    if (kind !== 'file' && kind !== 'symlink') throw new ConfinedError('ENOTREG', `'${real}' is ${describeKind(kind)}, not a regular file`, { kind });
    this.verify(folder);
    await fs.unlink(entry);
  }

  // --- the walk ------------------------------------------------------------------------------

  private segments(real: string): string[] {
    const relative = path.relative(this.root, real);
    if (relative === '' || relative.startsWith('..') || path.isAbsolute(relative)) {
      throw new ConfinedError('ECHANGED', `'${real}' is not inside '${this.root}'`);
    }
    return relative.split(path.sep);
  }

  private entryPath(folder: Folder, name: string): string {
    return folder.handle ? `${procPath(folder.handle)}/${name}` : path.join(folder.path, name);
  }

  /**
   * The folder holding `real`, walked without following links (created when asked), and its name.
   * Folder handles kept from earlier walks are reused unchecked: what acts through them checks
   * the folder's path right before it acts (`verify`).
   */
  private async parent(real: string, create: boolean, created: CreatedFolder[] = []): Promise<{ folder: Folder; name: string }> {
    if (this.closed) throw new Error('confined root used after close');
    this.closeRetired();
    const segments = this.segments(real);
    const name = segments.pop()!;
    if (this.folders.size > MAX_OPEN_FOLDERS) for (const known of [...this.folders.values()]) this.forget(known);
    let folder: Folder = { path: this.root, handle: this.rootHandle };
    for (const segment of segments) {
      folder = this.folders.get(path.join(folder.path, segment)) ?? (await this.step(folder, segment, create, created));
    }
    return { folder, name };
  }

  /** One folder down from `folder`, never through a link. */
  private async step(folder: Folder, name: string, create: boolean, created: CreatedFolder[]): Promise<Folder> {
    const entry = this.entryPath(folder, name);
    const expected = path.join(folder.path, name);
    // A folder that another process keeps swapping is refused after a few tries.
    for (let attempt = 0; attempt < 3; attempt++) {
      let made = false;
      try {
        if (create && entryKind(await lstatOrUndefined(entry)) === 'missing') {
          try {
            await fs.mkdir(entry);
            made = true;
          } catch (error) {
            if (errno(error) !== 'EEXIST') throw error;
          }
        }
        const next = await this.openFolder(entry, expected);
        if (made) created.push({ parent: folder, name, folder: next });
        this.folders.set(next.path, next);
        return next;
      } catch (error) {
        const code = errno(error);
        if (code === 'ENOENT') {
          if (!create) throw new ConfinedError('ENOENT', `'${expected}' does not exist`, { kind: 'missing' });
          continue;
        }
        if (code === 'ENOTDIR' || code === 'ELOOP') {
          const kind = entryKind(await lstatOrUndefined(entry));
          if (kind === 'symlink') throw changed(expected, 'is a symbolic link now');
          if (kind === 'directory' || kind === 'missing') continue;
          throw new ConfinedError('ENOTDIR', `'${expected}' is ${describeKind(kind)}, not a folder`, { kind });
        }
        throw error;
      }
    }
    throw changed(expected, 'kept changing');
  }

  private async openFolder(entry: string, expected: string): Promise<Folder> {
    if (this.rootHandle === undefined) {
      const stats = await fs.lstat(entry);
      if (stats.isSymbolicLink()) throw Object.assign(new Error(`'${expected}' is a symbolic link`), { code: 'ELOOP' });
      if (!stats.isDirectory()) throw Object.assign(new Error(`'${expected}' is not a folder`), { code: 'ENOTDIR' });
      return { path: expected, handle: undefined };
    }
    return { path: expected, handle: await fs.open(entry, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW) };
  }

  /** Stops reusing a folder's handle; it stays open until the current operation is over. */
  private forget(folder: Folder): void {
    if (folder.handle === this.rootHandle) return;
    if (this.folders.get(folder.path) === folder) this.folders.delete(folder.path);
    if (folder.handle !== undefined && !this.retired.includes(folder)) this.retired.push(folder);
  }

  private closeRetired(): void {
    for (const folder of this.retired) void folder.handle?.close().catch(() => undefined);
    this.retired = [];
  }

  /**
   * Whether the folder is still at its expected path (nothing on the way replaced or moved).
   * Synchronous, for both ways of writing: a readlink, or a few lstats and a realpath, of
   * microseconds that open nothing, where a round trip through the thread pool each cost more
   * than the check (see SYNC_WRITE_BYTES).
   */
  private stillAt(folder: Folder): boolean {
    try {
      if (folder.handle) return readlinkSync(procPath(folder.handle)) === folder.path;
      let at = folder.path;
      while (at !== this.root) {
        if (!lstatSync(at).isDirectory()) return false;
        at = path.dirname(at);
      }
      return realpathSync.native(folder.path) === folder.path;
    } catch {
      return false;
    }
  }

  private verify(folder: Folder): void {
    if (!this.stillAt(folder)) {
      this.forget(folder);
      throw changed(folder.path, 'was moved or replaced (by a symbolic link?)');
    }
  }
}

function procPath(handle: FileHandle): string {
  return `/proc/self/fd/${handle.fd}`;
}

function changed(what: string, how: string): ConfinedError {
  return new ConfinedError('ECHANGED', `'${what}' ${how} while Belay was working in it; nothing was done there`);
}

async function lstatOrUndefined(entry: string): Promise<Stats | undefined> {
  try {
    return await fs.lstat(entry);
  } catch (error) {
    if (errno(error) === 'ENOENT') return undefined;
    throw error;
  }
}

/** Only a regular file (or nothing) is replaced: a folder, a link, a FIFO, a socket or a device is refused. */
function assertReplaceable(real: string, target: Stats | undefined): void {
  const kind = entryKind(target);
  if (kind === 'directory') throw new ConfinedError('EISDIR', `'${real}' is a folder`, { kind });
  if (kind === 'symlink') throw changed(real, 'is now a symbolic link');
  if (kind !== 'file' && kind !== 'missing') throw new ConfinedError('ENOTREG', `'${real}' is ${describeKind(kind)}, not a regular file`, { kind });
}

function lstatSyncOrUndefined(entry: string): Stats | undefined {
  try {
    return lstatSync(entry);
  } catch (error) {
    if (errno(error) === 'ENOENT') return undefined;
    throw error;
  }
}

function ignoreErrors(work: () => void): void {
  try {
    work();
  } catch {
    // Cleaning up after a failure that is reported already.
  }
}

async function exists(file: string): Promise<boolean> {
  return fs.lstat(file).then(
    () => true,
    () => false,
  );
}
