// Hostile answers against RUN_COMMAND: processes that leave the process group (setsid, double
// forks, nohup, daemons) and hold the output pipes. No process may outlive its RUN_COMMAND, and
// the timeout holds whatever the children do with the pipes. Each kind is tried in a PID
// namespace (what Linux gets when it can) and with the tree kill and sweep (what is left elsewhere),
// both as the unsandboxed shell, and in the sandbox (the default, its own PID namespace).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { executeAnswer } from '../../../src/blocks/core/executor.ts';
import { openWorkspace, type Workspace } from '../../../src/blocks/core/sandbox.ts';
import { detectSandbox, type ShellPolicy } from '../../../src/shared/commandSandbox.ts';
import { detectContainment, type Containment } from '../../../src/shared/containment.ts';
import { markedEnv, markLine, processesMarked, tempDir } from '../../support/blocks/helpers.ts';

let ws: string;
let cleanup: () => void;
let workspace: Workspace;

before(async () => {
  ({ dir: ws, remove: cleanup } = tempDir('belay-orphans-'));
  workspace = await openWorkspace(ws);
});
after(() => cleanup());

const has = (program: string) => spawnSync('sh', ['-c', `command -v ${program}`]).status === 0;

/** Ways a command leaves processes behind; each sleeps far longer than any test. */
const ORPHANS: Record<string, string> = {
  'a background child': 'sleep 300 &',
  'a nohup child': 'nohup sleep 300 >/dev/null 2>&1 &',
  'a setsid child holding stdout': 'setsid sleep 300 &',
  'a setsid -f child': 'setsid -f sleep 300',
  'a double fork into a new session': '(setsid sh -c "sleep 300 & sleep 300" &)',
  'a child that ignores TERM and HUP in its own group': 'sh -c \'trap "" TERM HUP INT; exec sleep 300\' & ',
  'a daemon (fork, setsid, fork, close the pipes)': `${has('python3') ? 'python3' : 'false'} -c "
import os, sys, time
if os.fork(): sys.exit(0)
os.setsid()
if os.fork(): sys.exit(0)
os.close(1); os.close(2)
time.sleep(300)"`,
};

const UNSANDBOXED: ShellPolicy = { mode: 'unsandboxed', network: true };
const containments: Array<[string, () => Promise<Containment>, ShellPolicy]> = [
  ['a PID namespace', detectContainment, UNSANDBOXED],
  ['the tree kill and sweep', async () => ({ kind: 'tree' }), UNSANDBOXED],
  ['the sandbox', async () => ({ kind: 'tree' }), { mode: 'sandboxed', network: false }],
];
const sandboxWorks = process.platform === 'linux' && has('bwrap') && (await detectSandbox()).ok;

for (const [how, containment, shell] of containments) {
  describe(`hostile answers: RUN_COMMAND with ${how}`, { skip: how === 'the sandbox' && !sandboxWorks }, () => {
    let contained: Containment;
    before(async () => {
      contained = await containment();
    });

    it('is what this machine can do', { skip: process.platform !== 'linux' || how === 'the sandbox' }, () => {
      if (how === 'the tree kill and sweep') {
        assert.equal(contained.kind, 'tree');
        return;
      }
      // Asked of the machine directly: a PID namespace shows its first command a /proc with a
      // handful of processes, where the host shows every process of the machine.
      const pidsSeen = (prefix: readonly string[]) => {
        const r = spawnSync(prefix[0]!, [...prefix.slice(1), 'sh', '-c', 'ls /proc | grep -c "^[0-9]"'], { encoding: 'utf8', timeout: 10_000 });
        return r.status === 0 ? Number(r.stdout.trim()) : undefined;
      };
      const probes = [
        has('bwrap') ? ['bwrap', '--dev-bind', '/', '/', '--proc', '/proc', '--unshare-pid', '--'] : undefined,
        has('unshare') ? ['unshare', '--pid', '--fork', '--mount-proc'] : undefined,
        has('unshare') ? ['unshare', '--user', '--map-current-user', '--pid', '--fork', '--mount-proc'] : undefined,
      ].filter((p): p is string[] => p !== undefined);
      const machineCan = probes.some((p) => (pidsSeen(p) ?? Infinity) < 5);
      assert.equal(contained.kind, machineCan ? 'namespace' : 'tree', `the machine ${machineCan ? 'can' : 'cannot'} make a PID namespace`);
      if (contained.kind === 'namespace') {
        const seen = pidsSeen(contained.prefix);
        assert.ok(seen !== undefined && seen < 5, `a command under ${contained.tool} sees ${seen} processes: not a PID namespace of its own`);
      }
    });

    for (const [name, orphan] of Object.entries(ORPHANS)) {
      it(`${name}: the command ends, and nothing it started is left`, { skip: !has('setsid') || process.platform !== 'linux', timeout: 30_000 }, async () => {
        const mark = `orphan-${process.pid}-${Math.random().toString(36).slice(2)}`;
        const report = await executeAnswer(workspace, `[RUN_COMMAND]\n${markLine(mark)}\n${orphan}\necho started\n[/RUN_COMMAND]`, { env: markedEnv(mark), containment: contained, shell, runTimeoutMs: 20_000 });
        const [result] = report.results;
        assert.equal(result!.success, true, result!.summary);
        assert.equal(result!.output?.split('\n').at(-1), 'started');
        assert.deepEqual(await processesMarked(mark), [], 'no process of the command is left');
      });
    }

    it('the timeout holds when a setsid child keeps the pipe open and the command never ends', { skip: !has('setsid') || process.platform !== 'linux', timeout: 30_000 }, async () => {
      const mark = `timeout-${process.pid}-${Math.random().toString(36).slice(2)}`;
      const report = await executeAnswer(workspace, `[RUN_COMMAND]\n${markLine(mark)}\nsetsid sh -c "echo held; sleep 300" &\n(setsid sleep 300 &)\nsleep 300\n[/RUN_COMMAND]`, {
        env: markedEnv(mark),
        containment: contained,
        shell,
        runTimeoutMs: 1000,
      });
      const [result] = report.results;
      assert.equal(result!.success, false);
      assert.match(result!.summary, /timed out after 1 s, process tree killed$/);
      assert.equal(result!.output, 'held');
      assert.deepEqual(await processesMarked(mark), [], 'no process of the command is left');
    });

    it('a fork bomb held back by the timeout leaves nothing', { skip: process.platform !== 'linux', timeout: 30_000 }, async () => {
      const mark = `forks-${process.pid}-${Math.random().toString(36).slice(2)}`;
      // Bounded (each level forks twice, 8 levels), so that a failure cannot take the machine down.
      const report = await executeAnswer(workspace, `[RUN_COMMAND]\n${markLine(mark)}\nf() { [ "$1" -gt 0 ] || { sleep 300; return; }; f $(($1 - 1)) & f $(($1 - 1)) & wait; }; f 8\n[/RUN_COMMAND]`, {
        env: markedEnv(mark),
        containment: contained,
        shell,
        runTimeoutMs: 1500,
      });
      assert.equal(report.results[0]!.success, false);
      assert.deepEqual(await processesMarked(mark), [], 'no process of the command is left');
    });
  });
}
