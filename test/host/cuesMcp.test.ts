// `belay mcp` registered with VS Code's MCP support, inside the real extension host: the provider
// API exists in this VS Code, Belay's definition follows the mailbox setting, and the server it
// describes, started as VS Code starts it, serves the HAP tools over that mailbox.
import * as assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { CuesMcpTestApi } from '../../src/cues/mcp.ts';
import { Mailbox } from '../../src/cues/core/store.ts';
import { waitForChange } from '../../src/cues/core/watch.ts';
import { RawClient } from '../support/cues/mcpHelpers.ts';
import { activateBelay } from './helpers.ts';

suite('Belay cues over MCP', () => {
  let mcp: CuesMcpTestApi;
  let dir: string;

  suiteSetup(async () => {
    const { api } = await activateBelay();
    assert.ok(api.test?.cuesMcp, 'the API has no cuesMcp test seams (no MCP server definition API in this host?)');
    mcp = api.test.cuesMcp as CuesMcpTestApi;
    dir = mkdtempSync(path.join(os.tmpdir(), 'belay-mcp-host-'));
  });

  suiteTeardown(async () => {
    await vscode.workspace.getConfiguration('belay').update('cues.home', undefined, vscode.ConfigurationTarget.Workspace);
    rmSync(dir, { recursive: true, force: true });
  });

  test('this VS Code has the MCP server definition API, and Belay declares and provides its server', () => {
    assert.equal(typeof vscode.lm.registerMcpServerDefinitionProvider, 'function');
    const manifest = vscode.extensions.getExtension('belay.belay')!.packageJSON as { contributes: { mcpServerDefinitionProviders: Array<{ id: string; label: string }> } };
    assert.deepEqual(manifest.contributes.mcpServerDefinitionProviders, [{ id: 'belay.cues', label: 'Belay Cues' }]);
    const [server, ...rest] = mcp.definitions();
    assert.equal(rest.length, 0);
    assert.ok(server instanceof vscode.McpStdioServerDefinition);
    assert.equal(server.label, 'Belay Cues');
    assert.equal(server.command, process.execPath);
    assert.deepEqual(server.args.slice(1), ['mcp']);
    assert.ok(server.args[0]!.endsWith(path.join('dist', 'cli.js')) && existsSync(server.args[0]!), server.args[0]);
    assert.equal(server.env.ELECTRON_RUN_AS_NODE, '1');
  });

  test('the definition follows belay.cues.home, and the server it describes answers from that mailbox', async () => {
    const home = path.join(dir, '.cue');
    const changed = new Promise<void>((resolve) => {
      const subscription = mcp.onDidChange(() => {
        subscription.dispose();
        resolve();
      });
    });
    await vscode.workspace.getConfiguration('belay').update('cues.home', home, vscode.ConfigurationTarget.Workspace);
    await changed;
    const [server] = mcp.definitions();
    assert.equal(server!.env.CUE_HOME, home);

    const mailbox = Mailbox.open({ home });
    // Started as VS Code starts a stdio server: the definition's env over the extension host's.
    const peer = new RawClient(server!.command, server!.args, { env: { ...process.env, ...(server!.env as Record<string, string>) }, ...(server!.cwd ? { cwd: server!.cwd.fsPath } : {}) });
    try {
      await peer.initialize({}, 'Visual Studio Code');
      const joined = await peer.request('tools/call', { name: 'join', arguments: {} });
      const agentId = /^agent_id=(\w+)$/m.exec((joined.result!.content as Array<{ text: string }>)[0]!.text)![1]!;
      peer.send({ jsonrpc: '2.0', id: 'cue', method: 'tools/call', params: { name: 'cue', arguments: { prompt: 'Ship it?', agent_id: agentId, payload: '{"type":"confirm","text":"Ship it?"}' } } });
      const request = await waitForChange((onChange) => mailbox.watch(onChange), () => mailbox.listRequests({ pendingOnly: true, agentId })[0], AbortSignal.timeout(20_000));
      assert.ok(request, `no cue in ${home}; server stderr: ${peer.stderr}`);
      assert.equal(request.payload.kind, 'confirm');
      await mailbox.answer(request.requestId, { text: 'Confirm' });
      const result = await peer.next((m) => m.id === 'cue', 'the cue result');
      assert.match((result.result!.content as Array<{ text: string }>)[0]!.text, /^The user wants to continue and gave these instructions:\n\nConfirm\n/);
    } finally {
      await peer.close();
      mailbox.close();
    }
  });
});
