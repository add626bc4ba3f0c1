import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { isInternalAddress, matchRule, parseHostRule, stepVerifierNetwork, taskNetwork, type PhasePolicy } from '../../../src/runner/core/network/policy.ts';
import { namedHost, parseAuthority } from '../../../src/runner/core/network/proxy.ts';
import { clientHello } from '../../support/runner/tlsHello.ts';
import { tempDir } from '../../support/temp.ts';
import { loadTask, TaskError } from '../../../src/runner/core/tasks/task.ts';
import { NetworkRefused, openRunNetwork } from '../../../src/runner/core/run/taskEnvironment.ts';

describe('allowlist entries', () => {
  it('reads names, wildcards, ports and addresses', () => {
    assert.deepEqual(parseHostRule('PyPI.org'), { host: 'pypi.org', wildcard: false, port: undefined, address: false });
    assert.deepEqual(parseHostRule('*.github.com'), { host: 'github.com', wildcard: true, port: undefined, address: false });
    assert.deepEqual(parseHostRule('example.com:8080'), { host: 'example.com', wildcard: false, port: 8080, address: false });
    assert.deepEqual(parseHostRule('10.0.0.5:9000'), { host: '10.0.0.5', wildcard: false, port: 9000, address: true });
    assert.deepEqual(parseHostRule('[2001:db8::1]:8443'), { host: '2001:db8::1', wildcard: false, port: 8443, address: true });
    assert.deepEqual(parseHostRule('::1'), { host: '::1', wildcard: false, port: undefined, address: true });
  });

  it('refuses what is not a host, each with its reason', () => {
    for (const [entry, reason] of [
      ['https://pypi.org', /not a host/],
      ['pypi.org/simple', /not a host/],
      ['user@pypi.org', /not a host/],
      ['*', /may only lead/],
      ['*.com', /wildcard must cover a domain/],
      ['a.*.com', /'\*' may only lead/],
      ['pypi.org:0', /port must be 1 to 65535/],
      ['pypi.org:99999', /port must be 1 to 65535/],
      ['pypi.org:http', /port must be a number/],
      ['-bad-.org', /not a host name/],
      ['', /1 to 300 characters/],
    ] as const) {
      assert.throws(() => parseHostRule(entry), reason, entry);
    }
  });

  it('matches exact names, subdomains below a wildcard (never the domain itself), and ports', () => {
    const rules = ['pypi.org', '*.github.com', 'example.com:8080', '10.0.0.5:9000'].map(parseHostRule);
    assert.ok(matchRule(rules, 'pypi.org', 443));
    assert.ok(matchRule(rules, 'pypi.org', 80));
    assert.equal(matchRule(rules, 'pypi.org', 22), undefined);
    assert.equal(matchRule(rules, 'files.pypi.org', 443), undefined);
    assert.equal(matchRule(rules, 'evilpypi.org', 443), undefined);
    assert.ok(matchRule(rules, 'api.github.com', 443));
    assert.ok(matchRule(rules, 'a.b.github.com', 443));
    assert.equal(matchRule(rules, 'github.com', 443), undefined);
    assert.equal(matchRule(rules, 'notgithub.com', 443), undefined);
    assert.ok(matchRule(rules, 'example.com', 8080));
    assert.equal(matchRule(rules, 'example.com', 443), undefined);
    assert.ok(matchRule(rules, '10.0.0.5', 9000));
    assert.equal(matchRule(rules, '10.0.0.5', 443), undefined);
    // A name never matches an address entry, nor an address a name entry.
    assert.equal(matchRule([parseHostRule('1.2.3.4')], 'one.example', 443), undefined);
  });
});

describe('internal addresses', () => {
  it('knows loopback, link-local, private and the rest in both families, and mapped IPv4', () => {
    for (const address of ['127.0.0.1', '127.9.9.9', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1', 'fc00::1', 'fd12:3456::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:169.254.169.254', 'ff02::1']) {
      assert.equal(isInternalAddress(address), true, address);
    }
    for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '203.0.113.9', '2606:4700::1111', '::ffff:8.8.8.8']) {
      assert.equal(isInternalAddress(address), false, address);
    }
    assert.equal(isInternalAddress('not an address'), true);
  });
});

