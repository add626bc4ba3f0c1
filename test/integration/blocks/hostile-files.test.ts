// Hostile answers against the file blocks: a folder swapped for a link by a real process racing
// the writes, FIFOs, sockets and devices where files were, files too large to read whole, names
// as long as the file system allows. Each must fail safely: nothing written, replaced, deleted or
// read outside the workspace, nothing waiting for ever, nothing left behind.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, open, readdir, readFile, realpath, rm, stat, symlink, writeFile } from 'node:fs/promises';
import * as net from 'node:net';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { executeAnswer } from '../../../src/blocks/core/executor.ts';
import { MAX_TEXT_BYTES } from '../../../src/blocks/core/files.ts';
import { collectOutbox } from '../../../src/blocks/core/outbox.ts';
import { formatResult } from '../../../src/blocks/core/results.ts';
import { openWorkspace, type Workspace } from '../../../src/blocks/core/sandbox.ts';
import { tempDir } from '../../support/blocks/helpers.ts';

let dir: string;
let ws: string;
let outside: string;
let cleanup: () => void;
let workspace: Workspace;

beforeEach(async () => {
  ({ dir, remove: cleanup } = tempDir('belay-hostile-'));
  ws = path.join(dir, 'ws');
  outside = path.join(dir, 'outside');
  await mkdir(ws);
  await mkdir(outside);
  workspace = await openWorkspace(ws);
});
afterEach(() => cleanup());

/** Every file under `folder`, recursively, not following links. */
async function filesUnder(folder: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(folder, { withFileTypes: true })) {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) found.push(...(await filesUnder(full)));
    else found.push(full);
  }
  return found;
}

const hasMkfifo = spawnSync('mkfifo', ['--version']).status === 0;

/**
 * A real process that swaps `ws/<name>` for a link to `outside` and back, the link most of the
 * time, until killed; it creates `<dir>/racing` once it has started.
 */
function startRacer(name: string): ChildProcess {
  const script = `
    const fs = require('node:fs');
    const [folder, target, ready] = process.argv.slice(1);
    const real = folder + '.real';
    const spin = (ms) => { const until = Date.now() + ms; while (Date.now() < until); };
    for (let round = 0; ; round++) {
      try { fs.renameSync(folder, real); } catch {}
      try { fs.symlinkSync(target, folder); } catch {}
      if (round === 0) fs.mkdirSync(ready);
      spin(2);
      try { fs.unlinkSync(folder); } catch {}
      try { fs.renameSync(real, folder); } catch {}
      spin(1);
    }`;
  return spawn(process.execPath, ['-e', script, path.join(ws, name), outside, path.join(dir, 'racing')], { stdio: 'ignore' });
}

async function stopRacer(racer: ChildProcess | undefined): Promise<void> {
  if (racer === undefined || racer.exitCode !== null || racer.signalCode !== null) return;
  const exited = new Promise((resolve) => racer.once('exit', resolve));
  racer.kill('SIGKILL');
  await exited;
}

