import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { activateBelay, waitFor } from './helpers.ts';

interface Contributes {
  commands: { command: string; title: string; category?: string }[];
  views: Record<string, { id: string; name: string }[]>;
}

suite('Belay activation', () => {
  test('activates without errors and returns its API', async () => {
    const { extension, api } = await activateBelay();
    assert.equal(extension.isActive, true);
    assert.equal(typeof api.resolvedViews, 'function');
  });

  test('every contributed command is registered, namespaced and categorised', async () => {
    const { extension } = await activateBelay();
    const contributes = extension.packageJSON.contributes as Contributes;
    assert.ok(contributes.commands.length > 0, 'no commands contributed');
    const registered = new Set(await vscode.commands.getCommands(true));
    for (const command of contributes.commands) {
      assert.match(command.command, /^belay\./, `${command.command} is not namespaced belay.*`);
      assert.equal(command.category, 'Belay', `${command.command} has no "Belay" category`);
      assert.ok(registered.has(command.command), `${command.command} is contributed but not registered`);
    }
  });

  test('each of the three views resolves when the Belay container opens', async () => {
    const { extension, api } = await activateBelay();
    const views = (extension.packageJSON.contributes as Contributes).views.belay!.map((v) => v.id);
    assert.deepEqual(views, ['belay.cues', 'belay.tasks', 'belay.sessions']);
    await vscode.commands.executeCommand('workbench.view.extension.belay');
    for (const id of views) {
      await vscode.commands.executeCommand(`${id}.focus`);
      await waitFor(`view ${id} to resolve`, () => api.resolvedViews().includes(id), [api.onDidResolveView]);
    }
    assert.deepEqual([...api.resolvedViews()].sort(), [...views].sort());
  });

  test('Belay: Show Log opens the Belay output channel', async () => {
    await activateBelay();
    await vscode.commands.executeCommand('belay.showLog');
    await waitFor(
      'the Belay log to be the visible output',
      () => vscode.window.visibleTextEditors.some((e) => e.document.uri.scheme === 'output' && e.document.uri.path.includes('Belay')),
      [vscode.window.onDidChangeVisibleTextEditors],
    );
  });
});
