// `belay blocks` and `belay session` as a user runs them: the built dist/cli.js in a real child process.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fixture, fixtures, repoRoot, tempDir } from '../../support/blocks/helpers.ts';
import { ensureBuilt } from '../../support/build.ts';
import { runCli, type CliRun } from '../../support/cli-process.ts';
import { detectSandbox } from '../../../src/shared/commandSandbox.ts';

const cli = path.join(repoRoot, 'dist', 'cli.js');
const sandboxWorks = process.platform === 'linux' && (await detectSandbox()).ok;
let dir: string;
let cleanup: () => void;

before(async () => {
  ensureBuilt();
  ({ dir, remove: cleanup } = tempDir('belay-cli-'));
});
after(() => cleanup());

function belay(args: string[], input = ''): Promise<CliRun> {
  return runCli(cli, args, { cwd: dir, input });
}

describe('belay blocks parse', () => {
  it('prints the JSON contract: type, 1-based line, path/startLine/endLine/body as the command has them, and errors', async () => {
    const answer = 'Prose.\n[CREATE_FILE path="a.txt"]\nhi\n[/CREATE_FILE]\n[EDIT_FILE path="a.txt" start_line="1" end_line="1"]\nHI\n[/EDIT_FILE]\n[DELETE_FILE path="b"]\n[RUN_COMMAND]ls[/RUN_COMMAND]\n[EDIT_FILE path="c"]\n[/EDIT_FILE]\n';
    const run = await belay(['blocks', 'parse', '--json', '-'], answer);
    assert.equal(run.code, 1, 'exit 1: the answer has a parse error');
    assert.deepEqual(JSON.parse(run.stdout), {
      commands: [
        { type: 'CREATE_FILE', line: 2, path: 'a.txt', body: 'hi' },
        { type: 'EDIT_FILE', line: 5, path: 'a.txt', startLine: 1, endLine: 1, body: 'HI' },
        { type: 'DELETE_FILE', line: 8, path: 'b' },
        { type: 'RUN_COMMAND', line: 9, body: 'ls' },
      ],
      errors: [{ line: 10, message: 'EDIT_FILE missing required attributes start_line, end_line (needs path, start_line, end_line)' }],
    });
  });

  it('reads a file, exits 0 without errors, and prints a readable list without --json', async () => {
    const json = await belay(['blocks', 'parse', path.join(fixtures, 'every-command.txt'), '--json']);
    assert.equal(json.code, 0);
    assert.equal(JSON.parse(json.stdout).commands.length, 8);
    const text = await belay(['blocks', 'parse', path.join(fixtures, 'every-command.txt')]);
    assert.match(text.stdout, /^line 6: CREATE_FILE src\/hello\.py \(6 lines\)$/m);
    assert.match(text.stdout, /^8 commands, 0 errors$/m);
  });
});