describe('hostile answers: a folder swapped for a link while blocks are applied', () => {
  it('a racing process never gets a CREATE_FILE, EDIT_FILE or DELETE_FILE to act outside the workspace', { timeout: 120_000 }, async () => {
    await mkdir(path.join(ws, 'sub'));
    // Decoys outside with the names the blocks use: an EDIT or DELETE that escaped would change them.
    for (let i = 0; i < 50; i++) await writeFile(path.join(outside, `e${i}.txt`), 'outside\n');
    for (let i = 0; i < 50; i++) await writeFile(path.join(ws, 'sub', `e${i}.txt`), 'inside\n');
    const before = (await filesUnder(outside)).sort();
    // The first block is written before the racer starts (once, Belay then trusted the folder it
    // had checked); the second waits until the racer is swapping, as a background process a
    // RUN_COMMAND left behind would be.
    const blocks = ['[CREATE_FILE path="sub/first.txt"]\nfirst\n[/CREATE_FILE]', '[RUN_COMMAND]\nwhile [ ! -d ../racing ]; do sleep 0.01; done\n[/RUN_COMMAND]'];
    for (let i = 0; i < 1500; i++) blocks.push(`[CREATE_FILE path="sub/f${i}.txt"]\nfile ${i}\n[/CREATE_FILE]`);
    for (let i = 0; i < 50; i++) blocks.push(`[EDIT_FILE path="sub/e${i}.txt" start_line="1" end_line="1"]\nedited\n[/EDIT_FILE]`);
    for (let i = 0; i < 50; i++) blocks.push(`[DELETE_FILE path="sub/e${i}.txt"]`);
    let racer: ChildProcess | undefined;
    let report;
    try {
      // The command waits for the racer's mark outside the workspace: it must see the machine's own
      // folders (the sandbox's /tmp is its own), so it runs as the unsandboxed shell.
      report = await executeAnswer(workspace, blocks.join('\n'), { shell: { mode: 'unsandboxed', network: true }, onResult: () => void (racer ??= startRacer('sub')) });
    } finally {
      await stopRacer(racer);
    }
    assert.deepEqual((await filesUnder(outside)).sort(), before, 'nothing was created, changed or deleted outside');
    for (const file of before) assert.equal(await readFile(file, 'utf8'), 'outside\n');
    const codes = new Map<string, number>();
    for (const item of report.items) codes.set(item.code ?? 'ok', (codes.get(item.code ?? 'ok') ?? 0) + 1);
    for (const code of codes.keys()) assert.ok(['ok', 'changed', 'outside-workspace', 'not-found', 'through-file'].includes(code), `unexpected ${code}: ${report.items.find((item) => item.code === code)?.result.summary}`);
    assert.ok(report.items[1]!.result.success, `the racer ran: ${report.items[1]!.result.summary}`);
    assert.ok((codes.get('changed') ?? 0) + (codes.get('outside-workspace') ?? 0) > 0, `the racer got in the way: ${JSON.stringify([...codes])}`);
    // What succeeded is inside, with its content: in the folder, wherever the racer left it
    // (or in a new 'sub' made while the racer had moved the old one away).
    for (const [index, item] of report.items.entries()) {
      const i = index - 2;
      if (i < 0 || i >= 1500 || !item.result.success) continue;
      const copies = ['sub', 'sub.real'].map((folder) => path.join(ws, folder, `f${i}.txt`)).filter((file) => existsSync(file));
      assert.ok(copies.length > 0, `f${i}.txt was written`);
      for (const copy of copies) assert.equal(await readFile(copy, 'utf8'), `file ${i}`);
    }
    assert.deepEqual(
      (await filesUnder(ws)).filter((f) => path.basename(f).startsWith('.belay-')),
      [],
      'no temporary file left',
    );
  });

  it('a link placed between planning and writing is refused, not followed', async () => {
    await mkdir(path.join(ws, 'sub'));
    // The RUN_COMMAND swaps the folder after the block before it was planned and written.
    const answer = ['[CREATE_FILE path="sub/a.txt"]\na\n[/CREATE_FILE]', '[RUN_COMMAND]\nmv sub sub.real && ln -s ../outside sub\n[/RUN_COMMAND]', '[CREATE_FILE path="sub/b.txt"]\nb\n[/CREATE_FILE]', '[CREATE_FILE path="sub/deep/c.txt"]\nc\n[/CREATE_FILE]'].join('\n');
    const report = await executeAnswer(workspace, answer);
    assert.deepEqual(
      report.results.map((r) => formatResult(r).split('\n')[0]),
      ["[OK] CREATE_FILE: Created 'sub/a.txt'", "[OK] RUN_COMMAND: Ran 'mv sub sub.real && ln -s ../outside sub' (exit code 0)", "[FAILED] CREATE_FILE: REJECTED: Path 'sub/b.txt' is outside workspace", "[FAILED] CREATE_FILE: REJECTED: Path 'sub/deep/c.txt' is outside workspace"],
    );
    assert.deepEqual(await readdir(outside), []);
  });
});

