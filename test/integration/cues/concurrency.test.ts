import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, it } from 'node:test';
import { Mailbox } from '../../../src/cues/core/store.ts';
import { buildBundles, childEnv, envelope, run, start, tempHome, waitUntil, type Bundles, type Running } from '../../support/cues/helpers.ts';

describe('concurrency', () => {
  let bin: Bundles;
  before(async () => {
    bin = await buildBundles();
  });
  after(() => rmSync(bin.dir, { recursive: true, force: true }));

  it('20 cueme cue processes at once on a new mailbox, each answered differently: each gets its own answer, one response row each', async () => {
    const home = tempHome();
    const env = childEnv(home.cueHome);
    const agents = Array.from({ length: 20 }, (_, i) => `agent${String.fromCharCode(97 + i)}xyz`);
    // All start before the mailbox exists: they race to create it too.
    const cues = new Map<string, Running>(agents.map((agent) => [agent, start(bin.cueme, ['cue', agent, '-'], { env, input: envelope(`Question from ${agent}`), timeoutMs: 60_000 })]));
    // Opening creates the mailbox too if this process wins the race: harmless, all creators agree.
    const mailbox = Mailbox.open({ home: home.cueHome });
    try {
      const pending = await waitUntil(mailbox, () => {
        const rows = mailbox.listRequests({ pendingOnly: true });
        return rows.length === agents.length ? rows : undefined;
      }, 'all 20 requests', 30_000);
      assert.deepEqual(pending.map((e) => e.agentId).sort(), [...agents].sort());

      // Answer all at once, each through its own `belay cues answer` process.
      const answers = await Promise.all(pending.map((entry) => run(bin.belay, ['cues', 'answer', entry.requestId, '--text', `answer for ${entry.agentId}`], { env, timeoutMs: 60_000 })));
      for (const a of answers) assert.equal(a.code, 0, a.stderr);

      for (const [agent, cue] of cues) {
        const result = await cue.done;
        assert.equal(result.code, 0, `${agent}: ${result.stderr}`);
        assert.equal(result.stderr, '', agent);
        assert.match(result.stdout, new RegExp(`gave these instructions:\\n\\nanswer for ${agent}\\n`), agent);
        assert.equal((result.stdout.match(/answer for /g) ?? []).length, 1, agent);
      }
      const db = new DatabaseSync(mailbox.paths.dbPath);
      try {
        const rows = db.prepare('SELECT r.agent_id AS agent, COUNT(s.id) AS n, MAX(s.response_json) AS j FROM cue_requests r LEFT JOIN cue_responses s USING (request_id) GROUP BY r.request_id').all() as Array<{ agent: string; n: number; j: string }>;
        assert.equal(rows.length, agents.length);
        for (const row of rows) {
          assert.equal(row.n, 1, row.agent);
          assert.deepEqual(JSON.parse(row.j), { text: `answer for ${row.agent}` });
        }
      } finally {
        db.close();
      }
    } finally {
      for (const cue of cues.values()) cue.child.kill('SIGKILL');
      mailbox.close();
      home.remove();
    }
  });

  it('a cueme killed with -9 leaves its cue abandoned: `belay cues answer` refuses it and writes nothing', async () => {
    const home = tempHome();
    const env = childEnv(home.cueHome);
    const cue = start(bin.cueme, ['cue', 'doomedagent', '-'], { env, input: envelope('Delete the production database?', { type: 'confirm', text: 'Really?' }), timeoutMs: 60_000 });
    const mailbox = Mailbox.open({ home: home.cueHome });
    try {
      const entry = await waitUntil(mailbox, () => mailbox.listRequests({ pendingOnly: true })[0], 'the request');
      assert.equal(entry.waiter?.pid, cue.child.pid, 'cueme records itself as the waiter');
      assert.equal(mailbox.liveness(entry), 'alive');
      const alive = JSON.parse((await run(bin.belay, ['cues', 'list', '--json'], { env })).stdout) as Array<Record<string, unknown>>;
      assert.equal(alive[0]?.waiter, 'alive');
      assert.doesNotMatch((await run(bin.belay, ['cues', 'list'], { env })).stdout, /ABANDONED/);
      cue.child.kill('SIGKILL');
      assert.equal((await cue.done).signal, 'SIGKILL');
      assert.equal(mailbox.liveness(mailbox.getRequest(entry.requestId)!), 'gone');
      // belay cues list says so, in words and in JSON.
      const listed = await run(bin.belay, ['cues', 'list'], { env });
      assert.match(listed.stdout, new RegExp(`${entry.requestId} .*ABANDONED: its waiting process is gone, so it cannot be answered`));
      const rows = JSON.parse((await run(bin.belay, ['cues', 'list', '--json'], { env })).stdout) as Array<Record<string, unknown>>;
      assert.equal(rows.find((r) => r.request_id === entry.requestId)?.waiter, 'gone');
      const refused = await run(bin.belay, ['cues', 'answer', entry.requestId, '--confirm'], { env });
      assert.equal(refused.code, 1, refused.stdout);
      assert.match(refused.stderr, new RegExp(`request ${entry.requestId} was abandoned: the process that waited for it \\(pid ${cue.child.pid} on .+\\) is gone, so nobody would read an answer; nothing was written`));
      assert.equal(mailbox.getResponse(entry.requestId), undefined);
      const ended = await run(bin.belay, ['cues', 'answer', entry.requestId, '--cancel'], { env });
      assert.equal(ended.code, 0, ended.stderr);
      assert.equal(mailbox.getRequest(entry.requestId)!.state, 'cancelled');
    } finally {
      cue.child.kill('SIGKILL');
      mailbox.close();
      home.remove();
    }
  });
});
