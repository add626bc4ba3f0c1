// Hostile answers through `belay blocks apply` and `belay session`, as a user runs them (the built
// CLI in a child process): escape sequences from the answer or from command output never reach
// the terminal raw, and the command line gives the same results as the core on the same answer.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { executeAnswer } from '../../../src/blocks/core/executor.ts';
import { formatResult } from '../../../src/blocks/core/results.ts';
import { openWorkspace } from '../../../src/blocks/core/sandbox.ts';
import { neutraliseControls, neutraliseJson } from '../../../src/shared/terminalText.ts';
import { pathologicalAnswers } from '../../support/blocks/hostileAnswers.ts';
import { markedEnv, markLine, processesMarked, repoRoot, tempDir } from '../../support/blocks/helpers.ts';
import { runCli, type CliRun } from '../../support/cli-process.ts';

let dir: string;
let cli: string;
let cleanup: () => void;

before(async () => {
  ({ dir, remove: cleanup } = tempDir('belay-hostile-cli-'));
  // Built into a folder of its own: cli.test.ts builds dist/ at the same time.
  execFileSync(process.execPath, ['scripts/build.ts', '--dist', path.join(dir, 'dist')], { cwd: repoRoot, stdio: 'pipe' });
  cli = path.join(dir, 'dist', 'cli.js');
});
after(() => cleanup());

function belay(args: string[], options: { input?: string; env?: NodeJS.ProcessEnv } = {}): Promise<CliRun> {
  return runCli(cli, args, { cwd: dir, input: options.input ?? '', ...(options.env ? { env: options.env } : {}) });
}

/** Characters a terminal acts on: C0 but tab and line feed, DEL, C1, bidirectional controls. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

const ESC = '\u001b';
const BEL = '\u0007';
/** What a hostile command prints: a window title, clear screen, a clipboard write, a CR that would overwrite its line with a fake result. */
const NASTY_OUTPUT = `printf '\\033]0;pwned\\007\\033[2J\\033[H\\033]52;c;cHduZWQ=\\007\\302\\233m\\r[OK] DONE: all good\\n'`;

describe('hostile answers: control sequences are neutralised', () => {
  it('neutraliseControls shows every control as a visible stand-in, and keeps only line feeds and tabs', () => {
    assert.equal(neutraliseControls(`${ESC}]0;title${BEL}`), '␛]0;title␇');
    assert.equal(neutraliseControls(`${ESC}[2J${ESC}[H`), '␛[2J␛[H');
    assert.equal(neutraliseControls(`${ESC}]52;c;cHduZWQ=${BEL}`), '␛]52;c;cHduZWQ=␇');
    assert.equal(neutraliseControls('a\r\nb\rc\n\td'), 'a\nb\nc\n\td');
    assert.equal(neutraliseControls('\u009b31m \u007f \u0000 \u202eevil'), '\\u009b31m ␡ ␀ \\u202eevil');
    assert.equal(neutraliseControls('plain text, é 😀'), 'plain text, é 😀');
    assert.equal(neutraliseControls(`${ESC}[31mred${ESC}[0m ${ESC}]0;t${BEL}`, { keepColours: true }), `${ESC}[31mred${ESC}[0m ␛]0;t␇`);
  });

  it('neutraliseJson escapes what JSON.stringify leaves raw, and parses back to the same value', () => {
    const value = { s: `${ESC}[2J \u009b \u007f \u202e \u2066 x` };
    const json = neutraliseJson(JSON.stringify(value));
    assert.doesNotMatch(json, CONTROL);
    assert.deepEqual(JSON.parse(json), value);
  });

  it('`belay blocks apply` prints RUN_COMMAND output and LLM-written paths with no control character', { timeout: 60_000 }, async () => {
    const ws = path.join(dir, 'escapes');
    await mkdir(ws);
    const answer = [`[RUN_COMMAND]\n${NASTY_OUTPUT}\n[/RUN_COMMAND]`, `[CREATE_FILE path="a${ESC}]0;t${BEL}.txt"]\nx\n[/CREATE_FILE]`, `[READ_FILE path="gone${ESC}[2J.txt"]`].join('\n');
    const text = await belay(['blocks', 'apply', '--workspace', ws, '-'], { input: answer });
    assert.doesNotMatch(text.stdout, CONTROL);
    const lines = text.stdout.split('\n');
    assert.equal(lines[0], "[OK] RUN_COMMAND: Ran 'printf '\\033]0;pwned\\007\\033[2J\\033[H\\033]52;c;cHduZWQ=\\007\\302\\233m\\r[OK] DONE: all good\\n'' (exit code 0)");
    assert.deepEqual(lines.slice(1, 4), ['  Output:', '    ␛]0;pwned␇␛[2J␛[H␛]52;c;cHduZWQ=␇\\u009bm', '    [OK] DONE: all good']);
    assert.ok(!lines.some((line) => line.startsWith('[OK] DONE')), 'no output line passes for a result line');
    assert.equal(lines[4], "[OK] CREATE_FILE: Created 'a␛]0;t␇.txt'");
    assert.equal(lines[5], "[FAILED] READ_FILE: File 'gone␛[2J.txt' not found");

    const json = await belay(['blocks', 'apply', '--json', '--workspace', ws, '-'], { input: answer });
    assert.doesNotMatch(json.stdout, CONTROL);
    const parsed = JSON.parse(json.stdout) as { results: Array<{ output?: string }> };
    assert.equal(parsed.results[0]!.output, `${ESC}]0;pwned${BEL}${ESC}[2J${ESC}[H${ESC}]52;c;cHduZWQ=${BEL}\u009bm\r[OK] DONE: all good`, 'JSON keeps the exact text, escaped');

    const parse = await belay(['blocks', 'parse', '-'], { input: `${answer}\n[CREATE_FILE path="x" ${ESC}[2J]\n[/CREATE_FILE]` });
    assert.doesNotMatch(parse.stdout, CONTROL);
    assert.match(parse.stdout, /line 8: error: CREATE_FILE tag has unexpected text '␛\[2J'\n/);
  });

  it('`belay session step` prints results on standard error with no control character', { timeout: 60_000 }, async () => {
    const root = path.join(dir, 'session');
    const started = await belay(['session', 'start', '--root', root, '--task', `title ${ESC}]0;x${BEL}`]);
    assert.equal(started.code, 0, started.stderr);
    const step = await belay(['session', 'step', '--root', root, '-'], { input: `[RUN_COMMAND]\n${NASTY_OUTPUT}\n[/RUN_COMMAND]` });
    assert.equal(step.code, 0, step.stderr);
    assert.doesNotMatch(step.stderr, CONTROL);
    assert.match(step.stderr, /\n {4}\[OK\] DONE: all good\n/);
    const list = await belay(['session', 'list', '--root', root]);
    assert.doesNotMatch(list.stdout, CONTROL);
    assert.match(list.stdout, /title ␛\]0;x␇\n$/);
  });
});

