// Hostile answers against the sandbox RUN_COMMAND runs in by default (src/shared/commandSandbox.ts),
// with real bubblewrap and real files: a fake home with keys and tokens, a mailbox, a folder next to
// the workspace, a server on 127.0.0.1, secrets in Belay's environment. Each way out is tried
// sandboxed (it fails, and nothing is left) and, where that shows the test could fail, unsandboxed
// (it works there). The folders live under test-results/, not /tmp: the sandbox's /tmp is private,
// so a file there would be hidden for the wrong reason.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import * as os from 'node:os';
import { createServer, type Server } from 'node:net';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { executeAnswer } from '../../../src/blocks/core/executor.ts';
import { openWorkspace, type Workspace } from '../../../src/blocks/core/sandbox.ts';
import { detectSandbox, EXECUTOR_IN_SANDBOX, tmpBytes, type ShellPolicy } from '../../../src/shared/commandSandbox.ts';
import { executorBinary } from '../../../src/shared/executor/binary.ts';
import { markLine, processesMarked, repoRoot } from '../../support/blocks/helpers.ts';

const support = process.platform === 'linux' ? await detectSandbox() : { ok: false as const, reason: 'not Linux' };
const skip = support.ok ? false : `no sandbox here: ${support.reason}`;
const has = (program: string) => spawnSync('sh', ['-c', `command -v ${program}`]).status === 0;

const SANDBOXED: ShellPolicy = { mode: 'sandboxed', network: false };
const UNSANDBOXED: ShellPolicy = { mode: 'unsandboxed', network: true };

