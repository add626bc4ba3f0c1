// What the editor applied, remembered so that every block's state can be derived from the files:
// a block is applied while each file it touched holds what applying it wrote, undone once they
// hold what was there before (Undo, Undo Answer, a revert), and "changed since" otherwise. The
// record is kept across windows and reopening; the text each file had before is kept too (by
// digest), so an applied answer can be taken back whole.
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import * as z from 'zod';
import { writeFileAtomic } from '../../shared/atomic.ts';
import { replaySchema } from '../../contracts/languageServer.ts';
import { textDigest } from './seen.ts';
import type { CommandResult } from './results.ts';
import type { Command } from './syntax.ts';

/** SHA-256 of a file's text (a byte order mark aside), or null for a file that does not exist. */
export type Digest = string | null;

export function digest(text: string | null): Digest {
  return text === null ? null : textDigest(text);
}

/**
 * One key per block of an answer, from what it does and the folder it acts on (not from where it
 * sits): the same block in a reopened or re-pasted answer is the same block. Equal blocks in one
 * answer are told apart by their order. A command is an event, not a state of the files: its key
 * also names the answer (`answerText`), so the same command in a later answer is a new one.
 */
export function blockIds(workspaceRoot: string, commands: readonly Command[], answerText = ''): string[] {
  const seen = new Map<string, number>();
  let answer: string | undefined;
  return commands.map((command) => {
    const hash = createHash('sha256').update(workspaceRoot).update('\0').update(command.type).update('\0');
    if (command.type === 'RUN_COMMAND') hash.update((answer ??= textDigest(answerText))).update('\0');
    if ('path' in command) hash.update(command.path);
    if (command.type === 'EDIT_FILE') hash.update(`\0${command.startLine}-${command.endLine}`);
    if ('body' in command) hash.update('\0').update(command.body.text);
    const id = hash.digest('hex').slice(0, 40);
    const n = (seen.get(id) ?? 0) + 1;
    seen.set(id, n);
    return `${id}#${n}`;
  });
}

const digestSchema = z.string().regex(/^[0-9a-f]{64}$/).nullable();
const fileChangeSchema = z.object({
  real: z.string(),
  relative: z.string(),
  before: digestSchema,
  after: digestSchema,
});
export type FileChange = z.infer<typeof fileChangeSchema>;

const recordSchema = z.object({
  id: z.string(),
  files: z.array(fileChangeSchema),
  replay: replaySchema.optional(),
  result: z.object({ commandType: z.string(), summary: z.string(), success: z.boolean(), output: z.string().optional() }),
  /** Set when only some of the block's changes were applied (from its preview): which. */
  partial: z.string().optional(),
  /** The Apply All (or Apply) that applied it: Undo Answer takes back what one batch did. */
  batch: z.string(),
  at: z.number(),
});
export type BlockRecord = Omit<z.infer<typeof recordSchema>, 'result'> & { result: CommandResult };

const ledgerSchema = z.object({ version: z.literal(1), records: z.array(recordSchema) });

/** Records kept at most; the oldest go first. */
const MAX_RECORDS = 5000;
/** Texts kept for Undo Answer at most per file (larger ones are not restorable). */
const MAX_BLOB_CHARS = 20_000_000;

export type RecordState = 'applied' | 'undone' | 'changed';

/**
 * A record against the files as they are now (`current`: each touched file's digest, null when it
 * does not exist): applied while all hold what was written, undone once all hold what was there
 * before, changed otherwise. A command that ran touched no file: it stays applied.
 */
export function recordState(record: Pick<BlockRecord, 'files'>, current: (real: string) => Digest): RecordState {
  if (record.files.length === 0) return 'applied';
  const now = record.files.map((f) => current(f.real));
  if (record.files.every((f, i) => now[i] === f.after)) return 'applied';
  if (record.files.every((f, i) => now[i] === f.before)) return 'undone';
  return 'changed';
}

/** The ledger in a folder of its own: `ledger.json` and `blobs/<digest>`. */
export class Ledger {
  private readonly folder: string;
  private records: BlockRecord[] = [];
  private readonly byId = new Map<string, BlockRecord>();
  private loaded: Promise<void> | undefined;
  private writing: Promise<void> = Promise.resolve();

