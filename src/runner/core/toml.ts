// The part of TOML that task.toml files use: tables, dotted table names, strings (basic,
// literal, multi-line), numbers, booleans, arrays and inline tables. Errors carry the line.

export class TomlError extends Error {
  override name = 'TomlError';
  readonly line: number;
  constructor(message: string, line: number) {
    super(`line ${line}: ${message}`);
    this.line = line;
  }
}

type Table = Record<string, unknown>;

export function parseToml(text: string): Table {
  const root: Table = {};
  let current = root;
  const p = new Cursor(text.replace(/\r\n/g, '\n'));
  while (p.skipBlankAndComments()) {
    if (p.peek() === '[') {
      const arrayOfTables = p.text.startsWith('[[', p.pos);
      p.pos += arrayOfTables ? 2 : 1;
      const keys = p.readKeyPath();
      p.expect(arrayOfTables ? ']]' : ']');
      current = arrayOfTables ? appendTable(root, keys, p) : openTable(root, keys, p);
    } else {
      const keys = p.readKeyPath();
      p.skipSpaces();
      p.expect('=');
      p.skipSpaces();
      const value = p.readValue();
      assign(current, keys, value, p);
    }
    p.endOfLine();
  }
  return root;
}

function openTable(root: Table, keys: string[], p: Cursor): Table {
  let table = root;
  for (const key of keys) {
    const next = table[key];
    if (next === undefined) table = table[key] = {};
    else if (isTable(next)) table = next;
    else if (Array.isArray(next) && isTable(next.at(-1))) table = next.at(-1) as Table;
    else throw new TomlError(`'${keys.join('.')}' is already a value, not a table`, p.line);
  }
  return table;
}

function appendTable(root: Table, keys: string[], p: Cursor): Table {
  const parent = openTable(root, keys.slice(0, -1), p);
  const last = keys.at(-1)!;
  const list = (parent[last] ??= []) as unknown;
  if (!Array.isArray(list)) throw new TomlError(`'${keys.join('.')}' is not an array of tables`, p.line);
  const table: Table = {};
  list.push(table);
  return table;
}

function assign(table: Table, keys: string[], value: unknown, p: Cursor): void {
  const target = openTable(table, keys.slice(0, -1), p);
  const last = keys.at(-1)!;
  if (last in target) throw new TomlError(`'${keys.join('.')}' is defined twice`, p.line);
  target[last] = value;
}

