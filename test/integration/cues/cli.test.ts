import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { Mailbox, type CueEntry } from '../../../src/cues/core/store.ts';
import { childEnv, cueFixture, envelope, repoRoot, run, start, tempHome, waitUntil, type Bundles } from '../../support/cues/helpers.ts';

function rawDb(file: string): DatabaseSync {
  const db = new DatabaseSync(file, { enableForeignKeyConstraints: false });
  db.exec('PRAGMA busy_timeout = 5000');
  return db;
}

const NO_WARNING = /ExperimentalWarning|experimental/i;

describe('cueme and belay cues command lines', () => {
  let bin: Bundles;
  let home: ReturnType<typeof tempHome>;
  let env: NodeJS.ProcessEnv;
  let mailbox: Mailbox;

  cueFixture(undefined, (f) => ({ bin, home, env, mailbox } = f));

  const pendingFor = (agentId: string) => () => mailbox.listRequests({ pendingOnly: true }).find((e) => e.agentId === agentId);

  it('join prints the agent lines and records the agent; recall finds it again', async () => {
    const joined = await run(bin.cueme, ['join', 'Claude Code'], { env, cwd: home.dir });
    assert.equal(joined.code, 0, joined.stderr);
    assert.doesNotMatch(joined.stderr, NO_WARNING);
    const agentId = /^agent_id=([a-z]{8,12})$/m.exec(joined.stdout)?.[1];
    assert.ok(agentId, joined.stdout);
    assert.match(joined.stdout, new RegExp(`^project_dir=${home.dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
    assert.match(joined.stdout, /^agent_terminal=bash$/m);
    assert.match(joined.stdout, /^agent_runtime=claude_code$/m);
    assert.equal(mailbox.listAgents().find((a) => a.agentId === agentId)?.runtime, 'claude_code');

    mailbox.createRequest({ agentId, prompt: 'Refactor the billing module', payloadJson: null });
    const recalled = await run(bin.cueme, ['recall', 'billing'], { env });
    assert.equal(recalled.code, 0);
    assert.match(recalled.stdout, new RegExp(`^agent_id=${agentId}$`, 'm'));
    const fresh = await run(bin.cueme, ['recall', 'nothing like this'], { env });
    assert.match(fresh.stdout, /No matching record found/);
    assert.doesNotMatch(fresh.stdout, new RegExp(`agent_id=${agentId}\\b`));
  });

  it('usage and envelope errors: a message on stderr, exit 2, nothing written', async () => {
    const cases: Array<[string[], string, RegExp]> = [
      [[], '', /a command is required/],
      [['frobnicate'], '', /unknown command "frobnicate"/],
      [['join'], '', /needs the agent runtime/],
      [['cue', 'agentx'], envelope('hi'), /reads its prompt from stdin/],
      [['cue', '', '-'], envelope('hi'), /needs an agent_id/],
      [['cue', 'agentx', '-'], '{"prompt":"hi"}', /legacy JSON envelope/],
      [['cue', 'agentx', '-'], '<cueme_prompt>\n\n</cueme_prompt>\n', /empty/],
      [['cue', 'agentx', '-'], 'hello\n<cueme_prompt>\nx\n</cueme_prompt>\n', /only whitespace/],
      [['cue', 'agentx', '-'], '<cueme_prompt>\nx\n</cueme_prompt>\n<cueme_payload>\n"text"\n</cueme_payload>\n', /JSON object or null/],
      [['pause', 'agentx', '-'], '<cueme_prompt>\nx\n</cueme_prompt>\n<cueme_payload>\nnull\n</cueme_payload>\n', /block only/],
    ];
    for (const [args, input, message] of cases) {
      const result = await run(bin.cueme, args, { env, input });
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, message, args.join(' '));
      assert.equal(result.stdout, '');
    }
    const badTimeout = await run(bin.cueme, ['cue', 'agentx', '-'], { env: { ...env, CUEME_TIMEOUT_SECONDS: 'soon' }, input: envelope('x') });
    assert.equal(badTimeout.code, 2);
    assert.match(badTimeout.stderr, /CUEME_TIMEOUT_SECONDS/);
    assert.equal(mailbox.listRequests().length, 0);
  });

  it('--help or -h anywhere prints the usage and does nothing else: no wait, no read, no mailbox write', async () => {
    const calls = [['--help'], ['-h'], ['help'], ['join', '--help'], ['join', 'claude_code', '-h'], ['recall', '--help'], ['recall', 'billing', '-h'], ['cue', '--help'], ['cue', 'agentx', '-', '--help'], ['pause', '--help'], ['pause', 'agentx', '-h'], ['pause', 'agentx', '-', '--help']];
    for (const args of calls) {
      const result = await run(bin.cueme, args, { env, input: envelope('not to be read'), timeoutMs: 20_000 });
      assert.equal(result.signal, null, `${args.join(' ')} blocked`);
      assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
      assert.equal(result.stderr, '', args.join(' '));
      assert.match(result.stdout, /^Usage:\n {2}cueme join <agent_runtime>/, args.join(' '));
    }
    assert.equal(mailbox.listRequests().length, 0);
    assert.equal(mailbox.listAgents().length, 0);
  });

  it('an unknown option is one line naming it, exit 2, nothing written', async () => {
    for (const args of [['--bogus'], ['join', '--bogus'], ['join', 'claude_code', '--verbose'], ['recall', 'billing', '-x'], ['cue', 'agentx', '-', '--wait'], ['pause', 'agentx', '--quiet']]) {
      const result = await run(bin.cueme, args, { env, input: envelope('hi') });
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.equal(result.stdout, '');
      assert.match(result.stderr, /^[^\n]+\n$/, args.join(' '));
      assert.match(result.stderr, new RegExp(`^cueme: Unknown option '${args.at(-1)}'`), args.join(' '));
    }
    const words = await run(bin.cueme, ['recall', '--', '-v', 'flag'], { env });
    assert.equal(words.code, 0, `after -- dashes are words: ${words.stderr}`);
    assert.equal(mailbox.listRequests().length, 0);
    assert.equal(mailbox.listAgents().length, 0);
  });

  it('cue waits for the answer and prints it; belay cues answer writes exactly the panel text', async () => {
    const payload = { type: 'form', fields: [{ label: 'Env', options: ['prod', 'staging'] }, { label: 'Regions', options: ['eu', 'us'], allow_multiple: true }, { label: 'Note' }] };
    const cue = start(bin.cueme, ['cue', 'formagent', '-'], { env, input: envelope('Deploy where?', payload) });
    const entry = await waitUntil(mailbox, pendingFor('formagent'), 'the form request');
    assert.equal(entry.payload.kind, 'form');

    const listed = await run(bin.belay, ['cues', 'list', '--json'], { env });
    assert.equal(listed.code, 0, listed.stderr);
    const rows = JSON.parse(listed.stdout) as Array<Record<string, unknown>>;
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.request_id, entry.requestId);
    assert.equal(rows[0]!.agent_id, 'formagent');
    assert.equal(rows[0]!.prompt, 'Deploy where?');
    assert.deepEqual(rows[0]!.payload, payload);
    assert.equal(typeof rows[0]!.age_seconds, 'number');
    const text = await run(bin.belay, ['cues', 'list'], { env });
    assert.match(text.stdout, new RegExp(`${entry.requestId}  agent formagent  waiting \\d+s`));

    const badField = await run(bin.belay, ['cues', 'answer', entry.requestId, '--field', 'Env=dev'], { env });
    assert.equal(badField.code, 2);
    assert.match(badField.stderr, /"dev" is not an option of field "Env"/);
    const answered = await run(bin.belay, ['cues', 'answer', entry.requestId, '--field', 'Env=prod', '--field', 'Regions=us', '--field', 'Regions=eu', '--field', 'Note=after lunch'], { env });
    assert.equal(answered.code, 0, answered.stderr);
    assert.doesNotMatch(answered.stderr, NO_WARNING);

    const result = await cue.done;
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, '');
    assert.match(result.stdout, /^The user wants to continue and gave these instructions:\n\nEnv: prod\nRegions: eu, us\nNote: after lunch\n\n/);
    assert.match(result.stdout, /call cue\(prompt, agent_id, payload\?\)/);

    const again = await run(bin.belay, ['cues', 'answer', entry.requestId, '--text', 'twice'], { env });
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already answered/);
    const unknown = await run(bin.belay, ['cues', 'answer', 'req_ffffffffffff', '--text', 'x'], { env });
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no request req_ffffffffffff/);
    for (const args of [['answer'], ['answer', entry.requestId], ['answer', entry.requestId, '--cancel', '--text', 'x'], ['answer', entry.requestId, '--bogus'], ['frob']]) {
      const usage = await run(bin.belay, ['cues', ...args], { env });
      assert.equal(usage.code, 2, args.join(' '));
      assert.notEqual(usage.stderr, '');
    }
  });

  it('a cancel, a pause and an empty answer print the messages that send the agent to pause', async () => {
    const cue = start(bin.cueme, ['cue', 'cancelme', '-'], { env, input: envelope('Go on?', { type: 'confirm', text: 'Go on?' }) });
    const entry = await waitUntil(mailbox, pendingFor('cancelme'), 'the confirm request');
    assert.equal((await run(bin.belay, ['cues', 'answer', entry.requestId, '--cancel'], { env })).code, 0);
    const cancelled = await cue.done;
    assert.equal(cancelled.code, 0);
    assert.equal(cancelled.stdout, 'The user did not continue. Call pause(agent_id) to suspend and wait for resume.\n');
    assert.equal(mailbox.getRequest(entry.requestId)!.status, 'CANCELLED');

    const pause = start(bin.cueme, ['pause', 'pauser', 'Taking', 'a', 'break'], { env });
    const paused = await waitUntil(mailbox, pendingFor('pauser'), 'the pause request');
    assert.equal(paused.prompt, 'Taking a break');
    assert.equal(paused.payloadJson, '{"type":"confirm","variant":"pause","text":"Paused. Click Continue when you are ready.","confirm_label":"Continue","cancel_label":""}');
    assert.equal((await run(bin.belay, ['cues', 'answer', paused.requestId, '--confirm'], { env })).code, 0);
    const resumed = await pause.done;
    assert.equal(resumed.code, 0);
    assert.match(resumed.stdout, /^The user resumed the conversation\.\n\n/);

    const blank = start(bin.cueme, ['cue', 'blank', '-'], { env, input: envelope('Anything?') });
    const blankEntry = await waitUntil(mailbox, pendingFor('blank'), 'the plain request');
    await mailbox.answer(blankEntry.requestId, { text: '   ' });
    const empty = await blank.done;
    assert.match(empty.stdout, /^No user input received\. Call pause\(agent_id\) to suspend and wait for resume\./);
  });

  it('an invalid payload degrades to a plain prompt with a warning, never a crash', async () => {
    const cue = start(bin.cueme, ['cue', 'oddpayload', '-'], { env, input: envelope('Vote?', { type: 'poll', choices: ['a'] }) });
    const entry = await waitUntil(mailbox, pendingFor('oddpayload'), 'the request');
    assert.equal(entry.payload.kind, 'invalid');
    const listed = JSON.parse((await run(bin.belay, ['cues', 'list', '--json'], { env })).stdout) as Array<Record<string, unknown>>;
    assert.equal(listed[0]!.payload_kind, 'invalid');
    assert.match(String(listed[0]!.payload_warning), /does not follow the protocol/);
    const choice = await run(bin.belay, ['cues', 'answer', entry.requestId, '--choice', 'a'], { env });
    assert.equal(choice.code, 2);
    assert.equal((await run(bin.belay, ['cues', 'answer', entry.requestId, '--text', 'a, obviously'], { env })).code, 0);
    const result = await cue.done;
    assert.equal(result.code, 0);
    assert.match(result.stderr, /warning: payload does not follow the protocol/);
    assert.match(result.stdout, /instructions:\n\na, obviously\n/);
  });

  it('pause has no timeout: it outlives a cue that timed out after it started', async () => {
    const slow = { ...env, CUEME_TIMEOUT_SECONDS: '0.2' };
    const pause = start(bin.cueme, ['pause', 'patient'], { env: slow });
    const paused = await waitUntil(mailbox, pendingFor('patient'), 'the pause request');
    const cue = await run(bin.cueme, ['cue', 'hasty', '-'], { env: slow, input: envelope('quick?') });
    assert.match(cue.stdout, /^Timed out/);
    assert.equal(pause.child.exitCode, null, 'the pause is still waiting');
    assert.equal(mailbox.getRequest(paused.requestId)!.state, 'pending');
    assert.equal((await run(bin.belay, ['cues', 'answer', paused.requestId, '--confirm', '--text', 'carry on with the tests'], { env })).code, 0);
    const resumed = await pause.done;
    assert.match(resumed.stdout, /instructions:\n\ncarry on with the tests\n/);
  });

  it('on a runtime without node:sqlite (the machine\'s Node 20) says which Node / VS Code is needed', { skip: !existsSync('/usr/bin/node') && 'no second Node runtime here' }, async () => {
    const old = spawnSync('/usr/bin/node', ['--version'], { encoding: 'utf8' }).stdout.trim();
    if (!old.startsWith('v20.') && !old.startsWith('v18.')) return;
    const child = spawnSync('/usr/bin/node', [bin.cueme, 'join', 'terminal'], { env, encoding: 'utf8' });
    assert.equal(child.status, 1);
    assert.match(child.stderr, /needs the built-in SQLite of Node 22\.13 or later .*VS Code use version 1\.103 or later/);
  });

  it('a request deleted or closed by another program (cue-console\'s cancel) ends the wait as cancelled', async () => {
    const pause = start(bin.cueme, ['pause', 'deleted'], { env });
    const paused = await waitUntil(mailbox, pendingFor('deleted'), 'the pause request');
    const db = rawDb(mailbox.paths.dbPath);
    try {
      db.prepare('DELETE FROM cue_requests WHERE request_id = ?').run(paused.requestId);
    } finally {
      db.close();
    }
    const ended = await pause.done;
    assert.equal(ended.code, 0);
    assert.match(ended.stdout, /^The user did not continue\. Call pause\(agent_id\)/);

    const cue = start(bin.cueme, ['cue', 'closed', '-'], { env, input: envelope('Still wanted?') });
    const entry = await waitUntil(mailbox, pendingFor('closed'), 'the request');
    const db2 = rawDb(mailbox.paths.dbPath);
    try {
      db2.prepare(`UPDATE cue_requests SET status = 'CANCELLED' WHERE request_id = ?`).run(entry.requestId);
    } finally {
      db2.close();
    }
    const closed = await cue.done;
    assert.equal(closed.stdout, 'The user did not continue. Call pause(agent_id) to suspend and wait for resume.\n');
    assert.equal(mailbox.getRequest(entry.requestId)!.response, undefined, 'nothing is written for it');
  });

  it('gives up after the timeout (CUEME_TIMEOUT_SECONDS), marking the request cancelled', async () => {
    const result = await run(bin.cueme, ['cue', 'slowhuman', '-'], { env: { ...env, CUEME_TIMEOUT_SECONDS: '0.3' }, input: envelope('Still there?') });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^Timed out waiting for user response\. You MUST NOT continue.*pause\(agent_id\)/);
    const entry = mailbox.listRequests({ agentId: 'slowhuman' })[0]!;
    assert.equal(entry.status, 'CANCELLED');
    assert.equal(entry.response?.cancelled, true);
  });

  it('Ctrl-C while waiting marks the request cancelled', async () => {
    const cue = start(bin.cueme, ['cue', 'interrupted', '-'], { env, input: envelope('Wait for me') });
    const entry = await waitUntil(mailbox, pendingFor('interrupted'), 'the request');
    cue.child.kill('SIGINT');
    const result = await cue.done;
    assert.equal(result.code, 130);
    assert.match(result.stderr, /interrupted; request req_[0-9a-f]{12} is marked cancelled/);
    const after: CueEntry = mailbox.getRequest(entry.requestId)!;
    assert.equal(after.state, 'cancelled');
    assert.equal(after.status, 'CANCELLED');
  });

  it('interop: a request written as the public cueme writes it is listed (every timestamp format) and answered', async () => {
    const db = rawDb(mailbox.paths.dbPath);
    try {
      const insert = db.prepare('INSERT INTO cue_requests (request_id, agent_id, prompt, payload, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
      // cueme: local ISO with offset; cuemcp: naive local time. The naive one is older and must list first.
      insert.run('req_aaaaaaaaaaaa', 'publicagent', 'Choose', '{"type":"choice","options":["Ship","Hold"]}', 'PENDING', '2026-11-22T08:00:00.000+00:00', '2026-11-22T08:00:00.000+00:00');
      insert.run('req_bbbbbbbbbbbb', 'mcpagent', 'Older', null, 'PENDING', '2020-01-01 09:30:00.123456', '2020-01-01 09:30:00.123456');
    } finally {
      db.close();
    }
    const listed = JSON.parse((await run(bin.belay, ['cues', 'list', '--json'], { env })).stdout) as Array<{ request_id: string }>;
    assert.deepEqual(listed.map((r) => r.request_id), ['req_bbbbbbbbbbbb', 'req_aaaaaaaaaaaa']);
    const answered = await run(bin.belay, ['cues', 'answer', 'req_aaaaaaaaaaaa', '--choice', 'Hold'], { env });
    assert.equal(answered.code, 0, answered.stderr);
    const check = rawDb(mailbox.paths.dbPath);
    try {
      const row = check.prepare('SELECT r.status AS status, s.response_json AS j, s.cancelled AS c FROM cue_requests r JOIN cue_responses s USING (request_id) WHERE request_id = ?').get('req_aaaaaaaaaaaa') as Record<string, unknown>;
      assert.deepEqual({ ...row }, { status: 'COMPLETED', j: '{"text":"Hold"}', c: 0 });
    } finally {
      check.close();
    }
  });

  it('interop: a file set up as the public console leaves it (WAL, NOT NULL, extra tables) works and keeps its tables', async () => {
    mailbox.close();
    home.remove();
    mkdirSync(home.cueHome, { recursive: true });
    const dbPath = path.join(home.cueHome, 'cue.db');
    const setup = rawDb(dbPath);
    setup.exec('PRAGMA journal_mode = WAL');
    setup.exec(readFileSync(path.join(repoRoot, 'test/fixtures/cues/cue-console-v3.sql'), 'utf8'));
    setup.close();
    mailbox = Mailbox.open({ home: home.cueHome });

    const attachment = path.join(home.dir, 'shot.png');
    writeFileSync(attachment, Buffer.from('89504e470d0a1a0a0000', 'hex'));
    const cue = start(bin.cueme, ['cue', 'walagent', '-'], { env, input: envelope('Look at this') });
    const entry = await waitUntil(mailbox, pendingFor('walagent'), 'the request in the WAL file');
    const answered = await run(bin.belay, ['cues', 'answer', entry.requestId, '--text', 'see the screenshot', '--attach', attachment], { env });
    assert.equal(answered.code, 0, answered.stderr);
    const result = await cue.done;
    assert.equal(result.code, 0, result.stderr);
    const digest = createHash('sha256').update(readFileSync(attachment)).digest('hex');
    assert.match(result.stdout, /gave these instructions:\n\nsee the screenshot\n/);
    assert.ok(result.stdout.includes(`- ${path.join(home.cueHome, 'files', `${digest}.png`)} (image/png)`), result.stdout);

    const db = rawDb(dbPath);
    try {
      assert.equal((db.prepare('PRAGMA journal_mode').get() as { journal_mode: string }).journal_mode, 'wal');
      assert.equal(Number((db.prepare('SELECT COUNT(*) AS n FROM conversation_groups').get() as { n: number }).n), 1);
      assert.equal(Number((db.prepare('SELECT COUNT(*) AS n FROM conversation_pins').get() as { n: number }).n), 1);
      const row = db.prepare('SELECT status, created_at, updated_at FROM cue_requests WHERE request_id = ?').get(entry.requestId) as Record<string, string>;
      assert.equal(row.status, 'COMPLETED');
      assert.ok(row.created_at && row.updated_at);
    } finally {
      db.close();
    }
  });

  it('interop: an answer written as the public console writes it (statement by statement, rel file path, mentions) is printed correctly', async () => {
    const cue = start(bin.cueme, ['cue', 'consoleagent', '-'], { env, input: envelope('Need a diagram') });
    const entry = await waitUntil(mailbox, pendingFor('consoleagent'), 'the request');
    mkdirSync(path.join(home.cueHome, 'files'), { recursive: true });
    const digest = 'ab'.repeat(32);
    writeFileSync(path.join(home.cueHome, 'files', `${digest}.png`), 'png-bytes');
    const db = rawDb(mailbox.paths.dbPath);
    try {
      const now = '2026-11-22T08:10:00.000+00:00';
      db.prepare('INSERT OR IGNORE INTO cue_responses (request_id, response_json, cancelled, created_at) VALUES (?, ?, ?, ?)').run(entry.requestId, JSON.stringify({ text: 'Here it is', mentions: [{ agent_id: 'consoleagent' }] }), 0, now);
      const responseId = (db.prepare('SELECT id FROM cue_responses WHERE request_id = ?').get(entry.requestId) as { id: number }).id;
      db.prepare('INSERT INTO cue_files (sha256, file, mime_type, size_bytes, created_at) VALUES (?, ?, ?, ?, ?)').run(digest, `files/${digest}.png`, 'image/png', 9, now);
      const fileId = (db.prepare('SELECT id FROM cue_files WHERE sha256 = ?').get(digest) as { id: number }).id;
      db.prepare('INSERT INTO cue_response_files (response_id, file_id, idx) VALUES (?, ?, ?)').run(responseId, fileId, 0);
      db.prepare('UPDATE cue_requests SET status = ? WHERE request_id = ?').run('COMPLETED', entry.requestId);
    } finally {
      db.close();
    }
    const result = await cue.done;
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^The user wants to continue and gave these instructions:\n\nHere it is\n\n/);
    // The link may land after the response row (the console writes no transaction): the text is what must be right.
    assert.ok(!result.stdout.includes('undefined'));
  });

  it('clear errors: a corrupt file, a read-only folder, a missing HOME', async () => {
    // Missing HOME and no CUE_HOME.
    const noHome = await run(bin.cueme, ['join', 'terminal'], { env: { PATH: process.env.PATH } });
    assert.equal(noHome.code, 1);
    assert.match(noHome.stderr, /HOME is not set.*CUE_HOME/);
    const noHomeList = await run(bin.belay, ['cues', 'list'], { env: { PATH: process.env.PATH } });
    assert.equal(noHomeList.code, 1);
    assert.match(noHomeList.stderr, /HOME is not set/);

    // Corrupt file.
    const bad = tempHome();
    try {
      mkdirSync(bad.cueHome);
      writeFileSync(path.join(bad.cueHome, 'cue.db'), 'garbage '.repeat(100));
      const corrupt = await run(bin.cueme, ['cue', 'x', '-'], { env: childEnv(bad.cueHome), input: envelope('hi') });
      assert.equal(corrupt.code, 1);
      assert.match(corrupt.stderr, /not an SQLite database.*left untouched/);
      assert.equal(readFileSync(path.join(bad.cueHome, 'cue.db'), 'utf8'), 'garbage '.repeat(100));
    } finally {
      bad.remove();
    }

    // Read-only folder and file (root ignores modes, so as root the child runs as nobody).
    const ro = tempHome();
    try {
      const seeded = Mailbox.open({ home: ro.cueHome });
      seeded.close();
      const asRoot = process.getuid?.() === 0;
      chmodSync(ro.dir, 0o755);
      chmodSync(bin.dir, 0o755);
      for (const f of [bin.cueme, bin.belay]) chmodSync(f, 0o755);
      chmodSync(path.join(ro.cueHome, 'cue.db'), 0o444);
      chmodSync(ro.cueHome, 0o555);
      const identity = asRoot ? { uid: 65534, gid: 65534 } : {};
      const readOnly = await run(bin.cueme, ['cue', 'x', '-'], { env: childEnv(ro.cueHome), input: envelope('hi'), cwd: ro.dir, ...identity });
      assert.equal(readOnly.code, 1, readOnly.stderr);
      assert.match(readOnly.stderr, /cannot write the mailbox .*writable/);
      assert.doesNotMatch(readOnly.stderr, NO_WARNING);
      // Listing still works on a read-only mailbox.
      const listed = await run(bin.belay, ['cues', 'list'], { env: childEnv(ro.cueHome), cwd: ro.dir, ...identity });
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, /No pending cues/);
    } finally {
      chmodSync(ro.cueHome, 0o755);
      ro.remove();
    }
  });
});
