// Runs inside the extension host (as extensionTestsPath): activates an empty extension and
// Belay, timing each `activate()` (module load + activate call), and writes the times to the file
// named by BELAY_BENCH_RESULTS.
import { writeFileSync } from 'node:fs';
import * as vscode from 'vscode';

async function time(id: string): Promise<number> {
  const extension = vscode.extensions.getExtension(id);
  if (!extension) throw new Error(`${id} is not loaded in this host`);
  if (extension.isActive) throw new Error(`${id} was already active: something activated it before the bench`);
  const t0 = performance.now();
  await extension.activate();
  return performance.now() - t0;
}

export async function run(): Promise<void> {
  // The first activation in a host pays one-time costs: the order alternates between runs.
  const belayFirst = process.env.BELAY_BENCH_ORDER === 'belay-first';
  const first = await time(belayFirst ? 'belay.belay' : 'belay-bench.empty');
  const second = await time(belayFirst ? 'belay-bench.empty' : 'belay.belay');
  const [belay, empty] = belayFirst ? [first, second] : [second, first];
  const file = process.env.BELAY_BENCH_RESULTS;
  if (file) writeFileSync(file, JSON.stringify({ empty, belay }));
}
