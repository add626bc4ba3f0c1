// Every way out of the workspace, with real files and real symbolic links in temporary folders.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { lstat, mkdir, readdir, readFile, readlink, symlink, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { executeAnswer } from '../../../src/blocks/core/executor.ts';
import { checkPathText, openWorkspace, resolveInWorkspace, type Workspace } from '../../../src/blocks/core/sandbox.ts';
import { tempDir } from '../../support/blocks/helpers.ts';

let base: string;
let cleanup: () => void;
let ws: string;
let outside: string;
let workspace: Workspace;

beforeEach(async () => {
  ({ dir: base, remove: cleanup } = tempDir());
  ws = path.join(base, 'ws');
  outside = path.join(base, 'outside');
  await mkdir(ws);
  await mkdir(outside);
  await writeFile(path.join(outside, 'secret.txt'), 'secret\n');
  workspace = await openWorkspace(ws);
});

afterEach(() => cleanup());

async function apply(answer: string) {
  return (await executeAnswer(workspace, answer)).results;
}

/** Everything under `outside`, with contents: it must never change. */
async function outsideState(): Promise<string> {
  const names = (await readdir(outside)).sort();
  const parts = await Promise.all(names.map(async (n) => `${n}:${await readFile(path.join(outside, n), 'utf8').catch(() => '?')}`));
  return parts.join('|');
}

describe('sandbox: paths refused from their text alone', () => {
  const escapes = [
    '/etc/passwd',
    `${'/'}tmp/x.txt`,
    '../x.txt',
    'a/../../x.txt',
    'a/..',
    'a/../b.txt',
    '..\\..\\x.txt',
    'C:\\Windows\\x.txt',
    'c:x.txt',
    '\\\\server\\share\\x.txt',
    '//server/share/x.txt',
    'a\0b.txt',
  ];
  for (const given of escapes) {
    it(`rejects ${JSON.stringify(given)} for every path command, and writes nothing`, async () => {
      const before = await outsideState();
      const quoted = given.replace(/\\/g, '\\\\');
      const results = await apply(
        `[CREATE_FILE path="${quoted}"]\nx\n[/CREATE_FILE]\n[EDIT_FILE path="${quoted}" start_line="1" end_line="1"]\nx\n[/EDIT_FILE]\n[DELETE_FILE path="${quoted}"]\n[READ_FILE path="${quoted}"]`,
      );
      assert.equal(results.length, 4);
      for (const r of results) {
        assert.equal(r.success, false);
        assert.equal(r.summary, `REJECTED: Path '${given}' is outside workspace`);
      }
      assert.deepEqual(await readdir(ws), []);
      assert.equal(await outsideState(), before);
    });
  }

  it('accepts ordinary relative paths and normalises them', () => {
    assert.deepEqual(checkPathText('./src//a.ts'), { ok: true, segments: ['src', 'a.ts'] });
    assert.deepEqual(checkPathText('src\\b.ts'), { ok: true, segments: ['src', 'b.ts'] });
    assert.deepEqual(checkPathText('  '), { ok: false, reason: 'empty' });
  });
});

