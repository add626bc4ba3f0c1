import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAnswer } from '../../../src/blocks/core/parser.ts';
import { inOrder, type Command } from '../../../src/blocks/core/syntax.ts';
import { fixture, slice } from '../../support/blocks/helpers.ts';

function only(text: string): Command {
  const result = parseAnswer(text);
  assert.deepEqual(result.errors, [], 'no parse errors expected');
  assert.equal(result.commands.length, 1);
  return result.commands[0]!;
}

function bodyOf(command: Command): string {
  assert.ok('body' in command, `${command.type} has no body`);
  return command.body.text;
}

function messages(text: string): string[] {
  return parseAnswer(text).errors.map((e) => e.message);
}

describe('parser: the protocol', () => {
  it('reads every command of a realistic answer, in order, ignoring the prose', async () => {
    const result = parseAnswer(await fixture('every-command.txt'));
    assert.deepEqual(result.errors, []);
    assert.deepEqual(
      result.commands.map((c) => c.type),
      ['CREATE_FILE', 'CREATE_FILE', 'EDIT_FILE', 'READ_FILE', 'RUN_COMMAND', 'DELETE_FILE', 'MESSAGE', 'DONE'],
    );
    const [create, , edit, , run, , message, done] = result.commands;
    assert.equal(bodyOf(create!), 'def greet(name):\n    return "Hello, " + name\n\nif __name__ == "__main__":\n    print(greet("world"))\n');
    assert.ok(edit?.type === 'EDIT_FILE' && edit.startLine === 2 && edit.endLine === 2 && edit.path === 'src/hello.py');
    assert.equal(bodyOf(run!), 'python3 src/hello.py || echo "no python"');
    assert.equal(bodyOf(message!), 'The greeting now uses an f-string.');
    assert.equal(bodyOf(done!), 'Created src/hello.py and fixed the greeting.');
  });

  it('keeps bodies verbatim: indentation, inner blank lines, no final newline unless a blank line precedes the closing tag', () => {
    assert.equal(bodyOf(only('[CREATE_FILE path="a"]\n  x\n\n\ty\n[/CREATE_FILE]')), '  x\n\n\ty');
    const trailing = only('[CREATE_FILE path="a"]\nx\n\n[/CREATE_FILE]');
    assert.equal(bodyOf(trailing), 'x\n');
    assert.ok('body' in trailing && trailing.body.lineCount === 2);
    const empty = only('[CREATE_FILE path="a"]\n[/CREATE_FILE]');
    assert.ok('body' in empty && empty.body.text === '' && empty.body.lineCount === 0);
    const oneBlank = only('[EDIT_FILE path="a" start_line="1" end_line="1"]\n\n[/EDIT_FILE]');
    assert.ok('body' in oneBlank && oneBlank.body.text === '' && oneBlank.body.lineCount === 1);
  });

  it('trims RUN_COMMAND, MESSAGE and DONE bodies', () => {
    assert.equal(bodyOf(only('[RUN_COMMAND]\n\n   npm test  \n\n[/RUN_COMMAND]')), 'npm test');
    assert.equal(bodyOf(only('[MESSAGE]\n  hi\n  there\n[/MESSAGE]')), 'hi\n  there');
  });

  it('turns CRLF and lone CR line endings into \\n in bodies', async () => {
    const result = parseAnswer(await fixture('crlf-answer.txt'));
    assert.deepEqual(result.errors, []);
    assert.equal(bodyOf(result.commands[0]!), 'line one\n  indented\n');
    assert.equal(bodyOf(only('[CREATE_FILE path="a"]\ra\rb\r[/CREATE_FILE]')), 'a\nb');
    assert.equal(bodyOf(only('[CREATE_FILE path="a"]\r\na\r\nb\r\n[/CREATE_FILE]\r\n')), 'a\nb');
  });

  it('handles a BOM, tabs and trailing spaces around tags', () => {
    const command = only('\uFEFF\t[CREATE_FILE\tpath="a.txt"]  \t\n\tbody\n  [/CREATE_FILE]\t \n');
    assert.equal(command.type, 'CREATE_FILE');
    assert.equal(bodyOf(command), '\tbody');
  });

  it('accepts one-line forms', () => {
    assert.equal(bodyOf(only('[DONE]All good[/DONE]')), 'All good');
    assert.equal(bodyOf(only('  [RUN_COMMAND] ls -la [/RUN_COMMAND]  ')), 'ls -la');
    assert.equal(bodyOf(only('[MESSAGE]hi[/MESSAGE] and some prose')), 'hi');
    assert.equal(bodyOf(only('[CREATE_FILE path="a"]x[/CREATE_FILE]')), 'x');
    assert.equal(bodyOf(only('[DONE][/DONE]')), '');
  });

  it('takes text right after an opening tag as the first body line, and a closing tag ending the last line', () => {
    assert.equal(bodyOf(only('[DONE]Finished\nthe task[/DONE]')), 'Finished\nthe task');
    assert.equal(bodyOf(only('[CREATE_FILE path="a"]\nx\ny [/CREATE_FILE]')), 'x\ny');
  });

  it('reads attributes: keys in any case, the last duplicate wins, \\" is a quote, single quotes, spaces in values', () => {
    const edit = only(`[EDIT_FILE PATH="my file.txt" Start_Line="3" end_line='4' start_line="1"]\nx\n[/EDIT_FILE]`);
    assert.ok(edit.type === 'EDIT_FILE');
    assert.equal(edit.path, 'my file.txt');
    assert.equal(edit.startLine, 1);
    assert.equal(edit.endLine, 4);
    const quoted = only('[READ_FILE path="say \\"hi\\".txt"]');
    assert.ok(quoted.type === 'READ_FILE' && quoted.path === 'say "hi".txt');
    const single = only("[READ_FILE path='it\\'s.txt']");
    assert.ok(single.type === 'READ_FILE' && single.path === "it's.txt");
    const backslash = only('[READ_FILE path="dir\\\\"]');
    assert.ok(backslash.type === 'READ_FILE' && backslash.path === 'dir\\');
    const bracket = only('[READ_FILE path="a]b.txt"]');
    assert.ok(bracket.type === 'READ_FILE' && bracket.path === 'a]b.txt');
  });

  it('does not nest: tags inside a body are body text', () => {
    const create = only('[CREATE_FILE path="doc.txt"]\n[RUN_COMMAND]\nrm -rf /\n[/RUN_COMMAND]\n[/CREATE_FILE]');
    assert.equal(bodyOf(create), '[RUN_COMMAND]\nrm -rf /\n[/RUN_COMMAND]');
  });

  it('ignores tags that do not start a line, and bracketed prose', () => {
    const result = parseAnswer('Use `[DONE]` when finished. See [1] and [the docs](x).\n- [ ] item\n[NOTE] fine\n');
    assert.deepEqual(result, { commands: [], errors: [] });
  });

  it('attaches a closing tag written after DELETE_FILE or READ_FILE instead of calling it stray', () => {
    const result = parseAnswer('[DELETE_FILE path="a"][/DELETE_FILE]\n[READ_FILE path="b"]\n\n[/READ_FILE]\n');
    assert.deepEqual(result.errors, []);
    assert.equal(result.commands.length, 2);
    assert.ok(result.commands.every((c) => c.closeTag !== undefined));
  });
});