describe("a task's network per phase", () => {
  it('is no network when nothing is said', () => {
    assert.deepEqual(taskNetwork({}), { agent: { mode: 'no-network', allowedHosts: [] }, verifier: { mode: 'no-network', allowedHosts: [] } });
  });

  it('takes the baseline from [environment] and each phase its override', () => {
    const network = taskNetwork({
      environment: { network_mode: 'public' },
      agent: { network_mode: 'allowlist', allowed_hosts: ['pypi.org'] },
      verifier: { network_mode: 'no-network' },
    });
    assert.deepEqual(network.agent, { mode: 'allowlist', allowedHosts: ['pypi.org'] });
    assert.deepEqual(network.verifier, { mode: 'no-network', allowedHosts: [] });
  });

  it("gives an allowlist phase the baseline's hosts when it names none", () => {
    const network = taskNetwork({ environment: { network_mode: 'allowlist', allowed_hosts: ['a.example'] }, verifier: { allowed_hosts: ['b.example'] } });
    assert.deepEqual(network.agent, { mode: 'allowlist', allowedHosts: ['a.example'] });
    assert.deepEqual(network.verifier, { mode: 'allowlist', allowedHosts: ['b.example'] });
  });

  it("takes the verifier's baseline from [verifier.environment] where it says, [verifier] overriding it, and [environment]'s elsewhere", () => {
    // Its own environment's mode and hosts; the agent keeps the task's.
    const own = taskNetwork({ environment: { network_mode: 'allowlist', allowed_hosts: ['a.example'] }, verifier: { environment: { network_mode: 'allowlist', allowed_hosts: ['pkgs.example'] } } });
    assert.deepEqual(own, { agent: { mode: 'allowlist', allowedHosts: ['a.example'] }, verifier: { mode: 'allowlist', allowedHosts: ['pkgs.example'] } });
    // [verifier] network_mode is the phase's override over its environment's.
    assert.deepEqual(taskNetwork({ verifier: { network_mode: 'no-network', environment: { network_mode: 'public' } } }).verifier, { mode: 'no-network', allowedHosts: [] });
    // A table that says no mode leaves [environment]'s (its hosts, when it names some, for an allowlist).
    assert.deepEqual(taskNetwork({ environment: { network_mode: 'allowlist', allowed_hosts: ['a.example'] }, verifier: { environment: { cpus: 1 } } }).verifier, { mode: 'allowlist', allowedHosts: ['a.example'] });
    assert.deepEqual(taskNetwork({ environment: { network_mode: 'allowlist', allowed_hosts: ['a.example'] }, verifier: { environment: { allowed_hosts: ['b.example'] } } }).verifier, { mode: 'allowlist', allowedHosts: ['b.example'] });
    // Nothing said anywhere: none, as always.
    assert.deepEqual(taskNetwork({ verifier: { environment: { memory_mb: 512 } } }).verifier, { mode: 'no-network', allowedHosts: [] });
  });

  it("resolves a step's verifier network before the task's: its verifier.network_mode, then its verifier.environment's, then the task's", () => {
    const task: PhasePolicy = { mode: 'allowlist', allowedHosts: ['a.example'] };
    assert.equal(stepVerifierNetwork(undefined, task), undefined);
    assert.equal(stepVerifierNetwork({ environment: { cpus: 1 } }, task), undefined);
    assert.deepEqual(stepVerifierNetwork({ network_mode: 'no-network' }, task), { mode: 'no-network', allowedHosts: [] });
    assert.deepEqual(stepVerifierNetwork({ environment: { network_mode: 'allowlist', allowed_hosts: ['b.example'] } }, task), { mode: 'allowlist', allowedHosts: ['b.example'] });
    assert.deepEqual(stepVerifierNetwork({ network_mode: 'no-network', environment: { network_mode: 'public' } }, task), { mode: 'no-network', allowedHosts: [] });
    // Hosts alone: the task's mode with the step's list.
    assert.deepEqual(stepVerifierNetwork({ allowed_hosts: ['c.example'] }, task), { mode: 'allowlist', allowedHosts: ['c.example'] });
  });

  it('reads the older allow_internet = true as public, marked as such', () => {
    const network = taskNetwork({ environment: { allow_internet: true }, verifier: { network_mode: 'no-network' } });
    assert.deepEqual(network.agent, { mode: 'public', allowedHosts: [], legacy: true });
    assert.deepEqual(network.verifier, { mode: 'no-network', allowedHosts: [] });
  });
});

