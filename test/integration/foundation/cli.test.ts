import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { repoRoot } from '../../../scripts/lib/paths.ts';
import { olderThanMinimum } from '../../../src/cli/node-check.ts';
import { subcommands } from '../../../src/cli/registry.ts';
import { parseCommandLine, splitAction, UsageError, wantsHelp } from '../../../src/shared/args.ts';
import { ensureBuilt } from '../../support/build.ts';

const cli = path.join(repoRoot, 'dist', 'cli.js');
const run = (...args: string[]) => spawnSync(cli, args, { encoding: 'utf8', env: { ...process.env, PATH: `${path.dirname(process.execPath)}:${process.env.PATH}` } });

before(() => {
  ensureBuilt();
});

test('both command lines are executable scripts with a node shebang', () => {
  for (const file of ['cli.js', 'cueme.js']) {
    const full = path.join(repoRoot, 'dist', file);
    assert.ok(statSync(full).mode & 0o111, `${file} is not executable`);
    assert.match(readFileSync(full, 'utf8').split('\n')[0]!, /^#!\/usr\/bin\/env node$/);
  }
  const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  assert.deepEqual(pkg.bin, { belay: 'dist/cli.js', cueme: 'dist/cueme.js' });
});

test('belay --version prints the package version', () => {
  const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string };
  const r = run('--version');
  assert.equal(r.status, 0);
  assert.equal(r.stdout, `${pkg.version}\n`);
});

test('belay --help lists every subcommand with a summary', () => {
  const r = run('--help');
  assert.equal(r.status, 0);
  assert.match(r.stdout, /^Usage: belay <command>/);
  for (const name of ['blocks', 'session', 'cues']) assert.match(r.stdout, new RegExp(`^  ${name} +\\S`, 'm'), `${name} missing from help`);
});

test('an unknown subcommand is a usage error on stderr, exit 2', () => {
  const r = run('frobnicate');
  assert.equal(r.status, 2);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /unknown command 'frobnicate'/);
});

test('no arguments prints the usage and exits 2', () => {
  const r = run();
  assert.equal(r.status, 2);
  assert.match(r.stdout, /^Usage: belay/);
});

// The actions of each subcommand that has them; every subcommand of the registry must be listed.
const actions: Record<string, string[]> = {
  blocks: ['parse', 'apply'],
  session: ['start', 'step', 'watch', 'list'],
  run: [],
  nanobot: [],
  agent: ['doctor'],
  image: ['build-base'],
  cues: ['list', 'answer'],
  mcp: [],
};

const home = mkdtempSync(path.join(os.tmpdir(), 'belay-cli-home-'));
const cueHome = path.join(home, '.cue');
after(() => rmSync(home, { recursive: true, force: true }));

interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs dist/cli.js with stdin left open (a command that reads or waits would never end) and a mailbox in a temp folder. */
function belay(args: string[]): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], { cwd: home, env: { PATH: process.env.PATH, HOME: home, CUE_HOME: cueHome }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    // A safety net only: a command that blocks is killed, and the test fails on the signal.
    const stuck = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(stuck);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

const ONE_LINE = /^[^\n]+\n$/;

test('every subcommand and action prints its help for --help or -h, anywhere, and does nothing else', async () => {
  assert.deepEqual(subcommands.map((s) => s.name).sort(), Object.keys(actions).sort(), 'a subcommand is missing from this test');
  const calls: string[][] = [];
  for (const { name } of subcommands) {
    calls.push([name, '--help'], [name, '-h'], ['help', name], [name, '--bogus', '--help']);
    for (const action of actions[name]!) calls.push([name, action, '--help'], [name, action, '--root', home, '-h'], [name, action, '-', '--help']);
  }
  for (const args of calls) {
    const r = await belay(args);
    assert.equal(r.signal, null, `${args.join(' ')} blocked`);
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr, '', args.join(' '));
    assert.match(r.stdout, new RegExp(`^Usage:[\\s\\S]*belay ${args[0] === 'help' ? args[1] : args[0]}\\b`), args.join(' '));
  }
  assert.equal(existsSync(cueHome), false, 'help wrote the mailbox');
  assert.deepEqual(spawnSync('ls', [home], { encoding: 'utf8' }).stdout, '', 'help created files');
});

test('an unknown option is one line on stderr naming it, exit 2, for belay and every subcommand and action', async () => {
  const calls: string[][] = [['--bogus'], ['-z']];
  for (const { name } of subcommands) {
    calls.push([name, '--bogus']);
    for (const action of actions[name]!) calls.push([name, action, '--bogus']);
  }
  for (const args of calls) {
    const r = await belay(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, '', args.join(' '));
    assert.match(r.stderr, ONE_LINE, args.join(' '));
    assert.match(r.stderr, new RegExp(`^belay${args.length > 1 ? ` ${args[0]}` : ''}: Unknown option '${args.at(-1)}'`), args.join(' '));
  }
  assert.equal(existsSync(cueHome), false);
});