describe('hostile answers: only regular files are read, replaced or deleted', () => {
  const blocksOn = (name: string) => [
    `[CREATE_FILE path="${name}"]\nnew\n[/CREATE_FILE]`,
    `[EDIT_FILE path="${name}" start_line="1" end_line="1"]\nnew\n[/EDIT_FILE]`,
    `[DELETE_FILE path="${name}"]`,
    `[READ_FILE path="${name}"]`,
  ];

  it('a FIFO made by RUN_COMMAND: every file block is refused at once, the FIFO stays', { skip: !hasMkfifo, timeout: 30_000 }, async () => {
    const report = await executeAnswer(workspace, ['[RUN_COMMAND]\nmkfifo notes.txt\n[/RUN_COMMAND]', ...blocksOn('notes.txt')].join('\n'));
    const why = "'notes.txt' is a FIFO (named pipe), not a regular file; Belay only reads, replaces and deletes regular files";
    assert.deepEqual(
      report.results.map((r) => formatResult(r)),
      ["[OK] RUN_COMMAND: Ran 'mkfifo notes.txt' (exit code 0)", `[FAILED] CREATE_FILE: ${why}`, `[FAILED] EDIT_FILE: ${why}`, `[FAILED] DELETE_FILE: ${why}`, `[FAILED] READ_FILE: ${why}`],
    );
    assert.ok((await stat(path.join(ws, 'notes.txt'))).isFIFO());
    assert.deepEqual(report.readFileRequests, []);
  });

  it('a socket, and a device where the system allows making one, are refused the same way', { timeout: 30_000 }, async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(path.join(ws, 'sock'), resolve));
    try {
      const report = await executeAnswer(workspace, blocksOn('sock').join('\n'));
      assert.ok(report.results.every((r) => !r.success && r.summary === "'sock' is a socket, not a regular file; Belay only reads, replaces and deletes regular files"));
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    if (spawnSync('mknod', [path.join(ws, 'dev'), 'c', '1', '3']).status === 0) {
      const report = await executeAnswer(workspace, blocksOn('dev').join('\n'));
      assert.ok(report.results.every((r) => !r.success && r.summary.startsWith("'dev' is a device, not a regular file")));
      assert.ok((await stat(path.join(ws, 'dev'))).isCharacterDevice());
    }
  });

  it('a file that becomes a FIFO after READ_FILE queued it is named in the outbox, not opened', { skip: !hasMkfifo, timeout: 30_000 }, async () => {
    await writeFile(path.join(ws, 'notes.txt'), 'hello\n');
    const report = await executeAnswer(workspace, '[READ_FILE path="notes.txt"]\n[RUN_COMMAND]\nrm notes.txt && mkfifo notes.txt\n[/RUN_COMMAND]');
    assert.deepEqual(report.readFileRequests, ['notes.txt']);
    const content = await collectOutbox(workspace, { sessionId: '0123abcd', sequence: 2, task: 't' }, report.readFileRequests);
    assert.deepEqual(content.requested, [{ path: 'notes.txt', content: { note: 'a FIFO (named pipe), not a regular file; not read' } }]);
  });
});

