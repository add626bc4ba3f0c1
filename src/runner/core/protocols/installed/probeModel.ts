// The agent doctor's probe model: an HTTP server on 127.0.0.1 that answers in a CLI's model API
// the way the service does (streamed when asked), always the same two turns: first one tool call
// running `printf ok > doctor.txt` with the CLI's shell tool, then "done". It checks the leg from
// the CLI through Belay's gateway and back, not a model; it holds no key and reaches nothing.
import { once } from 'node:events';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HttpUpstream } from '../../gateway/index.ts';
import type { InstalledAgent } from './installedAgent.ts';

export const PROBE_COMMAND = 'printf ok > doctor.txt';
const PROBE_KEY = 'belay-probe-model';
const MAX_BODY = 16 * 1024 * 1024;

export interface ProbeModel {
  upstream: HttpUpstream;
  close(): Promise<void>;
}

type Speaker = (body: Record<string, unknown>, res: http.ServerResponse) => void;

/** Each API the probe speaks: one shell tool call, then done. */
const SPEAKERS: Partial<Record<InstalledAgent['api'], { api: HttpUpstream['api']; speak: Speaker }>> = {
  messages: { api: 'anthropic', speak: messagesTurn },
};

export async function startProbeModel(agent: InstalledAgent): Promise<ProbeModel> {
  const speaker = SPEAKERS[agent.api];
  if (!speaker) throw new Error(`Belay's probe model does not speak ${agent.title}'s API (${agent.api}) yet: give an upstream (--llm-upstream) to check the exchange`);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY) chunks.push(chunk);
    });
    req.on('end', () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      } catch {
        body = {};
      }
      speaker.speak(body, res);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    upstream: { baseUrl: `http://127.0.0.1:${port}`, key: PROBE_KEY, api: speaker.api },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function messagesTurn(body: Record<string, unknown>, res: http.ServerResponse): void {
  const messages = Array.isArray(body.messages) ? (body.messages as { role?: unknown }[]) : [];
  const hasTools = Array.isArray(body.tools) && body.tools.length > 0;
  const first = hasTools && !messages.some((m) => m.role === 'assistant');
  const content = first ? [{ type: 'tool_use', id: 'toolu_belay_probe', name: 'Bash', input: { command: PROBE_COMMAND, description: 'Write doctor.txt' } }] : [{ type: 'text', text: 'done' }];
  const usage = { input_tokens: 10, output_tokens: 5 };
  const message = { id: 'msg_belay_probe', type: 'message', role: 'assistant', model: typeof body.model === 'string' ? body.model : 'probe', content, stop_reason: first ? 'tool_use' : 'end_turn', stop_sequence: null, usage };
  if (body.stream !== true) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(message));
    return;
  }
  const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(event('message_start', { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 1 } } }));
  const block = content[0]!;
  if (block.type === 'tool_use') {
    res.write(event('content_block_start', { type: 'content_block_start', index: 0, content_block: { ...block, input: {} } }));
    res.write(event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: JSON.stringify((block as { input: unknown }).input) } }));
  } else {
    res.write(event('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }));
    res.write(event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: (block as { text: string }).text } }));
  }
  res.write(event('content_block_stop', { type: 'content_block_stop', index: 0 }));
  res.write(event('message_delta', { type: 'message_delta', delta: { stop_reason: message.stop_reason, stop_sequence: null }, usage: { output_tokens: 5 } }));
  res.end(event('message_stop', { type: 'message_stop' }));
}