test('a bad or missing value is one line on stderr naming the option, exit 2, never Node\'s wording', async () => {
  const calls: Array<[string[], RegExp]> = [
    [['blocks', 'apply', '--workspace', '.', '--timeout', 'soon', '-'], /--timeout wants a number of seconds above 0, got 'soon'/],
    [['blocks', 'apply', '--workspace'], /option '--workspace' needs a value/],
    [['blocks', 'parse', '--json=yes'], /option '--json' takes no value/],
    [['session', 'start', '--root', 'r', '--task', 'x', '--timeout', '-1'], /option '--timeout' needs a value, got the option-like '-1'/],
    [['session', 'start', '--root', 'r', '--task', 'x', '--timeout=0'], /--timeout wants a number of seconds above 0, got '0'/],
    [['run', 'tasks', '--agent', 'x', '--protocol', 'sdk1', '--concurrency', 'many'], /--concurrency needs a positive whole number, got 'many'/],
    [['run', 'tasks', '--agent', 'x', '--protocol', 'sdk4'], /--protocol must be sdk1, sdk2, sdk3, claude-code, codex, gemini-cli or opencode \(got 'sdk4'\)/],
    [['nanobot', '--command', 'true', '--text', 'x', '--timeout', 'soon'], /--timeout wants a number of seconds, got 'soon'/],
    [['nanobot', '--command', 'true', '--text', 'x', 'stray'], /unexpected argument 'stray'/],
    [['cues', 'answer', 'req_x', '--field', 'novalue'], /--field takes "Label=value", got "novalue"/],
    [['cues', 'answer', 'req_x', '--text'], /option '--text' needs a value/],
  ];
  for (const [args, message] of calls) {
    const r = await belay(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, ONE_LINE, args.join(' '));
    assert.match(r.stderr, message, args.join(' '));
    assert.doesNotMatch(r.stderr, /ERR_PARSE_ARGS|TypeError|at .*\.js:\d+/, args.join(' '));
  }
});

test('the Node check accepts 22.13 and later and refuses what is older', () => {
  for (const ok of ['22.13.0', '22.23.3', '23.0.0', '24.1.2']) assert.equal(olderThanMinimum(ok), false, ok);
  for (const old of ['22.12.0', '20.20.2', '18.0.0']) assert.equal(olderThanMinimum(old), true, old);
});

test('the shared parser: help wins, mistakes become one-line usage errors naming the option', () => {
  assert.equal(wantsHelp(['x', '--json', '-h']), true);
  assert.equal(wantsHelp(['--', '--help']), false, 'after -- it is an argument');
  assert.equal(wantsHelp(['--text=--help']), false, 'a value, not a request for help');
  const options = { json: { type: 'boolean' }, out: { type: 'string' }, tag: { type: 'string', multiple: true } } as const;
  const parsed = parseCommandLine(['a', '--json', '--out', 'o', '--tag', 'x', '--tag=-y', '-', '--', '--z'], options);
  assert.deepEqual({ ...parsed.values }, { json: true, out: 'o', tag: ['x', '-y'] });
  assert.deepEqual(parsed.positionals, ['a', '-', '--z']);
  const mistakes: Array<[string[], string]> = [
    [['--bogus'], "Unknown option '--bogus'"],
    [['-q'], "Unknown option '-q'"],
    [['--out'], "option '--out' needs a value"],
    [['--json=1'], "option '--json' takes no value"],
    [['--out', '--json'], "option '--out' needs a value, got the option-like '--json' (write --out=--json if that is the value)"],
  ];
  for (const [args, message] of mistakes) assert.throws(() => parseCommandLine(args, options), (e: unknown) => e instanceof UsageError && e.message === message, args.join(' '));
  assert.throws(() => parseCommandLine(['a'], options, { positionals: false }), /unexpected argument 'a'/);
  assert.deepEqual(splitAction(['parse', '--json'], ['parse', 'apply']), { action: 'parse', rest: ['--json'] });
  assert.deepEqual(splitAction([], ['parse', 'apply']), { action: undefined, rest: [] });
  assert.throws(() => splitAction(['frob'], ['parse', 'apply']), /^UsageError: unknown action 'frob'; use parse or apply/);
  assert.throws(() => splitAction(['--x'], ['a', 'b', 'c']), /^UsageError: Unknown option '--x' where the action goes; use a, b or c/);
});