function isTable(value: unknown): value is Table {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const ESCAPES: Record<string, string> = { b: '\b', t: '\t', n: '\n', f: '\f', r: '\r', '"': '"', '\\': '\\' };

class Cursor {
  pos = 0;
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }

  get line(): number {
    let n = 1;
    for (let i = 0; i < this.pos && i < this.text.length; i++) if (this.text[i] === '\n') n++;
    return n;
  }

  peek(): string | undefined {
    return this.text[this.pos];
  }

  fail(message: string): never {
    throw new TomlError(message, this.line);
  }

  skipSpaces(): void {
    while (this.peek() === ' ' || this.peek() === '\t') this.pos++;
  }

  skipComment(): void {
    if (this.peek() === '#') while (this.pos < this.text.length && this.peek() !== '\n') this.pos++;
  }

  /** Skips whitespace, newlines and comments; false at the end of the text. */
  skipBlankAndComments(): boolean {
    for (;;) {
      this.skipSpaces();
      this.skipComment();
      if (this.peek() === '\n') this.pos++;
      else return this.pos < this.text.length;
    }
  }

  endOfLine(): void {
    this.skipSpaces();
    this.skipComment();
    if (this.pos < this.text.length && this.peek() !== '\n') this.fail(`unexpected '${this.peek()}' after the value`);
  }

  expect(token: string): void {
    if (!this.text.startsWith(token, this.pos)) this.fail(`expected '${token}'`);
    this.pos += token.length;
  }

  readKeyPath(): string[] {
    const keys: string[] = [];
    for (;;) {
      this.skipSpaces();
      const c = this.peek();
      if (c === '"') keys.push(this.readBasicString());
      else if (c === "'") keys.push(this.readLiteralString());
      else {
        const match = /^[A-Za-z0-9_-]+/.exec(this.text.slice(this.pos, this.pos + 256));
        if (!match) this.fail('expected a key');
        keys.push(match[0]);
        this.pos += match[0].length;
      }
      this.skipSpaces();
      if (this.peek() !== '.') return keys;
      this.pos++;
    }
  }

  readValue(): unknown {
    const c = this.peek();
    if (this.text.startsWith('"""', this.pos)) return this.readMultiline('"""');
    if (this.text.startsWith("'''", this.pos)) return this.readMultiline("'''");
    if (c === '"') return this.readBasicString();
    if (c === "'") return this.readLiteralString();
    if (c === '[') return this.readArray();
    if (c === '{') return this.readInlineTable();
    const match = /^[^\s,\]}#]+/.exec(this.text.slice(this.pos, this.pos + 256));
    if (!match) this.fail('expected a value');
    const word = match[0];
    this.pos += word.length;
    if (word === 'true') return true;
    if (word === 'false') return false;
    const number = word.replace(/_/g, '');
    if (/^[+-]?(\d+(\.\d+)?([eE][+-]?\d+)?|inf|nan)$/.test(number)) return Number(number.replace('inf', 'Infinity').replace('nan', 'NaN'));
    if (/^0x[0-9a-fA-F]+$/.test(number)) return Number.parseInt(number.slice(2), 16);
    if (/^\d{4}-\d{2}-\d{2}/.test(word)) return word;
    this.fail(`'${word}' is not a TOML value (strings need quotes)`);
  }

  readBasicString(): string {
    this.pos++;
    let out = '';
    for (;;) {
      const c = this.text[this.pos++];
      if (c === undefined || c === '\n') {
        this.pos--;
        this.fail('unterminated string');
      }
      if (c === '"') return out;
      out += c === '\\' ? this.readEscape() : c;
    }
  }

  readEscape(): string {
    const e = this.text[this.pos++] ?? '';
    if (e in ESCAPES) return ESCAPES[e]!;
    if (e === 'u' || e === 'U') {
      const len = e === 'u' ? 4 : 8;
      const hex = this.text.slice(this.pos, this.pos + len);
      if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== len) this.fail('bad unicode escape');
      this.pos += len;
      return String.fromCodePoint(Number.parseInt(hex, 16));
    }
    this.fail(`unknown escape '\\${e}'`);
  }

  readLiteralString(): string {
    const end = this.text.indexOf("'", this.pos + 1);
    const newline = this.text.indexOf('\n', this.pos + 1);
    if (end < 0 || (newline >= 0 && newline < end)) this.fail('unterminated string');
    const value = this.text.slice(this.pos + 1, end);
    this.pos = end + 1;
    return value;
  }

  readMultiline(quote: string): string {
    this.pos += 3;
    if (this.peek() === '\n') this.pos++;
    let out = '';
    for (;;) {
      if (this.pos >= this.text.length) this.fail('unterminated multi-line string');
      if (this.text.startsWith(quote, this.pos)) {
        // Up to two quotes right before the closing three belong to the string.
        let extra = 0;
        while (extra < 2 && this.text[this.pos + 3 + extra] === quote[0]) extra++;
        out += quote[0]!.repeat(extra);
        this.pos += 3 + extra;
        return out;
      }
      const c = this.text[this.pos++]!;
      if (quote === '"""' && c === '\\') {
        if (/^[ \t]*\n/.test(this.text.slice(this.pos, this.pos + 64))) {
          while (/\s/.test(this.peek() ?? '')) this.pos++;
        } else out += this.readEscape();
      } else out += c;
    }
  }

  readArray(): unknown[] {
    this.pos++;
    const items: unknown[] = [];
    for (;;) {
      this.skipBlankAndComments();
      if (this.peek() === ']') {
        this.pos++;
        return items;
      }
      items.push(this.readValue());
      this.skipBlankAndComments();
      if (this.peek() === ',') this.pos++;
      else if (this.peek() !== ']') this.fail("expected ',' or ']' in the array");
    }
  }

  readInlineTable(): Table {
    this.pos++;
    const table: Table = {};
    this.skipSpaces();
    if (this.peek() === '}') {
      this.pos++;
      return table;
    }
    for (;;) {
      const keys = this.readKeyPath();
      this.skipSpaces();
      this.expect('=');
      this.skipSpaces();
      assign(table, keys, this.readValue(), this);
      this.skipSpaces();
      if (this.peek() === '}') {
        this.pos++;
        return table;
      }
      this.expect(',');
    }
  }
}
