// Logs on disk are bounded: each keeps its head as it comes and its tail in memory, written
// with a marker between when the log closes. A run also has a disk budget, checked on the
// whole run folder (logs, workspace, the backend's scratch) while the run goes on.
import { closeSync, openSync, promises as fs, writeSync } from 'node:fs';
import * as path from 'node:path';

/** A log file of at most `limitBytes` (plus the marker): the first half as written, the last half at close. */
export class CappedLog {
  readonly file: string;
  private fd: number | undefined;
  private readonly headLimit: number;
  private readonly tailLimit: number;
  private head = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private dropped = 0;

  constructor(file: string, limitBytes: number, flags: 'w' | 'a' = 'w') {
    this.file = file;
    this.fd = openSync(file, flags);
    this.headLimit = Math.ceil(limitBytes / 2);
    this.tailLimit = Math.floor(limitBytes / 2);
  }

  /** Bytes left out between head and tail so far. */
  get omitted(): number {
    return this.dropped;
  }

  write(chunk: string | Buffer): void {
    if (this.fd === undefined) return;
    let data = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    const room = this.headLimit - this.head;
    if (room > 0) {
      const now = data.subarray(0, room);
      // Synchronous writes pace a flooding program to the disk instead of to memory.
      writeSync(this.fd, now);
      this.head += now.length;
      data = data.subarray(now.length);
    }
    if (data.length === 0) return;
    if (this.tailLimit === 0) {
      this.dropped += data.length;
      return;
    }
    const keep = data.length > this.tailLimit ? data.subarray(data.length - this.tailLimit) : data;
    this.dropped += data.length - keep.length;
    this.tail.push(Buffer.from(keep));
    this.tailBytes += keep.length;
    while (this.tailBytes > this.tailLimit) {
      const first = this.tail[0]!;
      const excess = this.tailBytes - this.tailLimit;
      const cut = Math.min(first.length, excess);
      if (cut === first.length) this.tail.shift();
      else this.tail[0] = first.subarray(cut);
      this.tailBytes -= cut;
      this.dropped += cut;
    }
  }

  /** Writes the marker and the tail; the log takes no more writes. Idempotent. */
  close(): void {
    if (this.fd === undefined) return;
    try {
      if (this.dropped > 0) writeSync(this.fd, `\n[... ${this.dropped} bytes omitted by Belay: each log keeps its first and last ${formatBytes(this.tailLimit)} ...]\n`);
      for (const piece of this.tail) writeSync(this.fd, piece);
    } finally {
      closeSync(this.fd);
      this.fd = undefined;
      this.tail = [];
    }
  }
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 * 1024) return `${Math.round((bytes / (1024 * 1024 * 1024)) * 10) / 10} GB`;
  if (bytes >= 1024 * 1024) return `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${bytes} bytes`;
}

/** Bytes on disk under `dir` (allocated blocks, each hard-linked file once); stops counting past `stopAt`. */
export async function diskUsage(dir: string, stopAt = Infinity): Promise<number> {
  let total = 0;
  const seen = new Set<string>();
  const walk = async (current: string): Promise<void> => {
    let entries;
    try {
      entries = await fs.readdir(current, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (total > stopAt) return;
      const full = path.join(current, entry.name);
      let stat;
      try {
        stat = await fs.lstat(full, { bigint: false });
      } catch {
        continue;
      }
      if (stat.nlink > 1) {
        const key = `${stat.dev}:${stat.ino}`;
        if (seen.has(key)) continue;
        seen.add(key);
      }
      total += Math.max(stat.blocks * 512, 0);
      if (entry.isDirectory()) await walk(full);
    }
  };
  await walk(dir);
  return total;
}

/**
 * Watches a folder's size while a run goes on and calls `onExceeded` once when it passes the
 * budget. The next look comes after ten times the last look's duration (at least `intervalMs`),
 * so a huge tree does not cost the run its CPU.
 */
export function watchDiskBudget(dir: string, budgetBytes: number, onExceeded: (usedBytes: number) => void, intervalMs = 1000): { stop(): void } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const look = async () => {
    const started = performance.now();
    const used = await diskUsage(dir, budgetBytes);
    if (stopped) return;
    if (used > budgetBytes) {
      stopped = true;
      onExceeded(used);
      return;
    }
    timer = setTimeout(() => void look(), Math.max(intervalMs, (performance.now() - started) * 10));
    timer.unref();
  };
  timer = setTimeout(() => void look(), intervalMs);
  timer.unref();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
