import assert from 'node:assert/strict';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { isIgnored, parseGitignore } from '../../../src/blocks/core/gitignore.ts';
import { listWorkspace } from '../../../src/blocks/core/workspace.ts';
import { tempDir } from '../../support/blocks/helpers.ts';

describe('gitignore rules', () => {
  const rules = parseGitignore(
    ['# comment', '*.log', '!keep.log', 'build/', '/top.txt', 'docs/**/*.tmp', 'a?c', '[xy].bin', '\\#literal', 'trailing   ', ''].join('\n'),
  );
  const cases: Array<[string, boolean, boolean]> = [
    ['x.log', false, true],
    ['deep/y.log', false, true],
    ['keep.log', false, false],
    ['build', true, true],
    ['build', false, false],
    ['src/build', true, true],
    ['top.txt', false, true],
    ['src/top.txt', false, false],
    ['docs/a/b/c.tmp', false, true],
    ['docs/c.tmp', false, true],
    ['other/c.tmp', false, false],
    ['abc', false, true],
    ['abbc', false, false],
    ['x.bin', false, true],
    ['z.bin', false, false],
    ['#literal', false, true],
    ['trailing', false, true],
  ];
  for (const [file, folder, expected] of cases) {
    it(`${file}${folder ? '/' : ''} is ${expected ? '' : 'not '}ignored`, () => {
      assert.equal(isIgnored(rules, file, folder), expected);
    });
  }

  it('applies a nested .gitignore below its own folder only', () => {
    const nested = parseGitignore('*.gen\n', 'pkg');
    assert.equal(isIgnored(nested, 'pkg/a.gen', false), true);
    assert.equal(isIgnored(nested, 'a.gen', false), false);
  });
});

describe('workspace listing', () => {
  it('is sorted, with sizes, without .git, node_modules, ignored files and linked folders', async () => {
    const { dir, remove: cleanup } = tempDir();
    try {
      const put = async (file: string, text = 'x') => {
        await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
        await writeFile(path.join(dir, file), text);
      };
      await put('.gitignore', 'dist/\n*.log\n!important.log\n');
      await put('b.txt', 'hello');
      await put('a.txt');
      await put('a/z.txt');
      await put('a.b/c.txt');
      await put('.git/HEAD');
      await put('node_modules/x/index.js');
      await put('src/node_modules/y.js');
      await put('dist/out.js');
      await put('debug.log');
      await put('important.log', '12');
      await put('pkg/.gitignore', 'generated.ts\n');
      await put('pkg/generated.ts');
      await put('pkg/real.ts');
      await symlink(path.join(dir, 'pkg'), path.join(dir, 'linked-folder'));
      await symlink('b.txt', path.join(dir, 'linked-file.txt'));
      const files = await listWorkspace(dir);
      assert.deepEqual(files, [
        { path: '.gitignore', size: 27 },
        { path: 'a.b/c.txt', size: 1 },
        { path: 'a.txt', size: 1 },
        { path: 'a/z.txt', size: 1 },
        { path: 'b.txt', size: 5 },
        { path: 'important.log', size: 2 },
        { path: 'linked-file.txt', size: 5 },
        { path: 'pkg/.gitignore', size: 13 },
        { path: 'pkg/real.ts', size: 1 },
      ]);
    } finally {
      await cleanup();
    }
  });
});
