// What the LLM saw: for each outbox `outbox/{id}_seq{NNNN}.txt`, `sessions/{id}.seen/seq{NNNN}.json`
// holds a digest of every file the outbox lists and the full text of every file it sent in full
// (READ_FILE). An answer's EDIT_FILE
// is then judged by content, not by modification times: a file is stale when its text changed
// since, and an edit of a file whose old text is known can be carried onto the new text.
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import * as z from 'zod';
import { writeFileAtomic } from '../../shared/atomic.ts';

/** Files larger than this are listed without a digest (they are not judged stale). */
const MAX_DIGEST_BYTES = 64 * 1024 * 1024;

const seenSchema = z.object({
  version: z.literal(1),
  /** Workspace-relative path -> SHA-256 of its text (byte order mark aside). */
  files: z.record(z.string(), z.string().regex(/^[0-9a-f]{64}$/)),
  /** Workspace-relative path -> the full text the outbox sent. */
  texts: z.record(z.string(), z.string()),
});

export interface SeenFiles {
  /** The outbox this is what of. */
  outbox: string;
  digests: ReadonlyMap<string, string>;
  texts: ReadonlyMap<string, string>;
}

/** SHA-256 of a text, a leading byte order mark aside: how a file's content is compared. */
export function textDigest(text: string): string {
  return createHash('sha256').update(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text).digest('hex');
}

/** Where what the LLM saw with an outbox is kept: under the session root's `sessions/`, out of the outbox folder. */
export function seenPath(outboxFile: string): string {
  const name = /^([0-9a-f]{8})_seq(\d{4,})\.txt$/.exec(path.basename(outboxFile));
  if (!name) return `${outboxFile}.seen.json`;
  return path.join(path.dirname(path.dirname(outboxFile)), 'sessions', `${name[1]}.seen`, `seq${name[2]}.json`);
}

/** Digests of the listed files (read from the real root), and the texts sent in full. */
export async function snapshotFiles(realRoot: string, listed: readonly string[], sent: ReadonlyMap<string, string>): Promise<{ files: Record<string, string>; texts: Record<string, string> }> {
  const files: Record<string, string> = {};
  await Promise.all(
    listed.map(async (relative) => {
      const file = path.join(realRoot, ...relative.split('/'));
      try {
        const stats = await fs.lstat(file);
        if (!stats.isFile() || stats.size > MAX_DIGEST_BYTES) return;
        files[relative] = textDigest(await fs.readFile(file, 'utf8'));
      } catch {
        // Gone meanwhile: not judged.
      }
    }),
  );
  return { files, texts: Object.fromEntries(sent) };
}

export async function writeSeen(outboxFile: string, snapshot: { files: Record<string, string>; texts: Record<string, string> }): Promise<void> {
  const file = seenPath(outboxFile);
  await fs.mkdir(path.dirname(file), { recursive: true });
  await writeFileAtomic(file, JSON.stringify({ version: 1, ...snapshot }));
}

/** What the LLM saw with this outbox; undefined when Belay did not record it (an older outbox). */
export async function readSeen(outboxFile: string): Promise<SeenFiles | undefined> {
  let json: unknown;
  try {
    json = JSON.parse(await fs.readFile(seenPath(outboxFile), 'utf8'));
  } catch {
    return undefined;
  }
  const parsed = seenSchema.safeParse(json);
  if (!parsed.success) return undefined;
  return { outbox: outboxFile, digests: new Map(Object.entries(parsed.data.files)), texts: new Map(Object.entries(parsed.data.texts)) };
}
