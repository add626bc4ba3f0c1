// Noticing new runs in a runs folder with Node's own watcher (the editor's watcher can miss them).
import { existsSync, watch as watchFolder, type FSWatcher } from 'node:fs';
import * as path from 'node:path';
import { runFiles } from './records.ts';

/**
 * Node's own watch on a runs folder, beside VS Code's watcher (which can miss files written by a
 * process outside the editor, like `belay run` in a terminal): a new run folder is watched until
 * its result.json appears. Non-recursive, so an agent's busy workspace costs nothing.
 */
export class RunsFolderWatcher {
  readonly #dir: string;
  readonly #onResult: () => void;
  #root: FSWatcher | undefined;
  readonly #runs = new Map<string, FSWatcher>();

  constructor(dir: string, onResult: () => void) {
    this.#dir = dir;
    this.#onResult = onResult;
  }

  /** Starts watching when the folder exists; false when it does not (yet). */
  start(): boolean {
    if (this.#root) return true;
    if (!existsSync(this.#dir)) return false;
    try {
      this.#root = watchFolder(this.#dir, (_event, name) => {
        if (typeof name === 'string' && name !== '') this.#watchRun(path.join(this.#dir, name));
      });
      this.#root.on('error', () => this.#stopRoot());
    } catch {
      return false;
    }
    return true;
  }

  #watchRun(runDir: string): void {
    if (this.#runs.has(runDir) || this.#runs.size > 64) return;
    const result = runFiles(runDir).result;
    const resultName = path.basename(result);
    let watcher: FSWatcher;
    try {
      watcher = watchFolder(runDir, (_event, name) => {
        if (name === resultName && existsSync(result)) this.#done(runDir);
      });
    } catch {
      return; // removed meanwhile, or a file
    }
    watcher.on('error', () => this.#done(runDir, false));
    this.#runs.set(runDir, watcher);
    if (existsSync(result)) this.#done(runDir);
  }

  #done(runDir: string, found = true): void {
    this.#runs.get(runDir)?.close();
    this.#runs.delete(runDir);
    if (found) this.#onResult();
  }

  #stopRoot(): void {
    this.#root?.close();
    this.#root = undefined;
  }

  dispose(): void {
    this.#stopRoot();
    for (const watcher of this.#runs.values()) watcher.close();
    this.#runs.clear();
  }
}
