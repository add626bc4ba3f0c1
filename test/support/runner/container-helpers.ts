// Shared by the container tests: the real engine and the base image (built once from the cache
// under .cache/belay, as CI does), or the reason they cannot be had here.
import * as path from 'node:path';
import { after } from 'node:test';
import type { Backend } from '../../../src/runner/core/backends/backend.ts';
import { containerBackend } from '../../../src/runner/core/backends/container.ts';
import { detectEngine, type Engine } from '../../../src/runner/core/backends/engine.ts';
import { buildBaseImage } from '../../../src/runner/core/backends/image-base.ts';
import { repoRoot } from './helpers.ts';

export const cacheDir = path.join(repoRoot, '.cache', 'belay');

let ready: Promise<Engine | Error> | undefined;
/** The engine, with the base image present; an Error saying why not otherwise. */
export function engineWithBase(): Promise<Engine | Error> {
  ready ??= (async () => {
    const engine = await detectEngine();
    await buildBaseImage({ engine, cacheDir });
    return engine;
  })().catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
  return ready;
}

let container: Promise<Backend | Error> | undefined;
/** The container backend with the base image present, or the reason it cannot run here. */
export function containerOrReason(): Promise<Backend | Error> {
  container ??= engineWithBase().then((engine) => (engine instanceof Error ? engine : containerBackend({ engine: engine.name }).catch((error: Error) => error)));
  return container;
}

/** Removes the task images this test process built for tasks named by `uniqueName` (their layers stay cached). */
export async function removeTestImages(engine: Engine): Promise<void> {
  const listed = await engine.run(['images', '--format', '{{.Repository}}:{{.Tag}}'], { timeoutMs: 60_000 });
  const mine = listed.stdout.text('').split('\n').filter((image) => image.startsWith('localhost/belay-task-') && image.includes(`-${process.pid}-`));
  for (const image of mine) await engine.run(['rmi', '--force', image], { timeoutMs: 60_000 });
}

/** A name no other test run uses, for images and containers made by one test. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * For a test file on the container backend: the engine with the base image, a container backend
 * on it, and the reason to skip when either cannot be had here. After the file's last test the
 * task images it built are removed and `cleanup` runs.
 */
export async function containerForFile(cleanup: () => void | Promise<void>): Promise<{ found: Engine | Error; skip: string | false; backend: Backend | Error }> {
  const found = await engineWithBase();
  const backend: Backend | Error = found instanceof Error ? found : await containerBackend({ engine: found.name }).catch((error: Error) => error);
  after(async () => {
    if (!(found instanceof Error)) await removeTestImages(found);
    await cleanup();
  });
  return { found, skip: found instanceof Error ? found.message : false, backend };
}
