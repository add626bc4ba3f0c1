import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { spawn } from 'node:child_process';
import { BELAY_HELPER_MARK, isBelayHelper } from '../../../src/runner/core/backends/backend.ts';
import { agentListeners, editorFix, listeningPorts, suggestedProtocol } from '../../../src/runner/core/protocols/mismatch.ts';

const sdk1Mismatch = 'protocol mismatch: the agent listens on TCP port 18765 and has not answered the SDK 1.x request on stdin; it looks like an SDK 2.0 (HTTP) agent: run it with --protocol sdk2';
const sdk2Early = 'the agent exited before its HTTP server answered /health on AGENT_PORT=4000; an SDK 1.x agent reads requests on stdin instead (use --protocol sdk1)';

describe('the fix of a protocol mismatch', () => {
  it('reads the protocol the agent seems to speak from the error', () => {
    assert.equal(suggestedProtocol(sdk1Mismatch), 'sdk2');
    assert.equal(suggestedProtocol(sdk2Early), 'sdk1');
    assert.equal(suggestedProtocol('the tests gave reward 0'), undefined);
    assert.equal(suggestedProtocol(null), undefined);
  });

  it('in the editor names the agent’s setting instead of the command-line flag', () => {
    const text = editorFix(sdk1Mismatch, 'my-agent');
    assert.doesNotMatch(text, /--protocol/);
    assert.match(text, /^protocol mismatch: the agent listens on TCP port 18765 .*: set "protocol": "sdk2" in the agent 'my-agent' of the belay\.agents setting$/);
    assert.match(editorFix(sdk2Early, 'a'), /\(set "protocol": "sdk1" in the agent 'a' of the belay\.agents setting\)$/);
    assert.equal(editorFix('the tests gave reward 0', 'a'), 'the tests gave reward 0');
  });
});

describe("the agent's listeners", { skip: process.platform !== 'linux' && 'needs /proc' }, () => {
  it("leave out Belay's helpers in the agent's process group, whatever port they hold, and count the agent's own", async () => {
    // One process group, as a sandboxed agent's: Belay's bridge (its program carries the mark) and the agent, each listening.
    const listen = `const s=require('node:net').createServer().listen(0,'127.0.0.1',()=>console.log(process.argv[1]+' '+s.address().port))`;
    const helper = `${BELAY_HELPER_MARK}${listen}`;
    const group = spawn('/bin/sh', ['-c', `'${process.execPath}' -e "$1" helper & '${process.execPath}' -e "$2" agent & wait`, 'sh', helper, listen], { detached: true, stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const ports: Record<string, number> = {};
      let text = '';
      group.stdout.setEncoding('utf8');
      for await (const chunk of group.stdout) {
        text += chunk as string;
        for (const [, who, port] of text.matchAll(/(helper|agent) (\d+)\n/g)) ports[who!] = Number(port);
        if (ports.helper && ports.agent) break;
      }
      const listeners = agentListeners(group.pid!);
      assert.deepEqual(listeners.map((l) => l.port), [ports.agent]);
      assert.equal(listeners[0]!.reachable, true, 'the agent shares this network: Belay can ask its port');
      assert.deepEqual(listeningPorts(group.pid!), [ports.agent]);
      // Not a helper: the mark elsewhere than at the start of `-e`'s program.
      assert.equal(isBelayHelper(['node', '-e', `x;${BELAY_HELPER_MARK}`]), false);
      assert.equal(isBelayHelper(['node', BELAY_HELPER_MARK]), false);
    } finally {
      process.kill(-group.pid!, 'SIGKILL');
    }
  });
});
