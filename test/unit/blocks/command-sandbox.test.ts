// The sandbox's pure parts (src/shared/commandSandbox.ts): bubblewrap's arguments in their order,
// the environment's allowlist, the places hidden (real files in a temp folder), the line that says
// how commands run. Running it for real is test/integration/blocks/hostile-sandbox.test.ts.
import assert from 'node:assert/strict';
import { mkdir, realpath, symlink, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { detectSandbox, EXECUTOR_IN_SANDBOX, hiddenPlaces, sandboxArguments, sandboxEnvironment, shellDescription, shownInPrivateTmp, tmpBytes } from '../../../src/shared/commandSandbox.ts';
import { tempDir } from '../../support/temp.ts';

describe('sandboxArguments', () => {
  const hidden = [
    { real: '/home/me/.ssh', folder: true },
    { real: '/home/me/.npmrc', folder: false },
    { real: '/tmp/inside-tmp', folder: true },
  ];
  const args = sandboxArguments({ workspace: '/home/me/ws', network: false, hidden, emptyFile: '/var/empty-file', root: false });

  it('binds the system read-only first, then the workspace writable, then covers each hidden place', () => {
    assert.deepEqual(args.slice(0, 3), ['--ro-bind', '/', '/']);
    const workspace = args.indexOf('--bind');
    assert.deepEqual(args.slice(workspace, workspace + 3), ['--bind', '/home/me/ws', '/home/me/ws']);
    const ssh = args.indexOf('/home/me/.ssh');
    assert.ok(ssh > workspace, 'a place inside the workspace must be covered after the workspace is bound');
    assert.deepEqual(args.slice(ssh - 1, ssh + 3), ['--tmpfs', '/home/me/.ssh', '--remount-ro', '/home/me/.ssh']);
    const npmrc = args.indexOf('/home/me/.npmrc');
    assert.deepEqual(args.slice(npmrc - 2, npmrc + 1), ['--ro-bind', '/var/empty-file', '/home/me/.npmrc']);
    assert.ok(!args.includes('/tmp/inside-tmp'), 'the private /tmp hides it already (bubblewrap could not mount there before /tmp)');
  });

  it('has private /tmp and /var/tmp, fresh /dev and /proc, and ends at the command', () => {
    for (const [option, target] of [['--tmpfs', '/tmp'], ['--tmpfs', '/var/tmp'], ['--dev', '/dev'], ['--proc', '/proc']] as const) {
      assert.ok(args.some((a, i) => a === option && args[i + 1] === target), `${option} ${target}`);
    }
    assert.ok(args.indexOf('--tmpfs') < args.indexOf('--bind'), 'a workspace under /tmp is bound after the private /tmp');
    assert.deepEqual(args.slice(-4), ['--new-session', '--chdir', '/home/me/ws', '--']);
  });

  it('binds the executor read-only where the sandbox always sees it, when there is one', () => {
    assert.ok(!args.includes(EXECUTOR_IN_SANDBOX));
    const withExecutor = sandboxArguments({ workspace: '/w', network: false, hidden: [], emptyFile: '/e', root: false, executor: '/opt/belay/dist/native/linux-x64/belay-exec' });
    const at = withExecutor.indexOf(EXECUTOR_IN_SANDBOX);
    assert.deepEqual(withExecutor.slice(at - 2, at + 1), ['--ro-bind', '/opt/belay/dist/native/linux-x64/belay-exec', EXECUTOR_IN_SANDBOX]);
    assert.ok(at > withExecutor.indexOf('/tmp'), 'bound after the private /tmp it lives in');
  });

  it('bounds the private temp folders (their files are memory) where bubblewrap takes a size', () => {
    assert.ok(!args.includes('--size'));
    const sized = sandboxArguments({ workspace: '/w', network: false, hidden: [], emptyFile: '/e', root: false, tmpBytes: 1234 });
    const tmp = sized.indexOf('/tmp');
    assert.deepEqual(sized.slice(tmp - 3, tmp + 1), ['--size', '1234', '--tmpfs', '/tmp']);
    const varTmp = sized.indexOf('/var/tmp');
    assert.deepEqual(sized.slice(varTmp - 3, varTmp + 1), ['--size', '1234', '--tmpfs', '/var/tmp']);
    assert.equal(tmpBytes(8 * 1024 ** 3), 2 * 1024 ** 3);
    assert.equal(tmpBytes(64 * 1024 ** 3), 4 * 1024 ** 3);
    assert.equal(tmpBytes(7 * 1024 ** 3 + 12345) % (1024 * 1024), 0, 'whole MiB: the tmpfs holds exactly that');
  });

  it('keeps the kernel\'s settings read-only, and binds back what the resolver reads last', () => {
    assert.ok(args.some((a, i) => a === '--ro-bind-try' && args[i + 1] === '/proc/sys' && args[i + 2] === '/proc/sys'));
    assert.ok(args.indexOf('/proc/sys') > args.indexOf('--proc'), 'over the fresh /proc');
    const online = sandboxArguments({ workspace: '/w', network: true, hidden: [{ real: '/run', folder: true }], emptyFile: '/e', root: false, boundBack: ['/run/systemd/resolve/stub-resolv.conf'] });
    const back = online.lastIndexOf('/run/systemd/resolve/stub-resolv.conf');
    assert.deepEqual(online.slice(back - 2, back + 1), ['--ro-bind-try', '/run/systemd/resolve/stub-resolv.conf', '/run/systemd/resolve/stub-resolv.conf']);
    assert.ok(back > online.indexOf('/run'), 'after /run is hidden');
  });

  it('unshares the network only when it is off, and drops capabilities as root', () => {
    for (const ns of ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--die-with-parent']) assert.ok(args.includes(ns), ns);
    assert.ok(args.includes('--unshare-net'));
    assert.ok(!args.includes('--cap-drop'), 'without root bubblewrap keeps no capability (and refuses --cap-drop in setuid mode)');
    const online = sandboxArguments({ workspace: '/w', network: true, hidden: [], emptyFile: '/e', root: true });
    assert.ok(!online.includes('--unshare-net'));
    assert.deepEqual(online.slice(online.indexOf('--cap-drop'), online.indexOf('--cap-drop') + 2), ['--cap-drop', 'ALL']);
  });
});

describe('sandboxEnvironment', () => {
  it('keeps the allowlist (path, home, locale, toolchains) and nothing else', () => {
    const env = sandboxEnvironment({
      PATH: '/usr/bin',
      HOME: '/home/me',
      LANG: 'C.UTF-8',
      LC_ALL: 'C',
      CARGO_HOME: '/home/me/.cargo',
      ANTHROPIC_API_KEY: 'sk-x',
      OPENAI_API_KEY: 'sk-y',
      GITHUB_TOKEN: 'ghp',
      SSH_AUTH_SOCK: '/run/user/1/ssh',
      BELAY_GATEWAY_TOKEN: 't',
      NODE_OPTIONS: '--require /tmp/evil.js',
      LD_PRELOAD: '/tmp/evil.so',
      LC_EVIL_TOKEN: 'x',
    });
    assert.deepEqual(env, { PATH: '/usr/bin', HOME: '/home/me', LANG: 'C.UTF-8', LC_ALL: 'C', CARGO_HOME: '/home/me/.cargo', TMPDIR: '/tmp' });
  });

  it('gives a PATH when Belay has none', () => {
    assert.equal(sandboxEnvironment({}).PATH, '/usr/local/bin:/usr/bin:/bin');
  });
});

describe('hiddenPlaces', () => {
  let dir: string;
  let remove: () => void;
  before(() => {
    ({ dir, remove } = tempDir('belay-hidden-'));
  });
  after(() => remove());

  it('finds the credential places that exist, by their real path, and never one holding the workspace', async () => {
    const home = path.join(dir, 'home');
    await mkdir(path.join(home, '.ssh'), { recursive: true });
    await mkdir(path.join(home, 'real-aws'), { recursive: true });
    await symlink(path.join(home, 'real-aws'), path.join(home, '.aws'));
    await writeFile(path.join(home, '.netrc'), 'x');
    await mkdir(path.join(home, '.config', 'Code', 'User', 'globalStorage'), { recursive: true });
    const ws = path.join(home, '.config', 'Code', 'ws');
    await mkdir(ws);
    const places = await hiddenPlaces(await realpath(ws), home);
    const reals = places.map((p) => p.real);
    assert.ok(reals.includes(path.join(home, '.ssh')));
    assert.ok(reals.includes(path.join(home, 'real-aws')), 'a link hides its target');
    assert.ok(!reals.includes(path.join(home, '.aws')));
    assert.deepEqual(places.find((p) => p.real === path.join(home, '.netrc')), { real: path.join(home, '.netrc'), folder: false });
    assert.ok(!reals.includes(path.join(home, '.config', 'Code')), 'the workspace is inside it: hiding it would hide the workspace');
    assert.ok(!reals.includes(path.join(home, '.gnupg')), 'what does not exist is not mounted over');
  });

  it('hides a place inside the workspace too, and one folder for what nests in it', async () => {
    const home = path.join(dir, 'home2');
    await mkdir(path.join(home, '.config', 'gh'), { recursive: true });
    await mkdir(path.join(home, '.config', 'Code'), { recursive: true });
    const places = await hiddenPlaces(home, home, [path.join(home, '.config')]);
    const reals = places.map((p) => p.real);
    assert.ok(reals.includes(path.join(home, '.config')), 'an extra place (the mailbox setting) is hidden');
    assert.ok(!reals.includes(path.join(home, '.config', 'gh')), 'inside a hidden folder: no mount of its own');
  });
});

describe('what of /tmp stays shown', () => {
  const tmp = tempDir('belay-shown-');
  after(() => tmp.remove());

  it('shows a home and the toolchains on PATH that live under /tmp (a whole node_modules for its .bin), read-only after the private /tmp, and hides the credentials inside them', async () => {
    const root = await realpath(tmp.dir);
    if (!root.startsWith('/tmp/')) return;
    const home = path.join(root, 'home');
    const bin = path.join(root, 'checkout', 'node_modules', '.bin');
    await mkdir(path.join(home, '.ssh'), { recursive: true });
    await mkdir(bin, { recursive: true });
    const shown = await shownInPrivateTmp(home, `${bin}:/usr/bin:${path.join(root, 'missing')}:relative`);
    assert.deepEqual(shown, [home, path.dirname(bin)]);
    assert.deepEqual(await shownInPrivateTmp('/root', '/usr/bin:/bin'), [], 'nothing under /tmp: nothing shown');
    const args = sandboxArguments({ workspace: path.join(root, 'ws'), network: false, hidden: [{ real: path.join(home, '.ssh'), folder: true }], emptyFile: '/dev/null', root: false, shownInTmp: shown });
    const at = (flag: string, value: string) => args.findIndex((arg, i) => arg === flag && args[i + 1] === value);
    assert.ok(at('--tmpfs', '/tmp') < at('--ro-bind-try', home), 'shown after the private /tmp is made');
    assert.ok(at('--ro-bind-try', home) < at('--bind', path.join(root, 'ws')));
    assert.ok(at('--tmpfs', path.join(home, '.ssh')) > at('--ro-bind-try', home), 'a credential place under a shown home is still hidden');
  });
});

describe('shellDescription', () => {
  it('names the sandbox and its network, the unsandboxed shell and where it was chosen, and no sandbox', () => {
    assert.equal(shellDescription({ mode: 'sandboxed', network: false }, { ok: true, bwrap: '/usr/bin/bwrap' }), 'Sandboxed: the workspace and a private /tmp writable, the system read-only, credentials hidden, network off');
    assert.match(shellDescription({ mode: 'sandboxed', network: true }, { ok: true, bwrap: '/usr/bin/bwrap' }), /network on$/);
    assert.equal(
      shellDescription({ mode: 'unsandboxed', network: true, chosenBy: 'setting belay.blocks.commandSandbox' }, { ok: false, reason: '' }),
      'Unsandboxed shell (setting belay.blocks.commandSandbox): commands run as you, with every file you can read and the network',
    );
    assert.equal(
      shellDescription({ mode: 'sandboxed', network: false }, { ok: false, reason: 'bubblewrap (bwrap) is not installed' }),
      'No sandbox here (bubblewrap (bwrap) is not installed): commands run unsandboxed, as you, with every file you can read',
    );
  });

  it('says why where no sandbox works: another system, no bubblewrap', async () => {
    assert.deepEqual(await detectSandbox('darwin'), { ok: false, reason: 'macOS: Belay\'s sandbox is bubblewrap, on Linux' });
    assert.deepEqual(await detectSandbox('win32'), { ok: false, reason: 'Windows: Belay\'s sandbox is bubblewrap, on Linux' });
    assert.deepEqual(await detectSandbox('linux', { PATH: '/nonexistent' }, ['/nonexistent-either']), { ok: false, reason: 'bubblewrap (bwrap) is not installed' });
  });
});
