// Each block type is described once, in BLOCK_TYPES (src/blocks/core/syntax.ts): the parser's
// sets, the language server's docs, snippets, lenses and outline, and the grammar are read from
// it. Held here: the table is consistent with itself, the committed grammar is what the table
// makes (syntaxes/generate.ts), and the parser's sets follow the table.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { repoRoot } from '../../../scripts/lib/paths.ts';
import { changesWorkspace } from '../../../src/blocks/core/blockKey.ts';
import { parseAnswer } from '../../../src/blocks/core/parser.ts';
import { BLOCK_TYPES, COMMAND_TYPES, REQUIRED_ATTRIBUTES, SELF_CLOSING, TRIMMED_BODY, type CommandType } from '../../../src/blocks/core/syntax.ts';

const grammar = JSON.parse(readFileSync(path.join(repoRoot, 'syntaxes', 'codingagent.tmLanguage.json'), 'utf8')) as { repository: Record<string, { begin?: string; match?: string }> };

/** The command names a grammar pattern's first alternation names. */
function named(pattern: string | undefined): string[] {
  const group = /\((?:[A-Z_]+\|)*[A-Z_]+\)/.exec(pattern ?? '');
  assert.ok(group, `no alternation of names in ${pattern}`);
  return group[0].slice(1, -1).split('|');
}

describe('block types, described once', () => {
  test('every type has a row, and each row is consistent: a snippet that writes its name and required attributes, a doc, an action that fits', () => {
    assert.deepEqual(Object.keys(BLOCK_TYPES), [...COMMAND_TYPES]);
    for (const type of COMMAND_TYPES) {
      const row = BLOCK_TYPES[type];
      assert.ok(row.snippet.startsWith(`${type}`), `${type}: its snippet starts with its name`);
      for (const name of row.required) assert.match(row.snippet, new RegExp(`\\b${name}="`), `${type}: its snippet writes ${name}`);
      assert.equal(row.snippet.includes(`[/${type}]`), !row.selfClosing, `${type}: a closing tag exactly when not self-closing`);
      assert.ok(row.doc.length > 10, `${type}: a doc`);
      assert.equal(row.body === 'none', row.selfClosing, `${type}: no body exactly when self-closing`);
      // What an Apply or a Run does changes the workspace; opening or showing does not.
      assert.equal(row.action === 'apply' || row.action === 'run', row.changesWorkspace, `${type}: action ${row.action} against changesWorkspace`);
    }
  });

  test('the committed grammar names every type, and embeds each body as the table says', () => {
    assert.deepEqual(named(grammar.repository.tag?.match), [...COMMAND_TYPES]);
    assert.deepEqual(named(grammar.repository['closing-tag']?.match), [...COMMAND_TYPES]);
    const where = (...kinds: string[]) => COMMAND_TYPES.filter((t) => kinds.includes(BLOCK_TYPES[t].body));
    assert.deepEqual(named(grammar.repository['body-run']?.begin), where('shell'));
    assert.deepEqual(named(grammar.repository['body-plain']?.begin), where('file', 'text'));
    assert.deepEqual(named(grammar.repository['body-python']?.begin), where('file'));
  });

  test("the parser's rules follow the table: self-closing, trimmed bodies, required attributes", () => {
    for (const type of COMMAND_TYPES) {
      assert.equal(SELF_CLOSING.has(type), BLOCK_TYPES[type].selfClosing);
      assert.equal(TRIMMED_BODY.has(type), BLOCK_TYPES[type].trimmedBody);
      assert.deepEqual(REQUIRED_ATTRIBUTES[type], BLOCK_TYPES[type].required);
    }
    // A block of each type written as its row says parses, with no error.
    const values: Record<string, string> = { path: 'a.txt', start_line: '1', end_line: '1' };
    for (const type of COMMAND_TYPES) {
      const row = BLOCK_TYPES[type];
      const attributes = row.required.map((name) => ` ${name}="${values[name]}"`).join('');
      const text = row.selfClosing ? `[${type}${attributes}]\n` : `[${type}${attributes}]\n  body  \n[/${type}]\n`;
      const parsed = parseAnswer(text);
      assert.deepEqual(parsed.errors, [], `${type}: ${JSON.stringify(parsed.errors)}`);
      const command = parsed.commands[0]!;
      assert.equal(command.type, type as CommandType);
      assert.equal(changesWorkspace(command), row.changesWorkspace);
      if ('body' in command && command.body) assert.equal(command.body.text, row.trimmedBody ? 'body' : '  body  ');
    }
  });
});
