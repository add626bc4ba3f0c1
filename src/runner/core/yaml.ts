// The part of YAML that task.yaml files use: block mappings and sequences, block scalars
// (| and >, with chomping), quoted and plain scalars, flow sequences of scalars, comments.
// Anchors, tags and multi-document streams are refused with the line that uses them.

export class YamlError extends Error {
  override name = 'YamlError';
  readonly line: number;
  constructor(message: string, line: number) {
    super(`line ${line}: ${message}`);
    this.line = line;
  }
}

interface Line {
  number: number;
  indent: number;
  text: string;
}

export function parseYaml(source: string): unknown {
  const lines: Line[] = source
    .replace(/\r\n/g, '\n')
    .split('\n')
    .map((raw, i) => ({ number: i + 1, indent: raw.length - raw.trimStart().length, text: raw }));
  const state = { lines, i: 0 };
  skipBlank(state);
  if (state.i >= lines.length) return null;
  if (lines[state.i]!.text.trim() === '---') {
    state.i++;
    skipBlank(state);
  }
  const value = parseBlock(state, lines[state.i]?.indent ?? 0);
  skipBlank(state);
  if (state.i < lines.length) throw new YamlError('unexpected content (check the indentation)', lines[state.i]!.number);
  return value;
}

interface State {
  lines: Line[];
  i: number;
}

function isBlank(line: Line): boolean {
  const t = line.text.trim();
  return t === '' || t.startsWith('#');
}

function skipBlank(state: State): void {
  while (state.i < state.lines.length && isBlank(state.lines[state.i]!)) state.i++;
}

function parseBlock(state: State, indent: number): unknown {
  skipBlank(state);
  const first = state.lines[state.i];
  if (!first || first.indent < indent) return null;
  const body = first.text.slice(first.indent);
  return body === '-' || body.startsWith('- ') ? parseSequence(state, first.indent) : parseMapping(state, first.indent);
}

function parseSequence(state: State, indent: number): unknown[] {
  const items: unknown[] = [];
  for (skipBlank(state); state.i < state.lines.length; skipBlank(state)) {
    const line = state.lines[state.i]!;
    const body = line.text.slice(line.indent);
    if (line.indent !== indent || !(body === '-' || body.startsWith('- '))) break;
    const rest = body.slice(1).trimStart();
    if (rest === '') {
      state.i++;
      items.push(parseBlock(state, indent + 1));
    } else if (keyOf(rest) !== undefined) {
      // "- key: value" opens a mapping whose keys line up with "key".
      const childIndent = line.indent + (body.length - rest.length);
      state.lines[state.i] = { ...line, indent: childIndent, text: ' '.repeat(childIndent) + rest };
      items.push(parseMapping(state, childIndent));
    } else {
      state.i++;
      items.push(parseScalar(stripComment(rest), line.number));
    }
  }
  return items;
}