describe('sandbox: symbolic links', () => {
  it('refuses to write, edit or read through a link to a folder outside', async () => {
    await symlink(outside, path.join(ws, 'out'));
    const before = await outsideState();
    const results = await apply(
      '[CREATE_FILE path="out/new.txt"]\nx\n[/CREATE_FILE]\n[CREATE_FILE path="out/secret.txt"]\npwned\n[/CREATE_FILE]\n[EDIT_FILE path="out/secret.txt" start_line="1" end_line="1"]\npwned\n[/EDIT_FILE]\n[READ_FILE path="out/secret.txt"]\n[DELETE_FILE path="out/secret.txt"]',
    );
    assert.deepEqual(
      results.map((r) => r.summary),
      [
        "REJECTED: Path 'out/new.txt' is outside workspace",
        "REJECTED: Path 'out/secret.txt' is outside workspace",
        "REJECTED: Path 'out/secret.txt' is outside workspace",
        "REJECTED: Path 'out/secret.txt' is outside workspace",
        "REJECTED: Path 'out/secret.txt' is outside workspace",
      ],
    );
    assert.equal(await outsideState(), before);
  });

  it('refuses to write through a link to a file outside; deleting removes only the link', async () => {
    await symlink(path.join(outside, 'secret.txt'), path.join(ws, 'link.txt'));
    const before = await outsideState();
    const results = await apply('[CREATE_FILE path="link.txt"]\npwned\n[/CREATE_FILE]\n[READ_FILE path="link.txt"]\n[DELETE_FILE path="link.txt"]');
    assert.equal(results[0]!.summary, "REJECTED: Path 'link.txt' is outside workspace");
    assert.equal(results[1]!.summary, "REJECTED: Path 'link.txt' is outside workspace");
    assert.deepEqual(results[2], { commandType: 'DELETE_FILE', summary: "Deleted 'link.txt'", success: true });
    assert.equal(existsSync(path.join(ws, 'link.txt')), false);
    assert.equal(await outsideState(), before);
  });

  it('refuses a dangling link that points outside, and creates nothing there', async () => {
    await symlink(path.join(outside, 'planted.txt'), path.join(ws, 'dangling.txt'));
    await symlink(path.join(outside, 'nowhere', 'deep'), path.join(ws, 'dangling-dir'));
    const results = await apply('[CREATE_FILE path="dangling.txt"]\nx\n[/CREATE_FILE]\n[CREATE_FILE path="dangling-dir/a/b.txt"]\nx\n[/CREATE_FILE]');
    assert.ok(results.every((r) => r.summary.startsWith('REJECTED:')));
    assert.equal(existsSync(path.join(outside, 'planted.txt')), false);
    assert.equal(existsSync(path.join(outside, 'nowhere')), false);
  });

  it('refuses a link whose target climbs out through .. and a link loop', async () => {
    await mkdir(path.join(ws, 'sub'));
    await symlink('../../outside', path.join(ws, 'sub', 'up'));
    await symlink('loop', path.join(ws, 'loop'));
    const results = await apply('[CREATE_FILE path="sub/up/x.txt"]\nx\n[/CREATE_FILE]\n[CREATE_FILE path="loop"]\nx\n[/CREATE_FILE]');
    assert.equal(results[0]!.summary, "REJECTED: Path 'sub/up/x.txt' is outside workspace");
    assert.equal(results[1]!.success, false);
    assert.equal(existsSync(path.join(outside, 'x.txt')), false);
  });

  it('writes through links that stay inside, to the real file, keeping the link', async () => {
    await mkdir(path.join(ws, 'real'));
    await writeFile(path.join(ws, 'real', 'a.txt'), 'one\ntwo\n');
    await symlink('real', path.join(ws, 'alias'));
    await symlink('real/a.txt', path.join(ws, 'a-link.txt'));
    await symlink('real/missing.txt', path.join(ws, 'to-missing.txt'));
    const results = await apply(
      '[EDIT_FILE path="a-link.txt" start_line="2" end_line="2"]\nTWO\n[/EDIT_FILE]\n[CREATE_FILE path="alias/b.txt"]\nb\n[/CREATE_FILE]\n[CREATE_FILE path="to-missing.txt"]\nnow here\n[/CREATE_FILE]',
    );
    assert.ok(results.every((r) => r.success), JSON.stringify(results));
    assert.equal(await readFile(path.join(ws, 'real', 'a.txt'), 'utf8'), 'one\nTWO\n');
    assert.equal(await readFile(path.join(ws, 'real', 'b.txt'), 'utf8'), 'b');
    assert.equal(await readFile(path.join(ws, 'real', 'missing.txt'), 'utf8'), 'now here');
    assert.ok((await lstat(path.join(ws, 'a-link.txt'))).isSymbolicLink());
    assert.equal(await readlink(path.join(ws, 'a-link.txt')), 'real/a.txt');
  });

  it('works when the workspace folder itself is reached through a link', async () => {
    const viaLink = path.join(base, 'ws-link');
    await symlink(ws, viaLink);
    const linked = await openWorkspace(viaLink);
    const inside = await resolveInWorkspace(linked, 'src/a.ts');
    assert.ok(inside.ok && inside.path.real === path.join(ws, 'src', 'a.ts'));
    const escape = await resolveInWorkspace(linked, '../outside/secret.txt');
    assert.equal(escape.ok, false);
  });

  it('says so when a path goes through a file', async () => {
    await writeFile(path.join(ws, 'file.txt'), 'x');
    const [result] = await apply('[CREATE_FILE path="file.txt/inner.txt"]\nx\n[/CREATE_FILE]');
    assert.equal(result!.success, false);
    assert.equal(result!.summary, "Path 'file.txt/inner.txt' goes through a file as if it were a folder");
  });
});
