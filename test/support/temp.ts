// Temporary folders for tests: each test makes its own under the system's temp folder, since tests
// run side by side with each other and with other Belay processes.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export interface TempDir {
  /** The folder's real path: sandboxes and workspaces compare paths with no link on the way. */
  dir: string;
  remove(): void;
  /** Writes a task folder `name` in this temp folder from relative paths and contents. */
  writeTask(name: string, files: Record<string, string>): string;
}

export function tempDir(prefix = 'belay-test-'): TempDir {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
  return {
    dir,
    remove: () => rmSync(dir, { recursive: true, force: true }),
    writeTask(name, files) {
      const task = path.join(dir, name);
      for (const [file, text] of Object.entries(files)) {
        mkdirSync(path.dirname(path.join(task, file)), { recursive: true });
        writeFileSync(path.join(task, file), text);
      }
      return task;
    },
  };
}
