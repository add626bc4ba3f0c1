// demo/cues/scripted-agent.sh, run for real: it joins and sends one cue of each kind; answering
// each through the mailbox (as the panel does) reaches the script.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { composeAnswerText } from '../../../src/cues/core/answer.ts';
import { Mailbox } from '../../../src/cues/core/store.ts';
import { buildBundles, repoRoot, tempHome, waitUntil, type Bundles } from '../../support/cues/helpers.ts';

let bundles: Bundles;
before(async () => {
  bundles = await buildBundles();
});
after(() => bundles && import('node:fs').then((fs) => fs.rmSync(bundles.dir, { recursive: true, force: true })));

test('the demo agent joins and asks text, choice, multiple, confirm, form and pause cues', async () => {
  const home = tempHome();
  const mailbox = Mailbox.open({ home: home.cueHome });
  try {
    const child = spawn('sh', [path.join(repoRoot, 'demo', 'cues', 'scripted-agent.sh')], {
      env: { PATH: process.env.PATH, HOME: home.dir, CUE_HOME: home.cueHome, SHELL: '/bin/sh', CUEME: `${process.execPath} ${bundles.cueme}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);

    const kinds: string[] = [];
    const answers: Array<(view: ReturnType<Mailbox['listRequests']>[number]['payload']) => Parameters<typeof composeAnswerText>[1]> = [
      () => ({ text: 'hello agent' }),
      () => ({ choices: ['production'] }),
      () => ({ choices: ['lint', 'e2e tests'] }),
      () => ({ confirm: true }),
      () => ({ fields: [['Version', '1.2.0'], ['Areas', 'cli'], ['Areas', 'docs'], ['Headline', 'Faster cues']] }),
      () => ({ confirm: true }),
    ];
    for (const answer of answers) {
      const entry = await waitUntil(mailbox, () => mailbox.listRequests({ pendingOnly: true })[0], `cue ${kinds.length + 1} (stdout so far: ${stdout})`);
      kinds.push(entry.payload.kind === 'choice' && entry.payload.payload.allow_multiple ? 'multiple' : entry.payload.kind);
      await mailbox.answer(entry.requestId, { text: composeAnswerText(entry.payload, answer(entry.payload)) });
    }
    const code = await exited;
    clearTimeout(timer);
    assert.equal(code, 0, stderr);
    assert.deepEqual(kinds, ['none', 'choice', 'multiple', 'confirm', 'form', 'pause']);
    const agent = mailbox.listAgents().find((a) => a.runtime === 'scripted_demo');
    assert.ok(agent, 'the demo joined with runtime scripted_demo');
    assert.match(stdout, new RegExp(`joined as ${agent.agentId}`));
    for (const expected of ['hello agent', 'production', 'lint\ne2e tests', 'Tag it', 'Version: 1.2.0\nAreas: cli, docs\nHeadline: Faster cues', 'The user resumed the conversation.']) {
      assert.ok(stdout.includes(expected), `missing ${JSON.stringify(expected)} in:\n${stdout}`);
    }
  } finally {
    mailbox.close();
    home.remove();
  }
});
