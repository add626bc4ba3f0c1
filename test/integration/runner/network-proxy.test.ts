// The allowlist proxy on its own: real HTTP and TCP servers on 127.0.0.1 stand for the named
// hosts (the resolver option maps names to them), and every attempt is read back from the log.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { EgressProxy, type NetworkLogEntry, type Resolved } from '../../../src/runner/core/network/proxy.ts';
import type { PhasePolicy } from '../../../src/runner/core/network/policy.ts';
import { tempDir } from '../../support/temp.ts';
import { clientHello } from '../../support/runner/tlsHello.ts';

const tmp = tempDir('belay-proxy-');
let web: http.Server;
let webPort = 0;
/** A raw TCP server that keeps what each connection sent (what a tunnel let through). */
let raw: net.Server;
let rawPort = 0;
const rawReceived: Buffer[] = [];

before(async () => {
  web = http.createServer((req, res) => res.end(`web ${req.headers.host} ${req.method} ${req.url}`));
  await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
  webPort = (web.address() as net.AddressInfo).port;
  raw = net.createServer((socket) => {
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      socket.write('got it');
    });
    socket.on('close', () => rawReceived.push(Buffer.concat(chunks)));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
  rawPort = (raw.address() as net.AddressInfo).port;
});
after(async () => {
  web.closeAllConnections();
  await new Promise((resolve) => web.close(resolve));
  await new Promise((resolve) => raw.close(resolve));
  tmp.remove();
});

/** Names as the tests' world has them: public-looking addresses that really lead to the loopback servers. */
const world = (): Record<string, Resolved[]> => ({
  'allowed.test': [{ address: '203.0.113.10', connect: { host: '127.0.0.1', port: webPort } }],
  'api.pkgs.test': [{ address: '203.0.113.11', connect: { host: '127.0.0.1', port: webPort } }],
  'tunnel.test': [{ address: '203.0.113.12', connect: { host: '127.0.0.1', port: rawPort } }],
  'solutions.test': [{ address: '203.0.113.13', connect: { host: '127.0.0.1', port: webPort } }],
  'rebind.test': [{ address: '127.0.0.1', connect: { host: '127.0.0.1', port: webPort } }],
  'metadata.test': [{ address: '203.0.113.14' }, { address: '169.254.169.254' }],
});

let proxies = 0;
async function startProxy(policy: PhasePolicy, extra: Partial<ConstructorParameters<typeof EgressProxy>[0]> = {}) {
  const logFile = path.join(tmp.dir, `network-${++proxies}.jsonl`);
  const names = world();
  const proxy = new EgressProxy({
    phase: 'agent',
    policy,
    logFile,
    resolve: async (host) => {
      const found = names[host];
      if (!found) throw new Error('no such name');
      return found;
    },
    ...extra,
  });
  const port = (await proxy.listen()) as number;
  const log = async (): Promise<NetworkLogEntry[]> => {
    await proxy.close();
    return existsSync(logFile) ? readFileSync(logFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as NetworkLogEntry) : [];
  };
  return { proxy, port, log };
}

const allowlist = (...hosts: string[]): PhasePolicy => ({ mode: 'allowlist', allowedHosts: hosts });

/** Writes `text`, then reads until the peer closes or `until` says the answer is whole. */
function exchange(port: number, text: string | Buffer, until?: (received: string) => boolean): Promise<{ text: string; closed: boolean; socket: net.Socket }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      resolve({ text: received, closed, socket });
    };
    socket.on('connect', () => socket.write(text));
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      if (until?.(received)) finish(false);
    });
    socket.on('close', () => finish(true));
    // A connection reset counts as closed (the proxy turning a connection away).
    socket.on('error', () => finish(true));
  });
}

const whole = (received: string) => {
  const head = received.indexOf('\r\n\r\n');
  if (head < 0) return false;
  const length = /content-length: (\d+)/i.exec(received.slice(0, head));
  return length ? received.length >= head + 4 + Number(length[1]) : false;
};

