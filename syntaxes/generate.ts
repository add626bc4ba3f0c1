// Writes codingagent.tmLanguage.json and the grammar's embedded languages in package.json
// (run: node syntaxes/generate.ts).
// The grammar is generated because one body rule per embedded language differs only in the
// path pattern it recognises and the grammar it includes.
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BLOCK_TYPES, COMMAND_TYPES, type BlockTypeInfo } from '../src/blocks/core/syntax.ts';

interface Embedded {
  /** Suffix of `meta.embedded.block.<id>`; also the VS Code language id. */
  id: string;
  scope: string;
  /** Regex (no anchors) for the end of the path value. */
  path: string;
}

const ext = (...names: string[]) => `[^"'\\n]*\\.(?:${names.join('|')})`;

export const EMBEDDED: Embedded[] = [
  { id: 'typescriptreact', scope: 'source.tsx', path: ext('tsx') },
  { id: 'typescript', scope: 'source.ts', path: ext('ts', 'mts', 'cts') },
  { id: 'javascriptreact', scope: 'source.js.jsx', path: ext('jsx') },
  { id: 'javascript', scope: 'source.js', path: ext('js', 'mjs', 'cjs') },
  { id: 'json', scope: 'source.json', path: ext('json', 'jsonc') },
  { id: 'python', scope: 'source.python', path: ext('py', 'pyi', 'pyw') },
  { id: 'markdown', scope: 'text.html.markdown', path: ext('md', 'markdown', 'mdx') },
  { id: 'shellscript', scope: 'source.shell', path: ext('sh', 'bash', 'zsh') },
  { id: 'yaml', scope: 'source.yaml', path: ext('ya?ml') },
  { id: 'html', scope: 'text.html.basic', path: ext('html?') },
  { id: 'css', scope: 'source.css', path: ext('css') },
  { id: 'rust', scope: 'source.rust', path: ext('rs') },
  { id: 'go', scope: 'source.go', path: ext('go') },
  { id: 'java', scope: 'source.java', path: ext('java') },
  { id: 'cpp', scope: 'source.cpp', path: ext('cpp', 'cc', 'cxx', 'hpp', 'hh', 'hxx') },
  { id: 'c', scope: 'source.c', path: ext('c', 'h') },
  { id: 'csharp', scope: 'source.cs', path: ext('cs') },
  { id: 'toml', scope: 'source.toml', path: ext('toml') },
  { id: 'dockerfile', scope: 'source.dockerfile', path: `(?:[^"'\\n]*/)?(?:Dockerfile|Containerfile)(?:\\.[^"'/\\n]*)?|${ext('dockerfile')}` },
  { id: 'makefile', scope: 'source.makefile', path: `(?:[^"'\\n]*/)?(?:GNUmakefile|[Mm]akefile)|${ext('mk')}` },
];

const COMMANDS = COMMAND_TYPES.join('|');
/** The block types whose body holds `kind`, as an alternation. */
const bodies = (...kinds: Array<BlockTypeInfo['body']>): string => COMMAND_TYPES.filter((type) => kinds.includes(BLOCK_TYPES[type].body)).join('|');

/** The opening tag of a block whose body starts on the next line: `[NAME attrs]` alone on its line. */
function openingTag(names: string, lookahead = ''): string {
  return `^\\s*(\\[)(${names})\\b${lookahead}((?:[^\\]"'\\n]|"(?:[^"\\\\\\n]|\\\\.)*"|'(?:[^'\\\\\\n]|\\\\.)*')*)(\\])\\s*$`;
}

const tagCaptures = {
  '1': { name: 'punctuation.definition.tag.begin.codingagent' },
  '2': { name: 'entity.name.tag.command.codingagent' },
  '3': { patterns: [{ include: '#attributes' }] },
  '4': { name: 'punctuation.definition.tag.end.codingagent' },
};

/** A body lasts while no line is exactly its closing tag: nothing inside can swallow that line. */
function body(names: string, contentName: string | undefined, include: string | undefined, lookahead = '') {
  return {
    begin: openingTag(names, lookahead),
    beginCaptures: tagCaptures,
    while: '^(?!\\s*\\[/\\2\\]\\s*$)',
    name: 'meta.block.codingagent',
    ...(contentName ? { contentName } : {}),
    patterns: include ? [{ include }] : [],
  };
}

function pathLookahead(pathEnd: string): string {
  return `(?=[^\\]\\n]*\\b[Pp][Aa][Tt][Hh]\\s*=\\s*["'](?:${pathEnd})["'])`;
}

