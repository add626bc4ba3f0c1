// Codex's descriptor and the reader of its `codex exec --json` events: against output captured from
// the real CLI (0.171.0, through Belay's gateway to the scripted Responses upstream; the
// fixtures' folder), and against hostile lines: garbage, wrong types, huge lines, floods, and
// escape sequences, which the reader keeps as text (the terminal layer neutralises them).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { parse as parseToml } from 'smol-toml';
import { codex, CODEX_TOKEN_VARIABLE, codexConfig, codexEvents, modelCommand, shellWords, tomlString } from '../../../../src/runner/core/protocols/installed/codex.ts';
import type { HeadlessInput, InstalledEvent } from '../../../../src/runner/core/protocols/installed/installedAgent.ts';
import { repoRoot } from '../../../../scripts/lib/paths.ts';

const fixtures = path.join(repoRoot, 'test', 'fixtures', 'runner', 'installed', 'codex');

function readCapture(name: string): InstalledEvent[] {
  const reader = codexEvents();
  return readFileSync(path.join(fixtures, name), 'utf8')
    .split('\n')
    .flatMap((line) => reader.line(line));
}

const input: HeadlessInput = {
  instruction: 'Create hello.txt',
  model: 'gpt-5.5',
  baseUrl: 'http://127.0.0.1:4321',
  token: 'belay-run-token-0123456789',
  stateDir: '/run/state/codex',
  workdir: '/app',
};

describe('Codex events, as the real CLI prints them', () => {
  it('a solved task: its text, the exec_command call with the command the model wrote (not the shell wrapping it), its result, and done with the last message', () => {
    assert.deepEqual(readCapture('hello.jsonl'), [
      { kind: 'text', text: 'I will create the file.' },
      { kind: 'tool-call', id: 'item_1', name: 'exec_command', command: "printf 'Hello, world!' > hello.txt", input: JSON.stringify({ command: `/bin/bash -c "printf 'Hello, world"'!'"' > hello.txt"` }) },
      { kind: 'tool-result', id: 'item_1', output: '', exitCode: 0, isError: false },
      { kind: 'text', text: 'Done: hello.txt holds Hello, world!' },
      { kind: 'done', ok: true, summary: 'Done: hello.txt holds Hello, world!' },
    ]);
  });

  it('a failing command: its output (stderr too) and exit code, marked as an error; escape sequences in its output stay as they came', () => {
    const events = readCapture('failing-command.jsonl');
    const results = events.filter((e) => e.kind === 'tool-result');
    assert.deepEqual(results[0], { kind: 'tool-result', id: 'item_0', output: "out\nerr\nls: cannot access 'nothing-here': No such file or directory\n", exitCode: 3, isError: true });
    assert.equal(results[1]?.kind === 'tool-result' && results[1].output, 'a\tb\x1b[31mred\x1b]0;title\x07\n');
    const calls = events.filter((e) => e.kind === 'tool-call');
    assert.deepEqual(
      calls.map((c) => c.kind === 'tool-call' && c.command),
      ['echo out; echo err >&2; ls nothing-here; exit 3', 'printf "a\\tb\\033[31mred\\033]0;title\\007\\n"'],
    );
    // The model's answer after a failure still ends the run as the CLI saw it: done, ok.
    assert.deepEqual(events.at(-1), { kind: 'done', ok: true, summary: 'The command failed with exit 3.' });
  });

  it('an apply_patch edit is one call (a line naming each file) and its result, reported once although Codex sends it started and completed', () => {
    const events = readCapture('apply-patch.jsonl');
    const patch = events.filter((e) => (e.kind === 'tool-call' || e.kind === 'tool-result') && e.id === 'item_1');
    assert.deepEqual(patch, [
      { kind: 'tool-call', id: 'item_1', name: 'apply_patch', command: 'apply_patch: add /tmp/x26codex/run/work/notes/plan.md', input: JSON.stringify({ changes: [{ path: '/tmp/x26codex/run/work/notes/plan.md', kind: 'add' }] }) },
      { kind: 'tool-result', id: 'item_1', output: 'add /tmp/x26codex/run/work/notes/plan.md', exitCode: null, isError: false },
    ]);
    assert.equal(events.filter((e) => e.kind === 'tool-call').length, 2);
  });

  it('an upstream error: the error once (turn.failed repeats it) and done, not ok, saying why', () => {
    const message = 'The model `gpt-5.5` does not exist or you do not have access to it.';
    assert.deepEqual(readCapture('upstream-error.jsonl'), [
      { kind: 'error', message },
      { kind: 'done', ok: false, summary: message },
    ]);
  });

  it('a stream that fails twice: Codex’s retry note and its error, then done, not ok, saying why', () => {
    const message = 'stream disconnected before completion: The model had an error while processing your request.';
    assert.deepEqual(readCapture('stream-failed.jsonl'), [
      { kind: 'error', message: `Reconnecting... 1/1 (${message})` },
      { kind: 'error', message },
      { kind: 'done', ok: false, summary: message },
    ]);
  });

  it('a failed turn with no error before it still says what failed', () => {
    const reader = codexEvents();
    assert.deepEqual(reader.line(JSON.stringify({ type: 'turn.failed', error: { message: 'stream disconnected' } })), [
      { kind: 'error', message: 'stream disconnected' },
      { kind: 'done', ok: false, summary: 'stream disconnected' },
    ]);
    assert.deepEqual(codexEvents().line('{"type":"turn.failed"}'), [
      { kind: 'error', message: 'the turn failed' },
      { kind: 'done', ok: false, summary: 'the turn failed' },
    ]);
  });

  it('the captures hold no key of any kind', () => {
    for (const name of ['hello.jsonl', 'failing-command.jsonl', 'apply-patch.jsonl', 'upstream-error.jsonl', 'stream-failed.jsonl']) {
      const text = readFileSync(path.join(fixtures, name), 'utf8');
      assert.doesNotMatch(text, /sk-[\w-]{8,}|Bearer|belay-run-token/i, name);
    }
  });
});

