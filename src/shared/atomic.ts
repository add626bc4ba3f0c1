import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';

export interface AtomicWriteOptions {
  /** File mode of the result, exactly (not filtered by the umask). Default: 0o666 less the umask. */
  mode?: number;
  /**
   * Flush the data to disk before the rename (default true), so the new content survives a power
   * cut. Without it a crash of Belay still never leaves a half-written file; applying many files
   * at once is about twice as fast.
   */
  durable?: boolean;
}

/**
 * Writes a file so that readers see either the old content or the new one, never a part:
 * the data goes to a temporary file in the same folder, then is renamed over the target.
 * The temporary name is short and fixed in length, so any name the file system allows for the
 * target works (a suffix on the target's own name would fail past 231 bytes).
 */
export async function writeFileAtomic(target: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  const dir = path.dirname(target);
  const tmp = path.join(dir, `.belay-${randomBytes(6).toString('hex')}.tmp`);
  const handle = await fs.open(tmp, 'wx', options.mode ?? 0o666);
  try {
    await handle.writeFile(data);
    if (options.mode !== undefined) await handle.chmod(options.mode);
    if (options.durable ?? true) await handle.sync();
    await handle.close();
    await fs.rename(tmp, target);
  } catch (error) {
    await handle.close().catch(() => undefined);
    await fs.rm(tmp, { force: true });
    throw error;
  }
}
