// The workspace as the outbox lists it: every file with its size, sorted, without `.git`,
// `node_modules` and what the workspace's `.gitignore` files exclude. Symbolic links to folders
// are not followed (they could leave the workspace or loop).
import { promises as fs, type Dirent } from 'node:fs';
import * as path from 'node:path';
import { isIgnored, parseGitignore, type IgnoreRule } from './gitignore.ts';

export interface WorkspaceFile {
  /** Workspace-relative, `/`-separated. */
  path: string;
  size: number;
}

const ALWAYS_SKIPPED = new Set(['.git', 'node_modules']);

/** Lists the files of a workspace, sorted by path (code unit order, the same on every machine). */
export async function listWorkspace(root: string): Promise<WorkspaceFile[]> {
  const files: WorkspaceFile[] = [];
  await walk(root, '', [], files);
  return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

async function walk(root: string, relative: string, inherited: readonly IgnoreRule[], files: WorkspaceFile[]): Promise<void> {
  const folder = path.join(root, relative);
  let entries: Dirent[];
  try {
    entries = await fs.readdir(folder, { withFileTypes: true });
  } catch {
    return;
  }
  let rules = inherited;
  if (entries.some((entry) => entry.name === '.gitignore' && !entry.isDirectory())) {
    try {
      rules = [...inherited, ...parseGitignore(await fs.readFile(path.join(folder, '.gitignore'), 'utf8'), relative)];
    } catch {
      // An unreadable .gitignore ignores nothing.
    }
  }
  await Promise.all(
    entries.map(async (entry) => {
      if (ALWAYS_SKIPPED.has(entry.name)) return;
      const child = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) {
        if (!isIgnored(rules, child, true)) await walk(root, child, rules, files);
        return;
      }
      if (isIgnored(rules, child, false)) return;
      try {
        const stats = await fs.stat(path.join(root, child));
        if (stats.isFile()) files.push({ path: child, size: stats.size });
      } catch {
        // A dangling link or a file removed meanwhile: not listed.
      }
    }),
  );
}
