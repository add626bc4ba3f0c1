import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdirSync, readdirSync, symlinkSync, type Dirent } from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runBounded } from '../../../src/shared/process.ts';
import type { Backend, BackendSession, RunFolders } from '../../../src/runner/core/backends/backend.ts';
import { checkServices, connectablePath, insidePort, MAX_SOCKET_PATH, SERVICE_PORT_BASE, socketFolder, socketRoot } from '../../../src/runner/core/backends/services.ts';
import { runFiles } from '../../../src/runner/core/records/records.ts';
import { loadTask, type Task } from '../../../src/runner/core/tasks/task.ts';
import { containerOrReason } from '../../support/runner/container-helpers.ts';
import { backends, nodeDir, processesWith, tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-services-');
// Resolved before any test or hook is registered (node:test starts root hooks after a top-level await).
const task: Task = await loadTask(tmp.writeTask('svc-task', { 'task.toml': '[agent]\ntimeout_sec = 60.0\n[verifier]\ntimeout_sec = 30.0\n', 'instruction.md': 'Nothing.\n', 'tests/test.sh': 'exit 0\n' }));
const all: { name: string; get: () => Promise<Backend | Error> }[] = [
  ...backends,
  { name: 'container', get: containerOrReason },
];
const available = await Promise.all(all.map(async (b) => ({ ...b, backend: await b.get() })));
after(() => tmp.remove());

/** A folder whose paths are far beyond a socket address's 107 bytes, as in a deep project. */
const deep = path.join(tmp.dir, ...Array.from({ length: 8 }, (_, i) => `a-rather-long-project-folder-name-${i}`));
mkdirSync(deep, { recursive: true });
const serviceSocket = path.join(deep, 'gateway.sock');
/** A service name no other test process uses, to find its processes by. */
const serviceName = `svc${process.pid}`;

let server: http.Server;
before(async () => {
  assert.ok(Buffer.byteLength(serviceSocket) > 107 && Buffer.byteLength(deep) > 200);
  server = http.createServer((req, res) => res.end(`hello from the host: ${req.method} ${req.url}`));
  // Node cannot listen on a path this long either: it listens through a short link, as Belay connects.
  const shortDir = await socketFolder();
  const link = await connectablePath(serviceSocket, shortDir.path, 'listen');
  await new Promise<void>((resolve) => server.listen(path.join(shortDir.path, 'real.sock'), resolve));
  // The long path is a symlink to the real socket: connecting through it reaches the server.
  symlinkSync(path.join(shortDir.path, 'real.sock'), serviceSocket);
  assert.ok(link.length < 100);
});
after(() => server.close());

// A plain HTTP GET with bash alone (every backend here has bash): the answer, or why not.
const GET = 'exec 3<>/dev/tcp/127.0.0.1/$0 || exit 7; printf "GET /ping HTTP/1.0\\r\\nHost: x\\r\\n\\r\\n" >&3; cat <&3';
// The same with Node's http client where the agent's Node is shown.
const NODE_GET = "require('http').get(process.env.URL+'/v1/models',(r)=>{let b='';r.on('data',(c)=>b+=c);r.on('end',()=>console.log(r.statusCode,b))}).on('error',(e)=>{console.log('error',e.message);process.exit(7)})";

function folders(root: string): RunFolders {
  const files = runFiles(path.join(root, 'run'));
  mkdirSync(files.workspace, { recursive: true });
  return { workspace: files.workspace, tests: files.tests, logs: files.logs, control: files.control, scratch: files.scratch, environmentLog: files.environmentLog };
}

async function run(session: BackendSession, argv: [string, ...string[]], env: Record<string, string> = {}) {
  const result = await runBounded({ start: (output) => session.spawn({ argv, env, ...output }), timeoutMs: 60_000, maxOutputChars: 10_000 });
  return { code: result.exitCode, out: result.stdout.text(""), err: `${result.stderr.text("")} (signal ${result.signal}, timed out ${result.timedOut})` };
}

const port = (session: BackendSession) => new URL(session.serviceUrl(serviceName)).port;


/**
 * Every path below `root`, relative to it. The folder is shared with the other sessions running
 * beside this test: a folder one of them removes during the walk is passed over, not an error.
 */
function entriesUnder(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      found.push(path.relative(root, full));
      if (entry.isDirectory()) walk(full);
    }
  };
  walk(root);
  return found;
}
describe('host services: the parts', () => {
  it('checks service names and gives each a fixed port inside, in order', () => {
    const services = checkServices([{ name: 'llm', socketPath: '/run/a.sock' }, { name: 'other-1', socketPath: '/run/b.sock' }]);
    assert.equal(insidePort(services, 'llm'), SERVICE_PORT_BASE);
    assert.equal(insidePort(services, 'other-1'), SERVICE_PORT_BASE + 1);
    assert.throws(() => insidePort(services, 'nope'), /no service named 'nope'/);
    assert.throws(() => checkServices([{ name: '../x', socketPath: '/a' }]), /letters, digits/);
    assert.throws(() => checkServices([{ name: 'a', socketPath: '/a' }, { name: 'a', socketPath: '/b' }]), /given twice/);
    assert.throws(() => checkServices([{ name: 'a', socketPath: 'relative.sock' }]), /absolute/);
  });

  it('keeps sockets in a short folder of this user only, mode 0700, removed when done', async () => {
    const root = socketRoot();
    assert.ok(Buffer.byteLength(root) <= MAX_SOCKET_PATH - 40);
    assert.equal(lstatSync(root).mode & 0o777, 0o700);
    const folder = await socketFolder();
    assert.equal(lstatSync(folder.path).mode & 0o777, 0o700);
    await folder.remove();
    assert.equal(existsSync(folder.path), false);
    // A folder planted by someone else (here: group-writable) is never used.
    const planted = path.join(tmp.dir, 'runtime');
    mkdirSync(path.join(planted, 'belay'), { recursive: true, mode: 0o777 });
    const other = socketRoot({ XDG_RUNTIME_DIR: planted });
    assert.notEqual(other, path.join(planted, 'belay'));
  });
});


