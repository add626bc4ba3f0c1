// task.toml and task.yaml are read by smol-toml and yaml; what matters to users is that real task
// files load, and that a broken one is refused with the file and the line (or the field) named.
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { loadTask, TaskError } from '../../../src/runner/core/tasks/task.ts';
import { parseTaskToml, parseTaskYaml } from '../../../src/runner/core/tasks/taskFormats.ts';
import { tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir();
after(() => tmp.remove());

const writeTask = (name: string, files: Record<string, string>) => tmp.writeTask(name, files);

/** Asserts that loading rejects with a TaskError naming `file` and matching `detail`. */
async function rejectsNaming(dir: string, file: string, detail: RegExp): Promise<void> {
  await assert.rejects(loadTask(dir), (error: unknown) => {
    assert.ok(error instanceof TaskError, `expected a TaskError, got ${String(error)}`);
    assert.equal(error.file, path.join(dir, file));
    assert.ok(error.message.startsWith(`${path.join(dir, file)}: `), error.message);
    assert.match(error.message, detail);
    return true;
  });
}

describe('task.toml', () => {
  it('reads the TOML that task files use (tables, dotted keys, multi-line strings, inline tables)', () => {
    const value = parseTaskToml(`
version = "1.0" # trailing comment
[metadata]
tags = ["a", 'b',
  "c",]
author.name = "x"
[verifier]
timeout_sec = 1_200.5
[environment]
limits = { cpus = 2, memory = "4G" }
note = """
line one
line "two\\""""
`);
    // smol-toml builds tables without a prototype (no __proto__ tricks); compare the plain data.
    assert.deepEqual(structuredClone(value), {
      version: '1.0',
      metadata: { tags: ['a', 'b', 'c'], author: { name: 'x' } },
      verifier: { timeout_sec: 1200.5 },
      environment: { limits: { cpus: 2, memory: '4G' }, note: 'line one\nline "two"' },
    });
  });

  it('refuses a broken task.toml naming the file, the line and the column', async () => {
    const base = { 'instruction.md': 'Do it.', 'tests/test.sh': 'exit 0' };
    await rejectsNaming(writeTask('bare-words', { ...base, 'task.toml': 'version = "1"\n[agent]\ntimeout_sec = soon\n' }), 'task.toml', /: line 3, column \d+: /);
    await rejectsNaming(writeTask('twice', { ...base, 'task.toml': '[agent]\ntimeout_sec = 1\ntimeout_sec = 2\n' }), 'task.toml', /: line 3, column \d+: .*(redefine|defined)/);
    await rejectsNaming(writeTask('open-table', { ...base, 'task.toml': '[agent\n' }), 'task.toml', /: line 1, column \d+: /);
  });

  it('refuses a well-formed task.toml whose field has the wrong type, naming the field', async () => {
    const dir = writeTask('wrong-type', { 'instruction.md': 'Do it.', 'tests/test.sh': 'exit 0', 'task.toml': '[verifier]\ntimeout_sec = "soon"\n' });
    await rejectsNaming(dir, 'task.toml', /field 'verifier\.timeout_sec'/);
  });
});

describe('task.yaml', () => {
  it('reads block scalars, sequences and nested mappings as the older layout writes them', () => {
    const value = parseTaskYaml(`# task
instruction: |-
  Line one
    indented

  after blank
tags:
  - x
  - "y z"
flow: [a, 'b c', 3]
max_agent_timeout_sec: 360.0
empty:
`);
    assert.deepEqual(value, {
      instruction: 'Line one\n  indented\n\nafter blank',
      tags: ['x', 'y z'],
      flow: ['a', 'b c', 3],
      max_agent_timeout_sec: 360,
      empty: null,
    });
  });

  it('refuses a broken task.yaml naming the file, the line and the column', async () => {
    const runTests = { 'run-tests.sh': 'exit 0' };
    await rejectsNaming(writeTask('bad-indent', { ...runTests, 'task.yaml': 'instruction: hi\n  difficulty: easy\n' }), 'task.yaml', /: line \d+, column \d+: /);
    await rejectsNaming(writeTask('yaml-twice', { ...runTests, 'task.yaml': 'instruction: a\ninstruction: b\n' }), 'task.yaml', /: line 2, column 1: .*unique/);
    await rejectsNaming(writeTask('open-quote', { ...runTests, 'task.yaml': 'difficulty: easy\ninstruction: "open\n' }), 'task.yaml', /: line \d+, column \d+: .*quote/);
  });

  it('refuses a task.yaml without an instruction, naming the field', async () => {
    await rejectsNaming(writeTask('no-instruction', { 'run-tests.sh': 'exit 0', 'task.yaml': 'difficulty: easy\n' }), 'task.yaml', /field 'instruction'/);
  });
});
