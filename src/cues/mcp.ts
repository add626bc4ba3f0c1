import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { settingMailboxPaths } from './service.ts';

// `belay mcp` offered to VS Code's MCP support (the MCP server definition provider API), so chat
// agents find the HAP tools with no configuration. VS Code starts the server itself, on its own
// runtime (process.execPath as plain Node), when a chat needs it; the mailbox follows the
// `belay.cues.home` setting. Registration is light: nothing runs until VS Code asks.

/** The id declared in package.json's `contributes.mcpServerDefinitionProviders`. */
export const MCP_PROVIDER_ID = 'belay.cues';
export const MCP_SERVER_LABEL = 'Belay Cues';

/** The test seams of this module: `api.test.cuesMcp`. */
export interface CuesMcpTestApi {
  definitions(): vscode.McpStdioServerDefinition[];
  onDidChange: vscode.Event<void>;
}

export function registerMcpServer(ctx: BelayContext): void {
  if (typeof vscode.lm?.registerMcpServerDefinitionProvider !== 'function' || typeof vscode.McpStdioServerDefinition !== 'function') {
    ctx.log.info('cues: this editor has no MCP server definition API; add `belay mcp` to its MCP settings instead');
    return;
  }
  const changed = ctx.own(new vscode.EventEmitter<void>());
  const cliJs = vscode.Uri.joinPath(ctx.extension.extensionUri, 'dist', 'cli.js').fsPath;
  const version = String(ctx.extension.extension.packageJSON.version ?? '');

  const definition = (): vscode.McpStdioServerDefinition => {
    const env: Record<string, string> = { ELECTRON_RUN_AS_NODE: '1' };
    if (ctx.config.get('cues.home').trim()) {
      try {
        env.CUE_HOME = settingMailboxPaths(ctx).home;
      } catch {
        // No home to point at: the server's tools say why.
      }
    }
    const server = new vscode.McpStdioServerDefinition(MCP_SERVER_LABEL, process.execPath, [cliJs, 'mcp'], env, version);
    // join() records the project the agent works in: the first local workspace folder.
    const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file');
    if (folder) server.cwd = folder.uri;
    return server;
  };

  ctx.own(
    vscode.lm.registerMcpServerDefinitionProvider(MCP_PROVIDER_ID, {
      onDidChangeMcpServerDefinitions: changed.event,
      provideMcpServerDefinitions: () => [definition()],
    }),
  );
  ctx.own(ctx.config.onDidChange('cues.home', () => changed.fire()));
  ctx.own(vscode.workspace.onDidChangeWorkspaceFolders(() => changed.fire()));
  ctx.exposeForTests('cuesMcp', { definitions: () => [definition()], onDidChange: changed.event } satisfies CuesMcpTestApi);
}
