// The OpenAI-compatible client against a real HTTP server on 127.0.0.1: streamed and whole answers,
// the key as a bearer token, errors said with the server's own words, bounds, cancellation.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { chat, ChatError, completionsUrl } from '../../../src/blocks/core/chat.ts';

let server: Server;
let baseUrl: string;
const seen: Array<{ url: string; authorization: string | undefined; body: { model: string; messages: Array<{ role: string; content: string }>; stream: boolean } }> = [];
let handler: (req: IncomingMessage, res: ServerResponse) => void = () => undefined;

before(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ url: req.url ?? '', authorization: req.headers.authorization, body: JSON.parse(body) });
      handler(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/v1`;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('chat (OpenAI-compatible)', () => {
  it('streams the answer from server-sent events, sending the key as a bearer token', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const piece of ['[CREATE_FILE path="a.txt"]\n', 'hello', '\n[/CREATE_FILE]']) res.write(`data: ${JSON.stringify({ choices: [{ delta: { content: piece } }] })}\n\n`);
      res.write('data: [DONE]\n\n');
      res.end();
    };
    const pieces: string[] = [];
    const answer = await chat({ baseUrl, model: 'm1', apiKey: 'sk-test' }, [{ role: 'user', content: 'the outbox' }], { onText: (t) => pieces.push(t) });
    assert.equal(answer, '[CREATE_FILE path="a.txt"]\nhello\n[/CREATE_FILE]');
    assert.equal(pieces.length, 3);
    const request = seen.at(-1)!;
    assert.equal(request.url, '/v1/chat/completions');
    assert.equal(request.authorization, 'Bearer sk-test');
    assert.deepEqual(request.body, { model: 'm1', messages: [{ role: 'user', content: 'the outbox' }], stream: true });
  });

  it('takes a whole JSON answer from a server that does not stream, and sends no key when there is none', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ choices: [{ message: { content: '[DONE]ok[/DONE]' } }] }));
    };
    assert.equal(await chat({ baseUrl: `${baseUrl}/`, model: 'm2' }, [{ role: 'user', content: 'x' }]), '[DONE]ok[/DONE]');
    assert.equal(seen.at(-1)!.authorization, undefined);
    assert.equal(seen.at(-1)!.url, '/v1/chat/completions');
  });

  it('says what the server said when it refuses, and what is wrong with a bad URL or no server', async () => {
    handler = (_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'Incorrect API key provided' } }));
    };
    await assert.rejects(chat({ baseUrl, model: 'm' }, []), (e: Error) => e instanceof ChatError && /answered 401 Unauthorized: Incorrect API key provided/.test(e.message));
    assert.throws(() => completionsUrl('localhost:8080'), /is not an http\(s\) URL|is not a URL/);
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await assert.rejects(chat({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm' }, []), /could not reach http:\/\/127\.0\.0\.1:\d+\/v1: .*ECONNREFUSED/);
  });

  it('stops at the size limit, and when cancelled', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < 20; i++) res.write(`data: ${JSON.stringify({ choices: [{ delta: { content: 'x'.repeat(100) } }] })}\n\n`);
      res.end('data: [DONE]\n\n');
    };
    await assert.rejects(chat({ baseUrl, model: 'm' }, [], { maxChars: 500 }), /longer than 500 characters/);
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ choices: [{ delta: { content: 'partial' } }] })}\n\n`);
      // …and nothing more until the client goes away.
      res.on('close', () => res.end());
    };
    const controller = new AbortController();
    const answering = chat({ baseUrl, model: 'm' }, [], { signal: controller.signal, onText: () => controller.abort() });
    await assert.rejects(answering, /abort/i);
  });
});