describe('what a tunnel names', () => {
  it('reads an HTTP Host and waits for the whole head', () => {
    assert.equal(namedHost(Buffer.from('GET / HTTP/1.1\r\nHost: other.example:443\r\n\r\n')), 'other.example');
    assert.equal(namedHost(Buffer.from('GET / HTTP/1.1\r\nHost: a')), 'wait');
    assert.equal(namedHost(Buffer.from('GE')), 'wait');
    assert.equal(namedHost(Buffer.from('SSH-2.0-x\r\n')), undefined);
  });

  it('reads a TLS ClientHello server name', () => {
    assert.equal(namedHost(clientHello('sni.example')), 'sni.example');
    assert.equal(namedHost(clientHello('sni.example').subarray(0, 20)), 'wait');
  });

  it('reads authorities', () => {
    assert.deepEqual(parseAuthority('a.example:443'), { host: 'a.example', port: 443 });
    assert.deepEqual(parseAuthority('[::1]:8443'), { host: '::1', port: 8443 });
    assert.equal(parseAuthority('a.example'), undefined);
    assert.deepEqual(parseAuthority('a.example', 80), { host: 'a.example', port: 80 });
  });
});

describe("task.toml's network and [environment.env]", () => {
  const tmp = tempDir('belay-netpolicy-');
  after(() => tmp.remove());
  let count = 0;
  const task = (toml: string) => loadTask(tmp.writeTask(`t${++count}`, { 'task.toml': toml, 'instruction.md': 'x', 'tests/test.sh': '' }));

  it('reads each phase and the variables', async () => {
    const loaded = await task('[environment]\nnetwork_mode = "no-network"\n[environment.env]\nGREETING = "hi"\nLEVEL = 3\n[agent]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pypi.org", "*.pythonhosted.org"]\n');
    assert.deepEqual(loaded.network, { agent: { mode: 'allowlist', allowedHosts: ['pypi.org', '*.pythonhosted.org'] }, verifier: { mode: 'no-network', allowedHosts: [] } });
    assert.deepEqual(loaded.env, { GREETING: 'hi', LEVEL: '3' });
  });

  it("reads [verifier.environment]'s network for the verifier", async () => {
    const loaded = await task('[environment]\nnetwork_mode = "no-network"\n[verifier.environment]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pkgs.example"]\ncpus = 1\n');
    assert.deepEqual(loaded.network, { agent: { mode: 'no-network', allowedHosts: [] }, verifier: { mode: 'allowlist', allowedHosts: ['pkgs.example'] } });
  });

  it('names the file and the field of a bad value, in one line', async () => {
    for (const [toml, field, reason] of [
      ['[[steps]]\nname = "one"\n[steps.verifier]\nnetwork_mode = "internet"\n', 'steps.0.verifier.network_mode', /must be one of/],
      ['[[steps]]\nname = "one"\n[steps.verifier.environment]\nallowed_hosts = ["http://x.org/"]\n', 'steps.0.verifier.environment.allowed_hosts.0', /not a host/],
      ['[verifier.environment]\nnetwork_mode = "internet"\n', 'verifier.environment.network_mode', /must be one of "no-network", "allowlist", "public"/],
      ['[verifier.environment]\nallowed_hosts = ["*.org"]\n', 'verifier.environment.allowed_hosts.0', /wildcard/],
      ['[agent]\nnetwork_mode = "internet"\n', 'agent.network_mode', /must be one of "no-network", "allowlist", "public"/],
      ['[verifier]\nallowed_hosts = ["https://x.org"]\n', 'verifier.allowed_hosts.0', /not a host/],
      ['[environment.env]\nTERM_TASK_ID = "mine"\n', 'environment.env.TERM_TASK_ID', /Belay's own variable/],
      ['[environment.env]\nHTTPS_PROXY = "http://elsewhere"\n', 'environment.env.HTTPS_PROXY', /Belay's own variable/],
      ['[environment.env]\nPATH = "/evil"\n', 'environment.env.PATH', /Belay's own variable/],
      ['[environment.env]\nX = "a\\u0000b"\n', 'environment.env.X', /NUL/],
      [`[environment.env]\nBIG = "${'x'.repeat(33 * 1024)}"\n`, 'environment.env.BIG', /over 32768 bytes/],
      ['[environment.env]\n"1BAD" = "x"\n', 'environment.env.1BAD', /variable name/],
    ] as const) {
      const error = await task(toml).then(() => undefined, (e: unknown) => e as Error);
      assert.ok(error instanceof TaskError, toml);
      assert.match(error.message, /task\.toml: /);
      assert.ok(error.message.includes(`field '${field}'`), `${error.message} should name ${field}`);
      assert.match(error.message, reason);
      assert.equal(error.message.includes('\n'), false);
    }
  });
});

describe('a grading with no agent phase (a regrade) reads only the verifier\'s network', () => {
  const tmp = tempDir('belay-netregrade-unit-');
  after(() => tmp.remove());
  let count = 0;
  const task = (toml: string) => loadTask(tmp.writeTask(`r${++count}`, { 'task.toml': toml, 'instruction.md': 'x', 'tests/test.sh': '' }));
  const open = async (toml: string, allowPublic: boolean) => {
    const loaded = await task(toml);
    const notes: string[] = [];
    const network = await openRunNetwork({ task: loaded, runDir: path.join(tmp.dir, `grading-${count}`), allowPublic, isolated: true, note: (n) => notes.push(n), verifierOnly: { refused: 'this trial is not regraded' } });
    return { loaded, network, notes };
  };

  it("an agent phase's public network is not asked for, nor noted: only the verifier's policy counts", async () => {
    const { network, notes } = await open('[agent]\nnetwork_mode = "public"\n[verifier]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pypi.org"]\n', false);
    assert.equal(network.agent.service, undefined);
    assert.deepEqual(network.verifier, { mode: 'allowlist', allowedHosts: ['pypi.org'] });
    assert.deepEqual(notes, ["verify phase network: allowlist (pypi.org), through Belay's proxy (HTTP and HTTPS only; every attempt in network.jsonl)"]);
    // The verifier's proxy starts only when asked, and its socket goes when it closes.
    const phase = await network.openVerifier();
    assert.ok(phase.service && existsSync(phase.service.socketPath));
    await phase.close();
    assert.equal(existsSync(phase.service.socketPath), false);
    await network.close();
    // Nothing written where the grading's log would go: no attempt was made.
    assert.equal(existsSync(path.join(tmp.dir, `grading-${count}`)), false);
  });

  it("a step's public verifier without the person's say is one line naming the step", async () => {
    const dir = tmp.writeTask(`r${++count}`, { 'task.toml': '[[steps]]\nname = "one"\n[steps.verifier]\nnetwork_mode = "public"\n', 'steps/one/instruction.md': 'x', 'steps/one/tests/test.sh': '' });
    const loaded = await loadTask(dir);
    const error = await openRunNetwork({ task: loaded, runDir: path.join(tmp.dir, 'never'), allowPublic: false, isolated: true, note: () => undefined }).then(() => undefined, (e: unknown) => e as Error);
    assert.ok(error instanceof NetworkRefused);
    assert.equal(error.message, `${path.join(dir, 'task.toml')}: step 'one': verifier network_mode "public" needs the public network, which belay.runner.allowPublicNetwork (--allow-public-network) does not allow; the run did not start`);
    const allowed = await openRunNetwork({ task: loaded, runDir: path.join(tmp.dir, 'never'), allowPublic: true, isolated: true, note: () => undefined });
    const phase = await allowed.openVerifier(loaded.steps!.steps[0]);
    assert.equal(phase.policy.mode, 'public');
    // Without the step, the task's own verifier policy: none.
    assert.equal((await allowed.openVerifier()).policy.mode, 'no-network');
    await allowed.close();
  });

  it("a verifier's public network without the person's say is one line ending with the grading's words; with it, a proxy", async () => {
    const toml = '[verifier]\nnetwork_mode = "public"\n';
    const error = await open(toml, false).then(() => undefined, (e: unknown) => e as Error);
    assert.ok(error instanceof NetworkRefused);
    assert.match(error.message, /task\.toml: \[verifier\] network_mode "public" needs the public network, which belay\.runner\.allowPublicNetwork \(--allow-public-network\) does not allow; this trial is not regraded$/);
    assert.ok(!error.message.includes('\n'));
    const { network } = await open(toml, true);
    const phase = await network.openVerifier();
    assert.equal(phase.policy.mode, 'public');
    assert.ok(phase.service);
    await network.close();
  });
});