describe('the allowlist proxy', () => {
  it('forwards a plain http request to a named host and logs it', async () => {
    const { port, log } = await startProxy(allowlist('allowed.test'));
    const answer = await exchange(port, 'GET http://allowed.test/pkg?x=1 HTTP/1.1\r\nHost: allowed.test\r\nProxy-Authorization: nothing\r\n\r\n', whole);
    answer.socket.destroy();
    assert.match(answer.text, /^HTTP\/1\.1 200/);
    assert.match(answer.text, /web allowed\.test GET \/pkg\?x=1$/);
    const [entry, ...rest] = await log();
    assert.equal(rest.length, 0);
    assert.deepEqual({ ...entry, time: undefined }, { time: undefined, phase: 'agent', host: 'allowed.test', port: 80, allowed: true });
    assert.ok(!Number.isNaN(Date.parse(entry!.time)));
  });

  it('refuses a host not on the list with a clear 403, and a solution URL likewise, logging each', async () => {
    const { port, log } = await startProxy(allowlist('allowed.test', '*.pkgs.test'));
    const denied = await exchange(port, 'GET http://example.org/ HTTP/1.1\r\nHost: example.org\r\n\r\n', whole);
    denied.socket.destroy();
    assert.match(denied.text, /^HTTP\/1\.1 403/);
    assert.match(denied.text, /Belay's network policy refused example\.org:80: example\.org:80 is not on the allowlist/);
    const solution = await exchange(port, 'GET http://solutions.test/task/solution.sh HTTP/1.1\r\nHost: solutions.test\r\n\r\n', whole);
    solution.socket.destroy();
    assert.match(solution.text, /^HTTP\/1\.1 403/);
    const wildcard = await exchange(port, 'GET http://api.pkgs.test/ HTTP/1.1\r\nHost: api.pkgs.test\r\n\r\n', whole);
    wildcard.socket.destroy();
    assert.match(wildcard.text, /^HTTP\/1\.1 200/);
    const apex = await exchange(port, 'GET http://pkgs.test/ HTTP/1.1\r\nHost: pkgs.test\r\n\r\n', whole);
    apex.socket.destroy();
    assert.match(apex.text, /^HTTP\/1\.1 403/);
    const entries = await log();
    assert.deepEqual(entries.map((e) => [e.host, e.allowed]), [['example.org', false], ['solutions.test', false], ['api.pkgs.test', true], ['pkgs.test', false]]);
    assert.match(entries[1]!.reason!, /not on the allowlist/);
  });

  it('tunnels CONNECT to a named host, the bytes reaching it whole', async () => {
    const { port, log } = await startProxy(allowlist('tunnel.test:443'));
    const before = rawReceived.length;
    const hello = clientHello('tunnel.test');
    const tunnel = await exchange(port, 'CONNECT tunnel.test:443 HTTP/1.1\r\nHost: tunnel.test:443\r\n\r\n', (text) => text.includes('\r\n\r\n'));
    assert.match(tunnel.text, /^HTTP\/1\.1 200/);
    const reply = await new Promise<string>((resolve) => {
      tunnel.socket.once('data', (chunk) => resolve(chunk.toString()));
      tunnel.socket.write(hello);
    });
    assert.equal(reply, 'got it');
    tunnel.socket.destroy();
    const entries = await log();
    assert.deepEqual(entries.map((e) => [e.host, e.port, e.allowed]), [['tunnel.test', 443, true]]);
    await waitFor(() => rawReceived.length > before);
    assert.deepEqual(rawReceived.at(-1), hello);
  });

  it('refuses CONNECT to a private address, to a name that leads to one, and to an unnamed port', async () => {
    const { port, log } = await startProxy(allowlist('tunnel.test:443', 'rebind.test', 'metadata.test'));
    for (const target of [`127.0.0.1:${webPort}`, '169.254.169.254:80', '[::1]:443', 'rebind.test:443', 'metadata.test:80', 'tunnel.test:22']) {
      const answer = await exchange(port, `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`, whole);
      answer.socket.destroy();
      assert.match(answer.text, /^HTTP\/1\.1 403/, target);
    }
    const entries = await log();
    assert.equal(entries.length, 6);
    assert.ok(entries.every((e) => !e.allowed));
    assert.match(entries[3]!.reason!, /rebind\.test resolves to the internal address 127\.0\.0\.1/);
    assert.match(entries[4]!.reason!, /internal address 169\.254\.169\.254/);
  });

  it('lets an internal address through only when the allowlist names that address', async () => {
    const { port, log } = await startProxy(allowlist(`127.0.0.1:${webPort}`));
    const answer = await exchange(port, `GET http://127.0.0.1:${webPort}/direct HTTP/1.1\r\nHost: 127.0.0.1:${webPort}\r\n\r\n`, whole);
    answer.socket.destroy();
    assert.match(answer.text, /^HTTP\/1\.1 200/);
    assert.deepEqual((await log()).map((e) => e.allowed), [true]);
  });

  it('ends a tunnel whose TLS server name or Host names another host, and refuses a Host that differs from the URL', async () => {
    const { port, log } = await startProxy(allowlist('tunnel.test:443', 'allowed.test'));
    const before = rawReceived.length;
    const sni = await exchange(port, 'CONNECT tunnel.test:443 HTTP/1.1\r\n\r\n', (text) => text.includes('\r\n\r\n'));
    assert.match(sni.text, /^HTTP\/1\.1 200/);
    const sniClosed = new Promise((resolve) => sni.socket.once('close', resolve));
    sni.socket.write(clientHello('evil.example'));
    await sniClosed;
    const host = await exchange(port, 'CONNECT tunnel.test:443 HTTP/1.1\r\n\r\n', (text) => text.includes('\r\n\r\n'));
    const hostClosed = new Promise((resolve) => host.socket.once('close', resolve));
    host.socket.write('GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n');
    await hostClosed;
    const mismatch = await exchange(port, 'GET http://allowed.test/ HTTP/1.1\r\nHost: evil.example\r\n\r\n', whole);
    mismatch.socket.destroy();
    assert.match(mismatch.text, /^HTTP\/1\.1 403/);
    assert.match(mismatch.text, /Host header names evil\.example/);
    const entries = await log();
    assert.deepEqual(entries.map((e) => [e.host, e.allowed]), [['tunnel.test', true], ['evil.example', false], ['tunnel.test', true], ['evil.example', false], ['evil.example', false]]);
    assert.match(entries[1]!.reason!, /the tunnel to tunnel\.test named evil\.example inside/);
    // Nothing of the refused tunnels reached the host.
    assert.equal(rawReceived.length, before);
  });

  it('refuses what is not a proxy request and https in absolute form', async () => {
    const { port, log } = await startProxy(allowlist('allowed.test'));
    const origin = await exchange(port, 'GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n', whole);
    origin.socket.destroy();
    assert.match(origin.text, /^HTTP\/1\.1 400/);
    const https = await exchange(port, 'GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n', whole);
    https.socket.destroy();
    assert.match(https.text, /^HTTP\/1\.1 400/);
    assert.deepEqual((await log()).map((e) => e.allowed), [false, false]);
  });

  it('lets any public name through in public mode, never an internal one', async () => {
    const { port, log } = await startProxy({ mode: 'public', allowedHosts: [] });
    const ok = await exchange(port, 'GET http://solutions.test/ HTTP/1.1\r\nHost: solutions.test\r\n\r\n', whole);
    ok.socket.destroy();
    assert.match(ok.text, /^HTTP\/1\.1 200/);
    const internal = await exchange(port, 'GET http://rebind.test/ HTTP/1.1\r\nHost: rebind.test\r\n\r\n', whole);
    internal.socket.destroy();
    assert.match(internal.text, /^HTTP\/1\.1 403/);
    assert.deepEqual((await log()).map((e) => e.allowed), [true, false]);
  });

  it('judges every request of a kept-alive connection on its own', async () => {
    const { port, log } = await startProxy(allowlist('allowed.test'));
    const both = await exchange(port, 'GET http://allowed.test/one HTTP/1.1\r\nHost: allowed.test\r\n\r\nGET http://solutions.test/two HTTP/1.1\r\nHost: solutions.test\r\n\r\n', (text) => /HTTP\/1\.1 403/.test(text));
    both.socket.destroy();
    assert.match(both.text, /^HTTP\/1\.1 200[\s\S]*HTTP\/1\.1 403/);
    // Both judged (the second may be decided while the first still resolves: the log keeps decision order).
    assert.deepEqual((await log()).map((e) => [e.host, e.allowed]).sort(), [['allowed.test', true], ['solutions.test', false]]);
  });

  it('with the real resolver, never follows localhost to the host itself, even when it is allowed by name', async () => {
    const logFile = path.join(tmp.dir, 'network-dns.jsonl');
    const proxy = new EgressProxy({ phase: 'verifier', policy: { mode: 'allowlist', allowedHosts: ['localhost:' + String(webPort)] }, logFile });
    const port = (await proxy.listen()) as number;
    const answer = await exchange(port, `CONNECT localhost:${webPort} HTTP/1.1\r\n\r\n`, whole);
    answer.socket.destroy();
    assert.match(answer.text, /^HTTP\/1\.1 403/);
    assert.match(answer.text, /localhost resolves to the internal address (127\.0\.0\.1|::1)/);
    await proxy.close();
    const [entry] = readFileSync(logFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as NetworkLogEntry);
    assert.equal(entry!.phase, 'verifier');
    assert.equal(entry!.allowed, false);
  });

  it('bounds a flood of slow connections: the ones over the limit are closed, a slow head times out, and it serves again after', async () => {
    const { port, log } = await startProxy(allowlist('allowed.test'), { maxConnections: 4, headerTimeoutMs: 300 });
    const slow = await Promise.all(Array.from({ length: 4 }, () => openSocket(port)));
    const turnedAway = await exchange(port, 'GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n', whole);
    assert.equal(turnedAway.closed, true);
    assert.equal(turnedAway.text, '');
    // A head never finished is cut by the proxy, not kept forever.
    slow[0]!.write('GET http://allowed.test/ HTTP/1.1\r\nHost: allo');
    await new Promise((resolve) => slow[0]!.once('close', resolve));
    for (const socket of slow) socket.destroy();
    await waitFor(async () => {
      const again = await exchange(port, 'GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n', whole);
      again.socket.destroy();
      return /^HTTP\/1\.1 200/.test(again.text);
    });
    assert.ok((await log()).some((e) => e.allowed));
  });
});

function openSocket(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
    socket.on('error', reject);
  });
}

/** Polls a condition on the event loop's turns (never a fixed sleep), up to a generous bound. */
async function waitFor(condition: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('the condition did not hold');
    await new Promise((resolve) => setImmediate(resolve));
  }
}
