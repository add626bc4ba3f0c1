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
const SPEAKERS: Record<InstalledAgent['api'], { api: HttpUpstream['api']; speak: Speaker }> = {
  messages: { api: 'anthropic', speak: messagesTurn },
  responses: { api: 'openai', speak: responsesTurn },
  chat: { api: 'openai', speak: chatTurn },
  gemini: { api: 'gemini', speak: geminiTurn },
};

export async function startProbeModel(agent: InstalledAgent): Promise<ProbeModel> {
  const speaker = SPEAKERS[agent.api];
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
    upstream: { baseUrl: `http://127.0.0.1:${port}${speaker.api === 'openai' ? '/v1' : ''}`, key: PROBE_KEY, api: speaker.api },
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

const sse = (data: unknown, name?: string) => `${name ? `event: ${name}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

/** OpenAI Responses (Codex): an `exec_command` function call, then a message. */
function responsesTurn(body: Record<string, unknown>, res: http.ServerResponse): void {
  const input = Array.isArray(body.input) ? (body.input as { type?: unknown }[]) : [];
  const first = !input.some((item) => item?.type === 'function_call_output');
  const model = typeof body.model === 'string' ? body.model : 'probe';
  const args = JSON.stringify({ cmd: PROBE_COMMAND });
  const item = first ? { id: 'fc_probe', type: 'function_call', status: 'completed', arguments: args, call_id: 'call_probe', name: 'exec_command' } : { id: 'msg_probe', type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'done', annotations: [] }] };
  const response = (status: string, done: boolean) => ({ id: 'resp_probe', object: 'response', created_at: Math.floor(Date.now() / 1000), status, error: null, incomplete_details: null, model, output: done ? [item] : [], usage: done ? { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 } : null });
  if (body.stream !== true) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(response('completed', true)));
    return;
  }
  let sequence = 0;
  const send = (type: string, fields: Record<string, unknown>) => res.write(sse({ type, sequence_number: sequence++, ...fields }, type));
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  send('response.created', { response: response('in_progress', false) });
  send('response.output_item.added', { output_index: 0, item: first ? { ...item, status: 'in_progress', arguments: '' } : { ...item, status: 'in_progress', content: [] } });
  if (first) send('response.function_call_arguments.done', { item_id: item.id, output_index: 0, arguments: args });
  else send('response.output_text.delta', { item_id: item.id, output_index: 0, content_index: 0, delta: 'done' });
  send('response.output_item.done', { output_index: 0, item });
  send('response.completed', { response: response('completed', true) });
  res.end();
}

/** OpenAI-compatible chat (OpenCode): a `bash` tool call, then text. */
function chatTurn(body: Record<string, unknown>, res: http.ServerResponse): void {
  const messages = Array.isArray(body.messages) ? (body.messages as { role?: unknown }[]) : [];
  const hasTools = Array.isArray(body.tools) && body.tools.length > 0;
  const first = hasTools && !messages.some((m) => m.role === 'tool');
  const model = typeof body.model === 'string' ? body.model : 'probe';
  const call = { index: 0, id: 'call_probe', type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command: PROBE_COMMAND, description: 'Write doctor.txt' }) } };
  const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
  if (body.stream !== true) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'chatcmpl-probe', object: 'chat.completion', created: Math.floor(Date.now() / 1000), model, choices: [{ index: 0, message: first ? { role: 'assistant', content: null, tool_calls: [call] } : { role: 'assistant', content: 'done' }, finish_reason: first ? 'tool_calls' : 'stop' }], usage }));
    return;
  }
  const chunk = (delta: unknown, finish: string | null) => ({ id: 'chatcmpl-probe', object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model, choices: [{ index: 0, delta, finish_reason: finish }] });
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(sse(chunk(first ? { role: 'assistant', tool_calls: [call] } : { role: 'assistant', content: 'done' }, null)));
  res.write(sse(chunk({}, first ? 'tool_calls' : 'stop')));
  const options = body.stream_options as { include_usage?: unknown } | undefined;
  if (options?.include_usage === true) res.write(sse({ id: 'chatcmpl-probe', object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model, choices: [], usage }));
  res.end(sse('[DONE]'));
}

/** The Gemini API (Gemini CLI): a `run_shell_command` function call, then text. */
function geminiTurn(body: Record<string, unknown>, res: http.ServerResponse): void {
  const contents = Array.isArray(body.contents) ? (body.contents as { parts?: unknown }[]) : [];
  const first = !contents.some((c) => Array.isArray(c?.parts) && (c.parts as { functionResponse?: unknown }[]).some((p) => p && p.functionResponse !== undefined));
  const parts = first ? [{ functionCall: { name: 'run_shell_command', args: { command: PROBE_COMMAND, description: 'Write doctor.txt' } } }] : [{ text: 'done' }];
  const answer = { candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }], usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 }, modelVersion: 'probe' };
  const streamed = (res.req.url ?? '').includes(':streamGenerateContent');
  if (!streamed) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer));
    return;
  }
  if ((res.req.url ?? '').includes('alt=sse')) {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(sse(answer));
  } else {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify([answer]));
  }
}
