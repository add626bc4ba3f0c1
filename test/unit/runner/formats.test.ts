import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseToml, TomlError } from '../../../src/runner/core/toml.ts';
import { parseYaml, YamlError } from '../../../src/runner/core/yaml.ts';

describe('TOML subset (task.toml)', () => {
  it('reads tables, dotted keys, strings, numbers, booleans, arrays and inline tables', () => {
    const value = parseToml(`
version = "1.0" # trailing comment
[metadata]
tags = ["a", 'b',
  "c",] # multi-line array
author.name = "x"
[verifier]
timeout_sec = 1_200.5
enabled = true
[environment]
limits = { cpus = 2, memory = "4G" }
note = """
line one
line "two\\""""
raw = '''C:\\no\\escape'''
escaped = "tab\\tquote\\" \\u00e9"
[[steps]]
n = 1
[[steps]]
n = -2
`);
    assert.deepEqual(value, {
      version: '1.0',
      metadata: { tags: ['a', 'b', 'c'], author: { name: 'x' } },
      verifier: { timeout_sec: 1200.5, enabled: true },
      environment: { limits: { cpus: 2, memory: '4G' }, note: 'line one\nline "two"', raw: 'C:\\no\\escape', escaped: 'tab\tquote" é' },
      steps: [{ n: 1 }, { n: -2 }],
    });
  });

  it('names the line of a mistake', () => {
    assert.throws(() => parseToml('a = 1\n[t]\nb = bare words\n'), (e: unknown) => e instanceof TomlError && e.line === 3 && /strings need quotes/.test(e.message));
    assert.throws(() => parseToml('a = 1\na = 2\n'), /line 2: 'a' is defined twice/);
    assert.throws(() => parseToml('s = "open\n'), /line 1: unterminated string/);
  });
});

describe('YAML subset (task.yaml)', () => {
  it('reads block scalars with chomping, sequences, nested mappings and scalars', () => {
    const value = parseYaml(`# task
instruction: |-
  Line one
    indented

  after blank
folded: >
  a
  b

  c
tags:
  - x
  - "y z"
flow: [a, 'b c', 3]
nested:
  key: value # comment
  list:
  - k: 1
    j: two
max_agent_timeout_sec: 360.0
flag: false
empty:
quoted: 'it''s'
`);
    assert.deepEqual(value, {
      instruction: 'Line one\n  indented\n\nafter blank',
      folded: 'a b\nc\n',
      tags: ['x', 'y z'],
      flow: ['a', 'b c', 3],
      nested: { key: 'value', list: [{ k: 1, j: 'two' }] },
      max_agent_timeout_sec: 360,
      flag: false,
      empty: null,
      quoted: "it's",
    });
  });

  it('names the line of a mistake and refuses what it does not support', () => {
    assert.throws(() => parseYaml('a: 1\n  b: 2\n'), (e: unknown) => e instanceof YamlError && e.line === 2);
    assert.throws(() => parseYaml('a: &anchor 1\n'), /line 1: .*anchors/);
    assert.throws(() => parseYaml('a: 1\na: 2\n'), /line 2: 'a' is defined twice/);
    assert.throws(() => parseYaml('a: "open\n'), /line 1: unterminated/);
  });
});