const grammar = {
  $schema: 'https://raw.githubusercontent.com/martinring/tmlanguage/master/tmlanguage.json',
  name: 'CodingAgent',
  scopeName: 'source.codingagent',
  patterns: [
    { include: '#section' },
    { include: '#result' },
    ...EMBEDDED.map((e) => ({ include: `#body-${e.id}` })),
    { include: '#body-run' },
    { include: '#body-plain' },
    { include: '#tag' },
    { include: '#closing-tag' },
  ],
  repository: {
    section: {
      match: '^(===) (HEADER|PROTOCOL|CONTEXT|PROMPT) (===)\\s*$',
      name: 'markup.heading.section.codingagent',
      captures: {
        '1': { name: 'punctuation.definition.heading.codingagent' },
        '2': { name: 'entity.name.section.codingagent' },
        '3': { name: 'punctuation.definition.heading.codingagent' },
      },
    },
    result: {
      patterns: [
        {
          match: `^\\s*(\\[OK\\])\\s+(${COMMANDS}|PARSE_ERROR)(:)`,
          captures: { '1': { name: 'markup.inserted.result.ok.codingagent' }, '2': { name: 'entity.name.tag.command.codingagent' }, '3': { name: 'punctuation.separator.codingagent' } },
        },
        {
          match: `^\\s*(\\[FAILED\\])\\s+(${COMMANDS}|PARSE_ERROR)(:)`,
          captures: { '1': { name: 'markup.deleted.result.failed.codingagent' }, '2': { name: 'entity.name.tag.command.codingagent' }, '3': { name: 'punctuation.separator.codingagent' } },
        },
        { match: "\\bREJECTED(?=:)", name: 'invalid.illegal.rejected.codingagent' },
      ],
    },
    ...Object.fromEntries(
      EMBEDDED.map((e) => [`body-${e.id}`, body(bodies('file'), `meta.embedded.block.${e.id}`, e.scope, pathLookahead(e.path))]),
    ),
    'body-run': body(bodies('shell'), 'meta.embedded.block.shellscript', 'source.shell'),
    'body-plain': body(bodies('file', 'text'), 'meta.body.plain.codingagent', undefined),
    tag: {
      match: `(\\[)(${COMMANDS})\\b((?:[^\\]"'\\n]|"(?:[^"\\\\\\n]|\\\\.)*"|'(?:[^'\\\\\\n]|\\\\.)*')*)(\\])`,
      captures: tagCaptures,
    },
    'closing-tag': {
      match: `(\\[/)(${COMMANDS})(\\])`,
      captures: {
        '1': { name: 'punctuation.definition.tag.begin.codingagent' },
        '2': { name: 'entity.name.tag.command.codingagent' },
        '3': { name: 'punctuation.definition.tag.end.codingagent' },
      },
    },
    attributes: {
      patterns: [
        {
          match: `\\b([Pp][Aa][Tt][Hh])\\s*(=)\\s*(?:(")((?:[^"\\\\]|\\\\.)*)(")|(')((?:[^'\\\\]|\\\\.)*)('))`,
          captures: {
            '1': { name: 'entity.other.attribute-name.codingagent' },
            '2': { name: 'punctuation.separator.key-value.codingagent' },
            '3': { name: 'string.quoted.double.codingagent punctuation.definition.string.begin.codingagent' },
            '4': { name: 'string.quoted.double.codingagent string.other.path.codingagent' },
            '5': { name: 'string.quoted.double.codingagent punctuation.definition.string.end.codingagent' },
            '6': { name: 'string.quoted.single.codingagent punctuation.definition.string.begin.codingagent' },
            '7': { name: 'string.quoted.single.codingagent string.other.path.codingagent' },
            '8': { name: 'string.quoted.single.codingagent punctuation.definition.string.end.codingagent' },
          },
        },
        {
          match: `\\b([A-Za-z_][\\w-]*)\\s*(=)\\s*(?:(")((?:[^"\\\\]|\\\\.)*)(")|(')((?:[^'\\\\]|\\\\.)*)('))`,
          captures: {
            '1': { name: 'entity.other.attribute-name.codingagent' },
            '2': { name: 'punctuation.separator.key-value.codingagent' },
            '3': { name: 'string.quoted.double.codingagent punctuation.definition.string.begin.codingagent' },
            '4': { name: 'string.quoted.double.codingagent', patterns: [{ match: '\\d+', name: 'constant.numeric.line-number.codingagent' }] },
            '5': { name: 'string.quoted.double.codingagent punctuation.definition.string.end.codingagent' },
            '6': { name: 'string.quoted.single.codingagent punctuation.definition.string.begin.codingagent' },
            '7': { name: 'string.quoted.single.codingagent', patterns: [{ match: '\\d+', name: 'constant.numeric.line-number.codingagent' }] },
            '8': { name: 'string.quoted.single.codingagent punctuation.definition.string.end.codingagent' },
          },
        },
        { match: '\\S+', name: 'invalid.illegal.attribute.codingagent' },
      ],
    },
  },
};

const here = path.dirname(fileURLToPath(import.meta.url));
writeFileSync(path.join(here, 'codingagent.tmLanguage.json'), `${JSON.stringify(grammar, null, 2)}\n`);
const embeddedLanguages = Object.fromEntries(EMBEDDED.map((e) => [`meta.embedded.block.${e.id}`, e.id]));
embeddedLanguages['meta.embedded.block.shellscript'] = 'shellscript';
// The embedded languages live where VS Code reads them: the grammar's entry in package.json.
const manifestPath = path.join(here, '..', 'package.json');
const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { contributes: { grammars: { scopeName: string; embeddedLanguages?: Record<string, string> }[] } };
const entry = manifest.contributes.grammars.find((g) => g.scopeName === 'source.codingagent');
if (!entry) throw new Error('package.json has no grammar for source.codingagent');
entry.embeddedLanguages = embeddedLanguages;
writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
console.log(`wrote ${Object.keys(embeddedLanguages).length} embedded languages into package.json`);