function keyOf(body: string): { key: string; rest: string } | undefined {
  const match = /^("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#'"{[][^:#]*?)\s*:(?:\s+(.*)|$)/.exec(body);
  if (!match) return undefined;
  const rawKey = match[1]!;
  const key = rawKey.startsWith('"') || rawKey.startsWith("'") ? String(parseScalar(rawKey, 0)) : rawKey.trim();
  return { key, rest: match[2] ?? '' };
}

function parseMapping(state: State, indent: number): Record<string, unknown> {
  const map: Record<string, unknown> = {};
  for (skipBlank(state); state.i < state.lines.length; skipBlank(state)) {
    const line = state.lines[state.i]!;
    if (line.indent < indent) break;
    if (line.indent > indent) throw new YamlError('unexpected indentation', line.number);
    const body = line.text.slice(line.indent);
    if (body === '-' || body.startsWith('- ')) break;
    const entry = keyOf(body);
    if (!entry) throw new YamlError(`expected 'key: value', found '${body.slice(0, 40)}'`, line.number);
    if (entry.key in map) throw new YamlError(`'${entry.key}' is defined twice`, line.number);
    state.i++;
    const rest = stripComment(entry.rest);
    if (/^[|>][-+]?$/.test(rest)) map[entry.key] = parseBlockScalar(state, indent, rest);
    else if (rest === '') {
      skipBlank(state);
      const next = state.lines[state.i];
      const nextBody = next?.text.slice(next.indent) ?? '';
      const sequenceHere = next !== undefined && next.indent === indent && (nextBody === '-' || nextBody.startsWith('- '));
      map[entry.key] = next && (next.indent > indent || sequenceHere) ? parseBlock(state, next.indent) : null;
    } else map[entry.key] = parseScalar(rest, line.number);
  }
  return map;
}

function parseBlockScalar(state: State, parentIndent: number, header: string): string {
  const folded = header.startsWith('>');
  const chomp = header.endsWith('-') ? 'strip' : header.endsWith('+') ? 'keep' : 'clip';
  const content: string[] = [];
  let contentIndent = -1;
  while (state.i < state.lines.length) {
    const line = state.lines[state.i]!;
    if (line.text.trim() === '') {
      content.push('');
      state.i++;
      continue;
    }
    if (line.indent <= parentIndent) break;
    if (contentIndent < 0) contentIndent = line.indent;
    if (line.indent < contentIndent) break;
    content.push(line.text.slice(contentIndent));
    state.i++;
  }
  let trailing = 0;
  while (content.length > 0 && content.at(-1) === '') {
    content.pop();
    trailing++;
  }
  let text = folded ? foldLines(content) : content.join('\n');
  if (content.length === 0) return '';
  if (chomp === 'clip') text += '\n';
  if (chomp === 'keep') text += '\n'.repeat(trailing + 1);
  return text;
}

function foldLines(lines: string[]): string {
  let out = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (i === 0) out = line;
    else if (line === '' || line.startsWith(' ')) out += '\n' + line;
    else out += lines[i - 1] === '' || lines[i - 1]!.startsWith(' ') ? line : ' ' + line;
  }
  return out;
}

function stripComment(text: string): string {
  if (text.startsWith('"') || text.startsWith("'")) return text.trim();
  const at = text.search(/(^|\s)#/);
  return (at < 0 ? text : text.slice(0, at)).trim();
}

function parseScalar(text: string, line: number): unknown {
  const t = text.trim();
  if (t.startsWith('"')) {
    if (!/^"(?:[^"\\]|\\.)*"$/.test(t)) throw new YamlError('unterminated double-quoted string', line);
    try {
      return JSON.parse(t.replace(/\\'/g, "'")) as string;
    } catch {
      throw new YamlError('bad escape in a double-quoted string', line);
    }
  }
  if (t.startsWith("'")) {
    if (!/^'(?:[^']|'')*'$/.test(t)) throw new YamlError('unterminated single-quoted string', line);
    return t.slice(1, -1).replace(/''/g, "'");
  }
  if (t.startsWith('[')) {
    if (!t.endsWith(']')) throw new YamlError('unterminated flow sequence', line);
    const inner = t.slice(1, -1).trim();
    if (inner === '') return [];
    return (inner.match(/"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^,]+/g) ?? []).map((item) => parseScalar(item, line));
  }
  if (t.startsWith('{')) {
    if (t === '{}') return {};
    throw new YamlError('flow mappings ({...}) are not supported; use an indented mapping', line);
  }
  if (/^[&*!]/.test(t) || t === '---') throw new YamlError(`'${t.slice(0, 20)}' (anchors, aliases, tags, documents) is not supported`, line);
  if (t === '' || t === '~' || t === 'null' || t === 'Null' || t === 'NULL') return null;
  if (/^(true|True|TRUE)$/.test(t)) return true;
  if (/^(false|False|FALSE)$/.test(t)) return false;
  if (/^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/.test(t)) return Number(t);
  return t;
}