describe('belay blocks apply', () => {
  it('prints one protocol result line per command, exit 0 when all succeed', async () => {
    const run = await belay(['blocks', 'apply', '--workspace', '.', '-'], '[CREATE_FILE path="made.txt"]\nmade\n[/CREATE_FILE]\n[RUN_COMMAND]\ncat made.txt\n[/RUN_COMMAND]\n');
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, "[OK] CREATE_FILE: Created 'made.txt'\n[OK] RUN_COMMAND: Ran 'cat made.txt' (exit code 0)\n  Output: made\n");
    assert.equal(await readFile(path.join(dir, 'made.txt'), 'utf8'), 'made');
  });

  it('exits 1 when anything failed, and prints JSON with --json', async () => {
    const run = await belay(['blocks', 'apply', '--workspace', dir, '--json', '-'], '[DELETE_FILE path="../x"]\n[READ_FILE path="made.txt"]\n[DONE]ok[/DONE]');
    assert.equal(run.code, 1);
    assert.deepEqual(JSON.parse(run.stdout), {
      results: [
        { line: 1, commandType: 'DELETE_FILE', summary: "REJECTED: Path '../x' is outside workspace", success: false },
        { line: 2, commandType: 'READ_FILE', summary: "Queued 'made.txt' for next outbox", success: true },
        { line: 3, commandType: 'DONE', summary: 'ok', success: true },
      ],
      done: true,
      readFileRequests: ['made.txt'],
    });
  });

  it('applies with a configurable timeout', { timeout: 20_000 }, async () => {
    const run = await belay(['blocks', 'apply', '--workspace', '.', '--timeout', '0.3', '-'], '[RUN_COMMAND]sleep 20[/RUN_COMMAND]');
    assert.equal(run.code, 1);
    assert.equal(run.stdout, "[FAILED] RUN_COMMAND: Ran 'sleep 20': timed out after 0.3 s, process tree killed\n");
  });

  it('exits 2 for usage mistakes, saying what is wrong', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['blocks', 'apply', '-'], /apply needs --workspace DIR/],
      [['blocks', 'apply', '--workspace', 'no-such-dir', '-'], /--workspace no-such-dir: no such folder/],
      [['blocks', 'parse', '--bogus'], /Unknown option '--bogus'/],
      [['blocks', 'frobnicate'], /unknown action 'frobnicate'/],
      [['blocks', 'parse', 'missing.txt'], /answer file missing.txt: no such file/],
      [['blocks', 'apply', '--workspace', '.', '--timeout', 'soon', '-'], /--timeout wants a number of seconds/],
      [['session', 'start', '--task', 'x'], /start needs --root DIR/],
      [['session', 'step', '--root', '.'], /step needs exactly one answer file/],
      [['session', 'step', '--root', 'r', '-'], /--root r: no such folder/],
    ];
    for (const [args, message] of cases) {
      const run = await belay(args);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, message);
    }
  });

  it('is listed in belay --help, and each subcommand has its own help', async () => {
    const help = await belay(['--help']);
    assert.match(help.stdout, /^ {2}blocks +parse or apply the command blocks of an LLM answer$/m);
    assert.match(help.stdout, /^ {2}session +run the outbox\/inbox loop/m);
    const blocks = await belay(['blocks', '--help']);
    assert.equal(blocks.code, 0);
    assert.match(blocks.stdout, /belay blocks apply --workspace DIR/);
    const session = await belay(['session', 'step', '--help']);
    assert.equal(session.code, 0);
    assert.match(session.stdout, /belay session watch --root DIR/);
  });
});