describe('hostile answers: RUN_COMMAND in the sandbox', { skip }, () => {
  let base: string;
  let home: string;
  let ws: string;
  let outside: string;
  let workspace: Workspace;
  let env: NodeJS.ProcessEnv;
  const secret = `s3cret-${process.pid}-${Date.now().toString(36)}`;

  before(async () => {
    await mkdir(path.join(repoRoot, 'test-results'), { recursive: true });
    base = await mkdtemp(path.join(repoRoot, 'test-results', 'sandbox-'));
    home = path.join(base, 'home');
    ws = path.join(base, 'ws');
    outside = path.join(base, 'outside');
    for (const dir of [ws, outside, path.join(home, '.ssh'), path.join(home, '.aws'), path.join(home, '.cue'), path.join(home, 'keys-elsewhere'), path.join(home, '.config', 'gh')]) await mkdir(dir, { recursive: true });
    await writeFile(path.join(home, '.ssh', 'id_ed25519'), `-----BEGIN OPENSSH PRIVATE KEY-----\n${secret}-ssh\n`, { mode: 0o600 });
    await writeFile(path.join(home, '.aws', 'credentials'), `[default]\naws_secret_access_key = ${secret}-aws\n`);
    await writeFile(path.join(home, '.cue', 'cue.db'), `SQLite format 3\0 ${secret}-mailbox`);
    await writeFile(path.join(home, '.npmrc'), `//registry.npmjs.org/:_authToken=${secret}-npm\n`);
    await writeFile(path.join(home, '.netrc'), `machine example.com login me password ${secret}-netrc\n`);
    await writeFile(path.join(home, '.config', 'gh', 'hosts.yml'), `github.com:\n  oauth_token: ${secret}-gh\n`);
    // A key reached through a link: the link's target is hidden, wherever it is.
    await writeFile(path.join(home, 'keys-elsewhere', 'id_rsa'), `${secret}-linked`);
    await symlink(path.join(home, 'keys-elsewhere'), path.join(home, '.gnupg'));
    // What builds read stays readable.
    await mkdir(path.join(home, '.npm'), { recursive: true });
    await writeFile(path.join(home, '.npm', 'cache-entry'), 'cached\n');
    workspace = await openWorkspace(ws);
    env = {
      PATH: process.env.PATH,
      HOME: home,
      LANG: 'C.UTF-8',
      ANTHROPIC_API_KEY: `${secret}-env-anthropic`,
      BELAY_GATEWAY_TOKEN: `${secret}-env-gateway`,
      GITHUB_TOKEN: `${secret}-env-github`,
      SSH_AUTH_SOCK: path.join(base, 'agent.sock'),
    };
  });
  after(() => rm(base, { recursive: true, force: true }));

  async function run(command: string, shell: ShellPolicy = SANDBOXED) {
    const report = await executeAnswer(workspace, `[RUN_COMMAND]\n${command}\n[/RUN_COMMAND]`, { env, shell, runTimeoutMs: 20_000 });
    return { result: report.results[0]!, shell: report.shell, output: report.results[0]!.output ?? '' };
  }

  it('the fake home\'s keys and tokens are readable unsandboxed: the test can fail', async () => {
    const { output, result } = await run('cat ~/.ssh/id_* ~/.aws/credentials ~/.cue/cue.db ~/.npmrc ~/.netrc ~/.config/gh/hosts.yml ~/.gnupg/id_rsa; env', UNSANDBOXED);
    assert.match(result.summary, /unsandboxed/, 'the result line names the unsandboxed shell');
    for (const what of ['ssh', 'aws', 'mailbox', 'npm', 'netrc', 'gh', 'linked', 'env-anthropic']) assert.ok(output.includes(`${secret}-${what}`), `${what} read unsandboxed`);
  });

  it('hides ~/.ssh keys, ~/.aws, the mailbox, ~/.npmrc, ~/.netrc, ~/.config/gh and a key behind a link', async () => {
    const { output, result, shell } = await run('exec 2>&1; cat ~/.ssh/id_* ~/.aws/credentials ~/.cue/cue.db ~/.npmrc ~/.netrc ~/.config/gh/hosts.yml ~/.gnupg/id_rsa; ls -A ~/.ssh ~/.aws ~/.cue; echo end');
    assert.equal(output.split('\n').at(-1), 'end', output);
    assert.ok(!output.includes(secret), `a secret leaked:\n${output}`);
    assert.doesNotMatch(result.summary, /unsandboxed/);
    assert.match(shell ?? '', /^Sandboxed: .*network off$/);
    // A link the command makes inside the workspace reaches nothing either.
    const linked = await run(`ln -s ${path.join(home, '.ssh', 'id_ed25519')} key && cat key; ln -s ${path.join(home, '.aws')} aws && cat aws/credentials; echo end`);
    assert.ok(!linked.output.includes(secret), linked.output);
    await rm(path.join(ws, 'key'));
    await rm(path.join(ws, 'aws'));
    // The hidden folders are untouched on the host: only what the test put there.
    assert.deepEqual(await readdir(path.join(home, '.ssh')), ['id_ed25519']);
  });

  it('hides /etc/shadow (readable unsandboxed here when Belay runs as root)', async () => {
    let readable = true;
    try {
      accessSync('/etc/shadow', constants.R_OK);
    } catch {
      readable = false;
    }
    if (readable) assert.match((await run('head -c 5 /etc/shadow', UNSANDBOXED)).output, /^\w/, 'unsandboxed, /etc/shadow is readable here');
    const { output } = await run('wc -c < /etc/shadow; head -c 100 /etc/shadow; echo end');
    const firstLine = readable ? readFileSync('/etc/shadow', 'utf8').split('\n')[0]! : 'root:';
    assert.ok(!output.includes(firstLine.slice(0, 10)), output);
    assert.match(output.split('\n')[0]!, /^0$|denied/, `wc printed ${output.split('\n')[0]}`);
  });

  it('hides /root when the home is elsewhere', { skip: !existsSync('/root') || readdirSafe('/root').length === 0 ? 'no readable /root' : false }, async () => {
    const { output } = await run('ls -A /root | wc -l');
    assert.equal(output, '0');
  });

  it('writes nothing outside the workspace: absolute paths, .., its own links, /proc/self/root, the home, the system', async () => {
    const attempts = [
      `echo x > ${outside}/absolute`,
      'echo x > ../outside/dotdot',
      'ln -s ../outside out && echo x > out/through-link',
      'ln -s .. up && echo x > up/outside/through-up',
      `echo x > /proc/self/root${outside}/proc-root`,
      `echo x > /proc/1/root${outside}/proc-1-root`,
      'echo x > ~/in-home',
      'echo x > ~/.ssh/authorized_keys',
      'mkdir -p ~/.config/autostart && echo x > ~/.config/autostart/evil.desktop',
      'echo x > /usr/local/belay-evil',
      `cp -r . ${outside}/copy`,
      `mv ${outside} ${base}/moved`,
      `rm -r ${outside}`,
    ];
    // Unsandboxed, the first does write: the check below can fail.
    await run(attempts[0]!, UNSANDBOXED);
    assert.deepEqual(await readdir(outside), ['absolute']);
    await rm(path.join(outside, 'absolute'));
    const { output } = await run(`${attempts.map((a) => `(${a}) 2>/dev/null || echo refused`).join('\n')}\necho end`);
    const refused = output.split('\n').filter((l) => l === 'refused').length;
    assert.equal(refused, attempts.length, `${attempts.length - refused} got through:\n${output}\n${JSON.stringify(await readdir(outside))}`);
    assert.deepEqual(await readdir(outside), [], 'nothing written next to the workspace');
    assert.equal(existsSync(path.join(home, 'in-home')), false);
    assert.deepEqual((await readdir(path.join(home, '.ssh'))).sort(), ['id_ed25519']);
    assert.equal(existsSync(path.join(home, '.config', 'autostart')), false);
    assert.equal(existsSync('/usr/local/belay-evil'), false);
    // What it made inside the workspace is there (the links), and only that.
    assert.deepEqual((await readdir(ws)).sort(), ['out', 'up']);
    await rm(path.join(ws, 'out'));
    await rm(path.join(ws, 'up'));
  });

  it('reaches no server on 127.0.0.1 with the network off; with it on, it does', { skip: !has('node') && !existsSync(process.execPath) }, async () => {
    let connections = 0;
    const server: Server = createServer((socket) => {
      connections++;
      socket.on('error', () => {});
      socket.end('hello\n');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const probe = `"${process.execPath}" -e "require('net').connect(${port}, '127.0.0.1').on('connect', () => { console.log('CONNECTED'); process.exit(0); }).on('error', (e) => { console.log('NO ' + e.code); process.exit(1); })"`;
    try {
      const off = await run(probe);
      assert.match(off.output, /^NO /, off.output);
      assert.equal(connections, 0);
      const on = await run(probe, { mode: 'sandboxed', network: true });
      assert.equal(on.output, 'CONNECTED');
      assert.match(on.shell ?? '', /network on$/);
      assert.equal(connections, 1);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('reaches no Unix socket of another program (under /run), whatever the network; unsandboxed it does', { skip: runWritable() ? false : '/run is not writable here' }, async () => {
    const socket = `/run/belay-sandbox-test-${process.pid}.sock`;
    let connections = 0;
    const server: Server = createServer((s) => {
      connections++;
      s.on('error', () => {});
      s.end();
    });
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    const probe = `"${process.execPath}" -e "require('net').connect('${socket}').on('connect', () => { console.log('CONNECTED'); process.exit(0); }).on('error', (e) => { console.log('NO ' + e.code); process.exit(1); })"`;
    try {
      for (const network of [false, true]) {
        const { output } = await run(probe, { mode: 'sandboxed', network });
        assert.match(output, /^NO /, `network ${network ? 'on' : 'off'}: ${output}`);
      }
      assert.equal(connections, 0);
      assert.equal((await run(probe, UNSANDBOXED)).output, 'CONNECTED', 'unsandboxed, the socket takes connections: the test can fail');
      assert.equal(connections, 1);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('cannot change the kernel\'s settings (/proc/sys), even as root', async () => {
    const before = readFileSync('/proc/sys/kernel/printk_ratelimit_burst', 'utf8');
    // Written back with the value it has: nothing changes even where a write got through.
    const { output } = await run(`(echo ${before.trim()} > /proc/sys/kernel/printk_ratelimit_burst) 2>&1; echo end`);
    assert.match(output, /Read-only file system|Permission denied/);
    assert.equal(readFileSync('/proc/sys/kernel/printk_ratelimit_burst', 'utf8'), before);
  });

  it('gets none of Belay\'s environment but the allowlist', async () => {
    const { output } = await run('env; cat /proc/*/environ 2>/dev/null | tr "\\0" "\\n"; echo "sock=$SSH_AUTH_SOCK"');
    assert.ok(!output.includes(secret), output);
    assert.match(output, /^HOME=/m);
    assert.match(output, /^PATH=/m);
    assert.match(output, /^TMPDIR=\/tmp$/m);
    assert.match(output, /^sock=$/m);
  });

  it('a detached child does not outlive the command', { skip: !has('setsid') ? 'no setsid' : false, timeout: 30_000 }, async () => {
    const mark = `sandbox-orphan-${process.pid}-${Date.now()}`;
    const { result } = await run(`${markLine(mark)}\nsetsid -f sleep 300\n(setsid sh -c "sleep 300 &" &)\nnohup sleep 300 >/dev/null 2>&1 &\necho started`);
    assert.equal(result.success, true, result.summary);
    assert.deepEqual(await processesMarked(mark), []);
  });

  it('its /tmp cannot take more than its size (its files are memory)', { skip: support.ok && support.sizes ? false : 'this bubblewrap takes no tmpfs size' }, async () => {
    const { output } = await run('df -B1 --output=size /tmp /var/tmp | tail -2');
    assert.deepEqual(output.split('\n').map((l) => Number(l.trim())), [tmpBytes(), tmpBytes()]);
  });

  it('leaves nothing behind: its empty file\'s folder is removed, its /tmp is its own', async () => {
    const name = `belay-sandbox-probe-${process.pid}-${Date.now()}`;
    const { output } = await run(`echo hidden > /tmp/${name} && cat /tmp/${name}; grep -o '[^ ]*belay-sandbox-[^ /]*' /proc/self/mountinfo | head -1`);
    const [read, folder] = output.split('\n');
    assert.equal(read, 'hidden');
    assert.ok(folder, `no bind of the empty file in the mount table:\n${output}`);
    assert.equal(existsSync(path.join('/tmp', name)), false, 'the private /tmp wrote nothing to the host\'s');
    // The mount table names the folder below its file system's root; it was made in the temp folder.
    assert.ok(!readdirSafe(os.tmpdir()).includes(path.basename(folder!)), `${folder} is left`);
  });

  it('runs through the executor (bubblewrap\'s one program) when it is built', { skip: executorBuilt() ? false : 'belay-exec is not built (node scripts/build.ts)' }, async () => {
    const { output, result } = await run('tr "\\0" " " < /proc/$PPID/cmdline; echo; ls /proc | grep -c "^[0-9]"');
    assert.equal(result.success, true, result.summary);
    const [parent, count] = output.split('\n');
    assert.equal(parent!.trim(), EXECUTOR_IN_SANDBOX, 'the shell\'s parent is the executor\'s shepherd');
    // bubblewrap's init, the executor, its shepherd, the shell, ls and grep: a PID namespace of its own.
    assert.ok(Number(count) <= 8, `${count} processes seen`);
  });

  it('an answer\'s commands share one sandbox; one that kills its executor ends only itself, the next gets a new one', { skip: executorBuilt() ? false : 'belay-exec is not built (node scripts/build.ts)', timeout: 60_000 }, async () => {
    const mark = `sandbox-shared-${process.pid}-${Date.now()}`;
    const report = await executeAnswer(
      workspace,
      [
        '[RUN_COMMAND]\necho one > /tmp/shared; cat /tmp/shared\n[/RUN_COMMAND]',
        `[RUN_COMMAND]\n${markLine(mark)}\ncat /tmp/shared; setsid -f sleep 300; kill -9 $(pgrep -o -x .belay-exec); sleep 5; echo survived\n[/RUN_COMMAND]`,
        '[RUN_COMMAND]\ncat /tmp/shared 2>/dev/null || echo fresh\n[/RUN_COMMAND]',
      ].join('\n'),
      { env, shell: SANDBOXED, runTimeoutMs: 20_000 },
    );
    const [first, second, third] = report.results;
    assert.equal(first!.output, 'one');
    assert.equal(second!.output, 'one', 'the second command sees the first one\'s /tmp: the same sandbox');
    assert.match(second!.summary, /killed by SIGKILL/);
    assert.equal(third!.success, true, third!.summary);
    assert.equal(third!.output, 'fresh', 'a new sandbox, its own /tmp');
    assert.deepEqual(await processesMarked(mark), [], 'nothing of the killed sandbox is left');
  });

  it('builds still work: cc, npm, git, node_modules and caches readable, /tmp written then read', { timeout: 60_000 }, async (t) => {
    if (has('git')) spawnSync('git', ['init', '-q', ws]);
    await writeFile(path.join(ws, 'hello.c'), '#include <stdio.h>\nint main(void) { printf("compiled\\n"); return 0; }\n');
    const lines = [
      has('cc') ? 'cc -o hello hello.c && ./hello' : 'echo compiled',
      has('npm') ? 'npm --version >/dev/null && echo npm-ok' : 'echo npm-ok',
      has('git') ? 'git status --short | grep -q hello.c && echo git-ok' : 'echo git-ok',
      'cat ~/.npm/cache-entry',
      `ls ${path.join(repoRoot, 'node_modules')} | grep -q typescript && echo node-modules-ok`,
      'echo temp > /tmp/t && cat /tmp/t',
    ];
    if (!has('cc') || !has('npm') || !has('git')) t.diagnostic('some of cc, npm, git are missing: those lines only echo');
    const { output, result } = await run(lines.join(' && '));
    assert.equal(result.success, true, `${result.summary}\n${output}`);
    assert.deepEqual(output.split('\n'), ['compiled', 'npm-ok', 'git-ok', 'cached', 'node-modules-ok', 'temp']);
    assert.equal(existsSync(path.join(ws, 'hello')), true, 'the build wrote into the workspace');
    await rm(path.join(ws, 'hello'));
    await rm(path.join(ws, 'hello.c'));
    await rm(path.join(ws, '.git'), { recursive: true, force: true });
  });
});

function runWritable(): boolean {
  try {
    accessSync('/run', constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

function executorBuilt(): boolean {
  try {
    executorBinary();
    return true;
  } catch {
    return false;
  }
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

describe('where bubblewrap cannot make its namespaces (user namespaces off)', { skip: process.platform !== 'linux' }, () => {
  it('says so in one line, and the command runs unsandboxed, its result line saying so', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'belay-no-userns-'));
    try {
      // A bubblewrap that fails as the real one does where unprivileged user namespaces are off.
      const bin = path.join(dir, 'bin');
      await mkdir(bin);
      await writeFile(path.join(bin, 'bwrap'), '#!/bin/sh\necho "bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces." >&2\nexit 1\n', { mode: 0o755 });
      const env = { PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}` };
      const support = await detectSandbox('linux', env, []);
      assert.equal(support.ok, false);
      assert.match(!support.ok ? support.reason : '', /^bubblewrap cannot run here \(bwrap: No permissions to create new namespace, .*\); user namespaces may be off$/);
      await mkdir(path.join(dir, 'ws'));
      const report = await executeAnswer(await openWorkspace(path.join(dir, 'ws')), '[RUN_COMMAND]\necho ran\n[/RUN_COMMAND]', { env, sandbox: support });
      assert.match(report.shell ?? '', /^No sandbox here \(bubblewrap cannot run here .*\): commands run unsandboxed, as you, with every file you can read$/);
      assert.doesNotMatch(report.shell ?? '', /\n/);
      assert.equal(report.results[0]!.summary, "Ran 'echo ran' (exit code 0, unsandboxed)");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