  constructor(folder: string) {
    this.folder = folder;
  }

  private get file(): string {
    return path.join(this.folder, 'ledger.json');
  }

  /** Reads the ledger once; an unreadable one starts empty (and is replaced at the next change). */
  load(): Promise<void> {
    this.loaded ??= (async () => {
      let json: unknown;
      try {
        json = JSON.parse(await fs.readFile(this.file, 'utf8'));
      } catch {
        return;
      }
      const parsed = ledgerSchema.safeParse(json);
      if (!parsed.success) return;
      this.records = parsed.data.records as BlockRecord[];
      this.index();
    })();
    return this.loaded;
  }

  private index(): void {
    this.byId.clear();
    for (const record of this.records) this.byId.set(record.id, record);
  }

  /** The latest record of a block, if it was ever applied from the editor. */
  get(id: string): BlockRecord | undefined {
    return this.byId.get(id);
  }

  /** Every record of a batch, in the order they were made. */
  batch(batch: string): BlockRecord[] {
    return this.records.filter((r) => r.batch === batch);
  }

  /** Adds records (replacing earlier ones of the same blocks) and keeps the texts needed to undo them. */
  async add(records: readonly BlockRecord[], texts: ReadonlyMap<string, string>): Promise<void> {
    await this.load();
    const ids = new Set(records.map((r) => r.id));
    this.records = [...this.records.filter((r) => !ids.has(r.id)), ...records].slice(-MAX_RECORDS);
    this.index();
    await this.persist(async () => {
      await fs.mkdir(path.join(this.folder, 'blobs'), { recursive: true });
      for (const record of records) {
        for (const file of record.files) {
          if (file.before === null) continue;
          const text = texts.get(file.before);
          if (text === undefined || text.length > MAX_BLOB_CHARS) continue;
          const blob = path.join(this.folder, 'blobs', file.before);
          if (!(await exists(blob))) await writeFileAtomic(blob, text, { durable: false });
        }
      }
    });
  }

  /** Forgets the records of these blocks (their changes were taken back). */
  async remove(ids: Iterable<string>): Promise<void> {
    await this.load();
    const gone = new Set(ids);
    this.records = this.records.filter((r) => !gone.has(r.id));
    this.index();
    await this.persist(async () => undefined);
  }

  /** The text a file had before a block changed it, when kept. */
  async text(before: string): Promise<string | undefined> {
    if (!/^[0-9a-f]{64}$/.test(before)) return undefined;
    return fs.readFile(path.join(this.folder, 'blobs', before), 'utf8').catch(() => undefined);
  }

  private persist(extra: () => Promise<void>): Promise<void> {
    const snapshot = { version: 1 as const, records: this.records };
    const written = this.writing.then(async () => {
      await fs.mkdir(this.folder, { recursive: true });
      await extra();
      await writeFileAtomic(this.file, JSON.stringify(snapshot), { durable: false });
      await this.sweepTexts(snapshot.records);
    });
    // A failed write is reported to its caller; the next one tries again.
    this.writing = written.catch(() => undefined);
    return written;
  }

  /**
   * Removes the kept texts no record needs any more: those of records taken back, replaced, or
   * gone past MAX_RECORDS. A record added since `written` was saved keeps its texts too (its own
   * write comes after this one and puts back any it needs).
   */
  private async sweepTexts(written: readonly BlockRecord[]): Promise<void> {
    const needed = new Set<string>();
    for (const record of [...written, ...this.records]) for (const file of record.files) if (file.before !== null) needed.add(file.before);
    const blobs = path.join(this.folder, 'blobs');
    const names = await fs.readdir(blobs).catch(() => [] as string[]);
    await Promise.all(names.filter((name) => /^[0-9a-f]{64}$/.test(name) && !needed.has(name)).map((name) => fs.unlink(path.join(blobs, name)).catch(() => undefined)));
  }
}

async function exists(file: string): Promise<boolean> {
  return fs.access(file).then(
    () => true,
    () => false,
  );
}