describe('Codex events, hostile lines', () => {
  it('garbage, other JSON and wrongly typed fields give nothing and never throw', () => {
    const reader = codexEvents();
    const lines = [
      '',
      'not json',
      '{"type":',
      '[1,2,3]',
      'null',
      '42',
      '"item.completed"',
      '{"type":"item.completed"}',
      '{"type":"item.completed","item":"x"}',
      '{"type":"item.completed","item":{"type":"agent_message","text":5}}',
      '{"type":"item.completed","item":{"type":"unheard_of","text":"x"}}',
      '{"type":"error"}',
      '{"type":"thread.started","thread_id":{}}',
      '{"type":"__proto__","item":{"type":"agent_message","text":"x"}}',
      '{"type":"item.completed","item":{"type":"reasoning","text":""}}',
    ];
    for (const line of lines) assert.deepEqual(reader.line(line), [], line);
  });

  it('wrong types inside a command item: the command becomes text, a non-integer exit code is unknown', () => {
    const reader = codexEvents();
    const events = reader.line(JSON.stringify({ type: 'item.completed', item: { id: 7, type: 'command_execution', command: ['rm', '-rf'], aggregated_output: { a: 1 }, exit_code: 1.5, status: 'completed' } }));
    assert.deepEqual(events, [
      { kind: 'tool-call', id: '', name: 'exec_command', command: '', input: '{"command":""}' },
      { kind: 'tool-result', id: '', output: '', exitCode: null, isError: false },
    ]);
    const declined = reader.line(JSON.stringify({ type: 'item.completed', item: { id: 'd', type: 'command_execution', command: 'ls', aggregated_output: '', exit_code: '0', status: 'declined' } }));
    assert.deepEqual(declined.at(-1), { kind: 'tool-result', id: 'd', output: '', exitCode: null, isError: true });
  });

  it('a 100 MB line is skipped without being parsed; a big but valid one has its text clipped', () => {
    const reader = codexEvents();
    const huge = `{"type":"item.completed","item":{"type":"agent_message","text":"${'a'.repeat(100 * 1024 * 1024)}"}}`;
    assert.deepEqual(reader.line(huge), []);
    const big = JSON.stringify({ type: 'item.completed', item: { id: 'b', type: 'command_execution', command: 'yes', aggregated_output: 'y\n'.repeat(2 * 1024 * 1024), exit_code: 0, status: 'completed' } });
    const [, result] = reader.line(big);
    assert.ok(result?.kind === 'tool-result');
    assert.ok(result.output.length < 70 * 1024, `kept ${result.output.length} characters`);
    assert.match(result.output, /… \[\d+ more characters\]$/);
  });

  it('a flood of calls that never end keeps a bounded memory of them: the oldest are let go (a late end then reports its call again)', () => {
    const reader = codexEvents();
    const started = (id: string) => JSON.stringify({ type: 'item.started', item: { id, type: 'command_execution', command: `bash -lc 'echo ${id}'`, aggregated_output: '', exit_code: null, status: 'in_progress' } });
    for (let i = 0; i < 100_000; i++) assert.equal(reader.line(started(`c${i}`)).length, 1);
    const completed = (id: string) => JSON.stringify({ type: 'item.completed', item: { id, type: 'command_execution', command: `bash -lc 'echo ${id}'`, aggregated_output: `${id}\n`, exit_code: 0, status: 'completed' } });
    assert.deepEqual(reader.line(completed('c99999')).map((e) => e.kind), ['tool-result']);
    assert.deepEqual(reader.line(completed('c0')).map((e) => e.kind), ['tool-call', 'tool-result']);
  });

  it('escape sequences and newlines in a command are kept as text in the call', () => {
    const reader = codexEvents();
    const script = 'printf "\x1b]52;c;cm0gLXJmIC8=\x07\x1b[2J" && echo \u202eevil\r\nnext';
    const [call] = reader.line(JSON.stringify({ type: 'item.started', item: { id: 'e', type: 'command_execution', command: `/bin/bash -lc '${script}'`, aggregated_output: '', exit_code: null, status: 'in_progress' } }));
    assert.deepEqual(call && call.kind === 'tool-call' && call.command, script);
  });
});

