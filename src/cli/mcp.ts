// `belay mcp`: the HAP mailbox as an MCP server (./mcpServer.ts), or another MCP server run behind
// Belay so that its elicitations reach the human as cues (./mcpBridge.ts). Each is loaded only
// when used.
import { parseCommandLine } from '../shared/args.ts';
import { UsageError, type CliIO } from './io.ts';

/** Printed by `belay mcp --help`. */
export const usage = `Usage:
  belay mcp
      A stdio MCP server with the Human Agent Protocol tools of the public cuemcp:
        join()                             your agent_id
        recall(hints)                      the agent_id of an earlier conversation
        cue(prompt, agent_id, payload?)    ask the human and wait; payload is a JSON
                                           string (choice, confirm or form) or null
        pause(agent_id, prompt?)           wait until the human clicks Continue
      Answers come from the Belay panel, "belay cues answer" or any HAP console, as the
      texts cueme prints (attached images also as MCP image content).
      Speaks MCP 2025-11-25 (initialize first) and 2026-07-28 (per-request _meta,
      server/discover; a cue is a task, an elicitation the client shows, or a wait,
      as the client supports), chosen per request.

  belay mcp --wrap [--] COMMAND [ARG]...
      Runs the MCP server COMMAND (of either revision) behind Belay: Belay tells it
      that form and URL elicitation are supported and turns each of its form
      elicitations (text, number, boolean, single and multiple choice) into a cue; the
      human's answer goes back as accept, decline (the cue was ended) or cancel (no
      answer, or it timed out). A URL elicitation is a confirm cue naming the host;
      the page opens in the browser only after the person agrees (http and https
      only). A form asking for a secret is refused: URL mode is for that. A 2026-07-28
      server's InputRequiredResult is answered so and the call retried. In front of a
      2025-11-25 client, its sampling and roots requests go to the client when it
      declared them; Belay waits BELAY_MCP_START_TIMEOUT_SECONDS (60) for the
      server's first answer. Every other message passes through unchanged.

The mailbox is ~/.cue/cue.db (%USERPROFILE%\\.cue on Windows); CUE_HOME moves it.
A cue gives up after 600 s (CUEME_TIMEOUT_SECONDS changes that); pause waits without limit.
Add it to an MCP client, e.g.: claude mcp add belay -- belay mcp
`;

export async function run(args: string[], io: CliIO): Promise<number> {
  const at = args.indexOf('--wrap');
  // Belay's own options come before --wrap; everything after it (and an optional --) is the command.
  parseCommandLine(at < 0 ? args : args.slice(0, at), { wrap: { type: 'boolean' } }, { positionals: false });
  if (at < 0) return (await import('./mcpServer.ts')).runServer(io);
  const command = args.slice(at + 1);
  if (command[0] === '--') command.shift();
  if (command.length === 0) throw new UsageError('--wrap needs the MCP server to run: belay mcp --wrap -- COMMAND [ARG]...');
  return (await import('./mcpBridge.ts')).runBridge(command as [string, ...string[]], io);
}
