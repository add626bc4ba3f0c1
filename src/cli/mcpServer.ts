// `belay mcp`: the Human Agent Protocol as a stdio MCP server, built on the official MCP SDK. Its
// tools and arguments are those of the public cuemcp (join, recall, cue, pause), its answers the
// texts `cueme` prints, over the same mailbox: any HAP console answers it, and Belay's panel and
// `belay cues answer` answer any of them. It waits on mailbox change notifications, never a poll.
import { EventEmitter } from 'node:events';
import type { Readable, Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { errorMessage } from '../shared/errors.ts';
import { silenceSqliteExperimentalWarning } from '../cues/core/sqlite.ts';
import { cueTimeoutForCommandLine } from './cueTimeout.ts';
import { clientGone, orphaned, stopRequested, type CliIO } from './io.ts';
import { LineReader, MAX_LINE_CHARS, parseLine } from './mcpLines.ts';
import { MailboxLink } from './mcpMailbox.ts';
import { isModernRequest, PROTOCOL_VERSION_KEY } from './mcpModern.ts';
import { ModernServer } from './mcpModernServer.ts';
import { CueArgs, INSTRUCTIONS, joinResult, PauseArgs, RecallArgs, recallResult, SERVER_NAME, SERVER_TITLE, serverVersion, TOOLS, humanRequest, waitForHuman } from './mcpTools.ts';

export { MAX_IMAGE_BYTES, imageContents, parsePayloadArgument, runtimeFromClient, SERVER_NAME } from './mcpTools.ts';

/** Builds the server with its four tools over `link` (the mailbox, opened on first use). */
export function createHapServer(link: MailboxLink, options: { env: NodeJS.ProcessEnv; cwd: string; timeoutMs: number }): McpServer {
  const server = new McpServer(
    { name: SERVER_NAME, title: SERVER_TITLE, version: serverVersion() },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
  );
  const human = (tool: 'cue' | 'pause', args: unknown, signal: AbortSignal) => {
    const made = humanRequest(tool, args, options.timeoutMs);
    return 'error' in made ? made.error : waitForHuman(link, made.request, signal);
  };
  server.registerTool('join', { title: TOOLS.join.title, description: TOOLS.join.description }, () =>
    joinResult(link, server.server.getClientVersion()?.name, { env: options.env, cwd: options.cwd }),
  );
  server.registerTool('recall', { title: TOOLS.recall.title, description: TOOLS.recall.description, inputSchema: RecallArgs }, ({ hints }) => recallResult(link, hints));
  server.registerTool('cue', { title: TOOLS.cue.title, description: TOOLS.cue.description, inputSchema: CueArgs }, (args, extra) => human('cue', args, extra.signal));
  server.registerTool('pause', { title: TOOLS.pause.title, description: TOOLS.pause.description, inputSchema: PauseArgs }, (args, extra) => human('pause', args, extra.signal));
  return server;
}

/** The SDK transport's input: the lines Belay routes to it, handed over at once. */
class LineFeed extends EventEmitter {
  pause(): this {
    return this;
  }
}

/**
 * Serves the HAP tools on stdin/stdout to clients of either era, chosen per request: a request
 * whose `_meta` names a protocol version is 2026-07-28's (mcpModernServer.ts); everything else,
 * an `initialize` first, goes to the SDK's server as 2025-11-25 and earlier. When the client
 * closes stdin (how an MCP client ends a stdio server), calls under way still get their result,
 * then the server exits; a signal (what a client sends a server that does not exit), a broken
 * pipe or the client's death cancels the cues still waiting, so no console offers a question
 * nobody will read the answer to.
 */
export async function runServer(io: CliIO): Promise<number> {
  silenceSqliteExperimentalWarning();
  const timeoutMs = cueTimeoutForCommandLine(io.env);
  const link = new MailboxLink(io.env);
  const server = createHapServer(link, { env: io.env, cwd: io.cwd, timeoutMs });
  const write = (line: string) => void io.stdout.write(`${line}\n`);
  const modern = new ModernServer({ link, env: io.env, cwd: io.cwd, timeoutMs, write });
  // The SDK reads the lines of the older era from here, as they arrive (not a tick later: a client
  // that writes its calls and closes stdin at once must find them under way); Belay reads stdin.
  const legacyIn = new LineFeed();
  const transport = new StdioServerTransport(legacyIn as unknown as Readable, io.stdout as Writable);
  transport.onerror = (error) => io.stderr.write(`belay mcp: ${errorMessage(error)}\n`);
  const lines = new LineReader(
    (line) => {
      // Most lines are the older era's: those that name no protocol version in _meta and cancel
      // nothing go to the SDK unread (it reads them anyway).
      if (!line.includes(PROTOCOL_VERSION_KEY) && !line.includes('notifications/cancelled')) return void legacyIn.emit('data', Buffer.from(`${line}\n`));
      const message = parseLine(line);
      if (message && message.id !== undefined && message.method !== undefined && isModernRequest(message)) {
        return modern.handle({ id: message.id, method: message.method, params: message.params });
      }
      if (message?.method === 'notifications/cancelled' && modern.cancel((message.params as { requestId?: unknown } | undefined)?.requestId)) return;
      legacyIn.emit('data', Buffer.from(`${line}\n`));
    },
    () => io.stderr.write(`belay mcp: the client wrote a line longer than ${MAX_LINE_CHARS} characters; it was dropped\n`),
  );
  const decoder = new StringDecoder('utf8');
  const onData = (chunk: Buffer | string) => lines.push(typeof chunk === 'string' ? chunk : decoder.write(chunk));
  io.stdin.on('data', onData);
  const stop = stopRequested();
  const gone = clientGone(io.stdin, io.stdout);
  await server.connect(transport);
  const how = await Promise.race([gone, stop.promise.then(() => 'stopped' as const)]);
  io.stdin.off('data', onData);
  // Nothing more is read: a stdin still flowing would keep the process alive after a signal.
  io.stdin.pause();
  if (how === 'ended') {
    lines.end();
    modern.endTasks();
    // Unless the client itself is gone (it died without a signal): then nobody reads the results.
    const parentGone = orphaned();
    await Promise.race([Promise.all([link.idle(), modern.idle()]), stop.promise, parentGone.promise]);
    parentGone.dispose();
    // The results of the last calls are written a few turns after their handlers return.
    await new Promise((resolve) => setImmediate(resolve));
  }
  stop.dispose();
  await modern.close();
  await link.close();
  await server.close();
  return 0;
}