for (const { name, backend } of available) {
  describe(`host services (${name} backend)`, { skip: backend instanceof Error ? backend.message : false }, () => {
    const be = backend as Backend;

    it('the agent phase reaches the service over HTTP at serviceUrl; the verify phase cannot; nothing is left after close', async () => {
      const root = path.join(deep, name);
      const session = await be.open({ runId: `svc-${name}-${process.pid}`, task, folders: folders(root), agentFolders: [nodeDir], hidden: [], services: [{ name: serviceName, socketPath: serviceSocket }] });
      let closed = false;
      try {
        assert.match(session.serviceUrl(serviceName), /^http:\/\/127\.0\.0\.1:\d+$/);
        assert.throws(() => session.serviceUrl('llm'), /no service named 'llm'/);
        const got = await run(session, ['/bin/bash', '-c', GET, port(session)]);
        assert.equal(got.code, 0, got.err);
        assert.match(got.out, /^HTTP\/1\.[01] 200/);
        assert.match(got.out, /hello from the host: GET \/ping/);
        const viaNode = await run(session, [process.execPath, '-e', NODE_GET], { URL: session.serviceUrl(serviceName) });
        assert.equal(viaNode.out.trim(), '200 hello from the host: GET /v1/models', viaNode.err);
        if (name !== 'local') {
          // An isolated backend's agent phase reaches the service through its executor's channel: no socket of the host is shown, nor its path.
          const listed = await run(session, ['/bin/sh', '-c', `ls -A /run/belay 2>/dev/null; test -e '${serviceSocket}' && echo host-path-visible; true`]);
          assert.equal(listed.out.trim(), '');
        }

        if (name === 'sandbox') {
          // The bridge is the command's parent: killing it ends the sandbox, the agent with it.
          const killed = await run(session, ['/bin/bash', '-c', 'kill -9 $PPID; sleep 3; echo survived']);
          assert.doesNotMatch(killed.out, /survived/);
          assert.notEqual(killed.code, 0);
        }

        const agentPort = port(session);
        await session.endAgentPhase();
        await session.startVerifyPhase();
        // The verify phase was given no service: none answers, and it has none to name.
        assert.throws(() => session.serviceUrl(serviceName), /no service named/);
        const refused = await run(session, ['/bin/bash', '-c', GET, agentPort]);
        assert.notEqual(refused.code, 0);
        assert.doesNotMatch(refused.out, /hello from the host/);
        if (name !== 'local') {
          const socket = await run(session, ['/bin/sh', '-c', 'ls -A /run/belay 2>/dev/null; true']);
          assert.equal(socket.out.trim(), '', 'the verify phase finds no socket to reach');
        }
      } finally {
        await session.close();
        closed = true;
        // The service's name is this test process's own: no socket of it is left in Belay's socket folders.
        const left = entriesUnder(socketRoot()).filter((entry) => entry.includes(serviceName));
        assert.deepEqual(left, [], 'the session removes its sockets at close');
      }
      assert.ok(closed);
      assert.deepEqual(processesWith(`/run/belay/${serviceName}.sock`), [], 'no forwarder or bridge is left');
      assert.deepEqual(processesWith('belay-forwarder-ready').filter((p) => p.includes(serviceName)), []);
    });

    it("the verify phase reaches only the services given to it, never the agent phase's", async () => {
      const verifierSocket = path.join(deep, `${name}-verifier.sock`);
      const verifierServer = http.createServer((req, res) => res.end(`hello from the verifier's service: ${req.method} ${req.url}`));
      // Long like the agent's: listened on through a short link, reached through the long path.
      const shortDir = await socketFolder();
      await new Promise<void>((resolve) => verifierServer.listen(path.join(shortDir.path, 'verifier.sock'), resolve));
      symlinkSync(path.join(shortDir.path, 'verifier.sock'), verifierSocket);
      const verifierName = `verifier${process.pid}`;
      const session = await be.open({ runId: `svc-verify-${name}-${process.pid}`, task, folders: folders(path.join(deep, `${name}-verify`)), agentFolders: [nodeDir], hidden: [], services: [{ name: serviceName, socketPath: serviceSocket }] });
      try {
        assert.throws(() => session.serviceUrl(verifierName), /no service named/);
        const agentPort = port(session);
        await session.endAgentPhase();
        await session.startVerifyPhase([{ name: verifierName, socketPath: verifierSocket }]);
        assert.throws(() => session.serviceUrl(serviceName), /no service named/);
        const verifierPort = new URL(session.serviceUrl(verifierName)).port;
        const got = await run(session, ['/bin/bash', '-c', GET, verifierPort]);
        assert.equal(got.code, 0, got.err);
        assert.match(got.out, /hello from the verifier's service: GET \/ping/);
        if (agentPort !== verifierPort) {
          // The local backend's ports differ between the phases: the agent phase's is closed.
          const refused = await run(session, ['/bin/bash', '-c', GET, agentPort]);
          assert.notEqual(refused.code, 0);
        }
        assert.doesNotMatch(got.out, /hello from the host/);
      } finally {
        await session.close();
        verifierServer.close();
        await shortDir.remove();
      }
      const left = entriesUnder(socketRoot()).filter((entry) => entry.includes(verifierName));
      assert.deepEqual(left, [], 'the session removes the verify phase\'s sockets at close');
    });
  });
}
