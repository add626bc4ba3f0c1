// What a bench file gives `npm run bench`: figures, each beside a baseline measured in the same run.

export interface Figure {
  /** What was measured, e.g. "parse 20 MB answer". */
  name: string;
  /** The measured value, in `unit`. */
  value: number;
  /** What the value is compared with, e.g. "line split-and-trim of the same text". */
  baselineName: string;
  /** The baseline's value, in `unit`, measured in the same run. */
  baseline: number;
  unit: 'ms' | 'bytes' | 'steps/s';
  /** The goal as the largest acceptable value / baseline ratio, when it sets one. */
  goal?: number;
}

export interface BenchContext {
  repoRoot: string;
  /** A fresh folder for this bench file, removed afterwards. */
  tmpDir: string;
  log(message: string): void;
}

export interface BenchFile {
  title: string;
  run(ctx: BenchContext): Promise<Figure[]>;
}

/** Runs `fn` `runs` times after `warmup` runs and returns the median duration in ms. */
export async function medianMs(fn: () => unknown, runs = 5, warmup = 1): Promise<number> {
  for (let i = 0; i < warmup; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  return percentile(times, 50);
}

/**
 * Runs the baseline and the measured function in turn, `rounds` times after one warm-up round, so
 * both see the same heap, caches and machine load; returns their median durations in ms.
 */
export async function alternatingMedians(baseline: () => unknown, measured: () => unknown, rounds: number): Promise<[baseline: number, measured: number]> {
  const a: number[] = [];
  const b: number[] = [];
  for (let round = -1; round < rounds; round++) {
    let t0 = performance.now();
    await baseline();
    if (round >= 0) a.push(performance.now() - t0);
    t0 = performance.now();
    await measured();
    if (round >= 0) b.push(performance.now() - t0);
  }
  return [percentile(a, 50), percentile(b, 50)];
}

/** The p-th percentile (0..100) of the values, nearest-rank. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}
