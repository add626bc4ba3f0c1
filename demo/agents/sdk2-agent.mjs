// A scripted Term Challenge SDK 2.0 agent: an HTTP server on AGENT_PORT (/health, /start,
// /status) that runs its own commands in the task's working directory.
import { execFile } from 'node:child_process';
import * as http from 'node:http';
import { plan } from './plan.mjs';

const port = Number(process.env.AGENT_PORT ?? 8765);
const workdir = process.env.BELAY_WORKDIR ?? process.cwd();
const state = { status: 'idle', steps: 0, error: null, done: false, history: [], started: 0 };

function shell(command) {
  return new Promise((resolve) => {
    execFile('/bin/sh', ['-c', command], { cwd: workdir }, (error, stdout, stderr) => {
      resolve({ output: `${stdout}${stderr}`, exit_code: error ? (typeof error.code === 'number' ? error.code : 1) : 0 });
    });
  });
}

async function work(instruction) {
  for (const { command } of plan(instruction)) {
    const { output, exit_code } = await shell(command);
    state.steps++;
    state.history.push({ step: state.steps, command: command.slice(0, 200), output: output.slice(0, 500), exit_code });
    state.history = state.history.slice(-30);
  }
  state.done = true;
  state.status = 'completed';
}

http
  .createServer((req, res) => {
    const send = (code, body) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'GET' && req.url === '/health') return send(200, { status: 'ok' });
    if (req.method === 'GET' && req.url === '/status') {
      return send(200, { ...state, started: undefined, elapsed_secs: state.started ? Math.floor((Date.now() - state.started) / 1000) : 0 });
    }
    if (req.method === 'POST' && req.url === '/start') {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        const task = JSON.parse(body || '{}');
        if (!task.instruction) return send(400, { error: 'instruction required' });
        if (state.status !== 'idle') return send(409, { error: 'already running' });
        state.status = 'running';
        state.started = Date.now();
        work(task.instruction).catch((error) => {
          state.status = 'failed';
          state.error = String(error);
        });
        send(200, { status: 'started' });
      });
      return;
    }
    send(404, { error: 'not found' });
  })
  .listen(port, '127.0.0.1', () => process.stderr.write(`[demo sdk2] listening on ${port}\n`));
