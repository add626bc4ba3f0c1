// The test hosts themselves (test/support/hosts/): each reachable from this machine only, by its
// own key only, with rootless podman of its own and the base image there; and gone, all of it,
// once removed.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { hostsUnavailable, makeHosts, type TestHosts } from '../../support/hosts/hosts.ts';

const unavailable = hostsUnavailable();
const BASE = 'localhost/belay-base:bookworm';

describe('test hosts', { skip: unavailable }, () => {
  let made: TestHosts;
  before(async () => {
    made = await makeHosts(2, { loadImage: BASE });
  });
  after(async () => {
    await made?.remove();
  });

  it('each host runs its own SSH server that lets its own user in with its own key, and no one else', () => {
    const [one, two] = made.hosts;
    assert.ok(one && two);
    assert.notEqual(one.address, two.address);
    const who = one.ssh('id -un; echo $XDG_RUNTIME_DIR');
    assert.equal(who.code, 0, who.stderr);
    assert.equal(who.stdout, `${one.user}\n/run/user/${one.uid}\n`);
    const ssh = (key: string, target: string, extra: string[] = []) =>
      spawnSync('ssh', ['-F', '/dev/null', '-o', `UserKnownHostsFile=${made.clientHome}/.ssh/known_hosts`, '-o', 'StrictHostKeyChecking=yes', '-o', 'BatchMode=yes', '-o', 'ConnectTimeout=10', '-i', key, ...extra, target, 'true'], { encoding: 'utf8', env: made.clientEnv });
    // Another key, the other host's user, root, and a password are all refused.
    const stranger = `${made.clientHome}/stranger`;
    assert.equal(spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', stranger]).status, 0);
    assert.match(ssh(stranger, `${one.user}@${one.address}`, ['-o', 'IdentitiesOnly=yes']).stderr, /Permission denied/);
    assert.match(ssh(one.identity, `${two.user}@${one.address}`).stderr, /Permission denied/);
    assert.match(ssh(one.identity, `root@${one.address}`).stderr, /Permission denied/);
    assert.match(ssh(one.identity, `${one.user}@${one.address}`, ['-o', 'PubkeyAuthentication=no', '-o', 'PasswordAuthentication=yes']).stderr, /Permission denied \(publickey\)/);
    // The host key is the one known here: a client that knows another key refuses to talk.
    const known = readFileSync(`${made.clientHome}/.ssh/known_hosts`, 'utf8');
    assert.equal(known.split('\n').filter((line) => line.startsWith(`${one.address} `)).length, 1);
  });

  it('a host has no route but its link to this machine', () => {
    const [one] = made.hosts;
    const routes = one!.ssh('ip -4 route; ip -6 route');
    assert.equal(routes.code, 0, routes.stderr);
    const lines = routes.stdout.trim().split('\n').filter((line) => line.trim() !== '');
    // The link's own subnet (and IPv6's link-local one), on the link: no default, no gateway.
    assert.ok(lines.length >= 1);
    for (const line of lines) assert.match(line, new RegExp(`^\\S+ dev ${one!.name}b proto kernel `), routes.stdout);
    assert.doesNotMatch(routes.stdout, /default|via/);
  });

  it('each host has rootless podman (runc) with its own storage and the base image loaded there', () => {
    for (const host of made.hosts) {
      const info = host.podman(['info', '--format', '{{.Host.OCIRuntime.Name}} {{.Host.Security.Rootless}} {{.Store.GraphRoot}}']);
      assert.equal(info.code, 0, info.stderr);
      assert.equal(info.stdout.trim(), `runc true /home/${host.user}/.local/share/containers/storage`);
      const ran = host.podman(['run', '--rm', '--network=none', BASE, 'sh', '-c', 'id -u; cat /etc/debian_version']);
      assert.equal(ran.code, 0, ran.stderr);
      assert.match(ran.stdout, /^0\n\d+\.\d+\n$/);
      assert.deepEqual(host.userProcesses(), []);
    }
    // One host's containers are not the other's.
    const [one, two] = made.hosts;
    const created = one!.podman(['create', '--name', 'only-here', BASE, 'true']);
    assert.equal(created.code, 0, created.stderr);
    assert.match(one!.podman(['ps', '-a', '--format', '{{.Names}}']).stdout, /only-here/);
    assert.doesNotMatch(two!.podman(['ps', '-a', '--format', '{{.Names}}']).stdout, /only-here/);
    assert.equal(one!.podman(['rm', 'only-here']).code, 0);
  });

  it('a host cut off answers nothing, and answers again once its link is back', () => {
    const [, two] = made.hosts;
    two!.setReachable(false);
    try {
      const cut = two!.ssh('true', 20_000);
      assert.notEqual(cut.code, 0);
    } finally {
      two!.setReachable(true);
    }
    assert.equal(two!.ssh('true').code, 0);
  });
});

describe('test hosts: removed', { skip: unavailable }, () => {
  it('leaves no namespace, link, user, home, process or runtime folder behind', async () => {
    const made = await makeHosts(1, { loadImage: BASE });
    const BASE_ON_HOST = BASE;
    const [host] = made.hosts;
    assert.ok(host);
    // A container left running and a stopped one: removing the host ends both.
    assert.equal(host.podman(['run', '-d', '--network=none', '--name', 'left', BASE_ON_HOST, 'sleep', '600']).code, 0);
    await made.remove();
    assert.equal(existsSync(`/run/netns/${host.name}`), false);
    assert.notEqual(spawnSync('ip', ['link', 'show', `${host.name}a`]).status, 0);
    assert.notEqual(spawnSync('id', [host.user]).status, 0);
    assert.equal(existsSync(`/home/${host.user}`), false);
    assert.equal(existsSync(`/run/user/${host.uid}`), false);
    assert.equal(spawnSync('pgrep', ['-u', String(host.uid)]).status, 1);
    assert.equal(existsSync(made.clientHome), false);
    await made.remove();
  });
});