describe('Codex commands as the model wrote them', () => {
  it('splits words as a POSIX shell does (quotes, backslashes, no expansions)', () => {
    assert.deepEqual(shellWords(`/bin/bash -lc "printf 'Hello, world"'!'"' > hello.txt"`), ['/bin/bash', '-lc', "printf 'Hello, world!' > hello.txt"]);
    assert.deepEqual(shellWords(`a\\ b "c \\"d\\" \\$x \\n" 'e\\f'  g`), ['a b', 'c "d" $x \\n', 'e\\f', 'g']);
    assert.deepEqual(shellWords(`''`), ['']);
    assert.equal(shellWords(`echo 'open`), undefined);
    assert.equal(shellWords(`echo "open`), undefined);
  });

  it('unwraps only a shell running one script; anything else stays as Codex reported it', () => {
    assert.equal(modelCommand(`/bin/bash -lc 'ls -la'`), 'ls -la');
    assert.equal(modelCommand(`bash -c 'ls'`), 'ls');
    assert.equal(modelCommand(`/usr/bin/zsh -lc "echo \\"hi\\""`), 'echo "hi"');
    assert.equal(modelCommand(`/bin/bash -lc 'ls' extra`), `/bin/bash -lc 'ls' extra`);
    assert.equal(modelCommand(`python3 -c 'print(1)'`), `python3 -c 'print(1)'`);
    assert.equal(modelCommand(`/bin/bash -lc 'unterminated`), `/bin/bash -lc 'unterminated`);
    assert.equal(modelCommand('git status'), 'git status');
  });
});