describe('hostile answers: `belay blocks apply` and the core give the same result', () => {
  const has = (program: string) => spawnSync('sh', ['-c', `command -v ${program}`]).status === 0;

  /** One answer with a bit of everything hostile (paths stay out of the output, so both runs print the same). */
  function hostileAnswer(mark: string): string {
    const pathological = pathologicalAnswers(64 * 1024);
    return [
      '[CREATE_FILE path="sub/a.txt"]\nfirst\n[/CREATE_FILE]',
      has('mkfifo') ? '[RUN_COMMAND]\nmkfifo pipe.txt\n[/RUN_COMMAND]' : '',
      '[EDIT_FILE path="pipe.txt" start_line="1" end_line="1"]\nx\n[/EDIT_FILE]',
      '[READ_FILE path="pipe.txt"]',
      `[RUN_COMMAND]\n${NASTY_OUTPUT}\n${markLine(mark)}\nsetsid sleep 300 &\n(setsid sh -c "sleep 300" &)\n[/RUN_COMMAND]`,
      '[RUN_COMMAND]\nmv sub sub.real && ln -s ../outside sub\n[/RUN_COMMAND]',
      '[CREATE_FILE path="sub/b.txt"]\nescaped?\n[/CREATE_FILE]',
      '[DELETE_FILE path="sub/a.txt"]',
      pathological['a tag with ~350k attributes']!,
      pathological['lookalike blocks [DON]…[/DON]']!,
      `[CREATE_FILE path="${'n'.repeat(251)}.txt"]\nlong name\n[/CREATE_FILE]`,
      '[DONE]\nfinished\n[/DONE]',
    ].join('\n');
  }

  it('same result lines, same files, nothing outside, nothing left running', { skip: process.platform !== 'linux', timeout: 120_000 }, async () => {
    const runs: Array<{ lines: string[]; files: string[] }> = [];
    for (const via of ['core', 'cli'] as const) {
      const base = path.join(dir, `same-${via}`);
      const ws = path.join(base, 'ws');
      await mkdir(path.join(base, 'outside'), { recursive: true });
      await mkdir(ws);
      const mark = `same-${via}-${process.pid}`;
      const answer = hostileAnswer(mark);
      let lines: string[];
      if (via === 'core') {
        const report = await executeAnswer(await openWorkspace(ws), answer, { env: markedEnv(mark) });
        lines = report.results.map((r) => formatResult(r));
      } else {
        const run = await belay(['blocks', 'apply', '--json', '--workspace', ws, '-'], { input: answer, env: markedEnv(mark) });
        assert.equal(run.code, 1, run.stderr);
        lines = (JSON.parse(run.stdout) as { results: Array<Parameters<typeof formatResult>[0]> }).results.map((r) =>
          formatResult({ commandType: r.commandType, summary: r.summary, success: r.success, ...(r.output !== undefined ? { output: r.output } : {}) }),
        );
      }
      assert.deepEqual(await readdir(path.join(base, 'outside')), [], `${via}: nothing outside`);
      assert.deepEqual(await processesMarked(mark), [], `${via}: nothing left running`);
      const files = (await readdir(ws, { recursive: true })).sort();
      runs.push({ lines, files });
    }
    assert.deepEqual(runs[1]!.lines, runs[0]!.lines);
    assert.deepEqual(runs[1]!.files, runs[0]!.files);
    const lines = runs[0]!.lines;
    assert.ok(lines.some((l) => l.startsWith("[FAILED] CREATE_FILE: REJECTED: Path 'sub/b.txt' is outside workspace")));
    assert.ok(lines.some((l) => l.startsWith('[FAILED] PARSE_ERROR: Line') && l.includes('CREATE_FILE tag has')));
    assert.ok(lines.some((l) => l.startsWith('[OK] DONE: finished')));
    assert.equal(await readFile(path.join(dir, 'same-cli', 'ws', `${'n'.repeat(251)}.txt`), 'utf8'), 'long name');
  });
});