describe('parser: Markdown fences', () => {
  it('parses an answer wrapped in fences and drops fences around code bodies, but keeps them for Markdown files', async () => {
    const result = parseAnswer(await fixture('fenced-answer.txt'));
    assert.deepEqual(result.errors, []);
    const [app, run, readme] = result.commands;
    assert.equal(bodyOf(app!), 'import sys\nprint(sys.argv)');
    assert.ok(app?.type === 'CREATE_FILE' && app.body.removedFences.length === 2);
    assert.equal(bodyOf(run!), 'python3 app.py one');
    assert.equal(bodyOf(readme!), '```python\nprint("kept: the README shows code")\n```');
  });

  it('drops the closing fence of a fence opened just above the tag, and a lone opening fence', () => {
    assert.equal(bodyOf(only('```python\n[CREATE_FILE path="a.py"]\nx = 1\n```\n[/CREATE_FILE]')), 'x = 1');
    assert.equal(bodyOf(only('[CREATE_FILE path="a.py"]\n```python\nx = 1\n[/CREATE_FILE]\n```')), 'x = 1');
  });

  it('keeps a fence line that is not around the body, and MESSAGE fences', () => {
    assert.equal(bodyOf(only('[CREATE_FILE path="a.py"]\nx = 1\n```\ny\n[/CREATE_FILE]')), 'x = 1\n```\ny');
    assert.equal(bodyOf(only('[MESSAGE]\n```\ncode\n```\n[/MESSAGE]')), '```\ncode\n```');
  });
});