describe('Codex started headless', () => {
  it('argv: exec with JSON events, strict config, no approvals or sandbox of its own (Belay contains it), the model, the working folder, and the instruction last after --', () => {
    const argv = codex.argv({ ...input, instruction: '--help me: rm -rf /' });
    assert.deepEqual(argv.slice(0, 7), ['exec', '--json', '--color', 'never', '--strict-config', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox']);
    assert.deepEqual(argv.slice(-2), ['--', '--help me: rm -rf /']);
    assert.equal(argv[argv.indexOf('--model') + 1], 'gpt-5.5');
    assert.equal(argv[argv.indexOf('--cd') + 1], '/app');
    assert.ok(argv.includes(`model_providers.belay={ name = "Belay gateway", base_url = "http://127.0.0.1:4321/v1", env_key = "${CODEX_TOKEN_VARIABLE}", wire_api = "responses", supports_websockets = false, request_max_retries = 1, stream_max_retries = 1 }`));
    assert.ok(argv.includes('model_provider="belay"'));
  });

  it('environment: only its state folder, its temp folder inside it, the token (both kept out of the commands it runs by its shell policy) and NO_COLOR; the token is nowhere else', () => {
    assert.deepEqual(codex.environment(input), { CODEX_HOME: '/run/state/codex', [CODEX_TOKEN_VARIABLE]: input.token, TMPDIR: '/run/state/codex/tmp', NO_COLOR: '1' });
    assert.equal(codex.environment({ ...input, stateDir: '/s/' }).TMPDIR, '/s/tmp');
    assert.doesNotMatch(JSON.stringify(codex.argv(input)), new RegExp(input.token));
    assert.doesNotMatch(JSON.stringify(codex.stateFiles(input)), new RegExp(input.token));
  });

  it('config.toml is valid TOML holding the same settings as the -c options', () => {
    const files = codex.stateFiles(input);
    assert.deepEqual(Object.keys(files), ['config.toml']);
    const config = parseToml(files['config.toml']!) as Record<string, any>;
    assert.equal(config.model, 'gpt-5.5');
    assert.equal(config.model_provider, 'belay');
    assert.deepEqual({ ...config.model_providers.belay }, { name: 'Belay gateway', base_url: 'http://127.0.0.1:4321/v1', env_key: CODEX_TOKEN_VARIABLE, wire_api: 'responses', supports_websockets: false, request_max_retries: 1, stream_max_retries: 1 });
    assert.equal(config.check_for_update_on_startup, false);
    assert.equal(config.analytics.enabled, false);
    assert.equal(config.web_search, 'disabled');
    assert.equal(config.agents.enabled, false);
    assert.deepEqual(config.shell_environment_policy.exclude, [CODEX_TOKEN_VARIABLE, 'TMPDIR']);
    assert.equal(config.allow_login_shell, false);
    const overrides = codex.argv(input).filter((_, i, all) => all[i - 1] === '-c');
    assert.equal(overrides.length, codexConfig(input).length);
    for (const override of overrides) {
      const [key] = override.split('=', 1);
      assert.ok(files['config.toml']!.includes(`\n${key} = `), key);
    }
  });

  it('a model name or URL with quotes, newlines or control characters stays one TOML string, read back unchanged', () => {
    const model = 'gpt"5\\x\nmodel = "evil"\u0000\u007f\u2028é';
    const parsed = parseToml(`v = ${tomlString(model)}`) as { v: string };
    assert.equal(parsed.v, model);
    const config = parseToml(codex.stateFiles({ ...input, model, baseUrl: 'http://127.0.0.1:1/"x' })['config.toml']!) as Record<string, any>;
    assert.equal(config.model, model);
    assert.equal(config.model_providers.belay.base_url, 'http://127.0.0.1:1/"x/v1');
  });

  it('is pinned, speaks the Responses API, and names its native binary inside the install', () => {
    assert.equal(codex.package, '@openai/codex');
    assert.equal(codex.version, '0.171.0');
    assert.equal(codex.api, 'responses');
    assert.equal(codex.bin, 'codex');
    assert.equal(codex.needsNode, true);
    assert.equal(codex.nativeExecutable?.('linux', 'x64'), 'node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex');
    assert.equal(codex.nativeExecutable?.('linux', 'arm64'), 'node_modules/@openai/codex-linux-arm64/vendor/aarch64-unknown-linux-musl/bin/codex');
    assert.equal(codex.nativeExecutable?.('linux', 'ia32'), undefined);
    assert.equal(codex.nativeExecutable?.('linux', '__proto__'), undefined);
  });
});