describe('belay session', () => {
  it('start, step, step DONE: prints the outbox paths on stdout, results on stderr', async () => {
    const root = path.join(dir, 'loop');
    const start = await belay(['session', 'start', '--root', root, '--task', '-'], 'Write hello.txt');
    assert.equal(start.code, 0, start.stderr);
    const first = start.stdout.trim();
    assert.match(first, /outbox\/[0-9a-f]{8}_seq0001\.txt$/);
    assert.match(await readFile(first, 'utf8'), /=== PROMPT ===\nWrite hello\.txt\n$/);
    const answer = path.join(root, 'inbox', 'one.txt');
    await writeFile(answer, await fixture('crlf-answer.txt'));
    const step = await belay(['session', 'step', '--root', root, answer]);
    assert.equal(step.code, 0, step.stderr);
    assert.equal(step.stdout, '', 'the answer said DONE: no next outbox');
    assert.match(step.stderr, /\[OK\] CREATE_FILE: Created 'win\.txt'\n\[OK\] DONE: done\n/);
    assert.equal(await readFile(path.join(root, 'workspace', 'win.txt'), 'utf8'), 'line one\n  indented\n');
    assert.ok(existsSync(path.join(root, 'inbox', 'processed', 'one.txt')));
    const more = await belay(['session', 'step', '--root', root, '-'], '[MESSAGE]x[/MESSAGE]');
    assert.equal(more.code, 1);
    assert.match(more.stderr, /no open session/);
  });

  it('step runs commands sandboxed without network by default, says so, and names --unsandboxed in every line', { skip: !sandboxWorks, timeout: 60_000 }, async () => {
    const root = path.join(dir, 'shells');
    const start = await belay(['session', 'start', '--root', root, '--task', 'try the shells']);
    assert.equal(start.code, 0, start.stderr);
    const probe = '[RUN_COMMAND]\nexec 2>&1; echo made > made.txt; echo x > ../outside.txt; cat /proc/net/dev | grep -c : \n[/RUN_COMMAND]';
    const sandboxed = await belay(['session', 'step', '--root', root, '-'], probe);
    assert.equal(sandboxed.code, 0, sandboxed.stderr);
    assert.match(sandboxed.stderr, /^RUN_COMMAND: Sandboxed: the workspace and a private \/tmp writable, .*network off$/m);
    assert.match(sandboxed.stderr, /\[OK\] RUN_COMMAND: Ran 'exec 2>&1; .*' \(exit code 0\)\n/);
    // Only the loopback in a network namespace of its own.
    assert.match(sandboxed.stderr, /Output:[\s\S]*\b1$/m);
    // The root is under /tmp here, so the write went to the sandbox's own /tmp: not to this one.
    assert.equal(existsSync(path.join(root, 'outside.txt')), false);
    assert.equal(await readFile(path.join(root, 'workspace', 'made.txt'), 'utf8'), 'made\n');
    const outbox = await readFile(sandboxed.stdout.trim(), 'utf8');
    assert.match(outbox, /\[OK\] RUN_COMMAND: Ran '.*' \(exit code 0\)/);

    const networked = await belay(['session', 'step', '--root', root, '--network', '-'], probe.replace('made.txt', 'made2.txt'));
    assert.match(networked.stderr, /^RUN_COMMAND: Sandboxed: .*network on$/m);

    const unsandboxed = await belay(['session', 'step', '--root', root, '--unsandboxed', '-'], '[RUN_COMMAND]\necho ../as-you > ../as-you.txt\n[/RUN_COMMAND]');
    assert.equal(unsandboxed.code, 0, unsandboxed.stderr);
    assert.match(unsandboxed.stderr, /^RUN_COMMAND: Unsandboxed shell \(--unsandboxed\): commands run as you, with every file you can read and the network$/m);
    assert.match(unsandboxed.stderr, /\[OK\] RUN_COMMAND: Ran 'echo \.\.\/as-you > \.\.\/as-you\.txt' \(exit code 0, unsandboxed\)/);
    assert.equal(existsSync(path.join(root, 'as-you.txt')), true, 'unsandboxed, it writes where the person can');
    assert.match(await readFile(unsandboxed.stdout.trim(), 'utf8'), /\(exit code 0, unsandboxed\)/, 'the next outbox tells the model too');

    const misplaced = await belay(['session', 'start', '--root', root, '--task', 'x', '--unsandboxed']);
    assert.equal(misplaced.code, 2);
    assert.match(misplaced.stderr, /--network and --unsandboxed belong to step and watch/);
    const parse = await belay(['blocks', 'parse', '--network', '-'], '');
    assert.equal(parse.code, 2);
    assert.match(parse.stderr, /belong to apply/);
  });

  it('watch processes dropped answers and exits 0 on DONE', { timeout: 30_000 }, async () => {
    const root = path.join(dir, 'watched');
    const start = await belay(['session', 'start', '--root', root, '--task', 'watch me']);
    const id = /([0-9a-f]{8})_seq0001/.exec(start.stdout)![1]!;
    await writeFile(path.join(root, 'inbox', 'a.txt'), '[CREATE_FILE path="w.txt"]\nw\n[/CREATE_FILE]');
    const watch = await runCli(cli, ['session', 'watch', '--root', root, '--session', id], {
      cwd: dir,
      // The first answer is processed: drop the last one.
      onStdout: (stdout) => {
        if (stdout.includes('_seq0002.txt')) void writeFile(path.join(root, 'inbox', 'b.txt'), '[DONE]finished[/DONE]');
      },
    });
    assert.equal(watch.code, 0, watch.stderr);
    assert.equal(watch.stdout.trim(), path.join(root, 'outbox', `${id}_seq0002.txt`));
    assert.match(watch.stderr, /\[OK\] DONE: finished/);
    assert.match(watch.stderr, new RegExp(`session ${id} is complete`));
  });
});