describe('parser: errors', () => {
  it('closes a lookalike block only at its own name, whether its closing tags are searched by name or indexed', () => {
    const pair = '[DONA]\n[/DONB]\n[RUN_COMMAND]\nx\n[/RUN_COMMAND]\n[/DONA]\n[DONB]\n[/DONA]\n[/DONB]\n';
    // Past two names, every closing tag is indexed at once (see standaloneCloserAfter).
    const more = '[DONC]\n[/DONC]\n[DOND]\n[/DONF]\n[/DOND]\n';
    for (const [text, expected] of [
      [pair, [[0, 5], [6, 8]]],
      [more + pair, [[0, 1], [2, 4], [5, 10], [11, 13]]],
    ] as const) {
      const result = parseAnswer(`${text}[READ_FILE path="a"]\n`);
      assert.deepEqual(
        result.errors.map((e) => [e.code, e.range.start.line, e.blockRange?.end.line]),
        expected.map(([start, end]) => ['unknown-command', start, end]),
      );
      assert.deepEqual(
        result.commands.map((c) => c.type),
        ['READ_FILE'],
      );
    }
  });

  it('names the command, what is wrong and where', async () => {
    const result = parseAnswer(await fixture('errors.txt'));
    assert.deepEqual(
      result.errors.map((e) => [e.range.start.line + 1, e.message]),
      [
        [2, 'CREATE_FILE missing path attribute'],
        [5, "EDIT_FILE start_line must be an integer, got 'two'"],
        [5, "EDIT_FILE end_line must be 1 or more (lines count from 1), got '-3'"],
        [8, 'EDIT_FILE end_line 2 is before start_line 5'],
        [11, 'DELETE_FILE path is empty'],
        [12, 'Unknown command CREAT_FILE; did you mean CREATE_FILE?'],
        [15, 'Stray closing tag [/RUN_COMMAND] with no [RUN_COMMAND] block open'],
        [16, 'RUN_COMMAND missing closing tag [/RUN_COMMAND]; it and everything after it were not executed'],
      ],
    );
    assert.deepEqual(result.commands, [], 'nothing in a broken, unknown or unclosed block is a command');
    const unknown = result.errors.find((e) => e.code === 'unknown-command')!;
    assert.equal(unknown.suggestion, 'CREATE_FILE');
  });

  it('reports missing EDIT_FILE attributes, all or some', () => {
    assert.deepEqual(messages('[EDIT_FILE]\nx\n[/EDIT_FILE]'), ['EDIT_FILE missing required attributes (path, start_line, end_line)']);
    assert.deepEqual(messages('[EDIT_FILE path="a" start_line="1"]\nx\n[/EDIT_FILE]'), [
      'EDIT_FILE missing required attribute end_line (needs path, start_line, end_line)',
    ]);
  });

  it('reports an unclosed block with its path and executes nothing after it', () => {
    const result = parseAnswer('[CREATE_FILE path="a.txt"]\nx\n[DONE]ok[/DONE]\n[RUN_COMMAND]ls[/RUN_COMMAND]');
    assert.deepEqual(result.commands, []);
    assert.deepEqual(messages('[CREATE_FILE path="a.txt"]\nx'), [
      "CREATE_FILE for 'a.txt' missing closing tag [/CREATE_FILE]; it and everything after it were not executed",
    ]);
    assert.equal(result.errors[0]!.blockRange!.end.line, 3);
  });

  it('reports malformed tags: unquoted value, missing closing quote, missing ], a value-less attribute', () => {
    assert.deepEqual(messages('[READ_FILE path=a.txt]'), ['READ_FILE attribute path must have its value in quotes: path="a.txt"']);
    assert.deepEqual(messages('[READ_FILE path="a.txt]'), ['READ_FILE attribute path has no closing quote']);
    assert.deepEqual(messages('[READ_FILE]'), ['READ_FILE missing path attribute']);
    assert.deepEqual(messages('[READ_FILE path="a.txt"'), ["READ_FILE opening tag has no closing ']'"]);
    assert.deepEqual(messages('[READ_FILE path="a" force]'), ['READ_FILE attribute force has no value; write force="…"']);
  });

  it('suggests the command for look-alike, synonym and lower-case tags, and leaves other bracketed words alone', () => {
    const suggestion = (text: string) => parseAnswer(text).errors[0]?.suggestion;
    assert.equal(suggestion('[WRITE_FILE path="a"]\nx\n[/WRITE_FILE]'), 'CREATE_FILE');
    assert.equal(suggestion('[EDITFILE path="a"]'), 'EDIT_FILE');
    assert.equal(suggestion('[create_file path="a"]'), 'CREATE_FILE');
    assert.equal(suggestion('[DONE_]'), 'DONE');
    assert.equal(suggestion('[/CREATEFILE]'), 'CREATE_FILE');
    assert.deepEqual(parseAnswer('[WARNING] careful\n[TODO] later\n[INFO]\n[NOTE]').errors, []);
  });

  it('an unknown block swallows its body, up to its own closing tag', () => {
    const result = parseAnswer('[WRITE_FILE path="a"]\n[RUN_COMMAND]rm x[/RUN_COMMAND]\n[/WRITE_FILE]\n[DONE]ok[/DONE]');
    assert.deepEqual(result.commands.map((c) => c.type), ['DONE']);
    assert.equal(result.errors.length, 1);
  });

  it('lists commands and errors in execution order', () => {
    const items = inOrder(parseAnswer('[DONE]a[/DONE]\n[/MESSAGE]\n[MESSAGE]b[/MESSAGE]\n[READ_FILE]'));
    assert.deepEqual(
      items.map((i) => ('command' in i ? i.command.type : i.error.code)),
      ['DONE', 'stray-closing-tag', 'MESSAGE', 'missing-attribute'],
    );
  });
});