describe('hostile answers: large files and long names', () => {
  it('CREATE_FILE replaces a file over 2 GiB; EDIT_FILE of a 700 MB file names the size limit, not the encoding', { timeout: 60_000 }, async () => {
    // Sparse files: their size costs no disk.
    const sparse = async (name: string, size: number) => {
      const handle = await open(path.join(ws, name), 'w');
      await handle.truncate(size);
      await handle.close();
    };
    await sparse('huge.bin', 3 * 1024 ** 3);
    await sparse('big.log', 700 * 1024 ** 2);
    const report = await executeAnswer(workspace, ['[CREATE_FILE path="huge.bin"]\nsmall now\n[/CREATE_FILE]', '[EDIT_FILE path="big.log" start_line="1" end_line="1"]\nx\n[/EDIT_FILE]', '[READ_FILE path="big.log"]', '[DELETE_FILE path="big.log"]'].join('\n'));
    assert.deepEqual(
      report.results.map((r) => formatResult(r)),
      [
        "[OK] CREATE_FILE: Created 'huge.bin'",
        `[FAILED] EDIT_FILE: File 'big.log' is 700 MB, larger than the ${MAX_TEXT_BYTES / 1024 ** 2} MB EDIT_FILE edits; replace it with CREATE_FILE or change it with RUN_COMMAND`,
        "[OK] READ_FILE: Queued 'big.log' for next outbox",
        "[OK] DELETE_FILE: Deleted 'big.log'",
      ],
    );
    assert.equal(await readFile(path.join(ws, 'huge.bin'), 'utf8'), 'small now');
  });

  it('the outbox shows the head of a file too large to read whole', { timeout: 60_000 }, async () => {
    const handle = await open(path.join(ws, 'big.txt'), 'w');
    await handle.write('first line\n');
    await handle.truncate(100 * 1024 ** 2);
    await handle.close();
    await writeFile(path.join(ws, 'text.txt'), 'x'.repeat(300_000));
    const content = await collectOutbox(workspace, { sessionId: '0123abcd', sequence: 2, task: 't' }, ['big.txt', 'text.txt']);
    const [big, text] = content.requested;
    assert.deepEqual(big, { path: 'big.txt', content: { note: `binary file, ${100 * 1024 ** 2} bytes, not shown` } });
    assert.ok(text && 'text' in text.content && text.content.text.endsWith('\n... (file truncated: 100000 more characters not shown)'));
  });

  it('names of 255 bytes, the most a file system allows, are created, edited and deleted', async () => {
    const name = `${'n'.repeat(251)}.txt`;
    const deep = `${'d'.repeat(255)}/${'é'.repeat(125)}.md`;
    const report = await executeAnswer(workspace, [`[CREATE_FILE path="${name}"]\na\n[/CREATE_FILE]`, `[EDIT_FILE path="${name}" start_line="1" end_line="1"]\nb\n[/EDIT_FILE]`, `[CREATE_FILE path="${deep}"]\nc\n[/CREATE_FILE]`, `[DELETE_FILE path="${deep}"]`].join('\n'));
    assert.deepEqual(
      report.results.map((r) => r.success),
      [true, true, true, true],
      report.results.map((r) => r.summary).join('\n'),
    );
    assert.equal(await readFile(path.join(ws, name), 'utf8'), 'b');
    assert.deepEqual(await readdir(path.join(ws, 'd'.repeat(255))), []);
  });
});

describe('hostile answers: links already in the workspace', () => {
  it('a link to a folder outside, made before the answer, is still refused for every file block', async () => {
    await symlink(outside, path.join(ws, 'out'));
    await writeFile(path.join(outside, 'secret.txt'), 'secret\n');
    const report = await executeAnswer(
      workspace,
      ['[CREATE_FILE path="out/new.txt"]\nx\n[/CREATE_FILE]', '[EDIT_FILE path="out/secret.txt" start_line="1" end_line="1"]\nx\n[/EDIT_FILE]', '[DELETE_FILE path="out/secret.txt"]', '[READ_FILE path="out/secret.txt"]'].join('\n'),
    );
    assert.ok(report.results.every((r) => r.summary.startsWith('REJECTED:')));
    assert.deepEqual(await readdir(outside), ['secret.txt']);
    assert.equal(await readFile(path.join(outside, 'secret.txt'), 'utf8'), 'secret\n');
    assert.equal(await realpath(path.join(ws, 'out')), outside);
  });
});
