import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseInline, parseMarkdown, splitTableRow, type Block, type Inline } from '../../../src/webviews/cues/markdown.ts';
import { safeHref } from '../../../src/contracts/cuesPage.ts';

/** The text a tree shows. */
function plainText(blocks: readonly Block[]): string {
  const inline = (nodes: readonly Inline[]): string =>
    nodes.map((n) => (n.t === 'text' || n.t === 'code' ? n.text : n.t === 'br' ? '\n' : inline(n.children))).join('');
  return blocks
    .map((b) => (b.t === 'pre' ? b.text : b.t === 'list' ? b.items.map(inline).join('\n') : b.t === 'table' ? [b.header, ...b.rows].map((r) => r.map(inline).join(' | ')).join('\n') : inline(b.children)))
    .join('\n\n');
}

/** Every inline node of a tree, flattened. */
function inlines(blocks: readonly Block[]): Inline[] {
  const out: Inline[] = [];
  const walk = (nodes: readonly Inline[]) => {
    for (const n of nodes) {
      out.push(n);
      if ('children' in n) walk(n.children);
    }
  };
  for (const b of blocks) {
    if (b.t === 'list') b.items.forEach(walk);
    else if (b.t === 'table') [b.header, ...b.rows].forEach((r) => r.forEach(walk));
    else if (b.t !== 'pre') walk(b.children);
  }
  return out;
}

describe('the Cues panel Markdown subset', () => {
  test('HTML in a prompt stays text, character for character', () => {
    const prompt = 'Hi <img src=x onerror="alert(1)"> and <script>alert(2)</script>\n<iframe srcdoc="<b>x</b>"></iframe>';
    const blocks = parseMarkdown(prompt);
    assert.equal(plainText(blocks), prompt);
    // Only text and line breaks: nothing that could become an element other than <br>.
    assert.deepEqual(new Set(inlines(blocks).map((n) => n.t)), new Set(['text', 'br']));
  });

  test('links are kept only for absolute http(s) URLs', () => {
    assert.equal(safeHref('https://example.com/a?b=1'), 'https://example.com/a?b=1');
    assert.equal(safeHref('http://example.com'), 'http://example.com/');
    for (const bad of ['javascript:alert(1)', 'JAVASCRIPT:alert(1)', 'data:text/html,<script>', 'vbscript:x', 'file:///etc/passwd', '/relative', 'command:workbench.action.quit', 'https://']) {
      assert.equal(safeHref(bad), undefined, bad);
    }
    const [bad] = parseMarkdown('[click](javascript:alert(1))');
    assert.deepEqual(bad, { t: 'p', children: [{ t: 'text', text: '[click](javascript:alert(1))' }] });
    const [good] = parseMarkdown('see [the docs](https://example.com/docs) and https://example.org/x.');
    assert.ok(good?.t === 'p');
    const links = inlines([good]).filter((n) => n.t === 'link');
    assert.deepEqual(links.map((l) => l.t === 'link' && l.href), ['https://example.com/docs', 'https://example.org/x']);
  });

  test('emphasis, code, headings, lists, quotes and fenced code', () => {
    const blocks = parseMarkdown('# Plan\n\nDo **this** and *that*, run `npm test`.\n\n- one\n- two\n\n1. first\n2. second\n\n> quoted\n\n```\n<b>raw</b>\n```');
    assert.deepEqual(blocks.map((b) => b.t), ['h', 'p', 'list', 'list', 'quote', 'pre']);
    assert.deepEqual(blocks[0], { t: 'h', level: 1, children: [{ t: 'text', text: 'Plan' }] });
    assert.deepEqual(parseInline('Do **this** and *that*'), [
      { t: 'text', text: 'Do ' },
      { t: 'strong', children: [{ t: 'text', text: 'this' }] },
      { t: 'text', text: ' and ' },
      { t: 'em', children: [{ t: 'text', text: 'that' }] },
    ]);
    assert.deepEqual(blocks[3], { t: 'list', ordered: true, items: [[{ t: 'text', text: 'first' }], [{ t: 'text', text: 'second' }]] });
    assert.deepEqual(blocks[5], { t: 'pre', text: '<b>raw</b>' });
  });

  test('snake_case and stray markers are not emphasis; an unclosed fence keeps its text', () => {
    assert.deepEqual(parseInline('use snake_case_names here'), [{ t: 'text', text: 'use snake_case_names here' }]);
    assert.deepEqual(parseInline('2 * 3 = 6'), [{ t: 'text', text: '2 * 3 = 6' }]);
    assert.deepEqual(parseMarkdown('```\nnever closed'), [{ t: 'pre', text: 'never closed' }]);
  });

  test('a hostile, deeply nested or huge prompt parses without throwing', () => {
    const nested = '**'.repeat(200) + 'x' + '**'.repeat(200);
    assert.ok(plainText(parseMarkdown(nested)).includes('x'));
    const big = 'word '.repeat(200_000);
    assert.equal(parseMarkdown(big).length, 1);
  });
});

describe('Markdown tables in prompts', () => {
  test('a pipe table becomes header, rows and alignment; cells are inline Markdown, HTML stays text', () => {
    const blocks = parseMarkdown('Compare:\n\n| Option | Cost | Risk |\n|:--|--:|:-:|\n| **A** | 10 | `a|b` |\n| <b>B</b> | 20 |\n\nPick one.');
    assert.deepEqual(blocks.map((b) => b.t), ['p', 'table', 'p']);
    const table = blocks[1]!;
    assert.ok(table.t === 'table');
    assert.deepEqual(table.align, ['left', 'right', 'center']);
    assert.deepEqual(table.header.map((c) => c.map((n) => (n.t === 'text' ? n.text : n.t))), [['Option'], ['Cost'], ['Risk']]);
    assert.equal(table.rows.length, 2);
    assert.equal(table.rows[0]![0]![0]!.t, 'strong');
    assert.deepEqual(table.rows[0]![2], [{ t: 'code', text: 'a|b' }], 'a pipe inside code is not a cell boundary');
    assert.deepEqual(table.rows[1], [[{ t: 'text', text: '<b>B</b>' }], [{ t: 'text', text: '20' }], []], 'short rows are padded; HTML stays text');
  });

  test('escaped pipes, no outer pipes; a lone pipe line or a bad delimiter is no table', () => {
    assert.deepEqual(splitTableRow('a \\| b | c'), ['a | b', 'c']);
    assert.deepEqual(splitTableRow('| a | b |'), ['a', 'b']);
    assert.equal(parseMarkdown('a | b\n--- | ---\n1 | 2')[0]?.t, 'table');
    assert.equal(parseMarkdown('x | y\nno delimiter')[0]?.t, 'p');
    assert.equal(parseMarkdown('| a | b |\n| --- |')[0]?.t, 'p', 'the delimiter row must match the header');
  });

  test('a huge table stays text instead of building every cell', () => {
    const row = `|${' x |'.repeat(100)}`;
    const src = [row, `|${' --- |'.repeat(100)}`, ...Array.from({ length: 100 }, () => row)].join('\n');
    assert.equal(parseMarkdown(src).some((b) => b.t === 'table'), false);
  });
});