describe('parser: exact ranges', () => {
  it('gives the opening tag, each attribute name and value, the body and the closing tag', () => {
    const text = 'Intro\n  [EDIT_FILE path="src/a.ts" start_line="3" end_line=\'4\']\n  one\n  two\n  [/EDIT_FILE]  \n';
    const edit = only(text);
    assert.equal(slice(text, edit.openTag.range), '[EDIT_FILE path="src/a.ts" start_line="3" end_line=\'4\']');
    assert.equal(slice(text, edit.openTag.nameRange), 'EDIT_FILE');
    assert.deepEqual(
      edit.attributes.map((a) => [slice(text, a.range), slice(text, a.nameRange), slice(text, a.valueRange)]),
      [
        ['path="src/a.ts"', 'path', 'src/a.ts'],
        ['start_line="3"', 'start_line', '3'],
        ["end_line='4'", 'end_line', '4'],
      ],
    );
    assert.ok('body' in edit);
    assert.equal(slice(text, edit.body.range), '  one\n  two');
    assert.equal(slice(text, edit.closeTag!.range), '[/EDIT_FILE]');
    assert.equal(slice(text, edit.closeTag!.nameRange), 'EDIT_FILE');
    assert.deepEqual(edit.range.start, { line: 1, character: 2 });
    assert.deepEqual(edit.range.end, { line: 4, character: 14 });
  });

  it('counts positions the way the editor does with CRLF, lone CR, a BOM and surrogate pairs', () => {
    const text = '\uFEFF😀 x\r\n[READ_FILE path="é😀.txt"]\r[DONE]\r\nbye\r\n[/DONE]';
    const result = parseAnswer(text);
    assert.deepEqual(result.errors, []);
    const [read, done] = result.commands;
    assert.deepEqual(read!.range.start, { line: 1, character: 0 });
    assert.equal(slice(text, read!.attributes[0]!.valueRange), 'é😀.txt');
    assert.ok(done?.type === 'DONE');
    assert.deepEqual(done.openTag.range.start, { line: 2, character: 0 });
    assert.equal(slice(text, done.body.range), 'bye');
    assert.deepEqual(done.closeTag!.range, { start: { line: 4, character: 0 }, end: { line: 4, character: 7 } });
  });

  it('points each error at its spot', () => {
    const text = '[EDIT_FILE path="a" start_line="x" end_line="2"]\n[/EDIT_FILE]\n[CRATE_FILE path="b"]\n  [/DONE]';
    const [number, unknown, stray] = parseAnswer(text).errors;
    assert.equal(slice(text, number!.range), 'x');
    assert.equal(slice(text, number!.blockRange!), '[EDIT_FILE path="a" start_line="x" end_line="2"]\n[/EDIT_FILE]');
    assert.equal(slice(text, unknown!.range), 'CRATE_FILE');
    assert.equal(slice(text, stray!.range), '[/DONE]');
  });

  it('marks removed fences and the body between them', () => {
    const text = '[CREATE_FILE path="a.js"]\n```js\nlet a;\n```\n[/CREATE_FILE]';
    const create = only(text);
    assert.ok('body' in create);
    assert.deepEqual(create.body.removedFences.map((r) => slice(text, r)), ['```js', '```']);
    assert.equal(slice(text, create.body.range), 'let a;');
  });
});
